import { describe, expect, it } from "@effect/vitest"
import * as RetryBudget from "../../src/internal/retryBudget.js"

// Takes retries at `now` until one is refused: how many were allowed.
const allowedAt = (budget: RetryBudget.RetryBudget, now: number): number => {
  let n = 0
  for (let verdict = budget.take(now); verdict !== "refused" && verdict !== "spent"; verdict = budget.take(now)) n += 1
  return n
}

describe("RetryBudget", () => {
  it("allows 100 retries in 10 s with no calls, then says spent once and refused after", () => {
    const budget = RetryBudget.make(20)
    expect(allowedAt(budget, 0)).toBe(100)
    expect(budget.take(0)).toBe("refused")
    expect(budget.counts(0)).toEqual({ calls: 0, retries: 100 })
  })

  it("an episode: spent at its first refusal, ended by the first retry allowed a window after its last", () => {
    const budget = RetryBudget.make(0)
    for (let i = 0; i < 100; i++) expect(budget.take(500)).toBe("allowed")
    expect([budget.take(600), budget.take(700)]).toEqual(["spent", "refused"])
    // Room again at 10 s (second 0 has left), but 9.3 s after the last refusal: the same episode.
    expect(budget.take(10_000)).toBe("allowed")
    for (let i = 0; i < 99; i++) budget.take(10_000)
    expect(budget.take(10_500)).toBe("refused")
    // Told once: how many it refused, from the first refusal to the last.
    expect([budget.take(20_499), budget.take(20_500), budget.take(20_501)]).toEqual([
      "allowed",
      { refused: 3, millis: 9_900 },
      "allowed"
    ])
  })

  it("an episode is ended by the first call sent a window after its last refusal, retried or not", () => {
    const budget = RetryBudget.make(0)
    for (let i = 0; i < 100; i++) budget.take(0)
    expect(budget.take(0)).toBe("spent")
    expect(budget.sent(9_999)).toBeUndefined()
    expect([budget.sent(10_000), budget.sent(10_001)]).toEqual([{ refused: 1, millis: 0 }, undefined])
    // Over: the next refusal begins another.
    for (let i = 0; i < 100; i++) budget.take(20_000)
    expect(budget.take(20_000)).toBe("spent")
  })

  it("an episode not told over (nothing sent a window after its last refusal) goes on at the next refusal", () => {
    const budget = RetryBudget.make(0)
    for (let i = 0; i < 100; i++) budget.take(0)
    expect(budget.take(500)).toBe("spent")
    // Retries allowed within the window after that refusal (no end told), then a refusal 10.1 s after it.
    for (let i = 0; i < 100; i++) expect(budget.take(10_000)).toBe("allowed")
    expect(budget.take(10_600)).toBe("refused")
    // Its end, told once, counts both.
    expect(budget.sent(20_600)).toEqual({ refused: 2, millis: 10_100 })
  })

  it("a retry given back frees its place while its second is in the window, and nothing after", () => {
    const budget = RetryBudget.make(0)
    expect(allowedAt(budget, 2_300)).toBe(100)
    budget.refund(2_900)
    expect(budget.counts(2_900).retries).toBe(99)
    expect(budget.take(3_000)).toBe("allowed")
    // Second 2 has left the window (and its bucket is second 12's now): a late refund takes nothing from it.
    budget.take(12_000)
    budget.refund(2_300)
    expect(budget.counts(12_000).retries).toBe(2)
    // Nor below zero: second 12 had one.
    budget.refund(12_000)
    budget.refund(12_000)
    expect(budget.counts(12_000).retries).toBe(1)
  })

  it("a clock before zero (a Clock of the user's) and one set back are counted, not thrown on", () => {
    const budget = RetryBudget.make(0)
    expect(allowedAt(budget, -1_500)).toBe(100)
    expect(budget.counts(-1_500)).toEqual({ calls: 0, retries: 100 })
    // Retries counted at 50 s are not the window of 20 s (a client used under the live clock, then a TestClock).
    const later = RetryBudget.make(0)
    allowedAt(later, 50_000)
    expect(later.counts(20_000)).toEqual({ calls: 0, retries: 0 })
  })

  it("adds the percentage of the calls sent in the window, rounded down", () => {
    const budget = RetryBudget.make(20)
    for (let i = 0; i < 99; i++) budget.sent(0)
    // 20% of 99 is 19.8: 19 more.
    expect(allowedAt(budget, 0)).toBe(119)
    budget.sent(0)
    expect(allowedAt(budget, 0)).toBe(1)
  })

  it("a second's calls and retries count for 10 s: gone at the start of the 11th second after theirs", () => {
    const budget = RetryBudget.make(50)
    for (let i = 0; i < 40; i++) budget.sent(1_999)
    expect(allowedAt(budget, 1_500)).toBe(120)
    expect(budget.counts(10_999)).toEqual({ calls: 40, retries: 120 })
    expect(budget.take(10_999)).toBe("refused")
    // Second 1's retries and calls leave the window at 11 s: the floor alone, all of it free again.
    expect(budget.counts(11_000)).toEqual({ calls: 0, retries: 0 })
    expect(allowedAt(budget, 11_000)).toBe(100)
  })

  it("counts a slice of the window per second: the oldest second leaves while the others stay", () => {
    const budget = RetryBudget.make(0)
    expect(allowedAt(budget, 0)).toBe(100)
    // Nothing at 1-9 s; at 10 s second 0 has left.
    expect(budget.counts(9_999).retries).toBe(100)
    expect(budget.counts(10_000).retries).toBe(0)
    // Retries spread over seconds 10-19: at 20.5 s only those of 11-19 are left.
    for (let s = 10; s < 20; s++) {
      for (let i = 0; i < 10; i++) budget.take(s * 1000)
    }
    expect(budget.counts(20_500).retries).toBe(90)
    expect(allowedAt(budget, 20_500)).toBe(10)
  })
})
