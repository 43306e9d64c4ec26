/**
 * The check of per-call overrides (`HttpTransport.withOptions`), shared by the transport and the test fee service, so
 * that a test refuses what the real client refuses.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Durations from "./duration.js"
import * as Issues from "./issues.js"
import * as OptionNames from "./optionNames.js"
import { Issue, RequestValidationError } from "../FinError.js"
import type { CallOptions } from "../HttpTransport.js"

/** The options of one call: the overrides, or else the client's. */
export interface Resolved {
  readonly timeout: Duration.Duration
  readonly deadline: Duration.Duration
  readonly maxRetries: number
}

const invalid = (path: string, expected: string) => Issues.refusal(path, `Invalid ${path} override`, expected)

// Checked as the client's own time limits are (a limit past Durations.MAX_TIMER would never fire; one below a
// millisecond, which timers cannot count, is refused too, so the words say both bounds).
const duration = (name: string, input: Duration.DurationInput | undefined, fallback: Duration.Duration) =>
  input === undefined
    ? Either.right(fallback)
    : Either.mapLeft(Durations.check(input, false, true), () => {
      const unit = Durations.withoutUnit(input)
      return invalid(
        name,
        unit === undefined ? "a finite duration from 1 millisecond to 24 days" : `a duration with its unit ${unit}`
      )
    })

const NAMES: { readonly [K in keyof CallOptions]-?: true } = { timeout: true, deadline: true, maxRetries: true }

/**
 * The key under which `withOptions` records overrides that were no object (from untyped code: `withOptions(undefined)`,
 * `withOptions(5000)`), holding what they were: refused by `resolve`, rather than a defect or no override at all. A
 * symbol: no key of an options object from untyped code (JSON) is taken for it, and `currentCallOptions` shows none.
 */
export const NOT_AN_OBJECT: unique symbol = Symbol.for("effect-fin/HttpTransport/notAnObject")

/**
 * Whether `options` (`currentCallOptions`) override nothing: every option left undefined, and no mark of overrides that
 * were no object (a symbol key, which `Object.keys` and `Object.values` do not see), which `resolve` refuses.
 */
export const overridesNothing = (options: CallOptions): boolean =>
  Object.values(options).every((value) => value === undefined) && !Object.hasOwn(options, NOT_AN_OBJECT)

/**
 * `options` over `defaults`; an override that is out of range, or none of the three (from untyped code: `maxRetry`,
 * which would otherwise change nothing without a word), is a `RequestValidationError` naming it.
 */
export const resolve = (defaults: Resolved, options: CallOptions): Either.Either<Resolved, RequestValidationError> => {
  const given = (options as { readonly [NOT_AN_OBJECT]?: string })[NOT_AN_OBJECT]
  if (given !== undefined) {
    return Either.left(
      new RequestValidationError({
        message: `Invalid overrides: expected an object of timeout, deadline and maxRetries, not ${given}`,
        issues: [new Issue({ path: "", expected: "an object of timeout, deadline and maxRetries" })]
      })
    )
  }
  const [shown] = OptionNames.unknown(options, NAMES)
  if (shown !== undefined) {
    return Either.left(
      new RequestValidationError({
        message: `Unknown override ${shown}: the options are timeout, deadline and maxRetries`,
        issues: [new Issue({ path: shown, expected: "no such option: timeout, deadline or maxRetries" })]
      })
    )
  }
  // Only an absent override is the client's: a null (from untyped config, meant as "none"?) is refused, as a null
  // duration is.
  const maxRetries = options.maxRetries === undefined ? defaults.maxRetries : options.maxRetries
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0 || maxRetries > 10) {
    return Either.left(invalid("maxRetries", "a whole number from 0 to 10"))
  }
  const timeout = duration("timeout", options.timeout, defaults.timeout)
  if (Either.isLeft(timeout)) return Either.left(timeout.left)
  const deadline = duration("deadline", options.deadline, defaults.deadline)
  if (Either.isLeft(deadline)) return Either.left(deadline.left)
  return Either.right({ timeout: timeout.right, deadline: deadline.right, maxRetries })
}
