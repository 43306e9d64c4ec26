/**
 * `FinTest.layerFeeService` and the emulator, given the same options, answer the same requests the same way: the
 * same figures, the same errors (as the client sees the emulator's answers).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Emulator } from "../../src/emulator/index.js"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import * as FinTest from "../../src/FinTest.js"
import * as HttpTransport from "../../src/HttpTransport.js"
import * as Layer from "effect/Layer"
import type * as FinConfig from "../../src/FinConfig.js"

const beneficiary = "0b6a3f1e-7c2d-4e5f-9a8b-1c2d3e4f5a6b"
const costly = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
const options = {
  rates: { "USD/CAD": 1.37, "EUR/CAD": 1.49 },
  fee: { fixed: 1, percentage: 60 },
  beneficiaries: {
    [beneficiary]: { currency: "CAD", developerFee: { fixed: 0.5, percentage: 0.5 } },
    [costly]: { currency: "CAD", developerFee: { fixed: 0, percentage: 45 } }
  },
  defaultSourceCurrency: "EUR"
}

const requests: ReadonlyArray<FeeService.FeeCalculationRequest> = [
  { source_currency: "USD", source_amount: 100, destination_currency: "CAD" },
  { source_currency: "USD", destination_amount: 100, destination_currency: "CAD" },
  { source_currency: "CAD", source_amount: 50, destination_currency: "USD" },
  // Ids match without regard to case; with no source currency, the default one.
  { beneficiary_id: beneficiary.toUpperCase(), source_amount: 80 },
  { source_currency: "USD", source_amount: 100, destination_currency: "JPY" },
  { source_currency: "USD", source_amount: 100, beneficiary_id: "9f8e7d6c-5b4a-4321-8fed-cba987654321" },
  // The beneficiary's account's currency, whatever the request names.
  { source_currency: "USD", source_amount: 100, destination_currency: "JPY", beneficiary_id: beneficiary },
  // 60 % + 45 %: no source amount delivers anything.
  { source_currency: "USD", destination_amount: 10, beneficiary_id: costly },
  { source_currency: "USD", source_amount: 10, beneficiary_id: costly }
]

// What both must agree on: every figure, or every field of the error but the request id (the emulator's own).
// `valid_till` is compared apart (each reads its own clock).
const outcome = (exit: Exit.Exit<FeeService.FeeQuote, unknown>) =>
  Exit.match(exit, {
    onSuccess: (quote) => ({
      quote: { ...quote, fee: { ...quote.fee }, valid_till: undefined },
      wholeSeconds: Option.map(quote.valid_till, (till) => DateTime.toEpochMillis(till) % 1000 === 0)
    }),
    onFailure: (cause) => {
      if (cause._tag !== "Fail") return { defect: String(cause) }
      const { requestId: _, ...error } = cause.error as Record<string, unknown>
      return { error }
    }
  })

describe("FinTest.layerFeeService and the emulator", () => {
  it.live("give the same answer to the same requests", () =>
    Effect.scoped(Effect.gen(function*() {
      const emulator = yield* Emulator.make(options)
      const client = FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      for (const request of requests) {
        const viaEmulator = yield* Effect.exit(
          FeeService.calculate(request).pipe(HttpTransport.withOptions({ maxRetries: 0 }), Effect.provide(client))
        )
        const viaLayer = yield* Effect.exit(
          FeeService.calculate(request).pipe(Effect.provide(FinTest.layerFeeService(options)))
        )
        expect({ request, ...outcome(viaLayer) }).toEqual({ request, ...outcome(viaEmulator) })
        // The same lifetime (15 minutes by default): each reads its own clock, one call after the other, so the two
        // expiries are apart by the time between the calls, far below a minute, and far below what another default
        // lifetime would put between them.
        if (Exit.isSuccess(viaEmulator) && Exit.isSuccess(viaLayer)) {
          const till = (q: FeeService.FeeQuote) => Option.getOrThrow(Option.map(q.valid_till, DateTime.toEpochMillis))
          expect(Math.abs(till(viaEmulator.value) - till(viaLayer.value))).toBeLessThan(60_000)
        }
      }
    })))

  it("refuses options no service could have, naming each problem, when the layer is built", () => {
    const build = (bad: Partial<FinTest.FeeServiceOptions>) =>
      Effect.runSyncExit(Effect.provide(FeeService.FeeService, FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 }, ...bad })))
    const refusal = (bad: Partial<FinTest.FeeServiceOptions>) => {
      const exit = build(bad)
      return Exit.isFailure(exit) && exit.cause._tag === "Die" ? String(exit.cause.defect) : "built"
    }
    expect(refusal({ rates: { "USD/CAD": Number.NaN } })).toContain("a finite rate > 0")
    expect(refusal({ rates: { "USD/CAD": -1.37 } })).toContain("a finite rate > 0")
    expect(refusal({ rates: { "USD/CAD": Number.POSITIVE_INFINITY } })).toContain("a finite rate > 0")
    // A rate of zero is no rate.
    expect(refusal({ rates: { "USD/CAD": 0 } })).toContain("a finite rate > 0")
    expect(refusal({ rates: { "usd-cad": 1 } as Record<string, number> })).toContain("rates.usd-cad: is unexpected")
    // A pair is two codes and nothing more: "USD/CADX" is no pair a request could name.
    expect(refusal({ rates: { "USD/CADX": 1 } })).toContain("rates.USD/CADX: is unexpected")
    // A request names no other beneficiary id: one set under any other key could never be quoted.
    expect(refusal({ beneficiaries: { "acme-ltd": { currency: "CAD" } } })).toContain("beneficiaries.acme-ltd: is unexpected")
    const id = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
    expect(refusal({ beneficiaries: { [id]: { currency: "CAD" }, [id.toUpperCase()]: { currency: "EUR" } } }))
      .toContain(`one id given twice, in other letter case: ${id.toUpperCase()}`)
    expect(refusal({ fee: { fixed: 0, percentage: 100 } })).toContain("a percentage below 100")
    // The optional field's other form (`undefined`) is no problem worth naming.
    expect(refusal({ fee: { fixed: -1, percentage: 100 } })).not.toContain("Expected undefined")
    expect(refusal({ quoteLifetime: "15 mins" as FinConfig.DurationOption })).toContain("quoteLifetime is not a valid duration")
    // As the emulator refuses them: `valid_till` is sent in whole seconds, so a shorter quote could be expired when made.
    expect(refusal({ quoteLifetime: "500 millis" })).toContain("quoteLifetime must be at least 1 second")
    expect(refusal({ quoteLifetime: "73000 days" })).toContain("quoteLifetime must be at most 100 years")
    expect(refusal({ defaultSourceCurrency: "usd" })).toContain("a currency code of three upper-case letters")
    // Each problem in one message: a bad quoteLifetime beside another bad option, not found only once that is mended.
    expect(refusal({ rates: { "USD/CAD": -1 }, quoteLifetime: "0 seconds" })).toContain(
      "FinTest.layerFeeService: rates.USD/CAD: a finite rate > 0; quoteLifetime must be greater than zero"
    )
    expect(refusal({})).toBe("built")
  })
})
