import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as KeyedCache from "../../src/internal/keyedCache.js"

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
})
