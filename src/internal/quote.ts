/**
 * Deterministic quotes from a rate table: used by `FinTest.layerFeeService` and by the emulator, so both compute
 * the same figures.
 *
 * @internal
 */

import * as BigDecimal from "effect/BigDecimal"
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
  /** The fixed part, in units of the source currency. */
  readonly fixed: number
  /** The part taken from the source amount, in percent (4 = 4 %); below 100. */
  readonly percentage: number
}

/** Rates keyed `"USD/CAD"`, each finite and above zero. */
export const Rates = Schema.Record({
  key: Schema.String.pipe(Schema.pattern(/^[A-Z]{3}\/[A-Z]{3}$/, { message: () => "a pair like USD/CAD" })),
  value: Schema.Number.pipe(Schema.filter((n) => Number.isFinite(n) && n > 0, { message: () => "a finite rate > 0" }))
})

/** A known beneficiary: its payout currency (the destination of its quotes, whatever the request names) and developer fee. */
export const Beneficiary = Schema.Struct({
  currency: CurrencyCode,
  /** Added to the base fee. */
  developerFee: Schema.optional(FeeRule)
})

/**
 * Known beneficiaries by id: a UUID (a request names no other), each once: ids are matched without regard to case, so
 * two that differ only in it would be one, the other's settings lost.
 */
export const Beneficiaries = Schema.Record({ key: Schema.UUID, value: Beneficiary }).pipe(
  Schema.filter((beneficiaries) => {
    const seen = new Set<string>()
    for (const id of Object.keys(beneficiaries)) {
      const key = id.toLowerCase()
      if (seen.has(key)) return `one id given twice, in other letter case: ${id}`
      seen.add(key)
    }
    return true
  })
)

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
  // With a beneficiary, its account's currency, whatever the request names (the service's docs: the beneficiary
  // model holds it), as the client's check of a quote takes it.
  const destination = beneficiary?.currency ?? request.destination_currency!
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
  const fee = { fixed: sum(settings.fee.fixed, developer.fixed), percentage: sum(settings.fee.percentage, developer.percentage) }
  const invalid = (detail: string) => Either.left<QuoteProblem>({ _tag: "Unprocessable", message: "Validation failed", field, detail })
  // Either way round: a quote whose fee is more than what is sent would be no quote at all.
  if (fee.percentage >= 100) return invalid("The fees take the whole amount: no amount delivers anything.")
  // Quotes are in cents: an amount rounds to the cent before anything is computed from it.
  const cents = centsOf(request.source_amount ?? request.destination_amount!)
  if (cents === 0n) return invalid(`The ${field} is less than one cent.`)
  if (field === "source_amount" && deliver(cents, rate, fee) === 0n) {
    return invalid("The fees take the whole amount, or what is left of it is less than a cent: it delivers nothing.")
  }
  const figures = compute(
    { source_currency: source, destination_currency: destination, [field]: amountOf(cents) },
    rate,
    fee
  )
  // Amounts a number holds to the cent (MAX_AMOUNT), a rate one holds at all (the client refuses figures past
  // MAX_SAFE_INTEGER): past them, the figure quoted would not be the one computed.
  const { source_amount, exchange_rate, destination_amount, fee: { total } } = figures
  return [source_amount, destination_amount, total].every((n) => n <= MAX_AMOUNT) &&
      exchange_rate <= Number.MAX_SAFE_INTEGER
    ? Either.right(figures)
    : invalid(`The quote's amounts pass ${MAX_AMOUNT}, past which a number does not hold every cent.`)
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

/**
 * The rate of `from` -> `to` from a table keyed `"USD/CAD"`, using the inverse pair when only that is listed and 1
 * for a currency to itself.
 */
const rateOf = (rates: Readonly<Record<string, number>>, from: string, to: string): number | undefined => {
  if (from === to) return 1
  const direct = rates[`${from}/${to}`]
  if (direct !== undefined) return direct
  const inverse = rates[`${to}/${from}`]
  // The inverse of a rate too small to invert (1e-310) is no rate.
  return inverse === undefined || !Number.isFinite(1 / inverse) ? undefined : 1 / inverse
}

