import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer } from "effect"
import { FeeService, FinClient } from "effect-fin"
import { Emulator } from "effect-fin/emulator"

const client = Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) =>
  FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url })))

const quote = FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" }).pipe(
  Effect.provide(client),
  Effect.provide(Layer.merge(Emulator.layer({ accessTokenLifetime: "2 seconds" }), FetchHttpClient.layer)))

Effect.runPromise(quote).then((q) => console.log(`${q.destination_amount} ${q.destination_currency}`)) // 142.1 CAD
