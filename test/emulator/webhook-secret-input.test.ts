import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Emulator } from "../../src/emulator/index.js"

describe("emulator webhook secret input", () => {
  it.scopedLive("a padded secret is a 400 naming the field (admin) / InvalidInput (programmatic), not a defect", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      for (const secret of [" padded ", "whsec\n", "\u0001whsec"]) {
        const response = yield* Effect.promise(() =>
          fetch(`${emulator.url}/__emulator/webhooks`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ url: "http://127.0.0.1:1/hooks", secret })
          }).then(async (r) => ({ status: r.status, text: await r.text() }))
        )
        expect(response.status, JSON.stringify(secret)).toBe(400)
        expect(response.text).toContain("secret")
        const error = yield* Effect.flip(Effect.catchAllDefect(emulator.sendWebhook({ secret }), (d) => Effect.fail(d)))
        expect(error).toMatchObject({ _tag: "EmulatorError", reason: "InvalidInput" })
      }
      // A refused request registers nothing.
      const info = yield* Effect.promise(() => fetch(`${emulator.url}/__emulator`).then((r) => r.json()))
      expect(info.webhook.url).toBe(null)
    }))
})
