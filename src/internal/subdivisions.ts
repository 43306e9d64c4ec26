/**
 * Schemas and pure comparisons of ISO 3166-2 subdivisions, shared by `Subdivisions` (the offline snapshot),
 * `SubdivisionService` (API results, cross-checks) and the snapshot script.
 *
 * Kept apart from `Subdivisions.ts` on purpose: that module imports the generated data, and the script that generates
 * the data must not depend on it.
 *
 * @internal
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as CountryCode from "../CountryCode.js"
import { Issue } from "../FinError.js"

/**
 * An ISO 3166-2 code: the alpha-2 country code, a hyphen, one to three letters or digits (`"US-CA"`, `"GB-BFS"`).
 *
 * @internal
 */
const codePattern = /^[A-Z]{2}-[A-Z0-9]{1,3}$/

/** An ISO 3166-2 code: the country's alpha-2, a hyphen, one to three letters or digits. */
export const SubdivisionCode = Schema.String.pipe(
  Schema.pattern(codePattern, {
    title: "an ISO 3166-2 subdivision code",
    description: "an ISO 3166-2 subdivision code (e.g. \"US-CA\")"
  })
)

/**
 * The common shape of a subdivision: what the API returns (`code`, `name`) and what the snapshot adds when known.
 *
 * @internal
 */
export const Subdivision = Schema.Struct({
  /** Full ISO 3166-2 code, e.g. `"US-CA"`. */
  code: Schema.String,
  /** Name in the language of the source (iso-codes uses the ISO 3166-2 names, with diacritics). */
  name: Schema.String,
  /** Kind of subdivision, e.g. `"State"`; absent in API results. */
  type: Schema.optional(Schema.String),
  /** Full code of the parent subdivision, e.g. `"AZ-NX"`, for nested subdivisions. */
  parent: Schema.optional(Schema.String)
}).annotations({ identifier: "effect-fin.Subdivision", title: "a subdivision {code, name, type?, parent?}" })

// Blanks, invisible format characters (U+200B, U+FEFF) and the fillers that render as blank (U+3164, U+2800), as the
// body of a character class.
const blanks = String.raw`\s\p{Cf}\u115f\u1160\u3164\uffa0\u2800`

// A character that shows: not a blank (a no-break space included), an invisible format character (U+200B), a lone
// combining mark, nor a filler that renders as blank (Hangul fillers, the blank Braille pattern).
const visible = new RegExp(`[^${blanks}\\p{M}]`, "u")

