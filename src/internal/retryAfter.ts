/**
 * HTTP dates and the waits an answer asks for: `Retry-After` (whole seconds or an HTTP date), `retry-after-ms`, and
 * the answer's `Date`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"

const DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
const DAY_NAME = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const MONTH = `(${MONTHS.join("|")})`
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})"
// The three HTTP-date forms (RFC 9110 5.6.7), each with its own layout: IMF-fixdate, RFC 850, asctime (which is GMT
// though it does not say so). Captured: day, month, year, hours, minutes, seconds.
const IMF = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`)
const RFC850 = new RegExp(`^${DAY_NAME}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`)
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`)

// RFC 850's two-digit year: the latest year with those digits that is not more than 50 years after `nowMillis`.
const fullYear = (twoDigits: number, nowMillis: number): number => {
  const now = new Date(nowMillis).getUTCFullYear()
  // This century's, or the next's (late in a century), or the last's.
  const year = now - (now % 100) + twoDigits
  return year + 100 <= now + 50 ? year + 100 : year > now + 50 ? year - 100 : year
}

// An HTTP date in epoch milliseconds, read field by field; NaN for anything else: a time out of range or a 31 February
// (which `Date.parse` rolls over), a year of two digits outside RFC 850 (which it reads as this century's).
const parseHttpDate = (value: string, nowMillis: number): number => {
  const fields = IMF.exec(value)
  const rfc850 = fields === null ? RFC850.exec(value) : null
  const asctime = fields === null && rfc850 === null ? ASCTIME.exec(value) : null
  const [day, month, year, hours, minutes, seconds] = fields !== null
    ? fields.slice(1)
    : rfc850 !== null
    ? rfc850.slice(1)
    : asctime !== null
    ? [asctime[2]!, asctime[1]!, asctime[6]!, ...asctime.slice(3, 6)]
    : []
  if (day === undefined) return NaN
  const date = new Date(0)
  const fullYearOf = rfc850 !== null ? fullYear(Number(year), nowMillis) : Number(year)
  // Set on a date, not `Date.UTC`, which reads the years 0-99 as 1900-1999. A leap second (60) is allowed.
  date.setUTCFullYear(fullYearOf, MONTHS.indexOf(month!), Number(day.trim()))
  if (date.getUTCDate() !== Number(day.trim()) || Number(hours) > 23 || Number(minutes) > 59 || Number(seconds) > 60) {
    return NaN
  }
  return date.getTime() + ((Number(hours) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000
}

// A header sent twice reaches us joined with ", " ("2, 2"): split there, but not at the comma inside an HTTP date
// ("Wed, 21 Oct 2015 ...", "Wednesday, 21-Oct-15 ..."), which is followed by the day, month and year; a value that
// parses is kept whatever the other says ("30, garbage" waits 30 s).
const headerValues = (value: string): ReadonlyArray<string> =>
  value.split(/,(?!\s*\d{2}[ -][A-Za-z]{3}[ -]\d{2,4}\b)\s*/).map((part) => part.trim())

// The longest wait of the values that parse; none when none does.
const longestWait = (
  value: string | undefined,
  parse: (part: string) => number | undefined
): Duration.Duration | undefined => {
  if (value === undefined) return undefined
  // A loop, not `Math.max(...waits)`: a header repeated some 100,000 times (a client allowed large heads) would
  // overflow the stack as arguments, a defect in place of the service's error.
  let longest: number | undefined
  for (const millis of headerValues(value).map(parse)) {
    if (millis !== undefined && (longest === undefined || millis > longest)) longest = millis
  }
  // Past the safe integers a wait is no exact number of milliseconds (nor one a `Schema.Duration` encodes), and every such
  // wait is far past every cap anyway.
  return longest === undefined ? undefined : Duration.millis(Math.min(Number.MAX_SAFE_INTEGER, longest))
}

/**
 * The answer's `Date` (the time on the clock of whoever answered) in epoch milliseconds; undefined without a readable
 * one. `nowMillis` places an RFC 850 date's two-digit year. A `Date` sent twice (a proxy adding its own) reaches us
 * joined with ", ": read when its dates agree to within a few seconds (the latest), else none, as two clocks disagree.
 */
export const dateOf = (headers: Readonly<Record<string, string>>, nowMillis: number): number | undefined => {
  const date = headers["date"]
  const dates = date === undefined ? [] : headerValues(date).map((value) => parseHttpDate(value, nowMillis))
  if (dates.length === 0 || dates.some(Number.isNaN)) return undefined
  // Folded, not spread into Math.min/max: see `longestWait`.
  const earliest = dates.reduce((a, b) => Math.min(a, b))
  const latest = dates.reduce((a, b) => Math.max(a, b))
  return latest - earliest <= 5000 ? latest : undefined
}

/**
 * `retry-after-ms` (milliseconds, a fraction dropped: less than one is a wait of zero) and `Retry-After` as whole
 * seconds or an HTTP date (read field by field: `Date.parse` reads "1.5" or "-1" as dates in 2001, a wait of zero;
 * counted from the later of `nowMillis` and the answer's `Date`); anything else is ignored (the backoff applies).
 * A header sent more than once counts with its longest wait; both headers, with `retry-after-ms` when the two are
 * within a second of each other (the seconds rounded), else with the longer: a zero in one cannot cancel the other's.
 */
export const parseRetryAfter = (
  headers: Readonly<Record<string, string>>,
  nowMillis: number
): Duration.Duration | undefined => {
  const millis = longestWait(headers["retry-after-ms"], (ms) => /^\d+(\.\d+)?$/.test(ms) ? Math.floor(Number(ms)) : undefined)
  // A date is on the service's clock, and this machine's or the answer's `Date` (a proxy's) may be hours off: it is
  // counted from the later of the two, so that neither alone can make a wait past the cap (which ends the retries); a
  // clock of ours running fast then reads a wait short (the backoff applies).
  // (The answer's `Date` read only for such a date: most waits are in seconds, and most failures have none.)
  let from: number | undefined
  const seconds = longestWait(headers["retry-after"], (value) => {
    if (/^\d+$/.test(value)) return Number(value) * 1000
    const date = parseHttpDate(value, nowMillis)
    if (Number.isNaN(date)) return undefined
    from ??= Math.max(nowMillis, dateOf(headers, nowMillis) ?? nowMillis)
    return Math.max(0, date - from)
  })
  if (millis === undefined) return seconds
  if (seconds === undefined) return millis
  // Both: the usual pairing gives one wait twice, the seconds rounded, so the precise one is taken; two that disagree
  // by a second or more count with the longer (a zero in one cannot cancel the other's wait).
  return Math.abs(Duration.toMillis(millis) - Duration.toMillis(seconds)) < 1000 ? millis : Duration.max(millis, seconds)
}
