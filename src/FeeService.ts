/**
 * `POST /v1/fee-calculation`: the exchange rate and fees of a transfer, checked before anything is sent.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Issue, RequestValidationError } from "./FinError.js"
import * as Amounts from "./internal/amount.js"
import type { FinError } from "./FinError.js"
import * as HttpTransport from "./HttpTransport.js"
import * as Issues from "./internal/issues.js"
import type { BadAmount, BadCurrency, BadUuid } from "./internal/literal.js"
import * as Timestamps from "./internal/timestamp.js"

/**
 * An ISO 4217-shaped currency code: three upper-case letters.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CurrencyCode = Schema.String.pipe(
  Schema.pattern(/^[A-Z]{3}$/, { message: () => "a currency code of three upper-case letters" })
).annotations({ title: "a currency code of three upper-case letters" })

const AMOUNT = Amounts.EXPECTED

const PRECISION = "a number that stands for one amount at its decimal places (100000000000000.01 is read as " +
  "100000000000000.02, 123456789.12345677 as 123456789.12345678)"

const DECIMALS =
  `an amount with at most ${Amounts.MAX_DECIMALS} decimal places (round a computed amount first: 0.1 + 0.2 is 0.30000000000000004)`

/**
 * An amount: a number greater than zero and at most `Number.MAX_SAFE_INTEGER` (past it, a number no longer tells
 * neighbouring whole amounts apart: 9007199254740993 is read as 9007199254740992), with at most 8 decimal places. The
 * places are counted on the number as it would be sent, so a float sum's artefact (`0.1 + 0.2` is
 * 0.30000000000000004) is refused rather than sent, below 10^7 always when it is one operation's (above, one can fall
 * within 8 places, and so can a long running total's drift: `0.01` added 258,481 times is 2584.81000001): round a
 * computed amount first. Past 2^26 (67,108,864) a number no longer holds every amount of 8 places either, and past
 * 2^46 (about 7 * 10^13) not every cent: a number that, as it would be sent, stands for more than one amount at its
 * decimal places (one next to it reads as the same number) is refused rather than sent for the one it shows
 * (`123456789.12345677` is read as 123456789.12345678, `100000000000000.01` as 100000000000000.02). Only the number
 * is seen, not what was written: an amount written with more places than its number keeps (`681372753.20793099` is
 * the number 681372753.207931, `1000000000000000.01` is 1e15) passes as that number; round an amount to its currency's
 * places before it becomes a number. Units are not documented, so amounts within these bounds pass through untouched.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Amount = Schema.Number.annotations({ title: AMOUNT }).pipe(
  // One check saying what it expects (an issue's text); the schema as a whole is "a number ..." (for a value that is
  // none).
  Schema.filter((n) =>
    !(n > 0 && n <= Number.MAX_SAFE_INTEGER)
      ? AMOUNT
      : Amounts.decimalPlaces(n) > Amounts.MAX_DECIMALS
      ? DECIMALS
      : !Amounts.heldAtPlaces(n)
      ? PRECISION
      : true
  , {
    // What JSON Schema and OpenAPI can say of the check (the decimal places, only in words).
    jsonSchema: {
      exclusiveMinimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: `at most ${Amounts.MAX_DECIMALS} decimal places`
    }
  })
).annotations({ title: AMOUNT })

/**
 * A beneficiary id: a UUID.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryId = Schema.UUID.annotations({ title: "a UUID" })

const RequestFields = Schema.Struct({
  source_currency: Schema.optional(CurrencyCode),
  source_amount: Schema.optional(Amount),
  destination_amount: Schema.optional(Amount),
  destination_currency: Schema.optional(CurrencyCode),
  beneficiary_id: Schema.optional(BeneficiaryId)
}).annotations({
  title: "a fee calculation request object",
  // A misspelt key is refused wherever the schema decodes (an HttpApi payload, the user's own decode), not only in
  // `calculate`: dropped, it would send a quote without the field the caller meant.
  parseOptions: { onExcessProperty: "error" }
})

// The endpoint's rules: which fields are given, whatever their values (see `validate`, which checks them also when a
// field's value is refused).
const ruleIssues = (r: { readonly [K in keyof typeof RequestFields.Type]?: unknown }): Array<Schema.FilterIssue> => {
  const issues: Array<Schema.FilterIssue> = []
  const hasSource = r.source_amount !== undefined
  if (hasSource === (r.destination_amount !== undefined)) {
    issues.push({
      path: [hasSource ? "destination_amount" : "source_amount"],
      message: "exactly one of source_amount and destination_amount"
    })
  }
  if (r.destination_currency === undefined && r.beneficiary_id === undefined) {
    issues.push({ path: ["destination_currency"], message: "destination_currency or beneficiary_id" })
  }
  if (r.source_currency === undefined && r.beneficiary_id === undefined) {
    issues.push({ path: ["source_currency"], message: "source_currency (required unless beneficiary_id is given)" })
  }
  return issues
}

/**
 * Schema of a fee-calculation request, with the rules of the endpoint: exactly one of `source_amount` /
 * `destination_amount`; `destination_currency` or `beneficiary_id` (or both); `source_currency` unless
 * `beneficiary_id` is given.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FeeCalculationRequestSchema: Schema.Schema<FeeCalculationRequest, typeof RequestFields.Encoded> =
  RequestFields.pipe(
    // The rules in words for JSON Schema and OpenAPI readers: no keyword of the fields says them.
    Schema.filter(ruleIssues, {
      jsonSchema: {
        description: "exactly one of source_amount and destination_amount; destination_currency or " +
          "beneficiary_id; source_currency unless beneficiary_id is given"
      }
    }),
    // The filter checks at run time exactly what `FeeCalculationRequest` states, so what it lets through is one (a
    // filter that reports several issues at once cannot be a type guard).
    (schema) => schema as unknown as Schema.Schema<FeeCalculationRequest, typeof RequestFields.Encoded>
  )

// Absent fields may also be given as `undefined` (a request built from optional values), as the schema allows.
type Amounts =
  | { readonly source_amount: number; readonly destination_amount?: undefined }
  | { readonly destination_amount: number; readonly source_amount?: undefined }

type Target =
  | {
    readonly destination_currency: string
    readonly beneficiary_id?: string | undefined
    readonly source_currency: string
  }
  | {
    readonly beneficiary_id: string
    readonly destination_currency?: string | undefined
    readonly source_currency?: string | undefined
  }

/**
 * A fee-calculation request. The type already rules out both amounts or neither, and a request with neither a
 * destination currency nor a beneficiary; the schema checks the rest at run time. Keys other than these five are
 * refused at run time (`expected no such key`), also when TypeScript let them through (an object passed by name
 * rather than written out): a misspelt field must not be silently dropped from a payment request.
 *
 * @since 0.1.0
 * @category models
 */
