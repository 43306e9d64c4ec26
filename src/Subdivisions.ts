/**
 * Offline ISO 3166-2 subdivisions: synchronous lookups over the committed snapshot (Debian iso-codes 4.20, all 249
 * countries of the interface, 49 of them without subdivisions).
 *
 * No network, no file system: the snapshot is bundled as one JSON string per country, each parsed on its country's
 * first lookup. An unknown
 * country is a `RequestValidationError` (the same one `CountryCode.validate` gives), never `undefined`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as CountryCode from "./CountryCode.js"
import type { RequestValidationError } from "./FinError.js"
import * as internal from "./internal/subdivisions.js"
import { subdivisionsData } from "./internal/subdivisionsData.js"

/**
 * Schema of an ISO 3166-2 code: two capital letters, a hyphen, one to three capital letters or digits (`"US-CA"`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SubdivisionCode: typeof internal.SubdivisionCode = internal.SubdivisionCode

/**
 * A subdivision as both sources know it: `code` and `name` always; `type` and `parent` (the parent's full code, e.g.
 * `"AZ-NX"`) when the source has them. The API returns only `code` and `name`; the snapshot always has `type`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Subdivision: typeof internal.Subdivision = internal.Subdivision

/**
 * @since 0.1.0
 * @category models
 */
export interface Subdivision extends Schema.Schema.Type<typeof internal.Subdivision> {}

/**
 * An entry of the offline snapshot: a `Subdivision` whose `type` is always present (e.g. `"State"`, `"Province"`)
 * and whose codes are checked. What every lookup of this module returns.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SnapshotSubdivision: typeof internal.SnapshotSubdivision = internal.SnapshotSubdivision

/**
 * @since 0.1.0
 * @category models
 */
export interface SnapshotSubdivision extends Schema.Schema.Type<typeof internal.SnapshotSubdivision> {}

// ---------------------------------------------------------------------------------------------------------------
// Loading: each country is parsed on its first lookup (the module itself holds only strings), then every lookup is
// one or two map reads.
// ---------------------------------------------------------------------------------------------------------------

interface Country {
  readonly entries: ReadonlyArray<SnapshotSubdivision>
  // Built once: `forCountry` then allocates nothing.
  readonly right: Either.Either<ReadonlyArray<SnapshotSubdivision>>
  readonly byCode: ReadonlyMap<string, SnapshotSubdivision>
  // Normalised names, built on the country's first search.
  searchable?: ReadonlyArray<Searchable>
}

interface Searchable {
  readonly entry: SnapshotSubdivision
  readonly name: string
  readonly code: string
  readonly suffix: string
}

const loaded = new Map<string, Country>()

// `country` must be one of the 249 codes (all are keys of the data).
const loadCountry = (country: string): Country => {
  // The data was validated when generated (and again by the tests); a cast, not a decode, keeps the load fast.
  const entries = JSON.parse(subdivisionsData[country]!) as Array<SnapshotSubdivision>
  const byCode = new Map<string, SnapshotSubdivision>()
  // Frozen: the same arrays and objects are handed to every caller.
  for (const entry of entries) byCode.set(entry.code, Object.freeze(entry))
  const result: Country = { entries: Object.freeze(entries), right: Either.right(entries), byCode }
  loaded.set(country, result)
  return result
}

const countryOf = (country: string): Country | undefined =>
  loaded.get(country) ?? (CountryCode.isCountryCode(country) ? loadCountry(country) : undefined)

let alpha2ToAlpha3: ReadonlyMap<string, string> | undefined

// "US-CA" -> the loaded "USA"; undefined when the prefix is no country of the interface.
const countryOfCode = (code: string): Country | undefined => {
  if (code.length < 4 || code.charCodeAt(2) !== 45 /* - */) return undefined
  alpha2ToAlpha3 ??= new Map(CountryCode.alpha3Codes.map((alpha3) => [CountryCode.toAlpha2(alpha3), alpha3]))
  const alpha3 = alpha2ToAlpha3.get(code.slice(0, 2))
  return alpha3 === undefined ? undefined : countryOf(alpha3)
}

let without: ReadonlyArray<CountryCode.CountryCode> | undefined

// The exact error `CountryCode.validate` fails with, so offline and online lookups reject input alike.
const invalidCountry = (input: unknown): Either.Either<never, RequestValidationError> =>
  Either.left(Effect.runSync(Effect.flip(CountryCode.validate(input))))

