import { describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Closing from "../../src/internal/closing.js"
import * as Monotonic from "../../src/internal/monotonic.js"
import * as Slots from "../../src/internal/slots.js"
import * as TimeLimits from "../../src/internal/timeLimits.js"
import { countListeners } from "../support.js"

// A caller that holds its slot until `release`, noting when it got it; `started` waits until it has.
const holder = (slots: Slots.Slots, log: Array<string>, name: string) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const body = Effect.sync(() => log.push(name)).pipe(
      Effect.zipRight(Deferred.succeed(started, undefined)),
      Effect.zipRight(Deferred.await(release))
    )
    const fiber = yield* Effect.fork(slots.withSlot(() => body, (slot) => slot))
    return { fiber, started: Deferred.await(started), release: Deferred.succeed(release, undefined) }
  })

// Enough turns of the scheduler for a caller that could start to have started.
const settle = Effect.repeatN(Effect.yieldNow(), 20)

// Two callers, the second going only once the first gives its slot back: the line holds exactly one slot still.
const stillOneSlot = (slots: Slots.Slots, log: Array<string>) =>
  Effect.gen(function*() {
    const a = yield* holder(slots, log, "a")
    const b = yield* holder(slots, log, "b")
    yield* a.started
    yield* settle
    expect(log.slice(-1)).toEqual(["a"])
    yield* a.release
    yield* b.started
    yield* b.release
    yield* Fiber.join(b.fiber)
  })

// A wait whose `cut` (which ends it as a timer would: from outside any fiber) the test calls when it likes.
const cutByHand = () => {
  let end: ((exit: Exit.Exit<never, string>) => void) | undefined
  return {
    wait: (slot: Effect.Effect<void, string>, cut: (exit: Exit.Exit<never, string>) => void) =>
      Effect.zipRight(Effect.sync(() => void (end = cut)), slot),
    cut: () => end!(Exit.fail("cut"))
  }
}

describe("Slots", () => {
  it.effect("a wait that fails just after it was served hands its slot on: none is lost", () =>
    Effect.gen(function*() {
      const slots = Slots.make(1)
      const log: Array<string> = []
      const first = yield* holder(slots, log, "first")
      yield* first.started
      // Served, then failing before it runs (a deadline that came at the same moment): the slot must go to `next`.
      const late = yield* Effect.fork(Effect.flip(
        slots.withSlot(() => Effect.sync(() => log.push("late")), (slot) => Effect.zipRight(slot, Effect.fail("cut")))
      ))
      yield* settle
      const next = yield* holder(slots, log, "next")
      yield* settle
      expect(log).toEqual(["first"])
      yield* first.release
      expect(yield* Fiber.join(late)).toBe("cut")
      yield* next.started
      expect(log).toEqual(["first", "next"])
      yield* next.release
      yield* Fiber.join(next.fiber)
      yield* stillOneSlot(slots, log)
    }))

  // Two ways a wait ends before it is served: its own effect fails, or its `cut` is called.
  const giveUps: ReadonlyArray<
    readonly [string, (slots: Slots.Slots, never: () => unknown) => Effect.Effect<string, unknown>]
  > = [
    ["fails", (slots, never) => Effect.flip(slots.withSlot(() => Effect.sync(never), () => Effect.fail("cut")))],
    ["is cut", (slots, never) =>
      Effect.gen(function*() {
        const { cut, wait } = cutByHand()
        const waiting = yield* Effect.fork(Effect.flip(slots.withSlot(() => Effect.sync(never), wait)))
        yield* settle
        cut()
        return yield* Fiber.join(waiting)
      })]
  ]
  for (const [how, giveUp] of giveUps) {
    it.effect(`a wait that ${how} before it is served leaves the line; the slot goes to the one behind`, () =>
      Effect.gen(function*() {
        const slots = Slots.make(1)
        const log: Array<string> = []
        const first = yield* holder(slots, log, "first")
        yield* first.started
        expect(yield* giveUp(slots, () => log.push("never"))).toBe("cut")
        const next = yield* holder(slots, log, "next")
        yield* first.release
        yield* next.started
        expect(log).toEqual(["first", "next"])
        yield* next.release
        yield* Fiber.join(next.fiber)
      }))
  }

  it.effect("a wait cut in the same step as its slot is handed to it passes the slot on: none is lost", () =>
    Effect.gen(function*() {
      const slots = Slots.make(1)
      const log: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.fork(slots.withSlot(() => Deferred.await(gate), (slot) => slot))
      yield* settle
      const { cut, wait } = cutByHand()
      const late = yield* Effect.fork(Effect.flip(slots.withSlot(() => Effect.sync(() => log.push("late")), wait)))
      yield* settle
      const next = yield* holder(slots, log, "next")
      yield* settle
      // The first ends (its fiber woken first, so its slot is handed to `late`, whose turn is then already cut).
      yield* Effect.sync(() => {
        Deferred.unsafeDone(gate, Exit.void)
        cut()
      })
      expect(yield* Fiber.join(late)).toBe("cut")
      yield* Fiber.join(first)
      yield* next.started
      expect(log).toEqual(["next"])
      yield* next.release
      yield* Fiber.join(next.fiber)
      yield* stillOneSlot(slots, log)
    }))

  it.effect("a slot is given back when what ran in it fails, dies or is interrupted", () =>
    Effect.gen(function*() {
      const slots = Slots.make(1)
      const free = (slot: Effect.Effect<void>) => slot
      yield* Effect.flip(slots.withSlot(() => Effect.fail("failed"), free))
      yield* Effect.exit(slots.withSlot(() => Effect.die("died"), free))
      const held = yield* Effect.fork(slots.withSlot(() => Effect.never, free))
      yield* settle
      yield* Fiber.interrupt(held)
      expect(yield* slots.withSlot(() => Effect.succeed("ran"), free)).toBe("ran")
    }))

  it.effect("a slot kept for a fiber is given back when that fiber ends, once; a late keepUntil keeps nothing", () =>
    Effect.gen(function*() {
      const slots = Slots.make(1)
      const log: Array<string> = []
      const free = (slot: Effect.Effect<void>) => slot
      const gate = yield* Deferred.make<void>()
      const left = yield* Effect.fork(Deferred.await(gate))
      // What ran in the slot ended, but left `left` running with it: the slot stays taken until `left` ends.
      yield* slots.withSlot((held) => Effect.sync(() => held.keepUntil(left)), free)
      const next = yield* holder(slots, log, "next")
      yield* settle
      expect(log).toEqual([])
      yield* Deferred.succeed(gate, undefined)
      yield* next.started
      yield* next.release
      yield* Fiber.join(next.fiber)
      // Told of a fiber only after its slot was given back: nothing is given back a second time.
      let late: Slots.Held | undefined
      yield* slots.withSlot((held) => Effect.sync(() => void (late = held)), free)
      const ended = yield* Effect.fork(Effect.void)
      yield* Fiber.await(ended)
      late!.keepUntil(ended)
      yield* stillOneSlot(slots, log)
    }))
})

