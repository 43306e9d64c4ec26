import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { FeeService } from "effect-fin"
import * as FinTest from "effect-fin/test"

// The program under test: your code, using the service from its context.
const cadFor = (usd: number) =>
  Effect.map(
    FeeService.calculate({ source_currency: "USD", source_amount: usd, destination_currency: "CAD" }),
    (quote) => quote.destination_amount
  )

describe("cadFor", () => {
  it.effect("computes from a rate table", () =>
    Effect.gen(function*() {
      expect(yield* cadFor(100)).toBe(136.32) // (100 - 0.5 fee) x 1.37
    }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 }, fee: { fixed: 0.5, percentage: 0 } }))))

  it.effect("rides out a 503: the real client's retries, on the TestClock", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(cadFor(100)) // fork, then move the clock past the backoff
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(fiber)).toBe(134.95)
      const http = yield* FinTest.InMemoryHttp
      expect(yield* http.count("POST /v1/fee-calculation")).toBe(2)
    }).pipe(Effect.provide(FinTest.layerClient({
      "POST /v1/fee-calculation": FinTest.sequence(
        FinTest.json(503, { message: "Service unavailable" }),
        FinTest.json(200, {
          data: {
            source_currency: "USD",
            destination_currency: "CAD",
            source_amount: 100,
            exchange_rate: 1.37,
            destination_amount: 134.95,
            fee: { fixed: 1, percentage: 0.5, total: 1.5, is_fee_applied: true }
          }
        })
      )
    }))))

  it.effect("sees a refusal as a typed error", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(cadFor(100))
      expect(error._tag === "RateLimitError" && error.status).toBe(429)
    }).pipe(Effect.provide(FinTest.layerClient({
      "POST /v1/fee-calculation": () => FinTest.json(429, { message: "Too many requests" }, { "retry-after": "600" })
    }))))
})
