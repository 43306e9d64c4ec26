import { describe, expect, it } from "@effect/vitest"
import type * as Brand from "effect/Brand"
import * as DateTime from "effect/DateTime"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as FeeService from "../src/FeeService.js"
import type { FinError } from "../src/FinError.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as Quote from "../src/internal/quote.js"
import { olderQuoteBody, provideClient, quoteBody, quoteRequest, roundTrips } from "./support.js"

const UUID = "ceb7e6c9-ef2a-41c2-8459-38d67ec3c655"
const GREEDY = "0b6c8a52-61c1-4d3e-9a56-1d2f3c4b5a69"

const invalid: ReadonlyArray<[string, unknown, string]> = [
  ["both amounts", { source_currency: "USD", source_amount: 1, destination_amount: 2, destination_currency: "CAD" }, "destination_amount"],
  ["neither amount", { source_currency: "USD", destination_currency: "CAD" }, "source_amount"],
  ["amount 0", { source_currency: "USD", source_amount: 0, destination_currency: "CAD" }, "source_amount"],
  ["negative amount", { source_currency: "USD", destination_amount: -5, destination_currency: "CAD" }, "destination_amount"],
  ["NaN", { source_currency: "USD", source_amount: NaN, destination_currency: "CAD" }, "source_amount"],
  ["Infinity", { source_currency: "USD", source_amount: Infinity, destination_currency: "CAD" }, "source_amount"],
  ["amount past Number.MAX_SAFE_INTEGER", { source_currency: "USD", source_amount: 2 ** 53, destination_currency: "CAD" }, "source_amount"],
  ["amount written with an exponent past it", { source_currency: "USD", destination_amount: 1e21, destination_currency: "CAD" }, "destination_amount"],
  ["a float sum's artefact (0.1 + 0.2)", { source_currency: "USD", source_amount: 0.1 + 0.2, destination_currency: "CAD" }, "source_amount"],
  ["nine decimal places", { source_currency: "USD", destination_amount: 0.000000001, destination_currency: "CAD" }, "destination_amount"],
  ["amount as string", { source_currency: "USD", source_amount: "100", destination_currency: "CAD" }, "source_amount"],
  ["lower-case currency", { source_currency: "usd", source_amount: 1, destination_currency: "CAD" }, "source_currency"],
  ["4-letter currency", { source_currency: "USD", source_amount: 1, destination_currency: "CADX" }, "destination_currency"],
  ["neither destination nor beneficiary", { source_currency: "USD", source_amount: 1 }, "destination_currency"],
  ["malformed UUID", { source_currency: "USD", source_amount: 1, beneficiary_id: "not-a-uuid" }, "beneficiary_id"],
  ["no source currency without beneficiary", { source_amount: 1, destination_currency: "CAD" }, "source_currency"],
  ["an unknown field", { source_currency: "USD", source_amount: 1, destination_currency: "CAD", amount: 1 }, "amount"],
  ["not an object", "USD->CAD", ""]
]

