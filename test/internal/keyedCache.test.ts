import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as KeyedCache from "../../src/internal/keyedCache.js"
import { interruptedAtFirstFork } from "../support.js"

describe("internal/keyedCache", () => {
  // The cache's clock reads whole microseconds, and TestClock floors its floating-point time: `now + ttl` landed a
  // microsecond past the reading a lifetime later for a few starting times, and the entry outlived its lifetime.
  it.scoped("an entry is looked up again once its lifetime has passed, from any starting time", () =>
    Effect.gen(function*() {
      const stale: Array<number> = []
      for (let k = 0; k < 200; k++) {
        let lookups = 0
        const cache = yield* KeyedCache.make({
          lookup: (key: string) => Effect.sync(() => `${key} ${++lookups}`),
          timeToLive: Duration.seconds(10)
        })
        const start = 1000 + k * 1.001
        yield* TestClock.setTime(start)
        expect(yield* cache.get("a")).toBe("a 1")
        yield* TestClock.adjust("9999 millis")
        expect(yield* cache.get("a")).toBe("a 1")
        yield* TestClock.adjust("1 millis")
        if ((yield* cache.get("a", false)) !== "a 2") stale.push(start)
      }
      expect(stale).toEqual([])
    }))

  // A cache whose lookups each wait for their own gate, opened by the test: lookup i
  // answers `${key} ${i}`.
  const gated = Effect.gen(function*() {
    const gates: Array<Deferred.Deferred<void>> = []
    const cache = yield* KeyedCache.make({
      lookup: (key: string) =>
        Effect.gen(function*() {
          const gate = yield* Deferred.make<void>()
          const i = gates.push(gate)
          yield* Deferred.await(gate)
          return `${key} ${i}`
        }),
      timeToLive: Duration.seconds(10)
    })
    // Waits until lookup `i` has begun, or opens its gate.
    const begun = (i: number) => Effect.repeat(Effect.yieldNow(), { until: () => gates.length >= i })
    const open = (i: number) => Deferred.succeed(gates[i - 1]!, undefined)
    return { cache, gates, begun, open }
  })

  // Failures are never kept (unlike Effect's Cache), nor a success `cacheable` refuses: the next caller looks up again.
  it.scoped("a failure, or a success cacheable refuses, goes to its waiters only: the next caller looks up again", () =>
    Effect.gen(function*() {
      let lookups = 0
      const cache = yield* KeyedCache.make({
        lookup: (key: string) =>
          Effect.suspend(() => ++lookups === 1 ? Effect.fail(`${key} down`) : Effect.succeed(`${key} ${lookups}`)),
        timeToLive: Duration.seconds(10),
        cacheable: (_, value) => value !== "a 2"
      })
      expect(yield* Effect.flip(cache.get("a"))).toBe("a down")
      expect(yield* cache.get("a")).toBe("a 2")
      expect(yield* cache.getIfFresh("a")).toEqual(Option.none())
      expect([yield* cache.get("a"), yield* cache.get("a"), lookups]).toEqual(["a 3", "a 3", 3])
    }))

  // The lookups run in the owner's scope: closing it (the owner shutting down) stops one in flight, and ends its
  // waiters and later callers with the interruption rather than leaving them waiting for ever.
  it.effect("closing the owner's scope interrupts a lookup in flight and ends its waiters, and later callers", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      let begun = 0
      const cache = yield* Scope.extend(
        KeyedCache.make({
          lookup: (_: string) => Effect.zipRight(Effect.sync(() => begun++), Effect.never),
          timeToLive: Duration.seconds(10)
        }),
        scope
      )
      const waiter = yield* Effect.fork(cache.get("a"))
      yield* Effect.repeat(Effect.yieldNow(), { until: () => begun === 1 })
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Fiber.await(waiter))).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(cache.get("b")))).toBe(true)
    }))

  it.scoped("a lone get returns a fresh entry without a lookup", () =>
    Effect.gen(function*() {
      let lookups = 0
      const cache = yield* KeyedCache.make({
        lookup: (key: string) => Effect.sync(() => `${key} ${++lookups}`),
        timeToLive: Duration.seconds(10)
      })
      expect(yield* cache.get("a")).toBe("a 1")
      expect(yield* cache.get("a", false)).toBe("a 1")
      expect(lookups).toBe(1)
    }))

  // Of two lone lookups, the one begun later is kept, whichever ends first; once it has expired, the older one's
  // success replaces it.
  for (const expired of [false, true]) {
    it.scoped(`of two lone lookups the later-begun is kept${expired ? ", until it expires" : ""}`, () =>
      Effect.gen(function*() {
        const { begun, cache, open } = yield* gated
        const first = yield* Effect.fork(cache.get("a", false))
        yield* begun(1)
        const second = yield* Effect.fork(cache.get("a", false))
        yield* begun(2)
        yield* open(2)
        expect(yield* Fiber.join(second)).toBe("a 2")
        if (expired) yield* TestClock.adjust("10 seconds")
        yield* open(1)
        expect(yield* Fiber.join(first)).toBe("a 1")
        expect(yield* cache.getIfFresh("a")).toEqual(Option.some(expired ? "a 1" : "a 2"))
      }))
  }

  it.scoped("a shared lookup that ends after a newer shared one began neither becomes the entry nor ends the newer one", () =>
    Effect.gen(function*() {
      const { begun, cache, gates, open } = yield* gated
      const a = yield* Effect.fork(cache.get("k"))
      yield* begun(1)
      // A lone lookup's success replaces the shared one's entry; once it expires, another shared lookup begins.
      const b = yield* Effect.fork(cache.get("k", false))
      yield* begun(2)
      yield* open(2)
      expect(yield* Fiber.join(b)).toBe("k 2")
      yield* TestClock.adjust("10 seconds")
      const c = yield* Effect.fork(cache.get("k"))
      yield* begun(3)
      yield* open(1)
      expect(yield* Fiber.join(a)).toBe("k 1")
      expect(yield* cache.getIfFresh("k")).toEqual(Option.none())
      // Still one lookup in flight for the key: a new caller waits for the third.
      const d = yield* Effect.fork(cache.get("k"))
      yield* open(3)
      expect([yield* Fiber.join(c), yield* Fiber.join(d), gates.length]).toEqual(["k 3", "k 3", 3])
    }))

  // An interruption can reach the first caller right after it forked the lookup (the fiber yields every 2,048 steps,
  // and another fiber may interrupt it then); a supervisor that interrupts it as it forks stands in for that moment.
  it.scoped("a first caller interrupted as it forks the lookup leaves it recorded: the next caller joins it", () =>
    Effect.gen(function*() {
      const { begun, cache, gates, open } = yield* gated
      const first = yield* Effect.fork(interruptedAtFirstFork(cache.get("a")))
      yield* begun(1)
      yield* Fiber.await(first)
      const second = yield* Effect.fork(cache.get("a"))
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      expect(gates.length).toBe(1)
      yield* open(1)
      expect(yield* Fiber.join(second)).toBe("a 1")
    }))

  // A caller can find no entry, then wait for the lock while another caller records its lookup (a fiber yields every
  // 2,048 steps): under the lock it must join that lookup, not start a second one. A caller started from inside the
  // first lookup's construction (which runs under the lock) stands in for that moment.
  it.scoped("a caller that found no entry before another's lookup was recorded joins that lookup", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      // The test's runtime: its TestClock, which the cache's entries are timed on.
      const runFork = Runtime.runFork(yield* Effect.runtime<never>())
      let lookups = 0
      let late: Fiber.RuntimeFiber<string> | undefined
      const cache: KeyedCache.KeyedCache<string, string, never> = yield* KeyedCache.make({
        lookup: (key: string) => {
          late ??= runFork(Effect.suspend(() => cache.get(key)))
          return Effect.as(Deferred.await(gate), `${key} ${++lookups}`)
        },
        timeToLive: Duration.seconds(10)
      })
      const first = yield* Effect.fork(cache.get("a"))
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      yield* Deferred.succeed(gate, undefined)
      expect([yield* Fiber.join(first), yield* Fiber.join(late!), lookups]).toEqual(["a 1", "a 1", 1])
    }))
})
