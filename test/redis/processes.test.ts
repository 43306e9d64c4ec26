/**
 * Issue 7: several processes sharing tokens and webhook de-duplication through a real Redis (started by the global
 * set-up), against the emulator over loopback.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { Emulator } from "../../src/emulator/index.js"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import { RedisTokenStore } from "../../src/redis/index.js"
import * as Webhooks from "../../src/Webhooks.js"
import { eventually, redisClient, redisUrl, uniquePrefix, worker } from "./support.js"


// Long enough that a call slowed by a loaded machine still finishes on the token it was retried with.
const lifetime = 5_000
// A call that takes this long can see its token replaced twice (refreshed, with revokeOnIssue revoked, or expired):
// its second 401 is final by design (a revoked client never loops). On a loaded machine some calls take seconds.
const slowAfter = lifetime / 2
// The provider refreshes min(refreshMargin, 10 % of the lifetime) early: 500 ms here.
const refreshEvery = lifetime - lifetime * 0.1

describe("RedisTokenStore across processes", () => {
  for (const revokeOnIssue of [false, true]) {
    it.live(`4 processes x 200 concurrent quotes over several expiries make one token request per expiry (revokeOnIssue: ${revokeOnIssue})`, () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ accessTokenLifetime: Duration.millis(lifetime), revokeOnIssue })
        const prefix = uniquePrefix("quotes")
        const workers = yield* Effect.all(
          Array.from({ length: 4 }, () =>
            worker({
              mode: "quotes",
              redisUrl,
              prefix,
              emulatorUrl: emulator.url,
              credentials: emulator.credentials,
              concurrency: 200,
              slowAfter
            })),
          { concurrency: "unbounded" }
        )
        yield* Effect.forEach(workers, (w) => w.next("ready"), { concurrency: "unbounded", discard: true })
        // 3 lifetimes: the first token and at least two refreshes.
        const until = Date.now() + lifetime * 3
        yield* Effect.forEach(workers, (w) => w.send({ until }), { concurrency: "unbounded", discard: true })
        const results = yield* Effect.forEach(workers, (w) => w.next("quotes"), { concurrency: "unbounded" })

        for (const result of results) {
          expect(result.failed).toEqual({})
          // A slow call may also have run out of time (three 5 s attempts), or lost its connection (800 at once to
          // one in-process server), on a machine loaded with other work: that says nothing about the token requests
          // counted below.
          const slowAllowed = ["AuthenticationError", "TimeoutError", "TransportError"]
          expect(Object.keys(result.failedSlow).filter((tag) => !slowAllowed.includes(tag))).toEqual([])
          // At least a round of 200 each.
          const slow = Object.values(result.failedSlow).reduce((sum, n) => sum + n, 0)
          expect(result.succeeded + slow).toBeGreaterThanOrEqual(200)
        }
        expect(results.reduce((sum, result) => sum + result.succeeded, 0)).toBeGreaterThanOrEqual(200)
        const counters = yield* emulator.counters
        const log = counters.tokenLog
        expect(log.length).toBe(counters.tokensIssued + counters.tokensRefreshed)
        expect(log.length).toBeGreaterThanOrEqual(3)
        // One request per expiry: each came once the one before was due for its refresh, never two for one expiry.
        for (let i = 1; i < log.length; i++) {
          expect(log[i]!.at - log[i - 1]!.at).toBeGreaterThanOrEqual(refreshEvery)
        }
        // The first was issued; the others went through the refresh token kept in Redis.
        expect(log[0]!.kind).toBe("issue")
        expect(log.slice(1).every((entry) => entry.kind === "refresh")).toBe(true)
        // Calls sent just before a refresh can reach the emulator after the old token expired (or was revoked by
        // the refresh): they got a 401, cleared that token in Redis only if it was still there, and succeeded on the
        // shared new one, without a token request of their own (the gaps above).
      }).pipe(Effect.scoped), 90_000)
  }

  it.live("when the lock holder dies mid-refresh, another process takes over once the lock expires", () =>
    Effect.gen(function*() {
      const lockTtl = 1_500
      const prefix = uniquePrefix("takeover")
      // The first token request never gets an answer: its process is killed while it waits.
      const emulator = yield* Emulator.make({ faults: [{ kind: "stall", route: "POST /v1/oauth/token", times: 1 }] })
      const holder = yield* worker({
        mode: "hold",
        redisUrl,
        prefix,
        emulatorUrl: emulator.url,
        credentials: emulator.credentials,
        lockTtl
      })
      yield* eventually(
        Effect.map(emulator.counters, (c) => c.requests["POST /v1/oauth/token"] === 1),
        "the holder's token request"
      )
      const redis = yield* redisClient
      const lockKeys = yield* Effect.promise(() => redis.keys(`${prefix}:token-lock:*`))
      expect(lockKeys).toHaveLength(1)
      yield* holder.kill
      const deadOwner = yield* Effect.promise(() => redis.get(lockKeys[0]!))
      expect(deadOwner).not.toBeNull()

      const client = FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url, timeout: "5 seconds" }).pipe(
        Layer.provide(RedisTokenStore.layer({ url: redisUrl, prefix, lockTtl: Duration.millis(lockTtl) })),
        Layer.provide(FetchHttpClient.layer)
      )
      const call = yield* Effect.fork(
        FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
          .pipe(Effect.provide(client))
      )
      // The new owner respects the dead owner's lock: while the lock is still the dead owner's, no second token
      // request has been made (the count is read first, so the lock was the dead owner's when it was read).
      let checks = 0
      yield* eventually(
        Effect.gen(function*() {
          const requests = (yield* emulator.counters).requests["POST /v1/oauth/token"]
          if ((yield* Effect.promise(() => redis.get(lockKeys[0]!))) !== deadOwner) return true
          expect(requests).toBe(1)
          checks++
          return false
        }),
        "the dead owner's lock to expire"
      )
      expect(checks).toBeGreaterThan(0)
      const quote = yield* Fiber.join(call)
      expect(quote.destination_currency).toBe("CAD")

      const counters = yield* emulator.counters
      expect(counters.requests["POST /v1/oauth/token"]).toBe(2)
      expect(counters.tokensIssued).toBe(1)
      expect(yield* Effect.promise(() => redis.exists(lockKeys[0]!))).toBe(0)
    }).pipe(Effect.scoped), 60_000)
})

// A signed-to-be `beneficiary.status` delivery body.
const statusEvent = (id: string, referenceId: string, createdAt: string) =>
  JSON.stringify({
    event: { id, event_reference_id: referenceId, type: "beneficiary.status", created_at: createdAt, sandbox_mode: true },
    data: {
      type: "INDIVIDUAL",
      active: true,
      status: "ACTIVE",
      customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
      beneficiary_id: referenceId
    }
  })

// Posts a signed body to a worker; the status and the outcome it answered.
const post = (port: number, body: string, secret: string) =>
  Effect.flatMap(Webhooks.sign(body, secret), (headers) =>
    Effect.promise(async () => {
      const response = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body, headers })
      return `${response.status} ${String((await response.json() as { outcome?: unknown }).outcome)}`
    }))

describe("RedisWebhookDedupeStore across processes", () => {
  it.live("when a process dies inside a handler, its event and resource are free again once claimTtl passes", () =>
    Effect.gen(function*() {
      const secret = "whsec_redis_suite"
      const prefix = uniquePrefix("webhooks-kill")
      const referenceId = "20000000-0000-4000-8000-000000000001"
      const hung = statusEvent("20000000-0000-4000-8000-0000000000a1", referenceId, "2026-04-04T17:38:26.000001Z")
      const newer = statusEvent("20000000-0000-4000-8000-0000000000a2", referenceId, "2026-04-04T17:38:26.000002Z")
      // Renewed every second: a renewal late by a stalled event loop (a loaded machine) still comes in time; once the
      // process is dead, the claim expires within the 5 s a newer event of the resource waits for it (referenceWait).
      const job = { mode: "webhooks", redisUrl, prefix, secret, failIds: [], claimTtl: "3 seconds" } as const
      const [dying, survivor] = yield* Effect.all([
        worker({ ...job, hangIds: ["20000000-0000-4000-8000-0000000000a1"] }),
        worker(job)
      ], { concurrency: "unbounded" })
      const [deadPort, livePort] = (yield* Effect.all([dying.next("ready"), survivor.next("ready")], {
        concurrency: "unbounded"
      })).map((ready) => ready.port!)
      // The delivery to the dying process never gets an answer: its connection breaks when the process is killed.
      yield* Effect.forkDaemon(Effect.exit(post(deadPort!, hung, secret)))
      yield* dying.next("started")
      // While it lives, its handler's claim is renewed however long it runs: the event is busy elsewhere.
      expect(yield* post(livePort!, hung, secret)).toBe("409 in_progress")
      yield* Effect.sleep("3 seconds")
      expect(yield* post(livePort!, hung, secret)).toBe("409 in_progress")
      yield* dying.kill
      // Dead, it renews nothing: a newer event of the resource waits (referenceWait, 5 s) until the claim expires.
      expect(yield* post(livePort!, newer, secret)).toBe("200 handled")
      // The dead process's event, redelivered, is now older than what was applied.
      expect(yield* post(livePort!, hung, secret)).toBe("200 stale")
    }).pipe(Effect.scoped), 60_000)


  it.live("4 processes receive the same 500 deliveries at once: each event handled once or stale, in order per resource, a failed one on redelivery", () =>
    Effect.gen(function*() {
      const secret = "whsec_redis_suite"
      const prefix = uniquePrefix("webhooks")
      // 100 resources with 5 status events each, one microsecond apart; each resource's events are sent out of order.
      const perReference = 5
      const permutation = [2, 0, 4, 1, 3]
      const events = Array.from({ length: 500 }, (_, i) => {
        const reference = Math.floor(i / perReference)
        const rank = permutation[(i + reference) % perReference]!
        const id = `00000000-0000-4000-8000-${String(reference * perReference + rank).padStart(12, "0")}`
        const referenceId = `10000000-0000-4000-8000-${String(reference).padStart(12, "0")}`
        return {
          id,
          referenceId,
          rank,
          body: statusEvent(id, referenceId, `2026-04-04T17:38:26.84313${rank}Z`)
        }
      })
      // The newest event of every fifth resource: never stale, so its redelivery is handled.
      const failIds = events.filter((e) => e.rank === perReference - 1 && Number(e.referenceId.slice(-12)) % 5 === 0)
        .map((e) => e.id)
      const workers = yield* Effect.all(
        Array.from({ length: 4 }, () => worker({ mode: "webhooks", redisUrl, prefix, secret, failIds })),
        { concurrency: "unbounded" }
      )
      const ports = yield* Effect.forEach(workers, (w) => Effect.map(w.next("ready"), (m) => m.port!), {
        concurrency: "unbounded"
      })

      const outcomes = new Map<string, Array<string>>()
      // Delivers like the service: again (after a pause) until the receiver answers 2xx.
      const deliver = (event: typeof events[number], port: number) =>
        Effect.gen(function*() {
          for (let attempt = 1; attempt <= 50; attempt++) {
            const answer = yield* post(port, event.body, secret)
            outcomes.set(event.id, [...(outcomes.get(event.id) ?? []), answer])
            if (answer.startsWith("200 ")) return
            yield* Effect.sleep("50 millis")
          }
          return yield* Effect.dieMessage(`${event.id} was never acknowledged by port ${port}`)
        })
      // Every event to the 4 processes at the same moment; 16 events at a time.
      yield* Effect.forEach(
        events,
        (event) => Effect.forEach(ports, (port) => deliver(event, port), { concurrency: "unbounded", discard: true }),
        { concurrency: 16, discard: true }
      )

      yield* Effect.forEach(workers, (w) => w.send("report"), { concurrency: "unbounded", discard: true })
      const reports = yield* Effect.forEach(workers, (w) => w.next("handled"), { concurrency: "unbounded" })
      const handled = reports.flatMap((r) => r.ids)
      expect(new Set(handled).size).toBe(handled.length)
      const allowed = ["200 handled", "200 duplicate", "200 stale", "409 in_progress", "409 reference_busy", "500 failed"]
      for (const event of events) {
        const answers = outcomes.get(event.id)!
        expect(answers.every((a) => allowed.includes(a))).toBe(true)
        // Applied once, or acknowledged once as older than what was applied.
        const settled = answers.filter((a) => a === "200 handled" || a === "200 stale")
        expect(settled).toHaveLength(1)
        expect(handled.includes(event.id)).toBe(settled[0] === "200 handled")
      }
      // Events of one resource were in flight together (else the order below would prove nothing): claims found their
      // resource held by another event.
      expect(reports.reduce((sum, r) => sum + r.busy, 0)).toBeGreaterThan(0)
      // Per resource, across the 4 processes: the events applied, in the order applied, only ever got newer, and the
      // newest was applied.
      const redis = yield* redisClient
      const rankOf = new Map(events.map((e) => [e.id, e.rank]))
      for (const referenceId of new Set(events.map((e) => e.referenceId))) {
        const order = yield* Effect.promise(() => redis.lrange(`${prefix}:test-order:${referenceId}`, 0, -1))
        const ranks = order.map((id) => rankOf.get(id)!)
        expect(ranks.every((rank, i) => i === 0 || rank > ranks[i - 1]!)).toBe(true)
        expect(ranks.at(-1)).toBe(perReference - 1)
      }
      // Each failing event: one failed attempt (answered 500), then handled once on a redelivery.
      for (const id of failIds) {
        expect(outcomes.get(id)!.filter((a) => a === "500 failed")).toHaveLength(1)
        expect(yield* Effect.promise(() => redis.get(`${prefix}:test-attempt:${id}`))).toBe("2")
      }
      const others = events.filter((e) => !failIds.includes(e.id))
      expect(others.every((e) => !outcomes.get(e.id)!.includes("500 failed"))).toBe(true)
    }).pipe(Effect.scoped), 120_000)
})
