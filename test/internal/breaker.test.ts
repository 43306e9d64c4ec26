import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Breaker from "../../src/internal/breaker.js"
import * as Monotonic from "../../src/internal/monotonic.js"

// A breaker over string errors: "down" (or "down long") opens it, "refused" is an answer, "mine" is the caller's own
// limit.
const judge = (error: string): Breaker.Verdict =>
  error.startsWith("down") ? "down" : error === "mine" ? "unknown" : "up"

// How long a refused caller is told to wait, in milliseconds (or the error that was no refusal).
const retryIn = (error: string | Breaker.CircuitOpen<string>) =>
  typeof error === "string" ? error : Duration.toMillis(error.retryIn)

const make = Effect.gen(function*() {
  const events: Array<string> = []
  const breaker = yield* Breaker.make<string>({
    // A failure that asks for a longer wait (a Retry-After) has a longer cool-down.
    cooldown: (error) => Duration.seconds(error === "down long" ? 30 : 10),
    onOpen: (error, again) => Effect.sync(() => events.push(`${again ? "reopen" : "open"} ${error}`)),
    onClose: (error, openFor) => Effect.sync(() => events.push(`close ${error} ${Duration.toMillis(openFor)}`))
  })
  // A caller whose one request ends with `outcome`; it reports whether it was the probe.
  const call = (outcome: Effect.Effect<void, string>) =>
    breaker.guard((probe) => Effect.as(breaker.track(outcome, judge), probe))
  // One failure opens it, and its cool-down passes.
  const cooledDown = Effect.zipRight(Effect.flip(call(Effect.fail("down"))), TestClock.adjust("10 seconds"))
  return { breaker, events, call, cooledDown }
})

