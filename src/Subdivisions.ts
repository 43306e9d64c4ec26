/**
 * Offline ISO 3166-2 subdivisions: synchronous lookups over the committed snapshot (Debian iso-codes 4.20, all 249
 * countries of the interface, 49 of them without subdivisions).
 *
 * No network, no file system: the snapshot is bundled as one compact JSON string per country, each parsed on its
 * country's first lookup. An unknown country is a `RequestValidationError` (the same one `CountryCode.validate`
 * gives), never `undefined`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as CountryCode from "./CountryCode.js"
import type { RequestValidationError } from "./FinError.js"
import * as Issues from "./internal/issues.js"
import type { BadSubdivisionCode } from "./internal/literal.js"
import * as OptionNames from "./internal/optionNames.js"
import * as internal from "./internal/subdivisions.js"
import { provenance as dataProvenance, subdivisionsData, types } from "./internal/subdivisionsData.js"

/**
 * Schema of an ISO 3166-2 code: two capital letters, a hyphen, one to three capital letters or digits (`"US-CA"`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SubdivisionCode: typeof internal.SubdivisionCode = internal.SubdivisionCode

/**
 * The type of a subdivision code argument (`byCode`, `isValid`): a string, checked at run time, except that a literal
 * must have the shape of an ISO 3166-2 code. `isValid("USA", "CA")` (the code without its country), `byCode("USA-CA")`
 * (an alpha-3 prefix) or `byCode("us-ca")` does not compile, where each would only answer `false` or `None` when run; a
 * `string`, a branded string or a template (`` `US-${string}` ``) passes as before.
 *
 * @since 0.1.0
 * @category models
 */
export type CheckedCode<S extends string> = [BadCode<S>] extends [never] ? S
  : S extends string ? true extends BadSubdivisionCode<S> ? "expected an ISO 3166-2 subdivision code, e.g. \"US-CA\""
    : S
  : never

// Through `infer`, as `CountryCode.Checked` does: a caller's own type parameter is then left to the run-time answer.
type BadCode<S> = [S] extends [infer T] ? true extends BadSubdivisionCode<T> ? true : never : never

/**
 * A subdivision as both sources know it: `code` and `name` always; `type` and `parent` (the parent's full code, e.g.
 * `"AZ-NX"`) when the source has them. The API returns only `code` and `name`; the snapshot always has `type`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Subdivision: typeof internal.Subdivision = internal.Subdivision

/**
 * A subdivision as both sources know it (see the `Subdivision` schema).
 *
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
 * An entry of the offline snapshot (see the `SnapshotSubdivision` schema).
 *
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
  readonly byCode: ReadonlyMap<string, SnapshotSubdivision>
  // Built on the country's first search.
  search?: SearchIndex
}

interface SearchIndex {
  readonly names: ReadonlyArray<string>
  // A name with an apostrophe, normalised with it read as a space ("cote d azur"), else undefined.
  readonly spaced: ReadonlyArray<string | undefined>
  readonly all: ReadonlyArray<number>
  readonly trigrams: ReadonlyMap<string, ReadonlyArray<number>>
  // Normalised full codes and code suffixes ("us ny", "ny") -> entry index.
  readonly codes: ReadonlyMap<string, number>
}

const loaded = new Map<string, Country>()

// Every code of the loaded countries: `byCode` is one map read. Its `Some`, like every `Either` answered here, is made
// per call: a wrapper shared by every caller could be changed by one (the entries and arrays in it are frozen).
const entryByCode = new Map<string, SnapshotSubdivision>()

const loadCountry = (country: CountryCode.CountryCode): Country => {
  // The data was validated when generated (and again by the tests): no decode here, the load stays fast. Entries and
  // arrays are frozen, as the same ones are handed to every caller.
  const entries = Object.freeze(
    internal.decodeRows(subdivisionsData[country]!, `${CountryCode.toAlpha2(country)}-`, types)
  )
  const byCode = new Map<string, SnapshotSubdivision>()
  for (const entry of entries) {
    byCode.set(entry.code, entry)
    entryByCode.set(entry.code, entry)
  }
  const result: Country = { entries, byCode }
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
export const forCountry = <C extends string>(
  country: CountryCode.Checked<C>
): Either.Either<ReadonlyArray<SnapshotSubdivision>, RequestValidationError> => {
  const found = countryOf(country)
  return found === undefined ? invalidCountry(country) : Either.right(found.entries)
}

/**
 * The subdivision with this full code (`"US-CA"`), exactly as written (ISO codes are upper case); `None` if the
 * snapshot has no such code.
 *
 * @since 0.1.0
 * @category lookups
 */