export type FeeCalculationRequest = Amounts & Target

/**
 * The type of `calculate`'s argument: a `FeeCalculationRequest` whose currency codes, when written as literals, are
 * three upper-case letters, whose amounts, when written as literals, are above 0, with at most 8 decimal places
 * and below 10^16 (a larger one is past `Number.MAX_SAFE_INTEGER`), and whose `beneficiary_id`, when written as a
 * literal, is a UUID (hyphenated hex, in either case).
 * `calculate({ source_currency: "usd", ... })` or `calculate({ source_amount: -5, ... })` does not compile, the
 * message naming the field, where it would only fail when run; a `string`, a branded string, a `number` or a checked
 * request passes as before. A function of yours that passes a request on keeps these checks when typed as `calculate`
 * is, `<const R extends FeeCalculationRequest>(request: CheckedRequest<R>)`; typed `(request: FeeCalculationRequest)`,
 * it accepts any literal, left to the run-time check.
 *
 * @since 0.1.0
 * @category models
 */
export type CheckedRequest<R extends FeeCalculationRequest> = [Complaint<R>] extends [never] ? FeeCalculationRequest
  : R & Complaint<R>

// What is wrong with the literals of `R`, field by field (never when nothing is).
type Complaint<R> =
  | `${BadCurrencyField<R>}: expected a currency code of three upper-case letters, e.g. "USD"`
  | `${BadAmountField<R>}: expected an amount above 0, at most Number.MAX_SAFE_INTEGER, with at most 8 decimal places`
  | `${BadBeneficiaryField<R>}: expected a UUID, e.g. "00000000-0000-4000-8000-000000000000"`

