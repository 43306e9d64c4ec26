/**
 * The check of user-given durations, shared by the client's options and the webhook handler's.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"

/** Duration.decode reads a negative or NaN amount ("-5 seconds", [-1, 0]) as zero: a mistake, not zero. */
export const isNegativeOrNaN = (input: unknown): boolean =>
  typeof input === "string"
    ? input.trimStart().startsWith("-")
    : Array.isArray(input) && input.some((n) => typeof n === "number" && !(n >= 0))

/**
 * `duration` for a message, in whole milliseconds (rounded up, or down with `Math.floor`: what is left of a limit):
 * a wait with jitter, or what is left of a deadline on the monotonic clock, would otherwise read `540ms 945801ns`.
 * Made of exact nanoseconds: `Duration.millis` goes through a double's, which past 2^53 (104 days) writes the float's
 * noise (`20547d 17h 38m 26s 843ms 64ns`).
 */
export const formatMillis = (duration: Duration.Duration, round: (millis: number) => number = Math.ceil): string => {
  const millis = round(Duration.toMillis(duration))
  return Duration.format(Number.isFinite(millis) ? Duration.nanos(BigInt(millis) * 1_000_000n) : Duration.infinity)
}

/**
 * The longest a time limit may be: past 2^31 - 1 ms (24.8 days) `setTimeout`, and so Effect's clock, never fires, and
 * the limit would be none at all.
 */
export const MAX_TIMER = Duration.days(24)

/**
 * The longest lifetime a token or a quote is given: its expiry is sent as a timestamp, which keeps four-digit years.
 */
const MAX_LIFETIME = Duration.days(36_500)

/**
 * The shortest: expiries are sent in whole seconds, so a shorter lifetime could read as ending when it began.
 */
const MIN_LIFETIME = Duration.seconds(1)

/** Why a lifetime (already a duration above zero) cannot be sent as an expiry; undefined when it can. */
export const lifetimeProblem = (lifetime: Duration.Duration): string | undefined =>
  Duration.lessThan(lifetime, MIN_LIFETIME)
    ? "must be at least 1 second (expiries are sent in whole seconds)"
    : Duration.greaterThan(lifetime, MAX_LIFETIME)
    ? "must be at most 100 years"
    : undefined

/**
 * For a bare number or bigint, which `FinConfig.DurationOption` refuses when compiled (a value from untyped code is
 * refused at run time too): how to give its unit, and how Effect would read it without one.
 */
export const withoutUnit = (input: unknown): string | undefined =>
  typeof input === "number" || typeof input === "bigint"
    ? `("30 seconds", Duration.seconds(30)): a bare ${typeof input} would be read as ${
      typeof input === "number" ? "milliseconds" : "nanoseconds"
    }`
    : undefined

// Spellings of a unit people write (in config files, from other tools) that Effect's `Duration.decode` does not read.
const units: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(ns|nanos?|nanoseconds?)$/, "nanos"],
  [/^(us|µs|micros?|microseconds?)$/, "micros"],
  [/^(ms|millis?|milliseconds?)$/, "millis"],
  [/^(s|secs?|seconds?)$/, "seconds"],
  [/^(m|mins?|minutes?)$/, "minutes"],
  [/^(h|hrs?|hours?)$/, "hours"],
  [/^(d|days?)$/, "days"],
  [/^(w|wks?|weeks?)$/, "weeks"]
]

/**
 * The form Effect reads of a text that is a number and a unit written otherwise ("30s", "15 mins", "2 Hours", " 5
 * seconds"); undefined for any other text. A guess shown to the user, never read in its place.
 */
export const meant = (text: string): string | undefined => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zµ]+)\s*$/i.exec(text)
  // A capital M alone is months as often as minutes (ISO 8601's P1M): no guess.
  if (match === null || match[2] === "M") return undefined
  const unit = units.find(([spellings]) => spellings.test(match[2]!.toLowerCase()))
  return unit === undefined ? undefined : `${match[1]} ${unit[1]}`
}

/**
 * What to write instead of the text `input`, said as the end of a message: the form it meant, unless that form is
 * refused too (`check`'s rules: "0s" where zero is not allowed), which is then said.
 */
export const howToWrite = (input: string, allowZero: boolean, timer: boolean): string => {
  const form = meant(input)
  if (form === undefined) return "write a number and a unit such as \"30 seconds\" or \"500 millis\""
  const refused = check(form, allowZero, timer)
  return Either.isLeft(refused)
    ? `its form Effect reads, "${form}", ${refused.left}`
    : `write "${form}" (a number, a space and a unit Effect reads)`
}

/**
 * `input` as a finite duration, greater than zero unless `allowZero`, and for a `timer` at most `MAX_TIMER` and, unless
 * zero, at least a millisecond (timers count whole milliseconds: "1 nanos" would fire after about one); `Left` is what
 * it must be, to follow the option's name ("must be greater than zero").
 */
export const check = (input: unknown, allowZero: boolean, timer = false): Either.Either<Duration.Duration, string> => {
  const unit = withoutUnit(input)
  if (unit !== undefined) return Either.left(`must say its unit ${unit}`)
  const sign = `must be ${allowZero ? "zero or more" : "greater than zero"}`
  if (isNegativeOrNaN(input)) return Either.left(sign)
  const decoded = Duration.decodeUnknown(input)
  // Text from untyped code or a config file ("30s", "15 mins"): say the form Effect reads, as FIN_* variables do.
  if (Option.isNone(decoded)) {
    return Either.left(
      typeof input === "string"
        ? `is not a valid duration: ${howToWrite(input, allowZero, timer)}`
        : "is not a valid duration"
    )
  }
  const d = decoded.value
  if (!Duration.isFinite(d)) return Either.left("must be finite")
  if (!allowZero && Duration.toMillis(d) === 0) return Either.left(sign)
  if (timer && Duration.greaterThan(d, MAX_TIMER)) return Either.left("must be at most 24 days")
  if (timer && Duration.toMillis(d) > 0 && Duration.toMillis(d) < 1) return Either.left("must be at least 1 millisecond")
  return Either.right(d)
}

/**
 * The duration `input` is, or an `IllegalArgumentException` thrown as `${subject} ${problem}` (options checked when a
 * layer or handler is made, where a mistake is the program's own).
 */
export const checkOrThrow = (input: unknown, allowZero: boolean, subject: string, timer = false): Duration.Duration =>
  Either.getOrThrowWith(
    check(input, allowZero, timer),
    (problem) => new Cause.IllegalArgumentException(`${subject} ${problem}`)
  )

/** `input` as a lifetime sent as an expiry (see `lifetimeProblem`); `Left` is what it must be, as `check`'s. */
export const checkLifetime = (input: unknown): Either.Either<Duration.Duration, string> =>
  Either.flatMap(check(input, false), (lifetime) => {
    const problem = lifetimeProblem(lifetime)
    return problem === undefined ? Either.right(lifetime) : Either.left(problem)
  })

/** `input` as a lifetime sent as an expiry, or `IllegalArgumentException` naming `subject`. */
export const lifetimeOrThrow = (input: unknown, subject: string): Duration.Duration =>
  Either.getOrThrowWith(checkLifetime(input), (problem) => new Cause.IllegalArgumentException(`${subject} ${problem}`))
