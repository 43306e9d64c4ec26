/**
 * Issue 7: `TokenProvider` keeps its pair in the `TokenStore` in context, reads what another fetcher stored, clears a
 * refused token only while it is still stored, and goes on without a store that fails.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { createHash, createHmac } from "node:crypto"
import * as FeeService from "../src/FeeService.js"
import * as FinConfig from "../src/FinConfig.js"
import type { FinError } from "../src/FinError.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as TokenProvider from "../src/TokenProvider.js"
import * as TokenStore from "../src/TokenStore.js"
import * as BoundedStore from "../src/internal/boundedStore.js"
import {
  advance,
  captureLogs,
  fixedRandom,
  forkSleeping,
  quoteBody,
  quoteRequest,
  seedTokens as seed,
  withTestWallClockSetBack,
  withWallClockSetBack
} from "./support.js"
import { tokenStoreContract } from "./tokenStoreContract.js"

const fee = () => FinTest.json(200, quoteBody)

// A store whose unlock takes `delay`: another process waiting on its lock reads what it left meanwhile.
const unlockingAfter = (store: TokenStore.Service, delay: Duration.DurationInput): TokenStore.Service => ({
  ...store,
  unlock: (...args) => Effect.zipRight(Effect.sleep(delay), store.unlock(...args))
})
// The token route's 429 asking for `seconds` of quiet.
const tooMany = (seconds: number, message = "Too many requests"): FinTest.Reply =>
  FinTest.json(429, { message }, { "retry-after": String(seconds) })

// Clients on one store (`client(store)`), whose token route gives `answers` in turn, one per token request, then
// tokens; `tokenRequests()` counts what was sent there.
const keptAnswerRig = (answers: ReadonlyArray<FinTest.Handler>, options: Partial<FinConfig.Options> = {}) => {
  let tokenRequests = 0
  const tokens = FinTest.tokenHandler({ lifetime: "10 minutes" })
  const routes: FinTest.Routes = {
    "POST /v1/fee-calculation": fee,
    "POST /v1/oauth/token": (request) => (answers[tokenRequests++] ?? tokens)(request)
  }
  return {
    client: (store: TokenStore.Service) =>
      Layer.build(
        FinTest.layerClient(routes, options).pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store)))
      ),
    tokenRequests: () => tokenRequests
  }
}
const calculateOn = (context: Context.Context<FeeService.FeeService>) =>
  Effect.either(Effect.provide(FeeService.calculate(quoteRequest), context))
// A's call, then B's while A's fetch holds the lock (B waits on A), the clock moved on `steps` x 100 ms: both results.
const aThenBOnItsLock = (
  a: Context.Context<FeeService.FeeService>,
  b: Context.Context<FeeService.FeeService>,
  steps: number
) =>
  Effect.gen(function*() {
    const fa = yield* Effect.fork(calculateOn(a))
    yield* Effect.repeatN(Effect.yieldNow(), 30)
    const fb = yield* Effect.fork(calculateOn(b))
    for (let i = 0; i < steps; i++) yield* advance(100)
    return [yield* Fiber.join(fa), yield* Fiber.join(fb)] as const
  })
// The whole seconds of wait a RateLimitError tells, or the result.
const waitLeft = (result: Either.Either<unknown, FinError>) =>
  Either.isLeft(result) && result.left._tag === "RateLimitError"
    ? Math.ceil(Duration.toSeconds(result.left.retryAfter!))
    : result

const count = (route: FinTest.Route) => Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(route))
const bearers = Effect.map(
  Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests),
  (all) => all.filter((r) => r.path === "/v1/fee-calculation").map((r) => r.headers.authorization)
)
const storedAccess = (store: TokenStore.Service, key: string) =>
  Effect.map(store.get(key), Option.map((t) => Redacted.value(t.accessToken)))

/** A client on the in-memory HTTP client whose provider uses `store`. */
const withStore = (store: TokenStore.Service, routes: FinTest.Routes = { "POST /v1/fee-calculation": fee }) =>
<A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.provide(FinTest.layerClient(routes).pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store)))),
    fixedRandom
  )

const key = TokenStore.keyFor("http://127.0.0.1:4010", "test-client", Redacted.make("test-secret"))

// A token "revoked" in `store`, and a service that refuses it (401) and accepts any other.
const seedRevoked = (store: TokenStore.Service) =>
  Effect.gen(function*() {
    yield* seed(store, yield* key, { accessToken: Redacted.make("revoked"), refreshAt: Duration.toMillis("1 hour") })
    const routes: FinTest.Routes = {
      "POST /v1/fee-calculation": (request) =>
        request.headers.authorization === "Bearer revoked"
          ? FinTest.json(401, { message: "Authentication failed" })
          : fee()
    }
    return routes
  })

// A pair in `store` due for a refresh an hour in and usable for 30 s more, the clock moved 10 s past its refresh time;
// the routes of a service whose token routes answer with `token`.
const dueStoredPair = (store: TokenStore.Service, token: FinTest.Handler) =>
  Effect.gen(function*() {
    yield* seed(store, yield* key, {
      accessToken: Redacted.make("stored-token"),
      refreshAt: Duration.toMillis("1 hour"),
      accessUsableUntil: Duration.toMillis("1 hour") + 30_000,
      refreshToken: Redacted.make("stored-refresh"),
      refreshUsableUntil: Duration.toMillis("1 hour") + 30_000
    })
    yield* advance(Duration.toMillis("1 hour") + 10_000)
    const routes: FinTest.Routes = {
      "POST /v1/oauth/token": token,
      "POST /v1/oauth/refresh-token": token,
      "POST /v1/fee-calculation": fee
    }
    return routes
  })

// A store operation that always fails so.
const failing = (operation: TokenStore.TokenStoreError["operation"], message: string) => () =>
  Effect.fail(new TokenStore.TokenStoreError({ operation, message }))

