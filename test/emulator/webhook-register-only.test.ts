import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Emulator } from "../../src/emulator/index.js"

describe("emulator webhook registration", () => {
  it.scopedLive("send: false with event or signing fields is a 400 naming them, and registers nothing", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const response = yield* Effect.promise(() =>
        fetch(`${emulator.url}/__emulator/webhooks`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ url: "http://127.0.0.1:1/hooks", send: false, status: "REJECTED", secret: "other" })
        }).then(async (r) => ({ status: r.status, json: await r.json() }))
      )
      expect(response.status).toBe(400)
      expect(response.json.errors).toEqual([
        { path: "status", message: "not used when send is false (it only registers url)" },
        { path: "secret", message: "not used when send is false (it only registers url)" }
      ])
      const info = yield* Effect.promise(() => fetch(`${emulator.url}/__emulator`).then((r) => r.json()))
      expect(info.webhook.url).toBe(null)
    }))
})
