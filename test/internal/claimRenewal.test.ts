import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as ClaimRenewal from "../../src/internal/claimRenewal.js"
import * as Monotonic from "../../src/internal/monotonic.js"
import { WebhookDedupeStoreError, type WebhookDedupeStoreService } from "../../src/internal/webhookDedupe.js"

// A 3 s claim: its handler is stopped by 2.7 s (a tenth before it could lapse) unless a renewal succeeds.
const claimTtl = Duration.seconds(3)

const unused = () => Effect.die("not used by the renewal")

// A claim taken at 0 in a store whose renewals (the `n`th, from 1) answer as `renew` says; when each was sent, and
// when the work was stopped or ended, are recorded.
const make = (renew: (n: number) => Effect.Effect<boolean, WebhookDedupeStoreError>) => {
  const sent: Array<number> = []
  const store: WebhookDedupeStoreService = {
    claim: unused,
    complete: unused,
    release: unused,
    lastHandled: unused,
    renew: () =>
      Effect.flatMap(Monotonic.millis, (now) => {
        sent.push(now)
        return renew(sent.length)
      })
  }
  const renewal: ClaimRenewal.Renewal = {
    store,
    eventId: "evt_1",
    referenceId: "ref_1",
    token: "token",
    claimTtl,
    held: { at: 0 },
    guarded: (_store, _operation, self) => self,
    outageBegins: () => Effect.succeed(false)
  }
  return { sent, renewal }
}

// Work that runs until it is stopped, its release taking `releaseMillis`; `ended` holds when it was stopped.
const endless = (releaseMillis = 0) => {
  const ended: Array<number> = []
  const work = Effect.never.pipe(
    Effect.onInterrupt(() =>
      Effect.zipRight(
        Effect.flatMap(Monotonic.millis, (now) => Effect.sync(() => ended.push(now))),
        Effect.sleep(releaseMillis)
      )
    )
  )
  return { ended, work }
}

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

// Runs the work under the renewal, the clock moved on by 10 s.
const run = <A, E>(renewal: ClaimRenewal.Renewal, work: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(ClaimRenewal.renewingWhile(renewal, work, () => Effect.void))
    yield* TestClock.adjust("10 seconds")
    return yield* Fiber.await(fiber)
  })