// A control character that is no blank (an escape sequence's start, NUL), a bidirectional override or isolate (which
// reorders the text shown around it), or half of a surrogate pair alone: in a name, it would reach a terminal or a
// page as it is.
const unprintable = /[\x00-\x08\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\p{Cs}/u

// A snapshot name is served as it is: it must show, and be in the form names are compared in (`comparable`), or the
// snapshot and the API would never agree on it; no control character (blanks included) or lone surrogate half.
const SnapshotName = Schema.String.pipe(
  Schema.filter(
    (name) => visible.test(name) && !/[\p{Cc}\p{Cs}]/u.test(name) && !unprintable.test(name) &&
      comparable(name) === name.normalize("NFC"),
    { title: "a name that shows, without blanks or invisible characters around it, single blanks inside, no control character" }
  )
)

/**
 * An entry of the committed snapshot: the strict form, `type` always present (it may be empty only if a source had
 * none), codes checked.
 *
 * @internal
 */
export const SnapshotSubdivision = Schema.Struct({
  /** Full ISO 3166-2 code, e.g. `"US-CA"`. */
  code: SubdivisionCode,
  /** The ISO 3166-2 name (from iso-codes, with diacritics), e.g. `"Bāmyān"`. */
  name: SnapshotName,
  // Served and printed as it is, as a name: no control character or lone surrogate half.
  /** Kind of subdivision, e.g. `"State"`, `"Province"`; `""` only where the source had none. */
  type: Schema.String.pipe(
    Schema.filter((type) => !/[\p{Cc}\p{Cs}]/u.test(type) && !unprintable.test(type), {
      title: "a type without control characters or bidirectional overrides"
    })
  ),
  /** Full code of the parent subdivision, e.g. `"AZ-NX"`, for nested subdivisions; absent for top-level ones. */
  parent: Schema.optional(SubdivisionCode)
}).annotations({ title: "a subdivision {code, name, type, parent?}" })

/** @internal */
export type Subdivision = typeof Subdivision.Type

/** @internal */
export type SnapshotSubdivision = typeof SnapshotSubdivision.Type

/**
 * A code present on both sides whose name differs.
 *
 * @internal
 */
export interface Renamed {
  readonly code: string
  readonly from: string
  readonly to: string
}

/**
 * A code present on both sides with the same name but another `type` or `parent`.
 *
 * @internal
 */
export interface Changed<A> {
  readonly code: string
  readonly before: A
  readonly after: A
}

/**
 * How one list of subdivisions became another. Every array is sorted by code.
 *
 * @internal
 */
export interface EntriesDiff<A> {
  readonly added: ReadonlyArray<A>
  readonly removed: ReadonlyArray<A>
  readonly renamed: ReadonlyArray<Renamed>
  readonly changed: ReadonlyArray<Changed<A>>
}

// The same text, however its accents are encoded (a precomposed "á" or "a" and a combining accent): not a rename.
const sameName = (a: string, b: string): boolean => a === b || a.normalize("NFC") === b.normalize("NFC")

/**
 * Code-unit order of `code`, not localeCompare: the result must not depend on the machine's locale.
 *
 * @internal
 */
export const codeOrder = (a: { readonly code: string }, b: { readonly code: string }): number =>
  a.code < b.code ? -1 : a.code > b.code ? 1 : 0

/**
 * Compares two lists of subdivisions by code: added (only in `after`), removed (only in `before`), renamed (same code,
 * other name, letter case included, but not another Unicode encoding of the same text) and changed (same code and name, other `type` or `parent`; skipped when `compareDetails` is false, as
 * for API results that carry neither).
 *
 * @internal
 */
export const compareEntries = <A extends Subdivision>(
  before: ReadonlyArray<A>,
  after: ReadonlyArray<A>,
  compareDetails = true
): EntriesDiff<A> => {
  const old = new Map<string, A>()
  for (const entry of before) old.set(entry.code, entry)
  const added: Array<A> = []
  const renamed: Array<Renamed> = []
  const changed: Array<Changed<A>> = []
  const seen = new Set<string>()
  for (const entry of after) {
    seen.add(entry.code)
    const previous = old.get(entry.code)
    if (previous === undefined) added.push(entry)
    else if (!sameName(previous.name, entry.name)) renamed.push({ code: entry.code, from: previous.name, to: entry.name })
    else if (compareDetails && (previous.type !== entry.type || previous.parent !== entry.parent)) {
      changed.push({ code: entry.code, before: previous, after: entry })
    }
  }
  const removed = before.filter((entry) => !seen.has(entry.code))
  return {
    added: added.sort(codeOrder),
    removed: removed.sort(codeOrder),
    renamed: renamed.sort(codeOrder),
    changed: changed.sort(codeOrder)
  }
}

/**
 * Whether a diff holds no change at all.
 *
 * @internal
 */
export const isEmptyDiff = (diff: EntriesDiff<unknown>): boolean =>
  diff.added.length === 0 && diff.removed.length === 0 && diff.renamed.length === 0 && diff.changed.length === 0

/**
 * An entry of the API's list that is not compared, and why: a code that is not ISO 3166-2 (`malformed_code`, e.g.
 * lower case), a code of another country (`other_country`), no name (`empty_name`), a name with a control character
 * that is no blank, a bidirectional override or isolate, or a lone surrogate half (`unprintable_name`), or a code
 * listed before (`duplicate`; the first listing is the one compared).
 *
 * @internal
 */
export interface InvalidEntry {
  /** The code as the API sent it; `""` when it sent none, `null` or no text. */
  readonly code: string
  /** The name as the API sent it; `""` when it sent none, `null` or no text. */
  readonly name: string
  /** Why it was left out: no ISO 3166-2 code, another country's code, no name, an unprintable name, listed before. */
  readonly reason: "malformed_code" | "other_country" | "empty_name" | "unprintable_name" | "duplicate"
}

/**
 * The snapshot measured against the API for one country: `missing` are codes the API lists and the snapshot lacks,
 * `extra` are codes the snapshot has and the API does not list, `renamed` are codes both have under other names,
 * `invalid` are API entries left out of the comparison. Only codes and names are compared (the API has no `type` or
 * `parent`).
 *
 * @internal
 */
export interface CrossCheck {
  readonly invalid: ReadonlyArray<InvalidEntry>
  readonly missing: ReadonlyArray<Subdivision>
  readonly extra: ReadonlyArray<Subdivision>
  readonly renamed: ReadonlyArray<RenamedEntry>
}

/**
 * A code the snapshot and the API both have, under different names.
 *
 * @internal
 */
export interface RenamedEntry {
  /** The ISO 3166-2 code both list, e.g. `"US-CA"`. */
  readonly code: string
  /** The name the snapshot gives it. */
  readonly snapshotName: string
  /** The name the API gives it, as sent. */
  readonly apiName: string
}

/**
 * A subdivision as the API lists it: `{ code, name }`.
 *
 * @internal
 */
export const ApiSubdivision = Schema.Struct({ code: Schema.String, name: Schema.String }).annotations({
  title: "a subdivision {code, name}"
})

// An entry as sent, its `code` or `name` missing, null or no text read as "" (so `malformed_code` or `empty_name`).
const SentEntry = Schema.transform(Schema.Unknown, Schema.typeSchema(ApiSubdivision), {
  strict: true,
  decode: (entry) => {
    const { code, name } = typeof entry === "object" && entry !== null ? entry as Record<string, unknown> : {}
    return { code: typeof code === "string" ? code : "", name: typeof name === "string" ? name : "" }
  },
  encode: (entry) => entry
})

/**
 * The API's answer as a cross-check reads it: every entry kept, one with no text for its code or name as `""`
 * (`invalid`), rather than one such entry failing the whole comparison.
 *
 * @internal
 */
export const SentSubdivisionsResponse = Schema.Struct({
  data: Schema.Struct({ subdivisions: Schema.Array(SentEntry), pagination: Schema.optional(Schema.Unknown) })
})

/**
 * The issue of an answer that is a page of a longer list, if it is one: a lookup serves, and a cross-check compares
 * (`SubdivisionService.crossCheck` and the snapshot script's), the whole list; a page of it would be served as the
 * country's list, or make every code past the page look `extra`.
 *
 * @internal
 */
export const pageIssues = (
  response: { readonly data: { readonly subdivisions: ReadonlyArray<unknown>; readonly pagination?: unknown } }
): ReadonlyArray<Issue> =>
  isPage(response.data.pagination, response.data.subdivisions.length)
    ? [new Issue({ path: "data.pagination", expected: "the whole list in one answer, not a page of it" })]
    : []

// The service's paged lists say `{ current_page, total_page, total }`: more than one page, or more entries in all than
// the answer holds, is a page of the list. Fields that are no numbers say nothing either way.
const isPage = (pagination: unknown, listed: number): boolean => {
  if (typeof pagination !== "object" || pagination === null) return false
  const { total, total_page } = pagination as { readonly total?: unknown; readonly total_page?: unknown }
  const totalPages = count(total_page)
  const entries = count(total)
  return (totalPages !== undefined && totalPages > 1) || (entries !== undefined && entries > listed)
}

// A count as a number or as its digits ("57": the service's documented examples give ids as text where its schema says
// integers).
const count = (value: unknown): number | undefined =>
  typeof value === "number"
    ? value
    : typeof value === "string" && /^\d+$/.test(value.trim())
    ? Number(value)
    : undefined

/**
 * Why an API entry cannot be compared with the snapshot or served as a subdivision of the country of ISO 3166-1
 * `alpha2` (when known), given the codes of the entries before it that could; undefined when it can.
 *
 * @internal
 */
export const problemOf = (
  entry: Subdivision,
  alpha2: string | undefined,
  before: ReadonlySet<string>
): InvalidEntry["reason"] | undefined =>
  !codePattern.test(entry.code)
    ? "malformed_code"
    : alpha2 !== undefined && !entry.code.startsWith(`${alpha2}-`)
    ? "other_country"
    : !visible.test(entry.name)
    ? "empty_name"
    : unprintable.test(entry.name)
    ? "unprintable_name"
    : before.has(entry.code)
    ? "duplicate"
    : undefined

// Splits the API's list into what can be compared and what cannot (see `InvalidEntry`).
const screen = (entries: ReadonlyArray<Subdivision>, alpha2: string | undefined) => {
  const invalid: Array<InvalidEntry> = []
  const valid: Array<Subdivision> = []
  const seen = new Set<string>()
  for (const entry of entries) {
    const reason = problemOf(entry, alpha2, seen)
    if (reason === undefined) {
      seen.add(entry.code)
      valid.push(entry)
    } else {
      invalid.push({ code: entry.code, name: entry.name, reason })
    }
  }
  return { invalid, valid }
}

/**
 * A name as compared with the API's, and as a lookup serves the API's: one encoding of its accents, no blanks,
 * invisible format characters or blank fillers around it, runs of blanks inside it as one space (an API name with a
 * trailing space is no rename).
 *
 * @internal
 */
export const comparable = (name: string): string => {
  const text = name.normalize("NFC").replace(leadingBlanks, "")
  // The end trimmed by hand: `[${blanks}]+$` retries every blank of a run that ends before the text does, so a name of
  // many blanks inside would take quadratic time (seconds for 100 kB of the 4 MiB an answer may hold).
  let end = text.length
  while (end > 0) {
    const last = text.codePointAt(end - 1)!
    const size = last >= 0xdc00 && last <= 0xdfff && end >= 2 && text.codePointAt(end - 2)! > 0xffff ? 2 : 1
    if (!blankOrFormat.test(text.slice(end - size, end))) break
    end -= size
  }
  return text.slice(0, end).replace(/\s+/g, " ")
}

const leadingBlanks = new RegExp(`^[${blanks}]+`, "u")
const blankOrFormat = new RegExp(`^[${blanks}]$`, "u")

// A code as the API may have mangled it (full-width letters, an invisible character in it, a typographic hyphen, dash,
// minus sign or underscore for its hyphen; written without its country, `CA`, or with the country's alpha-3,
// `USA-CA`), in the snapshot's form: the snapshot's code then counts once, as invalid, not also as extra.
const codeForm = (code: string, alpha2: string | undefined): string => {
  const form = code.normalize("NFKC").replace(/[\s\p{Cf}]/gu, "").replace(/[\p{Pd}\u2212_]/gu, "-").toUpperCase()
  if (alpha2 === undefined) return form
  if (/^[A-Z0-9]{1,3}$/.test(form)) return `${alpha2}-${form}`
  const alpha3 = Option.getOrUndefined(CountryCode.fromAlpha2(alpha2))
  return alpha3 !== undefined && form.startsWith(`${alpha3}-`) ? `${alpha2}${form.slice(3)}` : form
}

/**
 * Compares the snapshot's entries of one country (of ISO 3166-1 `alpha2`, when known) with the API's (see
 * `CrossCheck`). A snapshot code the API listed in a form that could not be compared (lower case, say, or without a
 * name) is not `extra`: it is in `invalid`.
 *
 * @internal
 */
export const crossCheckCountry = (
  snapshotEntries: ReadonlyArray<Subdivision>,
  apiEntries: ReadonlyArray<Subdivision>,
  alpha2: string | undefined
): CrossCheck => {
  const { invalid, valid } = screen(apiEntries, alpha2)
  const diff = compareEntries(snapshotEntries, valid, false)
  const listedAsInvalid = new Set(invalid.map((entry) => codeForm(entry.code, alpha2)))
  return {
    invalid,
    missing: diff.added,
    extra: diff.removed.filter((entry) => !listedAsInvalid.has(entry.code)),
    renamed: diff.renamed
      .filter((r) => comparable(r.from) !== comparable(r.to))
      .map((r) => ({ code: r.code, snapshotName: r.from, apiName: r.to }))
  }
}

/**
 * Cross-checks every country of `apiEntries` (country -> API list) against `snapshotEntries` (country -> snapshot
 * list); a country the snapshot lacks counts as empty there. Sorted by country code.
 *
 * @internal
 */
export const crossCheck = (
  snapshotEntries: Readonly<Record<string, ReadonlyArray<Subdivision>>>,
  apiEntries: Readonly<Record<string, ReadonlyArray<Subdivision>>>,
  alpha2Of: (country: string) => string | undefined
): ReadonlyArray<CrossCheck & { readonly country: string }> =>
  Object.keys(apiEntries)
    .sort()
    .map((country) => ({
      country,
      ...crossCheckCountry(
        Object.prototype.hasOwnProperty.call(snapshotEntries, country) ? snapshotEntries[country]! : [],
        apiEntries[country]!,
        alpha2Of(country)
      )
    }))

// Letters that Unicode decomposition leaves alone but a user types as plain Latin.
const foldMap: Readonly<Record<string, string>> = {
  "ı": "i",
  "ł": "l",
  "ø": "o",
  "đ": "d",
  "ð": "d",
  "ħ": "h",
  "ŧ": "t",
  "ŀ": "l",
  "ß": "ss",
  "æ": "ae",
  "œ": "oe",
  "þ": "th",
  "ǝ": "e",
  "ə": "e"
}

const plainWords = /^[a-z0-9]+(?: [a-z0-9]+)*$/

const mark = /^\p{M}$/u
const letterOrDigit = /^[\p{L}\p{N}]$/u
const apostrophes = "'`\u2018\u2019\u02bb\u02bc\u00b4"
const anyApostrophe = new RegExp(`[${apostrophes}]`, "g")

// What one non-ASCII character becomes: "" (a mark or an apostrophe), " " (a separator) or letters ("ã" -> "a",
// "ß" -> "ss"; compatibility forms too, full-width letters as a Japanese or Chinese input method types them: "ｔ" -> "t").
// Decomposing character by character gives what decomposing the whole text would, once the marks are dropped. Remembered, as queries repeat the same few characters (bounded: input is untrusted).
const foldedChars = new Map<string, string>()

const foldChar = (char: string): string => {
  const known = foldedChars.get(char)
  if (known !== undefined) return known
  let letters = ""
  let separator = false
  // Lower-cased after the decomposition too: a compatibility form may decompose to a capital that `toLowerCase` left
  // alone ("𝐍", "ℕ", "🄽" -> "N").
  for (const part of char.normalize("NFKD").toLowerCase()) {
    if (mark.test(part) || apostrophes.includes(part)) continue
    const folded = foldMap[part] ?? (letterOrDigit.test(part) ? part : undefined)
    if (folded === undefined) separator = true
    else letters += folded
  }
  const result = letters !== "" ? letters : separator ? " " : ""
  if (foldedChars.size < 4096) foldedChars.set(char, result)
  return result
}

// One pass: marks and apostrophes dropped, `foldMap` letters replaced, every run of other characters turned into one
// space between words (none at either end).
const fold = (lower: string): string => {
  let out = ""
  let pendingSpace = false
  for (let i = 0; i < lower.length; i++) {
    const code = lower.charCodeAt(i)
    let piece: string
    if (code < 128) {
      piece = (code >= 97 && code <= 122) || (code >= 48 && code <= 57)
        ? lower[i]!
        : code === 39 || code === 96
        ? ""
        : " "
    } else {
      const point = lower.codePointAt(i)!
      if (point > 0xffff) i++
      piece = foldChar(String.fromCodePoint(point))
    }
    if (piece === "") continue
    if (piece === " ") {
      pendingSpace = true
      continue
    }
    if (pendingSpace && out !== "") out += " "
    pendingSpace = false
    out += piece
  }
  return out
}

/**
 * How the generated module stores a country: a JSON array of rows `[suffix, name, typeIndex, parentSuffix?]`, the
 * codes without their `XX-` prefix and the type as an index into a shared table of type names. A third of the size
 * of the entries written out, so the module imports about twice as fast (see bench/subdivisions.ts), and still
 * read with the native JSON.parse.
 */
export type Row = readonly [suffix: string, name: string, type: number, parent?: string]

/**
 * The sorted, distinct types of a snapshot: the table rows index into.
 */
export const typeTable = (
  snapshot: Readonly<Record<string, ReadonlyArray<SnapshotSubdivision>>>
): ReadonlyArray<string> => [...new Set(Object.values(snapshot).flatMap((list) => list.map((e) => e.type)))].sort()

/**
 * One country's entries as the JSON text of its rows. Every code must start with `prefix` (`"US-"`).
 */
export const encodeRows = (
  entries: ReadonlyArray<SnapshotSubdivision>,
  prefix: string,
  types: ReadonlyArray<string>
): string => {
  const index = new Map(types.map((type, i) => [type, i]))
  const strip = (code: string): string => {
    if (!code.startsWith(prefix)) throw new Error(`${code} does not start with ${prefix}`)
    return code.slice(prefix.length)
  }
  return JSON.stringify(entries.map((e): Row => {
    const type = index.get(e.type)
    if (type === undefined) throw new Error(`type ${JSON.stringify(e.type)} is not in the table`)
    return e.parent === undefined
      ? [strip(e.code), e.name, type]
      : [strip(e.code), e.name, type, strip(e.parent)]
  }))
}

/**
 * The inverse of `encodeRows`: entries with full codes, keys in the snapshot's order, each object frozen.
 */
export const decodeRows = (
  json: string,
  prefix: string,
  types: ReadonlyArray<string>
): Array<SnapshotSubdivision> =>
  (JSON.parse(json) as ReadonlyArray<Row>).map(([suffix, name, type, parent]) =>
    Object.freeze(
      parent === undefined
        ? { code: prefix + suffix, name, type: types[type]! }
        : { code: prefix + suffix, name, type: types[type]!, parent: prefix + parent }
    )
  )

/**
 * Case and diacritics folded, apostrophes dropped, other punctuation a space: `"São Paulo"` -> `"sao paulo"`,
 * `"Ra’s al Khaymah"` -> `"ras al khaymah"`, `"Escaldes-Engordany"` -> `"escaldes engordany"`.
 */
export const normalize = (text: string): string => {
  const lower = text.toLowerCase()
  // Most queries are plain ASCII words: skip the Unicode work.
  return plainWords.test(lower) ? lower : fold(lower)
}

/**
 * `normalize` with apostrophes read as spaces: `"Côte-d’Azur"` -> `"cote d azur"`, as it is typed without the
 * apostrophe or written in a URL (`cote-d-azur`). `undefined` when that is `normalize`'s own form.
 */
export const normalizeApostrophesSpaced = (text: string): string | undefined => {
  anyApostrophe.lastIndex = 0
  return anyApostrophe.test(text) ? normalize(text.replace(anyApostrophe, " ")) : undefined
}
