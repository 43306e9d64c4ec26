/**
 * What every `WebhookDedupeStore` must do, checked the same way for the in-memory store (test/Webhooks.test.ts, on
 * the TestClock) and the Redis one (test/redis/stores.test.ts, on real time).
 */
import { expect } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Webhooks from "../src/Webhooks.js"

const tokenOf = (claim: Webhooks.Claim): string => {
  if (claim._tag !== "Claimed") throw new Error(`expected a claim, got ${claim._tag}`)
  return claim.token
}

/**
 * Runs the contract against `store`. `shortTtl` is a claim TTL that `pastShortTtl` (the TestClock adjusted, or a real
 * sleep) outlives.
 */
export const dedupeStoreContract = (
  store: Webhooks.WebhookDedupeStoreService,
  shortTtl: Duration.Duration,
  pastShortTtl: Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const minute = Duration.minutes(1)
    const newest = 1_775_324_306_843_132

    // One claim per event; a release with another token changes nothing.
    const first = tokenOf(yield* store.claim("evt-1", "ref-1", minute))
    expect((yield* store.claim("evt-1", "ref-1", minute))._tag).toBe("InProgress")
    yield* store.release("evt-1", "ref-1", "not-the-token")
    expect((yield* store.claim("evt-1", "ref-1", minute))._tag).toBe("InProgress")
    expect(yield* store.renew("evt-1", "ref-1", "not-the-token", minute)).toBe(false)
    expect(yield* store.renew("evt-1", "ref-2", first, minute)).toBe(false)
    expect(yield* store.renew("evt-1", "ref-1", first, minute)).toBe(true)

    // The claim holds its reference: another event of it is refused and nothing is claimed for it.
    expect((yield* store.claim("evt-0", "ref-1", minute))._tag).toBe("ReferenceBusy")
    expect((yield* store.claim("evt-other", "ref-2", minute))._tag).toBe("Claimed")

    // Release frees both.
    yield* store.release("evt-1", "ref-1", first)
    const second = tokenOf(yield* store.claim("evt-1", "ref-1", minute))
    expect((yield* store.claim("evt-0", "ref-1", minute))._tag).toBe("ReferenceBusy")

    // Complete marks the event done, records its created_at and frees the reference.
    yield* store.complete("evt-1", second, { referenceId: "ref-1", order: { key: "ref-1", createdAt: newest, ttl: minute } }, minute)
    expect((yield* store.claim("evt-1", "ref-1", minute))._tag).toBe("Done")
    expect(yield* store.lastHandled("ref-1")).toEqual(Option.some(newest))
    expect(yield* store.lastHandled("ref-3")).toEqual(Option.none())
    // A renewal that comes after (the handler renews while `complete` is under way) answers false and keeps it done.
    expect(yield* store.renew("evt-1", "ref-1", second, minute)).toBe(false)
    expect((yield* store.claim("evt-1", "ref-1", minute))._tag).toBe("Done")

    // An older event of the reference does not move its created_at back. A release with another token keeps the
    // reference held.
    const older = tokenOf(yield* store.claim("evt-0", "ref-1", minute))
    yield* store.release("evt-0", "ref-1", "not-the-token")
    expect((yield* store.claim("evt-9", "ref-1", minute))._tag).toBe("ReferenceBusy")
    yield* store.complete("evt-0", older, { referenceId: "ref-1", order: { key: "ref-1", createdAt: newest - 843_132, ttl: minute } }, minute)
    expect(yield* store.lastHandled("ref-1")).toEqual(Option.some(newest))
    // A done event is answered as done even while its reference is held by another.
    const holder = tokenOf(yield* store.claim("evt-9", "ref-1", minute))
    expect((yield* store.claim("evt-0", "ref-1", minute))._tag).toBe("Done")
    yield* store.release("evt-9", "ref-1", holder)

    // Times before 1970 (negative microseconds) are kept in order too.
    for (const [id, createdAt] of [["evt-p1", -1_000_000], ["evt-p0", -2_000_000]] as const) {
      const token = tokenOf(yield* store.claim(id, "ref-p", minute))
      yield* store.complete(id, token, { referenceId: "ref-p", order: { key: "ref-p", createdAt, ttl: minute } }, minute)
    }
    expect(yield* store.lastHandled("ref-p")).toEqual(Option.some(-1_000_000))

    // An event not kept in order records nothing for its reference.
    const unordered = tokenOf(yield* store.claim("evt-u", "ref-u", minute))
    yield* store.complete("evt-u", unordered, { referenceId: "ref-u" }, minute)
    expect((yield* store.claim("evt-u", "ref-u", minute))._tag).toBe("Done")
    expect(yield* store.lastHandled("ref-u")).toEqual(Option.none())

    // The reference's created_at outlives the event id when its TTL is longer (checked after pastShortTtl below).
    const remembered = tokenOf(yield* store.claim("evt-r", "ref-r", minute))
    yield* store.complete("evt-r", remembered, { referenceId: "ref-r", order: { key: "ref-r", createdAt: newest, ttl: minute } }, shortTtl)

    // A crashed handler's claim expires, its reference with it, and cannot be renewed then; a renewed one lives on.
    const crashed = tokenOf(yield* store.claim("evt-2", "ref-4", shortTtl))
    expect((yield* store.claim("evt-3", "ref-4", minute))._tag).toBe("ReferenceBusy")
    const kept = tokenOf(yield* store.claim("evt-5", "ref-6", shortTtl))
    expect(yield* store.renew("evt-5", "ref-6", kept, minute)).toBe(true)
    const lapsing = tokenOf(yield* store.claim("evt-l", "ref-l", shortTtl))
    yield* pastShortTtl
    // A delivery whose claim lapsed, completing late, leaves the event to the delivery that claimed it since (marked
    // done, that one's handler would lose its claim midway); that one marks it.
    const current = tokenOf(yield* store.claim("evt-l", "ref-l", minute))
    yield* store.complete("evt-l", lapsing, { referenceId: "ref-l" }, minute)
    expect((yield* store.claim("evt-l", "ref-l", minute))._tag).toBe("InProgress")
    expect(yield* store.renew("evt-l", "ref-l", current, minute)).toBe(true)
    yield* store.complete("evt-l", current, { referenceId: "ref-l" }, minute)
    expect((yield* store.claim("evt-l", "ref-l", minute))._tag).toBe("Done")
    expect(yield* store.renew("evt-2", "ref-4", crashed, minute)).toBe(false)
    expect((yield* store.claim("evt-r", "ref-r", minute))._tag).toBe("Claimed")
    expect(yield* store.lastHandled("ref-r")).toEqual(Option.some(newest))
    expect((yield* store.claim("evt-5", "ref-6", minute))._tag).toBe("InProgress")
    expect((yield* store.claim("evt-6", "ref-6", minute))._tag).toBe("ReferenceBusy")
    const next = tokenOf(yield* store.claim("evt-3", "ref-4", minute))
    // The expired claim's late release or completion leaves the new holder's claim on the reference alone.
    yield* store.release("evt-2", "ref-4", crashed)
    expect((yield* store.claim("evt-4", "ref-4", minute))._tag).toBe("ReferenceBusy")
    yield* store.complete("evt-2", crashed, { referenceId: "ref-4", order: { key: "ref-4", createdAt: newest, ttl: minute } }, minute)
    expect((yield* store.claim("evt-4", "ref-4", minute))._tag).toBe("ReferenceBusy")
    // With no claim on it since, the late completion marks the event done: its handler did run.
    expect((yield* store.claim("evt-2", "ref-2b", minute))._tag).toBe("Done")
    yield* store.release("evt-3", "ref-4", next)
    tokenOf(yield* store.claim("evt-4", "ref-4", minute))
  })
