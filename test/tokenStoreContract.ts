/**
 * What every `TokenStore` must do, checked the same way for the in-memory store (test/TokenStore.test.ts, on the
 * TestClock) and the Redis one (test/redis/stores.test.ts, on real time).
 */
import { expect } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as TokenStore from "../src/TokenStore.js"
import { seedTokens } from "./support.js"

/** A stored pair with its secrets revealed, for comparisons. */
export const plain = (stored: Option.Option<TokenStore.Tokens>) =>
  Option.map(stored, (t) => ({
    access: Redacted.value(t.accessToken),
    refreshAt: t.refreshAt,
    accessUsableUntil: t.accessUsableUntil,
    refresh: t.refreshToken === undefined ? undefined : Redacted.value(t.refreshToken),
    refreshUsableUntil: t.refreshUsableUntil
  }))

const acquired = (lock: TokenStore.Lock): string => {
  if (lock._tag !== "Acquired") throw new Error(`expected the lock, it is held by ${lock.owner}`)
  return lock.owner
}

/**
 * Runs the contract against `store`, whose `lockTtl` is `lockTtlMillis`; `advance` lets that much time pass (the
 * TestClock adjusted, or a real sleep).
 */
export const tokenStoreContract = (
  store: TokenStore.Service,
  lockTtlMillis: number,
  advance: (millis: number) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const pair = (access: string): TokenStore.Tokens => ({
      accessToken: Redacted.make(access),
      refreshAt: now + 60_000,
      accessUsableUntil: now + 90_000,
      refreshToken: Redacted.make(`refresh-of-${access}`),
      refreshUsableUntil: now + 120_000
    })

    // The pair: stored whole; cleared only while the refused token is still the stored one; keys are separate.
    expect(yield* store.get("k")).toEqual(Option.none())
    yield* seedTokens(store, "k", pair("access-1"))
    expect(plain(yield* store.get("k"))).toEqual(Option.some({
      access: "access-1",
      refreshAt: now + 60_000,
      accessUsableUntil: now + 90_000,
      refresh: "refresh-of-access-1",
      refreshUsableUntil: now + 120_000
    }))
    yield* store.clear("k", Redacted.make("access-0"))
    expect(Option.isSome(yield* store.get("k"))).toBe(true)
    yield* store.clear("k", Redacted.make("access-1"))
    expect(yield* store.get("k")).toEqual(Option.none())
    yield* seedTokens(store, "k", pair("access-2"))
    expect(yield* store.get("other")).toEqual(Option.none())

    // The lock: one owner; only it writes, renews and releases.
    const first = acquired(yield* store.lock("lock"))
    expect(yield* store.lock("lock")).toEqual({ _tag: "Held", owner: first })
    expect(yield* store.set("lock", pair("not-the-owner's"), "not-the-owner")).toBe(false)
    expect(yield* store.renew("lock", "not-the-owner")).toBe(false)
    yield* store.unlock("lock", "not-the-owner")
    expect((yield* store.lock("lock"))._tag).toBe("Held")
    // Renewed, it outlives its first lockTtl.
    yield* advance(lockTtlMillis * 2 / 3)
    expect(yield* store.renew("lock", first)).toBe(true)
    yield* advance(lockTtlMillis * 2 / 3)
    expect((yield* store.lock("lock"))._tag).toBe("Held")
    // Released with a failure: the waiters can read it, for a lockTtl.
    yield* store.unlock("lock", first, "encoded error")
    expect(yield* store.failure("lock")).toEqual(Option.some({ owner: first, error: "encoded error" }))
    const second = acquired(yield* store.lock("lock"))
    // Its owner stops renewing (it died or stalled): the lock expires, the failure too, and someone else takes it.
    yield* advance(lockTtlMillis * 4 / 3)
    expect(yield* store.failure("lock")).toEqual(Option.none())
    const third = acquired(yield* store.lock("lock"))
    // The late owner can neither write a pair nor free the new owner's lock.
    expect(yield* store.set("lock", pair("late"), second)).toBe(false)
    expect(yield* store.get("lock")).toEqual(Option.none())
    yield* store.unlock("lock", second)
    expect(yield* store.lock("lock")).toEqual({ _tag: "Held", owner: third })
    expect(yield* store.set("lock", pair("current"), third)).toBe(true)
    expect(Option.map(plain(yield* store.get("lock")), (t) => t.access)).toEqual(Option.some("current"))
  })
