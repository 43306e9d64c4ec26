// README.md, With Jest or node:test (its block below the line, verbatim; test/readme.test.ts checks it), with
// what the README says comes from above: cadFor, and routes() making the routes of the example before it.
import { Effect, Fiber, TestClock, TestContext } from "effect"
import { FeeService } from "effect-fin"
import * as FinTest from "effect-fin/test"
import { expect, test } from "vitest"

const cadFor = (usd: number) =>
  Effect.map(
    FeeService.calculate({ source_currency: "USD", source_amount: usd, destination_currency: "CAD" }),
    (quote) => quote.destination_amount
  )
declare const routes: () => FinTest.Routes

const run = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.provide(effect, TestContext.TestContext), { signal: AbortSignal.timeout(4_000) })

test("rides out a 503", () =>
  run(Effect.gen(function*() {
    const fiber = yield* Effect.fork(cadFor(100))
    yield* TestClock.adjust("1 second")
    expect(yield* Fiber.join(fiber)).toBe(134.95)
  }).pipe(Effect.provide(FinTest.layerClient(routes())))))