describe("FeeService", () => {
  it("encodes only a valid_till its own decode reads back (a year past 9999 is refused, not written as +010000-...)", () => {
    const quote = (millis: number) =>
      new FeeService.FeeQuote({
        source_currency: "USD",
        destination_currency: "CAD",
        source_amount: 1,
        exchange_rate: 1,
        destination_amount: 1,
        valid_till: Option.some(DateTime.unsafeMake(millis)),
        fee: new FeeService.Fee({ fixed: 0, percentage: 0, total: 0, is_fee_applied: false })
      })
    const last = quote(Date.UTC(9999, 11, 31, 23, 59, 59))
    const encoded = Schema.encodeSync(FeeService.FeeQuote)(last)
    expect(Either.isRight(Schema.decodeEither(FeeService.FeeQuote)(encoded))).toBe(true)
    expect(Either.isLeft(Schema.encodeEither(FeeService.FeeQuote)(quote(Date.UTC(10000, 0, 2))))).toBe(true)
    expect(Either.isLeft(Schema.encodeEither(FeeService.FeeQuote)(quote(Date.UTC(-1, 11, 30))))).toBe(true)
  })

  // What the decode reads, the encode writes so that it reads it back: an offset can put a time of 9999 (or 0000) in
  // the next (or previous) year in UTC.
  it("encodes every valid_till its decode accepts, offsets past the years' ends included", () => {
    for (const text of ["9999-12-31T23:59:59-05:00", "9999-12-31 23:59:59-23:59", "0000-01-01T00:30:00+01:00"]) {
      const decoded = Schema.decodeUnknownSync(FeeService.FeeQuote)({ ...quoteBody.data, valid_till: text })
      const encoded = Schema.encodeEither(FeeService.FeeQuote)(decoded)
      expect(Either.isRight(encoded)).toBe(true)
      if (Either.isRight(encoded)) {
        const again = Schema.decodeUnknownSync(FeeService.FeeQuote)(encoded.right)
        expect(Option.map(again.valid_till, DateTime.toEpochMillis)).toEqual(
          Option.map(decoded.valid_till, DateTime.toEpochMillis)
        )
      }
    }
  })

  describe("invalid requests fail with RequestValidationError and send nothing", () => {
    for (const [name, request, path] of invalid) {
      it.effect(name, () =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(FeeService.calculate(request as FeeService.FeeCalculationRequest))
          expect(error._tag).toBe("RequestValidationError")
          if (error._tag === "RequestValidationError") {
            expect(error.issues.map((i) => i.path)).toContain(path)
            expect(error.message).toMatch(/^Invalid fee calculation request: /)
          }
          const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
          expect(requests).toHaveLength(0)
        }).pipe(provideClient({ "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody) })))
    }
  })

  // A refused value stops the schema before the endpoint's rules; they are still told, so one answer names every fix.
  it.effect("a request with a bad value and a broken rule is told both, each once", () =>
    Effect.gen(function*() {
      const both = "destination_amount: expected exactly one of source_amount and destination_amount"
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [
          { source_currency: "usd", source_amount: 5, destination_amount: 4, destination_currency: "EUR" },
          `source_currency: expected a currency code of three upper-case letters; ${both}`
        ],
        [
          { source_currency: "USD", source_amount: 5, destination_amount: 4, destination_currency: "EUR", extra: 1 },
          `extra: expected no such key; ${both}`
        ],
        [{ source_currency: "USD", source_amount: 5, destination_amount: 4, destination_currency: "EUR" }, both]
      ]
      for (const [request, issues] of cases) {
        const error = yield* Effect.flip(FeeService.validate(request))
        expect(error.message).toBe(`Invalid fee calculation request: ${issues}`)
      }
    }))

  // The rules are told of the fields the schema reads: an object's own keys, never an array's nor inherited ones.
  it.effect("the rules told beside a refused value are of the request's own fields, and of none for an array", () =>
    Effect.gen(function*() {
      const amount = "source_amount: expected a number greater than 0 and at most 9007199254740991"
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [[], "expected a fee calculation request object"],
        [
          Object.assign(Object.create({ destination_amount: 5 }), {
            source_amount: "x",
            source_currency: "USD",
            destination_currency: "EUR"
          }),
          amount
        ],
        [
          Object.assign(Object.create({ destination_currency: "EUR" }), { source_amount: "x", source_currency: "USD" }),
          `${amount}; destination_currency: expected destination_currency or beneficiary_id`
        ]
      ]
      for (const [request, issues] of cases) {
        const error = yield* Effect.flip(FeeService.validate(request))
        expect(error.message).toBe(`Invalid fee calculation request: ${issues}`)
      }
    }))

  // As past MAX_SAFE_INTEGER, where a number no longer tells whole amounts apart: past 2^26 not every amount of 8
  // places is a number of its own, past 2^46 not every cent. The number is not the amount written: refused, not sent.
  it.effect("an amount whose decimal places a number cannot hold is refused; the largest ones held are taken", () =>
    Effect.gen(function*() {
      const refused = ["90071992.54740993", "123456789.12345677", "100000000000000.01", "90071992547409.98"]
      for (const written of refused) {
        const error = yield* Effect.flip(
          FeeService.validate({ source_amount: Number(written), source_currency: "USD", destination_currency: "EUR" })
        )
        expect(error.message, written).toBe(
          "Invalid fee calculation request: source_amount: expected a number that stands for one amount at its " +
            "decimal places (100000000000000.01 is read as 100000000000000.02, 123456789.12345677 as " +
            "123456789.12345678)"
        )
      }
      // Only the number is seen: one written with more places than it keeps passes as that number (documented).
      const shorter = {
        source_amount: Number("681372753.20793099"), source_currency: "USD",
        destination_currency: "EUR"
      }
      expect((yield* FeeService.validate(shorter)).source_amount).toBe(681372753.207931)
      const held = [67108863.99999999, 45035996.27370495, 0.12345678, 70368744177663.99, 2 ** 46, 1e15, 2 ** 53 - 1]
      for (const amount of held) {
        const request = { source_amount: amount, source_currency: "USD", destination_currency: "EUR" }
        expect(yield* FeeService.validate(request), String(amount)).toEqual(request)
      }
    }))

  // An error keeps 20 issues: its message says there were more, so that mending those is not taken for mending all.
  it.effect("a request with more than 20 issues keeps the first 20, and its message says how many more", () =>
    Effect.gen(function*() {
      const request: Record<string, unknown> = { source_amount: 1, source_currency: "USD", destination_currency: "EUR" }
      for (let i = 0; i < 25; i++) request[`extra_${i}`] = i
      const error = yield* Effect.flip(FeeService.validate(request))
      expect(error.issues.map((issue) => issue.path)).toEqual(Array.from({ length: 20 }, (_, i) => `extra_${i}`))
      expect(error.message).toMatch(/^Invalid fee calculation request: extra_0: expected no such key; .*; extra_19: /)
      expect(error.message).toMatch(/extra_19: expected no such key; and 5 more$/)
      // A key of the input's own is cut as a response's is (1,024 characters, then `...`): 20 keys a megabyte long
      // make no 20 MB message.
      const long = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`${i}${"k".repeat(1_000_000)}`, i]))
      const cut = yield* Effect.flip(FeeService.validate(long))
      expect(cut.issues[0]?.path).toBe(`0${"k".repeat(1023)}...`)
      expect(cut.message.length).toBeLessThan(25_000)
      // Never inside a character (an emoji's surrogate pair), and a key of exactly 1,024 characters is kept whole.
      const edges = { [`${"e".repeat(1023)}\u{1F600}`]: 1, ["x".repeat(1024)]: 2 }
      const edge = yield* Effect.flip(FeeService.validate(edges))
      expect(edge.issues.map((issue) => issue.path).slice(0, 2)).toEqual([`${"e".repeat(1023)}...`, "x".repeat(1024)])
    }))

  // Past the 20 told, unknown keys are only counted (the schema would build an issue for each, seconds for a million).
  it.effect("a request of a hundred thousand unknown keys is told its first 20 issues and how many more, all counted", () =>
    Effect.gen(function*() {
      const keys = Array.from({ length: 100_000 }, (_, i) => `"k${i}":${i}`).join(",")
      const request: unknown = JSON.parse(
        `{"__proto__":1,"source_amount":"x","source_currency":"USD","destination_currency":"EUR",${keys}}`
      )
      const error = yield* Effect.flip(FeeService.validate(request))
      expect(error.issues.map((issue) => issue.path)).toEqual([
        "__proto__",
        ...Array.from({ length: 19 }, (_, i) => `k${i}`)
      ])
      // 100,001 unknown keys and the refused amount, 20 of them told.
      expect(error.message).toMatch(/k18: expected no such key; and 99982 more$/)
    }))

  // Past the 20 told, every key is still read as the schema reads it: a request that cannot be read is a defect.
  it.effect("past 20 unknown keys, a getter that throws on a later one is still a defect", () =>
    Effect.gen(function*() {
      const request: Record<string, unknown> = { source_amount: "1", source_currency: "USD", destination_currency: "EUR" }
      for (let i = 0; i < 25; i++) request[`k${i}`] = i
      Object.defineProperty(request, "late", {
        enumerable: true,
        get: () => {
          throw new Error("boom")
        }
      })
      const exit = yield* Effect.exit(FeeService.validate(request))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    }))

  it.effect("a non-enumerable own field is read by the rules as the schema reads it", () =>
    Effect.gen(function*() {
      const request = { source_amount: "x", source_currency: "USD" }
      Object.defineProperty(request, "destination_currency", { value: "EUR", enumerable: false })
      const error = yield* Effect.flip(FeeService.validate(request))
      expect(error.message).toBe(
        "Invalid fee calculation request: source_amount: expected a number greater than 0 and at most 9007199254740991"
      )
    }))

  it.effect("an amount that is not a number at all says what an amount must be, as a bad number does", () =>
    Effect.gen(function*() {
      for (const amount of ["100", "-5", null, -5, 0, 2 ** 53]) {
        const error = yield* Effect.flip(FeeService.validate({ source_currency: "USD", destination_currency: "CAD", source_amount: amount }))
        expect(error.message, String(amount)).toBe(
          "Invalid fee calculation request: source_amount: expected a number greater than 0 and at most 9007199254740991"
        )
      }
    }))

  it.effect("an amount with more than 8 decimal places (a float's artefact) says to round it first", () =>
    Effect.gen(function*() {
      for (const amount of [0.1 + 0.2, 1.1 * 3, 0.7 + 0.1, 1000000.1 + 0.2, 4.35 * 100, 1.5e-9, 12.123456789]) {
        const error = yield* Effect.flip(FeeService.validate({ source_currency: "USD", destination_currency: "CAD", source_amount: amount }))
        expect(error.message, String(amount)).toBe(
          "Invalid fee calculation request: source_amount: expected an amount with at most 8 decimal places (round a computed amount first: 0.1 + 0.2 is 0.30000000000000004)"
        )
      }
    }))

  it.effect("the largest safe amount and the smallest fractions pass through untouched", () =>
    Effect.gen(function*() {
      for (const amount of [Number.MAX_SAFE_INTEGER, 0.00000001, 1.5e-7, 94.919, 12.12345678, Math.round((0.1 + 0.2) * 100) / 100]) {
        const request = { source_currency: "USD", destination_currency: "CAD", source_amount: amount }
        expect(yield* FeeService.validate(request)).toEqual(request)
      }
    }))

  it.effect("valid_till: null is None; a time without a zone is UTC; text that is not a date-time is a ResponseDecodeError", () =>
    Effect.gen(function*() {
      const decode = (valid_till: unknown) =>
        Schema.decodeUnknownEither(FeeService.FeeCalculationResponse)({ data: { ...quoteBody.data, valid_till } })
      const till = (valid_till: unknown) =>
        Either.map(decode(valid_till), (response) => Option.map(response.data.valid_till, DateTime.formatIso))
      expect(till(null)).toEqual(Either.right(Option.none()))
      expect(till("2026-01-19T09:59:29")).toEqual(Either.right(Option.some("2026-01-19T09:59:29.000Z")))
      expect(till("2026-01-19 10:59:29+01")).toEqual(Either.right(Option.some("2026-01-19T09:59:29.000Z")))
      expect(till("2026-01-19T09:59Z")).toEqual(Either.right(Option.some("2026-01-19T09:59:00.000Z")))
      for (const text of ["1", "2026", "January 19, 2026", "2026-01-19T24:00:00Z", "2026-02-30T00:00:00Z"]) {
        expect(Either.isLeft(decode(text)), text).toBe(true)
      }
      const error = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(error._tag).toBe("ResponseDecodeError")
      if (error._tag === "ResponseDecodeError") {
        expect(error.issues.map((i) => [i.path, i.expected])).toContainEqual(["data.valid_till", "an ISO 8601 date-time"])
      }
    }).pipe(provideClient({
      "POST /v1/fee-calculation": () => FinTest.json(200, { data: { ...quoteBody.data, valid_till: "2026" } })
    })))

  it.effect("a quote whose figures a number cannot hold exactly, or that are negative, is a ResponseDecodeError naming them", () =>
    Effect.gen(function*() {
      const data = JSON.stringify(quoteBody.data)
      // As sent: JSON.parse turns 9007199254740993 into ...992 and 1e400 into Infinity, so neither is what was quoted.
      const answers: ReadonlyArray<[string, string]> = [
        ["source_amount", data.replace(/"source_amount":\d+/, `"source_amount":9007199254740993`)],
        ["destination_amount", data.replace(/"destination_amount":\d+/, `"destination_amount":1e400`)],
        ["destination_amount", data.replace(/"destination_amount":\d+/, `"destination_amount":-508679`)],
        // At the bound too: the smallest negative amount a quote can hold (a cent below zero) is refused as well.
        ["destination_amount", data.replace(/"destination_amount":\d+/, `"destination_amount":-0.01`)],
        ["exchange_rate", data.replace(/"exchange_rate":[\d.]+/, `"exchange_rate":-1.45`)],
        // No conversion is at a rate of zero.
        ["exchange_rate", data.replace(/"exchange_rate":[\d.]+/, `"exchange_rate":0`)],
        // Nor at one a number cannot hold: 1e400 is read as Infinity, which would excuse any destination amount.
        ["exchange_rate", data.replace(/"exchange_rate":[\d.]+/, `"exchange_rate":1e400`)],
        ["exchange_rate", data.replace(/"exchange_rate":[\d.]+/, `"exchange_rate":9007199254740993`)],
        ["fee.total", data.replace(/"total":[\d.]+/, `"total":1e400`)],
        ["fee.fixed", data.replace(/"fixed":[\d.]+/, `"fixed":-9007199254740993`)]
      ]
      for (const [path, body] of answers) {
        expect(body, path).not.toBe(data)
        const error = yield* Effect.flip(FeeService.calculate(quoteRequest)).pipe(
          provideClient({ "POST /v1/fee-calculation": () => FinTest.text(200, `{"data":${body}}`, { "content-type": "application/json" }) })
        )
        expect(error._tag, path).toBe("ResponseDecodeError")
        if (error._tag === "ResponseDecodeError") {
          expect(error.issues.map((i) => i.path), body).toEqual([`data.${path}`])
        }
      }
      // Zero, the largest safe figures and fractions are kept as sent.
      const max = Number.MAX_SAFE_INTEGER
      const fee = { fixed: -max, percentage: 4, total: max, is_fee_applied: true }
      const edge = { ...quoteBody.data, destination_amount: 0, source_amount: max, exchange_rate: 0.00001, fee }
      const quote = yield* FeeService.calculate({ ...quoteRequest, source_amount: Number.MAX_SAFE_INTEGER }).pipe(
        provideClient({ "POST /v1/fee-calculation": () => FinTest.json(200, { data: edge }) })
      )
      expect([quote.destination_amount, quote.source_amount, quote.exchange_rate]).toEqual([0, Number.MAX_SAFE_INTEGER, 0.00001])
      expect([quote.fee.fixed, quote.fee.total]).toEqual([-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER])
    }))

  it.effect("a quote in other currencies than those asked for is a ResponseDecodeError, not retried", () =>
    Effect.gen(function*() {
      const answered = (data: Partial<typeof quoteBody.data>) => ({
        "POST /v1/fee-calculation": () => FinTest.json(200, { data: { ...quoteBody.data, ...data } })
      })
      const mixedUp = yield* Effect.flip(FeeService.calculate(quoteRequest)).pipe(
        provideClient(answered({ source_currency: "EUR", destination_currency: "JPY" }))
      )
      expect(mixedUp).toMatchObject({ _tag: "ResponseDecodeError", status: 200, attempts: 1 })
      if (mixedUp._tag === "ResponseDecodeError") {
        expect(mixedUp.issues.map((i) => [i.path, i.expected])).toEqual([
          ["data.source_currency", "USD, the currency asked for"],
          ["data.destination_currency", "CAD, the currency asked for"]
        ])
        expect(mixedUp.message).not.toContain("EUR")
      }
      // With a beneficiary, the service picks the destination currency (its account's): only the source is asked for.
      const forBeneficiary = { source_currency: "USD", source_amount: 3508679, beneficiary_id: UUID } as const
      const quote = yield* FeeService.calculate(forBeneficiary).pipe(provideClient(answered({ destination_currency: "EUR" })))
      expect(quote.destination_currency).toBe("EUR")
      // Even when the request names a destination currency too: the beneficiary's account decides it.
      const named = yield* FeeService.calculate({ ...forBeneficiary, destination_currency: "CAD" }).pipe(
        provideClient(answered({ destination_currency: "EUR" }))
      )
      expect(named.destination_currency).toBe("EUR")
      const otherSource = yield* Effect.flip(FeeService.calculate(forBeneficiary)).pipe(
        provideClient(answered({ source_currency: "GBP" }))
      )
      expect(otherSource._tag === "ResponseDecodeError" && otherSource.issues.map((i) => i.path)).toEqual([
        "data.source_currency"
      ])
      // Letter case aside, it is the currency asked for, and named as asked, so it compares equal to the request's.
      const lower = yield* FeeService.calculate(quoteRequest).pipe(
        provideClient(answered({ source_currency: "usd", destination_currency: "cAd" }))
      )
      expect([lower.source_currency, lower.destination_currency]).toEqual(["USD", "CAD"])
      // Not every letter upper-cases to an ASCII one: "ſ" (long s) does to "S", but "uſd" is no currency asked for.
      const lookalike = yield* Effect.flip(FeeService.calculate(quoteRequest)).pipe(
        provideClient(answered({ source_currency: "uſd" }))
      )
      expect(lookalike._tag === "ResponseDecodeError" && lookalike.issues.map((i) => i.path)).toEqual([
        "data.source_currency"
      ])
      // Without a source currency (a beneficiary's quote), any is taken.
      const anySource = yield* FeeService.calculate({ source_amount: 3508679, beneficiary_id: UUID }).pipe(
        provideClient(answered({ source_currency: "GBP" }))
      )
      expect(anySource.source_currency).toBe("GBP")
    }))

  // With a beneficiary the service picks the currencies, but a quote must still name them.
  it.effect("a quote naming no currency (empty, blank, no code) is a ResponseDecodeError, with a beneficiary too", () =>
    Effect.gen(function*() {
      for (const currency of ["", " ", " USD", "<b>", ".x", "u\u017fd", "X".repeat(33)]) {
        const error = yield* Effect.flip(FeeService.calculate({ source_amount: 3508679, beneficiary_id: UUID })).pipe(
          provideClient({
            "POST /v1/fee-calculation": () =>
              FinTest.json(200, {
                data: { ...quoteBody.data, source_currency: currency, destination_currency: currency }
              })
          })
        )
        expect(error._tag === "ResponseDecodeError" && error.issues.map((i) => [i.path, i.expected]), currency)
          .toEqual([["data.source_currency", "a currency code"], ["data.destination_currency", "a currency code"]])
      }
      const usdc = yield* FeeService.calculate({ source_amount: 3508679, beneficiary_id: UUID }).pipe(
        provideClient({
          "POST /v1/fee-calculation": () =>
            FinTest.json(200, { data: { ...quoteBody.data, destination_currency: "USDC.e" } })
        })
      )
      expect(usdc.destination_currency).toBe("USDC.e")
      // Other tickers, as sent: a digit first, `_` and `-` inside, lower case kept, up to 32 characters.
      for (const currency of ["1INCH", "USDT-TRC20", "usdc_e", "X".repeat(32)]) {
        const quote = yield* FeeService.calculate({ source_amount: 3508679, beneficiary_id: UUID }).pipe(
          provideClient({
            "POST /v1/fee-calculation": () =>
              FinTest.json(200, { data: { ...quoteBody.data, destination_currency: currency } })
          })
        )
        expect(quote.destination_currency).toBe(currency)
      }
    }))

  it.effect("a quote for another amount than the one asked for is a ResponseDecodeError; the amount rounded is not", () =>
    Effect.gen(function*() {
      const answered = (data: Partial<typeof quoteBody.data>) =>
        provideClient({ "POST /v1/fee-calculation": () => FinTest.json(200, { data: { ...quoteBody.data, ...data } }) })
      // A send quote: its source amount is the one asked for.
      const other = yield* Effect.flip(FeeService.calculate(quoteRequest)).pipe(answered({ source_amount: 1_000_000 }))
      expect(other).toMatchObject({ _tag: "ResponseDecodeError", status: 200, attempts: 1 })
      expect(other._tag === "ResponseDecodeError" && other.issues.map((i) => [i.path, i.expected])).toEqual([
        ["data.source_amount", "3508679, the amount asked for (or it rounded to fewer decimal places)"]
      ])
      expect(yield* Effect.flip(FeeService.calculate(quoteRequest)).pipe(answered({ source_amount: 3508680 })))
        .toMatchObject({ _tag: "ResponseDecodeError" })
      // Rounded either way to fewer places (the currency's unit), it is still the amount asked for: less than one unit
      // of the answer's last place off, counted exactly (1.15 - 1.05 is 0.09999999999999987 in floats).
      const roundings: ReadonlyArray<readonly [number, number, boolean]> = [
        [100.5, 101, true],
        [100.5, 100, true],
        [100.123, 100.12, true],
        [100.123, 100.2, true],
        [0.5, 1.49, false],
        [100.123, 100.9, false],
        [1.15, 1.05, false],
        [1.15, 1.1, true],
        [100.5, 100.6, false],
        // A float artefact of a rounded answer (1.1 * 3): its places past 8 do not count, its rounding does.
        [3.304, 1.1 * 3, true],
        [3.3, 1.1 * 3, true],
        [3.41, 1.1 * 3, false],
        // Past 10^4 an artefact has fewer places (9 to 12), and they do not count either; past 10^8, 8 or fewer.
        [1000000.3, 1000000.1 + 0.2, true],
        [10000.3, 10000.1 + 0.2, true],
        [191478486.95, Math.round(191478486.95 * 100) * 0.01, true],
        [191478486.96, Math.round(191478486.95 * 100) * 0.01, false],
        // Past 10^13 an artefact of a 16-digit amount is 20 steps from its first 15 digits: those are what count.
        [37656579017639.16, 37656579017639.164, true],
        // Digits within the places asked are the service's, however many: another amount, not an artefact.
        [10000000.00000001, 10000000.00000009, false],
        [1234567890.123456, 1234567890.123464, false],
        // Trimmed to 15 digits, not fewer: an artefact (0.10000002000000001) still says its 8th place.
        [0.10000002, 0.1 + 0.00000002, true],
        [0.10000003, 0.1 + 0.00000002, false],
        // One unit of a last place past the second is too much.
        [100.123, 100.124, false],
        [1.23456789, 1.23456788, false]
      ]
      for (const [source_amount, answer, taken] of roundings) {
        const exit = yield* Effect.exit(
          FeeService.calculate({ ...quoteRequest, source_amount }).pipe(answered({ source_amount: answer }))
        )
        expect(exit._tag, `${source_amount} answered as ${answer}`).toBe(taken ? "Success" : "Failure")
      }
      // A receive quote: its destination amount is the one asked for; its source amount is the service's to work out.
      const receive = { source_currency: "USD", destination_amount: 59456, destination_currency: "CAD" } as const
      const wrong = yield* Effect.flip(FeeService.calculate(receive)).pipe(answered({}))
      expect(wrong._tag === "ResponseDecodeError" && wrong.issues.map((i) => i.path)).toEqual(["data.destination_amount"])
      const right = yield* FeeService.calculate(receive).pipe(answered({ destination_amount: 59456 }))
      expect([right.destination_amount, right.source_amount]).toEqual([59456, 3508679])
      // Worked back from a source rounded to its last place (here a whole unit), and the fee taken from it rounded too,
      // it may be off by less than one and a half of that place's worth at the rate (here 2), plus its own last place
      // (1): off by exactly that is off by too much.
      // Short of the amount asked for counts as much as past it: a quote delivering less is no answer either.
      for (const short of [1, 29728, 59452]) {
        const less = yield* Effect.flip(FeeService.calculate(receive)).pipe(answered({ destination_amount: short }))
        expect(less._tag === "ResponseDecodeError" && less.issues.map((i) => i.path), String(short))
          .toEqual(["data.destination_amount"])
      }
      // At 1.45 from a whole source: less than 1.5 x 1.45 + 1 (3.175) off, either way.
      expect((yield* FeeService.calculate(receive).pipe(answered({ destination_amount: 59453 }))).destination_amount)
        .toBe(59453)
      // The unit added is the answer's own last place, not the request's: 100.39 rounded to 100 is taken, and 100
      // answered as 100.5 (one place: a tenth) is not, though it is within a whole unit.
      const unit = { source_currency: "USD", destination_amount: 100.39, destination_currency: "CAD" } as const
      const whole = yield* FeeService.calculate(unit).pipe(
        answered({ source_amount: 100.39, exchange_rate: 1, destination_amount: 100 })
      )
      expect(whole.destination_amount).toBe(100)
      const tenth = yield* Effect.flip(FeeService.calculate({ ...unit, destination_amount: 100 })).pipe(
        answered({ source_amount: 100.01, exchange_rate: 1, destination_amount: 100.5 })
      )
      expect(tenth._tag === "ResponseDecodeError" && tenth.issues.map((i) => i.path))
        .toEqual(["data.destination_amount"])
      const near = yield* FeeService.calculate(receive).pipe(answered({ exchange_rate: 2, destination_amount: 59459 }))
      expect(near.destination_amount).toBe(59459)
      const edge = yield* Effect.flip(FeeService.calculate(receive)).pipe(answered({ exchange_rate: 2, destination_amount: 59460 }))
      expect(edge._tag === "ResponseDecodeError" && edge.issues.map((i) => i.path)).toEqual(["data.destination_amount"])
      // From a source rounded to the cent: less than a cent's worth at the rate, plus a unit.
      const idr = { source_currency: "USD", destination_amount: 1_000_000, destination_currency: "IDR" } as const
      const rounded = { source_currency: "USD", destination_currency: "IDR", exchange_rate: 16250, source_amount: 61.54 }
      const delivered = yield* FeeService.calculate(idr).pipe(answered({ ...rounded, destination_amount: 1_000_025 }))
      expect(delivered.destination_amount).toBe(1_000_025)
      // A source with a float artefact (61.54 computed as 61.540000000000006) still has cents as its last place.
      const artefact = { ...rounded, source_amount: 61.540000000000006 }
      expect((yield* FeeService.calculate(idr).pipe(answered({ ...artefact, destination_amount: 1_000_025 }))).destination_amount)
        .toBe(1_000_025)
      const doubled = yield* Effect.flip(FeeService.calculate(idr)).pipe(answered({ ...rounded, destination_amount: 2_000_000 }))
      expect(doubled._tag === "ResponseDecodeError" && doubled.issues.map((i) => [i.path, i.expected])).toEqual([
        ["data.destination_amount", "1000000, the amount asked for (less than 244.75 off)"]
      ])
      // So with a beneficiary, where the currencies are the service's to pick.
      const beneficiary = yield* Effect.flip(FeeService.calculate({ source_amount: 5, beneficiary_id: UUID })).pipe(answered({}))
      expect(beneficiary._tag === "ResponseDecodeError" && beneficiary.issues.map((i) => i.path)).toEqual(["data.source_amount"])
    }))

  // Nothing sent delivers nothing: a receive quote with a source of 0 is not the answer, whatever its destination says.
  it.effect("a quote whose source amount is 0, or a receive quote's destination amount, is a ResponseDecodeError", () =>
    Effect.gen(function*() {
      const receive = { source_currency: "USD", destination_amount: 100, destination_currency: "CAD" } as const
      const free = { fixed: 0, percentage: 0, total: 0, is_fee_applied: false }
      const error = yield* Effect.flip(FeeService.calculate(receive)).pipe(provideClient({
        "POST /v1/fee-calculation": () =>
          FinTest.json(200, { data: { ...quoteBody.data, source_amount: 0, destination_amount: 100, fee: free } })
      }))
      expect(error._tag === "ResponseDecodeError" && error.issues.map((i) => i.path)).toEqual(["data.source_amount"])
      // Nor is one delivering nothing, though a whole-number source at a large rate leaves more than 150 yen of slack.
      const yen = { source_currency: "USD", destination_amount: 150, destination_currency: "JPY" } as const
      const nothing = yield* Effect.flip(FeeService.calculate(yen)).pipe(provideClient({
        "POST /v1/fee-calculation": () =>
          FinTest.json(200, {
            data: {
              ...quoteBody.data,
              destination_currency: "JPY",
              source_amount: 1,
              exchange_rate: 150,
              destination_amount: 0,
              fee: free
            }
          })
      }))
      expect(nothing._tag === "ResponseDecodeError" && nothing.issues.map((i) => [i.path, i.expected])).toEqual([
        ["data.destination_amount", "an amount above 0, the amount asked to deliver"]
      ])
      // Said once, though 0 is outside the slack too at a small rate.
      const small = yield* Effect.flip(FeeService.calculate(receive)).pipe(provideClient({
        "POST /v1/fee-calculation": () =>
          FinTest.json(200, { data: { ...quoteBody.data, source_amount: 75, destination_amount: 0, fee: free } })
      }))
      expect(small._tag === "ResponseDecodeError" && small.issues.map((i) => i.path))
        .toEqual(["data.destination_amount"])
      // Nor a send quote whose source comes back 0: rounded down to nothing (0.99 as 0), it is no amount asked to send.
      const send = { source_currency: "USD", source_amount: 0.99, destination_currency: "CAD" } as const
      const none = yield* Effect.flip(FeeService.calculate(send)).pipe(provideClient({
        "POST /v1/fee-calculation": () =>
          FinTest.json(200, { data: { ...quoteBody.data, source_amount: 0, destination_amount: 0, fee: free } })
      }))
      expect(none._tag === "ResponseDecodeError" && none.issues.map((i) => [i.path, i.expected])).toEqual([
        ["data.source_amount", "an amount above 0, the amount asked to send"]
      ])
    }))

  // A service that works the destination back from the source it quotes: the source rounded up to the cent (2.23007
  // is 2.24), the fee on it (1 + 1 % of 2.24, 1.0224) rounded to the cent, 1.02, so 1.22 sent delivers 101.41.
  it.effect("a receive quote worked back from its rounded source and rounded fee is the amount asked for", () =>
    Effect.gen(function*() {
      const receive = { source_currency: "USD", destination_amount: 100.39, destination_currency: "INR" } as const
      const quote = yield* FeeService.calculate(receive).pipe(provideClient({
        "POST /v1/fee-calculation": () =>
          FinTest.json(200, {
            data: {
              ...quoteBody.data,
              destination_currency: "INR",
              source_amount: 2.24,
              exchange_rate: 83.12,
              destination_amount: 101.41,
              fee: { fixed: 1, percentage: 1, total: 1.02, is_fee_applied: true }
            }
          })
      }))
      expect([quote.source_amount, quote.destination_amount]).toEqual([2.24, 101.41])
    }))

  it.effect("what validate returns (from untyped input) is quoted as is, without a cast", () =>
    Effect.gen(function*() {
      const input: unknown = JSON.parse('{"source_currency":"USD","destination_currency":"CAD","source_amount":3508679}')
      const quote = yield* Effect.flatMap(FeeService.validate(input), FeeService.calculate)
      expect(quote.exchange_rate).toBe(1.45)
      const sent = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(sent.map((request) => request.body)).toContainEqual(input)
    }).pipe(provideClient({ "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody) })))

  // A request that cannot be read (an immer draft used after its producer returned is a revoked Proxy): nothing is
  // thrown where the effect is made; running it dies, on the real service and the test one alike.
  it.effect("a request that cannot be read is a defect of the effect, never an exception where it is made", () =>
    Effect.gen(function*() {
      const { proxy, revoke } = Proxy.revocable({ ...quoteRequest }, {})
      revoke()
      const unreadable = proxy as FeeService.FeeCalculationRequest
      const real = yield* FeeService.FeeService
      const fake = yield* Effect.provide(FeeService.FeeService, FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 } }))
      const effects: ReadonlyArray<Effect.Effect<unknown, FinError>> = [
        FeeService.validate(unreadable),
        real.calculate(unreadable),
        fake.calculate(unreadable)
      ]
      for (const effect of effects) {
        const exit = yield* Effect.exit(effect)
        // The revoked Proxy's own TypeError, not a stand-in.
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause) && Cause.squash(exit.cause)).toBeInstanceOf(TypeError)
      }
      expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)).toEqual([])
    }).pipe(provideClient({})))

  it.effect("both amounts or no destination: refused by the type when compiled (tsc), and by validate at run time", () =>
    Effect.gen(function*() {
      // @ts-expect-error both amounts
      const both: FeeService.FeeCalculationRequest = { source_currency: "USD", source_amount: 1, destination_amount: 1, destination_currency: "CAD" }
      // @ts-expect-error no destination currency and no beneficiary
      const nowhere: FeeService.FeeCalculationRequest = { source_currency: "USD", source_amount: 1 }
      const byBeneficiary: FeeService.FeeCalculationRequest = { destination_amount: 10, beneficiary_id: UUID }
      expect((yield* Effect.flip(FeeService.validate(both)))._tag).toBe("RequestValidationError")
      expect((yield* Effect.flip(FeeService.validate(nowhere)))._tag).toBe("RequestValidationError")
      expect(yield* FeeService.validate(byBeneficiary)).toEqual(byBeneficiary)
    }))

  it.effect("a literal currency code that is no three upper-case letters does not compile (tsc); strings and brands do", () =>
    Effect.gen(function*() {
      const service = yield* FeeService.FeeService
      const either = Math.random() < 2
      // A function of the caller's own that passes the request on keeps the checks when typed as calculate is.
      const quote = <const R extends FeeService.FeeCalculationRequest>(request: FeeService.CheckedRequest<R>) =>
        FeeService.calculate(request).pipe(HttpTransport.withOptions({ deadline: "5 seconds" }))
      const refused: ReadonlyArray<Effect.Effect<FeeService.FeeQuote, FinError, FeeService.FeeService>> = [
        // @ts-expect-error through a function of the caller's own, typed with CheckedRequest
        quote({ source_currency: "usd", source_amount: 1, destination_currency: "CAD" }),
        // @ts-expect-error source_currency in lower case
        FeeService.calculate({ source_currency: "usd", source_amount: 1, destination_currency: "CAD" }),
        // @ts-expect-error destination_currency of two letters, through the service itself
        service.calculate({ source_currency: "USD", destination_amount: 1, destination_currency: "CA" }),
        // @ts-expect-error one of the two requests a conditional chooses from
        FeeService.calculate(either ? { source_currency: "USD", source_amount: 1, destination_currency: "cad" } : { destination_amount: 1, beneficiary_id: UUID }),
        // @ts-expect-error a misspelt field does not compile either (as before CheckedRequest), even with good codes
        FeeService.calculate({ source_currency: "USD", source_amount: 1, destination_currency: "CAD", benficiary_id: UUID }),
        // @ts-expect-error through the service itself too
        service.calculate({ source_currency: "USD", source_amount: 1, destination_currency: "CAD", note: "x" })
      ]
      for (const call of refused) expect((yield* Effect.flip(call))._tag).toBe("RequestValidationError")
      // Codes known only at run time are checked then; a union of valid literal requests compiles.
      const typed: string = "usd"
      const branded = "USD" as string & Brand.Brand<"Currency">
      expect((yield* Effect.flip(FeeService.calculate({ source_currency: typed, source_amount: 1, destination_currency: "CAD" })))._tag)
        .toBe("RequestValidationError")
      // A caller's own type parameter is left to the run-time check, as for a country code.
      const generic = <C extends string>(currency: C) =>
        FeeService.calculate({ source_currency: currency, source_amount: 1, destination_currency: "CAD" })
      const sent = [
        generic("USD"),
        quote({ source_currency: "USD", source_amount: 1, destination_currency: "CAD" }),
        FeeService.calculate({ source_currency: branded, source_amount: 1, destination_currency: "CAD" }),
        FeeService.calculate(either ? { source_currency: "USD", source_amount: 1, destination_currency: "CAD" } : { destination_amount: 1, beneficiary_id: UUID })
      ]
      for (const call of sent) expect((yield* call).source_currency).toBe("USD")
    }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 } }))))

  it.effect("a literal amount no amount is (zero, negative, past 8 places, 10^16 or more) does not compile (tsc)", () =>
    Effect.gen(function*() {
      const service = yield* FeeService.FeeService
      const refused: ReadonlyArray<Effect.Effect<FeeService.FeeQuote, FinError, FeeService.FeeService>> = [
        // @ts-expect-error a negative source amount
        FeeService.calculate({ source_currency: "USD", source_amount: -100, destination_currency: "CAD" }),
        // @ts-expect-error a zero destination amount, through the service itself
        service.calculate({ source_currency: "USD", destination_amount: 0, destination_currency: "CAD" }),
        // @ts-expect-error nine decimal places
        FeeService.calculate({ source_currency: "USD", source_amount: 0.123456789, destination_currency: "CAD" }),
        // @ts-expect-error nine decimal places in exponent form (0.000000015)
        FeeService.calculate({ source_currency: "USD", source_amount: 1.5e-8, destination_currency: "CAD" }),
        // @ts-expect-error nine decimal places in exponent form (0.000000001)
        FeeService.calculate({ source_currency: "USD", source_amount: 1e-9, destination_currency: "CAD" }),
        // @ts-expect-error nine decimal places in exponent form (0.000000125)
        FeeService.calculate({ source_currency: "USD", source_amount: 1.25e-7, destination_currency: "CAD" }),
        // @ts-expect-error past Number.MAX_SAFE_INTEGER, in exponent form
        FeeService.calculate({ source_currency: "USD", source_amount: 1e300, destination_currency: "CAD" }),
        // @ts-expect-error past a double's range (the literal's type is Infinity)
        FeeService.calculate({ source_currency: "USD", source_amount: 1e400, destination_currency: "CAD" }),
        // @ts-expect-error past Number.MAX_SAFE_INTEGER: 17 digits
        FeeService.calculate({ source_currency: "USD", source_amount: 10000000000000000, destination_currency: "CAD" })
      ]
      for (const call of refused) expect((yield* Effect.flip(call))._tag).toBe("RequestValidationError")
      const computed: number = 100
      // A caller's own type parameter is left to the run-time check.
      const generic = <N extends number>(n: N) =>
        FeeService.calculate({ source_currency: "USD", source_amount: n, destination_currency: "CAD" })
      const sent = [
        generic(100),
        FeeService.calculate({ source_currency: "USD", source_amount: computed, destination_currency: "CAD" }),
        FeeService.calculate({ source_currency: "USD", source_amount: 0.12345678, destination_currency: "CAD" }),
        FeeService.calculate({ source_currency: "USD", source_amount: 1.5e-7, destination_currency: "CAD" }),
        FeeService.calculate({ source_currency: "USD", source_amount: 1e-8, destination_currency: "CAD" }),
        FeeService.calculate({ source_currency: "USD", source_amount: 3e-7, destination_currency: "CAD" }),
        // The largest safe amount, and one of 16 digits with a fraction.
        FeeService.calculate({ source_currency: "USD", source_amount: 9007199254740991, destination_currency: "CAD" }),
        FeeService.calculate({ source_currency: "USD", source_amount: 1234567890123.25, destination_currency: "CAD" })
      ]
      // Sent (the rate table refuses an amount under a cent, as the service does): none refused before sending.
      for (const call of sent) expect(Either.getLeft(yield* Effect.either(call)).pipe(Option.map((e) => e._tag))).not.toEqual(Option.some("RequestValidationError"))
    }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 } }))))

  it.effect("a literal beneficiary_id that is no UUID (hyphenated hex, 8-4-4-4-12) does not compile (tsc)", () =>
    Effect.gen(function*() {
      const service = yield* FeeService.FeeService
      const refused: ReadonlyArray<Effect.Effect<FeeService.FeeQuote, FinError, FeeService.FeeService>> = [
        // @ts-expect-error not a UUID at all
        FeeService.calculate({ destination_amount: 10, beneficiary_id: "beneficiary-1" }),
        // @ts-expect-error without its hyphens, through the service itself
        service.calculate({ destination_amount: 10, beneficiary_id: "0000000000004000800000000000000a" }),
        // @ts-expect-error a digit short in its last run
        FeeService.calculate({ destination_amount: 10, beneficiary_id: "00000000-0000-4000-8000-00000000000" }),
        // @ts-expect-error a letter past f
        FeeService.calculate({ destination_amount: 10, beneficiary_id: "00000000-0000-4000-8000-00000000000g" }),
        // @ts-expect-error a sixth run
        FeeService.calculate({ destination_amount: 10, beneficiary_id: "00000000-0000-4000-8000-000000000000-1" }),
        // @ts-expect-error beside a destination currency too
        FeeService.calculate({ destination_amount: 1, destination_currency: "CAD", beneficiary_id: "x" })
      ]
      for (const call of refused) expect((yield* Effect.flip(call))._tag).toBe("RequestValidationError")
      // Upper-case hex is a UUID too (as the schema has it); a string or a caller's own type parameter is left to the
      // run-time check.
      const typed: string = "beneficiary-1"
      const generic = <S extends string>(id: S) => FeeService.calculate({ destination_amount: 10, beneficiary_id: id })
      const upperCase = "ABCDEF00-0000-4000-8000-00000000000A"
      const upper = FeeService.calculate({ destination_amount: 10, beneficiary_id: upperCase })
      for (const call of [upper, generic(UUID)]) {
        const tag = Either.getLeft(yield* Effect.either(call)).pipe(Option.map((e) => e._tag))
        expect(tag).not.toEqual(Option.some("RequestValidationError"))
      }
      const byString = FeeService.calculate({ destination_amount: 10, beneficiary_id: typed })
      expect((yield* Effect.flip(byString))._tag).toBe("RequestValidationError")
    }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 } }))))

  it.effect("a request built from optional values (absent fields given as undefined) compiles and is sent without them", () =>
    Effect.gen(function*() {
      const beneficiary: string | undefined = undefined
      yield* FeeService.calculate({
        source_currency: "USD",
        source_amount: 3508679,
        destination_amount: undefined,
        destination_currency: "CAD",
        beneficiary_id: beneficiary
      })
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.filter((r) => r.path === "/v1/fee-calculation").map((r) => r.body)).toEqual([
        { source_currency: "USD", source_amount: 3508679, destination_currency: "CAD" }
      ])
    }).pipe(provideClient({ "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody) })))

  it.effect("accepts a beneficiary request without currencies", () =>
    Effect.gen(function*() {
      yield* FeeService.calculate({ destination_amount: 508679, beneficiary_id: UUID })
      const [request] = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests).pipe(
        Effect.map((all) => all.filter((r) => r.path === "/v1/fee-calculation"))
      )
      expect(request?.body).toEqual({ destination_amount: 508679, beneficiary_id: UUID })
    }).pipe(provideClient({ "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody) })))

  // Keys the service adds to an answer (at any level) are ignored, not a ResponseDecodeError.
  it.effect("decodes the documented current example, and one with keys the schema does not know", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 2; i++) {
        const quote = yield* FeeService.calculate({
          source_currency: "USD",
          source_amount: 3508679,
          destination_currency: "CAD"
        })
        expect(quote.source_amount).toBe(3508679)
        expect(quote.destination_amount).toBe(508679)
        expect(quote.fee).toEqual(new FeeService.Fee({ fixed: 25, percentage: 4, total: 29, is_fee_applied: true }))
        expect(Option.map(quote.valid_till, DateTime.formatIso)).toEqual(Option.some("2026-01-19T09:59:29.000Z"))
      }
    }).pipe(provideClient({
      "POST /v1/fee-calculation": FinTest.sequence(
        FinTest.json(200, quoteBody),
        FinTest.json(200, {
          ...quoteBody,
          meta: { version: 2 },
          data: { ...quoteBody.data, quote_id: "q-1", fee: { ...quoteBody.data.fee, currency: "USD" } }
        })
      )
    })))

  it.effect("decodes the older example without valid_till", () =>
    Effect.gen(function*() {
      const quote = yield* FeeService.calculate({ source_currency: "USD", source_amount: 350, destination_currency: "AUD" })
      expect(quote.exchange_rate).toBe(145)
      expect(Option.isNone(quote.valid_till)).toBe(true)
    }).pipe(provideClient({ "POST /v1/fee-calculation": () => FinTest.json(200, olderQuoteBody) })))

  describe("FeeQuote helpers", () => {
    const quote = Schema.decodeUnknownSync(FeeService.FeeCalculationResponse)(quoteBody).data
    const older = Schema.decodeUnknownSync(FeeService.FeeCalculationResponse)(olderQuoteBody).data
    const at = (iso: string) => DateTime.unsafeMake(iso)
    it("isValidAt", () => {
      expect(FeeService.FeeQuote.isValidAt(quote, at("2026-01-19T09:59:28Z"))).toBe(true)
      expect(FeeService.FeeQuote.isValidAt(quote, at("2026-01-19T09:59:29Z"))).toBe(false)
      expect(FeeService.FeeQuote.isValidAt(older, at("2020-01-01T00:00:00Z"))).toBe(false)
    })
    it("timeLeft", () => {
      expect(FeeService.FeeQuote.timeLeft(quote, at("2026-01-19T09:58:29Z"))).toEqual(Option.some(Duration.minutes(1)))
      expect(FeeService.FeeQuote.timeLeft(quote, at("2026-01-20T00:00:00Z"))).toEqual(Option.some(Duration.zero))
      expect(Option.isNone(FeeService.FeeQuote.timeLeft(older, at("2026-01-20T00:00:00Z")))).toBe(true)
    })
    it.effect("isValid and remaining, at the Clock's now (a TestClock here)", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(DateTime.toEpochMillis(at("2026-01-19T09:58:29Z")))
        expect(yield* FeeService.FeeQuote.isValid(quote)).toBe(true)
        expect(yield* FeeService.FeeQuote.remaining(quote)).toEqual(Option.some(Duration.minutes(1)))
        yield* TestClock.adjust("1 minute")
        expect(yield* FeeService.FeeQuote.isValid(quote)).toBe(false)
        expect(yield* FeeService.FeeQuote.remaining(quote)).toEqual(Option.some(Duration.zero))
        expect(yield* FeeService.FeeQuote.isValid(older)).toBe(false)
        expect(yield* FeeService.FeeQuote.remaining(older)).toEqual(Option.none())
      }))
  })

  describe("FinTest.layerFeeService", () => {
    const layer = FinTest.layerFeeService({
      rates: { "USD/CAD": 1.25 },
      fee: { fixed: 1, percentage: 2 },
      quoteLifetime: "10 minutes",
      beneficiaries: { [UUID]: { currency: "CAD", developerFee: { fixed: 1, percentage: 0 } } }
    })
    it.effect("computes deterministic quotes both ways", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 0, 1))
        const send = yield* FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
        expect(send.fee.total).toBe(3)
        expect(send.destination_amount).toBe(121.25)
        expect(Option.map(send.valid_till, DateTime.formatIso)).toEqual(Option.some("2026-01-01T00:10:00.000Z"))
        const receive = yield* FeeService.calculate({ source_currency: "USD", destination_amount: 121.25, destination_currency: "CAD" })
        expect(receive.source_amount).toBe(100)
        const inverse = yield* FeeService.calculate({ source_currency: "CAD", source_amount: 125, destination_currency: "USD" })
        expect(inverse.exchange_rate).toBe(0.8)
        const developer = yield* FeeService.calculate({ source_currency: "USD", source_amount: 100, beneficiary_id: UUID })
        expect(developer.fee.total).toBe(4)
        // The beneficiary's account's currency, whatever the request names (no USD/EUR rate is even needed).
        const named = yield* FeeService.calculate({
          source_currency: "USD",
          source_amount: 100,
          destination_currency: "EUR",
          beneficiary_id: UUID
        })
        expect([named.destination_currency, named.destination_amount]).toEqual(["CAD", developer.destination_amount])
      }).pipe(Effect.provide(layer)))
    // As effect-fin's client says them: the status, the route, the service's words, its field errors.
    it.effect("its refusals say what the client's would: a 404 for an unknown beneficiary, a 422 naming the field", () =>
      Effect.gen(function*() {
        const unknown = yield* Effect.flip(
          FeeService.calculate({ source_amount: 100, beneficiary_id: "00000000-0000-4000-8000-000000000000" })
        )
        expect(unknown.message).toBe("The service answered 404 on POST /v1/fee-calculation: Resource not found")
        const eaten = yield* Effect.flip(
          FeeService.calculate({ source_currency: "USD", source_amount: 1, destination_currency: "CAD" })
        )
        expect(eaten.message).toBe(
          "The service answered 422 on POST /v1/fee-calculation: Validation failed (source_amount: The fees take the " +
            "whole amount, or what is left of it is less than a cent: it delivers nothing.)"
        )
      }).pipe(Effect.provide(layer)))
    // Defaults as the emulator's: quotes hold 15 minutes; a beneficiary-only quote is from USD. Ids in any case.
    it.effect("defaults: a 15-minute quote lifetime, USD as the source currency; a beneficiary's id in any case", () =>
      Effect.gen(function*() {
        const quote = yield* FeeService.calculate({ source_amount: 100, beneficiary_id: UUID })
        expect([quote.source_currency, Option.map(quote.valid_till, DateTime.toEpochMillis)]).toEqual(["USD", Option.some(900_000)])
        const upper = yield* FeeService.calculate({ source_amount: 100, beneficiary_id: UUID.toUpperCase() })
        expect(upper.destination_currency).toBe("CAD")
      }).pipe(Effect.provide(FinTest.layerFeeService({
        rates: { "USD/CAD": 1.25 },
        beneficiaries: { [UUID.toUpperCase()]: { currency: "CAD" } }
      }))))
    // A beneficiary-only quote is from the source currency the options name; a pair listed both ways is read as listed.
    it.effect("defaultSourceCurrency is the source of a quote naming none; a listed pair wins over its inverse", () =>
      Effect.gen(function*() {
        const quote = yield* FeeService.calculate({ source_amount: 100, beneficiary_id: UUID })
        expect([quote.source_currency, quote.exchange_rate, quote.destination_amount]).toEqual(["EUR", 1.5, 150])
        const send = (from: string, to: string) =>
          FeeService.calculate({ source_currency: from, source_amount: 100, destination_currency: to })
        const there = yield* send("USD", "CAD")
        const back = yield* send("CAD", "USD")
        expect([there.exchange_rate, back.exchange_rate]).toEqual([1.25, 0.5])
      }).pipe(Effect.provide(FinTest.layerFeeService({
        rates: { "EUR/CAD": 1.5, "USD/CAD": 1.25, "CAD/USD": 0.5 },
        defaultSourceCurrency: "EUR",
        beneficiaries: { [UUID]: { currency: "CAD" } }
      }))))
    it.effect("a receive quote's source, sent, delivers at least the amount asked (rounded up to the cent, no further)", () =>
      Effect.gen(function*() {
        for (const wanted of [100, 99.99, 0.01, 1234.56, 7, 333.33]) {
          const receive = yield* FeeService.calculate({ source_currency: "USD", destination_amount: wanted, destination_currency: "CAD" })
          expect(receive.destination_amount).toBe(wanted)
          const send = yield* FeeService.calculate({ source_currency: "USD", source_amount: receive.source_amount, destination_currency: "CAD" })
          expect(send.destination_amount, String(wanted)).toBeGreaterThanOrEqual(wanted)
          const centLess = Math.round(receive.source_amount * 100 - 1) / 100
          if (centLess > 0) {
            // A cent less delivers less, or nothing at all (the fees take it all: a 422).
            const short = yield* Effect.either(
              FeeService.calculate({ source_currency: "USD", source_amount: centLess, destination_currency: "CAD" })
            )
            if (Either.isRight(short)) expect(short.right.destination_amount, String(wanted)).toBeLessThan(wanted)
            else expect(short.left._tag === "ApiError" && short.left.status, String(wanted)).toBe(422)
          }
        }
      }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1.45 }, fee: { fixed: 1, percentage: 1 } }))))
    it.effect("a receive quote ends for any amount and rate: huge amounts, tiny rates; one whose amounts a number cannot hold to the cent is a 422", () =>
      Effect.gen(function*() {
        const receive = (to: string, wanted: number) =>
          FeeService.calculate({ source_currency: "USD", destination_amount: wanted, destination_currency: to }).pipe(
            Effect.map((quote) => [quote.destination_amount === wanted, quote.source_amount > 0]),
            Effect.catchTag("ApiError", (e) => Effect.succeed([e.status, e.fieldErrors?.map((f) => f.field)]))
          )
        const tooLarge = [422, ["destination_amount"]]
        expect(yield* receive("CAD", 100)).toEqual([true, true])
        expect(yield* receive("CAD", 7e13)).toEqual([true, true])
        // No fee at rate 1: the source is the largest amount a number holds to the cent, and still quoted.
        expect(yield* receive("CAD", 2 ** 46 - 0.01)).toEqual([true, true])
        // Past it, a number does not hold every cent: the quoted source could deliver a cent less than asked.
        expect(yield* receive("CAD", 2 ** 46)).toEqual(tooLarge)
        expect(yield* receive("CAD", 9e13)).toEqual(tooLarge)
        expect(yield* receive("XYZ", 100)).toEqual([true, true])
        // Its source amount, 2e22, passes what a number holds to the cent.
        expect(yield* receive("XYZ", 2e13)).toEqual(tooLarge)
        // Past what the client sends, as the emulator may be asked over plain HTTP.
        const settings = { rates: { "USD/XYZ": 1e-9 }, fee: { fixed: 0, percentage: 1 }, beneficiaries: {}, defaultSourceCurrency: "USD" }
        for (const wanted of [1e16, 1e300]) {
          const quoted = Quote.quote(settings, { source_currency: "USD", destination_currency: "XYZ", destination_amount: wanted })
          expect(Either.mapLeft(quoted, (problem) => problem._tag === "Unprocessable" && problem.field)).toEqual(
            Either.left("destination_amount")
          )
        }
      }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1, "USD/XYZ": 1e-9 } }))))
    it.effect("quotes are in cents: either amount is rounded to the cent first; an amount under a cent, or one that delivers nothing, is refused", () =>
      Effect.gen(function*() {
        const send = (source_amount: number, beneficiary_id?: string) =>
          FeeService.calculate(
            beneficiary_id === undefined
              ? { source_currency: "USD", source_amount, destination_currency: "CAD" }
              : { source_currency: "USD", source_amount, beneficiary_id }
          )
        const rounded = yield* send(100.006)
        expect([rounded.source_amount, rounded.fee.total, rounded.destination_amount]).toEqual([100.01, 3, 121.26])
        const refused = (effect: Effect.Effect<FeeService.FeeQuote, FinError, FeeService.FeeService>) =>
          Effect.map(Effect.flip(effect), (e) => e._tag === "ApiError" ? [e.status, e.fieldErrors?.map((f) => f.field)] : e._tag)
        expect(yield* refused(send(0.004))).toEqual([422, ["source_amount"]])
        // The fixed fee of 1 and 2% of 1.02 take all of it.
        expect(yield* refused(send(1.02))).toEqual([422, ["source_amount"]])
        expect((yield* send(1.03)).destination_amount).toBe(0.01)
        expect(yield* refused(FeeService.calculate({ source_currency: "USD", destination_amount: 0.004, destination_currency: "CAD" })))
          .toEqual([422, ["destination_amount"]])
        // What the fees leave, at a rate of 0.001, is less than a cent of the destination currency.
        expect(yield* refused(FeeService.calculate({ source_currency: "USD", source_amount: 1.5, destination_currency: "XYZ" })))
          .toEqual([422, ["source_amount"]])
        // A wanted amount is in cents too: 0.005 is quoted as 0.01, and the source sent delivers that.
        const half = yield* FeeService.calculate({ source_currency: "USD", destination_amount: 0.005, destination_currency: "CAD" })
        expect(half.destination_amount).toBe(0.01)
        expect((yield* send(half.source_amount)).destination_amount).toBeGreaterThanOrEqual(0.01)
        // 2% of the client's fee and the beneficiary's 98% take the whole amount, whichever amount is given.
        expect(yield* refused(send(100, GREEDY))).toEqual([422, ["source_amount"]])
        expect(yield* refused(FeeService.calculate({ source_currency: "USD", destination_amount: 10, beneficiary_id: GREEDY })))
          .toEqual([422, ["destination_amount"]])
      }).pipe(Effect.provide(FinTest.layerFeeService({
        rates: { "USD/CAD": 1.25, "USD/XYZ": 0.001 },
        fee: { fixed: 1, percentage: 2 },
        beneficiaries: { [GREEDY]: { currency: "CAD", developerFee: { fixed: 0, percentage: 98 } } }
      }))))
    it.effect("half a cent rounds up, as the amounts are written: not as the nearest double happens to fall", () =>
      Effect.gen(function*() {
        const send = (source_amount: number) =>
          FeeService.calculate({ source_currency: "USD", source_amount, destination_currency: "CAD" })
        // 1.005, 10.075 and 0.145 lie just under their decimal value as doubles (x 100 is 100.4999...).
        expect((yield* send(1.005)).source_amount).toBe(1.01)
        expect((yield* send(10.075)).source_amount).toBe(10.08)
        expect((yield* send(0.145)).source_amount).toBe(0.15)
        expect((yield* send(1.0049)).source_amount).toBe(1)
        // A fee of 1.5% of 67 is 1.005: 1.01, leaving 65.99.
        const quote = yield* send(67)
        expect([quote.fee.total, quote.destination_amount]).toEqual([1.01, 65.99])
      }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1 }, fee: { fixed: 0, percentage: 1.5 } }))))

    it.effect("figures are computed exactly: a product just under half a cent rounds down, however many digits it has", () =>
      Effect.gen(function*() {
        // 401098.91 x 1.23456789 is 495183.8349999999...: read to fifteen digits it would pass for .835, and round up.
        const precise = yield* FeeService.calculate({ source_currency: "USD", source_amount: 401098.91, destination_currency: "EUR" })
        expect(precise.destination_amount).toBe(495183.83)
        // Asked for .84, the source found is the cent that delivers it.
        const receive = yield* FeeService.calculate({ source_currency: "USD", destination_amount: 495183.84, destination_currency: "EUR" })
        expect(receive.source_amount).toBe(401098.92)
      }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/EUR": 1.23456789 } }))))

    it.effect("the client's fee and a beneficiary's are added in decimal: 0.003 + 0.022 is 0.025, half a cent up", () =>
      Effect.gen(function*() {
        const quote = yield* FeeService.calculate({ source_currency: "USD", source_amount: 10, beneficiary_id: UUID })
        expect([quote.fee.fixed, quote.fee.percentage, quote.fee.total, quote.destination_amount]).toEqual([
          0.025,
          0.8,
          0.11,
          9.89
        ])
      }).pipe(Effect.provide(FinTest.layerFeeService({
        rates: { "USD/CAD": 1 },
        fee: { fixed: 0.003, percentage: 0.7 },
        beneficiaries: { [UUID]: { currency: "CAD", developerFee: { fixed: 0.022, percentage: 0.1 } } }
      }))))

    it.effect("a receive quote past what a number holds to the cent is a 422, not a source a cent short", () =>
      Effect.gen(function*() {
        // Its source would be 70379422454120.95, past 2^46: sent back, it would deliver .23.
        const error = yield* Effect.flip(
          FeeService.calculate({ source_currency: "USD", destination_amount: 62391358005578.24, destination_currency: "CAD" })
        )
        expect(error._tag === "ApiError" && [error.status, error.fieldErrors?.map((f) => f.field)]).toEqual([422, ["destination_amount"]])
      }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 0.9 }, fee: { fixed: 0, percentage: 1.5 } }))))

    it.effect("at a small rate, the source quoted for an amount is the smallest that delivers it", () =>
      Effect.gen(function*() {
        // A cent of yen moves a dollar's amount by 0.0067 cents: about 150 sources deliver the same 100 USD.
        const receive = yield* FeeService.calculate({ source_currency: "JPY", destination_amount: 100, destination_currency: "USD" })
        const send = (source_amount: number) =>
          Effect.map(
            FeeService.calculate({ source_currency: "JPY", source_amount, destination_currency: "USD" }),
            (q) => q.destination_amount
          )
        expect(yield* send(receive.source_amount)).toBeGreaterThanOrEqual(100)
        expect(yield* send(Math.round(receive.source_amount * 100 - 1) / 100)).toBeLessThan(100)
        expect(receive.source_amount).toBe(14924.63)
      }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "JPY/USD": 0.0067 } }))))
    const refusedWith = (request: FeeService.FeeCalculationRequest) =>
      Effect.map(
        Effect.flip(FeeService.calculate(request)),
        (e) => e._tag === "ApiError" ? [e.status, e.fieldErrors?.map((f) => [f.field, f.message])] : e._tag
      )
    it.effect("fees that add up to exactly 100 % are refused as taking the whole amount, whichever amount is given", () =>
      Effect.gen(function*() {
        const whole = "The fees take the whole amount: no amount delivers anything."
        expect(yield* refusedWith({ source_currency: "USD", source_amount: 100, beneficiary_id: UUID }))
          .toEqual([422, [["source_amount", whole]]])
        expect(yield* refusedWith({ source_currency: "USD", destination_amount: 10, beneficiary_id: UUID }))
          .toEqual([422, [["destination_amount", whole]]])
      }).pipe(Effect.provide(FinTest.layerFeeService({
        rates: { "USD/CAD": 1 },
        fee: { fixed: 0, percentage: 60 },
        beneficiaries: { [UUID]: { currency: "CAD", developerFee: { fixed: 0, percentage: 40 } } }
      }))))
    it.effect("a currency to itself is quoted at rate 1, with no rate listed for it", () =>
      Effect.gen(function*() {
        const quote = yield* FeeService.calculate({ source_amount: 100, beneficiary_id: UUID })
        expect([quote.source_currency, quote.destination_currency, quote.exchange_rate, quote.destination_amount])
          .toEqual(["USD", "USD", 1, 100])
        const receive = yield* FeeService.calculate({ source_currency: "CAD", destination_amount: 50, destination_currency: "CAD" })
        expect([receive.exchange_rate, receive.source_amount]).toEqual([1, 50])
      }).pipe(Effect.provide(FinTest.layerFeeService({
        rates: { "USD/CAD": 1.25 },
        beneficiaries: { [UUID]: { currency: "USD" } }
      }))))
    it.effect("extreme rates: one a number cannot hold exactly, an inverse too small to invert, one too small to deliver anything", () =>
      Effect.gen(function*() {
        // A rate past MAX_SAFE_INTEGER is refused, even when every amount is small.
        expect(yield* refusedWith({ source_currency: "USD", destination_amount: 0.01, destination_currency: "BIG" }))
          .toEqual([422, [["destination_amount", expect.stringContaining("past which a number does not hold every cent")]]])
        // 1 / 1e-310 is Infinity: no rate for that pair at all.
        expect(yield* refusedWith({ source_currency: "USD", source_amount: 100, destination_currency: "INV" }))
          .toEqual([422, [["destination_currency", "No rate for USD/INV."]]])
        // At 1e-320 no source a number holds delivers even a cent: the search goes past MAX_AMOUNT, and it is refused.
        expect(yield* refusedWith({ source_currency: "USD", destination_amount: 0.01, destination_currency: "TNY" }))
          .toEqual([422, [["destination_amount", expect.stringContaining("past which a number does not hold every cent")]]])
      }).pipe(Effect.provide(FinTest.layerFeeService({
        rates: { "USD/BIG": 1e16, "INV/USD": 1e-310, "USD/TNY": 1e-320 }
      }))))
    it.effect("a receive quote for a cent that one cent delivers is one cent, though the estimate starts above it", () =>
      Effect.gen(function*() {
        // 10 % of a cent rounds to no fee: one cent sent delivers one cent.
        const receive = yield* FeeService.calculate({ source_currency: "USD", destination_amount: 0.01, destination_currency: "CAD" })
        expect([receive.source_amount, receive.fee.total, receive.destination_amount]).toEqual([0.01, 0, 0.01])
      }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1 }, fee: { fixed: 0, percentage: 10 } }))))
    it.effect("validates like the real service and fails on unknown pairs", () =>
      Effect.gen(function*() {
        // @ts-expect-error a literal currency code in lower case does not compile; it is refused at run time too
        const bad = yield* Effect.flip(FeeService.calculate({ source_currency: "usd", source_amount: 1, destination_currency: "CAD" }))
        expect(bad._tag).toBe("RequestValidationError")
        const pair = yield* Effect.flip(FeeService.calculate({ source_currency: "USD", source_amount: 1, destination_currency: "JPY" }))
        expect(pair._tag === "ApiError" && pair.status).toBe(422)
        // Per-call overrides the real client refuses are refused too.
        for (const options of [{ maxRetries: -1 }, { deadline: "0 seconds" }, { timeout: Duration.infinity }] as const) {
          const override = yield* Effect.flip(
            FeeService.calculate({ source_currency: "USD", source_amount: 1, destination_currency: "CAD" }).pipe(
              HttpTransport.withOptions(options)
            )
          )
          expect(override._tag === "RequestValidationError" && override.issues.map((i) => i.path))
            .toEqual([Object.keys(options)[0]])
        }
        // Both wrong: the request is told first, as the real client (which validates it before the transport) does.
        const negative: number = -1 // a literal -1 does not compile
        const both = yield* Effect.flip(
          FeeService.calculate({ source_currency: "USD", source_amount: negative, destination_currency: "CAD" }).pipe(
            HttpTransport.withOptions({ maxRetries: -1 })
          )
        )
        expect(both._tag === "RequestValidationError" && both.issues.map((i) => i.path)).toEqual(["source_amount"])
      }).pipe(Effect.provide(layer)))
  })
})

