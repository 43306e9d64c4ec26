import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Chaos from "../scripts/lib/chaos.js"
import * as FinError from "../src/FinError.js"

// The reduced chaos run of `npm test` (the full one is `npm run chaos`): every property of the full run, plus the
// secrets check over everything it logged, raised, traced and measured.
describe("chaos (reduced)", () => {
  it.live("every call ends in success or a typed error, within the policy, leaving nothing open or secret", () =>
    Effect.gen(function*() {
      const report = yield* Chaos.run({
        ...Chaos.fullRun,
        fees: 500,
        subdivisions: 100,
        capture: true
      })
      const failures = Object.values(report.failuresByTag).reduce((a, b) => a + b, 0)
      expect(report.successes + failures).toBe(report.calls)
      expect(report.defects).toBe(0)
      expect(report.interruptions).toBe(0)
      expect(report.unhandledRejections).toBe(0)
      expect(Object.values(report.faultsInjected).reduce((a, b) => a + b, 0)).toBeGreaterThan(50)
      expect(report.maxAttempts).toBeLessThanOrEqual(report.options.maxRetries + 2)
      expect(report.tokenRequests).toBeLessThanOrEqual(3 * (report.tokenTroubleEvents + 1))
      expect(report.liveFibersAfter).toBe(0)
      expect(report.socketsAfter).toBeLessThanOrEqual(report.socketsBefore)
      // Every failure tag is one of the documented seven.
      for (const tag of Object.keys(report.failuresByTag)) expect(FinError.isFinError({ _tag: tag })).toBe(true)
      // Secrets: the client secret and every token the emulator issued (emu_at_*/emu_rt_*) appear nowhere.
      const everything = report.captured.join("\n")
      expect(report.captured.length).toBeGreaterThan(report.calls)
      expect(everything).toContain("effect-fin: retrying")
      expect(everything).not.toContain(report.secret)
      expect(everything).not.toMatch(/emu_(at|rt)_\d+_[0-9a-f]{8}/)
    }), 120_000)
})