export const byCode = <S extends string>(code: CheckedCode<S>): Option.Option<SnapshotSubdivision> => {
  if (typeof code !== "string") return Option.none()
  // Not seen: its country may not be loaded yet. Loading it settles the answer.
  const entry = entryByCode.get(code) ?? (countryOfCode(code) === undefined ? undefined : entryByCode.get(code))
  return entry === undefined ? Option.none() : Option.some(entry)
}

/**
 * Whether `code` is a subdivision of `country` (`isValid("USA", "US-CA")` is `Right(true)`, `isValid("CAN",
 * "US-CA")` is `Right(false)`). Fails with `RequestValidationError` when `country` is unknown.
 *
 * @since 0.1.0
 * @category lookups
 */
export const isValid = <C extends string, S extends string>(
  country: CountryCode.Checked<C>,
  code: CheckedCode<S>
): Either.Either<boolean, RequestValidationError> => {
  const found = countryOf(country)
  if (found === undefined) return invalidCountry(country)
  return Either.right(found.byCode.has(code))
}

/**
 * Where the bundled snapshot came from, as data/subdivisions.meta.json records it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Provenance {
  /** `iso-codes` (Debian's iso-codes), or `api` for a snapshot taken from the service. */
  readonly source: string
  /** The source's version (`4.20`; for `api`, the API's path version). */
  readonly version: string
  /** SHA-256 (hex) of the data file the snapshot was made from, data/subdivisions.json. */
  readonly sha256: string
}

/**
 * Where the bundled snapshot came from (`{ source: "iso-codes", version: "4.20", sha256 }`): what to log or attach to
 * a span beside an answer whose `source` is `snapshot`, so that data from an outage can be traced to its version.
 *
 * @since 0.1.0
 * @category lookups
 */
export const provenance: Provenance = dataProvenance

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

// Normalised names, and for each three-character sequence the entries whose name holds it: a query of three or more
// characters is then checked against the few names that can match, not against every name of the country.
const searchIndexOf = (country: Country): SearchIndex => {
  if (country.search !== undefined) return country.search
  const names = country.entries.map((entry) => internal.normalize(entry.name))
  const spaced = country.entries.map((entry) => internal.normalizeApostrophesSpaced(entry.name))
  const trigrams = new Map<string, Array<number>>()
  const addTrigrams = (name: string, i: number) => {
    for (let at = 0; at + 3 <= name.length; at++) {
      const key = name.slice(at, at + 3)
      const list = trigrams.get(key)
      if (list === undefined) trigrams.set(key, [i])
      else if (list[list.length - 1] !== i) list.push(i)
    }
  }
  names.forEach((name, i) => {
    addTrigrams(name, i)
    const other = spaced[i]
    if (other !== undefined) addTrigrams(other, i)
  })
  const codes = new Map<string, number>()
  country.entries.forEach((entry, i) => {
    codes.set(internal.normalize(entry.code), i)
    codes.set(internal.normalize(entry.code.slice(entry.code.indexOf("-") + 1)), i)
  })
  return (country.search = { names, spaced, all: names.map((_, i) => i), trigrams, codes })
}

// 0 exact, 1 prefix, 2 a word starts with the query, 3 elsewhere; -1 no match.
const rankOf = (name: string, query: string): number => {
  let at = name.indexOf(query)
  if (at === 0) return name.length === query.length ? 0 : 1
  while (at > 0) {
    if (name.charCodeAt(at - 1) === 32 /* space */) return 2
    const next = name.indexOf(query, at + 1)
    if (next === -1) return 3
    at = next
  }
  return -1
}

