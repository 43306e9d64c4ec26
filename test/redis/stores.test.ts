/**
 * Issue 7: the Redis stores one operation at a time against a real Redis, and what happens when Redis goes away.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApp from "@effect/platform/HttpApp"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Cause from "effect/Cause"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scheduler from "effect/Scheduler"
import * as Scope from "effect/Scope"
import { Redis } from "ioredis"
import { type CipherGCMTypes, createDecipheriv, createHash, createHmac, hkdfSync } from "node:crypto"
import * as Net from "node:net"
import { runInNewContext } from "node:vm"
import { Emulator } from "../../src/emulator/index.js"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import type * as FinConfig from "../../src/FinConfig.js"
import * as Connection from "../../src/redis/internal/connection.js"
import { RedisTokenStore, RedisWebhookDedupeStore } from "../../src/redis/index.js"
import * as BoundedStore from "../../src/internal/boundedStore.js"
import * as TokenStore from "../../src/TokenStore.js"
import * as Webhooks from "../../src/Webhooks.js"
import { startRedis } from "./server.js"
import { captureLogs, closedPort, defectOf, eventually, seedTokens } from "../support.js"
import { dedupeStoreContract } from "../dedupeStoreContract.js"
import { plain, tokenStoreContract } from "../tokenStoreContract.js"
import { redisClient, redisUrl, uniquePrefix } from "./support.js"


// Whether a try takes the lock of "k": one that fails (runs into the store's timeout while Redis catches up, on a
// loaded machine) is one more try for `eventually`, not the end of the test.
const lockTaken = (store: TokenStore.Service) =>
  Effect.map(Effect.either(store.lock("k")), (lock) => lock._tag === "Right" && lock.right._tag === "Acquired")

// A read before Redis is frozen, under a store timeout of a few hundred milliseconds: a stalled event loop (a loaded
// machine) may time it out, which is not what these tests are about. Locks and claims are not retried so (a timed-out
// one may still be taken): those tests take them through a second store with a long timeout.
const readied = <A, E>(read: Effect.Effect<A, E>) => Effect.retry(read, { times: 5 })

// A second store of the same Redis and prefix for a test's set-up, its timeout long enough for any stall.
const patient = { timeout: "10 seconds" } as const

const tokens = (access: string, refreshAt: number): TokenStore.Tokens => ({
  accessToken: Redacted.make(access),
  refreshAt,
  refreshToken: Redacted.make(`refresh-of-${access}`),
  refreshUsableUntil: refreshAt + 60_000
})

const quote = FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })

// A proxy to the Redis on `port`, not listening yet, whose open connections (`pairs`) the test can cut, and which
// drops what clients send while held (`hold(true)`: a network losing packets).
const cuttableProxy = (port: number) => {
  const pairs = new Set<Net.Socket>()
  let held = false
  const proxy = Net.createServer((downstream) => {
    const upstream = Net.connect(port, "127.0.0.1")
    for (const socket of [downstream, upstream]) {
      pairs.add(socket)
      socket.on("error", () => undefined)
      socket.on("close", () => {
        pairs.delete(socket)
        downstream.destroy()
        upstream.destroy()
      })
    }
    downstream.on("data", (chunk) => held || upstream.write(chunk))
    upstream.pipe(downstream)
  })
  const hold = (on: boolean) => {
    held = on
  }
  return { pairs, proxy, hold }
}

// `proxy` listening on a free loopback port for the scope: its Redis URL.
const listening = (proxy: Net.Server) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))),
      () => Effect.sync(() => proxy.close())
    ),
    () => `redis://127.0.0.1:${(proxy.address() as Net.AddressInfo).port}`
  )

describe("RedisTokenStore", () => {
  it.scopedLive("keeps the token store contract: the pair, the lock, its renewal, expiry and failure", () =>
    Effect.flatMap(
      // Real sleeps of two thirds of lockTtl: the third left is the slack for a loaded machine.
      RedisTokenStore.make({ url: redisUrl, prefix: uniquePrefix("contract"), lockTtl: "2400 millis" }),
      (store) => tokenStoreContract(store, 2400, (millis) => Effect.sleep(millis))
    ))

  it.scopedLive("the key holds the base URL and hashes of the credentials, not them; Redis drops a useless pair", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("scope")
      const emulator = yield* Emulator.make({ clientId: "tenant-42-client" })
      yield* quote.pipe(
        Effect.provide(FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url })),
        Effect.provide(RedisTokenStore.layer({ url: redisUrl, prefix })),
        Effect.provide(FetchHttpClient.layer)
      )
      const redis = yield* redisClient
      const keys = yield* Effect.promise(() => redis.keys(`${prefix}:*`))
      const secret = Redacted.make(emulator.credentials.clientSecret)
      const key = yield* TokenStore.keyFor(emulator.url, "tenant-42-client", secret)
      expect(keys).toEqual([`${prefix}:token:${key}`])
      expect(keys[0]).toContain(emulator.url)
      expect(keys[0]).not.toContain("tenant-42-client")
      expect(keys[0]).not.toContain(emulator.credentials.clientSecret)
      expect(yield* Effect.promise(() => redis.pttl(keys[0]!))).toBeGreaterThan(0)
    }))

  it.scopedLive("a lock left with no expiry (by hand, a restore) gets the store's lockTtl: it holds no fetch off for ever", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("lock-no-expiry")
      const emulator = yield* Emulator.make()
      const { clientId, clientSecret } = emulator.credentials
      const key = yield* TokenStore.keyFor(emulator.url, clientId, Redacted.make(clientSecret))
      const redis = yield* redisClient
      yield* Effect.promise(() => redis.set(`${prefix}:token-lock:${key}`, "gone-long-ago"))
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, lockTtl: "1 second" })
      expect(yield* store.lock(key)).toEqual({ _tag: "Held", owner: "gone-long-ago" })
      const ttl = yield* Effect.promise(() => redis.pttl(`${prefix}:token-lock:${key}`))
      expect(ttl > 0 && ttl <= 1000).toBe(true)
      // A call waiting on it gets its token once the lock has expired.
      yield* quote.pipe(
        Effect.provide(FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url })),
        Effect.provide(Layer.succeed(TokenStore.TokenStore, store)),
        Effect.provide(FetchHttpClient.layer)
      )
      expect((yield* emulator.counters).tokensIssued).toBe(1)
    }))

  // As the memory store's (test/TokenStore.test.ts): the lock taken for a fetch is given back when the client closes
  // mid-fetch, not left to its lockTtl to hold every other process's fetch off.
  it.scopedLive("a client shut down while it fetches under the lock releases it", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("lock-shutdown")
      const emulator = yield* Emulator.make({ faults: [{ kind: "stall", route: "POST /v1/oauth/token" }] })
      const { clientId, clientSecret } = emulator.credentials
      const key = yield* TokenStore.keyFor(emulator.url, clientId, Redacted.make(clientSecret))
      const lockKey = `${prefix}:token-lock:${key}`
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, lockTtl: "1 minute" })
      const redis = yield* redisClient
      const scope = yield* Scope.make()
      const client = yield* Layer.buildWithScope(
        FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url }).pipe(
          Layer.provide(Layer.succeed(TokenStore.TokenStore, store)),
          Layer.provide(FetchHttpClient.layer)
        ),
        scope
      )
      const call = yield* Effect.fork(Effect.exit(Effect.provide(quote, client)))
      yield* eventually(Effect.map(emulator.counters, (c) => c.faults.stall > 0), "the token request stalled")
      expect(yield* Effect.promise(() => redis.exists(lockKey))).toBe(1)
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Fiber.join(call))).toBe(true)
      const released = Effect.map(Effect.promise(() => redis.exists(lockKey)), (n) => n === 0)
      yield* eventually(released, "the lock released", 50)
    }))

  // With no offline queue a lazy client's first command would fail ("not ready yet"), after a wait said as Redis
  // being unreachable.
  it.scopedLive("redisOptions' lazyConnect: the store's own client connects at once all the same", () =>
    Effect.gen(function*() {
      const log = captureLogs()
      const prefix = uniquePrefix("lazy")
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, redisOptions: { lazyConnect: true } }).pipe(
        Effect.provide(log.layer)
      )
      expect(yield* store.get("k")).toEqual(Option.none())
      expect(log.lines.filter((line) => line.startsWith("WARN"))).toEqual([])
    }))

  it.scopedLive("a store provided around the program, beside the client layer, is used too", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("beside")
      const emulator = yield* Emulator.make()
      yield* quote.pipe(
        Effect.provide(Layer.merge(
          FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url }),
          RedisTokenStore.layer({ url: redisUrl, prefix })
        )),
        Effect.provide(FetchHttpClient.layer)
      )
      const redis = yield* redisClient
      expect(yield* Effect.promise(() => redis.keys(`${prefix}:token:*`))).toHaveLength(1)
    }))

  const noKeyOf = (prefix: string) => RedisTokenStore.make({ url: redisUrl, prefix })

  it.scopedLive("encrypts at rest: Redis holds no token, another key or no key reads nothing (with a warning)", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("encrypted")
      const key = Redacted.make(new Uint8Array(32).fill(7))
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, encryptionKey: key })
      yield* seedTokens(store, "k", tokens("secret-access-token", Date.now() + 60_000))
      expect(plain(yield* store.get("k"))).toMatchObject(Option.some({ access: "secret-access-token" }))

      const redis = yield* redisClient
      const stored = yield* Effect.promise(() => redis.hgetall(`${prefix}:token:k`))
      expect(JSON.stringify(stored)).not.toContain("secret-access-token")
      expect(JSON.stringify(stored)).not.toContain("refresh-of-secret-access-token")
      // Not even a plain hash that could confirm a guessed token.
      expect(stored.fp).not.toBe(createHash("sha256").update("secret-access-token").digest("hex"))
      expect(stored.v!.startsWith("e2:")).toBe(true)
      // One key, one use: neither the fingerprint's HMAC nor the cipher runs under the given key itself.
      const raw = new Uint8Array(32).fill(7)
      expect(stored.fp).not.toBe(createHmac("sha256", raw).update("secret-access-token").digest("hex"))
      const sealed = Buffer.from(stored.v!.slice(3), "base64")
      // A fresh IV each time the pair is sealed: GCM under a repeated IV gives away how two texts differ, and lets
      // its tag be forged.
      yield* seedTokens(store, "k", tokens("secret-access-token", Date.now() + 60_000))
      const resealed = yield* Effect.promise(() => redis.hget(`${prefix}:token:k`, "v"))
      expect(Buffer.from(resealed!.slice(3), "base64").subarray(0, 12).equals(sealed.subarray(0, 12))).toBe(false)
      const underRaw = createDecipheriv("aes-256-gcm", raw, sealed.subarray(0, 12))
      underRaw.setAAD(Buffer.from(`${prefix}:token:k`))
      underRaw.setAuthTag(sealed.subarray(sealed.length - 16))
      underRaw.update(sealed.subarray(12, sealed.length - 16))
      expect(() => underRaw.final()).toThrow("Unsupported state or unable to authenticate data")

      const log = captureLogs()
      const base64Key = Redacted.make(Buffer.from(new Uint8Array(32).fill(8)).toString("base64"))
      const otherKey = yield* RedisTokenStore.make({ url: redisUrl, prefix, encryptionKey: base64Key })
      const noKey = yield* RedisTokenStore.make({ url: redisUrl, prefix })
      const reads = yield* Effect.all([otherKey.get("k"), noKey.get("k")]).pipe(
        Effect.provide(log.layer),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      expect(reads).toEqual([Option.none(), Option.none()])
      // Each says why, once (a process polling the pair while it waits would repeat it many times a second).
      yield* Effect.all([otherKey.get("k"), noKey.get("k")]).pipe(Effect.provide(log.layer))
      const warnings = log.lines.filter((line) => line.startsWith("WARN"))
      expect(warnings).toHaveLength(2)
      expect(warnings[0]).toContain("sealed with another encryptionKey")
      expect(warnings[1]).toContain("encrypted, and this process has no encryptionKey")
      // A pair written without a key, read by a process with one: said as such.
      const plainPrefix = uniquePrefix("plain")
      yield* seedTokens(yield* RedisTokenStore.make({ url: redisUrl, prefix: plainPrefix }), "k", tokens("plain-token", Date.now() + 60_000))
      const keyed = yield* RedisTokenStore.make({ url: redisUrl, prefix: plainPrefix, encryptionKey: key })
      yield* keyed.get("k").pipe(Effect.provide(log.layer))
      expect(log.lines.filter((line) => line.startsWith("WARN"))[2]).toContain("not encrypted: written by a process with no encryptionKey")
      // A pair sealed by an older build, read with no key at all: said as such, not as malformed.
      yield* Effect.promise(() => redis.hset(`${plainPrefix}:token:k`, "v", "e1:AAAA"))
      expect(yield* noKeyOf(plainPrefix).pipe(Effect.flatMap((store) => store.get("k")), Effect.provide(log.layer)))
        .toEqual(Option.none())
      expect(log.lines.filter((line) => line.startsWith("WARN"))[3]).toContain("sealed by an older build (e1:)")
      // A pair copied under another key does not decrypt (the key name is authenticated).
      yield* Effect.promise(() => redis.copy(`${prefix}:token:k`, `${prefix}:token:copied`))
      expect(yield* store.get("copied")).toEqual(Option.none())
    }))

  // README: "16, 24 or 32 bytes" means AES-128/192/256, and the keys are derived from yours with HKDF-SHA256, one to
  // seal, one for the HMACs (their names fixed: another build must open what this one sealed).
  it.scopedLive("a 16, 24 or 32-byte key seals with AES-128/192/256-GCM under its HKDF subkey; the HMAC under another",
    () =>
    Effect.gen(function*() {
      const hkdf = (key: Uint8Array, use: string, length: number) =>
        Buffer.from(hkdfSync("sha256", key, new Uint8Array(0), `effect-fin token store: ${use}`, length))
      const redis = yield* redisClient
      for (const size of [16, 24, 32]) {
        const prefix = uniquePrefix(`aes-${size}`)
        const raw = new Uint8Array(size).fill(7)
        const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, encryptionKey: Redacted.make(raw) })
        yield* seedTokens(store, "k", tokens("secret-access-token", Date.now() + 60_000))
        const stored = yield* Effect.promise(() => redis.hgetall(`${prefix}:token:k`))
        expect(stored.fp, `${size}`)
          .toBe(createHmac("sha256", hkdf(raw, "fingerprint", 32)).update("secret-access-token").digest("hex"))
        const sealed = Buffer.from(stored.v!.slice(3), "base64")
        const algorithm = `aes-${size * 8}-gcm` as CipherGCMTypes
        const decipher = createDecipheriv(algorithm, hkdf(raw, "AES-GCM", size), sealed.subarray(0, 12))
        decipher.setAAD(Buffer.from(`${prefix}:token:k`))
        decipher.setAuthTag(sealed.subarray(sealed.length - 16))
        const text = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()])
        expect(JSON.parse(text.toString()).a, `${size}`).toBe("secret-access-token")
      }
    }))

  // Someone who can write to Redis but lacks the key must not be able to fail every process's token step with an
  // error of their making.
  it.scopedLive("with encryptionKey, a failure record not written with the key is ignored; the store's own is read", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("failure-mac")
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, encryptionKey: Redacted.make(new Uint8Array(32).fill(7)) })
      const lock = yield* store.lock("k")
      expect(lock._tag).toBe("Acquired")
      if (lock._tag !== "Acquired") return
      yield* store.unlock("k", lock.owner, "recorded-error")
      expect(yield* store.failure("k")).toEqual(Option.some({ owner: lock.owner, error: "recorded-error" }))
      const redis = yield* redisClient
      yield* Effect.promise(() =>
        redis.set(`${prefix}:token-failure:k`, JSON.stringify({ owner: lock.owner, error: "forged-error" }), "PX", 10_000)
      )
      expect(yield* store.failure("k")).toEqual(Option.none())
    }))

  // The provider's failure record holds the service's answer to a token request: with encryption on, none of it in
  // the clear.
  it.scopedLive("with encryptionKey, a failure record's text is sealed: Redis holds none of it", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("failure-sealed")
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, encryptionKey: Redacted.make(new Uint8Array(32).fill(7)) })
      const lock = yield* store.lock("a")
      if (lock._tag !== "Acquired") return yield* Effect.dieMessage("lock not acquired")
      yield* store.unlock("a", lock.owner, "{\"credentials\":\"hmac-of-the-secret\"}")
      const redis = yield* redisClient
      const raw = (yield* Effect.promise(() => redis.get(`${prefix}:token-failure:a`)))!
      expect(raw).not.toContain("hmac-of-the-secret")
      expect(yield* store.failure("a")).toEqual(
        Option.some({ owner: lock.owner, error: "{\"credentials\":\"hmac-of-the-secret\"}" })
      )
      // A process without the key reads none, not the sealed text as the error its waiting callers would fail with.
      expect(yield* noKeyOf(prefix).pipe(Effect.flatMap((noKey) => noKey.failure("a")))).toEqual(Option.none())
    }))

  it.scopedLive("with encryptionKey, a failure record with a wrong MAC, or copied from another key, is ignored", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("failure-mac-forged")
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix, encryptionKey: Redacted.make(new Uint8Array(32).fill(7)) })
      const lock = yield* store.lock("a")
      if (lock._tag !== "Acquired") return yield* Effect.dieMessage("lock not acquired")
      yield* store.unlock("a", lock.owner, "recorded-error")
      expect(yield* store.failure("a")).toEqual(Option.some({ owner: lock.owner, error: "recorded-error" }))
      const redis = yield* redisClient
      const record = JSON.parse((yield* Effect.promise(() => redis.get(`${prefix}:token-failure:a`)))!)
      // The store's own record, under another client's key: its MAC covers the key name.
      yield* Effect.promise(() => redis.set(`${prefix}:token-failure:b`, JSON.stringify(record), "PX", 10_000))
      expect(yield* store.failure("b")).toEqual(Option.none())
      // A MAC of the right length but wrong, or of another length (no exception either), in characters or in bytes.
      for (const m of ["0".repeat(record.m.length), `${record.m}0`, "0", "\u00e9".repeat(record.m.length)]) {
        yield* Effect.promise(() => redis.set(`${prefix}:token-failure:a`, JSON.stringify({ ...record, m }), "PX", 10_000))
        expect(yield* store.failure("a"), m).toEqual(Option.none())
      }
    }))

  it.scopedLive("a pair whose fingerprint does not match its token is ignored: a replayed old pair cannot outlive a 401", () =>
    Effect.gen(function*() {
      // Someone who can write to Redis (without the key) puts back an old, revoked pair with its `fp` changed: a 401
      // would then clear nothing (clear compares `fp`), and every new process would take the revoked token.
      const prefix = uniquePrefix("replayed")
      const store = yield* RedisTokenStore.make({
        url: redisUrl,
        prefix,
        encryptionKey: Redacted.make(new Uint8Array(32).fill(7))
      })
      yield* seedTokens(store, "k", tokens("revoked-access-token", Date.now() + 60_000))
      const redis = yield* redisClient
      yield* Effect.promise(() => redis.hset(`${prefix}:token:k`, "fp", "junk"))
      const log = captureLogs()
      const read = yield* store.get("k").pipe(Effect.provide(log.layer), Logger.withMinimumLogLevel(LogLevel.All))
      expect(read).toEqual(Option.none())
      expect(log.lines.filter((line) => line.startsWith("WARN") && line.includes("fingerprint"))).toHaveLength(1)
    }))

  it.scopedLive("a pair whose times are not finite (JSON's 1e999) is malformed, not a token good for ever", () =>
    Effect.gen(function*() {
      // Read as Infinity, such a pair would be handed out for ever, and written back (a refused refresh token taken
      // out) with an expiry Redis refuses after the write: a pair of `null`s kept with no expiry.
      const prefix = uniquePrefix("not-finite")
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix })
      const redis = yield* redisClient
      for (const field of ["r", "x", "u"]) {
        yield* seedTokens(store, "k", tokens("access-token", Date.now() + 60_000))
        const value = (yield* Effect.promise(() => redis.hget(`${prefix}:token:k`, "v")))!
        const stored = JSON.stringify({ ...JSON.parse(value), [field]: 1 }).replace(`"${field}":1`, `"${field}":1e999`)
        yield* Effect.promise(() => redis.hset(`${prefix}:token:k`, "v", stored))
        const log = captureLogs()
        const read = yield* store.get("k").pipe(Effect.provide(log.layer), Logger.withMinimumLogLevel(LogLevel.All))
        expect(read, field).toEqual(Option.none())
        expect(log.lines.filter((line) => line.includes("token pair in Redis is malformed")), field).toHaveLength(1)
      }
      // A refresh token without its expiry (`u`) is not handed out: of unknown use, it would be read as usable for
      // ever.
      yield* seedTokens(store, "k", tokens("access-token", Date.now() + 60_000))
      const value = JSON.parse((yield* Effect.promise(() => redis.hget(`${prefix}:token:k`, "v")))!)
      expect(value.t).toBeDefined()
      delete value.u
      yield* Effect.promise(() => redis.hset(`${prefix}:token:k`, "v", JSON.stringify(value)))
      const read = Option.getOrThrow(yield* store.get("k"))
      expect(Redacted.value(read.accessToken)).toBe("access-token")
      expect(read.refreshToken).toBeUndefined()
      expect(read.refreshUsableUntil).toBeUndefined()
    }))

  // Provided only around `FinClient.make` (which keeps the store it was made with), a store closes with that scope:
  // its failures say so, not that Redis is down (an outage that would never end).
  it.scopedLive("a store used past the scope it was made in says so in its failures", () =>
    Effect.gen(function*() {
      const said = /^the store was closed with the scope it was made in/
      const options = { url: redisUrl, prefix: uniquePrefix("closed") }
      const tokens = yield* Effect.scoped(RedisTokenStore.make(options))
      expect((yield* Effect.flip(tokens.get("k"))).message).toMatch(said)
      const dedupe = yield* Effect.scoped(RedisWebhookDedupeStore.make(options))
      expect((yield* Effect.flip(dedupe.release("e", "r", "t"))).message).toMatch(said)
      // A client of the user's stays theirs: the store goes on with it.
      const redis = yield* redisClient
      const borrowed = yield* Effect.scoped(RedisTokenStore.make({ client: redis, prefix: uniquePrefix("borrowed") }))
      expect(yield* borrowed.get("k")).toEqual(Option.none())
    }))

  it.scopedLive("keys of another type (another writer's) are none, with a warning, and the next pair replaces them: sharing heals", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("wrong-type")
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix })
      const redis = yield* redisClient
      yield* Effect.promise(() => redis.set(`${prefix}:token:k`, "not a hash"))
      yield* Effect.promise(() => redis.hset(`${prefix}:token-failure:k`, "x", "1"))
      const log = captureLogs()
      expect(yield* store.get("k").pipe(Effect.provide(log.layer))).toEqual(Option.none())
      expect(log.lines.filter((line) => line.startsWith("WARN") && line.includes("another type"))).toHaveLength(1)
      expect(yield* store.failure("k")).toEqual(Option.none())
      yield* store.clear("k", Redacted.make("some-token"))
      yield* seedTokens(store, "k", tokens("fresh-access-token", Date.now() + 60_000))
      const read = yield* store.get("k")
      expect(Option.map(read, (t) => Redacted.value(t.accessToken))).toEqual(Option.some("fresh-access-token"))
      // A lock key of another type is a lock held by no one of ours (until it expires), not a failure of each step.
      yield* Effect.promise(() => redis.hset(`${prefix}:token-lock:other`, "x", "1"))
      expect(yield* store.lock("other")).toEqual({ _tag: "Held", owner: "" })
      expect(yield* store.renew("other", "someone")).toBe(false)
      yield* store.unlock("other", "someone")
      yield* store.unlock("other", "someone", "a failure")
    }))

  it.scopedLive("a server that answers in another form than Redis (a proxy, a look-alike) is a TokenStoreError, no defect", () =>
    Effect.gen(function*() {
      // Answers INFO (the client's ready check) as Redis does, and every other command with `reply`.
      const lookAlike = (reply: string) =>
        Effect.acquireRelease(
          Effect.async<{ readonly port: number; readonly server: Net.Server }>((resume) => {
            const server = Net.createServer((socket) => {
              socket.on("error", () => undefined)
              socket.on("data", (chunk) => {
                for (const command of String(chunk).match(/\*\d+\r\n\$\d+\r\n[A-Za-z]+/g) ?? []) {
                  const info = "# Server\r\nloading:0\r\n"
                  socket.write(/INFO$/i.test(command) ? `$${info.length}\r\n${info}\r\n` : reply)
                }
              })
            })
            server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (server.address() as Net.AddressInfo).port, server })))
          }),
          ({ server }) => Effect.sync(() => void server.close())
        )
      for (const reply of [":5\r\n", "$-1\r\n", "*2\r\n:1\r\n:2\r\n", "+OK\r\n"]) {
        const { port } = yield* lookAlike(reply)
        const store = yield* RedisTokenStore.make({ url: `redis://127.0.0.1:${port}`, timeout: "2 seconds" })
        const exits: ReadonlyArray<readonly [string, Exit.Exit<unknown, TokenStore.TokenStoreError>]> = [
          ["get", yield* Effect.exit(store.get("k"))],
          ["lock", yield* Effect.exit(store.lock("k"))]
        ]
        for (const [operation, exit] of exits) {
          expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : exit).toMatchObject({
            _tag: "TokenStoreError",
            operation
          })
        }
      }
    }))

  // A Redis URL may hold a password: given Redacted, it is used as the text.
  it.scopedLive("a url given Redacted connects as its text does", () =>
    Effect.gen(function*() {
      const store = yield* RedisTokenStore.make({ url: Redacted.make(redisUrl), prefix: uniquePrefix("redacted-url") })
      expect((yield* store.lock("k"))._tag).toBe("Acquired")
    }))

  it.scopedLive("an encryption key of the wrong size, or a string that is not base64, is refused when the layer is built", () =>
    Effect.gen(function*() {
      const refused = (encryptionKey: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string>) =>
        Effect.map(Effect.exit(RedisTokenStore.make({ url: redisUrl, encryptionKey })), (exit) =>
          Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.message : "accepted")
      expect(yield* refused(Redacted.make(new Uint8Array(10)))).toBe("encryptionKey must be 16, 24 or 32 bytes, not 10")
      // 32 characters of text: not silently read as base64 of 24 bytes.
      expect(yield* refused(Redacted.make("correct horse battery staple 123")))
        .toBe("encryptionKey is a string but not base64 (give a Uint8Array for raw bytes)")
      expect(yield* refused(Redacted.make(Buffer.from(new Uint8Array(12)).toString("base64"))))
        .toBe("encryptionKey must be 16, 24 or 32 bytes, not 12")
      expect(yield* refused(Redacted.make(Buffer.from(new Uint8Array(16)).toString("base64")))).toBe("accepted")
      // A base64 key that lost a character (a copy cut short), or its padding, is refused: decoded leniently it
      // would be taken as another key of the same length, every process then reading nothing the others write.
      const full = Buffer.from(new Uint8Array(32).fill(9)).toString("base64")
      for (const cut of [full.slice(1), full.replace(/=+$/, ""), `${full.slice(0, 20)}=${full.slice(21)}`]) {
        expect(yield* refused(Redacted.make(cut)), cut)
          .toBe("encryptionKey is a string but not base64 (give a Uint8Array for raw bytes)")
      }
      // Hex (`openssl rand -hex 16`) would read as base64 of another length and key: refused, with what to give.
      for (const hex of ["0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef\n"]) {
        expect(yield* refused(Redacted.make(hex))).toBe("encryptionKey looks like hex; give it as base64 (or a Uint8Array)")
      }
      // A base64 key read from a file with its newline: said as such, not as text that is not base64.
      expect(yield* refused(Redacted.make(`${Buffer.from(new Uint8Array(32)).toString("base64")}\n`)))
        .toBe("encryptionKey starts or ends with whitespace (a trailing newline, say)")
      // A wiped key (a layer built again after a shutdown), no Redacted (untyped code), a number (not 16 zero bytes):
      // refused as a key that is none, not a defect.
      const wiped = Redacted.make(Buffer.from(new Uint8Array(16)).toString("base64"))
      Redacted.unsafeWipe(wiped)
      for (const none of [wiped, Buffer.from(new Uint8Array(16)).toString("base64"), Redacted.make(16)]) {
        expect(yield* refused(none as Redacted.Redacted<string>))
          .toBe("encryptionKey must be a Redacted string (base64) or Uint8Array, not wiped")
      }
    }))

  it.scopedLive("an encryption key of 16, 24 or 32 bytes is taken, any other size refused; 48 hex digits are said to be hex", () =>
    Effect.gen(function*() {
      const made = (encryptionKey: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string>) =>
        Effect.map(
          Effect.exit(Effect.scoped(RedisTokenStore.make({ url: redisUrl, prefix: uniquePrefix("key-size"), encryptionKey }))),
          (exit) => Exit.isSuccess(exit) ? "accepted" : exit.cause._tag === "Fail" ? exit.cause.error.message : "defect"
        )
      // A Uint8Array of another realm (a Buffer of Node's own, under Jest) is bytes all the same.
      const foreign = runInNewContext("new Uint8Array(32).fill(7)") as Uint8Array
      expect(foreign instanceof Uint8Array).toBe(false)
      expect(yield* made(Redacted.make(foreign))).toBe("accepted")
      for (const size of [16, 24, 32]) {
        expect(yield* made(Redacted.make(new Uint8Array(size).fill(7))), `${size}`).toBe("accepted")
        expect(yield* made(Redacted.make(Buffer.from(new Uint8Array(size).fill(7)).toString("base64"))), `${size}`)
          .toBe("accepted")
      }
      for (const size of [0, 8, 15, 17, 31, 33, 64]) {
        expect(yield* made(Redacted.make(new Uint8Array(size))), `${size}`)
          .toBe(`encryptionKey must be 16, 24 or 32 bytes, not ${size}`)
      }
      expect(yield* made(Redacted.make("0123456789abcdef".repeat(3))))
        .toBe("encryptionKey looks like hex; give it as base64 (or a Uint8Array)")
    }))

  it.scopedLive("an unreachable Redis is a TokenStoreError naming why, at once or after the timeout, not a hang", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const store = yield* RedisTokenStore.make({
        url: `redis://127.0.0.1:${yield* closedPort}`,
        timeout: "200 millis",
        redisOptions: { retryStrategy: () => 50 }
      }).pipe(Effect.provide(logs.layer))
      const error = yield* Effect.flip(store.get("k"))
      expect(error._tag).toBe("TokenStoreError")
      expect(error.operation).toBe("get")
      // What the operator can act on: the connection's own error, said once when the store is made too.
      expect(error.message).toMatch(/^Redis is not connected: .*ECONNREFUSED/)
      expect(logs.lines.filter((line) => line.includes("Redis is not reachable"))).toHaveLength(1)
      expect(logs.lines.join("\n")).toContain("ECONNREFUSED")
      // A wrong password is said as Redis says it, in the warning and in each failure while it stays wrong.
      const user = uniquePrefix("user").replace(/:/g, "-")
      const admin = yield* redisClient
      yield* Effect.promise(() => admin.call("ACL", "SETUSER", user, "on", ">right", "~*", "+@all"))
      yield* Effect.addFinalizer(() => Effect.promise(() => admin.call("ACL", "DELUSER", user)))
      const wrong = new URL(redisUrl)
      wrong.username = user
      wrong.password = "wrong"
      const refused = yield* RedisTokenStore.make({ url: wrong.href, timeout: "200 millis" }).pipe(
        Effect.provide(logs.layer)
      )
      expect((yield* Effect.flip(refused.get("k"))).message).toMatch(/^Redis is not connected: WRONGPASS /)
      expect((yield* Effect.flip(refused.get("k"))).message).toMatch(/^Redis is not connected: WRONGPASS /)
      expect(logs.lines.filter((line) => line.includes("Redis is not reachable"))).toHaveLength(2)
      expect(logs.lines.join("\n")).toContain("WRONGPASS")
    }))

  it.scopedLive("redisOptions override the store's own client defaults: an offline queue, when asked for, is kept", () =>
    Effect.gen(function*() {
      const store = yield* RedisTokenStore.make({
        url: `redis://127.0.0.1:${yield* closedPort}`,
        timeout: "200 millis",
        redisOptions: { retryStrategy: () => 50, enableOfflineQueue: true, maxRetriesPerRequest: null }
      })
      // Queued until the connection comes back, so the store's timeout ends it (without the queue: at once).
      expect((yield* Effect.flip(store.get("k"))).message).toBe("Redis did not answer within 200ms")
    }))

  it.live("a store whose Redis refuses the connection is made once that is known, not after its timeout", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const url = `redis://127.0.0.1:${yield* closedPort}`
      // A timeout far longer than the test: the refusal, not the timeout, ends the wait for the first connection.
      const making = yield* Effect.fork(
        RedisTokenStore.make({ url, timeout: "1 day", redisOptions: { retryStrategy: () => 50 } }).pipe(
          Effect.provide(logs.layer)
        )
      )
      yield* eventually(Effect.map(Fiber.poll(making), Option.isSome), "the store made", 250)
      expect(logs.lines.filter((line) => line.includes("Redis is not reachable"))).toHaveLength(1)
      expect(logs.lines.join("\n")).toContain("ECONNREFUSED")
    }).pipe(Effect.scoped), 20_000)

  it.live("a Redis that stops answering is a TokenStoreError after the store's timeout, from a finalizer too, and at start and close", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      const options = { url: server.url, timeout: "200 millis" } as const
      const store = yield* RedisTokenStore.make(options)
      const dedupe = yield* RedisWebhookDedupeStore.make(options)
      expect(yield* readied(store.get("k"))).toEqual(Option.none())
      // Frozen (connections open, no answer) until the end of the test.
      yield* Effect.acquireRelease(Effect.sync(server.freeze), () => Effect.sync(server.thaw))
      // The token provider takes the lock and releases it uninterruptibly, as the webhook handler claims an event:
      // a command there is bounded by the store's timeout all the same.
      const failures = yield* Effect.all([
        Effect.flip(Effect.uninterruptible(store.lock("k"))),
        Effect.flip(Effect.uninterruptible(store.unlock("k", "owner"))),
        Effect.flip(Effect.uninterruptible(dedupe.claim("event", "reference", Duration.seconds(30))))
      ])
      expect(failures.map((e) => [e._tag, e.operation])).toEqual([
        ["TokenStoreError", "lock"],
        ["TokenStoreError", "unlock"],
        ["WebhookDedupeStoreError", "claim"]
      ])
      for (const e of failures) expect(e.message).toBe("Redis did not answer within 200ms")
      // A store made and closed while Redis is frozen (a layer built uninterruptibly, an app shutting down) waits for
      // its connection and its QUIT no longer than the timeout either.
      const late = yield* Effect.scoped(
        Effect.uninterruptible(Effect.flatMap(RedisTokenStore.make(options), (made) => Effect.flip(made.get("k"))))
      )
      expect([late._tag, late.operation]).toEqual(["TokenStoreError", "get"])
      // Said as the README says it, not in the client's words ("Stream isn't writeable and enableOfflineQueue ...").
      expect(late.message).toMatch(/^Redis is not connected/)
    }).pipe(Effect.scoped), 20_000)

  // A lock or claim whose command timed out may still be taken when Redis answers: it is released behind it, once the
  // command has settled, also when Redis had forgotten its script (NOSCRIPT: the whole script is sent after the
  // answer) while it remembered the release's.
  for (const forgotten of [false, true]) {
    it.live(`a lock or claim that timed out is released once Redis answers${forgotten ? ", its script forgotten" : ""}`, () =>
      Effect.gen(function*() {
        const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
        const options = { url: server.url, timeout: "300 millis", lockTtl: "30 seconds" } as const
        const store = yield* RedisTokenStore.make(options)
        const dedupe = yield* RedisWebhookDedupeStore.make(options)
        const admin = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis(server.url)),
          (redis) => Effect.promise(() => redis.quit())
        )
        if (forgotten) {
          yield* Effect.promise(() => admin.script("FLUSH"))
          // The releases' scripts cached again (Redis caches them for every connection), those of the lock and the
          // claim not.
          yield* Effect.flatMap(RedisTokenStore.make({ ...options, ...patient }), (other) => other.unlock("other", "nobody"))
          yield* Effect.flatMap(
            RedisWebhookDedupeStore.make({ ...options, ...patient }),
            (other) => other.release("other-event", "other-reference", "nobody")
          )
        }
        server.freeze()
        const failed = yield* Effect.all([
          Effect.flip(store.lock("k")),
          Effect.flip(dedupe.claim("event", "reference", Duration.seconds(30)))
        ])
        expect(failed.map((e) => e.message)).toEqual(["Redis did not answer within 300ms", "Redis did not answer within 300ms"])
        server.thaw()
        // Taken for no one, then released: within moments (not the 30 s they were taken for), the next caller gets them.
        yield* eventually(lockTaken(store), "the lock released", 150)
        // A try that runs into the 300 ms timeout (Redis catching up, a loaded machine) is one more try, not the end.
        yield* eventually(
          Effect.map(Effect.either(dedupe.claim("event", "reference", Duration.seconds(30))), (claim) =>
            claim._tag === "Right" && claim.right._tag === "Claimed"),
          "the claim released",
          150
        )
      }).pipe(Effect.scoped), 20_000)
  }

  it.live("a lock or claim refused at once by an unreachable Redis leaves no unhandled rejection, whatever the scheduler", () =>
    Effect.gen(function*() {
      const rejections: Array<unknown> = []
      const onRejection = (reason: unknown) => void rejections.push(reason)
      yield* Effect.acquireRelease(
        Effect.sync(() => process.on("unhandledRejection", onRejection)),
        () => Effect.sync(() => process.off("unhandledRejection", onRejection))
      )
      const url = `redis://127.0.0.1:${yield* closedPort}`
      const options = { url, timeout: "200 millis" } as const
      const store = yield* RedisTokenStore.make(options)
      const dedupe = yield* RedisWebhookDedupeStore.make(options)
      // A scheduler that runs fibers on timers: the command's failure comes before they run.
      yield* Effect.withScheduler(
        Effect.forEach([1, 2, 3], () =>
          Effect.all([Effect.either(store.lock("k")), Effect.either(dedupe.claim("e", "r", Duration.seconds(1)))])),
        Scheduler.timer(0)
      )
      yield* Effect.sleep("100 millis")
      expect(rejections).toEqual([])
    }).pipe(Effect.scoped), 20_000)

  // What undoes a lock or claim the caller did not see taken is tried again while Redis is unreachable, but only for
  // as long as the thing could live: each is a timer of its own, and a Redis down for hours would otherwise keep one
  // per failed delivery and token refresh, growing with the traffic.
  it.live("the release behind a lock or claim refused by an unreachable Redis is tried no longer than its TTL", () =>
    Effect.gen(function*() {
      const url = `redis://127.0.0.1:${yield* closedPort}`
      let sent = 0
      const counted = (retryStrategy: () => number | null) =>
        Effect.map(
          Effect.acquireRelease(
            Effect.sync(() => new Redis(url, { enableOfflineQueue: false, retryStrategy })),
            (redis) => Effect.sync(() => redis.disconnect())
          ),
          (client) => {
            client.on("error", () => undefined)
            const evalsha = client.evalsha.bind(client)
            client.evalsha = ((...args: Parameters<typeof evalsha>) =>
              (sent++, evalsha(...args))) as typeof client.evalsha
            return client
          }
        )
      const client = yield* counted(() => 50)
      const options = { client, timeout: "200 millis", lockTtl: "500 millis" } as const
      const store = yield* RedisTokenStore.make(options)
      const dedupe = yield* RedisWebhookDedupeStore.make(options)
      yield* Effect.flip(store.lock("k"))
      yield* Effect.flip(dedupe.claim("e", "r", Duration.millis(500)))
      // Tried again for the 500 ms they could have been taken for (backing off from 50 ms), then given up.
      yield* Effect.sleep("1500 millis")
      const tried = sent
      // The lock and the claim, and at least 2 tries of each release (at 0 and 50 ms): not one try per TTL.
      expect(tried).toBeGreaterThanOrEqual(6)
      yield* Effect.sleep("2500 millis")
      expect(sent).toBe(tried)
      // Not at all on a client closed for good (it gave up reconnecting): nothing it sends could reach Redis.
      const ended = yield* counted(() => null)
      yield* eventually(Effect.sync(() => ended.status === "end"), "the client ended", 100)
      const endedOptions = { client: ended, timeout: "200 millis", lockTtl: "30 seconds" } as const
      yield* Effect.flip(Effect.flatMap(RedisTokenStore.make(endedOptions), (s) => s.lock("k")))
      yield* Effect.flip(
        Effect.flatMap(RedisWebhookDedupeStore.make(endedOptions), (d) => d.claim("e", "r", Duration.seconds(30)))
      )
      yield* Effect.sleep("1500 millis")
      expect(sent).toBe(tried + 2)
    }).pipe(Effect.scoped), 20_000)

  it.live("a lock that timed out is released once Redis answers, also when the connection dropped meanwhile", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      // The store talks to Redis through a proxy whose connections the test can cut.
      const { pairs, proxy } = cuttableProxy(server.port)
      const url = yield* listening(proxy)
      const store = yield* RedisTokenStore.make({ url, timeout: "300 millis", lockTtl: "30 seconds" })
      server.freeze()
      const failed = yield* Effect.fork(Effect.flip(store.lock("k")))
      yield* Effect.sleep("100 millis")
      for (const socket of pairs) socket.destroy()
      expect((yield* failed).message).toMatch(/Redis did not answer within 300ms|Redis is not connected/)
      server.thaw()
      yield* eventually(lockTaken(store), "the lock released", 250)
    }).pipe(Effect.scoped), 20_000)

  it.live("a lock taken by a command the client gave up on while Redis was unreachable is released once it is back", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      // The store talks to Redis through a proxy the test can cut, and stop and start again on its port.
      const { pairs, proxy } = cuttableProxy(server.port)
      const listen = (port: number) =>
        Effect.promise(() => new Promise<void>((resolve) => proxy.listen(port, "127.0.0.1", resolve)))
      yield* Effect.acquireRelease(listen(0), () => Effect.sync(() => proxy.close()))
      const port = (proxy.address() as Net.AddressInfo).port
      const prefix = uniquePrefix("given-up")
      const store = yield* RedisTokenStore.make({ url: `redis://127.0.0.1:${port}`, prefix, timeout: "300 millis", lockTtl: "30 seconds" })
      // Another process, straight to Redis.
      const other = yield* RedisTokenStore.make({ url: server.url, prefix, ...patient })
      // The lock's script cached (a NOSCRIPT answer would take nothing; Redis caches it for every connection).
      expect((yield* other.lock("warm"))._tag).toBe("Acquired")
      server.freeze()
      const failed = yield* Effect.fork(Effect.flip(store.lock("k")))
      yield* Effect.sleep("100 millis")
      // Unreachable: connections cut and refused, so the client gives the lock command up (maxRetriesPerRequest).
      proxy.close()
      for (const socket of pairs) socket.destroy()
      expect((yield* failed).message).toMatch(/Redis did not answer within 300ms|Redis is not connected/)
      // Redis runs the SET it had received before the cut: taken for no one.
      server.thaw()
      expect((yield* other.lock("k"))._tag).not.toBe("Acquired")
      // Still unreachable when the command was given up: the release is tried again until Redis is back.
      yield* Effect.sleep("300 millis")
      yield* listen(port)
      yield* eventually(Effect.map(other.lock("k"), (lock) => lock._tag === "Acquired"), "the lock released", 250)
    }).pipe(Effect.scoped), 20_000)

  it.live("a connection error is no longer said once the client has connected: a later drop says its own state", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      // Redis reached through a proxy, not listening yet (the connection refused), whose connections the test can cut.
      const { pairs, proxy } = cuttableProxy(server.port)
      yield* Effect.addFinalizer(() => Effect.sync(() => proxy.close()))
      const port = yield* closedPort
      let retryDelay = 50
      const store = yield* RedisTokenStore.make({
        url: `redis://127.0.0.1:${port}`,
        timeout: "200 millis",
        redisOptions: { retryStrategy: () => retryDelay }
      }).pipe(Effect.provide(captureLogs().layer))
      expect((yield* Effect.flip(store.get("k"))).message).toMatch(/^Redis is not connected: .*ECONNREFUSED/)
      yield* Effect.promise(() => new Promise<void>((resolve) => proxy.listen(port, "127.0.0.1", resolve)))
      yield* eventually(Effect.map(Effect.either(store.get("k")), (got) => got._tag === "Right"), "the connection", 250)
      // Cut, and not reconnected for a while: said as it is now, not as it was before the client connected.
      retryDelay = 10_000
      for (const socket of pairs) socket.destroy()
      yield* eventually(Effect.map(Effect.either(store.get("k")), (got) => got._tag === "Left"), "the cut", 250)
      const error = yield* Effect.flip(store.get("k"))
      expect(error.message).toMatch(/^Redis is not connected: /)
      expect(error.message).not.toContain("ECONNREFUSED")
    }).pipe(Effect.scoped), 20_000)

  // Its socket ended a moment ago, the client still "ready": ioredis refuses a command in its own words ("Stream isn't
  // writeable and enableOfflineQueue options is false"), said as a connection lost, as in any other state.
  it.live("a command refused by a client whose socket just ended says the connection was lost", () =>
    Effect.gen(function*() {
      const client = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis(redisUrl, { enableOfflineQueue: false, lazyConnect: true })),
        (client) => Effect.sync(() => client.disconnect())
      )
      yield* Effect.promise(() => client.connect())
      const store = yield* RedisTokenStore.make({ client, prefix: uniquePrefix("lost-stream") })
      expect(yield* store.get("k")).toEqual(Option.none())
      Object.defineProperty(client.stream, "writable", { configurable: true, get: () => false })
      const error = yield* Effect.flip(store.get("k"))
      delete (client.stream as { writable?: boolean }).writable
      expect([client.status, error.message]).toEqual(["ready", "Redis is not connected: the connection was lost"])
    }).pipe(Effect.scoped))

  it.live("a lock taken by a command Redis runs late, frozen past lockTtl, is released once it answers", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      const store = yield* RedisTokenStore.make({ url: server.url, timeout: "200 millis", lockTtl: "2 seconds" })
      server.freeze()
      expect((yield* Effect.flip(store.lock("k"))).message).toBe("Redis did not answer within 200ms")
      // Frozen past the lock's 2 s: the SET runs on thaw, and its 2 s start then.
      yield* Effect.sleep("2500 millis")
      server.thaw()
      // Released behind it well before those 2 s are out (left, it would hold every process without a token). The
      // store's own connection runs the late SET first, then these.
      yield* eventually(lockTaken(store), "the late lock released", 60)
    }).pipe(Effect.scoped), 20_000)

  // Each command given up on stays queued in the client, with what it holds, until Redis answers: past a hundred (a
  // Redis that stopped answering, not a slow moment) new ones are not sent, so memory does not grow with the traffic
  // for as long as it stays frozen. What ends a claim or a lock is sent all the same: run late, it frees it.
  it.live("a frozen Redis: past 100 unanswered commands, new ones fail at once unsent, until Redis answers again", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      const admin = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis(server.url)),
        (redis) => Effect.sync(() => redis.disconnect())
      )
      const dedupe = yield* RedisWebhookDedupeStore.make({ url: server.url, timeout: "300 millis" })
      // Claimed by another delivery of this process (the claim's token is all that ends it).
      const setUp = yield* RedisWebhookDedupeStore.make({ url: server.url, ...patient })
      const held = yield* setUp.claim("held", "r-held", Duration.seconds(30))
      if (held._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${held._tag}`)
      const handled = yield* setUp.claim("handled", "r-handled", Duration.seconds(30))
      if (handled._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${handled._tag}`)
      yield* Effect.promise(() => admin.config("RESETSTAT"))
      yield* Effect.acquireRelease(Effect.sync(server.freeze), () => Effect.sync(server.thaw))
      const timedOut = yield* Effect.all(
        Array.from({ length: 99 }, (_, i) => Effect.flip(dedupe.lastHandled(`k-${i}`))),
        { concurrency: "unbounded" }
      )
      // The 100th is still sent: the bound is 100 unanswered, not 99.
      timedOut.push(yield* Effect.flip(dedupe.lastHandled("k-99")))
      expect(new Set(timedOut.map((e) => e.message))).toEqual(new Set(["Redis did not answer within 300ms"]))
      const refused = yield* Effect.all(
        Array.from({ length: 40 }, (_, i) =>
          i % 2 === 0
            ? Effect.flip(dedupe.claim(`e-${i}`, `r-${i}`, Duration.seconds(30)))
            : Effect.flip(dedupe.lastHandled(`other-${i}`))),
        { concurrency: "unbounded" }
      )
      expect(new Set(refused.map((e) => e.message))).toEqual(
        new Set(["Redis did not answer within 300ms (100 earlier commands are still unanswered; not sent)"])
      )
      expect((yield* Effect.flip(dedupe.release("held", "r-held", held.token))).message)
        .toBe("Redis did not answer within 300ms")
      // A handler that succeeded meanwhile: its completion is sent too, and marks the event handled once Redis runs
      // it (refused unsent, the event would be handled again once its claim expired).
      const completed = dedupe.complete("handled", handled.token, { referenceId: "r-handled" }, Duration.hours(1))
      expect((yield* Effect.flip(completed)).message).toBe("Redis did not answer within 300ms")
      server.thaw()
      // The late answers let commands through again; the late release has freed the claim.
      yield* eventually(
        Effect.map(Effect.exit(dedupe.claim("held", "r-held", Duration.seconds(30))), (exit) =>
          Exit.isSuccess(exit) && exit.value._tag === "Claimed"),
        "the claim released",
        100
      )
      expect((yield* dedupe.claim("handled", "r-handled", Duration.seconds(30)))._tag).toBe("Done")
      const stats = yield* Effect.promise(() => admin.info("commandstats"))
      const calls = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)
      // The 100 reads, the release, the completion and the claims after thawing; none of the 40 refused (20 more reads,
      // 20 scripts).
      expect(calls("get")).toBeLessThan(110)
      expect(calls("evalsha") + calls("eval")).toBeLessThan(15)
    }).pipe(Effect.scoped), 20_000)

  // A lock's unlock is sent even while Redis is behind: run late, it frees the lock at once, where refused unsent it
  // would hold every process's refresh off for lockTtl.
  it.live("a frozen Redis: past 100 unanswered commands, a lock is not taken but its unlock is still sent", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      const options = { url: server.url, timeout: "300 millis", lockTtl: "30 seconds" } as const
      const store = yield* RedisTokenStore.make(options)
      const other = yield* RedisTokenStore.make(options)
      // Taken by another caller of this process (the owner is all that ends it).
      const lock = yield* Effect.flatMap(RedisTokenStore.make({ ...options, ...patient }), (setUp) => setUp.lock("k"))
      if (lock._tag !== "Acquired") return yield* Effect.dieMessage(`not acquired: ${lock._tag}`)
      yield* Effect.acquireRelease(Effect.sync(server.freeze), () => Effect.sync(server.thaw))
      yield* Effect.all(Array.from({ length: 100 }, () => Effect.flip(store.get("k"))), { concurrency: "unbounded" })
      expect((yield* Effect.flip(store.lock("k2"))).message).toBe(
        "Redis did not answer within 300ms (100 earlier commands are still unanswered; not sent)"
      )
      expect((yield* Effect.flip(store.unlock("k", lock.owner))).message).toBe("Redis did not answer within 300ms")
      server.thaw()
      yield* eventually(lockTaken(other), "the lock released", 100)
    }).pipe(Effect.scoped), 20_000)

  // Without autoResendUnfulfilledCommands, ioredis drops a closed connection's commands without settling them: counted
  // still, they would refuse every command for as long as the client lives.
  it.live("past 100 unanswered commands, a connection made again serves (autoResendUnfulfilledCommands off)", () =>
    Effect.gen(function*() {
      // Redis through a proxy that drops what the client sends while held, whose connections the test cuts.
      const { pairs, proxy, hold } = cuttableProxy(Number(new URL(redisUrl).port))
      const dedupe = yield* RedisWebhookDedupeStore.make({
        url: yield* listening(proxy),
        prefix: uniquePrefix("dropped"),
        timeout: "300 millis",
        redisOptions: { autoResendUnfulfilledCommands: false, retryStrategy: () => 50 }
      })
      hold(true)
      yield* Effect.all(Array.from({ length: 100 }, (_, i) => Effect.flip(dedupe.lastHandled(`k-${i}`))), {
        concurrency: "unbounded"
      })
      hold(false)
      for (const socket of pairs) socket.destroy()
      yield* eventually(
        Effect.map(Effect.exit(dedupe.claim("after", "r-after", Duration.seconds(30))), (exit) =>
          Exit.isSuccess(exit) && exit.value._tag === "Claimed"),
        "served again after the reconnection",
        100
      )
    }).pipe(Effect.scoped), 20_000)

  // With autoResendUnfulfilledCommands (the default), ioredis sends a closed connection's commands again: answered
  // then, they must not count down what the new connection's own unanswered commands count up, or the bound would
  // let twice as many through.
  it.live("past 100 unanswered commands, those sent again after a reconnection count no more: the bound holds", () =>
    Effect.gen(function*() {
      // Redis through a proxy that drops what the client sends while held, whose connections the test cuts.
      const { pairs, proxy, hold } = cuttableProxy(Number(new URL(redisUrl).port))
      const dedupe = yield* RedisWebhookDedupeStore.make({
        url: yield* listening(proxy),
        prefix: uniquePrefix("resent"),
        timeout: "300 millis",
        redisOptions: { retryStrategy: () => 50 }
      })
      const unanswered = Effect.all(Array.from({ length: 100 }, (_, i) => Effect.flip(dedupe.lastHandled(`k-${i}`))), {
        concurrency: "unbounded"
      })
      hold(true)
      yield* unanswered
      hold(false)
      for (const socket of pairs) socket.destroy()
      // Served again; the 100 sent again are answered before (Redis answers in order).
      yield* eventually(
        Effect.map(Effect.either(dedupe.lastHandled("after")), (read) => read._tag === "Right"),
        "served again after the reconnection",
        100
      )
      hold(true)
      yield* unanswered
      expect((yield* Effect.flip(dedupe.lastHandled("one-more"))).message).toBe(
        "Redis did not answer within 300ms (100 earlier commands are still unanswered; not sent)"
      )
    }).pipe(Effect.scoped), 20_000)

  it.live("a store's options it refuses (a duration, the url, a misspelt name) make it die when it is made, at once", () =>
    Effect.gen(function*() {
      // A defect (the program's mistake) of the effect or the layer's build, not an exception where it is written.
      const message = (self: Parameters<typeof defectOf>[0]) => {
        const defect = defectOf(self)
        expect(defect).toBeInstanceOf(Cause.IllegalArgumentException)
        return (defect as Error).message
      }
      const refused = [
        RedisTokenStore.make({ timeout: "1 secnd" as FinConfig.DurationOption }),
        RedisTokenStore.layer({ lockTtl: Number.NaN as unknown as FinConfig.DurationOption }),
        RedisTokenStore.make({ waitInterval: "0 seconds" }),
        RedisWebhookDedupeStore.layer({ timeout: "-1 seconds" }),
        RedisWebhookDedupeStore.make({ timeout: Duration.infinity })
      ]
      for (const self of refused) expect(message(self)).toMatch(/^effect-fin: Redis\w+Store: (timeout|lockTtl|waitInterval) /)
      // A misspelt option (from a variable or a config file) is refused: `encryptionkey` would store tokens in plain
      // text.
      const misspelt = { encryptionkey: Redacted.make("a".repeat(44)) } as RedisTokenStore.Options
      expect(message(RedisTokenStore.make(misspelt))).toBe(
        `effect-fin: RedisTokenStore: "encryptionkey" is no option of RedisTokenStore.Options`
      )
      expect(message(RedisWebhookDedupeStore.layer({ prefx: "app" } as RedisWebhookDedupeStore.Options))).toBe(
        `effect-fin: RedisWebhookDedupeStore: "prefx" is no option of RedisWebhookDedupeStore.Options`
      )
      // No options object at all (from untyped code): said, not a TypeError from inside.
      for (const self of [RedisTokenStore.make, RedisWebhookDedupeStore.layer]) {
        expect(message(self(null as unknown as RedisTokenStore.Options))).toMatch(
          /^effect-fin: Redis\w+Store: takes an options object, not null$/
        )
      }
      // A prefix that is no text would be written as its String ("[object Object]", "<redacted>"), or fail each
      // command (a symbol); an empty one (an unset variable) is refused too.
      for (const prefix of [{}, Redacted.make("app"), ["a", "b"], 5, Symbol("app"), Object.create(null), ""]) {
        const options = { prefix } as unknown as RedisTokenStore.Options
        for (const self of [RedisTokenStore.make(options), RedisWebhookDedupeStore.layer(options)]) {
          expect(message(self)).toMatch(/^effect-fin: Redis\w+Store: prefix must be non-empty text$/)
        }
      }
      // Past 24 days a timer never fires: the wait would have no bound at all.
      expect(message(RedisWebhookDedupeStore.make({ timeout: "25 days" }))).toBe(
        "effect-fin: RedisWebhookDedupeStore: timeout must be at most 24 days"
      )
      // A malformed URL, or one with no host: said without the URL, whose password ioredis's own error would quote.
      const malformed = [
        "redis://:s3cret@127.0.0.1:notaport", "redis://:s3cr%ET@127.0.0.1:6379", "http://127.0.0.1:6379", "127.0.0.1:6379",
        "redis:///0", "redis://",
        // A database that is no number: ioredis would send SELECT NaN, its failure an unhandled rejection.
        "redis://127.0.0.1:6379/x", "redis://127.0.0.1:6379/?db=x", "redis://127.0.0.1:6379/1.5", "redis://127.0.0.1:6379/?db=",
        // ioredis takes the path's database, else the last `db` parameter.
        "redis://127.0.0.1:6379/x?db=0", "redis://127.0.0.1:6379/?db=1&db=x"
      ]
      for (const url of [...malformed, ...malformed.map((text) => Redacted.make(text))]) {
        for (const self of [RedisTokenStore.make({ url }), RedisWebhookDedupeStore.layer({ url })]) {
          const defect = defectOf(self)
          expect(String(defect), String(url)).toMatch(/effect-fin: Redis\w+Store: url is not a Redis URL/)
          expect(`${JSON.stringify(defect)} ${String(defect)}`).not.toContain("s3cr")
        }
      }
      // A client that is no ioredis client (node-redis's, a URL given as the client): said, not a TypeError later.
      for (const client of [{ status: "ready", get: () => Promise.resolve(null) }, "redis://127.0.0.1:6379", null]) {
        const options = { client } as unknown as RedisTokenStore.Options
        for (const self of [RedisTokenStore.make(options), RedisWebhookDedupeStore.layer(options)]) {
          expect(message(self)).toMatch(/^effect-fin: Redis\w+Store: client must be an ioredis client \(new Redis/)
        }
      }
      // rediss:// (TLS) and a database number are accepted (checked where the stores check it: nothing connects).
      for (
        const url of ["rediss://127.0.0.1:6380", "rediss://user:pass@redis.example:6380/2", "redis://127.0.0.1:1/0", "redis://127.0.0.1:1/?db=3",
          "redis://127.0.0.1:1/0?db=x", "redis://127.0.0.1:1/?db=x&db=2"]
      ) {
        expect(() => Connection.checkUrl("RedisTokenStore", url), url).not.toThrow()
      }
      // One options object may serve both stores: each ignores the other's options (Redis here is unreachable, which
      // is no error when the store is made).
      const port = yield* closedPort
      const shared: RedisTokenStore.Options = {
        url: `redis://127.0.0.1:${port}`,
        lockTtl: "5 seconds",
        waitInterval: "50 millis",
        timeout: "200 millis"
      }
      yield* Effect.scoped(Layer.build(RedisWebhookDedupeStore.layer(shared)))
    }))

  it.scopedLive("a borrowed client is used and stays open when the store closes; closed by its owner, that is said", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("borrowed")
      const client = yield* redisClient
      yield* Effect.promise(() => client.ping())
      yield* Effect.scoped(Effect.gen(function*() {
        const dedupe = yield* RedisWebhookDedupeStore.make({ client, prefix })
        expect((yield* dedupe.claim("e", "r", Duration.seconds(30)))._tag).toBe("Claimed")
      }))
      expect(client.status).toBe("ready")
      expect(yield* Effect.promise(() => client.exists(`${prefix}:webhook:event:e`))).toBe(1)
      const store = yield* RedisTokenStore.make({ client, prefix })
      yield* Effect.promise(() => client.quit())
      const error = yield* Effect.flip(store.get("k"))
      expect(error.message).toBe("Redis is not connected: the connection is closed")
      // redisClient's finalizer quits again: reconnect for it.
      yield* Effect.promise(() => client.connect())
    }))

  it.scopedLive("redisOptions reach the client made from url (its database, here)", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("redis-options")
      const dedupe = yield* RedisWebhookDedupeStore.make({ url: redisUrl, prefix, redisOptions: { db: 7 } })
      expect((yield* dedupe.claim("e", "r", Duration.seconds(30)))._tag).toBe("Claimed")
      const redis = yield* redisClient
      expect(yield* Effect.promise(() => redis.exists(`${prefix}:webhook:event:e`))).toBe(0)
      yield* Effect.promise(() => redis.select(7))
      expect(yield* Effect.promise(() => redis.exists(`${prefix}:webhook:event:e`))).toBe(1)
    }))

  it.scopedLive("a Redis error is said by its first line, at most 200 characters", () =>
    Effect.gen(function*() {
      const client = yield* redisClient
      yield* Effect.promise(() => client.ping())
      const store = yield* RedisTokenStore.make({ client, prefix: uniquePrefix("error-text") })
      client.hmget = (() => Promise.reject(new Error(`ERR ${"x".repeat(300)}\nsecond line`))) as never
      expect((yield* Effect.flip(store.get("k"))).message).toBe(`ERR ${"x".repeat(196)}`)
      client.hmget = (() => Promise.reject(new Error("ERR first line\nwhat was sent"))) as never
      expect((yield* Effect.flip(store.get("k"))).message).toBe("ERR first line")
    }))

  it.live("a store closed while Redis is frozen lets go of its connection after the timeout, not waiting on QUIT", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      yield* Effect.addFinalizer(() => Effect.sync(server.thaw))
      // This process's sockets to the server it has not ended.
      const held = () =>
        (process as unknown as { _getActiveHandles(): Array<unknown> })._getActiveHandles().filter((handle) =>
          handle instanceof Net.Socket && handle.remotePort === server.port && !handle.writableEnded
        ).length
      const store = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* RedisTokenStore.make({ url: server.url, timeout: "200 millis" })
        expect(yield* readied(store.get("k"))).toEqual(Option.none())
        expect(held()).toBe(1)
        server.freeze()
        // 100 unanswered when it closes (the frozen Redis never closes the connection): used past its scope, it says
        // it was closed, not that Redis is behind.
        yield* Effect.all(Array.from({ length: 100 }, () => Effect.flip(store.get("k"))), { concurrency: "unbounded" })
        return store
      }))
      expect(held()).toBe(0)
      expect((yield* Effect.flip(store.get("k"))).message).toMatch(
        /^the store was closed with the scope it was made in/
      )
    }).pipe(Effect.scoped), 20_000)

  it.scopedLive("a borrowed client is not waited for, nor warned about: its owner connects it", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const client = new Redis(redisUrl, { lazyConnect: true })
      yield* Effect.addFinalizer(() => Effect.sync(() => client.disconnect()))
      yield* RedisTokenStore.make({ client, timeout: "200 millis" }).pipe(Effect.provide(logs.layer))
      expect(logs.lines.filter((line) => line.includes("Redis is not reachable"))).toEqual([])
    }))

  it.scopedLive("without a prefix, keys live under effect-fin:", () =>
    Effect.gen(function*() {
      const dedupe = yield* RedisWebhookDedupeStore.make({ url: redisUrl })
      const eventId = `${uniquePrefix("default-prefix")}-event`
      const redis = yield* redisClient
      yield* Effect.addFinalizer(() => Effect.promise(() => redis.del(`effect-fin:webhook:event:${eventId}`, `effect-fin:webhook:reference-claim:${eventId}`)))
      expect((yield* dedupe.claim(eventId, eventId, Duration.seconds(30)))._tag).toBe("Claimed")
      expect(yield* Effect.promise(() => redis.exists(`effect-fin:webhook:event:${eventId}`))).toBe(1)
    }))

  it.scopedLive("defaults: lockTtl 10 s, waitInterval 25 ms", () =>
    Effect.gen(function*() {
      const store = yield* RedisTokenStore.make({ url: redisUrl, prefix: uniquePrefix("defaults") })
      expect(Duration.toMillis(store.lockTtl)).toBe(10_000)
      expect(Duration.toMillis(store.waitInterval)).toBe(25)
      // It bounds its own commands (by `timeout`): the provider runs it as it is, not guarded.
      expect(BoundedStore.isBounded(store)).toBe(true)
    }))

  it.scopedLive("the pair is kept while either token is of use, not only until its refresh time, and at least a second", () =>
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
      // One whose tokens are all past use is still kept a second, not dropped at once.
      expect(yield* store.set("k", tokens("old", Date.now() - 120_000), lock.owner)).toBe(true)
      const kept = yield* Effect.promise(() => redis.pttl(key!))
      expect(kept).toBeGreaterThan(500)
      expect(kept).toBeLessThanOrEqual(1_000)
      // With no refresh token, the access token's own use decides: kept until it is past use, not until refreshAt.
      const later = Date.now()
      expect(yield* store.set("k", {
        accessToken: Redacted.make("access-only"),
        refreshAt: later + 1_000,
        accessUsableUntil: later + 30_000
      }, lock.owner)).toBe(true)
      expect(yield* Effect.promise(() => redis.pttl(key!))).toBeGreaterThan(25_000)
    }))
})

describe("RedisTokenStore with several clients (one per process, as in production)", () => {
  it.live("when the owner's token fetch fails, the clients that waited for it fail with its error, without a fetch each", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("shared-failure")
      const emulator = yield* Emulator.make({ faults: [{ kind: "status", status: 503, route: "POST /v1/oauth/token" }] })
      const client = FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url, maxRetries: 1 }).pipe(
        Layer.provide(RedisTokenStore.layer({ url: redisUrl, prefix })),
        Layer.provide(FetchHttpClient.layer)
      )
      const errors = yield* Effect.all(
        Array.from({ length: 4 }, () => Effect.flip(Effect.provide(quote, client))),
        { concurrency: "unbounded" }
      )
      for (const error of errors) expect(error).toMatchObject({ _tag: "ApiError", status: 503 })
      // One owner's two attempts (maxRetries 1), not two per client.
      expect((yield* emulator.counters).requests["POST /v1/oauth/token"]).toBe(2)
      // A later call is not failed by the recorded failure: it tries again itself.
      yield* emulator.clearFaults
      expect((yield* Effect.provide(quote, client)).destination_currency).toBe("CAD")
    }).pipe(Effect.scoped), 30_000)
})

describe("RedisWebhookDedupeStore", () => {
  it.scopedLive("keeps the dedupe store contract: one claim per event and per reference, newest created_at, expiry", () =>
    Effect.flatMap(
      RedisWebhookDedupeStore.make({ url: redisUrl, prefix: uniquePrefix("dedupe") }),
      (store) => dedupeStoreContract(store, Duration.seconds(1), Effect.sleep("1500 millis"))
    ))

  it.scopedLive("a claim left with no expiry (by hand, a restore) gets the claim's TTL: it holds no event off for ever", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("dedupe-no-expiry")
      const store = yield* RedisWebhookDedupeStore.make({ url: redisUrl, prefix })
      const redis = yield* redisClient
      const ttlOf = (key: string) => Effect.promise(() => redis.pttl(`${prefix}:webhook:${key}`))
      yield* Effect.promise(() => redis.set(`${prefix}:webhook:event:event-stuck`, "pending:gone-long-ago"))
      yield* Effect.promise(() => redis.set(`${prefix}:webhook:reference-claim:ref-stuck`, "gone-long-ago"))
      expect(yield* store.claim("event-stuck", "ref-other", Duration.seconds(1))).toEqual({ _tag: "InProgress" })
      expect(yield* store.claim("event-new", "ref-stuck", Duration.seconds(1))).toEqual({ _tag: "ReferenceBusy" })
      for (const key of ["event:event-stuck", "reference-claim:ref-stuck"]) {
        const ttl = yield* ttlOf(key)
        expect(ttl > 0 && ttl <= 1000, key).toBe(true)
      }
      yield* Effect.sleep("1100 millis")
      expect((yield* store.claim("event-stuck", "ref-stuck", Duration.seconds(1)))._tag).toBe("Claimed")
      // An event key of another type (another writer's) is held the same way, not a failure on every delivery for ever.
      yield* Effect.promise(() => redis.hset(`${prefix}:webhook:event:event-hash`, "x", "1"))
      expect(yield* store.claim("event-hash", "ref-hash", Duration.seconds(1))).toEqual({ _tag: "InProgress" })
      const ttl = yield* ttlOf("event:event-hash")
      expect(ttl > 0 && ttl <= 1000).toBe(true)
      // Nor does one stop the claim's renewal, release or completion halfway (it turned up meanwhile).
      const taken = yield* store.claim("event-late", "ref-late", Duration.seconds(30))
      if (taken._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${taken._tag}`)
      yield* Effect.promise(() => redis.del(`${prefix}:webhook:event:event-late`))
      yield* Effect.promise(() => redis.hset(`${prefix}:webhook:event:event-late`, "x", "1"))
      expect(yield* store.renew("event-late", "ref-late", taken.token, Duration.seconds(30))).toBe(false)
      yield* store.release("event-late", "ref-late", taken.token)
      expect(yield* store.claim("event-other", "ref-late", Duration.seconds(30))).toMatchObject({ _tag: "Claimed" })
      yield* store.complete("event-late", taken.token, { referenceId: "ref-late" }, Duration.hours(24))
      expect(yield* store.claim("event-late", "ref-free", Duration.seconds(30))).toEqual({ _tag: "Done" })
    }))

  it.scopedLive("a completed event and its order record expire: the event after its TTL, the order record after the order's", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("dedupe-ttls")
      const store = yield* RedisWebhookDedupeStore.make({ url: redisUrl, prefix })
      const redis = yield* redisClient
      const pttl = (key: string) => Effect.promise(() => redis.pttl(`${prefix}:webhook:${key}`))
      const claim = yield* store.claim("event-1", "ref-1", Duration.seconds(30))
      if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${claim._tag}`)
      const order = { key: "beneficiary.status:ref-1", createdAt: 1_775_324_400_000_000, ttl: Duration.days(30) }
      yield* store.complete("event-1", claim.token, { referenceId: "ref-1", order }, Duration.hours(24))
      const event = yield* pttl("event:event-1")
      expect(event).toBeGreaterThan(Duration.toMillis(Duration.hours(23)))
      expect(event).toBeLessThanOrEqual(Duration.toMillis(Duration.hours(24)))
      const kept = yield* pttl("order:beneficiary.status:ref-1")
      expect(kept).toBeGreaterThan(Duration.toMillis(Duration.days(29)))
      expect(kept).toBeLessThanOrEqual(Duration.toMillis(Duration.days(30)))
    }))

  it.scopedLive("an order record that is no number (another writer's) is taken as none, and replaced, not a failure each time", () =>
    Effect.gen(function*() {
      const prefix = uniquePrefix("dedupe-odd-order")
      const store = yield* RedisWebhookDedupeStore.make({ url: redisUrl, prefix })
      const redis = yield* redisClient
      // Lua's tonumber reads "nan", "inf" and "1e400" as numbers no timestamp is ever above: refused as well.
      for (const odd of ["nan", "inf", "1e400", "12.5"]) {
        yield* Effect.promise(() => redis.set(`${prefix}:webhook:order:beneficiary.status:ref-odd`, odd))
        expect(yield* store.lastHandled("beneficiary.status:ref-odd"), odd).toEqual(Option.none())
        const oddClaim = yield* store.claim(`event-${odd}`, "ref-odd", Duration.seconds(30))
        if (oddClaim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${oddClaim._tag}`)
        const at = { key: "beneficiary.status:ref-odd", createdAt: 1_775_324_400_000_000, ttl: Duration.days(30) }
        yield* store.complete(`event-${odd}`, oddClaim.token, { referenceId: "ref-odd", order: at }, Duration.hours(24))
        expect(yield* store.lastHandled("beneficiary.status:ref-odd"), odd).toEqual(Option.some(at.createdAt))
      }
      yield* Effect.promise(() => redis.set(`${prefix}:webhook:order:beneficiary.status:ref-1`, "2026-04-04T17:40:00Z"))
      expect(yield* store.lastHandled("beneficiary.status:ref-1")).toEqual(Option.none())
      const claim = yield* store.claim("event-1", "ref-1", Duration.seconds(30))
      if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${claim._tag}`)
      const order = { key: "beneficiary.status:ref-1", createdAt: 1_775_324_400_000_000, ttl: Duration.days(30) }
      yield* store.complete("event-1", claim.token, { referenceId: "ref-1", order }, Duration.hours(24))
      expect(yield* store.lastHandled("beneficiary.status:ref-1")).toEqual(Option.some(order.createdAt))
      // The reference is free again for the next event.
      expect((yield* store.claim("event-2", "ref-1", Duration.seconds(30)))._tag).toBe("Claimed")
      // A key of another type (a hash, a list) is none as well, and `complete` replaces it whole: no half-applied
      // script leaving the event done and its reference claimed.
      for (const [odd, write] of [
        ["hash", (key: string) => redis.hset(key, "x", "1")],
        ["list", (key: string) => redis.lpush(key, "1")]
      ] as const) {
        const key = `beneficiary.status:ref-${odd}`
        yield* Effect.promise(() => write(`${prefix}:webhook:order:${key}`))
        expect(yield* store.lastHandled(key), odd).toEqual(Option.none())
        const typed = yield* store.claim(`event-${odd}`, `ref-${odd}`, Duration.seconds(30))
        if (typed._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${typed._tag}`)
        const at = { key, createdAt: 1_775_324_400_000_000, ttl: Duration.days(30) }
        yield* store.complete(`event-${odd}`, typed.token, { referenceId: `ref-${odd}`, order: at }, Duration.hours(24))
        expect(yield* store.lastHandled(key), odd).toEqual(Option.some(at.createdAt))
        expect((yield* store.claim(`event-${odd}-2`, `ref-${odd}`, Duration.seconds(30)))._tag, odd).toBe("Claimed")
      }
      // A reference claim turned into another type meanwhile (another writer's) does not stop `complete` halfway.
      const late = yield* store.claim("event-late", "ref-late", Duration.seconds(30))
      if (late._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${late._tag}`)
      yield* Effect.promise(() => redis.del(`${prefix}:webhook:reference-claim:ref-late`))
      yield* Effect.promise(() => redis.hset(`${prefix}:webhook:reference-claim:ref-late`, "x", "1"))
      const lateAt = { key: "beneficiary.status:ref-late", createdAt: 1_775_324_400_000_000, ttl: Duration.days(30) }
      yield* store.complete("event-late", late.token, { referenceId: "ref-late", order: lateAt }, Duration.hours(24))
      expect(yield* store.lastHandled(lateAt.key)).toEqual(Option.some(lateAt.createdAt))
    }))
})

describe("Redis stopped mid-run", () => {
  it.live("quotes go on without sharing (a warning), webhooks answer 500 to be delivered again, no defect", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(startRedis), (s) => Effect.promise(s.stop))
      const emulator = yield* Emulator.make()
      const log = captureLogs()
      const secret = "whsec_outage"
      const storeOptions: RedisTokenStore.Options = { url: server.url, timeout: "300 millis" }
      const handled: Array<string> = []
      const app = Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": (event) => Effect.sync(() => handled.push(event.id)) }
      })
      const body = (id: string) =>
        JSON.stringify({
          event: { id, event_reference_id: id, type: "beneficiary.status", created_at: "2026-04-04T17:38:26.843132Z" },
          data: { type: "BUSINESS", active: true, customer_id: "c", beneficiary_id: id }
        })

      const run = Effect.gen(function*() {
        const handle = HttpApp.toWebHandlerRuntime(yield* Effect.runtime<never>())(app)
        const deliver = (id: string) =>
          Effect.flatMap(Webhooks.sign(body(id), secret), (headers) =>
            Effect.promise(async () => {
              const response = await handle(new Request("http://localhost/", { method: "POST", body: body(id), headers }))
              return `${response.status} ${(await response.json() as { outcome: string }).outcome}`
            }))

        yield* quote
        expect(yield* deliver("before")).toBe("200 handled")

        yield* Effect.promise(server.stop)
        // The cached token is refused; the new one has to be fetched while Redis is gone.
        yield* emulator.expireTokens()
        const results = yield* Effect.all(Array.from({ length: 20 }, () => Effect.exit(quote)), { concurrency: 10 })
        expect(results.every(Exit.isSuccess)).toBe(true)
        expect(yield* deliver("during")).toBe("500 store_unavailable")
        expect(yield* deliver("during")).toBe("500 store_unavailable")
      }).pipe(
        Effect.provide(FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url })),
        Effect.provide(Layer.merge(RedisTokenStore.layer(storeOptions), RedisWebhookDedupeStore.layer(storeOptions))),
        Effect.provide(FetchHttpClient.layer),
        Effect.provide(log.layer),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      yield* run
      expect(handled).toEqual(["before"])
      const counters = yield* emulator.counters
      // The first token, then one fetched (through the refresh token) without Redis.
      expect(counters.tokensIssued + counters.tokensRefreshed).toBe(2)
      expect(log.lines.some((line) => line.startsWith("WARN") && line.includes("token store is unavailable"))).toBe(true)
      expect(log.lines.some((line) => line.startsWith("ERROR") && line.includes("de-duplication store unavailable")))
        .toBe(true)
    }).pipe(Effect.scoped), 30_000)
})

describe("a client with ioredis's stringNumbers (integer replies as text)", () => {
  it.scopedLive("borrowed or from redisOptions: locks are taken, renewed and the pair stored; claims renew", () =>
    Effect.gen(function*() {
      const borrowed = new Redis(redisUrl, { stringNumbers: true })
      yield* Effect.addFinalizer(() => Effect.sync(() => borrowed.disconnect()))
      for (const options of [{ client: borrowed }, { url: redisUrl, redisOptions: { stringNumbers: true } }]) {
        const prefix = uniquePrefix("string-numbers")
        const store = yield* RedisTokenStore.make({ ...options, prefix })
        const lock = yield* store.lock("k")
        expect(lock._tag).toBe("Acquired")
        expect(yield* store.renew("k", lock.owner)).toBe(true)
        expect(yield* store.set("k", tokens("access", Date.now() + 60_000), lock.owner)).toBe(true)
        const dedupe = yield* RedisWebhookDedupeStore.make({ ...options, prefix })
        const claim = yield* dedupe.claim("e", "r", Duration.seconds(30))
        if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${claim._tag}`)
        expect(yield* dedupe.renew("e", "r", claim.token, Duration.seconds(30))).toBe(true)
      }
    }))
})

// The peer range admits ioredis 6, which speaks RESP3 by default (`HELLO 3`) and types its client generically; the
// suite's own connection is ioredis 5 (the lock file's), so a client of the application's made by ioredis 6 (as
// installed beside it under another name) runs both contracts, with its default reply mapping and with `resp3`.
describe("a client of ioredis 6 (RESP3 by default)", () => {
  for (const [name, options] of [["default replies", {}], ["replyMapping resp3", { replyMapping: "resp3" }]] as const) {
    it.scopedLive(`runs the token store's and the de-duplication store's contracts, ${name}`, () =>
      Effect.gen(function*() {
        const { Redis: Redis6 } = yield* Effect.promise(() => import("ioredis-6"))
        const six = new Redis6(redisUrl, options)
        yield* Effect.addFinalizer(() => Effect.sync(() => six.disconnect()))
        // Its class is not ioredis 5's to the compiler, though the same to the stores (`checkClient`).
        const client = six as unknown as Redis
        const store = yield* RedisTokenStore.make({ client, prefix: uniquePrefix("ioredis6"), lockTtl: "2400 millis" })
        yield* tokenStoreContract(store, 2400, (millis) => Effect.sleep(millis))
        const dedupe = yield* RedisWebhookDedupeStore.make({ client, prefix: uniquePrefix("ioredis6-dedupe") })
        yield* dedupeStoreContract(dedupe, Duration.seconds(1), Effect.sleep("1500 millis"))
      }), 30_000)
  }
})