describe("TokenStore", () => {
  it.effect("the key names the base URL, a SHA-256 of the client id and an HMAC under the secret, not them", () =>
    Effect.gen(function*() {
      const mac = createHmac("sha256", "test-secret").update("effect-fin token store|test-client").digest("hex")
      expect(yield* key).toBe(
        `http://127.0.0.1:4010|${createHash("sha256").update("test-client").digest("hex")}|${mac.slice(0, 32)}`
      )
      expect(yield* key).not.toContain("test-client")
      expect(yield* key).not.toContain("test-secret")
      // The base URL as configured (a trailing slash, the host in capitals, the default port written out) names the
      // key the client resolved from it: the README's rotation steps find the client's pair by it.
      const secret = Redacted.make("test-secret")
      for (const configured of ["https://GW.example.com:443/payments/", "https://gw.example.com/payments//"]) {
        const { baseUrl } = yield* FinConfig.resolve({
          clientId: "test-client",
          clientSecret: secret,
          baseUrl: configured
        })
        expect(yield* TokenStore.keyFor(configured, "test-client", secret))
          .toBe(yield* TokenStore.keyFor(baseUrl, "test-client", secret))
      }
    }))

  // The memory store serves one process: its lock lives on monotonic time, as a timer measures it. A wall clock
  // stepped forward (an NTP step, a virtual machine resumed) must not free a held lock (a second client would fetch too,
  // and the holder's pair would not be shared); one set back must not keep a lock (or a failure) for that much longer.
  it.live("the memory store's lock and failures are kept on monotonic time, whatever the wall clock does", () =>
    withWallClockSetBack((setBack) =>
      Effect.gen(function*() {
        const store = TokenStore.makeMemory({ lockTtl: "1 second" })
        const first = yield* store.lock("k")
        expect(first._tag).toBe("Acquired")
        setBack(-3_600_000)
        expect(yield* store.lock("k")).toEqual({ _tag: "Held", owner: first.owner })
        expect(yield* store.renew("k", first.owner)).toBe(true)
        yield* store.unlock("k", first.owner, "failed")
        setBack(3_600_000)
        yield* Effect.sleep("1100 millis")
        expect(Option.isNone(yield* store.failure("k"))).toBe(true)
        expect((yield* store.lock("k"))._tag).toBe("Acquired")
      })
    ))

  // As the Redis store's expiry: a store shared by many accounts, or by secrets rotated away, must not keep every pair
  // it was ever given. One neither of whose tokens is of use any more is dropped (swept as the store grows).
  it.effect("the memory store drops a pair once neither of its tokens is of use", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const life = { refreshAt: 60_000, accessUsableUntil: 90_000 }
      yield* seed(store, "dead", {
        accessToken: Redacted.make("a"),
        ...life,
        refreshToken: Redacted.make("r"),
        refreshUsableUntil: 120_000
      })
      yield* seed(store, "refreshable", {
        accessToken: Redacted.make("a"),
        ...life,
        refreshToken: Redacted.make("r"),
        refreshUsableUntil: 7_200_000
      })
      // Due for a refresh long ago, with no refresh token, but its access token still usable: of use.
      yield* seed(store, "usable", { accessToken: Redacted.make("a"), refreshAt: 60_000, accessUsableUntil: 3_630_000 })
      yield* TestClock.adjust("1 hour")
      for (let i = 0; i < 200; i++) {
        yield* seed(store, `tenant-${i}`, { accessToken: Redacted.make("a"), refreshAt: 3_600_000 + 60_000 })
      }
      const kept = yield* Effect.all(["dead", "refreshable", "usable", "tenant-0"].map((key) => store.get(key)))
      expect(kept.map(Option.isSome)).toEqual([false, true, true, true])
      // Not the pair a sweep's own write stored, though past its use (a refused refresh token taken out of it): its
      // writer, or another process, reads it back.
      const readBack: Array<boolean> = []
      for (let i = 0; i < 600; i++) {
        yield* seed(store, `written-${i}`, { accessToken: Redacted.make("a"), refreshAt: 60_000 })
        readBack.push(Option.isSome(yield* store.get(`written-${i}`)))
      }
      expect(readBack.every((read) => read)).toBe(true)
    }))

  it.effect("a valid pair in the store is used without a token request", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      yield* seed(store, yield* key, { accessToken: Redacted.make("stored-token"), refreshAt: Duration.toMillis("1 hour") })
      yield* FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(Effect.all([count("POST /v1/oauth/token"), bearers])),
        withStore(store),
        Effect.map(([tokenRequests, seen]) => {
          expect(tokenRequests).toBe(0)
          expect(seen).toEqual(["Bearer stored-token"])
        })
      )
    }))

  // What a new process reads must tell it what the fetching process knew: when the access token is due, until when it
  // still serves (a failed refresh goes on with it), and until when the refresh token may be sent.
  it.effect("a pair stored after a fetch carries the access token's refresh and usable times, and the refresh's", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      yield* FeeService.calculate(quoteRequest).pipe(withStore(store))
      const stored = yield* store.get(yield* key)
      // A token of an hour (FinTest's), a refresh token of 7 days, refreshMargin 60 s: usable until half of it is left.
      expect(Option.map(stored, (t) => [t.refreshAt, t.accessUsableUntil, t.refreshUsableUntil])).toEqual(
        Option.some([3_600_000 - 60_000, 3_600_000 - 30_000, 7 * 86_400_000 - 30_000])
      )
    }))

  // A store of the user's that holds a refresh token without its usable time (`Tokens` sets them together): the token
  // could be years old, and is not sent; a token is issued.
  it.effect("a stored refresh token without its usable time is not sent: a token is issued", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      yield* seed(store, yield* key, {
        accessToken: Redacted.make("stored-token"),
        refreshAt: Duration.toMillis("1 hour"),
        refreshToken: Redacted.make("stored-refresh")
      })
      yield* advance(Duration.toMillis("1 hour"))
      const requests = yield* FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(Effect.all([count("POST /v1/oauth/refresh-token"), count("POST /v1/oauth/token")])),
        withStore(store)
      )
      expect(requests).toEqual([0, 1])
    }))

  it.effect("a stored access token that cannot be sent (a control character, a blank) is ignored with a warning: a token is fetched", () =>
    Effect.gen(function*() {
      for (const damaged of ["tok\nen", "tok en", ""]) {
        const store = TokenStore.makeMemory()
        yield* seed(store, yield* key, { accessToken: Redacted.make(damaged), refreshAt: Duration.toMillis("1 hour") })
        const { layer: logger, lines } = captureLogs()
        const [tokenRequests, seen] = yield* FeeService.calculate(quoteRequest).pipe(
          Effect.zipRight(Effect.all([count("POST /v1/oauth/token"), bearers])),
          withStore(store),
          Effect.provide(logger)
        )
        expect(tokenRequests, damaged).toBe(1)
        expect(seen).toEqual(["Bearer token-1"])
        expect(lines.filter((line) => line.includes("cannot be sent"))).toHaveLength(1)
        expect(yield* storedAccess(store, yield* key)).toEqual(Option.some("token-1"))
      }
    }))

  it.effect("an unreadable pair from a store of one's own (a wiped Redacted, no Option) is worked round", () =>
    Effect.gen(function*() {
      const wiped = Redacted.make("stored-token")
      Redacted.unsafeWipe(wiped)
      const fresh = { accessToken: Redacted.make("t"), refreshAt: Duration.toMillis("1 hour") }
      const answers: ReadonlyArray<unknown> = [
        Option.some({ accessToken: wiped, refreshAt: Duration.toMillis("1 hour") }),
        Option.some({ accessToken: "stored-token", refreshAt: Duration.toMillis("1 hour") }),
        Option.some({ accessToken: Redacted.make("t"), refreshAt: 0, accessUsableUntil: "soon" }),
        // The access token readable and fresh, but no refreshAt, or a refresh token or its time that cannot be read.
        Option.some({ accessToken: Redacted.make("t") }),
        Option.some({ ...fresh, refreshToken: wiped }),
        Option.some({ ...fresh, refreshUsableUntil: "" }),
        Option.some(undefined),
        null
      ]
      for (const answer of answers) {
        const store: TokenStore.Service = { ...TokenStore.makeMemory(), get: () => Effect.succeed(answer as never) }
        const { layer: logger, lines } = captureLogs()
        const seen = yield* FeeService.calculate(quoteRequest).pipe(
          Effect.zipRight(bearers),
          withStore(store),
          Effect.provide(logger)
        )
        expect(seen).toEqual(["Bearer token-1"])
        const warned = lines.filter((line) => line.startsWith("WARN") && line.includes("token store is unavailable"))
        expect(warned).toHaveLength(1)
      }
    }))

  // A store of one's own that never expires a lock (its expiry ignores lockTtl, or its unlock never matches): calls
  // end at their deadlines while a fetch could still be under way, then the store is bypassed, said once.
  it.effect("a lock one owner holds past the longest a fetch can take: a warning, then a fetch of its own", () =>
    Effect.gen(function*() {
      const store: TokenStore.Service = {
        ...TokenStore.makeMemory(),
        lock: () => Effect.succeed({ _tag: "Held", owner: "stuck" }),
        waitInterval: Duration.seconds(1)
      }
      const { layer: logger, lines } = captureLogs()
      const results: Array<string> = []
      // One call after another, each to its deadline (60 s): the longest a fetch can take is 5 minutes (a refresh and
      // an issue, 3 attempts of 10 s and 2 waits of 60 s each), and the lock's 10 s. The token's next fetch, an hour
      // on, does not wait on the same owner again.
      yield* Effect.gen(function*() {
        for (let i = 0; i < 8; i++) {
          if (i === 6) yield* TestClock.adjust("1 hour")
          const call = yield* Effect.fork(Effect.either(FeeService.calculate(quoteRequest)))
          yield* TestClock.adjust("60 seconds")
          const result = yield* Fiber.join(call)
          results.push(Either.isRight(result) ? "quote" : result.left._tag)
        }
        expect(yield* bearers).toEqual(["Bearer token-1", "Bearer token-2", "Bearer token-2"])
      }).pipe(withStore(store), Effect.provide(logger))
      expect(results).toEqual([...Array(5).fill("TimeoutError"), "quote", "quote", "quote"])
      const said = lines.filter((line) => line.includes("held the lock for over 5m 10s"))
      expect(said).toHaveLength(1)
      expect(said[0]).toMatch(/^WARN/)
    }))

  // A store of one's own may name the same owner for every lock it hands one process (its host name, say): once a
  // round found the pair that owner stored, a later lock of that name is waited for anew, not taken for the first.
  it.effect("an owner named again for a later lock, after its pair was found, is waited for anew", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      let held = false
      const store: TokenStore.Service = {
        ...memory,
        lock: (key) => held ? Effect.succeed({ _tag: "Held", owner: "host-a" }) : memory.lock(key),
        // Few rounds: each store operation leaves the TestClock a timer to step through.
        waitInterval: Duration.seconds(1)
      }
      const { layer: logger, lines } = captureLogs()
      const seen = yield* Effect.gen(function*() {
        // Twice, hours apart (past the 5m10s a fetch can take): host-a holds the lock for 5 s, then stores a pair.
        for (const token of ["stored-1", "stored-2"]) {
          held = true
          const call = yield* Effect.fork(FeeService.calculate(quoteRequest))
          yield* TestClock.adjust("5 seconds")
          held = false
          yield* seed(memory, yield* key, {
            accessToken: Redacted.make(token),
            refreshAt: (yield* Clock.currentTimeMillis) + Duration.toMillis("1 hour")
          })
          yield* TestClock.adjust("1 second")
          yield* Fiber.join(call)
          yield* TestClock.adjust("2 hours")
        }
        return [yield* bearers, yield* count("POST /v1/oauth/token")] as const
      }).pipe(withStore(store), Effect.provide(logger))
      expect(seen).toEqual([["Bearer stored-1", "Bearer stored-2"], 0])
      expect(lines.filter((line) => line.startsWith("WARN"))).toEqual([])
    }))

  // Retries that asked no wait back off up to 8 s, whatever maxRetryAfter: an owner whose fetch retries that long is
  // waited for, not taken for a store that never expires its locks (a warning, and a fetch of the waiter's own).
  it.effect("an owner still retrying within the backoff's waits is waited for, its token shared", () =>
    Effect.gen(function*() {
      const slow503: FinTest.Handler = () => Effect.as(Effect.sleep("900 millis"), FinTest.json(503, { message: "no" }))
      const options = { maxRetries: 6, tokenTimeout: "1 second", maxRetryAfter: "0 seconds" } as const
      const rig = keptAnswerRig(Array(6).fill(slow503), options)
      const store = TokenStore.makeMemory()
      const { layer: logger, lines } = captureLogs()
      const results = yield* Effect.gen(function*() {
        const [a, b] = [yield* rig.client(store), yield* rig.client(store)]
        return yield* aThenBOnItsLock(a, b, 400)
      }).pipe(Effect.scoped, fixedRandom, Effect.provide(logger))
      expect(results.map(Either.isRight)).toEqual([true, true])
      expect(rig.tokenRequests()).toBe(7)
      expect(lines.filter((line) => line.startsWith("WARN"))).toEqual([])
    }))

  it.effect("a pair that cannot be stored because the lock was lost (expired, evicted, flushed) is used, with a warning", () =>
    Effect.gen(function*() {
      const store: TokenStore.Service = { ...TokenStore.makeMemory(), set: () => Effect.succeed(false) }
      const { layer: logger, lines } = captureLogs()
      const seen = yield* FeeService.calculate(quoteRequest).pipe(Effect.zipRight(bearers), withStore(store), Effect.provide(logger))
      expect(seen).toEqual(["Bearer token-1"])
      expect(lines.filter((line) => line.startsWith("WARN") && line.includes("lost the token store's lock"))).toHaveLength(1)
    }))

  it.effect("a store of one's own whose lockTtl or waitInterval is 0 (or never fires) is refused, not spun on", () =>
    Effect.gen(function*() {
      const refusals: ReadonlyArray<[Partial<TokenStore.Service>, string]> = [
        [{ lockTtl: Duration.zero }, "lockTtl must be greater than zero"],
        [{ waitInterval: Duration.zero }, "waitInterval must be greater than zero"],
        [{ lockTtl: Duration.days(25) }, "lockTtl must be at most 24 days"],
        [{ waitInterval: Duration.infinity }, "waitInterval must be finite"]
      ]
      for (const [change, said] of refusals) {
        const store: TokenStore.Service = { ...TokenStore.makeMemory(), ...change }
        const [exit, sent] = yield* Effect.exit(FeeService.calculate(quoteRequest)).pipe(
          Effect.zip(count("POST /v1/oauth/*")),
          withStore(store)
        )
        const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(defect).toBeInstanceOf(Cause.IllegalArgumentException)
        expect((defect as Error).message).toBe(`effect-fin: the TokenStore's ${said}`)
        expect(sent).toBe(0)
      }
    }))

  it.effect("two clients sharing a store make one token request between them", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const first = yield* FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(count("POST /v1/oauth/token")),
        withStore(store)
      )
      const second = yield* FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(Effect.all([count("POST /v1/oauth/token"), bearers])),
        withStore(store)
      )
      expect(first).toBe(1)
      expect(second).toEqual([0, ["Bearer token-1"]])
      expect(yield* storedAccess(store, yield* key)).toEqual(Option.some("token-1"))
    }))

  it.effect("a 401 clears the refused token from the store, and the new one is stored", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const routes = yield* seedRevoked(store)
      const tokenRequests = yield* FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(count("POST /v1/oauth/token")),
        withStore(store, routes)
      )
      expect(tokenRequests).toBe(1)
      expect(yield* storedAccess(store, yield* key)).toEqual(Option.some("token-1"))
      // A late 401 for the old token leaves the new one alone (compare-and-delete).
      yield* store.clear(yield* key, Redacted.make("revoked"))
      expect(yield* storedAccess(store, yield* key)).toEqual(Option.some("token-1"))
    }))

  it.effect("a new process whose refresh fails goes on with the stored token while it is usable, as a process holding it would", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      // The service down.
      const routes = yield* dueStoredPair(store, () => FinTest.json(503, { message: "down" }))
      const [first, again, requests] = yield* Effect.gen(function*() {
        const fiber = yield* Effect.fork(FeeService.calculate(quoteRequest))
        yield* advance(5_000)
        yield* Fiber.join(fiber)
        // Within the pause after a failed refresh, the next call goes on with it at once.
        yield* FeeService.calculate(quoteRequest)
        return [...(yield* bearers), yield* count("POST /v1/oauth/*")] as const
      }).pipe(withStore(store, routes))
      expect([first, again]).toEqual(["Bearer stored-token", "Bearer stored-token"])
      // The refresh through its retries, then one issue attempt: one round, not one per call.
      expect(requests).toBe(4)
    }))

  // Its warning's end is said once a token is fetched, not when the stored pair is handed on (no token fetched then).
  it.effect("a new process going on with the stored token after a failed refresh: its end said once fetched", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const tokens = FinTest.tokenHandler()
      let down = true
      const routes = yield* dueStoredPair(
        store,
        (request) => down ? FinTest.json(503, { message: "down" }) : tokens(request)
      )
      const log = captureLogs()
      const levels = () => log.lines.map((line) => line.split(" ")[0])
      yield* Effect.gen(function*() {
        yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest))
        expect(levels()).toEqual(["WARN"])
        down = false
        yield* advance(6_000)
        yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest))
        expect(yield* bearers).toEqual(["Bearer stored-token", "Bearer token-1"])
      }).pipe(withStore(store, routes), Effect.provide(log.layer), Logger.withMinimumLogLevel(LogLevel.Info))
      expect(levels()).toEqual(["WARN", "INFO"])
    }))

  // A process whose own refresh failed (warned), then going on with another process's stored pair after refreshing it
  // failed too: that pair handed on is no token fetched, so the end is said only when one is.
  it.effect("a stored pair handed on after a failed refresh is no end of the warnings; a token fetched is", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const tokens = FinTest.tokenHandler()
      let down = false
      const token: FinTest.Handler = (request) => down ? FinTest.json(503, { message: "down" }) : tokens(request)
      const routes = {
        "POST /v1/oauth/token": token,
        "POST /v1/oauth/refresh-token": token,
        "POST /v1/fee-calculation": fee
      }
      const log = captureLogs()
      const levels = () => log.lines.map((line) => line.split(" ")[0])
      const got = yield* Effect.gen(function*() {
        const get = Effect.map(TokenProvider.get, Redacted.value)
        const first = yield* get
        down = true
        yield* advance(59 * 60_000 + 1_000)
        const goneOn = yield* FinTest.advanceUntilDone(get)
        yield* advance(2 * 60_000)
        // Its own token gone: said once.
        expect(Either.isLeft(yield* Effect.either(FinTest.advanceUntilDone(get)))).toBe(true)
        const now = yield* Clock.currentTimeMillis
        yield* seed(store, yield* key, {
          accessToken: Redacted.make("stored-token"),
          refreshAt: now - 1_000,
          accessUsableUntil: now + 30_000,
          refreshToken: Redacted.make("stored-refresh"),
          refreshUsableUntil: now + 30_000
        })
        const handedOn = yield* FinTest.advanceUntilDone(get)
        expect(levels()).toEqual(["WARN", "WARN", "WARN"])
        // The pair handed on runs out in turn: its loss is said too, the last warning no longer "going on with" it.
        yield* advance(31_000)
        expect(Either.isLeft(yield* Effect.either(FinTest.advanceUntilDone(get)))).toBe(true)
        expect(log.lines.at(-1)).toContain("the current token is no longer usable")
        down = false
        yield* advance(6_000)
        return [first, goneOn, handedOn, yield* FinTest.advanceUntilDone(get)]
      }).pipe(withStore(store, routes), Effect.provide(log.layer), Logger.withMinimumLogLevel(LogLevel.Info))
      expect(got).toEqual(["token-1", "token-1", "stored-token", "token-2"])
      expect(levels()).toEqual(["WARN", "WARN", "WARN", "WARN", "INFO"])
    }))

  it.effect("waiting on another process's refresh, a new process goes on with the stored token rather than outlast it", () =>
    Effect.gen(function*() {
      // Another process holds the lock (for a minute, renewing it) while it refreshes; the stored token is usable 20 s
      // more. Polled every 250 ms, not every 10: 80 rounds of virtual time rather than 2,000 (seconds of real time).
      // Marked as bounding its own operations still, as the memory store is (a spread copy is not).
      const store = BoundedStore.bounded<TokenStore.Service>({
        ...TokenStore.makeMemory({ lockTtl: "1 minute" }),
        waitInterval: Duration.millis(250)
      })
      yield* seed(store, yield* key, {
        accessToken: Redacted.make("stored-token"),
        refreshAt: Duration.toMillis("1 hour"),
        accessUsableUntil: Duration.toMillis("1 hour") + 30_000
      })
      yield* advance(Duration.toMillis("1 hour") + 10_000)
      expect((yield* store.lock(yield* key))._tag).toBe("Acquired")
      const fiber = yield* forkSleeping(FeeService.calculate(quoteRequest).pipe(Effect.zipRight(bearers), withStore(store)))
      yield* advance(19_000)
      // Still waiting for the other process while the token lasts...
      expect(fiber.unsafePoll()).toBeNull()
      yield* advance(1_000)
      // ...then on with it, before it is used up, without a token request of its own.
      expect(yield* Fiber.join(fiber)).toEqual(["Bearer stored-token"])
    }))

  it.effect("a new process whose own refresh hangs goes on with the stored token when its usable time ends, as a process holding it would", () =>
    Effect.gen(function*() {
      for (const lockFails of [false, true]) {
        const memory = TokenStore.makeMemory()
        // A store whose lock fails: the process fetches without it, and is bounded all the same.
        const store: TokenStore.Service = lockFails
          ? { ...memory, lock: failing("lock", "down") }
          : memory
        yield* TestClock.setTime(0)
        // The service takes requests and never answers.
        const routes = yield* dueStoredPair(memory, () => Effect.never)
        const seen = yield* FinTest.advanceUntilDone(
          FeeService.calculate(quoteRequest).pipe(Effect.zipRight(bearers), withStore(store, routes)),
          { step: "1 second" }
        )
        expect(seen, `lock fails: ${lockFails}`).toEqual(["Bearer stored-token"])
        // Done when the token's usable time ended (20 s in), not before.
        expect(yield* Clock.currentTimeMillis).toBe(Duration.toMillis("1 hour") + 30_000)
        // The fetch was given up: the lock is free for the next one.
        expect((yield* memory.lock(yield* key))._tag).toBe("Acquired")
      }
    }))

  // As a process holding the token itself would (TokenProvider.test: a refresh that died is a failed refresh).
  it.effect("a new process whose own token fetch dies (a platform client that threw) goes on with the stored token", () =>
    Effect.gen(function*() {
      for (const deadline of [undefined, "5 seconds"] as const) {
        const memory = TokenStore.makeMemory()
        yield* TestClock.setTime(0)
        const routes = yield* dueStoredPair(memory, () => Effect.die(new Error("the platform client threw")))
        const call = FeeService.calculate(quoteRequest)
        const [outcome, seen] = yield* FinTest.advanceUntilDone(
          Effect.gen(function*() {
            const outcome = yield* Effect.exit(
              deadline === undefined ? call : call.pipe(HttpTransport.withOptions({ deadline }))
            )
            return [outcome, yield* bearers] as const
          }).pipe(withStore(memory, routes)),
          { step: "500 millis" }
        )
        expect(Exit.isSuccess(outcome), `deadline: ${deadline}`).toBe(true)
        expect(seen).toEqual(["Bearer stored-token"])
        // The lock is free for the next fetch.
        expect((yield* memory.lock(yield* key))._tag).toBe("Acquired")
      }
    }))

  // As a process holding the token itself would: a call with a short deadline does not wait for that deadline.
  it.effect("a new process whose own refresh hangs: a call with a short deadline goes on with the stored token after half of it", () =>
    Effect.gen(function*() {
      for (const [waiters, heldElsewhere] of [[1, false], [3, false], [1, true]] as const) {
        const memory = TokenStore.makeMemory()
        yield* TestClock.setTime(0)
        const routes = yield* dueStoredPair(memory, () => Effect.never)
        // Another process's fetch (holding the lock) that hangs, in place of this one's.
        if (heldElsewhere) expect((yield* memory.lock(yield* key))._tag).toBe("Acquired")
        // The first call starts the fetch; the others wait on it (the state holds no token of this process's). Timed
        // from when the client is built (the store key's digest, a promise the TestClock does not wait for).
        const calls = Effect.all(
          Array.from({ length: waiters }, () =>
            FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "5 seconds" }))),
          { concurrency: "unbounded" }
        )
        const [elapsed, seen] = yield* FinTest.advanceUntilDone(
          Effect.gen(function*() {
            const start = yield* Clock.currentTimeMillis
            yield* calls
            return [(yield* Clock.currentTimeMillis) - start, yield* bearers] as const
          }).pipe(withStore(memory, routes)),
          { step: "500 millis" }
        )
        const label = `${waiters} calls, lock held elsewhere: ${heldElsewhere}`
        expect(seen, label).toEqual(Array.from({ length: waiters }, () => "Bearer stored-token"))
        expect(elapsed, label).toBe(2_500)
      }
    }))

  // Nor with one this process refused meanwhile (a 401 to another of its calls): the call waits on for the fetch.
  it.effect("a new process whose own refresh hangs: a call does not go on with a stored token refused meanwhile", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      yield* TestClock.setTime(0)
      const routes = yield* dueStoredPair(memory, () => Effect.never)
      const [outcome, seen] = yield* Effect.gen(function*() {
        const call = yield* Effect.fork(
          Effect.either(FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "5 seconds" })))
        )
        yield* advance(1_000)
        yield* TokenProvider.invalidate(Redacted.make("stored-token"))
        yield* advance(5_000)
        return [yield* Fiber.join(call), yield* bearers] as const
      }).pipe(withStore(memory, routes))
      expect(outcome).toMatchObject({ left: { _tag: "TimeoutError", kind: "deadline" } })
      expect(seen).toEqual([])
    }))

  // As a process holding the token itself would (TokenProvider.test: a refresh whose retry wait passes the deadline).
  it.effect("a new process whose own refresh is to wait past a call's deadline: the call goes on with the stored token", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      yield* TestClock.setTime(0)
      const routes = yield* dueStoredPair(memory, () => FinTest.json(503, { message: "down" }, { "retry-after": "30" }))
      const [outcome, seen] = yield* FinTest.advanceUntilDone(
        Effect.gen(function*() {
          const outcome = yield* Effect.either(
            FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "5 seconds" }))
          )
          return [outcome, yield* bearers] as const
        }).pipe(withStore(memory, routes)),
        { step: "500 millis" }
      )
      expect(Either.isRight(outcome), Either.isLeft(outcome) ? outcome.left.message : "").toBe(true)
      expect(seen).toEqual(["Bearer stored-token"])
    }))

  it.effect("a refused token is not handed out while the store is being cleared of it", () => {
    const memory = TokenStore.makeMemory()
    const slow: TokenStore.Service = {
      ...memory,
      clear: (key, token) => Effect.zipRight(Effect.sleep("500 millis"), memory.clear(key, token))
    }
    return Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      const refused = yield* provider.get
      const invalidating = yield* Effect.fork(provider.invalidate(refused))
      yield* Effect.yieldNow()
      const during = yield* Effect.fork(provider.get)
      yield* advance(500)
      yield* Fiber.join(invalidating)
      expect(Redacted.value(yield* Fiber.join(during))).toBe("token-2")
    }).pipe(withStore(slow, {}))
  })

  // A store after whose next write `token` is invalidated: a call sent with it meeting a 401 between a fetch's last
  // step and its hand-over (on a real runtime, where a fiber may yield between any two steps).
  // `arm` with the provider once it is built.
  const refusedAsStored = (token: string) => {
    const memory = TokenStore.makeMemory()
    let afterSet: Effect.Effect<void> = Effect.void
    const store: TokenStore.Service = {
      ...memory,
      set: (key, tokens, owner) => Effect.tap(memory.set(key, tokens, owner), () => afterSet)
    }
    const arm = (provider: TokenProvider.Service) => {
      afterSet = Effect.suspend(() => {
        afterSet = Effect.void
        return provider.invalidate(Redacted.make(token))
      })
    }
    return { store, arm }
  }

  it.effect("a token refused just as its fetch ends (stored, not yet handed over) goes to none of the callers waiting", () => {
    const { arm, store } = refusedAsStored("token-1")
    return Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      arm(provider)
      const got = yield* Effect.all([provider.get, provider.get, provider.get], { concurrency: "unbounded" })
      expect(got.map(Redacted.value)).toEqual(["token-2", "token-2", "token-2"])
      expect(yield* count("POST /v1/oauth/*")).toBe(2)
    }).pipe(withStore(store, {}))
  })

  it.effect("a caller that asks again after a token refused as its fetch ended keeps its deadline", () => {
    const { arm, store } = refusedAsStored("token-1")
    const issuer = FinTest.tokenHandler()
    let issued = 0
    const routes: FinTest.Routes = {
      // The first token is refused as its fetch ends; the fetch asked for again is to wait 30 s before its retry.
      "POST /v1/oauth/token": (request) =>
        ++issued === 1 ? issuer(request) : FinTest.json(503, { message: "down" }, { "retry-after": "30" }),
      "POST /v1/fee-calculation": fee
    }
    return Effect.gen(function*() {
      arm(yield* TokenProvider.TokenProvider)
      const fiber = yield* Effect.fork(
        Effect.flip(FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "10 seconds" })))
      )
      yield* advance(1000)
      // Failed at once (the fetch is to wait past the deadline), as a first ask would: not cut off 9 s later.
      expect(fiber.unsafePoll()).not.toBeNull()
      expect((yield* Fiber.join(fiber))._tag).toBe("RateLimitError")
    }).pipe(withStore(store, routes))
  })

  it.effect("a 401 whose token the store is slow to clear still ends at the call's deadline", () => {
    const memory = TokenStore.makeMemory()
    const slow: TokenStore.Service = {
      ...memory,
      clear: (key, token) => Effect.zipRight(Effect.sleep("10 seconds"), memory.clear(key, token))
    }
    let calls = 0
    const refuseFirst: FinTest.Handler = () =>
      ++calls === 1 ? FinTest.json(401, { message: "Authentication failed" }) : fee()
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(
        Effect.flip(FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "2 seconds" })))
      )
      yield* advance(2_000)
      expect(fiber.unsafePoll()).not.toBeNull()
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "TimeoutError", kind: "deadline" })
    }).pipe(withStore(slow, { "POST /v1/fee-calculation": refuseFirst }))
  })

  it.effect("a process whose refresh fails keeps its own usable token over an older one in the store", () =>
    Effect.gen(function*() {
      // This process's pair never reaches the store (its writes fail); an older pair is there, due as its own is.
      const memory = TokenStore.makeMemory()
      const store: TokenStore.Service = {
        ...memory,
        set: failing("set", "read-only replica")
      }
      let down = false
      const issuer = FinTest.tokenHandler({ lifetime: "1 hour" })
      const token: FinTest.Handler = (request) => down ? FinTest.json(503, { message: "down" }) : issuer(request)
      const routes: FinTest.Routes = { "POST /v1/oauth/token": token, "POST /v1/oauth/refresh-token": token }
      const got = yield* Effect.gen(function*() {
        const provider = yield* TokenProvider.TokenProvider
        expect(Redacted.value(yield* provider.get)).toBe("token-1")
        yield* seed(memory, yield* key, {
          accessToken: Redacted.make("older-token"),
          refreshAt: Duration.toMillis("59 minutes"),
          accessUsableUntil: Duration.toMillis("59 minutes") + 30_000
        })
        yield* advance(Duration.toMillis("59 minutes") + 10_000)
        down = true
        const fiber = yield* Effect.fork(provider.get)
        yield* advance(5_000)
        return [Redacted.value(yield* Fiber.join(fiber)), Redacted.value(yield* provider.get)]
      }).pipe(withStore(store, routes))
      expect(got).toEqual(["token-1", "token-1"])
    }))

  it.effect("a refused token is not taken back from a store that failed to clear it", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      const store: TokenStore.Service = {
        ...memory,
        clear: failing("clear", "timed out")
      }
      const [first, second, requests] = yield* Effect.gen(function*() {
        const provider = yield* TokenProvider.TokenProvider
        const refused = yield* provider.get
        yield* provider.invalidate(refused)
        const next = yield* provider.get
        return [Redacted.value(refused), Redacted.value(next), yield* count("POST /v1/oauth/*")] as const
      }).pipe(withStore(store, {}))
      expect([first, second, requests]).toEqual(["token-1", "token-2", 2])
      // The new pair replaced the refused one in the store too.
      expect(yield* storedAccess(memory, yield* key)).toEqual(Option.some("token-2"))
    }))

  it.effect("a refused token left in a store that failed to clear it is not gone on with when the refresh fails", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      const store: TokenStore.Service = {
        ...memory,
        clear: failing("clear", "timed out")
      }
      // The stored pair due for a refresh, still usable; the service down.
      const routes = yield* dueStoredPair(memory, () => FinTest.json(503, { message: "down" }))
      const [first, second] = yield* Effect.gen(function*() {
        const provider = yield* TokenProvider.TokenProvider
        const get = Effect.fork(Effect.either(Effect.map(provider.get, Redacted.value)))
        const fetching = yield* get
        yield* advance(5_000)
        const first = yield* Fiber.join(fetching)
        // Refused (401): the store fails to clear it, and still holds it.
        if (Either.isRight(first)) yield* provider.invalidate(Redacted.make(first.right))
        const again = yield* get
        yield* advance(5_000)
        // Settled by then (not going round again on the refused token).
        const second = yield* Fiber.poll(again)
        yield* Fiber.interrupt(again)
        return [first, Option.flatMap(second, Exit.match({ onFailure: () => Option.none(), onSuccess: Option.some }))] as const
      }).pipe(withStore(store, routes))
      expect(first).toEqual(Either.right("stored-token"))
      expect(yield* storedAccess(memory, yield* key)).toEqual(Option.some("stored-token"))
      // The refresh fails again: that is the call's error, not the refused token.
      expect(Option.map(second, (result) => Either.isLeft(result) && result.left._tag)).toEqual(Option.some("ApiError"))
    }))

  it.effect("a token refused earlier stays refused after another is refused too", () =>
    Effect.gen(function*() {
      // The store keeps token-1 (its clears fail): a second refusal, of another token, must not let it back.
      const memory = TokenStore.makeMemory()
      const store: TokenStore.Service = {
        ...memory,
        clear: failing("clear", "timed out"),
        set: (key, tokens, owner) =>
          Redacted.value(tokens.accessToken) === "token-1" ? memory.set(key, tokens, owner) : Effect.succeed(true)
      }
      const got = yield* Effect.gen(function*() {
        const provider = yield* TokenProvider.TokenProvider
        yield* provider.invalidate(yield* provider.get)
        const second = yield* provider.get
        yield* provider.invalidate(second)
        return [Redacted.value(second), Redacted.value(yield* provider.get)]
      }).pipe(withStore(store, {}))
      expect(got).toEqual(["token-2", "token-3"])
    }))

  it.effect("a refused refresh token leaves the shared pair when the issue after it failed too: no other client tries it", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      yield* seed(store, yield* key, {
        accessToken: Redacted.make("old"),
        refreshAt: 0,
        refreshToken: Redacted.make("refresh-old"),
        refreshUsableUntil: Duration.toMillis("1 day")
      })
      let refreshCalls = 0
      const routes: FinTest.Routes = {
        "POST /v1/oauth/refresh-token": () => {
          refreshCalls++
          return FinTest.json(401, { message: "Authentication failed" })
        },
        "POST /v1/oauth/token": () => FinTest.json(503, { message: "down" }),
        "POST /v1/fee-calculation": fee
      }
      // Two clients, one after the other (two processes): each fails, as the issue route is down.
      for (let client = 0; client < 2; client++) {
        const error = yield* FinTest.advanceUntilDone(Effect.flip(FeeService.calculate(quoteRequest).pipe(withStore(store, routes))))
        expect(error._tag).toBe("ApiError")
      }
      expect(refreshCalls).toBe(1)
      const stored = yield* store.get(yield* key)
      expect(Option.map(stored, (tokens) => tokens.refreshToken)).toEqual(Option.some(undefined))
    }))

  it.effect("a client that read the pair before its refresh token was refused does not try its own copy of it", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      let issues = 0
      let refreshCalls = 0
      const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
      const routes: FinTest.Routes = {
        "POST /v1/oauth/token": (request) => issues++ === 0 ? tokens(request) : FinTest.json(503, { message: "down" }),
        "POST /v1/oauth/refresh-token": () => {
          refreshCalls++
          return FinTest.json(401, { message: "Authentication failed" })
        },
        "POST /v1/fee-calculation": fee
      }
      const client = () =>
        Layer.build(FinTest.layerClient(routes).pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store))))
      const [a, b] = [yield* client(), yield* client()]
      // Both hold the pair (and its refresh token) in memory.
      yield* Effect.provide(FeeService.calculate(quoteRequest), a)
      yield* Effect.provide(FeeService.calculate(quoteRequest), b)
      // Past the point where the token is still handed out while its refresh fails (half the margin before expiry).
      yield* TestClock.adjust("3585 seconds")
      for (const context of [a, b]) {
        const error = yield* FinTest.advanceUntilDone(Effect.flip(Effect.provide(FeeService.calculate(quoteRequest), context)))
        expect(error._tag).toBe("ApiError")
      }
      expect(refreshCalls).toBe(1)
    }).pipe(Effect.scoped, fixedRandom))

  it.effect("a token fetch that times out fails the client waiting on it with the same TimeoutError, no second fetch", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      // The failure reaches the waiter through the store as JSON: a TimeoutError's `timeout` (a Duration) must survive.
      const client = FeeService.calculate(quoteRequest).pipe(
        Effect.flip,
        Effect.zip(count("POST /v1/oauth/token")),
        Effect.provide(
          FinTest.layerClient({ "POST /v1/oauth/token": () => Effect.never }, { maxRetries: 0, tokenTimeout: "1 second" })
            .pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store)))
        ),
        fixedRandom
      )
      const owner = yield* Effect.fork(client)
      yield* advance(10)
      const waiter = yield* Effect.fork(client)
      for (let i = 0; i < 30; i++) yield* advance(100)
      const [[ownerError, ownerRequests], [waiterError, waiterRequests]] = yield* Fiber.join(Fiber.zip(owner, waiter))
      expect(ownerError).toMatchObject({ _tag: "TimeoutError", kind: "token" })
      expect(waiterError).toMatchObject({ _tag: "TimeoutError", kind: "token" })
      expect(waiterError._tag === "TimeoutError" && Duration.toMillis(waiterError.timeout)).toBe(1000)
      expect(ownerRequests + waiterRequests).toBe(1)
    }))

  // The owner this client waited on failed between the client's last look and its taking the lock: the failure it
  // recorded is found under the lock, and the client fails with it rather than send the same failing request again.
  it.effect("a failure recorded between a waiter's last look and its lock is its failure: no second request", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      // The waiter's view of the store shows it no failure record until it holds the lock (it looked just before).
      let locked = false
      const late: TokenStore.Service = {
        ...memory,
        lock: (lockKey) =>
          Effect.tap(memory.lock(lockKey), (lock) => Effect.sync(() => void (locked = lock._tag === "Acquired"))),
        failure: (failureKey) => locked ? memory.failure(failureKey) : Effect.succeed(Option.none())
      }
      let requests = 0
      const refused = FinTest.delayed("1 second", () => {
        requests += 1
        return FinTest.json(401, { message: "Authentication failed" })
      })
      const token = Effect.flatMap(TokenProvider.TokenProvider, (provider) => provider.get)
      const instance = (store: TokenStore.Service) =>
        FinTest.layerClient({ "POST /v1/oauth/token": refused }).pipe(
          Layer.provide(Layer.succeed(TokenStore.TokenStore, store))
        )
      const owner = yield* forkSleeping(Effect.flip(Effect.provide(token, instance(memory))))
      yield* advance(100)
      const waiter = yield* forkSleeping(Effect.flip(Effect.provide(token, instance(late))))
      for (let i = 0; i < 20; i++) yield* advance(500)
      const [ownerError, waiterError] = yield* Fiber.join(Fiber.zip(owner, waiter))
      expect([ownerError._tag, waiterError._tag]).toEqual(["AuthenticationError", "AuthenticationError"])
      expect(requests).toBe(1)
    }).pipe(fixedRandom))

  // A client id is no secret: a client given another account's id and any other secret (a tenant's mistake, or worse)
  // must never be handed that account's stored pair, nor refresh it with the stored refresh token.
  it.effect("a client with another's client id but not its secret never gets that client's stored pair", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const issuer = FinTest.tokenHandler({ lifetime: "10 minutes" })
      let refreshes = 0
      const routes: FinTest.Routes = {
        "POST /v1/oauth/token": (request) =>
          (request.body as { readonly client_secret?: string }).client_secret === "test-secret"
            ? issuer(request)
            : FinTest.json(401, { message: "Authentication failed" }),
        // A service that takes any refresh token it issued, whoever sends it.
        "POST /v1/oauth/refresh-token": (request) => {
          refreshes++
          return issuer(request)
        },
        "POST /v1/fee-calculation": fee
      }
      const quoteAs = (clientSecret: string) =>
        Effect.either(FeeService.calculate(quoteRequest)).pipe(
          Effect.provide(FinTest.layerClient(routes, { clientSecret: Redacted.make(clientSecret) }).pipe(
            Layer.provide(Layer.succeed(TokenStore.TokenStore, store))
          ))
        )
      expect(Either.isRight(yield* quoteAs("test-secret"))).toBe(true)
      const impostor = yield* quoteAs("not-the-secret")
      expect(Either.isLeft(impostor) && impostor.left._tag).toBe("AuthenticationError")
      // The stored pair due for its refresh: its refresh token is not spent for the impostor either.
      yield* advance(Duration.toMillis("10 minutes"))
      const later = yield* quoteAs("not-the-secret")
      expect(Either.isLeft(later) && later.left._tag).toBe("AuthenticationError")
      expect(refreshes).toBe(0)
      // The pair stays the owner's, under its own key.
      expect(Option.isSome(yield* store.get(yield* key))).toBe(true)
    }).pipe(fixedRandom))

  // During a secret rotation a stale instance must not fail the healthy ones sharing its store: a failure is shared
  // only between clients with the same credentials (only they share a store key).
  it.effect("a fetch that failed under other credentials is not the failure of a client waiting on it: it fetches", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const issuer = FinTest.tokenHandler()
      // Slow enough that the second client finds the first one's lock held and waits on it.
      const tokens = FinTest.delayed("1 second", (request) =>
        (request.body as { readonly client_secret?: string }).client_secret === "rotated-out"
          ? FinTest.json(401, { message: "Authentication failed" })
          : issuer(request))
      const token = Effect.flatMap(TokenProvider.TokenProvider, (provider) => Effect.map(provider.get, Redacted.value))
      const instance = (clientSecret: string) =>
        FinTest.layerClient({ "POST /v1/oauth/token": tokens }, { clientSecret: Redacted.make(clientSecret) }).pipe(
          Layer.provide(Layer.succeed(TokenStore.TokenStore, store))
        )
      // Each forked until it sleeps: building a client digests its store key on a promise, which the TestClock does
      // not wait for (moved before, the first one could still be building when the second comes).
      const stale = yield* forkSleeping(Effect.either(Effect.provide(token, instance("rotated-out"))))
      yield* advance(100)
      const healthy = yield* forkSleeping(Effect.either(Effect.provide(token, instance("test-secret"))))
      for (let i = 0; i < 20; i++) yield* advance(500)
      const [staleResult, healthyResult] = yield* Fiber.join(Fiber.zip(stale, healthy))
      expect(Either.isLeft(staleResult) && staleResult.left._tag).toBe("AuthenticationError")
      expect(healthyResult).toEqual(Either.right("token-1"))
    }).pipe(fixedRandom))

  it.effect("a failure recorded by an owner the client did not wait for is not its failure: it waits and fetches", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const token = Effect.flatMap(TokenProvider.TokenProvider, (provider) => Effect.map(provider.get, Redacted.value))
      const instance = (handler: FinTest.Handler) =>
        FinTest.layerClient({ "POST /v1/oauth/token": handler }).pipe(
          Layer.provide(Layer.succeed(TokenStore.TokenStore, store))
        )
      // An earlier fetch (same credentials) failed and recorded its failure, for lockTtl.
      const earlier = yield* Effect.either(Effect.provide(token, instance(() => FinTest.json(401, { message: "Authentication failed" }))))
      expect(Either.isLeft(earlier) && earlier.left._tag).toBe("AuthenticationError")
      expect(Option.isSome(yield* store.failure(yield* key))).toBe(true)
      // Another process holds the lock now: the client waits on that one, not on the earlier one.
      const holder = yield* store.lock(yield* key)
      if (holder._tag !== "Acquired") return expect.fail("the lock was held")
      const waiting = yield* forkSleeping(Effect.either(Effect.provide(token, instance(FinTest.tokenHandler()))))
      yield* advance(1_000)
      // That process ends without a pair or a failure: the client takes the lock and fetches.
      yield* store.unlock(yield* key, holder.owner)
      yield* advance(1_000)
      expect(yield* Fiber.join(waiting)).toEqual(Either.right("token-1"))
    }).pipe(fixedRandom))

  it.effect("layerMemory: a store of its own per build, with its options, shared by the clients given that build", () =>
    Effect.gen(function*() {
      const layer = TokenStore.layerMemory({ lockTtl: "3 seconds" })
      const built = Effect.provide(TokenStore.TokenStore, layer)
      const [first, second] = [yield* built, yield* built]
      expect(first).not.toBe(second)
      expect(Duration.toMillis(first.lockTtl)).toBe(3_000)
      // Two clients on one build: one token request between them, as with one `makeMemory` store.
      const requests = yield* Effect.gen(function*() {
        const calls = FeeService.calculate(quoteRequest).pipe(
          Effect.zipRight(count("POST /v1/oauth/token")),
          withStore(yield* TokenStore.TokenStore)
        )
        return [yield* calls, yield* calls]
      }).pipe(Effect.provide(layer))
      expect(requests).toEqual([1, 0])
    }))

  it("makeMemory's defaults: lockTtl 10 s, waitInterval 10 ms", () => {
    const store = TokenStore.makeMemory()
    expect(Duration.toMillis(store.lockTtl)).toBe(10_000)
    expect(Duration.toMillis(store.waitInterval)).toBe(10)
  })

  it("makeMemory refuses an option that is none of its own (misspelt, it would leave the default in force)", () => {
    expect(() => TokenStore.makeMemory({ lockttl: "1 minute" } as { lockTtl?: FinConfig.DurationOption })).toThrow(
      `effect-fin: TokenStore.makeMemory: "lockttl" is no option (lockTtl)`
    )
    expect(() => TokenStore.makeMemory({ lockTtl: "1 minute" })).not.toThrow()
    // No options object at all (from untyped code): said, not a TypeError from inside, nor text's indexes as keys.
    for (const [options, given] of [[null, "null"], ["lockTtl", "a string"], [[], "an array"]] as const) {
      expect(() => TokenStore.makeMemory(options as unknown as { lockTtl?: FinConfig.DurationOption })).toThrow(
        `effect-fin: TokenStore.makeMemory: takes an options object ({ lockTtl }), not ${given}`
      )
    }
  })

  // A store that bounds its own operations (as RedisTokenStore does), or one of the user's own (the provider bounds its
  // operations itself: the lock's answer is awaited in a fiber of its own, which releases it when it comes).
  for (const [which, wrap] of [
    ["the store's", BoundedStore.bounded<TokenStore.Service>],
    ["its own store's", (store: TokenStore.Service) => store]
  ] as const) {
    it.effect(`a client shut down while ${which} lock is on its way releases the lock when it comes`, () =>
      Effect.gen(function*() {
        const memory = TokenStore.makeMemory({ lockTtl: "10 seconds" })
        // Its lock takes a round trip.
        const slow = wrap({ ...memory, lock: (key) => Effect.zipLeft(memory.lock(key), Effect.sleep("100 millis")) })
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          FinTest.layerClient({ "POST /v1/oauth/token": FinTest.delayed("100 millis", FinTest.tokenHandler()) }).pipe(
            Layer.provide(Layer.succeed(TokenStore.TokenStore, slow))
          ),
          scope
        )
        const get = Effect.flatMap(TokenProvider.TokenProvider, (provider) => provider.get)
        const caller = yield* Effect.fork(Effect.exit(get.pipe(Effect.provide(context))))
        // The lock is on its way when the client's scope closes (a deploy's shutdown).
        yield* advance(50)
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        yield* advance(60)
        yield* Fiber.join(closing)
        expect(Exit.isInterrupted(yield* Fiber.join(caller))).toBe(true)
        // Released, not held for its TTL (10 s) against every other process.
        expect((yield* memory.lock(yield* key))._tag).toBe("Acquired")
      }))
  }

  it.effect("a renewal that fails once does not give the lock up: a slow fetch stays the only one, its token shared", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory() // lockTtl 10 s, renewed every 3.3 s
      let renewals = 0
      const store: TokenStore.Service = {
        ...memory,
        // Polled every 250 ms, not every 10: fewer rounds of virtual time (seconds of real time).
        waitInterval: Duration.millis(250),
        renew: (key, owner) =>
          Effect.suspend(() =>
            ++renewals === 1
              ? Effect.fail(new TokenStore.TokenStoreError({ operation: "renew", message: "connection reset" }))
              : memory.renew(key, owner)
          )
      }
      // The first token request stalls past tokenTimeout (10 s, longer than the lock's TTL); its retry succeeds.
      const issuer = FinTest.tokenHandler()
      let tokenRequests = 0
      const tokens: FinTest.Handler = (request) => ++tokenRequests === 1 ? FinTest.stall : issuer(request)
      const token = Effect.flatMap(TokenProvider.TokenProvider, (provider) => Effect.map(provider.get, Redacted.value))
      const instance = () =>
        FinTest.layerClient({ "POST /v1/oauth/token": tokens }).pipe(
          Layer.provide(Layer.succeed(TokenStore.TokenStore, store))
        )
      const owner = yield* forkSleeping(Effect.provide(token, instance()))
      yield* advance(100)
      const waiter = yield* forkSleeping(Effect.provide(token, instance()))
      for (let i = 0; i < 30; i++) yield* advance(500)
      expect(yield* Fiber.join(Fiber.zip(owner, waiter))).toEqual(["token-1", "token-1"])
      expect(renewals).toBeGreaterThan(1)
      expect(tokenRequests).toBe(2)
    }).pipe(fixedRandom))

  it.effect("a failing store is worked around: calls succeed, each failure logged as a warning, no FinError", () =>
    Effect.gen(function*() {
      const broken = new TokenStore.TokenStoreError({ operation: "get", message: "connection refused" })
      const failing: TokenStore.Service = {
        get: () => Effect.fail(broken),
        set: () => Effect.fail(broken),
        clear: () => Effect.fail(broken),
        lock: () => Effect.fail(broken),
        renew: () => Effect.fail(broken),
        unlock: () => Effect.fail(broken),
        failure: () => Effect.fail(broken),
        lockTtl: Duration.seconds(10),
        waitInterval: Duration.millis(10)
      }
      const { layer: logger, lines } = captureLogs()
      const results = yield* Effect.all([FeeService.calculate(quoteRequest), FeeService.calculate(quoteRequest)]).pipe(
        Effect.zipRight(count("POST /v1/oauth/token")),
        withStore(failing),
        Effect.provide(logger),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      expect(results).toBe(1)
      const warnings = lines.filter((line) => line.startsWith("WARN"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("token store is unavailable")
      expect(warnings[0]).toContain("connection refused")
    }))

  // The lock is bounded by the store's lockTtl in the background (a lock that comes late is released), but the caller
  // stops waiting for it after tokenTimeout, as for every other operation: a lockTtl of a minute must not hold it.
  it.effect("a store whose lock hangs holds the call up for tokenTimeout, not for the store's longer lockTtl", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory({ lockTtl: "1 minute" })
      const store: TokenStore.Service = { ...memory, lock: () => Effect.never }
      const fiber = yield* forkSleeping(FeeService.calculate(quoteRequest).pipe(withStore(store)))
      for (let i = 0; i < 12; i++) yield* advance(1000)
      expect(fiber.unsafePoll()).toEqual(Exit.succeed(expect.anything()))
    }))

  // A set that fails is the store's failure (said once), not a lock lost to another fetcher (which would warn of
  // processes revoking each other's tokens).
  it.effect("a store whose set fails is said to be unavailable, not to have lost the lock", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      const store: TokenStore.Service = {
        ...memory,
        set: failing("set", "read-only replica")
      }
      const { layer: logger, lines } = captureLogs()
      yield* FeeService.calculate(quoteRequest).pipe(withStore(store), Effect.provide(logger))
      const warnings = lines.filter((line) => line.startsWith("WARN"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("token store is unavailable")
      expect(warnings[0]).toContain("read-only replica")
    }))

  // The outage's end is said once, at Info: with an answer to another operation once a minute has passed with no
  // failure, timed on monotonic time (a wall clock set back meanwhile, an NTP step, does not hold it unsaid).
  it.effect("a store outage's end is said once a quiet minute has passed, whatever the wall clock did meanwhile", () =>
    withTestWallClockSetBack((setBack) =>
      Effect.gen(function*() {
        const memory = TokenStore.makeMemory()
        const store: TokenStore.Service = { ...memory, set: failing("set", "read-only replica") }
        const { layer: logger, lines } = captureLogs()
        yield* Effect.gen(function*() {
          const provider = yield* TokenProvider.TokenProvider
          const token = yield* provider.get
          yield* TestClock.adjust("61 seconds")
          setBack(3_600_000)
          // The store's clear answers: the outage ends; the next token's set fails again, a new one.
          yield* provider.invalidate(token)
          yield* provider.get
        }).pipe(withStore(store), Effect.provide(logger), Logger.withMinimumLogLevel(LogLevel.All))
        const said = lines.filter((line) => line.includes("token store")).map((line) => line.split(" ")[0])
        expect(said).toEqual(["WARN", "INFO", "WARN"])
      })
    ))

  // A store of the user's own that hangs, dies or interrupts itself (a queue of its own shut down) is worked around
  // like one that fails: within tokenTimeout, and with a warning, never the call's deadline, a defect or an
  // interruption. A hanging operation is stopped at its bound, even one the provider runs uninterruptibly (the lock,
  // the release in a finalizer): nothing is left running for ever.
  for (const name of ["hang", "die", "interrupt"] as const) {
    for (const op of ["get", "set", "lock", "unlock", "failure"] as const) {
      it.effect(`a store whose ${op} operations ${name} is worked around: the call succeeds, fetching unshared`, () =>
        Effect.gen(function*() {
          let stopped = 0
          const broken = name === "hang"
            ? Effect.onInterrupt(Effect.never, () => Effect.sync(() => void stopped++))
            : name === "die"
            ? Effect.dieMessage("Unexpected token 'o' in JSON")
            : Effect.interrupt
          const memory = TokenStore.makeMemory()
          const store: TokenStore.Service = { ...memory, [op]: () => broken }
          const { layer: logger, lines } = captureLogs()
          const fiber = yield* forkSleeping(
            FeeService.calculate(quoteRequest).pipe(
              Effect.zipRight(count("POST /v1/oauth/token")),
              withStore(store),
              Effect.provide(logger)
            )
          )
          for (let i = 0; i < 25; i++) yield* advance(1000)
          expect(fiber.unsafePoll()).not.toBeNull()
          expect(yield* Fiber.join(fiber)).toBe(1)
          const warnings = lines.filter((line) => line.startsWith("WARN"))
          expect(warnings.length).toBeGreaterThan(0)
          expect(warnings[0]).toContain("token store is unavailable")
          expect(warnings.join("\n")).not.toContain("Unexpected token")
          if (name === "hang") expect(stopped).toBeGreaterThan(0)
        }))
    }

    it.effect(`a store whose clear ${name}s does not hold up or break the call after a 401`, () =>
      Effect.gen(function*() {
        const memory = TokenStore.makeMemory()
        const store: TokenStore.Service = {
          ...memory,
          clear: () =>
            name === "hang"
              ? Effect.never
              : name === "die"
              ? Effect.dieMessage("Unexpected token 'o' in JSON")
              : Effect.interrupt
        }
        const routes = yield* seedRevoked(store)
        const fiber = yield* Effect.fork(Effect.exit(FeeService.calculate(quoteRequest).pipe(withStore(store, routes))))
        for (let i = 0; i < 25; i++) yield* advance(1000)
        const exit = fiber.unsafePoll()
        expect(exit !== null && Exit.isSuccess(exit) && Exit.isSuccess(exit.value)).toBe(true)
      }))
  }

  it.effect("a client shut down while it fetches under the lock releases it", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory({ lockTtl: "1 minute" })
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        FinTest.layerClient({ "POST /v1/oauth/token": () => FinTest.stall }).pipe(
          Layer.provide(Layer.succeed(TokenStore.TokenStore, memory))
        ),
        scope
      )
      yield* Effect.fork(Effect.provide(FeeService.calculate(quoteRequest), context))
      yield* advance(100)
      expect((yield* memory.lock(yield* key))._tag).toBe("Held")
      yield* Scope.close(scope, Exit.void)
      yield* advance(100)
      expect((yield* memory.lock(yield* key))._tag).toBe("Acquired")
    }))

  // Its late answer is not lost: the lock it took is given back, so the other processes are not kept waiting.
  it.effect("a lock taken after the store's answer came too late is released", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory({ lockTtl: "1 minute" })
      const store: TokenStore.Service = { ...memory, lock: (key) => Effect.delay(memory.lock(key), "15 seconds") }
      const fiber = yield* forkSleeping(FeeService.calculate(quoteRequest).pipe(withStore(store)))
      for (let i = 0; i < 20; i++) yield* advance(1000)
      yield* Fiber.join(fiber)
      const lock = yield* memory.lock(yield* key)
      expect(lock._tag).toBe("Acquired")
    }))

  it("the memory store's lockTtl not a finite duration above zero, at most 24 days, throws when it is made", () => {
    // Duration.decode would read "-5 seconds" or NaN as zero: a lock that is never held. Past 24 days, as the Redis
    // store's: a timer that never fires.
    for (const lockTtl of ["-5 seconds", Number.NaN, 0, "soon", Infinity, Duration.infinity, "100 days"] as const) {
      expect(() => TokenStore.makeMemory({ lockTtl: lockTtl as FinConfig.DurationOption })).toThrow(/^effect-fin: TokenStore\.makeMemory: lockTtl /)
    }
    expect(TokenStore.makeMemory({ lockTtl: "2 seconds" }).lockTtl).toEqual(Duration.seconds(2))
  })

  // Marked stores are run as they are; a wrapper of the user's (a spread) is run guarded.
  it("the memory store is marked as bounding its own operations, a copy spread from it is not", () => {
    const memory = TokenStore.makeMemory()
    expect([BoundedStore.isBounded(memory), BoundedStore.isBounded({ ...memory })]).toEqual([true, false])
  })

  it.effect("the memory store keeps the token store contract: the pair, the lock, its renewal, expiry and failure", () =>
    tokenStoreContract(TokenStore.makeMemory({ lockTtl: "1 second" }), 1_000, (millis) => TestClock.adjust(millis)))

  // As Redis's PX: a lock, and a failure recorded as it is released, last lockTtl to the millisecond, not one more.
  it.effect("the memory store's lock and failure end exactly lockTtl after they were taken", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory({ lockTtl: "1 second" })
      const first = yield* store.lock("k")
      yield* TestClock.adjust(999)
      expect(yield* store.lock("k")).toEqual({ _tag: "Held", owner: first.owner })
      yield* TestClock.adjust(1)
      const second = yield* store.lock("k")
      expect(second._tag).toBe("Acquired")
      yield* store.unlock("k", second.owner, "failed")
      yield* TestClock.adjust(999)
      expect(yield* store.failure("k")).toEqual(Option.some({ owner: second.owner, error: "failed" }))
      yield* TestClock.adjust(1)
      expect(yield* store.failure("k")).toEqual(Option.none())
    }))

  // Another process stores a pair between this one's look at the store and its lock: the pair is used, not fetched
  // again (a second token request, which a service that revokes on issue answers by revoking the other's token).
  it.effect("a pair stored by another process between the read and the lock is used: no token request", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      const k = yield* key
      let first = true
      const store: TokenStore.Service = {
        ...memory,
        lock: (lockKey) =>
          Effect.suspend(() => {
            if (!first) return memory.lock(lockKey)
            first = false
            const other = { accessToken: Redacted.make("other-process"), refreshAt: Duration.toMillis("1 hour") }
            return Effect.zipRight(seed(memory, k, other), memory.lock(lockKey))
          })
      }
      const [tokenRequests, sent] = yield* FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(Effect.all([count("POST /v1/oauth/token"), bearers])),
        withStore(store)
      )
      expect(tokenRequests).toBe(0)
      expect(sent).toEqual(["Bearer other-process"])
    }))

  // The service asked this process for two minutes of quiet on the token route: it sends nothing there meanwhile, but
  // a token another process stored is still read and used.
  it.effect("while a token route's Retry-After lasts, no token request is sent, and a token another process stored is used", () => {
    const store = TokenStore.makeMemory()
    return Effect.gen(function*() {
      const first = yield* Effect.flip(FeeService.calculate(quoteRequest))
      yield* advance(10_000)
      const second = yield* Effect.flip(FeeService.calculate(quoteRequest))
      yield* seed(store, yield* key, { accessToken: Redacted.make("other-process"), refreshAt: Duration.toMillis("1 hour") })
      yield* FeeService.calculate(quoteRequest)
      // The service asked for 120 s; the wait kept, and the one its first caller is told, is maxRetryAfter's 60 s.
      expect(first).toMatchObject({ _tag: "RateLimitError", retryAfter: Duration.seconds(60) })
      // The service's answer again, as no request was sent, with the wait that is left.
      expect(second).toMatchObject({ _tag: "RateLimitError", status: 429, message: first.message })
      expect(second._tag === "RateLimitError" && second.retryAfter).toEqual(Duration.seconds(50))
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
      expect(yield* bearers).toEqual(["Bearer other-process"])
    }).pipe(withStore(store, {
      "POST /v1/fee-calculation": fee,
      "POST /v1/oauth/token": () => tooMany(120)
    }))
  })

  // A new process finds a pair due for a refresh; its fetch is answered 429 with Retry-After: 120. The stored pair
  // serves on, and no token request goes out before the wait has passed (one pair went out 5 s later).
  it.effect("a stored pair served on after a token answer that asked for a wait: no token request before it passed", () =>
    Effect.gen(function*() {
      const store = TokenStore.makeMemory()
      const routes = yield* dueStoredPair(
        store,
        () => tooMany(120)
      )
      const [requests, sent] = yield* Effect.gen(function*() {
        for (let i = 0; i < 15; i++) {
          yield* FeeService.calculate(quoteRequest)
          yield* advance(1000)
        }
        const requests = [yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]
        return [requests, yield* bearers] as const
      }).pipe(withStore(store, routes))
      expect(requests).toEqual([1, 1])
      expect(new Set(sent)).toEqual(new Set(["Bearer stored-token"]))
    }))

  // A token another process stored during a token answer's wait: using it does not end the wait, so when the service
  // refuses it (401), no token request goes out before the wait ends.
  it.effect("a token another process stored during a token answer's wait, refused: no token request before it ends", () => {
    const store = TokenStore.makeMemory()
    return Effect.gen(function*() {
      const first = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(first._tag).toBe("RateLimitError")
      yield* advance(10_000)
      yield* seed(store, yield* key, { accessToken: Redacted.make("other-process"), refreshAt: Duration.toMillis("1 hour") })
      const second = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(second._tag).toBe("RateLimitError")
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
      expect(yield* bearers).toEqual(["Bearer other-process"])
    }).pipe(withStore(store, {
      "POST /v1/fee-calculation": () => FinTest.json(401, { message: "revoked" }),
      "POST /v1/oauth/token": () => tooMany(120)
    }))
  })

  // Process A was answered 429 with Retry-After: 120, kept for maxRetryAfter's 60 s. At 50 s it fails again from what
  // it kept (no request), while B waits on its lock: B gets that failure, with the 10 s that are left, and asks the
  // service itself at 62 s (it was told the whole wait again, and failed without a request for it).
  it.scoped("a kept token answer shared with another process carries the wait that is left, not the whole wait", () => {
    const memory = TokenStore.makeMemory()
    const slowUnlock = unlockingAfter(memory, "100 millis")
    const rig = keptAnswerRig([() => tooMany(120)])
    return Effect.gen(function*() {
      const a = yield* rig.client(slowUnlock)
      const b = yield* rig.client(memory)
      yield* FinTest.advanceUntilDone(calculateOn(a), { limit: "10 seconds" })
      yield* advance(50_000)
      const [, shared] = yield* aThenBOnItsLock(a, b, 30)
      expect(Either.isLeft(shared) && shared.left).toMatchObject({ _tag: "RateLimitError", status: 429 })
      expect(Either.isLeft(shared) && shared.left._tag === "RateLimitError" && Duration.toMillis(shared.left.retryAfter!))
        .toBeLessThanOrEqual(10_000)
      expect(rig.tokenRequests()).toBe(1)
      yield* advance(9_000)
      expect(Either.isRight(yield* FinTest.advanceUntilDone(calculateOn(b), { limit: "1 second" }))).toBe(true)
      expect(rig.tokenRequests()).toBe(2)
    }).pipe(fixedRandom)
  })

  // A's client secret is refused while B waits on A's lock: B fails with A's answer, and neither sends a token request
  // in the second after it (a revoked secret shared by every process is not asked for by each of them, call after
  // call); then each asks again.
  it.scoped("refused credentials shared with a waiting process: no process asks again within the second", () => {
    const memory = TokenStore.makeMemory()
    const refusedNow = () => FinTest.json(401, { message: "invalid client" })
    const refused = () => Effect.delay(Effect.succeed(refusedNow()), "200 millis")
    const rig = keptAnswerRig([refused, refusedNow])
    return Effect.gen(function*() {
      const a = yield* rig.client(memory)
      const b = yield* rig.client(memory)
      for (const result of yield* aThenBOnItsLock(a, b, 3)) {
        expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "AuthenticationError", status: 401 })
      }
      yield* advance(600)
      for (const client of [a, b, a, b]) {
        expect(Either.isLeft(yield* calculateOn(client))).toBe(true)
      }
      expect(rig.tokenRequests()).toBe(1)
      yield* advance(400)
      expect(Either.isLeft(yield* calculateOn(b))).toBe(true)
      expect(rig.tokenRequests()).toBe(2)
    }).pipe(fixedRandom)
  })

  // A's credentials are refused at 0 s; at 0.9 s A fails a call from its hold (no request) while B waits on A's lock:
  // B takes that copy, held for what A had left (0.1 s), not a whole second again. Copies handed back and forth would
  // otherwise hold both processes for as long as their calls alternate, after the credentials were fixed.
  // So with a 401 that asked a wait (its copy carries the 0.1 s left as `retryAfter`) under `maxRetryAfter: 0`, which
  // does not shorten a refusal's hold.
  const refusals: ReadonlyArray<readonly [string, Record<string, string>, Partial<FinConfig.Options>]> = [
    ["", {}, {}],
    [" (a 401 asking 120 s, maxRetryAfter 0)", { "retry-after": "120" }, { maxRetryAfter: "0 seconds" }]
  ]
  // A's refusal (A unlocking 200 ms late) taken by B through the store 900 ms on: B is held by it (three calls in turn
  // with A, then one at once, send nothing), and asks the service again `heldFor` ms later.
  const copyHolds = (
    rig: ReturnType<typeof keptAnswerRig>,
    memory: TokenStore.Service,
    bStore: TokenStore.Service,
    heldFor: number
  ) =>
    Effect.gen(function*() {
      const a = yield* rig.client(unlockingAfter(memory, "200 millis"))
      const b = yield* rig.client(bStore)
      const first = yield* FinTest.advanceUntilDone(calculateOn(a), { limit: "10 seconds" })
      expect(Either.isLeft(first) && first.left._tag).toBe("AuthenticationError")
      yield* advance(900)
      for (const result of yield* aThenBOnItsLock(a, b, 3)) {
        expect(Either.isLeft(result) && result.left._tag).toBe("AuthenticationError")
      }
      // Held, not merely failed once: B's next call, at once, sends nothing either.
      const again = yield* calculateOn(b)
      expect(Either.isLeft(again) && again.left._tag).toBe("AuthenticationError")
      expect(rig.tokenRequests()).toBe(1)
      yield* advance(heldFor)
      expect(Either.isRight(yield* calculateOn(b))).toBe(true)
      expect(rig.tokenRequests()).toBe(2)
    }).pipe(fixedRandom)

  for (const [asked, headers, options] of refusals) {
    const name = `a copy of a held refusal holds the process it is shared with only for what was left of it${asked}`
    it.scoped(name, () => {
      const memory = TokenStore.makeMemory()
      const refused = () => FinTest.json(401, { message: "invalid client" }, headers)
      return copyHolds(keptAnswerRig([refused], { maxRetries: 0, ...options }), memory, memory, 300)
    })
  }

  // The same, with the record B reads telling a hold left of days (written by someone else: a store has no MAC without
  // its encryption key): B is held no longer than a refusal is, a second.
  it.scoped("a shared refusal's record telling more than a second left holds the process reading it a second", () => {
    const memory = TokenStore.makeMemory()
    const forged: TokenStore.Service = {
      ...memory,
      failure: (key) =>
        Effect.map(
          memory.failure(key),
          Option.map((f) => ({ ...f, error: f.error.replace(/"left":[\d.]+/, `"left":1e10`) }))
        )
    }
    const rig = keptAnswerRig([() => FinTest.json(401, { message: "invalid client" })], { maxRetries: 0 })
    return copyHolds(rig, memory, forged, 1_000)
  })

  // A was asked for 60 s, B for 20 s. At 10 s A fails from what it kept (no request), and B, waiting on A's lock, takes
  // that copy: B's own wait (10 s left) is kept, not lengthened to A's 50 s (copies handed back and forth, each read a
  // little after it was made, would otherwise push the wait on for ever). B asks the service again at 21 s.
  it.scoped("a copy of another process's kept answer does not lengthen this process's running wait", () => {
    const memory = TokenStore.makeMemory()
    const slowUnlock = unlockingAfter(memory, "100 millis")
    const rig = keptAnswerRig([() => tooMany(60), () => tooMany(20, "Slow down")], { maxRetries: 0 })
    return Effect.gen(function*() {
      const a = yield* rig.client(slowUnlock)
      const b = yield* rig.client(memory)
      const first = yield* FinTest.advanceUntilDone(calculateOn(a), { limit: "10 seconds" })
      expect([waitLeft(first), waitLeft(yield* calculateOn(b))]).toEqual([60, 20])
      yield* advance(10_000 - 100)
      const [fromA, fromB] = yield* aThenBOnItsLock(a, b, 5)
      expect(waitLeft(fromA)).toBeGreaterThan(45)
      expect(waitLeft(fromB)).toBeLessThanOrEqual(10)
      expect(rig.tokenRequests()).toBe(2)
      yield* advance(10_500)
      expect(Either.isRight(yield* calculateOn(b))).toBe(true)
      expect(rig.tokenRequests()).toBe(3)
    }).pipe(fixedRandom)
  })

  // Two processes on one store, each call failing at once from the wait it kept while the other waits on its lock (a
  // store that takes 200 ms to unlock): the kept answer handed back and forth is a copy, not a new answer asking the
  // whole wait again. The 5 s the service asked for end after 5 s, not after ever more of them.
  it.scoped("a kept answer handed back and forth between two processes under steady calls: the wait still ends", () => {
    const memory = TokenStore.makeMemory()
    const slowUnlock = unlockingAfter(memory, "200 millis")
    const rig = keptAnswerRig([() => tooMany(5)], { maxRetries: 0 })
    return Effect.gen(function*() {
      const clients = [yield* rig.client(slowUnlock), yield* rig.client(slowUnlock)]
      const calls: Array<Fiber.RuntimeFiber<Either.Either<unknown, FinError>>> = []
      // A call every 125 ms for 7 s, on A and B in turn.
      for (let i = 0; i < 56; i++) {
        calls.push(yield* Effect.fork(calculateOn(clients[i % 2]!)))
        yield* advance(125)
      }
      for (let i = 0; i < 10; i++) yield* advance(100)
      const last = yield* Fiber.join(calls[calls.length - 1]!)
      expect(Either.isRight(last)).toBe(true)
      expect(rig.tokenRequests()).toBe(2)
    }).pipe(fixedRandom)
  })

  // Two processes on one store: A is answered 429 asking for `firstWait` s; `after` ms later B (no wait of its own)
  // asks, slowly, and is answered `second`, while A's caller waits on B's lock and takes that answer. The whole seconds
  // of wait each caller is told (or its result), B's then A's; then `later` ms on, A's next call's and the token
  // requests sent.
  const sharedDuringWait = (firstWait: number, after: number, second: FinTest.Reply, later: number) => {
    const memory = TokenStore.makeMemory()
    const rig = keptAnswerRig([() => tooMany(firstWait), FinTest.delayed("1 second", () => second)], { maxRetries: 0 })
    return Effect.gen(function*() {
      const a = yield* rig.client(memory)
      const b = yield* rig.client(memory)
      const first = waitLeft(yield* calculateOn(a))
      yield* advance(after)
      const fb = yield* Effect.fork(calculateOn(b))
      yield* Effect.repeatN(Effect.yieldNow(), 30)
      const fa = yield* Effect.fork(calculateOn(a))
      for (let i = 0; i < 20; i++) yield* advance(100)
      const shared = [waitLeft(yield* Fiber.join(fb)), waitLeft(yield* Fiber.join(fa))]
      yield* advance(later)
      return { first, shared, next: waitLeft(yield* calculateOn(a)), tokenRequests: rig.tokenRequests() }
    }).pipe(fixedRandom)
  }

  // B's answer, a 503, asks for no wait: A's wait (the service's two minutes, kept for maxRetryAfter's 60 s) is kept,
  // its caller told A's answer and the wait that is left, and A's next call sends nothing (it sent a token request).
  it.scoped("another process's failure asking no wait, shared during this process's kept wait, neither ends nor changes it", () =>
    Effect.gen(function*() {
      const seen = yield* sharedDuringWait(120, 0, FinTest.json(503, { message: "down" }), 3_000)
      expect(seen).toMatchObject({ first: 60, next: 55, tokenRequests: 2 })
      expect(seen.shared[1]).toBe(59)
    }))

  // A was asked for 10 s; 5 s in, B is answered 429 asking for 60 s: the service told this client to wait until about
  // 66 s, and A must not send a token request when its own 10 s end.
  it.scoped("a longer wait another process was asked for meanwhile is not cut short by this process's kept wait", () =>
    Effect.gen(function*() {
      expect(yield* sharedDuringWait(10, 5_000, tooMany(60, "Slow down"), 5_000))
        .toEqual({ first: 10, shared: [60, 60], next: 55, tokenRequests: 2 })
    }))

  // Nor is A's wait cut short by a shorter one: B is answered 429 asking for 5 s, but A's two minutes (kept for 60 s)
  // still hold when those 5 s have long passed: A's next call, 10 s on, sends nothing.
  it.scoped("a shorter wait another process was asked for meanwhile does not cut this process's kept wait short", () =>
    Effect.gen(function*() {
      expect(yield* sharedDuringWait(120, 0, tooMany(5, "Slow down"), 10_000)).toMatchObject({ tokenRequests: 2 })
    }))

  // With several clients, a store given to a client's layer is the one it uses, whatever store its calls run under
  // (another client's, provided around the program): its token pair was written there. A client built without one
  // uses the caller's.
  it.scoped("a client keeps the store its layer was given; one built without a store uses the caller's", () =>
    Effect.gen(function*() {
      const [own, around] = [TokenStore.makeMemory(), TokenStore.makeMemory()]
      yield* FeeService.calculate(quoteRequest).pipe(withStore(own), Effect.provideService(TokenStore.TokenStore, around))
      expect([Option.isSome(yield* own.get(yield* key)), Option.isSome(yield* around.get(yield* key))]).toEqual([true, false])
      const storeless = yield* Layer.build(FinTest.layerClient({ "POST /v1/fee-calculation": fee }))
      yield* FeeService.calculate(quoteRequest).pipe(
        Effect.provide(storeless),
        Effect.provideService(TokenStore.TokenStore, around)
      )
      expect(Option.isSome(yield* around.get(yield* key))).toBe(true)
    }))
})