// A good request is checked against `FeeCalculationRequest` itself, not `R` (inferred from the object, extra keys
// included), so that a misspelt or extra field stays an excess-property error. Each member of a union on its own: a
// request chosen between two literals is checked as both.
type BadCurrencyField<R> = R extends unknown ? BadField<R, "source_currency"> | BadField<R, "destination_currency">
  : never

type BadAmountField<R> = R extends unknown ? AmountField<R, "source_amount"> | AmountField<R, "destination_amount">
  : never

// A field's type read through `[S] extends [infer T]`, as `CountryCode.Checked` does: a caller's own type parameter
// (`<C extends string>(c: C) => calculate({ source_currency: c, ... })`, `<N extends number>`) is then accepted, where
// a check of `S` itself is left unresolved and refuses it.
type BadField<R, K extends string> = R extends { readonly [_ in K]?: infer S }
  ? [S] extends [infer T] ? true extends BadCurrency<T> ? K : never : never
  : never

type BadBeneficiaryField<R> = R extends { readonly beneficiary_id?: infer S }
  ? [S] extends [infer T] ? true extends BadUuid<T> ? "beneficiary_id" : never : never
  : never

type AmountField<R, K extends string> = R extends { readonly [_ in K]?: infer N }
  ? [N] extends [infer M] ? true extends BadAmount<M> ? K : never : never
  : never

// A figure in an answer past MAX_SAFE_INTEGER is not what the service sent (JSON.parse rounds it, and reads 1e400 as
// Infinity), so it is refused rather than quoted. Fees are not documented as never negative, so only their size counts.
const QUOTED = `a number from 0 to ${Number.MAX_SAFE_INTEGER}`
const Quoted = Schema.Number.pipe(
  Schema.filter((n) => n >= 0 && n <= Number.MAX_SAFE_INTEGER, { message: () => QUOTED })
).annotations({ title: QUOTED })

// No conversion is at a rate of zero: such a quote delivers nothing, whatever its amounts say.
const RATE = `a number above 0, up to ${Number.MAX_SAFE_INTEGER}`
const Rate = Schema.Number.pipe(
  Schema.filter((n) => n > 0 && n <= Number.MAX_SAFE_INTEGER, { message: () => RATE })
).annotations({ title: RATE })

const FEE = `a number from -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`
const FeeFigure = Schema.Number.pipe(
  Schema.filter((n) => Math.abs(n) <= Number.MAX_SAFE_INTEGER, { message: () => FEE })
).annotations({ title: FEE })

// A currency as the service names it: a code, never empty or blank (with a beneficiary nothing else checks the
// currencies, and a quote in none is no quote). It may be no ISO code (an asset's ticker: USDC, USDC.e): ASCII letters
// and digits, then also `.`, `_` or `-`, up to 32. Three letters are upper-cased ("usd" is USD, so a quote's currency
// compares equal to a request's); anything else is kept as sent.
const QuotedCurrency = Schema.transform(Schema.String, Schema.String, {
  strict: true,
  decode: (code) => /^[a-z]{3}$/i.test(code) ? code.toUpperCase() : code,
  encode: (code) => code
}).pipe(
  // Three letters only in upper case, as decoding gives them: a quote built (or drawn by an Arbitrary) with "usd"
  // would otherwise encode as "usd" and decode back as another quote ("USD").
  Schema.filter((code) => /^[A-Za-z0-9][\w.-]{0,31}$/.test(code) && !/^(?![A-Z]{3}$)[A-Za-z]{3}$/.test(code), {
    message: () => "a currency code"
  })
).annotations({ title: "a currency code" })

/**
 * The fee breakdown of a quote. Each figure is within `Number.MAX_SAFE_INTEGER` of zero, so it is the one the service
 * sent.
 *
 * @since 0.1.0
 * @category schemas
 */
export class Fee extends Schema.Class<Fee>("effect-fin.Fee")({
  /** The fixed part of the fee, as sent (its unit and currency are not documented). */
  fixed: FeeFigure,
  /** The percentage part of the fee, as sent (whether 4 means 4 % is not documented). */
  percentage: FeeFigure,
  /** The whole fee, as sent (its unit and currency are not documented). */
  total: FeeFigure,
  /** Whether a fee is applied to this transfer. */
  is_fee_applied: Schema.Boolean
}) {}