describe("FeeService schemas with effect's schema tools", () => {
  // As an HttpApi payload, or in the user's own decode with the default options: a misspelt key is refused there too,
  // never dropped (a quote without the beneficiary meant).
  it("the request schema refuses a key it does not have, whatever options it is decoded with", () => {
    const request = { source_currency: "USD", source_amount: 5, destination_currency: "EUR" }
    const misspelt = { ...request, benficiary_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f" }
    for (const options of [undefined, { onExcessProperty: "ignore" } as const]) {
      const decoded = Schema.decodeUnknownEither(FeeService.FeeCalculationRequestSchema)(misspelt, options)
      expect(Either.isLeft(decoded) && decoded.left.message).toContain("benficiary_id")
      expect(Schema.decodeUnknownEither(FeeService.FeeCalculationRequestSchema)(request, options)).toEqual(
        Either.right(request)
      )
    }
    const is = Schema.is(FeeService.FeeCalculationRequestSchema)
    expect([is(misspelt), is(request)]).toEqual([false, true])
    // JSON Schema (and so OpenAPI) gives the amounts' bounds and the endpoint's rules in words.
    expect(JSONSchema.make(FeeService.FeeCalculationRequestSchema)).toMatchObject({
      properties: { source_amount: { exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER } },
      description: expect.stringMatching(/^exactly one of source_amount and destination_amount; /)
    })
  })

  // A DateTime's Arbitrary spans some 270,000 years; valid_till is written only for the years 0000 to 9999.
  // Its currencies too: a quote holding "usd" (decoding never gives one) would encode as "usd" and come back as "USD".
  it("every FeeCalculationResponse an Arbitrary makes encodes, and its encoding decodes to the same quote", () => {
    const currencies = (quote: FeeService.FeeQuote) => [quote.source_currency, quote.destination_currency]
    for (const [response, again] of roundTrips(FeeService.FeeCalculationResponse)) {
      expect(Option.map(again.data.valid_till, DateTime.toEpochMillis))
        .toEqual(Option.map(response.data.valid_till, DateTime.toEpochMillis))
      expect(currencies(again.data)).toEqual(currencies(response.data))
    }
    const decoded = Schema.decodeUnknownSync(FeeService.FeeQuote)(quoteBody.data)
    const built = (source_currency: string) =>
      Either.isRight(Either.try(() => new FeeService.FeeQuote({ ...decoded, source_currency })))
    expect(["USD", "USDC.e", "usd", "Usd"].map(built)).toEqual([true, true, false, false])
  })
})
