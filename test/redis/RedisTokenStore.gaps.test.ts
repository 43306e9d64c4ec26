import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { RedisTokenStore } from "../../src/redis/index.js"
import { redisClient, redisUrl, uniquePrefix } from "./support.js"

describe("RedisTokenStore: gaps found by mutation testing", () => {
  it.scopedLive("defaults: lockTtl 10 s, waitInterval 25 ms", () =>
    Effect.gen(function*() {
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix: uniquePrefix("defaults") })
      expect(Duration.toMillis(store.lockTtl)).toBe(10_000)
      expect(Duration.toMillis(store.waitInterval)).toBe(25)
    }))

  it.scopedLive("the pair is kept while either token is of use, not only until its refresh time", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("pair-ttl")
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix })
      const lock = yield* store.lock("k")
      if (lock._tag !== "Acquired") return yield* Effect.dieMessage("lock not acquired")
      const now = Date.now()
      const written = yield* store.set("k", {
        accessToken: Redacted.make("access"),
        refreshAt: now + 1_000,
        accessUsableUntil: now + 30_000,
        refreshToken: Redacted.make("refresh"),
        refreshUsableUntil: now + 3_600_000
      }, lock.owner)
      expect(written).toBe(true)
      const redis = yield* redisClient
      const [key] = yield* Effect.promise(() => redis.keys(`${prefix}:token:*`))
      expect(yield* Effect.promise(() => redis.pttl(key!))).toBeGreaterThan(3_500_000)
    }))
})