describe("TimeLimits.cutAt (a wait for a slot, on the live clock)", () => {
  // A client's closing that counts the listeners registered and not yet removed.
  const countedClosing = () => countListeners({ onClose: Closing.make().onClose })

  // One caller in line behind the holder of the one slot, its wait cut at a deadline a minute away, forked after
  // `before` (steps of its own); returned once it listens for the closing (or after 10,000 turns without).
  const inLine = (before: Effect.Effect<void>) =>
    Effect.gen(function*() {
      const slots = Slots.make(1)
      const closing = countedClosing()
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(slots.withSlot(() => Deferred.await(gate), (slot) => slot))
      yield* Effect.yieldNow()
      const now = yield* Monotonic.millis
      const caller = yield* Effect.fork(
        Effect.zipRight(
          before,
          slots.withSlot(() => Effect.void, TimeLimits.cutAt(now + 60_000, () => "deadline", closing))
        )
      )
      for (let i = 0; closing.listeners === 0 && i < 10_000; i++) yield* Effect.yieldNow()
      const release = Effect.zipRight(Deferred.succeed(gate, undefined), Fiber.join(holder))
      return { caller, closing, release }
    })

  // A wait that ends by being served (the usual end) must not leave its deadline's timer armed (which would hold the
  // wait's closures until the deadline, and keep a process alive that has nothing left to do) nor its listener.
  it.live("a wait served before its deadline clears its timer and stops listening for the closing", () =>
    Effect.acquireUseRelease(
      Effect.sync(() => ({ set: vi.spyOn(globalThis, "setTimeout"), clear: vi.spyOn(globalThis, "clearTimeout") })),
      ({ clear, set }) =>
        Effect.gen(function*() {
          const callsBefore = set.mock.calls.length
          const { caller, closing, release } = yield* inLine(Effect.void)
          expect(closing.listeners).toBe(1)
          // The wait's timer: the one set since, for about the minute left.
          const armed = set.mock.results.filter((_, i) =>
            i >= callsBefore && Number(set.mock.calls[i]![1]) > 30_000
          ).map((result) => result.value)
          expect(armed).toHaveLength(1)
          yield* release
          yield* Fiber.join(caller)
          expect(clear.mock.calls.some(([timer]) => timer === armed[0])).toBe(true)
          expect(closing.listeners).toBe(0)
        }),
      ({ clear, set }) =>
        Effect.sync(() => {
          set.mockRestore()
          clear.mockRestore()
        })
    ))

  // One caller in line, interrupted as soon as it listens for the closing, after `pad` steps of its own (so that its
  // op budget runs out, and the fiber yields, at a different point in each trial).
  const trial = (pad: number) =>
    Effect.gen(function*() {
      let steps: Effect.Effect<void> = Effect.void
      for (let k = 0; k < pad; k++) steps = Effect.flatMap(steps, () => Effect.void)
      const { caller, closing, release } = yield* inLine(steps)
      // A caller that never listened proves nothing (and would make every trial pass): counted as a leak.
      const listened = closing.listeners === 1
      yield* Fiber.interrupt(caller)
      yield* release
      return listened ? closing.listeners : -1
    })

  // The timer and the listener are set and guarded in one step: an interruption that came between the two, wherever
  // the fiber yields (every 2,048 steps by default), left the listener in the closing's set, and the timer armed.
  it.live("an interrupted wait leaves no closing listener behind, wherever the fiber yields", () =>
    Effect.gen(function*() {
      const left: Array<number> = []
      for (let pad = 0; pad < 2200; pad += 1) {
        if ((yield* trial(pad)) !== 0) left.push(pad)
      }
      expect(left).toEqual([])
    }), 60_000)
})
