import { HttpApp } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Webhooks } from "effect-fin"

const secret = "whsec_test_0123456789"

// A delivery as Fin sends it. A beneficiary.status event needs every field of its data but `status`.
const body = JSON.stringify({
  event: {
    id: "0b5c3a8e-0c3e-4a55-9e3c-6f0c1d2e3f40",
    event_reference_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
    type: "beneficiary.status",
    created_at: "2026-04-04T17:38:26.843132Z",
    sandbox_mode: true
  },
  data: {
    beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
    customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
    type: "INDIVIDUAL",
    active: true,
    status: "ACTIVE"
  }
})

describe("the webhook endpoint", () => {
  it.effect("handles a signed delivery once and refuses a forged one", () =>
    Effect.gen(function*() {
      const activated: Array<string> = []
      // Built in the test, so its de-duplication memory is this test's alone.
      const handle = HttpApp.toWebHandler(Webhooks.handler({
        secrets: secret,
        handlers: {
          "beneficiary.status": (event) =>
            Effect.sync(() => {
              if (event.data.active) activated.push(event.data.beneficiary_id)
            })
        }
      }))
      const deliver = (headers: Webhooks.SignedHeaders) =>
        Effect.promise(async () => {
          const response = await handle(new Request("http://localhost/webhooks/fin", { method: "POST", body, headers }))
          return `${response.status} ${await response.text()}`
        })
      const signed = yield* Webhooks.sign(body, secret)
      expect(yield* deliver(signed)).toBe(`200 {"outcome":"handled"}`)
      expect(yield* deliver(signed)).toBe(`200 {"outcome":"duplicate"}`) // a redelivery: not handled again
      expect(yield* deliver(yield* Webhooks.sign(body, "whsec_not_ours"))).toBe("401 ")
      expect(activated).toEqual(["e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"])
    }))
})
