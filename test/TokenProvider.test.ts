import type * as HttpClient from "@effect/platform/HttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Context from "effect/Context"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as FeeService from "../src/FeeService.js"
import * as FinConfig from "../src/FinConfig.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as TokenProvider from "../src/TokenProvider.js"
import * as TokenStore from "../src/TokenStore.js"
import {
  advance,
  captureLogs,
  counterValue,
  defectOf,
  illegalArgument,
  interruptedAtFirstFork,
  provideClient,
  quoteBody,
  quoteRequest,
  roundTrips,
  withWallClockSetBack
} from "./support.js"

const LIVE_SECRET = "sk_live_9fQ2xR7vLm3pT8wZ4kHc"
const HOUR = 3_600_000
const MIN = 60_000

const fee = () => FinTest.json(200, quoteBody)
const getToken = TokenProvider.get
const tokenValue = Effect.map(getToken, Redacted.value)
const count = (route: FinTest.Route) => Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(route))
const requestsTo = (path: string) =>
  Effect.map(Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests), (all) => all.filter((r) => r.path === path))

// The token route answering `first`, then issuing tokens (numbered from token-1).
const firstThenTokens = (first: FinTest.Reply): FinTest.Handler => {
  const tokens = FinTest.tokenHandler()
  let calls = 0
  return (request) => (calls++ === 0 ? first : tokens(request))
}

// The token route issuing one token (of `lifetime`), then answering `then`.
const tokenThen = (then: FinTest.Reply, lifetime: FinConfig.DurationOption = "10 minutes"): FinTest.Handler => {
  const tokens = FinTest.tokenHandler({ lifetime })
  let calls = 0
  return (request) => (calls++ === 0 ? tokens(request) : then)
}

// One issuer behind both token routes, so issued and refreshed tokens are numbered in one sequence.
const bothTokenRoutes = (handler: FinTest.Handler): FinTest.Routes => ({
  "POST /v1/oauth/token": handler,
  "POST /v1/oauth/refresh-token": handler
})