// ISO 8601 as documented (a zone-less time is UTC, as the field is documented to be), and the token routes' format too;
// not whatever `Date.parse` guesses ("1" is not the year 2001).
const ValidTill = Schema.transformOrFail(Schema.String, Timestamps.Utc, {
  strict: true,
  decode: (text, _, ast) => {
    const millis = Timestamps.toMillis(text)
    return millis === undefined
      ? ParseResult.fail(new ParseResult.Type(ast, text, "an ISO 8601 date-time"))
      : ParseResult.succeed(DateTime.unsafeMake(millis))
  },
  encode: (dateTime, _, ast) => Timestamps.encode(dateTime, ast)
}).annotations({ title: "an ISO 8601 date-time" })

/**
 * A quote from the service. `valid_till` is `None` for the older response shape that lacks it (or holds `null`). The
 * amounts are from 0 to `Number.MAX_SAFE_INTEGER`, the rate above 0 up to it; past it a number is no longer the one
 * sent.
 *
 * @since 0.1.0
 * @category schemas
 */
export class FeeQuote extends Schema.Class<FeeQuote>("effect-fin.FeeQuote")({
  /**
   * The currency of the amount sent: three letters upper-cased (`usd` reads as `USD`), any other code (an asset's
   * ticker, `USDC.e`) kept as sent.
   */
  source_currency: QuotedCurrency,
  /** The currency of the amount received (with a beneficiary, its payout currency), read as `source_currency` is. */
  destination_currency: QuotedCurrency,
  /** In the source currency: the amount asked for (perhaps rounded), or what delivering the amount asked for costs. */
  source_amount: Quoted,
  /** The rate the service applied between the two currencies (its direction is not documented). */
  exchange_rate: Rate,
  /** In the destination currency: what the source amount asked for delivers, or (rounding aside) the amount asked. */
  destination_amount: Quoted,
  /**
   * Until when the quote holds, in UTC (a time sent without a zone is read as UTC); `None` when the answer had none
   * or `null` (the older shape): such a quote is never taken as valid (`isValidAt`).
   */
  valid_till: Schema.optionalWith(ValidTill, { as: "Option", exact: true, nullable: true }),
  /** The fee breakdown. */
  fee: Fee
}) {
  /**
   * Whether the quote still holds at `now`. A quote without `valid_till` is never assumed valid.
   *
   * @since 0.1.0
   */
  static isValidAt(quote: FeeQuote, now: DateTime.DateTime): boolean {
    return Option.match(quote.valid_till, {
      onNone: () => false,
      onSome: (till) => DateTime.lessThan(now, till)
    })
  }

  /**
   * How long the quote still holds at `now` (zero once expired); `None` when the service gave no `valid_till`.
   *
   * @since 0.1.0
   */
  static timeLeft(quote: FeeQuote, now: DateTime.DateTime): Option.Option<Duration.Duration> {
    return Option.map(quote.valid_till, (till) =>
      Duration.millis(Math.max(0, DateTime.toEpochMillis(till) - DateTime.toEpochMillis(now))))
  }

  /**
   * `isValidAt` the `Clock`'s now (so under a `TestClock` too).
   *
   * @since 0.1.0
   */
  static isValid(quote: FeeQuote): Effect.Effect<boolean> {
    return Effect.map(DateTime.now, (now) => FeeQuote.isValidAt(quote, now))
  }

  /**
   * `timeLeft` at the `Clock`'s now (so under a `TestClock` too).
   *
   * @since 0.1.0
   */
  static remaining(quote: FeeQuote): Effect.Effect<Option.Option<Duration.Duration>> {
    return Effect.map(DateTime.now, (now) => FeeQuote.timeLeft(quote, now))
  }
}

/**
 * The response envelope: `{ "data": FeeQuote }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FeeCalculationResponse = Schema.Struct({ data: FeeQuote })

/**
 * The fee service: quotes for a transfer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * `POST /v1/fee-calculation`. The request is checked first (exactly one of the amounts, currency codes, a UUID,
   * at most 8 decimal places): a bad one fails as `RequestValidationError` and nothing is sent. A quote changes
   * nothing on the service, so it is retried under the client's policy; the answer must be the quote asked for
   * (the currencies, the destination's unless a beneficiary sets it, and the amount given), else
   * `ResponseDecodeError`.
   */
  readonly calculate: <const R extends FeeCalculationRequest>(
    request: CheckedRequest<R>
  ) => Effect.Effect<FeeQuote, FinError>
}