// The better rank of entry `i`'s two forms (a name with an apostrophe has a second one).
const rankIn = (index: SearchIndex, i: number, query: string): number => {
  const rank = rankOf(index.names[i]!, query)
  const other = index.spaced[i]
  if (other === undefined) return rank
  const spacedRank = rankOf(other, query)
  return rank < 0 ? spacedRank : spacedRank < 0 ? rank : Math.min(rank, spacedRank)
}

/**
 * Subdivisions of `country` whose name contains `text`, ignoring case, diacritics, apostrophes (or reading them as a
 * space: `"cote d azur"` and `"cote-d-azur"` find FR-PAC) and full width (`"ｎｙ"` as `"ny"`), other punctuation
 * counting as a space (`"sao paulo"` finds `BR-SP` São Paulo, `"ile de france"` Île-de-France, `"new y"` `US-NY`;
 * `"n.y."` nothing); a query equal to the code (`"US-NY"`, `"ny"`) counts as exact.
 * Ranked: exact, then names starting with the text, then names with a word starting with it, then any other
 * substring; ties by name, then code. A blank `text` matches nothing. At most `limit` results (default: all; a
 * fraction rounds down). Fails with `RequestValidationError` when `country` is unknown, `text` is not a string (a
 * repeated query parameter), `limit` is negative, NaN or no number (an unset setting read as a number, say, would
 * otherwise find nothing, silently), or `options` is no object or has another key (`limt`, from untyped code).
 *
 * @since 0.1.0
 * @category lookups
 */
export const search = <C extends string>(
  country: CountryCode.Checked<C>,
  text: string,
  options?: { readonly limit?: number | undefined }
): Either.Either<ReadonlyArray<SnapshotSubdivision>, RequestValidationError> => {
  const found = countryOf(country)
  if (found === undefined) return invalidCountry(country)
  if (typeof text !== "string") {
    return Either.left(Issues.refusal("text", "Invalid search text", "the text to search for"))
  }
  // From untyped code: options that are no object, or a misspelt `limt`, would leave every result in without a word.
  if (options !== undefined) {
    const notAnObject = OptionNames.notAnObject(options)
    if (notAnObject !== undefined) {
      return Either.left(Issues.refusal("", "Invalid search options", `an object of limit, not ${notAnObject}`))
    }
    const [unknown] = OptionNames.unknown(options, { limit: true })
    if (unknown !== undefined) {
      return Either.left(Issues.refusal(unknown, `Unknown search option ${unknown}`, "limit"))
    }
  }
  const query = internal.normalize(text)
  const limit = options?.limit === undefined ? Infinity : typeof options.limit === "number" ? Math.floor(options.limit) : NaN
  if (!(limit >= 0)) {
    return Either.left(Issues.refusal("limit", "Invalid search limit", "a number of results, 0 or more"))
  }
  if (query === "" || limit === 0) return Either.right([])
  const index = searchIndexOf(found)
  const exactCode = index.codes.get(query)
  const candidates = query.length >= 3 ? index.trigrams.get(query.slice(0, 3)) ?? [] : index.all
  // Entry indexes and their ranks; an exact code match ranks 0 whatever its name.
  const hits: Array<number> = []
  const ranks: Array<number> = []
  if (exactCode !== undefined) {
    hits.push(exactCode)
    ranks.push(0)
  }
  for (const i of candidates) {
    if (i === exactCode) continue
    const rank = rankIn(index, i, query)
    if (rank >= 0) {
      hits.push(i)
      ranks.push(rank)
    }
  }
  if (hits.length === 0) return Either.right([])
  if (hits.length === 1) return Either.right([found.entries[hits[0]!]!])
  const { names } = index
  const order = hits.map((_, k) => k).sort((a, b) => {
    if (ranks[a] !== ranks[b]) return ranks[a]! - ranks[b]!
    const nameA = names[hits[a]!]!
    const nameB = names[hits[b]!]!
    return nameA < nameB ? -1 : nameA > nameB ? 1 : hits[a]! - hits[b]!
  })
  const count = Math.min(order.length, limit)
  const result: Array<SnapshotSubdivision> = new Array(count)
  for (let k = 0; k < count; k++) result[k] = found.entries[hits[order[k]!]!]!
  return Either.right(result)
}
