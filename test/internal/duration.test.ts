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

  it("a timer may be 24 days, not a millisecond more", () => {
    expect(Durations.check("24 days", false, true)).toEqual(Either.right(Duration.days(24)))
    expect(Durations.check(Duration.sum(Duration.days(24), Duration.millis(1)), false, true))
      .toEqual(Either.left("must be at most 24 days"))
  })

  it("a lifetime runs from 1 second to 100 years, both included", () => {
    expect(Durations.lifetimeProblem(Duration.seconds(1))).toBeUndefined()
    expect(Durations.lifetimeProblem(Duration.millis(999))).toBe("must be at least 1 second (expiries are sent in whole seconds)")
    expect(Durations.lifetimeProblem(Duration.days(36_500))).toBeUndefined()
    expect(Durations.lifetimeProblem(Duration.days(36_501))).toBe("must be at most 100 years")
  })
})
