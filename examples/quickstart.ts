import { FetchHttpClient } from "@effect/platform"
import { Console, Effect, Layer } from "effect"
import { FeeService, FinClient } from "effect-fin"
import * as FinTest from "effect-fin/test"

const program = Effect.gen(function*() {
  const quote = yield* FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
  yield* Console.log(`100 USD -> ${quote.destination_amount} CAD (fee ${quote.fee.total})`)
}).pipe(Effect.catchTag("RateLimitError", (e) => Console.error(`slow down: ${e.message}`)))

const Fetch = Layer.provide(FetchHttpClient.layer, Layer.succeed(FetchHttpClient.RequestInit, { redirect: "manual" }))
const Live = FinClient.layerFromEnv().pipe(Layer.provide(Fetch)) // FIN_CLIENT_ID, FIN_CLIENT_SECRET
const Offline = FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 }, fee: { fixed: 1, percentage: 0.5 } })

Effect.runPromise(process.env.FIN_CLIENT_ID ? Effect.provide(program, Live) : Effect.provide(program, Offline))