/**
 * The fee service, provided by `layer` (or `FinClient.layer`); `FinTest.layerFeeService` for tests.
 *
 * @since 0.1.0
 * @category tags
 */
export class FeeService extends Context.Tag("effect-fin/FeeService")<FeeService, Service>() {}

// Options given when the decoder is made, not at each call: options passed at a call are merged into a new object
// every time, which roughly doubles the cost of checking a request (5.5 µs against 2.5 µs).
const validateRequest = Schema.decodeUnknownEither(FeeCalculationRequestSchema, {
  errors: "all",
  onExcessProperty: "error"
})
const validateFields = Schema.decodeUnknownEither(RequestFields, { onExcessProperty: "error" })

// A field whose value is refused stops the schema before its rules run: they are checked on the input then, so that
// one error names everything to mend. Not when every field decoded (the schema's filter told them already).
// They are told of the fields as the schema reads them: an object's own keys (not inherited ones), and none of an input
// that is no object at all (an array: "expected a fee calculation request object" says it all).
const rulesBroken = (input: unknown): ReadonlyArray<Issue> => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return []
  if (Either.isRight(validateFields(input))) return []
  // Every own key, as the schema reads them (`hasOwnProperty`, a non-enumerable one included), not only what `{...}`
  // copies.
  const own = Object.fromEntries(
    Object.getOwnPropertyNames(input).map((key) => [key, (input as Record<string, unknown>)[key]])
  )
  return ruleIssues(own).map((rule) => new Issue({ path: String(rule.path[0]), expected: rule.message }))
}

const fieldNames: ReadonlySet<PropertyKey> = new Set(Object.keys(RequestFields.fields))

// The schema builds an issue per unknown key, a second of blocked event loop for a body of a hundred thousand passed
// on as it came: past the first MAX_ISSUES (all an error tells) they are only counted, and the request is refused all
// the same.
const withFewUnknownKeys = (input: unknown): { readonly input: unknown; readonly uncounted: number } => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return { input, uncounted: 0 }
  const keys = Reflect.ownKeys(input)
  if (keys.length <= fieldNames.size + Issues.MAX_ISSUES) return { input, uncounted: 0 }
  const kept = {}
  const read = input as Record<PropertyKey, unknown>
  let unknown = 0
  for (const key of keys) {
    // Every key is read, as the schema reads it: a getter that throws is a defect past the 20th unknown key too.
    const value = read[key]
    if (!fieldNames.has(key) && unknown++ >= Issues.MAX_ISSUES) continue
    // Defined, not assigned: an own `__proto__` key (JSON.parse makes them) stays a key.
    Object.defineProperty(kept, key, { value, enumerable: true })
  }
  return { input: kept, uncounted: Math.max(0, unknown - Issues.MAX_ISSUES) }
}

/**
 * Checks a request (as a user's untyped input may be) without sending it; what it returns can be passed to
 * `calculate` as is. A request that cannot be read at all (a getter of the program's that throws, a revoked Proxy)
 * is a defect, the program's own code having failed, as in `calculate`; what it holds is never one.
 *
 * @since 0.1.0
 * @category validation
 */
export const validate = (input: unknown): Effect.Effect<FeeCalculationRequest, RequestValidationError> => {
  let decoded: ReturnType<typeof validateRequest>
  let broken: ReadonlyArray<Issue> = []
  let uncounted = 0
  try {
    const checked = withFewUnknownKeys(input)
    uncounted = checked.uncounted
    decoded = validateRequest(checked.input)
    if (Either.isLeft(decoded)) broken = rulesBroken(checked.input)
  } catch (defect) {
    // A request that cannot be read (a getter that throws, a revoked Proxy): a defect of the effect, not thrown here.
    return Effect.die(defect)
  }
  return Either.match(decoded, {
    onLeft: (error) => {
      const { issues, summary } = Issues.told([...Issues.fromParseIssue(error.issue), ...broken], uncounted)
      return Effect.fail(new RequestValidationError({ message: `Invalid fee calculation request: ${summary}`, issues }))
    },
    onRight: Effect.succeed
  })
}