describe("TokenProvider", () => {
  describe("parseTimestamp", () => {
    it("parses the service's non-ISO format", () => {
      expect(TokenProvider.parseTimestamp("2025-12-28 10:34:45+00")).toBe(Date.UTC(2025, 11, 28, 10, 34, 45))
    })
    it("parses ISO 8601 with Z, offsets and fractions", () => {
      expect(TokenProvider.parseTimestamp("2025-12-28T10:34:45Z")).toBe(Date.UTC(2025, 11, 28, 10, 34, 45))
      expect(TokenProvider.parseTimestamp("2025-12-28T12:34:45.250+02:00")).toBe(Date.UTC(2025, 11, 28, 10, 34, 45, 250))
      expect(TokenProvider.parseTimestamp("2025-12-28 05:34:45-0500")).toBe(Date.UTC(2025, 11, 28, 10, 34, 45))
      // Lower-case separators, as ISO 8601 allows; a fraction past milliseconds is cut, not rounded up.
      expect(TokenProvider.parseTimestamp("2025-12-28t10:34:45z")).toBe(Date.UTC(2025, 11, 28, 10, 34, 45))
      expect(TokenProvider.parseTimestamp("2025-12-28T10:34:45.9999Z")).toBe(Date.UTC(2025, 11, 28, 10, 34, 45, 999))
    })
    it("rejects impossible dates and other text", () => {
      expect(TokenProvider.parseTimestamp("2025-02-30 10:00:00+00")).toBeUndefined()
      expect(TokenProvider.parseTimestamp("tomorrow")).toBeUndefined()
      // Nor is anything but text (a field missing from untyped JSON).
      for (const value of [null, undefined, 1766918085000]) {
        expect(TokenProvider.parseTimestamp(value as unknown as string)).toBeUndefined()
      }
      // Neither a minute nor a second past 59 rolls over, and a two-digit year is that year, not 19xx.
      expect(TokenProvider.parseTimestamp("2025-12-28 10:61:45+00")).toBeUndefined()
      expect(TokenProvider.parseTimestamp("2025-12-28 10:34:60+00")).toBeUndefined()
      expect(TokenProvider.parseTimestamp("0099-01-01T00:00:00Z")).toBe(new Date(0).setUTCFullYear(99, 0, 1))
      expect(TokenProvider.parseTimestamp("2025-12-28")).toBeUndefined()
      // The seconds need their colon: "10:3445" is no 10:34:45.
      expect(TokenProvider.parseTimestamp("2025-12-28T10:3445Z")).toBeUndefined()
      // No field rolls over at its first value out of range.
      for (const text of ["2025-00-10 10:00:00+00", "2025-13-10 10:00:00+00", "2025-12-28 10:60:00+00"]) {
        expect(TokenProvider.parseTimestamp(text), text).toBeUndefined()
      }
      for (const text of ["2025-12-28T10:00:00+24:00", "2025-12-28T10:00:00+05:60"]) {
        expect(TokenProvider.parseTimestamp(text), text).toBeUndefined()
      }
      // Nothing before the year: a five-digit or signed (expanded) year is no year 2025.
      for (const text of ["12025-12-28T10:34:45Z", "+012025-12-28T10:34:45Z", "x2025-12-28 10:34:45+00"]) {
        expect(TokenProvider.parseTimestamp(text), text).toBeUndefined()
      }
      // 29 February in leap years only (every fourth year, not a century's unless it is a fourth one).
      expect(TokenProvider.parseTimestamp("2024-02-29 00:00:00+00")).toBe(Date.UTC(2024, 1, 29))
      expect(TokenProvider.parseTimestamp("2000-02-29 00:00:00+00")).toBe(Date.UTC(2000, 1, 29))
      expect(TokenProvider.parseTimestamp("2100-02-29 00:00:00+00")).toBeUndefined()
    })
    // A body written by hand (or a proxy) may pad the expiry; the blanks around it are no part of it.
    it("reads a timestamp with blanks around it", () => {
      expect(TokenProvider.parseTimestamp(" 2025-12-28 10:34:45+00\n")).toBe(Date.UTC(2025, 11, 28, 10, 34, 45))
    })
  })

  describe("TokenResponse", () => {
    const fields = {
      access_token: "abc",
      access_token_ttl: "2025-12-28 10:34:45+00",
      refresh_token: "def",
      refresh_token_ttl: "2025-12-28 10:34:45+00",
      current_time: "2025-12-21 10:34:45+00"
    }
    it("accepts the top-level and the data-wrapped envelope", () => {
      const decode = Schema.decodeUnknownSync(TokenProvider.TokenResponse)
      for (const body of [fields, { data: fields }]) {
        const decoded = decode(body)
        expect(Redacted.value(decoded.access_token)).toBe("abc")
        expect(decoded.access_token_ttl).toBe(Date.UTC(2025, 11, 28, 10, 34, 45))
        expect(decoded.current_time).toBe(Date.UTC(2025, 11, 21, 10, 34, 45))
      }
    })
    // A serialiser may write an absent optional field as null: that must not fail every token request.
    it("reads null in an optional field as absent, in either envelope", () => {
      const decode = Schema.decodeUnknownEither(TokenProvider.TokenResponse)
      const nulls = { ...fields, refresh_token: null, refresh_token_ttl: null, current_time: null }
      for (const body of [nulls, { data: nulls }]) {
        expect(Either.map(decode(body), (d) => [d.refresh_token, d.refresh_token_ttl, d.current_time])).toEqual(
          Either.right([undefined, undefined, undefined])
        )
      }
      // The access token itself is never optional.
      expect(Either.isLeft(decode({ ...fields, access_token: null }))).toBe(true)
    })
    // An empty refresh token is not kept to be sent on the refresh route, where it could only be refused.
    it("refuses an empty refresh_token, in either envelope", () => {
      const decode = Schema.decodeUnknownEither(TokenProvider.TokenResponse)
      const empty = { ...fields, refresh_token: "" }
      for (const body of [empty, { data: empty }]) expect(Either.isLeft(decode(body))).toBe(true)
    })
  })

  // Whatever the other envelope holds, a valid one is taken, as the schema takes it.
  for (
    const [name, body] of [
      ["a null token at the top level", { access_token: null, data: { access_token: "abc", access_token_ttl: "2099-01-01T00:00:00Z" } }],
      ["an empty token at the top level", { access_token: "", data: { access_token: "abc", access_token_ttl: "2099-01-01T00:00:00Z" } }],
      ["a valid top level and odd data", { access_token: "abc", access_token_ttl: "2099-01-01T00:00:00Z", data: { x: 1 } }]
    ] as const
  ) {
    it.effect(`a token response in one valid envelope is taken beside ${name}`, () =>
      Effect.gen(function*() {
        expect(Redacted.value(yield* getToken)).toBe("abc")
        expect(Either.isRight(Schema.decodeUnknownEither(TokenProvider.TokenResponse)(body))).toBe(true)
      }).pipe(Effect.provide(FinTest.layerClient({ "POST /v1/oauth/token": () => FinTest.json(200, body) }))))
  }

  // A problem is told in the envelope the service used, not also as the other envelope's "data (missing)".
  for (
    const [name, body, message] of [
      ["top level", { access_token: "", access_token_ttl: 5 }, "access_token: expected a token of 1 to 8192 visible ASCII characters (no spaces); access_token_ttl: expected a string"],
      ["wrapped in data", { data: { access_token: "" } }, "data.access_token: expected a token of 1 to 8192 visible ASCII characters (no spaces); data.access_token_ttl: expected a timestamp like 2025-12-28 10:34:45+00 or ISO 8601 (missing)"],
      ["neither", {}, "access_token: expected a token of 1 to 8192 visible ASCII characters (no spaces) (missing); access_token_ttl: expected a timestamp like 2025-12-28 10:34:45+00 or ISO 8601 (missing)"],
      ["wrapped, beside a null top-level token", { access_token: null, data: { access_token: "abc" } }, "data.access_token_ttl: expected a timestamp like 2025-12-28 10:34:45+00 or ISO 8601 (missing)"],
      [
        "wrapped, beside an empty top-level token",
        { access_token: "", data: { access_token: "abc" } },
        "data.access_token_ttl: expected a timestamp like 2025-12-28 10:34:45+00 or ISO 8601 (missing)"
      ],
      ["top level, beside an object in data", { access_token: "abc", data: { x: 1 } }, "access_token_ttl: expected a timestamp like 2025-12-28 10:34:45+00 or ISO 8601 (missing)"]
    ] as const
  ) {
    it.effect(`a token response that does not decode says why, in its envelope: ${name}`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(getToken)
        expect(error.message).toBe(`Unexpected response from POST /v1/oauth/token: ${message}`)
      }).pipe(Effect.provide(FinTest.layerClient({ "POST /v1/oauth/token": () => FinTest.json(200, body) }))))
  }

  it.effect("uses the data-wrapped envelope to authenticate calls", () =>
    Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      const [call] = yield* requestsTo("/v1/fee-calculation")
      expect(call?.headers.authorization).toBe("Bearer token-1")
      const [issue] = yield* requestsTo("/v1/oauth/token")
      expect(issue?.body).toEqual({ client_id: "test-client", client_secret: "test-secret" })
      expect(issue?.headers["content-type"]).toBe("application/json")
    }).pipe(provideClient({
      "POST /v1/oauth/token": FinTest.tokenHandler({ envelope: "data" }),
      "POST /v1/fee-calculation": fee
    })))

  it.effect("refreshes refreshMargin before expiry, at the right virtual time, with the refresh token", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR - MIN - 1)
      expect(yield* tokenValue).toBe("token-1")
      expect(yield* count("POST /v1/oauth/*")).toBe(1)
      yield* advance(1)
      expect(yield* tokenValue).toBe("token-2")
      const [refresh] = yield* requestsTo("/v1/oauth/refresh-token")
      expect(refresh?.body).toEqual({ refresh_token: "refresh-1" })
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "1 hour" })))))

  it.effect("refreshes with the refresh token when it expires with the access token (the newer documented example)", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR - MIN)
      expect(yield* tokenValue).toBe("token-2")
      expect((yield* requestsTo("/v1/oauth/refresh-token")).map((r) => r.body)).toEqual([{ refresh_token: "refresh-1" }])
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "1 hour", refreshLifetime: "1 hour" })))))

  it.effect("issues anew once the refresh token is as near its expiry as a used-up access token", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      // The refresh token lives 30 s past the access token's refresh point: past half the margin (30 s) before its
      // expiry it is not sent, since it could lapse on the way.
      yield* advance(HOUR - MIN)
      expect(yield* tokenValue).toBe("token-2")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(0)
    }).pipe(provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "1 hour", refreshLifetime: "3570 seconds" })))))

  // A token answer whose access token lives an hour from now, with `fields` (no refresh token's expiry).
  const hourLongToken = (fields: { readonly access_token: string; readonly refresh_token?: string }) =>
    Effect.map(Clock.currentTimeMillis, (now) =>
      FinTest.json(200, {
        ...fields,
        access_token_ttl: FinTest.formatServiceTimestamp(now + HOUR),
        current_time: FinTest.formatServiceTimestamp(now)
      }))

  it.effect("a refresh answer without a refresh token keeps the one it used (RFC 6749 6), not issuing anew", () => {
    let refreshed = 0
    return Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR - MIN)
      expect(yield* tokenValue).toBe("refreshed-1")
      yield* advance(HOUR)
      expect(yield* tokenValue).toBe("refreshed-2")
      const bodies = (yield* requestsTo("/v1/oauth/refresh-token")).map((r) => r.body)
      expect(bodies).toEqual([{ refresh_token: "refresh-1" }, { refresh_token: "refresh-1" }])
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient({
      "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
      "POST /v1/oauth/refresh-token": () => hourLongToken({ access_token: `refreshed-${++refreshed}` })
    }))
  })

  it.effect("a refresh token sent without its expiry is used until the access token's (not dropped)", () => {
    let refreshed = 0
    return Effect.gen(function*() {
      // Issued without refresh_token_ttl: refreshed with it, not issued anew with the client secret.
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR - MIN)
      expect(yield* tokenValue).toBe("refreshed-1")
      // A refresh answer rotating it, again without its expiry: the new one is sent next, not the one it replaced.
      yield* advance(HOUR - MIN)
      expect(yield* tokenValue).toBe("refreshed-2")
      const bodies = (yield* requestsTo("/v1/oauth/refresh-token")).map((r) => r.body)
      expect(bodies).toEqual([{ refresh_token: "issued" }, { refresh_token: "rotated-1" }])
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient({
      "POST /v1/oauth/token": () => hourLongToken({ access_token: "token-1", refresh_token: "issued" }),
      "POST /v1/oauth/refresh-token": () => {
        refreshed += 1
        return hourLongToken({ access_token: `refreshed-${refreshed}`, refresh_token: `rotated-${refreshed}` })
      }
    }))
  })

  it.effect("an early refresh that fails gives callers the still-usable token; only a used-up one fails them", () => {
    const log = captureLogs()
    let down = false
    const issuer = FinTest.tokenHandler({ lifetime: "1 hour" })
    const token: FinTest.Handler = (request) => (down ? FinTest.json(503, { message: "down" }) : issuer(request))
    return Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      // refreshAt is 1 min before expiry (refreshMargin), the token usable until 30 s before it.
      yield* advance(HOUR - MIN + 10_000)
      down = true
      // 100 callers at once wait for one refresh; it fails after its 2 retries (0.5 + 1 s), then so does the one issue
      // attempt made in its place, and they all go on with token-1 rather than fail.
      const fiber = yield* Effect.fork(
        Effect.all(Array.from({ length: 100 }, () => FeeService.calculate(quoteRequest)), { concurrency: "unbounded" })
      )
      yield* advance(5_000)
      expect(yield* Fiber.join(fiber)).toHaveLength(100)
      expect(yield* count("POST /v1/oauth/*")).toBe(1 + 4)
      // Said once per failed refresh, at Warning, naming the error's tag.
      const warnings = log.lines.filter((line) => line.includes("the token refresh failed"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("WARN")
      expect(warnings[0]).toContain("ApiError")
      // For a pause after the failure (5 s), callers go on with token-1 at once, without a refresh of their own.
      yield* FeeService.calculate(quoteRequest)
      expect(yield* count("POST /v1/oauth/*")).toBe(1 + 4)
      // After it, the next caller tries again and, that refresh failing too, goes on with token-1.
      yield* advance(5_000)
      const again = yield* Effect.fork(FeeService.calculate(quoteRequest))
      yield* advance(5_000)
      yield* Fiber.join(again)
      expect(yield* count("POST /v1/oauth/*")).toBe(1 + 4 + 4)
      const bearers = (yield* requestsTo("/v1/fee-calculation")).map((r) => r.headers.authorization)
      expect(new Set(bearers)).toEqual(new Set(["Bearer token-1"]))
      // Past its usable time, callers fail with the refresh's typed error.
      yield* advance(10_000)
      const late = yield* Effect.fork(Effect.flip(FeeService.calculate(quoteRequest)))
      yield* advance(5_000)
      expect(yield* Fiber.join(late)).toMatchObject({ _tag: "ApiError", status: 503 })
      // The service back: the next caller gets a new token, and the end of the warnings is said, once.
      down = false
      yield* FeeService.calculate(quoteRequest)
      const [last] = (yield* requestsTo("/v1/fee-calculation")).slice(-1)
      expect(last?.headers.authorization).toBe("Bearer token-2")
      yield* advance(HOUR)
      yield* FeeService.calculate(quoteRequest)
      expect(log.lines.filter((line) => line.includes("fetched again"))).toEqual([
        `INFO ["effect-fin: a token was fetched again after the failed refreshes warned of"] {}`
      ])
    }).pipe(provideClient({ ...bothTokenRoutes(token), "POST /v1/fee-calculation": fee }), Effect.provide(log.layer))
  })

  it.effect("a token call's retry is logged with its operation, error and number as annotations too", () => {
    const log = captureLogs()
    const issuer = FinTest.tokenHandler()
    let calls = 0
    const token: FinTest.Handler = (request) =>
      ++calls === 1 ? FinTest.json(503, { message: "down" }) : issuer(request)
    return Effect.gen(function*() {
      yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest))
      expect(log.lines.filter((line) => line.includes("retrying"))).toEqual([
        `DEBUG ["effect-fin: retrying POST /v1/oauth/token after ApiError (retry 1)"] ` +
        `{"error":"ApiError","operation":"POST /v1/oauth/token","retry":1}`
      ])
    }).pipe(
      provideClient({ ...bothTokenRoutes(token), "POST /v1/fee-calculation": fee }),
      Effect.provide(log.layer),
      Logger.withMinimumLogLevel(LogLevel.Debug)
    )
  })

  it.effect("an early refresh that dies (a platform client that threw) is a failed refresh too: callers go on with the token", () => {
    const log = captureLogs()
    let broken = false
    const issuer = FinTest.tokenHandler({ lifetime: "1 hour" })
    const token: FinTest.Handler = (request) => {
      if (broken) throw new Error("client bug")
      return issuer(request)
    }
    return Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      yield* advance(HOUR - MIN + 10_000)
      broken = true
      const callers = yield* Effect.fork(
        Effect.all(Array.from({ length: 10 }, () => FeeService.calculate(quoteRequest)), { concurrency: "unbounded" })
      )
      yield* advance(5_000)
      expect(yield* Fiber.join(callers)).toHaveLength(10)
      const bearers = (yield* requestsTo("/v1/fee-calculation")).map((r) => r.headers.authorization)
      expect(new Set(bearers)).toEqual(new Set(["Bearer token-1"]))
      const warnings = log.lines.filter((line) => line.includes("the token refresh failed"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("defect")
      // Past its usable time, the defect reaches the caller: a bug is not turned into a typed error.
      yield* advance(40_000)
      const late = yield* Effect.fork(Effect.exit(FeeService.calculate(quoteRequest)))
      yield* advance(5_000)
      const exit = yield* Fiber.join(late)
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    }).pipe(provideClient({ ...bothTokenRoutes(token), "POST /v1/fee-calculation": fee }), Effect.provide(log.layer))
  })

  // The token was usable when its refresh began (its caller got it: the refresh ran on), no longer when the refresh
  // (stalled, timed out, then an issue timed out too) failed: the warning says so, not that it goes on with it.
  it.effect("a refresh failing past the token's usable time warns that the token is gone, not gone on with", () => {
    const log = captureLogs()
    return Effect.gen(function*() {
      yield* tokenValue
      // 5 s before the token's usable time ends (30 s before expiry); the refresh and the issue then take 10 s each.
      yield* advance(HOUR - MIN + 25_000)
      const caller = yield* Effect.fork(tokenValue)
      for (let i = 0; i < 25; i++) yield* advance(1000)
      expect(yield* Fiber.join(caller)).toBe("token-1")
      const warnings = log.lines.filter((line) => line.includes("the token refresh failed"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/^WARN .*the current token is no longer usable; calls fail until a token is fetched/)
      expect(warnings[0]).toContain("TimeoutError")
    }).pipe(
      provideClient(bothTokenRoutes(tokenThen(FinTest.stall, "1 hour")), { tokenTimeout: "10 seconds", maxRetries: 0 }),
      Effect.provide(log.layer)
    )
  })

  // The common way a token is lost: its refresh fails (warned of as gone on with, once), then the token's usable time
  // ends during the pause before the next try. The first fetch that fails after that says the token is gone, once.
  it.effect("a token whose usable time ends between failed refreshes is said to be gone, once", () => {
    const log = captureLogs()
    return Effect.gen(function*() {
      yield* tokenValue
      yield* advance(HOUR - MIN + 1_000)
      expect(yield* tokenValue).toBe("token-1")
      // Tried again every 5 s while the token is usable, failing each time: one outage, one warning (not one a try).
      for (let i = 0; i < 4; i++) {
        yield* advance(6_000)
        expect(yield* tokenValue).toBe("token-1")
      }
      yield* advance(16_000)
      for (let i = 0; i < 3; i++) expect(Either.isLeft(yield* Effect.either(tokenValue))).toBe(true)
      const warnings = log.lines.filter((line) => line.startsWith("WARN") && line.includes("the token refresh failed"))
      expect(warnings).toHaveLength(2)
      expect(warnings[0]).toContain("going on with the current token")
      expect(warnings[1]).toMatch(/^WARN .*the current token is no longer usable; calls fail until a token is fetched/)
    }).pipe(
      provideClient(bothTokenRoutes(tokenThen(FinTest.json(503, { message: "down" }), "1 hour")), { maxRetries: 0 }),
      Effect.provide(log.layer)
    )
  })

  it.effect("an early refresh interrupted by the client's shutdown interrupts its waiter, rather than handing out the token", () => {
    const log = captureLogs()
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        FinTest.layerClient({
          "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
          "POST /v1/oauth/refresh-token": () => FinTest.stall
        }),
        scope
      )
      const provider = Context.get(context, TokenProvider.TokenProvider)
      yield* provider.get
      yield* advance(HOUR - MIN + 10_000)
      const waiter = yield* Effect.fork(Effect.exit(provider.get))
      yield* advance(100)
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Fiber.join(waiter))).toBe(true)
      const warnings = log.lines.filter((line) => line.includes("the token refresh failed"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("interrupted")
    }).pipe(Effect.provide(log.layer))
  })

  it.effect("callers waiting on a refresh that fails do not get back a token invalidated meanwhile", () => {
    let down = false
    const issuer = FinTest.tokenHandler({ lifetime: "1 hour" })
    const token: FinTest.Handler = (request) =>
      down ? FinTest.delayed("1 second", () => FinTest.json(503, { message: "down" }))(request) : issuer(request)
    return Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      const first = yield* provider.get
      // Due for a refresh, usable for 29 s more.
      yield* advance(HOUR - MIN + 1_000)
      down = true
      const waiter = yield* Effect.fork(Effect.either(provider.get))
      yield* Effect.yieldNow()
      // A call sent with it meanwhile was refused.
      yield* provider.invalidate(first)
      yield* advance(30_000)
      const got = yield* Fiber.join(waiter)
      expect(got).toMatchObject({ _tag: "Left", left: { _tag: "ApiError", status: 503 } })
    }).pipe(provideClient(bothTokenRoutes(token)))
  })

  it.effect("callers waiting on a refresh that hangs past the token's usable time do not get it back if it was refused", () => {
    let slow = false
    const issuer = FinTest.tokenHandler({ lifetime: "1 hour" })
    const token: FinTest.Handler = (request) => slow ? FinTest.delayed("40 seconds", issuer)(request) : issuer(request)
    return Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      const first = yield* provider.get
      yield* advance(HOUR - MIN + 1_000)
      slow = true
      const waiter = yield* Effect.fork(Effect.map(provider.get, Redacted.value))
      yield* Effect.yieldNow()
      yield* provider.invalidate(first)
      // Past its usable time (29 s) the waiter would go on with token-1; refused, it waits for the refresh instead.
      yield* advance(40_000)
      expect(yield* Fiber.join(waiter)).toBe("token-2")
    }).pipe(provideClient(bothTokenRoutes(token), { tokenTimeout: "1 minute" }))
  })

  it.effect("a refused token the service hands out again is good again: a failing refresh then goes on with it", () => {
    let down = false
    const same: FinTest.Handler = () =>
      down
        ? FinTest.json(503, { message: "down" })
        : Effect.map(Clock.currentTimeMillis, (now) =>
          FinTest.json(200, {
            access_token: "same-token",
            access_token_ttl: FinTest.formatServiceTimestamp(now + HOUR),
            current_time: FinTest.formatServiceTimestamp(now)
          }))
    return Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      yield* provider.invalidate(yield* provider.get)
      expect(Redacted.value(yield* provider.get)).toBe("same-token")
      yield* advance(HOUR - MIN + 1_000)
      down = true
      const fiber = yield* Effect.fork(Effect.map(provider.get, Redacted.value))
      yield* advance(5_000)
      expect(yield* Fiber.join(fiber)).toBe("same-token")
    }).pipe(provideClient(bothTokenRoutes(same)))
  })

  it.effect("a token call's error never carries a credential the service echoed back", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(getToken)
      expect(error).toMatchObject({ _tag: "ApiError", status: 422, code: "bad <redacted>" })
      const text = JSON.stringify(error) + String(error)
      expect(text).not.toContain("test-secret")
      expect(error.message).toBe(
        "The service answered 422 on POST /v1/oauth/token: client_secret <redacted> is not valid (client_secret: unknown: <redacted>)"
      )
      expect(error._tag === "ApiError" && error.fieldErrors).toEqual([
        { field: "client_secret", message: "unknown: <redacted>" }
      ])
    }).pipe(provideClient({
      "POST /v1/oauth/token": () =>
        FinTest.json(422, {
          message: "client_secret test-secret is not valid",
          error: { code: "bad test-secret" },
          errors: [{ client_secret: "unknown: test-secret" }]
        })
    })))

  // The client id is no secret: short, it would hide the service's own words (and its request id) wherever it recurs.
  it.effect("a token call's error keeps the client id and what merely starts like it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(getToken)
      expect([error._tag, error._tag === "RateLimitError" && error.requestId]).toEqual(["RateLimitError", "req-42-1"])
      expect(error.message).toBe("Rate limited (429) on POST /v1/oauth/token: Client 42 exceeded 420 token requests")
    }).pipe(provideClient({
      "POST /v1/oauth/token": () =>
        FinTest.json(429, { message: "Client 42 exceeded 420 token requests" }, { "x-request-id": "req-42-1" })
    }, { clientId: "42", maxRetries: 0 })))

  for (const awkward of ['pa"ss\\word', "tab\tsecret", "ends-with\\"]) {
    it.effect(`a token call's error never carries an echoed secret with JSON escapes in it: ${JSON.stringify(awkward)}`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(getToken)
        const escaped = JSON.stringify(awkward).slice(1, -1)
        for (const text of [JSON.stringify(error), String(error), error.message, error._tag === "ApiError" ? error.body ?? "" : ""]) {
          expect(text).not.toContain(awkward)
          expect(text).not.toContain(escaped)
        }
        expect(error.message).toBe("The service answered 422 on POST /v1/oauth/token: client_secret <redacted> is not valid")
      }).pipe(provideClient({
        "POST /v1/oauth/token": () =>
          FinTest.json(422, { message: `client_secret ${awkward} is not valid`, echo: { client_secret: awkward } })
      }, { clientSecret: Redacted.make(awkward) })))
  }

  for (
    const [style, escape] of [
      ["PHP's \\/", (text: string) => text.replaceAll("/", "\\/")],
      ["Python's \\u escapes", (text: string) => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")]
    ] as const
  ) {
    it.effect(`a token call's error never carries an echoed secret escaped in ${style}`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(getToken)
        expect(error.message).toBe("The service answered 422 on POST /v1/oauth/token: client_secret <redacted> is not valid")
        expect(JSON.stringify(error)).not.toContain("AbC+xyz")
      }).pipe(provideClient({
        "POST /v1/oauth/token": () =>
          FinTest.text(422, `{"message":"client_secret ${escape("sk_live/AbC+xyz==")} is not valid"}`, {
            "content-type": "application/json"
          })
      }, { clientSecret: Redacted.make("sk_live/AbC+xyz==") })))
  }

  // The refresh route's error reaches a caller too: a caller whose deadline comes before the refresh's next try ends
  // at once with it. The refresh sends no client secret, but it is redacted all the same, as on API calls (a debugging
  // page may dump a process's settings; found by the response fuzz).
  for (
    const [what, echoed, redacted] of [
      ["refresh token", "refresh_token refresh-1 is not valid", "refresh_token <redacted> is not valid"],
      ["client secret", `settings: client_secret=${LIVE_SECRET}`, "settings: client_secret=<redacted>"],
      // Not sent by the refresh either: the access token it replaces.
      ["access token", "access token token-1 has expired", "access token <redacted> has expired"]
    ] as const
  ) {
    it.effect(`a refresh call's error never carries the ${what} the service echoed back`, () =>
      Effect.gen(function*() {
        yield* FeeService.calculate(quoteRequest)
        // The access token used up, the refresh token (7 days) still good: the next caller waits on the refresh.
        yield* advance(2 * HOUR)
        const fiber = yield* Effect.fork(
          Effect.flip(FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "10 seconds" })))
        )
        yield* advance(1000)
        const error = yield* Fiber.join(fiber)
        expect(error).toMatchObject({ _tag: "RateLimitError", operation: "POST /v1/oauth/refresh-token" })
        expect(error.message).toContain(redacted)
        for (const credential of ["refresh-1", LIVE_SECRET, "token-1"]) {
          expect(JSON.stringify(error) + String(error)).not.toContain(credential)
        }
      }).pipe(provideClient({
        "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
        "POST /v1/oauth/refresh-token": () => FinTest.json(503, { message: echoed }, { "retry-after": "30" }),
        "POST /v1/fee-calculation": fee
      }, { clientSecret: LIVE_SECRET })))
  }

  // The session's refresh token, kept while refresh answers bring none, is still its own after any number of them: it
  // stays among the tokens an API call's error is redacted of (it is no older for each access token since).
  it.effect("an API call's error never carries the refresh token refresh answers kept, however many they were", () => {
    let issued = 0
    const pair = (refresh: boolean) => () =>
      FinTest.json(200, {
        access_token: `at-${++issued}-7c1e44b0d9aa`,
        access_token_ttl: "2026-01-01 01:00:00+00",
        ...(refresh ? { refresh_token: "rt-session-55aa01c3e9", refresh_token_ttl: "2026-02-01 00:00:00+00" } : {}),
        current_time: "2026-01-01 00:00:00+00"
      })
    return Effect.gen(function*() {
      for (let i = 0; i < 12; i++) {
        const error = yield* Effect.flip(FeeService.calculate(quoteRequest))
        expect(error.message, `access token ${issued}`).toContain("session <redacted> is invalid")
        yield* advance(HOUR)
      }
      expect(issued).toBe(12)
    }).pipe(provideClient({
      "POST /v1/oauth/token": pair(true),
      "POST /v1/oauth/refresh-token": pair(false),
      "POST /v1/fee-calculation": () => FinTest.json(422, { message: "session rt-session-55aa01c3e9 is invalid" })
    }, { maxRetries: 0 }))
  })

  it.effect("uses 10% of the lifetime as margin when that is shorter than refreshMargin", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(270_000 - 1) // 5 min lifetime - 30 s
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(1)
      expect(yield* count("POST /v1/oauth/*")).toBe(1)
      yield* tokenValue
      expect(yield* count("POST /v1/oauth/*")).toBe(2)
    }).pipe(provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "5 minutes" })))))

  // The token request after the first comes once `refreshAt` has passed on our clock, not a millisecond before, the
  // token answered by `answer(now)` (our clock's time).
  const refreshedAt = (refreshAt: number, answer: (now: number) => FinTest.Reply) =>
    Effect.gen(function*() {
      yield* tokenValue
      yield* advance(refreshAt - 1)
      yield* tokenValue
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
      yield* advance(1)
      yield* tokenValue
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
    }).pipe(provideClient({ "POST /v1/oauth/token": () => Effect.map(Clock.currentTimeMillis, answer) }))

  // The server's clock runs 3 hours ahead of ours; its token lives 10 minutes from its own now (a minute's margin).
  it.effect("corrects for clock skew with current_time", () =>
    refreshedAt(9 * MIN, (now) =>
      FinTest.json(200, {
        access_token: "skewed",
        access_token_ttl: FinTest.formatServiceTimestamp(now + 3 * HOUR + 10 * MIN),
        current_time: FinTest.formatServiceTimestamp(now + 3 * HOUR)
      })))

  // The service documents current_time; an answer without it is measured from its Date, as this machine's clock may be
  // off by more than a token lives (3 hours behind here: the token would be sent for 3 hours past its expiry).
  it.effect("without current_time, corrects for clock skew with the answer's Date", () =>
    refreshedAt(9 * MIN, (now) =>
      FinTest.json(200, {
        access_token: "skewed",
        access_token_ttl: FinTest.formatServiceTimestamp(now + 3 * HOUR + 10 * MIN)
      }, { date: new Date(now + 3 * HOUR).toUTCString() })))

  // A Date that has the token expired already is no clock of the service's (a proxy's, days fast): trusted, every
  // token would be refused; this machine's clock measures it instead.
  it.effect("without current_time, a Date past the token's expiry is not used: the token is kept, on this clock", () =>
    refreshedAt(24 * HOUR - MIN, (now) =>
      FinTest.json(200, {
        access_token: "proxied",
        access_token_ttl: FinTest.formatServiceTimestamp(now + 24 * HOUR)
      }, { date: new Date(now + 48 * HOUR).toUTCString() })))

  // A Date exactly at the token's expiry has it expired already: not the service's clock either.
  it.effect("without current_time, a Date at the token's very expiry is not used: the token is kept, our clock", () =>
    refreshedAt(24 * HOUR - MIN, (now) =>
      FinTest.json(200, {
        access_token: "proxied",
        access_token_ttl: FinTest.formatServiceTimestamp(now + 24 * HOUR)
      }, { date: new Date(now + 24 * HOUR).toUTCString() })))

  // The refresh token's expiry is measured on the server's clock too: 3 hours ahead of ours, its refresh token
  // (living 1 hour) must not be sent for 3 hours more, past its expiry, only to be refused.
  it.effect("corrects the refresh token's expiry for clock skew with current_time", () => {
    let issued = 0
    const issuer: FinTest.Handler = () =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        issued += 1
        return FinTest.json(200, {
          access_token: `skewed-${issued}`,
          access_token_ttl: FinTest.formatServiceTimestamp(now + 3 * HOUR + 2 * HOUR),
          refresh_token: `refresh-${issued}`,
          refresh_token_ttl: FinTest.formatServiceTimestamp(now + 3 * HOUR + HOUR),
          current_time: FinTest.formatServiceTimestamp(now + 3 * HOUR)
        })
      })
    return Effect.gen(function*() {
      expect(yield* tokenValue).toBe("skewed-1")
      yield* advance(2 * HOUR - MIN)
      expect(yield* tokenValue).toBe("skewed-2")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(0)
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
    }).pipe(provideClient(bothTokenRoutes(issuer)))
  })

  // A refused refresh token is routine, refused credentials are not: the metric tells them apart by grant.
  it.effect("issues anew when the refresh call gets 401, counted as a refresh_token grant's AuthenticationError", () =>
    Effect.gen(function*() {
      const calls = Effect.all([
        counterValue("effect_fin_token_requests_total", { grant: "refresh_token", outcome: "AuthenticationError" }),
        counterValue("effect_fin_token_requests_total", { grant: "client_credentials", outcome: "success" }),
        counterValue("effect_fin_token_requests_total", { grant: "client_credentials", outcome: "AuthenticationError" })
      ])
      const [refused, issued, denied] = yield* calls
      yield* tokenValue
      yield* advance(HOUR)
      expect(yield* tokenValue).toBe("token-2")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(1)
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
      expect(yield* calls).toEqual([refused + 1, issued + 2, denied])
    }).pipe(provideClient({
      "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
      "POST /v1/oauth/refresh-token": () => FinTest.json(401, { message: "Authentication failed" })
    })))

  // What a token route answers may echo the credentials sent: only its message and code are kept, never its body.
  it.effect("a token route's refusal keeps no body in the error, however much the service said", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(getToken)
      expect([error._tag, error.message, "body" in error ? error.body : undefined]).toEqual([
        "ApiError",
        "The service answered 400 on POST /v1/oauth/token: x",
        undefined
      ])
    }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.json(400, { message: "x", extra: "y" }) })))

  // The refresh token is refused, then the issue fails (503 through its retries): whether the refresh was due because
  // the token's lifetime passed or because it was invalidated (store cleared), the next fetch goes straight to the issue.
  const refreshDue = {
    "past the token's lifetime": Effect.zipRight(tokenValue, advance(HOUR)),
    "after an invalidation (store cleared)": Effect.flatMap(TokenProvider.TokenProvider, (p) => Effect.flatMap(p.get, p.invalidate))
  }
  // Its 401 asking a wait (an AuthenticationError's `retryAfter`) changes nothing: the issue's error is the fetch's.
  const refusals = { "": {}, " with Retry-After": { "retry-after": "120" } }
  for (const [when, due] of Object.entries(refreshDue)) for (const [asked, retryAfter] of Object.entries(refusals)) {
    it.effect(`${when}, a refused refresh token${asked} is not tried again when the issue after it failed too`, () =>
      Effect.gen(function*() {
        yield* due
        const failed = yield* Effect.fork(Effect.flip(tokenValue))
        for (let i = 0; i < 10; i++) yield* advance(1000)
        expect((yield* Fiber.join(failed))._tag).toBe("ApiError")
        expect(yield* count("POST /v1/oauth/refresh-token")).toBe(1)
        expect(yield* tokenValue).toBe("token-2")
        expect(yield* count("POST /v1/oauth/refresh-token")).toBe(1)
      }).pipe(provideClient({
        "POST /v1/oauth/token": (() => {
          const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
          let calls = 0
          // The first issue, then three failing attempts, then the service is back.
          return (request) => (++calls >= 2 && calls <= 4 ? FinTest.json(503, { message: "down" }) : tokens(request))
        })(),
        "POST /v1/oauth/refresh-token": () => FinTest.json(401, { message: "Authentication failed" }, retryAfter)
      })))
  }

  it.effect("issues anew when the refresh route keeps failing (503 through its retries)", () =>
    Effect.gen(function*() {
      yield* tokenValue
      yield* advance(HOUR)
      const fiber = yield* Effect.fork(tokenValue)
      yield* advance(1_500) // the refresh's two retries, after 0.5 s and 1 s
      expect(yield* Fiber.join(fiber)).toBe("token-2")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(3)
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
    }).pipe(provideClient({
      "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
      "POST /v1/oauth/refresh-token": () => FinTest.json(503, { message: "unavailable" })
    })))

  // A 408 is the route timing out, as a 503 is it being down, and a 429 the route slowing us down: not the refresh
  // token refused. The issue after it gets one attempt, and the next fetch tries the refresh token again.
  for (const [status, tag] of [[408, "ApiError"], [429, "RateLimitError"]] as const) {
    it.effect(`a refresh route answering ${status} through its retries has not refused the refresh token`, () =>
      Effect.gen(function*() {
        yield* tokenValue
        yield* advance(HOUR)
        for (const refreshes of [3, 6]) {
          const fiber = yield* Effect.fork(Effect.flip(tokenValue))
          for (let i = 0; i < 10; i++) yield* advance(1000)
          // The issue's error, which says the refresh failed before it (its caller waited through both).
          expect(yield* Fiber.join(fiber)).toMatchObject({
            _tag: "ApiError",
            status: 503,
            operation: "POST /v1/oauth/token",
            message: "The service answered 503 on POST /v1/oauth/token: down " +
              `(the token refresh before it failed too: ${tag} ${status} after 3 attempts)`
          })
          expect(yield* count("POST /v1/oauth/refresh-token")).toBe(refreshes)
          expect(yield* count("POST /v1/oauth/token")).toBe(1 + refreshes / 3)
        }
      }).pipe(provideClient({
        "POST /v1/oauth/token": (() => {
          const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
          let calls = 0
          return (request) => (++calls >= 2 ? FinTest.json(503, { message: "down" }) : tokens(request))
        })(),
        "POST /v1/oauth/refresh-token": () => FinTest.json(status, { message: "Slow down" })
      })))
  }

  // Both routes stalled once the token has expired: the caller waits through the refresh's three attempts and the
  // issue's one; the issue's TimeoutError says so, not only its own 10 s.
  it.effect("a stalled token route: the issue's TimeoutError after a failed refresh tells the refresh's attempts", () =>
    Effect.gen(function*() {
      yield* tokenValue
      yield* advance(HOUR)
      const fiber = yield* Effect.fork(Effect.flip(tokenValue))
      for (let i = 0; i < 45; i++) yield* advance(1000)
      expect(yield* Fiber.join(fiber)).toMatchObject({
        _tag: "TimeoutError",
        kind: "token",
        attempts: 1,
        message: "POST /v1/oauth/token: no complete response within 10s " +
          "(the token refresh before it failed too: TimeoutError after 3 attempts)"
      })
      expect([yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]).toEqual([3, 2])
    }).pipe(provideClient(bothTokenRoutes(tokenThen(FinTest.stall, "1 hour")), { tokenTimeout: "10 seconds" })))

  // The refresh's kind and what tells its cause: a system code; an attempt, not "1 attempts".
  it.effect("the refresh said before the issue's error: its system code, and one attempt in the singular", () =>
    Effect.gen(function*() {
      yield* tokenValue
      yield* advance(HOUR)
      expect(yield* Effect.flip(tokenValue)).toMatchObject({
        _tag: "ApiError",
        message: "The service answered 503 on POST /v1/oauth/token: down " +
          "(the token refresh before it failed too: TransportError ECONNREFUSED after 1 attempt)"
      })
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(503, { message: "down" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.fail("ECONNREFUSED")
    }, { maxRetries: 0 })))

  for (const region of ["interruptible", "uninterruptible"] as const) {
  it.effect(`callers do not wait past the token's usable time for an early refresh that hangs (${region} caller)`, () =>
    Effect.gen(function*() {
      yield* tokenValue
      // The refresh is due 1 min before expiry; the token is handed out until 30 s before it.
      yield* advance(HOUR - MIN)
      const fiber = yield* Effect.fork(region === "interruptible" ? tokenValue : Effect.uninterruptible(tokenValue))
      yield* advance(30_000 - 1)
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* advance(1)
      expect(yield* Fiber.join(fiber)).toBe("token-1")
      // Meanwhile the refresh timed out twice (tokenTimeout 10 s) and was retried, after 0.5 s and 1 s.
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(3)
    }).pipe(provideClient({
      "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
      "POST /v1/oauth/refresh-token": () => Effect.never
    })))
  }

  // As when the refresh fails fast (its retry wait past the deadline), a refresh that hangs does not end a call at its
  // deadline while the token in hand is still usable: the call goes on with it.
  it.effect("a call with a deadline shorter than the token's usable time goes on with it when the refresh hangs", () =>
    Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      yield* advance(HOUR - MIN)
      const fiber = yield* Effect.fork(
        Effect.either(FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "5 seconds" })))
      )
      for (let i = 0; i < 5; i++) yield* advance(1000)
      expect(Either.isRight(yield* Fiber.join(fiber))).toBe(true)
      const bearers = (yield* requestsTo("/v1/fee-calculation")).map((r) => r.headers.authorization)
      expect(bearers).toEqual(["Bearer token-1", "Bearer token-1"])
    }).pipe(provideClient({
      "POST /v1/oauth/token": ((): FinTest.Handler => {
        const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
        let calls = 0
        return (request) => (calls++ === 0 ? tokens(request) : Effect.never)
      })(),
      "POST /v1/oauth/refresh-token": () => Effect.never,
      "POST /v1/fee-calculation": fee
    })))

  // As effect_fin_requests_total counts a call that died or was interrupted (outcome "defect", "interrupted"), a token
  // call is counted once whatever its end: one made, and sent, is never missing from the count.
  it.effect("a token call that dies, or is interrupted in its retry wait, is counted in effect_fin_token_requests_total", () => {
    const tokenCalls = (outcome: string) => counterValue("effect_fin_token_requests_total", { outcome })
    return Effect.gen(function*() {
      const defects = yield* tokenCalls("defect")
      const died = yield* Effect.exit(tokenValue)
      expect(Exit.isFailure(died) && Cause.isDie(died.cause)).toBe(true)
      expect(yield* tokenCalls("defect")).toBe(defects + 1)
      // A 503, then the fetch interrupted in its retry wait: the caller gives up (no deadline of its own here), so
      // the fetch is interrupted by the client's scope closing.
      const interrupted = yield* tokenCalls("interrupted")
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        FinTest.layerClient({ "POST /v1/oauth/token": () => FinTest.json(503, { message: "unavailable" }) }),
        scope
      )
      const provider = Context.get(context, TokenProvider.TokenProvider)
      const waiter = yield* Effect.fork(Effect.exit(provider.get))
      yield* advance(10)
      yield* Scope.close(scope, Exit.void)
      yield* Fiber.join(waiter)
      expect(yield* tokenCalls("interrupted")).toBe(interrupted + 1)
    }).pipe(provideClient({ "POST /v1/oauth/token": () => { throw new Error("client bug") } }))
  })

  it.effect("retries a 503 from the token call, counted in effect_fin_retries_total as operation token", () =>
    Effect.gen(function*() {
      const tokenRetries = counterValue("effect_fin_retries_total", { operation: "token" })
      const before = yield* tokenRetries
      const fiber = yield* Effect.fork(tokenValue)
      yield* advance(500)
      expect(yield* Fiber.join(fiber)).toBe("token-1")
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
      expect(yield* tokenRetries).toBe(before + 1)
    }).pipe(provideClient({
      "POST /v1/oauth/token": (() => {
        const tokens = FinTest.tokenHandler()
        let calls = 0
        return (request) => (calls++ === 0 ? FinTest.json(503, { message: "unavailable" }) : tokens(request))
      })()
    })))

  const slowTokens = () => FinTest.delayed("100 millis", FinTest.tokenHandler())

  it.effect("100 concurrent callers on a cold cache make exactly one token request", () =>
    Effect.gen(function*() {
      const fibers = yield* Effect.forEach(Array.from({ length: 100 }), () => Effect.fork(tokenValue))
      yield* advance(100)
      const values = yield* Fiber.joinAll(fibers)
      expect(new Set(values)).toEqual(new Set(["token-1"]))
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient({ "POST /v1/oauth/token": slowTokens() })))

  it.effect("interrupting the caller that started the fetch does not fail the other 99", () =>
    Effect.gen(function*() {
      const first = yield* Effect.fork(tokenValue)
      yield* Effect.yieldNow()
      const others = yield* Effect.forEach(Array.from({ length: 99 }), () => Effect.fork(tokenValue))
      yield* Fiber.interrupt(first)
      yield* advance(100)
      const values = yield* Fiber.joinAll(others)
      expect(values.every((v) => v === "token-1")).toBe(true)
      expect(values).toHaveLength(99)
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient({ "POST /v1/oauth/token": slowTokens() })))

  // An interruption can reach the first caller right as it has forked the fetch (a fiber yields every 2,048 steps, and
  // another may interrupt it then): a supervisor that interrupts it as it forks stands in for that moment. The fetch
  // must still be the one the next caller waits for: with a store that fails (no lock to serialise them), a second
  // fetch would be a second token request.
  it.effect("a first caller interrupted as it forks the fetch leaves it recorded: the next caller joins it", () =>
    Effect.gen(function*() {
      const first = yield* Effect.fork(interruptedAtFirstFork(tokenValue))
      expect(Exit.isInterrupted(yield* Fiber.await(first))).toBe(true)
      const second = yield* Effect.fork(tokenValue)
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      yield* advance(100)
      expect(yield* Fiber.join(second)).toBe("token-1")
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(
      provideClient({ "POST /v1/oauth/token": slowTokens() }),
      Effect.provide(Layer.succeed(TokenStore.TokenStore, {
        ...TokenStore.makeMemory(),
        lock: () => Effect.fail(new TokenStore.TokenStoreError({ operation: "lock", message: "down" }))
      }))
    ))

  // A refusal (a 4xx) is held for a second (below), no longer.
  it.effect("does not cache a failed token call past a refusal's second", () =>
    Effect.gen(function*() {
      const first = yield* Effect.exit(tokenValue)
      expect(Exit.isFailure(first)).toBe(true)
      yield* advance(1000)
      expect(yield* tokenValue).toBe("token-1")
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
    }).pipe(provideClient({ "POST /v1/oauth/token": firstThenTokens(FinTest.json(422, { message: "bad", errors: [] })) })))

  it.effect("401 from the issue call is AuthenticationError, not retried", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(getToken)
      expect(error._tag).toBe("AuthenticationError")
      expect(error.message).toContain("Authentication failed")
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.json(401, { message: "Authentication failed" }) })))

  // Its head came, its body was lost: still the credentials refused, not a transport failure retried three times.
  it.effect("401 from the issue call whose body is lost is AuthenticationError too, not retried", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(getToken)
      expect(error).toMatchObject({ _tag: "AuthenticationError", status: 401 })
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.failBody("ECONNRESET", 401) })))

  // A revoked secret, against a service that may lock credentials out after failed attempts: each call in the second
  // after a refusal fails with that answer and sends nothing; the service is asked again once it has passed, and a
  // token it then issues ends the hold.
  it.effect("refused credentials are asked again once a second, not on every call", () => {
    let refusing = true
    const tokens = FinTest.tokenHandler()
    return Effect.gen(function*() {
      for (let i = 0; i < 5; i++) {
        if (i > 0) yield* advance(200)
        expect(yield* Effect.flip(FeeService.calculate(quoteRequest))).toMatchObject({
          _tag: "AuthenticationError",
          // What to check, for the operator: the service's words do not say.
          message: "Authentication failed (401) on POST /v1/oauth/token: invalid client " +
            "(the service refused the client credentials: check clientId and clientSecret, FIN_CLIENT_ID and " +
            "FIN_CLIENT_SECRET where read from configuration)"
        })
      }
      expect([yield* count("POST /v1/oauth/token"), yield* count("POST /v1/fee-calculation")]).toEqual([1, 0])
      yield* advance(200)
      expect(yield* Effect.flip(getToken)).toMatchObject({ _tag: "AuthenticationError" })
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
      refusing = false
      yield* advance(999)
      expect(yield* Effect.flip(getToken)).toMatchObject({ _tag: "AuthenticationError" })
      yield* advance(1)
      expect(yield* tokenValue).toBe("token-1")
      expect(yield* count("POST /v1/oauth/token")).toBe(3)
    }).pipe(provideClient({
      "POST /v1/fee-calculation": fee,
      "POST /v1/oauth/token": (request) => refusing ? FinTest.json(401, { message: "invalid client" }) : tokens(request)
    }))
  })

  // OAuth servers refuse a client with 400 invalid_client too; a 403 says the same. Held as a 401 is, handed out as it
  // came (no `retryAfter`: nothing to wait for), and not shortened by a maxRetryAfter of 0 (no wait the service asked).
  it.effect("a 400 or 403 refusal of the credentials is held for a second too, whatever maxRetryAfter", () =>
    Effect.forEach([400, 403], (status) => {
      let refusing = true
      const tokens = FinTest.tokenHandler()
      return Effect.gen(function*() {
        for (let i = 0; i < 3; i++) {
          const error = yield* Effect.flip(getToken)
          expect(error).toMatchObject({
            _tag: "ApiError",
            status,
            operation: "POST /v1/oauth/token",
            message: expect.stringMatching(/: invalid_client \(the service refused the client credentials: check /)
          })
          expect(error._tag === "ApiError" && error.retryAfter).toBeUndefined()
          yield* advance(300)
        }
        expect(yield* count("POST /v1/oauth/token")).toBe(1)
        refusing = false
        yield* advance(100)
        expect(yield* tokenValue).toBe("token-1")
        expect(yield* count("POST /v1/oauth/token")).toBe(2)
      }).pipe(provideClient({
        "POST /v1/oauth/token": (request) =>
          refusing ? FinTest.json(status, { message: "invalid_client" }) : tokens(request)
      }, { maxRetryAfter: "0 seconds" }))
    }, { discard: true }))

  // Its page lost on the way (a TransportError with the answer's status): still a refusal, its head said so; neither
  // retried nor sent again on every call.
  it.effect("a 400 or 403 whose body was lost is a refusal held for a second too", () =>
    Effect.forEach([400, 403], (status) =>
      Effect.gen(function*() {
        for (let i = 0; i < 3; i++) {
          expect(yield* Effect.flip(getToken)).toMatchObject({ _tag: "TransportError", reason: "BodyReadFailed", status })
          yield* advance(300)
        }
        expect(yield* count("POST /v1/oauth/token")).toBe(1)
        yield* advance(100)
        yield* Effect.flip(getToken)
        expect(yield* count("POST /v1/oauth/token")).toBe(2)
      }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.failBody("ECONNRESET", status) })), {
      discard: true
    }))

  // What to check is said when the answer names the credentials (`invalid_client`, as OAuth servers write it: its
  // `error` field, kept as the error's code), not for any 400 or 403 (a gateway's, an address not allowed).
  it.effect("a 400 or 403 refusal says to check the credentials only when it says invalid_client", () =>
    Effect.forEach([
      [400, { error: "invalid_client", error_description: "Client authentication failed" }, true],
      [403, { error: { code: "invalid_client", message: "unknown client" } }, true],
      [400, { error: "invalid_request" }, false],
      // Its own code says what it is about, whatever its description mentions.
      [400, { error: "invalid_request", error_description: "client_secret sent twice (not an invalid_client)" }, false],
      // The service's own bodies, whose code is the answer's status: their message says what it is about.
      [400, { status: 400, message: "invalid_client" }, true],
      [403, { error: { code: 403, message: "invalid_client" } }, true],
      [403, { message: "Your address is not allowed" }, false],
      [403, { message: "invalid_clients_list" }, false]
    ] as const, ([status, body, hint]) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(getToken)
        expect(error).toMatchObject({ _tag: "ApiError", status })
        expect(error.message.endsWith("client credentials: check clientId and clientSecret, FIN_CLIENT_ID and " +
          "FIN_CLIENT_SECRET where read from configuration)"))
          .toBe(hint)
      }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.json(status, body) })), { discard: true }))

  // A refusal's own Retry-After asking less than the second (0, a date past; or any, with a maxRetryAfter of 0) does
  // not end the hold: a refusal is not a wait the service asked for. One asking more is kept, `maxRetryAfter` at most.
  // Its error tells the hold that is left.
  it.effect("a refusal asking a shorter Retry-After is still held for the second; a longer one is kept", () =>
    Effect.forEach([
      ["0", {}, 1000],
      ["5", { maxRetryAfter: "0 seconds" }, 1000],
      ["30", {}, 30_000],
      ["30", { maxRetryAfter: "10 seconds" }, 10_000]
    ] as const, ([retryAfter, options, held]) =>
      Effect.gen(function*() {
        const waits: Array<number | undefined> = []
        for (let i = 0; i < 3; i++) {
          const error = yield* Effect.flip(getToken)
          expect(error).toMatchObject({ _tag: "ApiError", status: 403 })
          waits.push(error._tag === "ApiError" && error.retryAfter ? Duration.toMillis(error.retryAfter) : undefined)
          yield* advance(held === 1000 ? 300 : 3000)
        }
        expect(waits).toEqual(held === 1000 ? [1000, 700, 400] : [held, held - 3000, held - 6000])
        expect(yield* count("POST /v1/oauth/token")).toBe(1)
      }).pipe(provideClient({
        "POST /v1/oauth/token": () => FinTest.json(403, { message: "invalid_client" }, { "retry-after": retryAfter })
      }, options)), { discard: true }))

  // The token in hand refused by the service (an API call's 401: `invalidate`) while its refresh runs, and the
  // refresh failing: it is not gone on with, and the warning says so.
  it.effect("a token refused while its refresh fails is not said to be gone on with", () => {
    const log = captureLogs()
    return Effect.gen(function*() {
      const token = yield* getToken
      yield* advance(HOUR - MIN + 1_000)
      const caller = yield* Effect.fork(Effect.either(tokenValue))
      yield* advance(100)
      yield* TokenProvider.invalidate(token)
      for (let i = 0; i < 12; i++) yield* advance(1000)
      expect(Either.isLeft(yield* Fiber.join(caller))).toBe(true)
      const warnings = log.lines.filter((line) => line.includes("the token refresh failed"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("the current token is no longer usable")
    }).pipe(
      provideClient(bothTokenRoutes(tokenThen(FinTest.stall, "1 hour")), { tokenTimeout: "5 seconds", maxRetries: 0 }),
      Effect.provide(log.layer)
    )
  })

  // The issue that follows a refused refresh token is held as well when it is refused; a process holding a usable token
  // goes on with it meanwhile.
  it.effect("a refused refresh token then refused credentials: no token request in the second after", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR)
      // The issue's refusal as it came, with its hint; a refused refresh token is routine, not said.
      expect(yield* Effect.flip(getToken)).toMatchObject({
        _tag: "AuthenticationError",
        message: expect.stringMatching(/check clientId and clientSecret, FIN_CLIENT_ID and FIN_CLIENT_SECRET [^()]*\)$/)
      })
      expect(yield* Effect.flip(getToken)).toMatchObject({ _tag: "AuthenticationError" })
      expect([yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]).toEqual([1, 2])
      yield* advance(1000)
      expect(yield* Effect.flip(getToken)).toMatchObject({ _tag: "AuthenticationError" })
      // The refresh token the service refused is not sent again.
      expect([yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]).toEqual([1, 3])
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(401, { message: "invalid client" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.json(401, { message: "Authentication failed" })
    })))

  // A refresh that failed asking a wait (here 0) and then refused credentials: the refusal is the news, held for its
  // second with its hint, not the refresh's 503 (whose wait of 0 held nothing).
  it.effect("a failing refresh asking a wait, then refused credentials: the refusal, held for the second", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR)
      for (let i = 0; i < 2; i++) {
        expect(yield* Effect.flip(getToken)).toMatchObject({
          _tag: "AuthenticationError",
          operation: "POST /v1/oauth/token",
          message: expect.stringContaining("check clientId and clientSecret, FIN_CLIENT_ID and FIN_CLIENT_SECRET")
        })
      }
      expect([yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]).toEqual([1, 2])
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(401, { message: "invalid client" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.json(503, { message: "down" }, { "retry-after": "0" })
    }, { maxRetries: 0 })))

  // A refresh asking a longer wait (here 120 s, held for maxRetryAfter's 60) than refused credentials are held for:
  // that wait is kept, not a refresh and an issue each second.
  it.effect("a failing refresh asking a long wait, then refused credentials: the refresh's wait is kept", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR)
      for (let i = 0; i < 10; i++) {
        expect(yield* Effect.flip(getToken)).toMatchObject({ _tag: "RateLimitError", status: 503 })
        yield* advance(1000)
      }
      expect([yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]).toEqual([1, 2])
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(401, { message: "invalid client" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.json(503, { message: "down" }, { "retry-after": "120" })
    })))

  // The boundary of the rule above: a refresh wait exactly as long as the refusal's hold (1 s) is kept too.
  it.effect("a failing refresh asking exactly a second, then refused credentials: the refresh's wait is kept", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR)
      expect(yield* Effect.flip(getToken)).toMatchObject({ status: 503, operation: "POST /v1/oauth/refresh-token" })
      expect([yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]).toEqual([1, 2])
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(401, { message: "invalid client" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.json(503, { message: "down" }, { "retry-after": "1" })
    }, { maxRetries: 0 })))

  // The refresh token is sent only while usable: a retry of its refresh that would come after that is not made (the
  // service would refuse it as expired); an issue follows at once instead.
  it.effect("a refresh is not retried past its refresh token's usable time: an issue follows", () =>
    Effect.gen(function*() {
      const ping = HttpTransport.request({ method: "GET", path: "/v1/ping", response: Schema.Unknown })
      yield* FinTest.advanceUntilDone(ping)
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      // Issued at 0 (the refresh token usable until about 0.9 s), refused by the API at once; the refresh stalls to
      // 1 s, and its retry would go at 1.5 s: the issue goes at 1 s instead.
      expect(requests.filter((r) => r.path !== "/v1/ping").map((r) => `${r.path} at ${r.at}`)).toEqual([
        "/v1/oauth/token at 0",
        "/v1/oauth/refresh-token at 0",
        "/v1/oauth/token at 1000"
      ])
    }).pipe(
      Effect.withRandom(Random.fixed([0.5])),
      provideClient({
        "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "2 seconds", refreshLifetime: "1 second" }),
        "POST /v1/oauth/refresh-token": () => FinTest.stall,
        "GET /v1/ping": FinTest.sequence(FinTest.json(401, { message: "revoked" }), FinTest.json(200, {}))
      }, { tokenTimeout: "1 second", maxRetries: 1 })
    ))

  it.effect("a token call that stalls past tokenTimeout is a TimeoutError of kind token", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(getToken))
      yield* advance(1000)
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("TimeoutError")
      if (error._tag === "TimeoutError") expect(error.kind).toBe("token")
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
    }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.stall }, { tokenTimeout: "1 second", maxRetries: 0 })))

  it.effect("a fetch first asked for from an uninterruptible region still times out; the next caller fetches anew", () =>
    Effect.gen(function*() {
      // A finalizer or an acquireRelease acquire that needs a token: its fetch must keep its own timeouts.
      const first = yield* Effect.fork(Effect.exit(Effect.uninterruptible(getToken)))
      yield* Effect.yieldNow()
      const second = yield* Effect.fork(Effect.exit(tokenValue))
      yield* advance(1000)
      const [firstExit, secondExit] = [yield* Fiber.join(first), yield* Fiber.join(second)]
      expect(Exit.isFailure(firstExit) && Exit.isFailure(secondExit)).toBe(true)
      if (Exit.isFailure(secondExit)) expect(Cause.failureOption(secondExit.cause).pipe(Option.map((e) => e._tag))).toEqual(Option.some("TimeoutError"))
      expect(yield* tokenValue).toBe("token-1")
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
    }).pipe(provideClient({ "POST /v1/oauth/token": firstThenTokens(FinTest.stall) }, { tokenTimeout: "1 second", maxRetries: 0 })))

  it.effect("a caller after the client was shut down is interrupted, not left waiting", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(FinTest.layerClient({}), scope)
      const provider = Context.get(context, TokenProvider.TokenProvider)
      yield* Scope.close(scope, Exit.void)
      const exits = yield* Effect.all([Effect.exit(provider.get), Effect.exit(provider.get)], { concurrency: 2 })
      for (const exit of exits) expect(Exit.isInterrupted(exit)).toBe(true)
      expect(yield* Effect.provide(count("POST /v1/oauth/token"), context)).toBe(0)
    }))

  it.effect("a client kept past its scope gets no token, not even the cached one: it is interrupted", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(FinTest.layerClient({}), scope)
      const provider = Context.get(context, TokenProvider.TokenProvider)
      expect(Redacted.value(yield* provider.get)).toBe("token-1")
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Effect.exit(provider.get))).toBe(true)
    }))

  it.effect("FinTest.layerClient serves the refresh route too: past the refresh point, the token is refreshed", () =>
    Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      yield* advance(59 * MIN + 1000)
      yield* FeeService.calculate(quoteRequest)
      expect(yield* count("POST /v1/oauth/token")).toBe(1)
      expect((yield* requestsTo("/v1/oauth/refresh-token")).map((r) => r.body)).toEqual([{ refresh_token: "refresh-1" }])
      const bearers = (yield* requestsTo("/v1/fee-calculation")).map((r) => r.headers.authorization)
      expect(bearers).toEqual(["Bearer token-1", "Bearer token-2"])
    }).pipe(Effect.provide(FinTest.layerClient({ "POST /v1/fee-calculation": fee }))))

  // Through the module's accessors, as a program that sends its own requests would.
  it.effect("invalidate clears only the token it was given (compare-and-clear)", () =>
    Effect.gen(function*() {
      const first = yield* TokenProvider.get
      yield* TokenProvider.invalidate(Redacted.make("some-older-token"))
      expect(Redacted.value(yield* TokenProvider.get)).toBe("token-1")
      yield* TokenProvider.invalidate(first)
      expect(Redacted.value(yield* TokenProvider.get)).toBe("token-2")
    }).pipe(provideClient({ "POST /v1/oauth/token": FinTest.tokenHandler() })))

  // As any answer that does not decode: with its attempts and request id, for the service's support.
  it.effect("rejects a token response that is already expired, with current_time or by the clock", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 2; i++) {
        const error = yield* Effect.flip(getToken)
        expect(error).toMatchObject({
          _tag: "ResponseDecodeError",
          operation: "POST /v1/oauth/token",
          attempts: 1,
          requestId: "req-1",
          status: 200,
          issues: [{ path: "access_token_ttl", expected: "a time after current_time (without it, the answer's Date, or now)" }]
        })
      }
    }).pipe(provideClient({
      "POST /v1/oauth/token": (() => {
        // The test clock starts at 1970-01-01 00:00:00.
        const bodies = [
          { access_token_ttl: "2000-01-01 00:00:00+00", current_time: "2000-01-01 00:00:01+00" },
          { access_token_ttl: "1970-01-01 00:00:00+00" }
        ].map((times) => ({ access_token: "x", ...times }))
        return () => FinTest.json(200, bodies.shift(), { "x-request-id": "req-1" })
      })()
    })))

  // The schema is exported: what it decodes it encodes into text it reads back, and a number that is no time fails.
  it("TokenResponse encodes every expiry its decode reads, and refuses one that is no time", () => {
    const decoded = Schema.decodeUnknownSync(TokenProvider.TokenResponse)({
      access_token: "x",
      access_token_ttl: "9999-12-31 23:59:59-05"
    })
    const encoded = Schema.encodeSync(TokenProvider.TokenResponse)(decoded)
    const again = Schema.decodeUnknownSync(TokenProvider.TokenResponse)(encoded)
    expect(again.access_token_ttl).toBe(decoded.access_token_ttl)
    for (const ttl of [Number.NaN, 1e20]) {
      const fields = { access_token: Redacted.make("x"), access_token_ttl: ttl }
      expect(Either.isLeft(Schema.encodeEither(TokenProvider.TokenResponse)(fields))).toBe(true)
    }
  })

  // Its path is where the service put it, as for any other issue of an answer in the `data` envelope.
  it.effect("an already expired token answer in the data envelope is told at data.access_token_ttl", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(getToken)
      expect(error).toMatchObject({
        _tag: "ResponseDecodeError",
        issues: [{ path: "data.access_token_ttl", expected: "a time after current_time (without it, the answer's Date, or now)" }]
      })
    }).pipe(provideClient({
      "POST /v1/oauth/token": () =>
        FinTest.json(200, {
          data: {
            access_token: "x",
            access_token_ttl: "2000-01-01 00:00:00+00",
            current_time: "2000-01-01 00:00:01+00"
          }
        })
    })))

  // It goes into the Authorization header: one no header can carry would fail every call until it expired.
  it.effect("rejects, and does not cache, a token that is not visible ASCII (it could not be sent as a bearer)", () =>
    Effect.gen(function*() {
      // Nor one past 8 KiB, which a server's header limit refuses with a 431 on every call (8 KiB itself is taken).
      for (const token of ["tök€n", "abc def", "abc\ndef", "t".repeat(8193)]) {
        const error = yield* Effect.flip(getToken)
        expect(error).toMatchObject({ _tag: "ResponseDecodeError", operation: "POST /v1/oauth/token" })
        expect(error.message).toContain("visible ASCII")
        expect(error.message).not.toContain(token)
      }
      expect(yield* tokenValue).toBe("k".repeat(8192))
      expect(yield* count("POST /v1/oauth/token")).toBe(5)
    }).pipe(provideClient({
      "POST /v1/oauth/token": (() => {
        const tokens = ["tök€n", "abc def", "abc\ndef", "t".repeat(8193), "k".repeat(8192)]
        return () => FinTest.json(200, { access_token: tokens.shift(), access_token_ttl: "2099-01-01 00:00:00+00" })
      })()
    }, { maxRetries: 0 })))

  // Past the safe integers a wait was no Duration the fetch's recorded failure could encode: the call died.
  for (
    const [header, value] of [["retry-after", "9007199254741"], ["retry-after-ms", "99999999999999999999"]] as const
  ) {
    it.effect(`a token endpoint asking to wait a ${header} past the safe integers: a RateLimitError`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(FeeService.calculate(quoteRequest))
        expect(error).toMatchObject({ _tag: "RateLimitError", status: 429, operation: "POST /v1/oauth/token" })
        expect(yield* count("POST /v1/fee-calculation")).toBe(0)
      }).pipe(provideClient({
        "POST /v1/oauth/token": () => FinTest.json(429, { message: "slow down" }, { [header]: value }),
        "POST /v1/fee-calculation": fee
      })))
  }

  it.effect("layerStatic answers a fixed token", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("static")
    }).pipe(Effect.provide(TokenProvider.layerStatic("static"))))

  it("layerStatic refuses a token that could not be sent as a bearer: its build dies, the token not quoted", () => {
    // A Redacted wiped (`Redacted.unsafeWipe`, a layer built again after a shutdown that wiped it) holds no token either.
    const wiped = Redacted.make("static")
    Redacted.unsafeWipe(wiped)
    const refused = [
      "",
      " ",
      "two words",
      "tok\n",
      "t".repeat(8193),
      Redacted.make("tab\there"),
      Redacted.make(42 as unknown as string),
      wiped
    ]
    for (const token of refused) {
      const defect = defectOf(TokenProvider.layerStatic(token))
      expect(defect, String(token)).toEqual(illegalArgument(
        "effect-fin: TokenProvider.layerStatic: the token is not one of 1 to 8192 visible ASCII characters (no spaces)"
      ))
    }
  })

  // The fee service on `provider` (a user's own, or a wrapper of the real one) and a fake service.
  const onProvider = (
    provider: Layer.Layer<TokenProvider.TokenProvider, never, FinConfig.FinConfig | HttpClient.HttpClient>,
    fees: FinTest.Handler = fee
  ) =>
    FeeService.layer.pipe(
      Layer.provideMerge(HttpTransport.layer),
      Layer.provideMerge(provider),
      Layer.provideMerge(FinConfig.layer({ clientId: "a", clientSecret: "b", baseUrl: "http://127.0.0.1:4010" })),
      Layer.provideMerge(FinTest.layerHttpClient({
        "POST /v1/oauth/token": FinTest.tokenHandler(),
        "POST /v1/fee-calculation": fees
      }))
    )

  // A decorator written the usual way (the inner service spread, `get` overridden) is what the transport asks.
  it.effect("a provider that wraps the real one, overriding get, is asked through its get", () => {
    let asked = 0
    const wrapped = Layer.scoped(
      TokenProvider.TokenProvider,
      Effect.map(TokenProvider.make, (inner) =>
        TokenProvider.TokenProvider.of({
          ...inner,
          get: Effect.suspend(() => {
            asked += 1
            return inner.get
          })
        }))
    )
    return Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      yield* FeeService.calculate(quoteRequest)
      expect(asked).toBe(2)
    }).pipe(Effect.provide(onProvider(wrapped)))
  })

  // The transport cannot tell such a provider its deadline: the call's deadline still holds over its waits.
  const deadlineHolds = (provider: TokenProvider.Service, fees?: FinTest.Handler) =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(
        Effect.flip(FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "2 seconds" })))
      )
      yield* advance(1_999)
      expect(fiber.unsafePoll()).toBeNull()
      yield* advance(1)
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "TimeoutError", kind: "deadline" })
    }).pipe(Effect.provide(onProvider(Layer.succeed(TokenProvider.TokenProvider, provider), fees)))

  // Its token comes after the deadline, and no timer could end the wait (the thread was blocked meanwhile): the call
  // must not go out then, late, where it may move money after its caller was told it timed out.
  it.live("a token that comes after the deadline (a provider of the user's own that blocks) sends nothing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ deadline: "50 millis" }))
      )
      expect(error).toMatchObject({ _tag: "TimeoutError", kind: "deadline", attempts: 0 })
      expect(yield* count("POST /v1/fee-calculation")).toBe(0)
    }).pipe(Effect.provide(onProvider(Layer.succeed(TokenProvider.TokenProvider, {
      get: Effect.sync(() => {
        const until = performance.now() + 120
        while (performance.now() < until) {
          // blocked, as a synchronous call of the provider's own would block
        }
        return Redacted.make("token-late")
      }),
      invalidate: () => Effect.void
    })))))

  it.effect("a provider of the user's own whose get never ends: the call ends at its deadline", () =>
    deadlineHolds({ get: Effect.never, invalidate: () => Effect.void }))

  it.effect("a provider of the user's own that never ends invalidating after a 401: the call ends at its deadline", () => {
    let calls = 0
    return deadlineHolds(
      { get: Effect.succeed(Redacted.make("token-1")), invalidate: () => Effect.never },
      () => ++calls === 1 ? FinTest.json(401, { message: "Authentication failed" }) : fee()
    )
  })

  // The refresh token is usable until 30 s before its expiry (half the margin): past that, and at that very moment.
  for (const [when, after] of [["past", 45 * MIN], ["at the end of", 30 * MIN - 30_000]] as const) {
    it.effect(`after an invalidation (store cleared), a refresh token ${when} its usable time is not sent`, () =>
      Effect.gen(function*() {
        const provider = yield* TokenProvider.TokenProvider
        const first = yield* provider.get
        yield* advance(after)
        yield* provider.invalidate(first)
        expect(yield* tokenValue).toBe("token-2")
        expect(yield* count("POST /v1/oauth/refresh-token")).toBe(0)
      }).pipe(
        provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "1 hour", refreshLifetime: "30 minutes" })))
      ))
  }

  // refreshAt is 4 s before expiry, the token usable until 2 s before it; the refresh fails at once. At 1 s before
  // expiry, and exactly at its usable time (usable *until*), a fetch is made (and fails) rather than token-1 handed out.
  for (const [when, after] of [["past its usable time", 3_000], ["at the very moment its usable time ends", 2_000]] as const) {
    it.effect(`the pause after a failed refresh never hands the token out ${when}`, () =>
      Effect.gen(function*() {
        expect(yield* tokenValue).toBe("token-1")
        yield* advance(HOUR - 4_000)
        expect(yield* tokenValue).toBe("token-1")
        yield* advance(after)
        expect((yield* Effect.flip(tokenValue))._tag).toBe("ApiError")
      }).pipe(provideClient(bothTokenRoutes((() => {
        const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
        let calls = 0
        return (request) => (++calls === 1 ? tokens(request) : FinTest.json(503, { message: "down" }))
      })()), { refreshMargin: "4 seconds", maxRetries: 0 })))
  }

  // With a store that cannot be read, the provider's own cache is all there is: a late 401 for an older token must not
  // drop the current one (a second token request, which a service that revokes on issue answers by revoking it).
  it.effect("invalidating an older token leaves the current one cached (compare-and-clear)", () =>
    Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      const first = yield* provider.get
      yield* advance(HOUR - MIN)
      expect(yield* tokenValue).toBe("token-2")
      yield* provider.invalidate(first)
      expect(yield* tokenValue).toBe("token-2")
      expect(yield* count("POST /v1/oauth/*")).toBe(2)
    }).pipe(
      provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "1 hour" }))),
      Effect.provide(Layer.succeed(TokenStore.TokenStore, {
        ...TokenStore.makeMemory(),
        get: () => Effect.fail(new TokenStore.TokenStoreError({ operation: "get", message: "down" }))
      }))
    ))

  // Every call reads the store when it has no token: with the token endpoint refusing too, a line per call. An outage
  // is one warning, its end (an answer to the operation that failed) one Info line, the failures between at Debug; a
  // new outage warns again. A store that answers reads but not locks does not say an outage and its end per call.
  for (const failingOps of [["get", "clear"], ["lock"]] as const) {
    it.effect(`a token store outage (${failingOps.join(", ")} failing) is one warning, its end one Info line`, () => {
      const log = captureLogs()
      let down = true
      const failing = (operation: typeof failingOps[number]) =>
        Effect.suspend(() =>
          down && failingOps.includes(operation as never)
            ? Effect.fail(new TokenStore.TokenStoreError({ operation, message: "Redis is not connected" }))
            : Effect.void
        )
      const memory = TokenStore.makeMemory()
      const store: TokenStore.Service = {
        ...memory,
        get: (key) => Effect.zipRight(failing("get"), memory.get(key)),
        clear: (key, token) => Effect.zipRight(failing("clear"), memory.clear(key, token)),
        lock: (key) => Effect.zipRight(failing("lock"), memory.lock(key))
      }
      const said = () =>
        log.lines.filter((line) => line.includes("token store")).map((line) => line.split(" ")[0])
      return Effect.gen(function*() {
        for (let i = 0; i < 10; i++) yield* Effect.either(FeeService.calculate(quoteRequest))
        expect(said()).toEqual(["WARN"])
        down = false
        yield* Effect.either(FeeService.calculate(quoteRequest))
        down = true
        yield* Effect.either(FeeService.calculate(quoteRequest))
        expect(said()).toEqual(["WARN", "INFO", "WARN"])
      }).pipe(
        provideClient({
          "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody),
          "POST /v1/oauth/token": () => FinTest.json(401, { message: "invalid client" })
        }),
        Effect.provide(Layer.succeed(TokenStore.TokenStore, store)),
        Effect.provide(log.layer)
      )
    })
  }

  // An outage begun by an operation asked only now and then (a clear after a 401, the set, unlock and failure read of a
  // fetch) ends when it answers again: each call below meets a 401, so clears and fetches again. Each failure comes
  // after the store did the work (its answer lost): a lock not released would hold the next fetch for lockTtl.
  for (const failingOp of ["clear", "set", "unlock", "failure"] as const) {
    it.effect(`a token store outage begun by ${failingOp} ends when ${failingOp} answers again`, () => {
      const log = captureLogs()
      let down = true
      const failing = (operation: string) =>
        Effect.suspend(() =>
          down && operation === failingOp
            ? Effect.fail(new TokenStore.TokenStoreError({ operation, message: "Redis is not connected" }))
            : Effect.void
        )
      const memory = TokenStore.makeMemory()
      const store: TokenStore.Service = {
        ...memory,
        clear: (key, token) => Effect.zipLeft(memory.clear(key, token), failing("clear")),
        set: (key, tokens, owner) => Effect.zipLeft(memory.set(key, tokens, owner), failing("set")),
        unlock: (key, owner, failure) => Effect.zipLeft(memory.unlock(key, owner, failure), failing("unlock")),
        failure: (key) => Effect.zipLeft(memory.failure(key), failing("failure"))
      }
      let fees = 0
      const said = () => log.lines.filter((line) => line.includes("token store")).map((line) => line.split(" ")[0])
      return Effect.gen(function*() {
        yield* FeeService.calculate(quoteRequest)
        expect(said()).toEqual(["WARN"])
        down = false
        yield* FeeService.calculate(quoteRequest)
        expect(said()).toEqual(["WARN", "INFO"])
      }).pipe(
        provideClient({
          "POST /v1/fee-calculation": () =>
            fees++ % 2 === 0 ? FinTest.json(401, { message: "expired" }) : FinTest.json(200, quoteBody),
          "POST /v1/oauth/token": FinTest.tokenHandler()
        }),
        Effect.provide(Layer.succeed(TokenStore.TokenStore, store)),
        Effect.provide(log.layer)
      )
    })
  }

  // A failure of another operation during an outage (a clear after a 401, after a lock failed) does not take it over:
  // the outage still ends when the lock answers.
  it.effect("a token store outage ends with an answer to the operation that began it, whatever failed since", () => {
    const log = captureLogs()
    let locks = 0
    const memory = TokenStore.makeMemory()
    const store: TokenStore.Service = {
      ...memory,
      lock: (key) =>
        locks++ === 0
          ? Effect.fail(new TokenStore.TokenStoreError({ operation: "lock", message: "timed out" }))
          : memory.lock(key),
      clear: () => Effect.fail(new TokenStore.TokenStoreError({ operation: "clear", message: "timed out" }))
    }
    let fees = 0
    const said = () => log.lines.filter((line) => line.includes("token store")).map((line) => line.split(" ")[0])
    return Effect.gen(function*() {
      // The lock fails, then the 401's clear; the call sent again fetches under the lock, which answers.
      yield* FeeService.calculate(quoteRequest)
      expect(locks).toBe(2)
      expect(said()).toEqual(["WARN", "DEBUG", "INFO"])
    }).pipe(
      provideClient({
        "POST /v1/fee-calculation": () =>
          fees++ === 0 ? FinTest.json(401, { message: "expired" }) : FinTest.json(200, quoteBody),
        "POST /v1/oauth/token": FinTest.tokenHandler()
      }),
      Effect.provide(Layer.succeed(TokenStore.TokenStore, store)),
      Effect.provide(log.layer),
      Logger.withMinimumLogLevel(LogLevel.All)
    )
  })

  // Built without a store, the provider watches the one in the caller's context too.
  it.effect("a token store outage of the caller's store ends with one Info line", () => {
    const log = captureLogs()
    let down = true
    const memory = TokenStore.makeMemory()
    const store: TokenStore.Service = {
      ...memory,
      get: (key) =>
        down ? Effect.fail(new TokenStore.TokenStoreError({ operation: "get", message: "refused" })) : memory.get(key)
    }
    const said = () => log.lines.filter((line) => line.includes("token store")).map((line) => line.split(" ")[0])
    return Effect.gen(function*() {
      yield* Effect.either(FeeService.calculate(quoteRequest))
      // What failed, for the operator.
      expect(log.lines.find((line) => line.startsWith("WARN"))).toMatch(/"operation":"get"/)
      down = false
      yield* Effect.either(FeeService.calculate(quoteRequest))
      expect(said()).toEqual(["WARN", "INFO"])
    }).pipe(
      Effect.provideService(TokenStore.TokenStore, store),
      provideClient({
        "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody),
        "POST /v1/oauth/token": () => FinTest.json(401, { message: "invalid client" })
      }),
      Effect.provide(log.layer)
    )
  })

  // Built without a store, the provider uses each caller's (else memory): one caller's store answering is not the end
  // of another's outage, which would be a warning and an Info line on every call in turn.
  it.effect("a token store outage is the store's own: another caller's store answering does not end it", () => {
    const log = captureLogs()
    const down: TokenStore.Service = {
      ...TokenStore.makeMemory(),
      get: () => Effect.fail(new TokenStore.TokenStoreError({ operation: "get", message: "Redis is not connected" }))
    }
    const said = () => log.lines.filter((line) => line.includes("token store")).map((line) => line.split(" ")[0])
    return Effect.gen(function*() {
      const quote = Effect.either(FeeService.calculate(quoteRequest))
      for (let i = 0; i < 3; i++) {
        yield* Effect.provideService(quote, TokenStore.TokenStore, down)
        yield* quote
      }
      expect(said()).toEqual(["WARN"])
    }).pipe(
      provideClient({
        "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody),
        "POST /v1/oauth/token": () => FinTest.json(401, { message: "invalid client" })
      }),
      Effect.provide(log.layer)
    )
  })

  // A token route answering `first` (asking for a wait), then issuing: each call in the wait kept (maxRetryAfter's
  // 60 s at most) fails at once with that answer and sends no token request (as many as the calls, a rate-limited
  // service hammered by every one of them), its `retryAfter` the wait that is left, the first call's too (not the
  // service's two minutes or a day); the call after it asks again.
  const waitKept = (first: FinTest.Reply, error: { readonly _tag: string; readonly status: number }) =>
    Effect.gen(function*() {
      const answer = { ...error, operation: "POST /v1/oauth/token" }
      for (let i = 0; i < 6; i++) {
        if (i > 0) yield* advance(10_000)
        expect(yield* Effect.flip(FeeService.calculate(quoteRequest)))
          .toMatchObject({ ...answer, retryAfter: Duration.seconds(60 - 10 * i) })
      }
      expect([yield* count("POST /v1/oauth/token"), yield* count("POST /v1/fee-calculation")]).toEqual([1, 0])
      yield* advance(10_000)
      expect((yield* FeeService.calculate(quoteRequest)).exchange_rate).toBe(1.45)
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
    }).pipe(provideClient({ "POST /v1/fee-calculation": fee, "POST /v1/oauth/token": firstThenTokens(first) }))

  it.effect("a token fetch answered 429 with Retry-After: no other token request before its wait has passed", () =>
    waitKept(FinTest.json(429, { message: "Too many requests" }, { "retry-after": "120" }), {
      _tag: "RateLimitError",
      status: 429
    }))

  // Credentials refused with a wait (a service locking them out after failed attempts): not asked again before it.
  it.effect("a token fetch answered 401 with Retry-After: no other token request before its wait has passed", () =>
    waitKept(FinTest.json(401, { message: "Locked out" }, { "retry-after": "120" }), {
      _tag: "AuthenticationError",
      status: 401
    }))

  // Its body lost on the way (a TransportError with the answer's status): the wait it asked for is kept all the same.
  it.effect("a token fetch answered 429 whose body is lost: its Retry-After is kept all the same", () =>
    waitKept(FinTest.failBody("ECONNRESET", 429, { "retry-after": "120" }), {
      _tag: "TransportError",
      status: 429
    }))

  // A 503 asking for a day (a gateway's maintenance page): a service back after a minute is asked again, rather than
  // every call failing for a day.
  it.effect("a token answer asking for a wait of days: it is kept for maxRetryAfter at most", () =>
    waitKept(FinTest.json(503, { message: "maintenance" }, { "retry-after": "86400" }), {
      _tag: "RateLimitError",
      status: 503
    }))

  // The same wait asked of a refresh: the token in hand serves on, and neither route is asked again before the wait has
  // passed (a refresh and an issue were sent every 5 s, the refresh pause).
  it.effect("a refresh answered 429 with Retry-After: the token in hand serves on, no token request before the wait", () => {
    const limited = FinTest.json(429, { message: "Too many requests" }, { "retry-after": "120" })
    const log = captureLogs()
    return Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(9 * MIN)
      for (let i = 0; i < 25; i++) {
        expect(yield* tokenValue).toBe("token-1")
        yield* advance(1000)
      }
      expect([yield* count("POST /v1/oauth/refresh-token"), yield* count("POST /v1/oauth/token")]).toEqual([1, 2])
      // The pause before the next refresh lasts the wait too: no refresh failing at once from the kept answer, and
      // warning of it, every 5 s.
      expect(log.lines.filter((line) => line.includes("the token refresh failed"))).toHaveLength(1)
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(limited),
      "POST /v1/oauth/refresh-token": () => limited
    }), Effect.provide(log.layer))
  })

  // A caller waiting on the refresh of a token due but usable gets that token back if the refresh fails, only while it
  // is still usable: the wall clock stepped past its usable time while the refresh ran (an NTP step), it fails.
  it.live("a refresh failing once the wall clock stepped past the token's usable time: that token is not given", () =>
    withWallClockSetBack((setBack) => {
      const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
      let issued = 0
      return Effect.gen(function*() {
        expect(yield* tokenValue).toBe("token-1")
        // 45 s before its expiry: due for a refresh (margin 60 s), usable until 30 s before.
        setBack(-(HOUR - 45_000))
        expect(yield* Effect.flip(getToken)).toMatchObject({ status: 503 })
      }).pipe(provideClient({
        "POST /v1/oauth/token": (request) => issued++ === 0 ? tokens(request) : FinTest.json(503, { message: "down" }),
        "POST /v1/oauth/refresh-token": () => {
          setBack(-HOUR)
          return FinTest.json(503, { message: "down" })
        }
      }, { maxRetries: 0 }))
    }))

  // The wait is measured as a timer measures it: the wall clock set back an hour (an NTP step) during a 2 s wait does
  // not make it an hour and 2 s.
  it.live("a token answer's wait is not lengthened by a wall clock set back", () =>
    withWallClockSetBack((setBack) =>
      Effect.gen(function*() {
        expect(yield* Effect.flip(FeeService.calculate(quoteRequest))).toMatchObject({ _tag: "RateLimitError" })
        setBack(HOUR)
        yield* Effect.sleep("2500 millis")
        expect((yield* FeeService.calculate(quoteRequest)).exchange_rate).toBe(1.45)
        expect(yield* count("POST /v1/oauth/token")).toBe(2)
      }).pipe(provideClient({
        "POST /v1/fee-calculation": fee,
        "POST /v1/oauth/token": firstThenTokens(FinTest.json(429, { message: "slow down" }, { "retry-after": "2" }))
      }, { maxRetryAfter: "1 second", maxRetries: 0 }))
    ))

  // A fetch's retry wait is announced on monotonic time, as a caller's deadline is: with the wall clock an hour
  // behind, the fetch's next try (30 s off) is still past a 1 s deadline, so the call ends at once with the 429.
  it.live("a token fetch's retry wait past a call's deadline ends the call at once, the wall clock set back", () =>
    withWallClockSetBack((setBack) =>
      Effect.gen(function*() {
        setBack(HOUR)
        const error = yield* Effect.flip(FeeService.calculate(quoteRequest))
        expect(error).toMatchObject({ _tag: "RateLimitError", status: 429, operation: "POST /v1/oauth/token" })
      }).pipe(provideClient({
        "POST /v1/fee-calculation": fee,
        "POST /v1/oauth/token": firstThenTokens(FinTest.json(429, { message: "slow down" }, { "retry-after": "30" }))
      }, { deadline: "1 second" }))
    ))

  // The refresh route answers 429 asking for 2 minutes; the issue tried after it answers 500 (no wait): the wait
  // (kept for maxRetryAfter, 60 s) holds, rather than a refresh and an issue going every 5 s.
  it.effect("a refresh answer asking for a wait, the issue after it failing without one: the refresh's wait is kept", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(59 * MIN + 1_000)
      expect(yield* tokenValue).toBe("token-1")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(1)
      // Every 6 s while the token is still usable (until 30 s before it expires).
      for (let i = 0; i < 4; i++) {
        yield* advance(6_000)
        expect(yield* tokenValue).toBe("token-1")
      }
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(1)
      expect(yield* count("POST /v1/oauth/token")).toBe(2)
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(500, { message: "down" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.json(429, { message: "slow" }, { "retry-after": "120" })
    })))

  // The rule's other side: an issue that asked a wait of its own is the news (its wait kept), the refresh said after.
  it.effect("a refresh answer asking for a wait, the issue after it asking one too: the issue's answer", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(HOUR)
      const error = yield* Effect.flip(getToken)
      expect(error).toMatchObject({ _tag: "RateLimitError", status: 429, operation: "POST /v1/oauth/token" })
      expect(error.message).toMatch(/\(the token refresh before it failed too: RateLimitError 429 after 1 attempt\)$/)
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(429, { message: "slow" }, { "retry-after": "10" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.json(429, { message: "slow" }, { "retry-after": "120" })
    }, { maxRetries: 0 })))

  // The refresh's failure is said by its status or system code: not a 200 whose body did not decode, which would read
  // as a success.
  it.effect("a refresh answered 200 that does not decode, then a failed issue: the issue's error says no 200", () =>
    Effect.gen(function*() {
      yield* tokenValue
      yield* advance(HOUR)
      const error = yield* Effect.flip(tokenValue)
      expect(error).toMatchObject({ _tag: "ApiError", status: 503 })
      expect(error.message).toMatch(/\(the token refresh before it failed too: ResponseDecodeError after 1 attempt\)$/)
      expect(error.message).not.toContain("200")
    }).pipe(provideClient({
      "POST /v1/oauth/token": tokenThen(FinTest.json(503, { message: "down" }), "1 hour"),
      "POST /v1/oauth/refresh-token": () => FinTest.json(200, { unexpected: true })
    }, { maxRetries: 0 })))
})

describe("TokenProvider schemas with effect's schema tools", () => {
  // The timestamps are epoch milliseconds: an Arbitrary's NaN, fractions or far years did not encode, or came back
  // other than they were.
  it("every TokenResponse an Arbitrary makes encodes and decodes back to itself", () => {
    const equivalent = Schema.equivalence(TokenProvider.TokenResponse)
    for (const [tokens, again] of roundTrips(TokenProvider.TokenResponse)) expect(equivalent(again, tokens)).toBe(true)
  })
})
