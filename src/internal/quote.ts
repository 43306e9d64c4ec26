/**
 * Deterministic quotes from a rate table: used by `FinTest.layerFeeService` and by the emulator, so both compute
 * the same figures.
 *
 * @internal
 */

import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

/** A currency code of three upper-case letters. */
export const CurrencyCode = Schema.String.pipe(
  Schema.pattern(/^[A-Z]{3}$/, { message: () => "a currency code of three upper-case letters" })
)

const FiniteNonNegative = Schema.Number.pipe(
  Schema.filter((n) => Number.isFinite(n) && n >= 0, { message: () => "a finite number >= 0" })
)

/**
 * A fee: a fixed part plus a percentage (4 = 4 %) of the source amount, below 100 % (a fee taking the whole amount
 * leaves nothing to deliver).
 */
export const FeeRule = Schema.Struct({
  fixed: FiniteNonNegative,
  percentage: FiniteNonNegative.pipe(Schema.filter((n) => n < 100, { message: () => "a percentage below 100" }))
})

/** @see FeeRule */
export interface FeeRule {
  readonly fixed: number
  readonly percentage: number
}

/** Rates keyed `"USD/CAD"`, each finite and above zero. */
export const Rates = Schema.Record({
  key: Schema.String.pipe(Schema.pattern(/^[A-Z]{3}\/[A-Z]{3}$/, { message: () => "a pair like USD/CAD" })),
  value: Schema.Number.pipe(Schema.filter((n) => Number.isFinite(n) && n > 0, { message: () => "a finite rate > 0" }))
})

/** A known beneficiary: its payout currency (the destination when a request names none) and developer fee. */
export const Beneficiary = Schema.Struct({
  currency: CurrencyCode,
  /** Added to the base fee. */
  developerFee: Schema.optional(FeeRule)
})

/** What quotes are made from; beneficiary ids in lower case. */
export interface QuoteSettings {
  readonly rates: Readonly<Record<string, number>>
  readonly fee: FeeRule
  readonly beneficiaries: Readonly<
    Record<string, { readonly currency: string; readonly developerFee?: FeeRule | undefined }>
  >
  readonly defaultSourceCurrency: string
}

/** A validated fee request, as `FeeService.validate` leaves it. */
export interface QuoteRequest {
  readonly source_currency?: string | undefined
  readonly destination_currency?: string | undefined
  readonly source_amount?: number | undefined
  readonly destination_amount?: number | undefined
  readonly beneficiary_id?: string | undefined
}

/** Why no quote can be made: the service answers 404 for the first, 422 (with field errors) for the others. */
export type QuoteProblem =
  | { readonly _tag: "UnknownBeneficiary" }
  | { readonly _tag: "Unprocessable"; readonly message: string; readonly field: string; readonly detail: string }

/**
 * The quote the service would give `request` under `settings`: the beneficiary (matched without regard to case, as
 * UUIDs are) supplies the destination and adds its developer fee; the source defaults to `defaultSourceCurrency`.
 */
export const quote = (settings: QuoteSettings, request: QuoteRequest): Either.Either<QuoteFigures, QuoteProblem> => {
  const beneficiary = request.beneficiary_id === undefined
    ? undefined
    : settings.beneficiaries[request.beneficiary_id.toLowerCase()]
  if (request.beneficiary_id !== undefined && beneficiary === undefined) {
    return Either.left({ _tag: "UnknownBeneficiary" })
  }
  const source = request.source_currency ?? settings.defaultSourceCurrency
  const destination = request.destination_currency ?? beneficiary!.currency
  const rate = rateOf(settings.rates, source, destination)
  if (rate === undefined) {
    return Either.left({
      _tag: "Unprocessable",
      message: `Unsupported currency pair ${source}/${destination}`,
      field: "destination_currency",
      detail: `No rate for ${source}/${destination}.`
    })
  }
  const field = request.source_amount !== undefined ? "source_amount" : "destination_amount"
  const developer = beneficiary?.developerFee ?? { fixed: 0, percentage: 0 }
  const fee = { fixed: settings.fee.fixed + developer.fixed, percentage: settings.fee.percentage + developer.percentage }
  const invalid = (detail: string) => Either.left<QuoteProblem>({ _tag: "Unprocessable", message: "Validation failed", field, detail })
  // Either way round: a quote whose fee is more than what is sent would be no quote at all.
  if (fee.percentage >= 100) return invalid("The fees take the whole amount: no amount delivers anything.")
  // Quotes are in cents: an amount rounds to the cent before anything is computed from it.
  const amount = round2(request.source_amount ?? request.destination_amount!)
  if (amount === 0) return invalid(`The ${field} is less than one cent.`)
  if (field === "source_amount" && deliver(amount, rate, fee) === 0) {
    return invalid("The fees take the whole amount, or what is left of it is less than a cent: it delivers nothing.")
  }
  const figures = compute({ source_currency: source, destination_currency: destination, [field]: amount }, rate, fee)
  // The client refuses a figure a number cannot hold exactly (past MAX_SAFE_INTEGER), so no quote holds one.
  const { source_amount, exchange_rate, destination_amount, fee: { total } } = figures
  return [source_amount, exchange_rate, destination_amount, total].every((n) => n <= Number.MAX_SAFE_INTEGER)
    ? Either.right(figures)
    : invalid(`The quote's figures pass ${Number.MAX_SAFE_INTEGER}, past which a number is not exact.`)
}

