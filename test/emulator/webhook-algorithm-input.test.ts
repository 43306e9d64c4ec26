import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Emulator } from "../../src/emulator/index.js"

describe("emulator webhook algorithm input", () => {
  it.scopedLive("an unknown algorithm is one problem naming the field and the choices, not one per algorithm", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      const response = yield* Effect.promise(() =>
        fetch(`${emulator.url}/__emulator/webhooks`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ url: "http://127.0.0.1:1/hooks", algorithm: "md5" })
        }).then(async (r) => ({ status: r.status, json: await r.json() }))
      )
      expect(response.status).toBe(400)
      expect(response.json).toEqual({
        message: "Invalid body for POST /__emulator/webhooks: algorithm: one of sha256, sha384, sha512",
        errors: [{ path: "algorithm", message: "one of sha256, sha384, sha512" }]
      })
      const option = yield* Effect.flip(Emulator.make({ webhookAlgorithm: "md5" as "sha256" }))
      expect(option.message).toBe("Invalid emulator options: webhookAlgorithm: one of sha256, sha384, sha512")
    }))
})