// Quotes are computed in exact decimal (`BigDecimal`, from the figures as written: 1.005 is 1.005, not the double just
// under it), so half a cent rounds up wherever the figures put it, and no float error moves an amount by a cent.
const decimal = BigDecimal.unsafeFromNumber

const percentOf = (a: BigDecimal.BigDecimal, percentage: number): BigDecimal.BigDecimal => {
  const product = BigDecimal.multiply(a, decimal(percentage))
  return BigDecimal.make(product.value, product.scale + 2)
}

// To whole cents, half a cent up (away from zero).
const toCents = (d: BigDecimal.BigDecimal): bigint =>
  BigDecimal.scale(BigDecimal.round(d, { scale: 2, mode: "half-from-zero" }), 2).value

const ofCents = (cents: bigint): BigDecimal.BigDecimal => BigDecimal.make(cents, 2)

const amountOf = (cents: bigint): number => Number(cents) / 100

/**
 * Amounts below 2^46 (70,368,744,177,664) are held to the cent: there a number's step is under a cent (at most 1/128),
 * so each amount in cents has a number of its own that reads back as it. From 2^46 the step is 1/64: neighbouring
 * cents can share one number.
 */
const MAX_AMOUNT = 2 ** 46 - 0.01
const MAX_CENTS = BigInt(2 ** 46 * 100 - 1)

// The sum of two figures in decimal, as a number (0.003 + 0.022 is 0.025, not 0.024999999999999998).
const sum = (a: number, b: number): number => BigDecimal.unsafeToNumber(BigDecimal.sum(decimal(a), decimal(b)))

const centsOf = (n: number): bigint => toCents(decimal(n))

// The fee on `source` cents: fixed + percentage of the source, to the cent.
const feeOn = (source: bigint, fee: FeeRule): bigint =>
  toCents(BigDecimal.sum(decimal(fee.fixed), percentOf(ofCents(source), fee.percentage)))

// What sending `source` cents delivers, in cents: destination = (source - fee) x rate, to the cent.
const deliver = (source: bigint, rate: number, fee: FeeRule): bigint => {
  const left = source - feeOn(source, fee)
  return left <= 0n ? 0n : toCents(BigDecimal.multiply(ofCents(left), decimal(rate)))
}

/**
 * The fee is taken from the source amount: destination = (source - fee) x rate, to the cent. Given the destination,
 * the source is the smallest amount in cents that delivers at least that much, so sending the quoted source never
 * delivers less than asked (rounding the solved source to the nearest cent could leave it a cent short).
 */
const compute = (input: QuoteInput, rate: number, fee: FeeRule): QuoteFigures => {
  let source: bigint
  if (input.source_amount !== undefined) {
    source = centsOf(input.source_amount)
  } else {
    const wanted = centsOf(input.destination_amount!)
    // What is delivered never falls as the source grows (a cent more costs at most a cent more in fees), so the
    // smallest source that delivers `wanted` is found by halving: from a bound that delivers it (doubled from the
    // estimate until it does) down to one cent above one that does not.
    const estimate = (Number(wanted) / rate + fee.fixed * 100) / (1 - fee.percentage / 100)
    let high = Number.isFinite(estimate) && estimate >= 1 ? BigInt(Math.ceil(estimate)) : 1n
    // Bounded: a source past MAX_AMOUNT is refused anyway, so none is searched for past it (however small the rate).
    let delivers = deliver(high, rate, fee) >= wanted
    while (!delivers && high <= MAX_CENTS) {
      high *= 2n
      delivers = deliver(high, rate, fee) >= wanted
    }
    let low = delivers ? 0n : high
    while (high - low > 1n) {
      const middle = (low + high) / 2n
      if (deliver(middle, rate, fee) >= wanted) high = middle
      else low = middle
    }
    source = high
  }
  const total = feeOn(source, fee)
  return {
    source_currency: input.source_currency,
    destination_currency: input.destination_currency,
    source_amount: amountOf(source),
    exchange_rate: rate,
    destination_amount: input.destination_amount ?? amountOf(deliver(source, rate, fee)),
    fee: { fixed: fee.fixed, percentage: fee.percentage, total: amountOf(total), is_fee_applied: total > 0n }
  }
}