/** What a quote is computed from: either amount, in cents. */
export interface QuoteInput {
  readonly source_currency: string
  readonly destination_currency: string
  readonly source_amount?: number | undefined
  readonly destination_amount?: number | undefined
}

/** The fields of a quote other than `valid_till`. */
export interface QuoteFigures {
  readonly source_currency: string
  readonly destination_currency: string
  readonly source_amount: number
  readonly exchange_rate: number
  readonly destination_amount: number
  readonly fee: { readonly fixed: number; readonly percentage: number; readonly total: number; readonly is_fee_applied: boolean }
}

// Half a cent rounds up as the amount is written in decimal: 1.005 is 1.01, though the double nearest it lies just
// under (x 100 gives 100.4999..., which `Math.round` alone takes down). Fifteen significant digits are what a double
// holds exactly in decimal, so the product read to fifteen is the amount the figures stand for; a larger product is
// taken as it is (reading it to fifteen would change its last digits, and a cent is at a double's precision there).
const round2 = (n: number): number => {
  const cents = n * 100
  return Math.round(Math.abs(cents) < 1e15 ? Number(cents.toPrecision(15)) : cents) / 100
}

/**
 * The rate of `from` -> `to` from a table keyed `"USD/CAD"`, using the inverse pair when only that is listed and 1
 * for a currency to itself.
 */
export const rateOf = (rates: Readonly<Record<string, number>>, from: string, to: string): number | undefined => {
  if (from === to) return 1
  const direct = rates[`${from}/${to}`]
  if (direct !== undefined) return direct
  const inverse = rates[`${to}/${from}`]
  return inverse === undefined || inverse === 0 ? undefined : 1 / inverse
}

const MAX_CENT_STEPS = 8

const feeOn = (source: number, fee: FeeRule): number => round2(fee.fixed + source * fee.percentage / 100)

// What sending `source` delivers: destination = (source - fee) x rate, to the cent.
const deliver = (source: number, rate: number, fee: FeeRule): number =>
  round2(Math.max(0, source - feeOn(source, fee)) * rate)

/**
 * The fee is taken from the source amount: destination = (source - fee) x rate, to the cent. Given the destination,
 * the source is the smallest amount in cents that delivers at least that much, so sending the quoted source never
 * delivers less than asked (rounding the solved source to the nearest cent could leave it a cent short).
 */
export const compute = (input: QuoteInput, rate: number, fee: FeeRule): QuoteFigures => {
  let source: number
  if (input.source_amount !== undefined) {
    source = input.source_amount
  } else {
    const wanted = input.destination_amount!
    const exact = (wanted / rate + fee.fixed) / (1 - fee.percentage / 100)
    // Up to the cent, then a few cents either way for the rounding of the fee and of the result (bounded: at huge
    // amounts a cent is below a double's precision, and at tiny rates many cents deliver the same).
    let cents = Math.ceil(Math.round(exact * 1e6) / 1e4)
    for (let step = 0; step < MAX_CENT_STEPS && deliver(cents / 100, rate, fee) < wanted; step++) cents += 1
    for (let step = 0; step < MAX_CENT_STEPS && cents > 1 && deliver((cents - 1) / 100, rate, fee) >= wanted; step++) {
      cents -= 1
    }
    source = cents / 100
  }
  const total = feeOn(source, fee)
  return {
    source_currency: input.source_currency,
    destination_currency: input.destination_currency,
    source_amount: source,
    exchange_rate: rate,
    destination_amount: input.destination_amount ?? deliver(source, rate, fee),
    fee: { fixed: fee.fixed, percentage: fee.percentage, total, is_fee_applied: total > 0 }
  }
}