const trueRight = Either.right(true)
const falseRight = Either.right(false)

// ---------------------------------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------------------------------

/**
 * The subdivisions of a country (alpha-3, e.g. `"USA"`), sorted by code; an empty array for the 49 countries that
 * have none. Fails with `RequestValidationError` when `country` is not one of the 249 codes (alpha-2 codes, lower
 * case and anything else included).
 *
 * @since 0.1.0
 * @category lookups
 */
export const forCountry = (
  country: string
): Either.Either<ReadonlyArray<SnapshotSubdivision>, RequestValidationError> =>
  countryOf(country)?.right ?? invalidCountry(country)

/**
 * The subdivision with this full code (`"US-CA"`), exactly as written (ISO codes are upper case); `None` if the
 * snapshot has no such code.
 *
 * @since 0.1.0
 * @category lookups
 */
export const byCode = (code: string): Option.Option<SnapshotSubdivision> => {
  const found = countryOfCode(code)?.byCode.get(code)
  return found === undefined ? Option.none() : Option.some(found)
}

/**
 * Whether `code` is a subdivision of `country` (`isValid("USA", "US-CA")` is `Right(true)`, `isValid("CAN",
 * "US-CA")` is `Right(false)`). Fails with `RequestValidationError` when `country` is unknown.
 *
 * @since 0.1.0
 * @category lookups
 */
export const isValid = (country: string, code: string): Either.Either<boolean, RequestValidationError> => {
  const found = countryOf(country)
  if (found === undefined) return invalidCountry(country)
  return found.byCode.has(code) ? trueRight : falseRight
}

/**
 * The countries (alpha-3, sorted) that have no subdivisions in ISO 3166-2: 49 of the 249. That is data, not an error.
 *
 * @since 0.1.0
 * @category lookups
 */
export const countriesWithout = (): ReadonlyArray<CountryCode.CountryCode> =>
  (without ??= Object.freeze(
    CountryCode.alpha3Codes.filter((country) => subdivisionsData[country] === "[]").sort()
  ))

// ---------------------------------------------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------------------------------------------

const searchableOf = (country: Country): ReadonlyArray<Searchable> =>
  (country.searchable ??= country.entries.map((entry) => ({
      entry,
      name: internal.normalize(entry.name),
      code: internal.normalize(entry.code),
      suffix: internal.normalize(entry.code.slice(entry.code.indexOf("-") + 1))
    })))

// 0 exact (name, full code or code suffix), 1 prefix, 2 word prefix, 3 substring; -1 no match.
const rankOf = (item: Searchable, query: string): number => {
  if (item.name === query || item.code === query || item.suffix === query) return 0
  const at = item.name.indexOf(query)
  if (at === 0) return 1
  if (at < 0) return -1
  return item.name.includes(` ${query}`) ? 2 : 3
}

/**
 * Subdivisions of `country` whose name contains `text`, ignoring case, diacritics and punctuation (`"sao paulo"`
 * finds `BR-SP` São Paulo, `"new y"` finds `US-NY`); a query equal to the code (`"US-NY"`, `"ny"`) counts as exact.
 * Ranked: exact, then names starting with the text, then names with a word starting with it, then any other
 * substring; ties by name, then code. A blank `text` matches nothing. At most `limit` results (default: all).
 * Fails with `RequestValidationError` when `country` is unknown.
 *
 * @since 0.1.0
 * @category lookups
 */
export const search = (
  country: string,
  text: string,
  options?: { readonly limit?: number | undefined }
): Either.Either<ReadonlyArray<SnapshotSubdivision>, RequestValidationError> => {
  const found = countryOf(country)
  if (found === undefined) return invalidCountry(country)
  const query = internal.normalize(text)
  if (query === "") return Either.right([])
  const hits: Array<{ readonly item: Searchable; readonly rank: number }> = []
  for (const item of searchableOf(found)) {
    const rank = rankOf(item, query)
    if (rank >= 0) hits.push({ item, rank })
  }
  hits.sort((a, b) =>
    a.rank - b.rank ||
    (a.item.name < b.item.name ? -1 : a.item.name > b.item.name ? 1 : 0) ||
    (a.item.entry.code < b.item.entry.code ? -1 : 1)
  )
  const limit = options?.limit
  const taken = limit === undefined ? hits : hits.slice(0, Math.max(0, limit))
  return Either.right(taken.map((hit) => hit.item.entry))
}