// A quote in other currencies than those asked for, or for another amount (a mixed-up answer, a cache in between), is
// not this request's. With a beneficiary, the destination currency is its account's, the service's to pick. The amount
// asked for comes back as asked (as in the documented send example), or rounded, either way, to fewer places (its
// currency's unit): less than one unit of the answer's last place off (0.5 may come back as 1, never as 1.49, nor as 0:
// nothing to send). A destination worked back from a source so rounded is off by less than one unit of the source's
// last place at the rate, half a unit more for the fee taken from it (rounded to the same place: at 83.12 with a fee of
// 1 + 1 %, 100.39 asks a source of 2.24, its fee 1.0224 is 1.02, and 1.22 delivers 101.41), plus its own rounding.
const asked = (request: FeeCalculationRequest) => (response: typeof FeeCalculationResponse.Type): ReadonlyArray<Issue> => {
  const issues: Array<Issue> = []
  const { data } = response
  if (request.source_currency !== undefined && data.source_currency !== request.source_currency) {
    issues.push(new Issue({ path: "data.source_currency", expected: `${request.source_currency}, the currency asked for` }))
  }
  const destination = request.beneficiary_id === undefined ? request.destination_currency : undefined
  if (destination !== undefined && data.destination_currency !== destination) {
    issues.push(new Issue({ path: "data.destination_currency", expected: `${destination}, the currency asked for` }))
  }
  // Rounded down to nothing (0.99 answered 0), an amount asked to send is no longer one the request could ask for.
  if (request.source_amount !== undefined && data.source_amount === 0) {
    issues.push(new Issue({ path: "data.source_amount", expected: "an amount above 0, the amount asked to send" }))
  } else if (request.source_amount !== undefined && !Amounts.roundsTo(request.source_amount, data.source_amount)) {
    issues.push(
      new Issue({
        path: "data.source_amount",
        expected: `${request.source_amount}, the amount asked for (or it rounded to fewer decimal places)`
      })
    )
  }
  if (request.destination_amount !== undefined) {
    // What is delivered is paid for: a receive quote asking nothing of the source is no answer (0 is only right for a
    // send quote's destination, the fees taking it all). Nor is one delivering nothing: the slack below (a whole unit
    // of the answer's last place, 1 for a 0, and more at a large rate) would let 0 pass for a small amount asked.
    if (data.source_amount === 0) {
      issues.push(new Issue({ path: "data.source_amount", expected: "an amount above 0 for the amount asked to deliver" }))
    }
    if (data.destination_amount === 0) {
      issues.push(
        new Issue({ path: "data.destination_amount", expected: "an amount above 0, the amount asked to deliver" })
      )
    } else {
      const slack = Number(
        (1.5 * data.exchange_rate * lastPlace(data.source_amount) + lastPlace(data.destination_amount)).toPrecision(12)
      )
      if (!(Math.abs(data.destination_amount - request.destination_amount) < slack)) {
        issues.push(
          new Issue({
            path: "data.destination_amount",
            expected: `${request.destination_amount}, the amount asked for (less than ${slack} off)`
          })
        )
      }
    }
  }
  return issues
}

// One unit of `n`'s last decimal place, once `trimmed` (a float artefact's places do not count).
const lastPlace = (n: number): number => 10 ** -Amounts.decimalPlaces(Amounts.trimmed(n))

/**
 * Builds the service on the transport in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service, never, HttpTransport.HttpTransport> = Effect.map(
  HttpTransport.HttpTransport,
  (transport) =>
    FeeService.of({
      calculate: (request) =>
        validate(request).pipe(
          Effect.flatMap((body) =>
            transport.request({
              method: "POST",
              path: "/v1/fee-calculation",
              body,
              response: FeeCalculationResponse,
              check: asked(body),
              // A quote changes nothing on the service, so sending it twice is harmless.
              safe: true,
              name: "fee-calculation"
            })
          ),
          Effect.map((response) => response.data)
        )
    })
)

/**
 * The fee service on a client's `HttpTransport`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<FeeService, never, HttpTransport.HttpTransport> = Layer.effect(FeeService, make)

/**
 * Calculates a quote with the `FeeService` in context: checked before it is sent, retried under the client's policy,
 * its answer checked against what was asked (see `Service.calculate`).
 *
 * @since 0.1.0
 * @category accessors
 */
export const calculate = <const R extends FeeCalculationRequest>(
  request: CheckedRequest<R>
): Effect.Effect<FeeQuote, FinError, FeeService> =>
  Effect.flatMap(FeeService, (service) => service.calculate(request))
