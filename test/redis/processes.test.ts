/**
 * Issue 7: several processes sharing tokens and webhook de-duplication through a real Redis (started by the global
 * set-up), against the emulator over loopback.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Emulator } from "../../src/emulator/index.js"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import { RedisTokenStore } from "../../src/redis/index.js"
import * as Webhooks from "../../src/Webhooks.js"
import { eventually, redisClient, redisUrl, uniquePrefix, worker } from "./support.js"


// Long enough that a call slowed by a loaded machine still finishes on the token it was retried with.
const lifetime = 5_000
// The provider refreshes min(refreshMargin, 10 % of the lifetime) early: 500 ms here.
const refreshEvery = lifetime - lifetime * 0.1

describe("RedisTokenStore across processes", () => {
  for (const revokeOnIssue of [false, true]) {
    it.live(`4 processes x 200 concurrent quotes over several expiries make one token request per expiry (revokeOnIssue: ${revokeOnIssue})`, () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ accessTokenLifetime: lifetime, revokeOnIssue })
        const prefix = uniquePrefix("quotes")
        const workers = yield* Effect.all(
          Array.from({ length: 4 }, () =>
            worker({
              mode: "quotes",
              redisUrl,
              prefix,
              emulatorUrl: emulator.url,
              credentials: emulator.credentials,
              concurrency: 200
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
          expect(result.succeeded).toBeGreaterThanOrEqual(200)
        }
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
      const remaining = yield* Effect.promise(() => redis.pttl(lockKeys[0]!))
      const lockExpires = Date.now() + remaining
      expect(remaining).toBeGreaterThan(0)

      const client = FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url, timeout: "5 seconds" }).pipe(
        Layer.provide(RedisTokenStore.layer({ url: redisUrl, prefix, lockTtl })),
        Layer.provide(FetchHttpClient.layer)
      )
      const quote = yield* FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
        .pipe(Effect.provide(client))
      expect(quote.destination_currency).toBe("CAD")

      const counters = yield* emulator.counters
      expect(counters.requests["POST /v1/oauth/token"]).toBe(2)
      expect(counters.tokensIssued).toBe(1)
      // The new owner respected the dead owner's lock: it fetched only after the lock expired.
      expect(counters.tokenLog[0]!.at).toBeGreaterThanOrEqual(lockExpires - 20)
      expect(yield* Effect.promise(() => redis.exists(lockKeys[0]!))).toBe(0)
    }).pipe(Effect.scoped), 60_000)
})

describe("RedisWebhookDedupeStore across processes", () => {
  it.live("4 processes receive the same 500 deliveries at once: each event handled once, a failed one on redelivery", () =>
    Effect.gen(function*() {
      const secret = "whsec_redis_suite"
      const prefix = uniquePrefix("webhooks")
      const events = Array.from({ length: 500 }, (_, i) => {
        const id = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`
        return {
          id,
          body: JSON.stringify({
            event: {
              id,
              // One reference per event: ordering is not what this test is about.
              event_reference_id: `10000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
              type: "beneficiary.status",
              created_at: "2026-04-04T17:38:26.843132Z",
              sandbox_mode: true
            },
            data: {
              type: "INDIVIDUAL",
              active: true,
              status: "ACTIVE",
              customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
              beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"
            }
          })
        }
      })
      const failIds = events.filter((_, i) => i % 25 === 0).map((e) => e.id)
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
          const headers = yield* Webhooks.sign(event.body, secret)
          for (let attempt = 1; attempt <= 50; attempt++) {
            const answer = yield* Effect.promise(async () => {
              const response = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: event.body, headers })
              return { status: response.status, outcome: String((await response.json() as { outcome?: unknown }).outcome) }
            })
            outcomes.set(event.id, [...(outcomes.get(event.id) ?? []), `${answer.status} ${answer.outcome}`])
            if (answer.status === 200) return
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
      const times = new Map<string, number>()
      for (const id of handled) times.set(id, (times.get(id) ?? 0) + 1)
      expect(handled).toHaveLength(500)
      expect(new Set(handled).size).toBe(500)
      for (const event of events) {
        const answers = outcomes.get(event.id)!
        expect(answers.filter((a) => a === "200 handled")).toHaveLength(1)
        expect(answers.every((a) => ["200 handled", "200 duplicate", "409 in_progress", "500 failed"].includes(a)))
          .toBe(true)
      }
      // Each failing event: one failed attempt (answered 500), then handled once on a redelivery.
      const redis = yield* redisClient
      for (const id of failIds) {
        expect(outcomes.get(id)!.filter((a) => a === "500 failed")).toHaveLength(1)
        expect(yield* Effect.promise(() => redis.get(`${prefix}:test-attempt:${id}`))).toBe("2")
      }
      const others = events.filter((e) => !failIds.includes(e.id))
      expect(others.every((e) => !outcomes.get(e.id)!.includes("500 failed"))).toBe(true)
    }).pipe(Effect.scoped), 120_000)
})