describe("internal/claimRenewal", () => {
  it.effect("renews every third of the claim's time while the work runs, and gives the work's answer", () =>
    Effect.gen(function*() {
      const { renewal, sent } = make(() => Effect.succeed(true))
      const exit = yield* run(renewal, Effect.as(Effect.sleep("9500 millis"), "done"))
      expect(exit).toEqual(Exit.succeed("done"))
      expect(sent).toEqual([1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000])
      expect(renewal.held.at).toBe(9000)
    }))

  it.effect("stops the work a tenth of the claim's time before it lapses when the store does not answer", () =>
    Effect.gen(function*() {
      const { renewal, sent } = make(() => Effect.never)
      const { ended, work } = endless()
      const exit = yield* run(renewal, work)
      expect(failureOf(exit)).toEqual(new ClaimRenewal.ClaimLost(ClaimRenewal.unrenewed))
      expect(ended).toEqual([2700])
      expect(sent[0]).toBe(1000)
    }))

  it.effect("stops the work before the claim lapses when every renewal fails, tried sooner as its end nears", () =>
    Effect.gen(function*() {
      const { renewal, sent } = make(() =>
        Effect.fail(new WebhookDedupeStoreError({ operation: "renew", message: "unreachable" }))
      )
      const { ended, work } = endless()
      const exit = yield* run(renewal, work)
      expect(failureOf(exit)).toEqual(new ClaimRenewal.ClaimLost(ClaimRenewal.unrenewed))
      expect(sent).toEqual([1000, 1850, 2275, 2487.5, 2593.75])
      expect(ended).toEqual([2593.75])
    }))

  it.effect("stops the work at once when a renewal finds the claim gone, and renews it no more", () =>
    Effect.gen(function*() {
      const { renewal, sent } = make(() => Effect.succeed(false))
      const { ended, work } = endless(2000)
      const exit = yield* run(renewal, work)
      const gone = new ClaimRenewal.ClaimLost("the claim on the event expired while its handler ran")
      expect(failureOf(exit)).toEqual(gone)
      expect(ended).toEqual([1000])
      expect(sent).toEqual([1000])
    }))

  it.effect("renews onward while stopped work releases what it holds, and no longer once it has ended", () =>
    Effect.gen(function*() {
      // The first renewal is never answered; the store answers again once the work is stopped.
      const { renewal, sent } = make((n) => n === 1 ? Effect.never : Effect.succeed(true))
      const { ended, work } = endless(2000)
      const exit = yield* run(renewal, work)
      expect(failureOf(exit)).toEqual(new ClaimRenewal.ClaimLost(ClaimRenewal.unrenewed))
      expect(ended).toEqual([2700])
      // Its release ends at 4.7 s: renewed at 2.8 s (a thirtieth of the claim's time on), then every third.
      expect(sent).toEqual([1000, 2800, 3800])
    }))

  it.effect("a renewal that dies stops the work as the store's defect", () =>
    Effect.gen(function*() {
      const { renewal } = make(() => Effect.die("driver bug"))
      const { ended, work } = endless()
      const exit = yield* run(renewal, work)
      expect(failureOf(exit)).toEqual(new ClaimRenewal.RenewalDied("driver bug"))
      expect(ended).toEqual([1000])
    }))

  it.effect("a failure of the work once stopped is given to onStoppedFailure", () =>
    Effect.gen(function*() {
      const { renewal } = make(() => Effect.succeed(false))
      const said: Array<Cause.Cause<unknown>> = []
      const work = Effect.ensuring(Effect.never, Effect.die("commit failed"))
      const fiber = yield* Effect.fork(
        ClaimRenewal.renewingWhile(renewal, work, (cause) => Effect.sync(() => said.push(cause)))
      )
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.await(fiber)
      expect(said.map((cause) => Cause.isDie(cause))).toEqual([true])
    }))

  it.effect("a failure of work that ended by itself is not given to onStoppedFailure: the caller answers it", () =>
    Effect.gen(function*() {
      const { renewal } = make(() => Effect.succeed(true))
      const said: Array<Cause.Cause<unknown>> = []
      const work = Effect.zipRight(Effect.sleep("1500 millis"), Effect.fail("handler failed"))
      const fiber = yield* Effect.fork(
        ClaimRenewal.renewingWhile(renewal, work, (cause) => Effect.sync(() => said.push(cause)))
      )
      yield* TestClock.adjust("10 seconds")
      expect(failureOf(yield* Fiber.await(fiber))).toBe("handler failed")
      expect(said).toEqual([])
    }))

  it.effect("interrupted while stopped work releases, it leaves no renewal running once the release has ended", () =>
    Effect.gen(function*() {
      // As in the onward test: stopped at 2.7 s, renewed onward from 2.8 s while the work's release runs (to 7.7 s).
      const { renewal, sent } = make((n) => n === 1 ? Effect.never : Effect.succeed(true))
      const { ended, work } = endless(5000)
      const fiber = yield* Effect.fork(ClaimRenewal.renewingWhile(renewal, work, () => Effect.void))
      yield* TestClock.adjust("3 seconds")
      // Its interruption waits for the work's release: the clock moves on meanwhile.
      const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* TestClock.adjust("20 seconds")
      expect(Exit.isInterrupted(yield* Fiber.join(interrupting))).toBe(true)
      expect(ended).toEqual([2700])
      // A renewal left running would keep the claim, and hold the event (409), for good.
      expect(sent.filter((at) => at > 7700)).toEqual([])
    }))

  it("tooLateToStart: too little of the claim left for a renewal before its margin", () => {
    expect(ClaimRenewal.tooLateToStart(claimTtl, 0, 2500)).toBe(false)
    expect(ClaimRenewal.tooLateToStart(claimTtl, 0, 2501)).toBe(true)
    expect(ClaimRenewal.tooLateToStart(claimTtl, 1000, 3500)).toBe(false)
  })
})