describe("internal/breaker", () => {
  it.effect("opens on a failure judged down, lets one probe in after the cool-down, and closes on its answer", () =>
    Effect.gen(function*() {
      const { call, events } = yield* make
      expect(yield* Effect.flip(call(Effect.fail("down")))).toBe("down")
      const open = yield* Effect.flip(call(Effect.void))
      expect(open).toMatchObject({ _tag: "CircuitOpen", error: "down", probing: false })
      expect(retryIn(open)).toBe(10_000)
      yield* TestClock.adjust("4 seconds")
      expect(retryIn(yield* Effect.flip(call(Effect.void)))).toBe(6_000)
      yield* TestClock.adjust("6 seconds")
      expect(yield* call(Effect.fail("refused")).pipe(Effect.flip)).toBe("refused")
      expect(yield* call(Effect.void)).toBe(false)
      expect(events).toEqual(["open down", "close down 10000"])
    }))

  // The breaker's clock reads whole microseconds, and TestClock floors its floating-point time: `now + cooldown` landed
  // a microsecond past the reading a cool-down later for a few starting times, and the cool-down lasted longer.
  it.effect("a cool-down ends when it has passed, from any starting time", () =>
    Effect.gen(function*() {
      const late: Array<number> = []
      for (let k = 0; k < 300; k++) {
        const { call } = yield* make
        // Today's times too, and a time far past them, where a millisecond number holds fewer fractional digits.
        const start = [1000, 1.7e12, 2e13][k % 3]! + k * 1.001 + k * 0.000123
        yield* TestClock.setTime(start)
        yield* Effect.flip(call(Effect.fail("down")))
        yield* TestClock.adjust("10 seconds")
        if (!(yield* call(Effect.succeed("up")).pipe(Effect.orElseSucceed(() => false)))) late.push(start)
      }
      expect(late).toEqual([])
    }))

  it.effect("a probe that sends no request frees the probe for the next caller", () =>
    Effect.gen(function*() {
      const { breaker, cooledDown } = yield* make
      yield* cooledDown
      expect(yield* breaker.guard((probe) => Effect.succeed(probe))).toBe(true)
      expect(yield* breaker.guard((probe) => Effect.succeed(probe))).toBe(true)
    }))

  it.effect("a probe whose effect throws while being built frees the probe too", () =>
    Effect.gen(function*() {
      const { breaker, cooledDown } = yield* make
      yield* cooledDown
      const thrown = yield* Effect.exit(breaker.guard((): Effect.Effect<boolean> => {
        throw new Error("boom")
      }))
      expect(Exit.isFailure(thrown) && Cause.isDie(thrown.cause)).toBe(true)
      expect(yield* breaker.guard((probe) => Effect.succeed(probe))).toBe(true)
    }))

  it.effect("while a probe is out, others are kept out; a probe ended by the caller's own limit frees it", () =>
    Effect.gen(function*() {
      const { breaker, call, cooledDown, events } = yield* make
      yield* cooledDown
      const probe = yield* Effect.fork(call(Effect.zipRight(Effect.sleep("1 second"), Effect.fail("mine"))))
      yield* Effect.yieldNow()
      const kept = yield* Effect.flip(call(Effect.void))
      expect(kept).toMatchObject({ _tag: "CircuitOpen", probing: true })
      expect(breaker.isOpen()).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(yield* Effect.flip(Fiber.join(probe))).toBe("mine")
      // So does one whose request died or was interrupted: neither says the service answered.
      expect(Exit.isFailure(yield* Effect.exit(call(Effect.die("bug"))))).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(call(Effect.interrupt)))).toBe(true)
      expect(yield* call(Effect.void)).toBe(true)
      expect(events).toEqual(["open down", "close down 11000"])
    }))

  // A caller's own limit (a timeout, an aborted signal) interrupts it: the breaker holds no caller past it.
  it.effect("a caller is interruptible while its request runs, closed or as the probe, which is then freed", () =>
    Effect.gen(function*() {
      const { breaker, cooledDown } = yield* make
      for (const before of [Effect.void, cooledDown]) {
        yield* before
        const fiber = yield* Effect.fork(breaker.guard(() => breaker.track(Effect.never, judge)))
        yield* Effect.yieldNow()
        expect(Exit.isInterrupted(yield* Fiber.interrupt(fiber))).toBe(true)
      }
      expect(yield* breaker.guard((probe) => Effect.succeed(probe))).toBe(true)
    }))

  // How long it was open counts from the first failure, across reopenings (the recovery line says so).
  it.effect("a failed probe reopens for its own failure's cool-down, said again; the close counts from the first", () =>
    Effect.gen(function*() {
      const { call, cooledDown, events } = yield* make
      yield* cooledDown
      yield* Effect.flip(call(Effect.fail("down long")))
      const open = yield* Effect.flip(call(Effect.void))
      expect(open).toMatchObject({ _tag: "CircuitOpen", error: "down long", probing: false })
      expect(retryIn(open)).toBe(30_000)
      expect(events).toEqual(["open down", "reopen down long"])
      yield* TestClock.adjust("30 seconds")
      expect(yield* call(Effect.void)).toBe(true)
      expect(events).toEqual(["open down", "reopen down long", "close down long 40000"])
    }))

  it.effect("a request that began before the last change counts for nothing", () =>
    Effect.gen(function*() {
      const { call, events } = yield* make
      const old = yield* Effect.fork(call(Effect.zipRight(Effect.sleep("15 seconds"), Effect.fail("down"))))
      yield* Effect.yieldNow()
      yield* Effect.flip(call(Effect.fail("down")))
      yield* TestClock.adjust("10 seconds")
      expect(yield* call(Effect.void)).toBe(true)
      yield* TestClock.adjust("5 seconds")
      yield* Effect.flip(Fiber.join(old))
      // Still closed: let in, and not as a probe.
      expect(yield* call(Effect.void)).toBe(false)
      expect(events).toEqual(["open down", "close down 10000"])
    }))

  // An interruption can reach the probe's caller between its admission and the watch of its outcome (it arrives as
  // the breaker reads its clock here): the probe must be freed all the same, or no caller would ever be let in again.
  it.effect("a probe interrupted as it is admitted frees the probe", () =>
    Effect.gen(function*() {
      const { breaker, cooledDown } = yield* make
      yield* cooledDown
      const base = yield* Effect.clock
      let armed = true
      const clock: Clock.Clock = Object.create(base, {
        unsafeCurrentTimeNanos: {
          value: () => {
            if (armed) {
              armed = false
              Option.getOrThrow(Fiber.getCurrentFiber()).unsafeInterruptAsFork(FiberId.none)
            }
            return base.unsafeCurrentTimeNanos()
          }
        }
      })
      const admitted = yield* Fiber.await(yield* Effect.fork(Effect.withClock(breaker.guard(Effect.succeed), clock)))
      expect(Exit.isInterrupted(admitted)).toBe(true)
      expect(yield* breaker.guard((probe) => Effect.succeed(probe))).toBe(true)
    }))
})

// The breaker's clock, and every local time limit's.
describe("internal/monotonic", () => {
  // Whole microseconds, not whole milliseconds: a cool-down or a deadline begun mid-millisecond lasts its full length.
  it.effect("reads the clock to the microsecond", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(1000.5)
      expect(yield* Monotonic.millis).toBe(1000.5)
    }))

  // A reading's number can be a hair below its microsecond (1.005 * 1000 is 1004.9999999999999): `plus` rounds it to
  // the grid, not down off it, and a duration's part finer than a microsecond is dropped.
  it("plus lands exactly on the microsecond grid", () => {
    expect(Monotonic.plus(1.005, Duration.millis(1))).toBe(2.005)
    expect(Monotonic.plus(0, Duration.nanos(1500n))).toBe(0.001)
    expect(Monotonic.plus(1, Duration.infinity)).toBe(Infinity)
  })
})
