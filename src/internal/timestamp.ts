/**
 * The one parser of the service's timestamps: token expiries (`2025-12-28 10:34:45+00`), quote expiries and webhook
 * `created_at` (ISO 8601, up to microseconds), into epoch microseconds, every field checked; and the writer of what
 * the schemas encode, as text it reads back.
 *
 * @internal
 */
import * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Arbitrary from "effect/Arbitrary"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"

const PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/

/** A parsed timestamp: epoch microseconds, and whether the text said its zone. */
export interface Parsed {
  readonly micros: number
  /**
   * Epoch milliseconds, exact: not `micros / 1000`, which is past 2^53 from the year 2255 on (and before 1685), so no
   * longer exact, and floors to the millisecond before now and then (`8286-07-20T19:44:00.642Z` would be .641).
   */
  readonly millis: number
  readonly zoned: boolean
}

/**
 * `YYYY-MM-DD[T or space]hh:mm[:ss[.fraction]][Z, ±hh, ±hhmm or ±hh:mm]`; without a zone, UTC. `undefined` for
 * anything else, a 30 February, a 24:00 or a 10:61 included (`Date` would roll them over), and for `Date.parse`'s
 * guesses ("1" is not 2001).
 */
export const parse = (text: string): Parsed | undefined => {
  const m = PATTERN.exec(text)
  if (m === null) return undefined
  const field = (i: number): number => Number(m[i] ?? 0)
  const [year, month, day, hour, minute, second] = [field(1), field(2), field(3), field(4), field(5), field(6)]
  const [offsetHours, offsetMinutes] = [field(10), field(11)]
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined
  if (offsetHours > 23 || offsetMinutes > 59) return undefined
  // setUTCFullYear, unlike Date.UTC, does not read years 0-99 as 1900-1999.
  const midnight = new Date(0).setUTCFullYear(year, month - 1, day)
  if (new Date(midnight).getUTCDate() !== day) return undefined
  const offset = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  const millis = midnight + ((hour * 60 + minute) * 60 + second) * 1000 - offset
  const fraction = Number(((m[7] ?? "") + "000000").slice(0, 6))
  return {
    micros: millis * 1000 + fraction,
    millis: millis + Math.floor(fraction / 1000),
    zoned: m[8] !== undefined || m[9] !== undefined
  }
}

/** Epoch milliseconds written the way the token endpoint writes them: `2025-12-28 10:34:45+00`. */
export const formatService = (millis: number): string =>
  new Date(millis).toISOString().slice(0, 19).replace("T", " ") + "+00"

/** Epoch milliseconds of `text` (see `parse`), with or without a zone. */
export const toMillis = (text: string): number | undefined => {
  const parsed = parse(text)
  return parsed?.millis
}

/**
 * The first and last milliseconds of the years 0000 to 9999 in UTC: every time `encode` writes (as `Z`), so what the
 * schemas' `Arbitrary` draws from (a `DateTime` goes some 270,000 years either way).
 */
const MIN_MILLIS = Date.parse("0000-01-01T00:00:00.000Z")
/** @see MIN_MILLIS */
const MAX_MILLIS = Date.parse("9999-12-31T23:59:59.999Z")

/** Epoch milliseconds, whole, from `MIN_MILLIS` to `MAX_MILLIS`: what a decoded timestamp can be. */
export const arbitraryMillis: Arbitrary.LazyArbitrary<number> = (fc) =>
  fc.integer({ min: MIN_MILLIS, max: MAX_MILLIS })

/**
 * A `DateTime.Utc` whose `Arbitrary` keeps to the years `encode` writes: the default one's times, mostly past them,
 * fail to encode.
 */
export const Utc = Schema.DateTimeUtcFromSelf.annotations({
  arbitrary: () => (fc) => arbitraryMillis(fc).map((millis) => DateTime.unsafeMake(millis))
})

const MAX_OFFSET_MILLIS = (23 * 60 + 59) * 60_000

/**
 * ISO 8601 text of `dateTime` that `parse` reads back as the same time: in UTC (`Z`); a time past 9999 or before 0000
 * in UTC, which `parse` gives for such a year's last or first hours at an offset (`9999-12-31T23:59:59-05:00`), at the
 * largest offset (`formatIso` would write `+010000-...`, which `parse` does not read). Refused further out, as no text
 * `parse` reads says such a time.
 */
export const encode = (dateTime: DateTime.Utc, ast: AST.AST): Effect.Effect<string, ParseResult.ParseIssue> => {
  const text = DateTime.formatIso(dateTime)
  if (/^\d{4}-/.test(text)) return ParseResult.succeed(text)
  const sign = text.startsWith("+") ? -1 : 1
  const local = new Date(DateTime.toEpochMillis(dateTime) + sign * MAX_OFFSET_MILLIS).toISOString()
  return /^\d{4}-/.test(local)
    ? ParseResult.succeed(`${local.slice(0, -1)}${sign < 0 ? "-" : "+"}23:59`)
    : ParseResult.fail(new ParseResult.Type(ast, dateTime, "a date-time in the years 0000 to 9999"))
}
