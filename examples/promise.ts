import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, ManagedRuntime } from "effect"
import { FeeService, FinClient, FinError } from "effect-fin"
import { Emulator } from "effect-fin/emulator"

// Built once, kept for the life of the app. Yours: FinClient.layerFromEnv() on your HTTP client, without the emulator.
const Client = Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) =>
  FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url })))
const fin = ManagedRuntime.make(Client.pipe(Layer.provide(Layer.merge(Emulator.layer(), FetchHttpClient.layer))))
await fin.runtime() // a bad option or FIN_* variable fails here, at start-up, not at the first request

async function quote(request: FeeService.FeeCalculationRequest, signal?: AbortSignal): Promise<string> {
  try {
    const quote = await fin.runPromise(FeeService.calculate(request), { signal })
    return `${quote.destination_amount} ${quote.destination_currency}`
  } catch (e) {
    const error = FinError.fromRejection(e) // the promise rejects with Effect's FiberFailure, which wraps the error
    if (error?._tag === "RequestValidationError") return `refused: ${error.issues.map((i) => i.path).join(", ")}`
    if (FinError.isInterruption(e)) return "aborted" // the signal aborted, or fin.dispose() ran meanwhile
    throw e
  }
}

console.log(await quote({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })) // 142.1 CAD
console.log(await quote({ source_currency: "USD", source_amount: -5, destination_currency: "cad!" })) // refused: ...
console.log(await quote({ source_currency: "USD", source_amount: 1, destination_currency: "CAD" }, AbortSignal.abort()))
await fin.dispose() // on SIGTERM: after your server has stopped taking requests (server.close), not before
