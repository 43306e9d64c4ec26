import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Durations from "../../src/internal/duration.js"

describe("internal/duration", () => {
  it("a negative amount written with leading spaces is said to be one, not an unreadable duration", () => {
    expect(Durations.check(" -5 seconds", false)).toEqual(Either.left("must be greater than zero"))
    expect(Durations.check(" -5 seconds", true)).toEqual(Either.left("must be zero or more"))
  })

  it("a [seconds, nanos] pair holding NaN is refused, not read as zero where zero is allowed", () => {
    // Duration.decode reads NaN as 0: a computed pair gone wrong would turn an option off ("0 seconds") unsaid.
    for (const pair of [[NaN, 0], [0, NaN]] as const) {
      expect(Durations.check(pair, true)).toEqual(Either.left("must be zero or more"))
    }
  })

  it("a timer may be 24 days, not a millisecond more, nor under a millisecond unless zero; others no limit", () => {
    expect(Durations.check("24 days", false, true)).toEqual(Either.right(Duration.days(24)))
    expect(Durations.check(Duration.sum(Duration.days(24), Duration.millis(1)), false, true))
      .toEqual(Either.left("must be at most 24 days"))
    expect(Durations.check("999 micros", false, true)).toEqual(Either.left("must be at least 1 millisecond"))
    expect(Durations.check("0 millis", true, true)).toEqual(Either.right(Duration.zero))
    expect(Durations.check("0 millis", false, true)).toEqual(Either.left("must be greater than zero"))
    // A duration that is no timer (a cache's lifetime) may be longer, but not infinite.
    expect(Durations.check("30 days", false)).toEqual(Either.right(Duration.days(30)))
    expect(Durations.check(Duration.infinity, true)).toEqual(Either.left("must be finite"))
  })

  it("a bare number is refused, naming how Effect would read it", () => {
    expect(Durations.check(30, false)).toEqual(Either.left(
      `must say its unit ("30 seconds", Duration.seconds(30)): a bare number would be read as milliseconds`
    ))
    expect(Durations.check(30n, true)).toEqual(Either.left(
      `must say its unit ("30 seconds", Duration.seconds(30)): a bare bigint would be read as nanoseconds`
    ))
  })

  it("formatMillis rounds up to whole milliseconds, or down when asked", () => {
    expect(Durations.formatMillis(Duration.nanos(540_000_001n))).toBe("541ms")
    expect(Durations.formatMillis(Duration.nanos(540_945_801n), Math.floor)).toBe("540ms")
    // Exact past 2^53 nanoseconds (104 days), where a double's would add noise; an infinite one said, not a RangeError.
    expect(Durations.formatMillis(Duration.millis(Number.MAX_SAFE_INTEGER))).toBe("104249991d 8h 59m 991ms")
    expect(Durations.formatMillis(Duration.infinity)).toBe("Infinity")
  })

  it("a lifetime runs from 1 second to 100 years, both included", () => {
    expect(Durations.lifetimeProblem(Duration.seconds(1))).toBeUndefined()
    expect(Durations.lifetimeProblem(Duration.millis(999))).toBe("must be at least 1 second (expiries are sent in whole seconds)")
    expect(Durations.lifetimeProblem(Duration.days(36_500))).toBeUndefined()
    expect(Durations.lifetimeProblem(Duration.days(36_501))).toBe("must be at most 100 years")
    // Zero is said to be no lifetime, before it is said to be too short.
    expect(Durations.checkLifetime("0 seconds")).toEqual(Either.left("must be greater than zero"))
  })
})
