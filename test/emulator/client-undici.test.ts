import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Emulator } from "../../src/emulator/index.js"
import * as FinClient from "../../src/FinClient.js"
import * as UndiciHttpClient from "../../src/node/UndiciHttpClient.js"
import { clientSuite } from "./clientSuite.js"

clientSuite("NodeHttpClient.layerUndici", NodeHttpClient.layerUndici)

describe("an undici client closed with its layer's scope", () => {
  // Provided only around `make`, the client's undici Agent is destroyed once the client is made: each call then fails
  // at once, not retried as an outage (nothing can mend it but providing the layer where the client is used).
  for (const [name, layer] of [
    ["NodeHttpClient.layerUndici", NodeHttpClient.layerUndici],
    ["UndiciHttpClient.layer", UndiciHttpClient.layer]
  ] as const) {
    it.live(`${name}: a TransportError after one attempt, saying the client is closed`, () =>
      Effect.scoped(Effect.gen(function*() {
        const emulator = yield* Emulator.make({})
        const client = yield* FinClient.make({ ...emulator.credentials, baseUrl: emulator.url }).pipe(
          Effect.provide(layer)
        )
        const error = yield* Effect.flip(
          client.fees.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
        )
        expect(error._tag === "TransportError" && [error.code, error.attempts]).toEqual(["UND_ERR_DESTROYED", 1])
        expect(error.message).toContain("the platform HTTP client is closed (UND_ERR_DESTROYED)")
        const sent = Object.values((yield* emulator.counters).requests).reduce((sum, n) => sum + n, 0)
        expect(sent).toBe(0)
      })))
  }
})
