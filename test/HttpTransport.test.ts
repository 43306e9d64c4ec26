import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import { inspect } from "node:util"
import { runInNewContext } from "node:vm"
import { describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import * as BigDecimal from "effect/BigDecimal"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Data from "effect/Data"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as MutableHashMap from "effect/MutableHashMap"
import type * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Supervisor from "effect/Supervisor"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Tracer from "effect/Tracer"
import * as FeeService from "../src/FeeService.js"
import * as FinClient from "../src/FinClient.js"
import { FinError } from "../src/FinError.js"
import * as FinConfig from "../src/FinConfig.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as SubdivisionService from "../src/SubdivisionService.js"
import * as TokenProvider from "../src/TokenProvider.js"
import * as Closing from "../src/internal/closing.js"
import { parseErrorBody } from "../src/internal/errorBody.js"
import { MAX_RESPONSE_BYTES } from "../src/internal/http.js"
import { serverAttributesOf } from "../src/internal/spans.js"
import { backoff } from "../src/internal/retry.js"
import { parseRetryAfter } from "../src/internal/retryAfter.js"
import { timeoutFail } from "../src/internal/timeLimits.js"
import {
  acceptPayment,
  advance,
  captureLogs,
  counterValue,
  countListeners,
  eventually,
  fixedRandom,
  forkSleeping,
  provideClient,
  quoteBody,
  quoteRequest,
  recordingTracer,
  withWallClockSetBack
} from "./support.js"

const FEE = "POST /v1/fee-calculation"

// `effect_fin_requests_total` of one operation: [outcome, count] for each outcome seen.
const outcomesOf = (operation: string) =>
  Effect.sync(() =>
    Metric.unsafeSnapshot().flatMap((pair) => {
      const tags = Object.fromEntries(pair.metricKey.tags.map((tag) => [tag.key, tag.value]))
      return pair.metricKey.name === "effect_fin_requests_total" && tags.operation === operation
        ? [[tags.outcome, (pair.metricState as MetricState.MetricState.Counter<number>).count] as const]
        : []
    })
  )
// The attributes of each recorded span named `name`, but for those the same on every span of a client or repeating
// the outcome (`server.address`, `server.port`, `url.full`, `error.type`: each checked once, below).
const shared = new Set(["server.address", "server.port", "url.full", "error.type"])
const attributesOf = (spans: ReadonlyArray<Tracer.Span>, name: string) =>
  spans.filter((span) => span.name === name).map((span) =>
    Object.fromEntries([...span.attributes].filter(([key]) => !shared.has(key)))
  )
const calculate = FeeService.calculate(quoteRequest)
const attempts = Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(FEE))
// Issued or refreshed: after a 401 the provider refreshes with the refresh token it holds.
const tokenRequests = Effect.flatMap(
  FinTest.InMemoryHttp,
  (http) => Effect.zipWith(http.count("POST /v1/oauth/token"), http.count("POST /v1/oauth/refresh-token"), (a, b) => a + b)
)
const ok = FinTest.json(200, quoteBody)
const conflict = {
  message: "A beneficiary with the same account details already exists.",
  error: { beneficiary_id: "3fa85f64-5717-4562-b3fc-2c963f66afa6" }
}
const status = (code: number, headers: Record<string, string> = {}) =>
  FinTest.json(code, { message: `status ${code}` }, headers)

/** The quote's second attempt goes out exactly `millis` after the first, then the call succeeds. */
const secondAttemptAfter = (millis: number) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(calculate)
    yield* advance(millis - 1)
    expect(yield* attempts).toBe(1)
    yield* advance(1)
    yield* Fiber.join(fiber)
    expect(yield* attempts).toBe(2)
  })

describe("HttpTransport", () => {
  for (
    const [name, reply] of [
      ["401 naming the token", (bearer: string) => FinTest.json(401, { message: `Token ${bearer} has expired` })],
      ["500 HTML page quoting the request", (bearer: string) =>
        FinTest.text(500, `<html><pre>authorization: Bearer ${bearer}</pre></html>`, { "content-type": "text/html" })],
      ["400 debugging page dumping the settings", (bearer: string) =>
        FinTest.json(400, { message: `bad request (token ${bearer}, client secret test-secret)` })],
      // A field error is kept (`fieldErrors`): one whose name is what was sent (a header echoed as a field) too.
      ["400 field errors named by the credentials", (bearer: string) =>
        FinTest.json(400, { message: "invalid fields", data: { [bearer]: ["unknown"], "test-secret": ["unknown"] } })],
      // Kept in ApiError.code: a service that echoes what it was sent as its error code.
      ["400 error code echoing the token", (bearer: string) =>
        FinTest.json(400, { message: "invalid credentials", error: { code: bearer } })],
      // Kept in ApiError.body (a field ApiError has none for), its first letter written as a JSON escape.
      ["500 JSON echoing the token with a \\u escape", (bearer: string) =>
        FinTest.text(500, `{"echo":"\\u${bearer.charCodeAt(0).toString(16).padStart(4, "0")}${bearer.slice(1)}"}`, {
          "content-type": "application/json"
        })]
    ] as const
  ) {
    it.effect(`an error never carries the bearer token or the client secret: ${name}`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        const text = `${JSON.stringify(error)} ${String(error)} ${error.message}`
        expect(text).toContain("<redacted>")
        expect(text).not.toMatch(/token-\d/)
        expect(text).not.toContain("test-secret")
      }).pipe(provideClient({
        [FEE]: (request) => reply((request.headers.authorization ?? "").replace("Bearer ", ""))
      }, { maxRetries: 0 })))
  }

  // `+`, `/` and `=` (as in base64) change when URL- or form-encoded; `!` and `~` only when form-encoded.
  const encodedSecret = "s3cr+t/v!al=ue~"
  for (
    const [name, echo] of [
      ["URL-encoded", encodeURIComponent(encodedSecret)],
      ["URL-encoded in lower case", encodeURIComponent(encodedSecret).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())],
      ["form-encoded", new URLSearchParams({ s: encodedSecret }).toString().slice(2)],
      // Python's quote() keeps `/`; RFC 3986-strict encoders also escape `!` and `~`; a mix of encoded and raw.
      ["URL-encoded with / kept", encodeURIComponent(encodedSecret).replace(/%2F/g, "/")],
      ["URL-encoded strictly", encodedSecret.replace(/[^A-Za-z0-9]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)],
      ["partly encoded", encodedSecret.replace("+", "%2b")]
    ] as const
  ) {
    it.effect(`a token error never carries the client secret the service echoed ${name}`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(Effect.flatMap(TokenProvider.TokenProvider, (tokens) => tokens.get))
        const text = `${JSON.stringify(error)} ${error.message}`
        expect(text).toContain("<redacted>")
        expect(text).not.toContain(echo)
        // Not even redacted: a token route's error keeps no body, though its fields cannot hold this one whole.
        expect(error).not.toHaveProperty("body")
      }).pipe(provideClient({
        "POST /v1/oauth/token": () =>
          FinTest.json(422, { message: `bad client_secret=${echo}`, error: { hint: `client_secret=${echo}` } })
      }, { clientSecret: Redacted.make(encodedSecret) })))
  }

  // A credential far longer than a token: an error is still a typed error, the credential redacted. (One no encoder
  // takes as is, with a lone surrogate, is refused by FinConfig before anything is sent.)
  const longSecret = "k".repeat(40_000)
  it.effect("a refused token call whose secret has 40,000 characters is an AuthenticationError, the secret redacted", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(TokenProvider.TokenProvider, (tokens) => tokens.get))
      expect(error._tag).toBe("AuthenticationError")
      expect(error.message).toContain("<redacted>")
      expect(error.message).not.toContain(longSecret)
    }).pipe(provideClient({
      "POST /v1/oauth/token": (request) =>
        FinTest.json(401, { message: `bad secret ${(request.body as { client_secret: string }).client_secret}` })
    }, { clientSecret: Redacted.make(longSecret), maxRetries: 0 })))

  for (
    const [name, id] of [
      ["the bearer token", (bearer: string) => bearer],
      ["the authorization header", (bearer: string) => `Bearer ${bearer}`],
      ["a page of text", () => "x".repeat(1000)],
      ["a control character", () => "req\u00071"]
    ] as const
  ) {
    it.effect(`a request id that is ${name} is not kept`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag).toBe("ApiError")
        expect("requestId" in error).toBe(false)
        expect(JSON.stringify(error)).not.toMatch(/token-\d/)
      }).pipe(provideClient({
        [FEE]: (request) => status(404, { "x-request-id": id((request.headers.authorization ?? "").replace("Bearer ", "")) })
      })))
  }

  // The head came, the body was lost (or did not decode): the request id is kept as for any answer, but never one
  // echoing the token.
  it.effect("a request id echoing the bearer token is not kept when the body is lost; a plain one is", () => {
    let calls = 0
    return Effect.gen(function*() {
      const echoed = yield* Effect.flip(calculate)
      expect(echoed).toMatchObject({ _tag: "TransportError", reason: "BodyReadFailed", status: 503 })
      expect("requestId" in echoed).toBe(false)
      expect(JSON.stringify(echoed)).not.toMatch(/token-\d/)
      expect(yield* Effect.flip(calculate)).toMatchObject({ _tag: "TransportError", requestId: "req-1" })
      // Nor when the answer does not decode.
      const undecoded = yield* Effect.flip(calculate)
      expect(undecoded._tag).toBe("ResponseDecodeError")
      expect("requestId" in undecoded).toBe(false)
      expect(JSON.stringify(undecoded)).not.toMatch(/token-\d/)
    }).pipe(provideClient({
      [FEE]: (request) => {
        const token = (request.headers.authorization ?? "").replace("Bearer ", "")
        return ++calls === 3
          ? FinTest.json(200, { data: { exchange_rate: "x" } }, { "x-request-id": token })
          : { ...FinTest.failBody("ECONNRESET", 503), headers: { "x-request-id": calls === 1 ? token : "req-1" } }
      }
    }, { maxRetries: 0 }))
  })

  // The head came with a Retry-After, the body was lost: the wait asked for still holds, as for the same answer read whole.
  it.effect("a 503 or 429 whose body is lost keeps its Retry-After: one past maxRetryAfter ends the retries; one within it is waited", () =>
    Effect.gen(function*() {
      const long = yield* FinTest.advanceUntilDone(Effect.flip(calculate), { limit: "1 minute" })
      expect(long).toMatchObject({ _tag: "TransportError", reason: "BodyReadFailed", status: 503, attempts: 1 })
      expect(long._tag === "TransportError" && long.retryAfter).toEqual(Duration.seconds(120))
      expect(yield* attempts).toBe(1)
      // A 429 asking for 5 s: the retry goes out after 5 s, not the backoff's 500 ms.
      const fiber = yield* Effect.fork(calculate)
      yield* advance(4999)
      expect(yield* attempts).toBe(2)
      yield* advance(1)
      expect((yield* Fiber.join(fiber)).exchange_rate).toBe(1.45)
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(
        { ...FinTest.failBody("ECONNRESET", 503), headers: { "retry-after": "120" } } as FinTest.Reply,
        { ...FinTest.failBody("ECONNRESET", 429), headers: { "retry-after": "5" } } as FinTest.Reply,
        ok
      )
    })))

  // A 401's head says the token was refused before anything was done; its body is not needed. Lost, it was a
  // TransportError "the service may have got the request", with no refresh: sent as a 401 read whole.
  it.effect("a 401 whose body is lost is a 401: the token is refreshed and an unsafe call resent once", () =>
    Effect.gen(function*() {
      const pay = HttpTransport.request({
        method: "POST",
        path: "/v1/payments",
        body: { amount: 1 },
        response: Schema.Void
      })
      const payments = Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("POST /v1/payments"))
      yield* pay
      expect(yield* payments).toBe(2)
      const error = yield* Effect.flip(pay)
      expect(error).toMatchObject({ _tag: "AuthenticationError", status: 401, attempts: 2 })
      expect(yield* payments).toBe(4)
    }).pipe(provideClient({
      "POST /v1/payments": FinTest.sequence(
        FinTest.failBody("ECONNRESET", 401),
        FinTest.text(204, ""),
        FinTest.failBody("ECONNRESET", 401),
        FinTest.failBody("ECONNRESET", 401)
      )
    })))

  it.effect("a body over 4 MiB is cut off: a 200 fails, not retried; an error status keeps its meaning", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "ResponseDecodeError", status: 200, attempts: 1 })
      expect(error.message).toContain(`a body of at most ${MAX_RESPONSE_BYTES} bytes`)
      expect(yield* attempts).toBe(1)
      // A huge 503 page is still a 503: retried, then the quote.
      const fiber = yield* Effect.fork(calculate)
      yield* advance(500)
      expect((yield* Fiber.join(fiber)).exchange_rate).toBe(1.45)
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(
        // A valid quote, but for its padding.
        FinTest.text(200, JSON.stringify(quoteBody).replace("{", `{${" ".repeat(MAX_RESPONSE_BYTES)}`)),
        FinTest.text(503, "<html>" + "x".repeat(MAX_RESPONSE_BYTES) + "</html>"),
        ok
      )
    })))

  // A declared length is trusted only within the limit: a service or proxy that declares 5 MiB is cut at 4 too.
  it.effect("a body over 4 MiB is cut off when its Content-Length declares it too, not read whole", () => {
    const padded = JSON.stringify(quoteBody).replace("{", `{${" ".repeat(MAX_RESPONSE_BYTES)}`)
    return Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "ResponseDecodeError", status: 200, attempts: 1 })
      expect(error.message).toContain(`a body of at most ${MAX_RESPONSE_BYTES} bytes`)
    }).pipe(provideClient({
      [FEE]: () => FinTest.text(200, padded, { "content-length": String(Buffer.byteLength(padded)) })
    }))
  })

  it.effect("503, 503, 200: 3 attempts at the scheduled delays (500 ms, then 1 s), 2 retries counted", () =>
    Effect.gen(function*() {
      const retries = counterValue("effect_fin_retries_total", { operation: "fee-calculation" })
      const before = yield* retries
      const fiber = yield* Effect.fork(calculate)
      yield* advance(0)
      expect(yield* attempts).toBe(1)
      yield* advance(499)
      expect(yield* attempts).toBe(1)
      yield* advance(1)
      expect(yield* attempts).toBe(2)
      yield* advance(999)
      expect(yield* attempts).toBe(2)
      yield* advance(1)
      const quote = yield* Fiber.join(fiber)
      expect(quote.exchange_rate).toBe(1.45)
      expect(yield* attempts).toBe(3)
      // Each retry of the policy in effect_fin_retries_total, by the call's name.
      expect(yield* retries).toBe(before + 2)
    }).pipe(provideClient({ [FEE]: FinTest.sequence(status(503), status(503), ok) })))

  // The call's span and its events' names and attributes once `millis` of virtual time have passed (the native span
  // keeps its events; the `Span` interface does not name them).
  const tracedCall = (millis: number) =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const fiber = yield* Effect.fork(calculate.pipe(Effect.provide(tracing)))
      yield* advance(millis)
      yield* Fiber.join(fiber)
      const span = (yield* spans).find((span) => span.name === "effect-fin.fee-calculation")
      const events = (span as { readonly events?: ReadonlyArray<[string, bigint, unknown]> } | undefined)?.events ?? []
      return { span, events: events.map(([name, , attributes]) => [name, attributes]) }
    })

  // A slow call shows why: each retry is an event on its span, with the failure and the wait before the next attempt.
  it.effect("each retry is an event on the call's span, with the failure, its status and the wait", () =>
    Effect.gen(function*() {
      const { events, span } = yield* tracedCall(2000)
      expect(span?.attributes.get("http.request.resend_count")).toBe(2)
      expect(events).toEqual([
        ["effect-fin.retry", {
          "http.request.resend_count": 1,
          "error.type": "ApiError",
          "http.response.status_code": 503,
          "effect_fin.retry_wait_ms": 500
        }],
        ["effect-fin.retry", {
          "http.request.resend_count": 2,
          "error.type": "ApiError",
          "http.response.status_code": 502,
          "effect_fin.retry_wait_ms": 1000
        }]
      ])
    }).pipe(provideClient({ [FEE]: FinTest.sequence(status(503), status(502), ok) })))

  // An event is stamped with the clock's time when the retry is decided (after the failure, before the wait), so a
  // trace shows when each failure happened, not the span's start for all of them.
  it.effect("each retry event has the time of the failure it follows", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const fiber = yield* Effect.fork(calculate.pipe(Effect.provide(tracing)))
      yield* advance(2000)
      yield* Fiber.join(fiber)
      const span = (yield* spans).find((span) => span.name === "effect-fin.fee-calculation")
      const events = (span as { readonly events?: ReadonlyArray<[string, bigint, unknown]> } | undefined)?.events ?? []
      expect(events.map(([, time]) => time)).toEqual([0n, 500_000_000n])
    }).pipe(provideClient({ [FEE]: FinTest.sequence(status(503), status(502), ok) })))

  // The resend after a 401 is one too, with its own event (no wait: else a burst of revoked tokens shows as resends with
  // no cause); the retry's event names the resend that follows, as the span counts them.
  it.effect("a 401's resend has its event, and a retry after it is resend 2 on its event, as on the span", () =>
    Effect.gen(function*() {
      const { events, span } = yield* tracedCall(1000)
      expect(span?.attributes.get("http.request.resend_count")).toBe(2)
      expect(events).toMatchObject([
        ["effect-fin.retry", {
          "http.request.resend_count": 1,
          "error.type": "AuthenticationError",
          "http.response.status_code": 401,
          "effect_fin.retry_wait_ms": 0
        }],
        ["effect-fin.retry", { "http.request.resend_count": 2 }]
      ])
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({ [FEE]: FinTest.sequence(status(401), status(503), ok) })))

  // A failure's tag is OTel's error.type too, whatever the error's code (the service's, which an exporter takes for
  // the exception's type).
  it.effect("the call's span records method, path, the last status, attempts and outcome (a failure's as error.type)", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const fiber = yield* Effect.fork(Effect.all([calculate, Effect.flip(calculate)]).pipe(Effect.provide(tracing)))
      yield* advance(2000)
      yield* Fiber.join(fiber)
      const recorded = (yield* spans).filter((span) => span.name === "effect-fin.fee-calculation")
      expect(recorded.map((span) => span.attributes.get("error.type"))).toEqual([undefined, "ApiError"])
      expect(attributesOf(recorded, "effect-fin.fee-calculation")).toEqual([
        {
          "http.request.method": "POST",
          "url.path": "/v1/fee-calculation",
          "http.response.status_code": 200,
          "effect_fin.attempts": 2,
          "http.request.resend_count": 1,
          "effect_fin.outcome": "success"
        },
        {
          "http.request.method": "POST",
          "url.path": "/v1/fee-calculation",
          "http.response.status_code": 409,
          "effect_fin.attempts": 1,
          "effect_fin.outcome": "ApiError"
        }
      ])
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(status(503), ok, FinTest.json(409, { error: { code: "conflict", message: "exists" } }))
    })))

  // A token fetch shared by several callers is a child of the first one's span only: the others' spans say how long
  // they waited for it, and a call given a token at hand says nothing.
  it.effect("each call's span has the time it waited for its token (effect_fin.token_wait_ms), none with one at hand", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const fiber = yield* Effect.fork(
        Effect.zipRight(Effect.all([calculate, calculate, calculate], { concurrency: "unbounded" }), calculate).pipe(
          Effect.provide(tracing)
        )
      )
      yield* advance(1000)
      yield* Fiber.join(fiber)
      const recorded = (yield* spans).filter((span) => span.name === "effect-fin.fee-calculation")
      expect(recorded.map((span) => span.attributes.get("effect_fin.token_wait_ms"))).toEqual([400, 400, 400, undefined])
    }).pipe(provideClient({
      [FEE]: () => ok,
      "POST /v1/oauth/token": FinTest.delayed("400 millis", FinTest.tokenHandler())
    })))

  // A 401's resend waits again, first for the refused token to be cleared, then for a fresh one: both waits are added
  // to the first one.
  it.effect("effect_fin.token_wait_ms adds up every wait for a token: the first, the 401's clearing and fetch", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      yield* FinTest.advanceUntilDone(calculate.pipe(Effect.provide(tracing)))
      const recorded = (yield* spans).filter((span) => span.name === "effect-fin.fee-calculation")
      // 300 ms for the first token, 200 ms clearing the refused one, 300 ms for the next.
      expect(recorded.map((span) => span.attributes.get("effect_fin.token_wait_ms"))).toEqual([800])
    }).pipe(provideWithTokens(
      { [FEE]: FinTest.sequence(FinTest.json(401, { message: "expired" }), ok) },
      TokenProvider.TokenProvider.of({
        get: Effect.as(Effect.sleep("300 millis"), Redacted.make("t")),
        invalidate: () => Effect.sleep("200 millis")
      })
    )))

  // The wait that matters most: a call that ends while it waits for its token (its deadline, an interruption) says
  // how long it waited.
  it.effect("a call that ends while it waits for its token has effect_fin.token_wait_ms (deadline, interruption)", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const cut = yield* Effect.fork(Effect.flip(calculate.pipe(Effect.provide(tracing))))
      yield* advance(3000)
      expect(yield* Fiber.join(cut)).toMatchObject({ _tag: "TimeoutError", kind: "deadline" })
      const interrupted = yield* Effect.fork(calculate.pipe(Effect.provide(tracing)))
      yield* advance(700)
      yield* Fiber.interrupt(interrupted)
      const recorded = (yield* spans).filter((span) => span.name === "effect-fin.fee-calculation")
      expect(recorded.map((span) => span.attributes.get("effect_fin.token_wait_ms"))).toEqual([3000, 700])
    }).pipe(provideClient({ [FEE]: () => ok, "POST /v1/oauth/token": () => FinTest.stall }, {
      deadline: "3 seconds",
      tokenTimeout: "20 seconds"
    })))

  // An interruption is the caller's doing, not an error of the call: how far the call got, and no error.type.
  it.effect("an interrupted call's span has its attempts and outcome interrupted, and no error.type", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const fiber = yield* Effect.fork(calculate.pipe(Effect.provide(tracing)))
      yield* advance(100)
      yield* Fiber.interrupt(fiber)
      expect(attributesOf(yield* spans, "effect-fin.fee-calculation")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/fee-calculation",
        "effect_fin.attempts": 1,
        "effect_fin.outcome": "interrupted"
      }])
    }).pipe(provideClient({ [FEE]: () => FinTest.stall })))

  it.effect("a call made with the tracer off leaves the caller's own span as it was (no attribute of the call on it)", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const traced = Effect.all([
        calculate.pipe(Effect.withTracerEnabled(false)),
        Effect.flip(calculate).pipe(Effect.withTracerEnabled(false))
      ]).pipe(Effect.withSpan("caller"), Effect.provide(tracing))
      const fiber = yield* Effect.fork(traced)
      yield* advance(2000)
      yield* Fiber.join(fiber)
      const recorded = yield* spans
      expect(recorded.map((span) => span.name)).toEqual(["caller"])
      expect(attributesOf(recorded, "caller")).toEqual([{}])
    }).pipe(provideClient({ [FEE]: FinTest.sequence(status(503), ok, status(422)) })))

  it.effect("the call's and the token call's spans name the server (server.address, server.port), as OTel's HTTP client spans do", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      yield* calculate.pipe(Effect.provide(tracing))
      const recorded = yield* spans
      for (const name of ["effect-fin.fee-calculation", "effect-fin.token"]) {
        const span = recorded.find((span) => span.name === name)
        expect(span?.attributes.get("server.address")).toBe("gw.example.com")
        expect(span?.attributes.get("server.port")).toBe(443)
      }
      // url.full too, which they require: the request's URL as sent, the gateway's prefix included.
      expect(["effect-fin.fee-calculation", "effect-fin.token"].map((name) =>
        recorded.find((span) => span.name === name)?.attributes.get("url.full")
      )).toEqual([
        "https://gw.example.com/payments/v1/fee-calculation",
        "https://gw.example.com/payments/v1/oauth/token"
      ])
    }).pipe(provideClient({ [FEE]: () => ok }, { baseUrl: "https://gw.example.com/payments" })))

  // A query's values may be personal data (an email, an account number): its keys only, as OpenTelemetry writes a
  // URL's sensitive values. Not on a refused path's span, which may hold anything.
  it.effect("url.full holds a query's keys with their values written REDACTED", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      yield* HttpTransport.request({
        method: "GET",
        path: "/v1/beneficiaries",
        query: { email: "jane@example.com", "a&b": "1=2", skipped: undefined },
        response: Schema.Unknown,
        name: "search"
      }).pipe(Effect.provide(tracing))
      yield* Effect.flip(HttpTransport.request({
        method: "GET",
        path: "/v1/../admin",
        query: { q: "x" },
        response: Schema.Unknown,
        name: "search"
      })).pipe(Effect.provide(tracing))
      expect((yield* spans).filter((span) => span.name === "effect-fin.search").map((span) =>
        span.attributes.get("url.full")
      )).toEqual(["https://gw.example.com/v1/beneficiaries?email=REDACTED&a%26b=REDACTED", undefined])
      const sent = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(sent.filter((request) => request.method === "GET").map((request) => new URL(request.url).search))
        .toEqual(["?email=jane%40example.com&a%26b=1%3D2"])
    }).pipe(
      provideClient({ "GET /v1/beneficiaries": () => FinTest.json(200, {}) }, { baseUrl: "https://gw.example.com" })
    ))

  it("server.address: an IPv6 literal without brackets; server.port: the scheme's default when none is given", () => {
    expect(serverAttributesOf("http://[::1]:8080")).toEqual({ "server.address": "::1", "server.port": 8080 })
    expect(serverAttributesOf("http://payments.internal"))
      .toEqual({ "server.address": "payments.internal", "server.port": 80 })
    expect(serverAttributesOf("https://api.example.com/gw"))
      .toEqual({ "server.address": "api.example.com", "server.port": 443 })
  })

  it.effect("behind a gateway's prefix, url.path is the path each request was sent to (the call's and the token call's)", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      yield* calculate.pipe(Effect.provide(tracing))
      const recorded = yield* spans
      expect(attributesOf(recorded, "effect-fin.fee-calculation")[0]?.["url.path"]).toBe("/payments/v1/fee-calculation")
      expect(attributesOf(recorded, "effect-fin.token")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/payments/v1/oauth/token",
        "http.response.status_code": 200,
        "effect_fin.attempts": 1,
        "effect_fin.outcome": "success"
      }])
      const http = yield* FinTest.InMemoryHttp
      expect((yield* http.requests).map((request) => new URL(request.url).pathname)).toEqual([
        "/payments/v1/oauth/token",
        "/payments/v1/fee-calculation"
      ])
    }).pipe(provideClient({ [FEE]: () => ok }, { baseUrl: "https://gw.example.com/payments" })))

  // The attributes of the call's span, and the error's message, for a call its deadline ends.
  const spanCutByDeadline = Effect.gen(function*() {
    const { layer: tracing, spans } = yield* recordingTracer
    const error = yield* FinTest.advanceUntilDone(Effect.flip(calculate.pipe(Effect.provide(tracing))))
    expect(error._tag === "TimeoutError" && error.kind).toBe("deadline")
    return { attributes: attributesOf(yield* spans, "effect-fin.fee-calculation"), message: error.message }
  })

  it.effect("a call the deadline ends keeps the status of its last answer on its span", () =>
    Effect.gen(function*() {
      const { attributes, message } = yield* spanCutByDeadline
      // An attempt was running: the message names no other step.
      expect(message).toBe("POST /v1/fee-calculation: the call did not finish within its deadline of 10s")
      expect(attributes).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/fee-calculation",
        "http.response.status_code": 503,
        "effect_fin.attempts": 2,
        "http.request.resend_count": 1,
        "effect_fin.outcome": "TimeoutError"
      }])
    }).pipe(provideClient({ [FEE]: FinTest.sequence(status(503), FinTest.stall) }, {
      timeout: "1 minute",
      deadline: "10 seconds"
    })))

  it.effect("a token that cannot be had: the call's span names the token step, the token's span has the status", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const error = yield* Effect.flip(calculate.pipe(Effect.provide(tracing)))
      expect(error).toMatchObject({ _tag: "AuthenticationError", status: 401 })
      const recorded = yield* spans
      const attributes = (name: string) => attributesOf(recorded, name)
      expect(attributes("effect-fin.fee-calculation")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/fee-calculation",
        "effect_fin.attempts": 0,
        "effect_fin.outcome": "AuthenticationError",
        "effect_fin.failed_step": "token"
      }])
      expect(attributes("effect-fin.token")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/oauth/token",
        "http.response.status_code": 401,
        "effect_fin.attempts": 1,
        "effect_fin.outcome": "AuthenticationError"
      }])
      expect(yield* attempts).toBe(0)
    }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.json(401, { message: "bad credentials" }), [FEE]: () => ok })))

  it.effect("a token call whose last attempt got no answer: its span keeps the status of the answer before", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const error = yield* Effect.flip(FinTest.advanceUntilDone(calculate.pipe(Effect.provide(tracing))))
      expect(error).toMatchObject({ _tag: "TimeoutError", kind: "token" })
      expect(attributesOf(yield* spans, "effect-fin.token")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/oauth/token",
        "http.response.status_code": 503,
        "effect_fin.attempts": 2,
        "http.request.resend_count": 1,
        "effect_fin.outcome": "TimeoutError"
      }])
    }).pipe(
      provideClient({ "POST /v1/oauth/token": FinTest.sequence(status(503), FinTest.stall), [FEE]: () => ok }, {
        maxRetries: 1,
        tokenTimeout: "2 seconds"
      }),
      fixedRandom
    ))

  it.effect("the deadline coming while the call waits for a token: the call's span names the token step", () =>
    Effect.gen(function*() {
      const { attributes, message } = yield* spanCutByDeadline
      expect(message).toBe(
        "POST /v1/fee-calculation: the call did not finish within its deadline of 5s (it was still waiting " +
          "for an access token)"
      )
      expect(attributes).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/fee-calculation",
        "effect_fin.attempts": 0,
        "effect_fin.outcome": "TimeoutError",
        "effect_fin.failed_step": "token",
        "effect_fin.token_wait_ms": 5000
      }])
    }).pipe(provideClient({ "POST /v1/oauth/token": () => FinTest.stall, [FEE]: () => ok }, {
      deadline: "5 seconds",
      tokenTimeout: "1 minute"
    })))

  // Clearing the refused token after a 401 is the first part of getting a fresh one: a store that hangs there.
  it.effect("the deadline coming while the call clears a refused token: the message and span name the token step", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const error = yield* FinTest.advanceUntilDone(Effect.flip(calculate.pipe(Effect.provide(tracing))))
      expect(error).toMatchObject({
        _tag: "TimeoutError",
        kind: "deadline",
        attempts: 1,
        message: "POST /v1/fee-calculation: the call did not finish within its deadline of 2s (it was still waiting " +
          "for an access token)"
      })
      expect(attributesOf(yield* spans, "effect-fin.fee-calculation")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/fee-calculation",
        "http.response.status_code": 401,
        "effect_fin.attempts": 1,
        "effect_fin.outcome": "TimeoutError",
        "effect_fin.failed_step": "token",
        "effect_fin.token_wait_ms": 2000
      }])
    }).pipe(provideWithTokens(
      { [FEE]: () => FinTest.json(401, { message: "expired" }) },
      TokenProvider.TokenProvider.of({ get: Effect.succeed(Redacted.make("t")), invalidate: () => Effect.never }),
      { deadline: "2 seconds" }
    )))

  // A token handed over only once the deadline has passed, with no wait the token step could cut (a provider of the
  // user's that blocks the thread: a synchronous read, a busy loop; no timer can fire meanwhile): the request is not
  // sent after the caller's deadline.
  it.live("a token that comes after the deadline from a provider that blocks: the request is never sent", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "TimeoutError" && [error.kind, error.attempts]).toEqual(["deadline", 0])
      expect(yield* attempts).toBe(0)
    }).pipe(provideWithTokens(
      { [FEE]: () => FinTest.json(200, quoteBody) },
      TokenProvider.TokenProvider.of({
        get: Effect.sync(() => {
          const end = performance.now() + 150
          while (performance.now() < end) {
            // blocking past the 50 ms deadline
          }
          return Redacted.make("t")
        }),
        invalidate: () => Effect.void
      }),
      { deadline: "50 millis" }
    )))

  // A call cut by the default 60 s deadline must land in a bucket of its own, not only in the unbounded one.
  it.effect("effect_fin_request_duration_ms has finite buckets up past the default deadline", () =>
    Effect.gen(function*() {
      const error = yield* FinTest.advanceUntilDone(Effect.flip(
        HttpTransport.request({ method: "GET", path: "/v1/slow", response: Schema.Unknown, name: "bucket-probe" })
      ))
      expect(error._tag === "TimeoutError" && error.kind).toBe("deadline")
      const histogram = Metric.unsafeSnapshot().find((pair) =>
        pair.metricKey.name === "effect_fin_request_duration_ms" &&
        pair.metricKey.tags.some((tag) => tag.key === "operation" && tag.value === "bucket-probe")
      )?.metricState as MetricState.MetricState.Histogram | undefined
      const finite = [...(histogram?.buckets ?? [])].filter(([bound]) => Number.isFinite(bound))
      // Cumulative counts: the call is counted in the last finite bucket.
      expect(finite.at(-1)?.[1]).toBe(1)
    }).pipe(provideClient({ "GET /v1/slow": () => FinTest.stall }, { timeout: "2 minutes" })))

  // Calls cut at their deadline or refused at once would hide the latency of answered ones if mixed with them.
  it.effect("effect_fin_request_duration_ms is labelled with each call's outcome, as the request count is", () =>
    Effect.gen(function*() {
      const probe = (path: string) =>
        Effect.either(HttpTransport.request({ method: "GET", path, response: Schema.Unknown, name: "outcome-probe" }))
      yield* probe("/v1/ok")
      yield* probe("/v1/ok")
      yield* probe("/v1/missing")
      const counts = Metric.unsafeSnapshot().flatMap((pair) => {
        const tags = Object.fromEntries(pair.metricKey.tags.map((tag) => [tag.key, tag.value]))
        return pair.metricKey.name === "effect_fin_request_duration_ms" && tags.operation === "outcome-probe"
          ? [[tags.outcome, (pair.metricState as MetricState.MetricState.Histogram).count] as const]
          : []
      })
      expect(Object.fromEntries(counts)).toEqual({ success: 2, ApiError: 1 })
    }).pipe(provideClient({
      "GET /v1/ok": () => FinTest.json(200, {}),
      "GET /v1/missing": () => FinTest.json(404, { message: "Resource not found" })
    })))

  // Both `ApiError`, a request the service refused (a 4xx) and the service failing (a 5xx) are told apart by the status
  // of the call's last answer; a call that had none says `none`. A call whose token could not be had counts with its
  // error's status (the token route's 503), not the 401 that sent it for a new token.
  it.effect("effect_fin_requests_total is labelled with the last answer's status too (none without one)", () =>
    Effect.gen(function*() {
      const probe = (path: string, name = "status-probe") =>
        FinTest.advanceUntilDone(Effect.either(
          HttpTransport.request({ method: "GET", path, response: Schema.Unknown, name }).pipe(
            HttpTransport.withOptions({ maxRetries: 0, timeout: "1 second" })
          )
        ))
      for (const path of ["/v1/ok", "/v1/missing", "/v1/down", "/v1/slow"]) yield* probe(path)
      // Refused before anything was sent (an override no call could have): no answer either.
      yield* Effect.either(
        HttpTransport.request({ method: "GET", path: "/v1/ok", response: Schema.Unknown, name: "status-probe" }).pipe(
          HttpTransport.withOptions({ maxRetries: -1 })
        )
      )
      yield* probe("/v1/revoked", "status-probe-token")
      const countsOf = (operation: string) =>
        Object.fromEntries(Metric.unsafeSnapshot().flatMap((pair) => {
          const tags = Object.fromEntries(pair.metricKey.tags.map((tag) => [tag.key, tag.value]))
          return pair.metricKey.name === "effect_fin_requests_total" && tags.operation === operation
            ? [[`${tags.outcome} ${tags.status}`, (pair.metricState as MetricState.MetricState.Counter<number>).count]]
            : []
        }))
      expect(countsOf("status-probe")).toEqual({
        "success 200": 1,
        "ApiError 404": 1,
        "ApiError 503": 1,
        "TimeoutError none": 1,
        "RequestValidationError none": 1
      })
      expect(countsOf("status-probe-token")).toEqual({ "ApiError 503": 1 })
    }).pipe(provideClient({
      "POST /v1/oauth/token": FinTest.sequence(
        FinTest.json(200, { access_token: "t1", access_token_ttl: "2099-01-01T00:00:00Z" }),
        FinTest.json(503, { message: "down" })
      ),
      "POST /v1/oauth/refresh-token": () => FinTest.json(503, { message: "down" }),
      "GET /v1/ok": () => FinTest.json(200, {}),
      "GET /v1/missing": () => FinTest.json(404, { message: "Resource not found" }),
      "GET /v1/down": () => FinTest.json(503, { message: "Service unavailable" }),
      "GET /v1/slow": () => FinTest.stall,
      "GET /v1/revoked": () => FinTest.json(401, { message: "Authentication failed" })
    }, { maxRetries: 0 })))

  it.effect("a token step that dies: the call's span says defect, and names the token step", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const exit = yield* Effect.exit(calculate.pipe(Effect.provide(tracing)))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(attributesOf(yield* spans, "effect-fin.fee-calculation")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/fee-calculation",
        "effect_fin.attempts": 0,
        "effect_fin.outcome": "defect",
        "effect_fin.failed_step": "token"
      }])
      // The token call's span, where the call's span sends an operator, says so too.
      expect(attributesOf(yield* spans, "effect-fin.token")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/oauth/token",
        "effect_fin.attempts": 1,
        "effect_fin.outcome": "defect"
      }])
    }).pipe(provideClient({
      "POST /v1/oauth/token": () => {
        throw new Error("a test route that throws")
      },
      [FEE]: () => ok
    })))

  const failing: ReadonlyArray<readonly [string, FinTest.Routes, Effect.Effect<unknown, FinError, FinClient.Services>]> = [
    ["a refused call", { [FEE]: () => status(422) }, calculate],
    ["a token that cannot be had", { "POST /v1/oauth/token": () => status(401) }, calculate],
    ["a subdivision lookup refused", { "GET /v1/countries/*/subdivisions": () => status(404) }, SubdivisionService.list("USA")]
  ]
  for (const [name, routes, call] of failing) {
    // From an uninterruptible region (a finalizer) too, where the call runs in a fiber of its own.
    for (const region of ["", " from a finalizer"]) {
    it.live(`on the live clock, ${name}${region} logs nothing of the runtime's own (no fiber "terminated with an unhandled error")`, () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        const error = yield* Effect.flip(region === "" ? call : Effect.uninterruptible(call))
        expect(["ApiError", "AuthenticationError"]).toContain(error._tag)
        expect(logs.lines.filter((line) => line.includes("unhandled"))).toEqual([])
      }).pipe(
        provideClient(routes, { subdivisionMode: "online" }),
        Effect.provide(logs.layer),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
    })
    }
  }

  it.effect("each retry is logged with its number, counting from 1, its facts as annotations too", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      yield* FinTest.advanceUntilDone(calculate)
      expect(logs.lines.filter((line) => line.includes("retrying"))).toEqual([
        `DEBUG ["effect-fin: retrying POST /v1/fee-calculation after ApiError 503 (retry 1 of 2)"] ` +
        `{"error":"ApiError","operation":"POST /v1/fee-calculation","retry":1}`,
        `DEBUG ["effect-fin: retrying POST /v1/fee-calculation after ApiError 503 (retry 2 of 2)"] ` +
        `{"error":"ApiError","operation":"POST /v1/fee-calculation","retry":2}`
      ])
    }).pipe(
      Effect.provide(logs.layer),
      Logger.withMinimumLogLevel(LogLevel.Debug),
      provideClient({ [FEE]: FinTest.sequence(status(503), status(503), ok) })
    )
  })

  it.effect("the resend after a 401 is logged with the operation and the status as annotations too", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      yield* calculate
      expect(logs.lines.filter((line) => line.includes("got 401"))).toEqual([
        `DEBUG ["effect-fin: POST /v1/fee-calculation got 401; refreshing the token and retrying once"] ` +
        `{"operation":"POST /v1/fee-calculation","status":401}`
      ])
    }).pipe(
      Effect.provide(logs.layer),
      Logger.withMinimumLogLevel(LogLevel.Debug),
      provideClient({ [FEE]: FinTest.sequence(status(401), ok) })
    )
  })

  it.effect("503 x3: ApiError with status 503 after 3 attempts", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      yield* advance(1500)
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("ApiError")
      if (error._tag === "ApiError") {
        expect(error.status).toBe(503)
        expect(error.attempts).toBe(3)
        expect(error.message).toBe("The service answered 503 on POST /v1/fee-calculation: status 503")
      }
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({ [FEE]: () => status(503) })))

  it.effect("429 with Retry-After: 2 waits 2 s of virtual time", () =>
    secondAttemptAfter(2000).pipe(provideClient({ [FEE]: FinTest.sequence(status(429, { "retry-after": "2" }), ok) })))

  it.effect("retry-after-ms is honoured", () =>
    secondAttemptAfter(250).pipe(provideClient({ [FEE]: FinTest.sequence(status(503, { "retry-after-ms": "250" }), ok) })))

  it.effect("a Retry-After that is neither whole seconds nor an HTTP date is ignored: the backoff applies", () =>
    secondAttemptAfter(500).pipe(provideClient({ [FEE]: FinTest.sequence(status(429, { "retry-after": "1.5" }), ok) })))

  it.effect("retry-after-ms below one millisecond is a wait of zero: the backoff applies", () =>
    secondAttemptAfter(500).pipe(provideClient({ [FEE]: FinTest.sequence(status(503, { "retry-after-ms": "0.001" }), ok) })))

  // Too many values to spread into Math.max/Math.min (a proxy repeating a header, a client allowed large heads).
  const repeated = [["retry-after", "1"], ["retry-after-ms", "1"], ["date", "Thu, 01 Jan 1970 00:00:00 GMT"]] as const
  for (const [name, value] of repeated) {
    it.effect(`${name} sent 300,000 times: the call ends with the service's error, not a defect`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag).toBe("ApiError")
      }).pipe(provideClient(
        { [FEE]: () => status(503, { [name]: Array.from({ length: 300_000 }, () => value).join(", ") }) },
        { maxRetries: 0 }
      )))
  }

  it.effect("retry-after-ms: 0 beside Retry-After: 30 waits the 30 seconds", () =>
    secondAttemptAfter(30_000).pipe(
      provideClient({ [FEE]: FinTest.sequence(status(503, { "retry-after-ms": "0", "retry-after": "30" }), ok) })
    ))

  it.effect("Retry-After: 0 (or a date now past) does not skip the backoff: the service is slowing us down", () =>
    secondAttemptAfter(500).pipe(provideClient({ [FEE]: FinTest.sequence(status(429, { "retry-after": "0" }), ok) })))

  it.effect("a Retry-After of exactly the cap is honoured: the cap is the longest wait allowed", () =>
    secondAttemptAfter(60_000).pipe(
      provideClient({ [FEE]: FinTest.sequence(status(503, { "retry-after": "60" }), ok) }, {
        maxRetryAfter: "60 seconds",
        deadline: "5 minutes"
      })
    ))

  // A maxRetryAfter of 0 does not mean "ignore the header": any Retry-After above zero ends the retries at once.
  it.effect("Retry-After beyond the cap: RateLimitError at once (with a cap of 0, any Retry-After above zero)", () =>
    Effect.forEach([["120", "60 seconds"], ["1", "0 seconds"]] as const, ([retryAfter, maxRetryAfter]) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error).toMatchObject({ _tag: "RateLimitError", status: 429 })
        if (error._tag === "RateLimitError") {
          expect(error.retryAfter && Duration.toSeconds(error.retryAfter)).toBe(Number(retryAfter))
        }
        expect(yield* attempts).toBe(1)
      }).pipe(provideClient({ [FEE]: () => status(429, { "retry-after": retryAfter }) }, { maxRetryAfter })),
      { discard: true }))

  it.effect("a 503 asking to wait beyond the cap: RateLimitError (status 503) at once, as a 429 would be", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "RateLimitError", status: 503, attempts: 1 })
      expect(error._tag === "RateLimitError" && error.retryAfter && Duration.toSeconds(error.retryAfter)).toBe(120)
      expect(error.message).toBe(
        "The service answered 503 and asked to wait 2m, longer than allowed, on POST /v1/fee-calculation: status 503"
      )
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => status(503, { "retry-after": "120" }) }, { maxRetryAfter: "60 seconds" })))

  it.effect("a 503 asking to wait within the cap but past the deadline: RateLimitError saying the deadline ended it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "RateLimitError", status: 503, attempts: 1 })
      expect(error.message).toBe(
        "The service answered 503 and asked to wait 30s, more than the call's deadline leaves, on POST /v1/fee-calculation: status 503"
      )
    }).pipe(provideClient({ [FEE]: () => status(503, { "retry-after": "30" }) }, { deadline: "10 seconds" })))

  it.effect("a 503 asking to wait beyond the cap keeps the service's message and code; a 429's other fields stay in body", () =>
    Effect.gen(function*() {
      const maintenance = yield* Effect.flip(calculate)
      expect(maintenance._tag === "RateLimitError" && [maintenance.message, maintenance.code, maintenance.body]).toEqual([
        "The service answered 503 and asked to wait 2h, longer than allowed, on POST /v1/fee-calculation: " +
        "Down for maintenance until 14:00",
        "maintenance",
        undefined
      ])
      const quota = yield* Effect.flip(calculate)
      expect(quota._tag === "RateLimitError" && [quota.code, quota.body]).toEqual([
        "daily_quota",
        `{"error":{"code":"daily_quota","message":"Daily quota exceeded","reset_at":"2026-11-26T00:00:00Z"}}`
      ])
      // Field errors are kept too, as an ApiError keeps them: from a 5xx turned RateLimitError, and from a 429.
      for (const field of ["destination_currency", "source_amount"]) {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "RateLimitError" && error.fieldErrors?.map((f) => f.field)).toEqual([field])
      }
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(
        FinTest.json(503, { error: { code: "maintenance", message: "Down for maintenance until 14:00" } }, {
          "retry-after": "7200"
        }),
        FinTest.json(429, {
          error: { code: "daily_quota", message: "Daily quota exceeded", reset_at: "2026-11-26T00:00:00Z" }
        }, { "retry-after": "7200" }),
        FinTest.json(503, { message: "Corridor paused", errors: [{ field: "destination_currency", message: "paused" }] }, {
          "retry-after": "7200"
        }),
        FinTest.json(429, {
          error: { code: "limit", message: "Too many quotes", details: [{ field: "source_amount", message: "daily volume" }] }
        }, { "retry-after": "7200" })
      )
    }, { maxRetryAfter: "60 seconds" })))

  // A body of field errors alone: the ApiError's message is its start and them, which the RateLimitError's does not
  // repeat after its own start.
  it.effect("a 503 of field errors alone asking to wait beyond the cap: the RateLimitError names them once", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "RateLimitError" && error.message).toBe(
        "The service answered 503 and asked to wait 2h, longer than allowed, on POST /v1/fee-calculation " +
          "(destination_currency: paused)"
      )
    }).pipe(provideClient({
      [FEE]: () =>
        FinTest.json(503, { errors: [{ field: "destination_currency", message: "paused" }] }, { "retry-after": "7200" })
    }, { maxRetryAfter: "60 seconds" })))

  it.effect("a 408 asking to wait beyond the cap stays an ApiError (only a 5xx is a RateLimitError)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "ApiError", status: 408, attempts: 1 })
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => status(408, { "retry-after": "120" }) }, { maxRetryAfter: "60 seconds" })))

  it.effect("a 408 asking to wait past the deadline stays an ApiError too", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline: "5 seconds" })))
      expect(error).toMatchObject({ _tag: "ApiError", status: 408, attempts: 1 })
    }).pipe(provideClient({ [FEE]: () => status(408, { "retry-after": "10" }) }, { maxRetryAfter: "60 seconds" })))

  it.effect("a 503 asking to wait beyond the cap on the last attempt is a RateLimitError too", () =>
    Effect.gen(function*() {
      const error = yield* FinTest.advanceUntilDone(Effect.flip(calculate))
      // (Not toMatchObject: its diff of an Effect error overflows the stack.)
      expect(error._tag).toBe("RateLimitError")
      expect(error._tag === "RateLimitError" && [error.status, error.attempts]).toEqual([503, 3])
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(status(503), status(503), status(503, { "retry-after": "120" }))
    }, { maxRetryAfter: "60 seconds" })))

  it.effect("an unsafe call's 503 asking for a long wait stays an ApiError (it is never retried)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        HttpTransport.request({ method: "POST", path: "/v1/payouts", body: {}, response: Schema.Unknown })
      )
      expect(error).toMatchObject({ _tag: "ApiError", status: 503 })
    }).pipe(provideClient({ "POST /v1/payouts": () => status(503, { "retry-after": "120" }) }, {
      maxRetryAfter: "60 seconds"
    })))

  // A daily quota and a per-second throttle both answer 429: what the service said tells them apart. Not retried, its
  // long Retry-After ended no retries, and the message does not say it did.
  it.effect("a 429 keeps the service's message and code", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "RateLimitError" && [error.message, error.code]).toEqual([
        "Rate limited (429) on POST /v1/fee-calculation: Daily quota of 1000 quotes exceeded",
        "daily_quota_exceeded"
      ])
    }).pipe(provideClient({
      [FEE]: () =>
        FinTest.json(429, { error: { code: "daily_quota_exceeded", message: "Daily quota of 1000 quotes exceeded" } }, {
          "retry-after": "86400"
        })
    }, { maxRetries: 0 })))

  it.effect("Retry-After beyond what is left of the deadline: RateLimitError at once", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag).toBe("RateLimitError")
      expect(error.message).toBe(
        "Rate limited (429) and asked to wait 30s, more than the call's deadline leaves, on " +
          "POST /v1/fee-calculation: status 429"
      )
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => status(429, { "retry-after": "30" }) }, { deadline: "10 seconds" })))

  it.effect("Retry-After beyond the cap is refused at once however long the deadline, from a 429 and a 503", () =>
    Effect.gen(function*() {
      const messages: Array<string> = []
      for (const code of [429, 503, 429, 503]) {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "RateLimitError" && [error.status, error.attempts]).toEqual([code, 1])
        messages.push(error.message)
      }
      expect(yield* attempts).toBe(4)
      // Each says the wait it asked for and why it was not waited for: not one retried until the retries ran out. One
      // past all measure is said in whole milliseconds (the longest kept), not with a double's nanoseconds.
      expect(messages).toEqual([
        "Rate limited (429) and asked to wait 2m, longer than allowed, on POST /v1/fee-calculation: status 429",
        "The service answered 503 and asked to wait 2m, longer than allowed, on POST /v1/fee-calculation: status 503",
        "Rate limited (429) and asked to wait 104249991d 8h 59m 991ms, longer than allowed, on " +
        "POST /v1/fee-calculation: status 429",
        "The service answered 503 and asked to wait 104249991d 8h 59m 991ms, longer than allowed, on " +
        "POST /v1/fee-calculation: status 503"
      ])
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(
        status(429, { "retry-after": "120" }),
        status(503, { "retry-after": "120" }),
        status(429, { "retry-after": "9".repeat(30) }),
        status(503, { "retry-after": "9".repeat(30) })
      )
    }, { maxRetryAfter: "60 seconds", deadline: "5 minutes" })))

  it.effect("a Retry-After of exactly the time the deadline leaves: RateLimitError at once", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "RateLimitError" && [error.status, error.attempts]).toEqual([503, 1])
    }).pipe(provideClient({ [FEE]: () => status(503, { "retry-after": "10" }) }, { deadline: "10 seconds" })))

  for (const code of [408, 500, 502, 503, 504]) {
    it.effect(`a ${code} is retried`, () =>
      secondAttemptAfter(1000).pipe(provideClient({ [FEE]: FinTest.sequence(status(code, { "retry-after": "1" }), ok) })))
  }

  // Only a wait the service asks for on a retryable answer makes a RateLimitError; a refusal stays an ApiError.
  for (const code of [501, 409]) {
    it.effect(`a ${code}, even with a long Retry-After, is an ApiError, never retried`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" && [error.status, error.attempts]).toEqual([code, 1])
        expect(yield* attempts).toBe(1)
      }).pipe(provideClient({ [FEE]: () => status(code, { "retry-after": "120" }) }, { maxRetryAfter: "60 seconds" })))
  }

  it.effect("a 503 turned RateLimitError keeps the request id and a body its fields cannot hold", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "RateLimitError" && [error.requestId, error.body]).toEqual([
        "req-1",
        `{"message":"paused","until":"14:00"}`
      ])
    }).pipe(provideClient({
      [FEE]: () =>
        FinTest.json(503, { message: "paused", until: "14:00" }, { "retry-after": "7200", "x-request-id": "req-1" })
    }, { maxRetryAfter: "60 seconds" })))

  it.effect("a GET marked safe: false is not retried", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        HttpTransport.request({ method: "GET", path: "/v1/things", response: Schema.Unknown, safe: false })
      )
      expect(error._tag === "ApiError" && [error.status, error.attempts]).toEqual([503, 1])
      expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("GET /v1/things"))).toBe(1)
    }).pipe(provideClient({ "GET /v1/things": FinTest.sequence(status(503), FinTest.json(200, {})) })))

  // The token fetch is shared, so it keeps its retries; a caller whose deadline comes before the fetch's next try ends
  // at once with the fetch's error, as it would for a wait of its own, not cut off later by a bare TimeoutError.
  describe("a token fetch waiting to try again past a caller's deadline", () => {
    const token = FinTest.json(200, {
      access_token: "t",
      access_token_ttl: FinTest.formatServiceTimestamp(Date.UTC(2100, 0, 1)),
      current_time: FinTest.formatServiceTimestamp(0)
    })
    it.effect("a token 429 asking for longer than the deadline leaves: RateLimitError at once; a caller with time left gets the token", () =>
      Effect.gen(function*() {
        const short = yield* Effect.fork(Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline: "5 seconds" }))))
        const long = yield* Effect.fork(calculate)
        yield* advance(0)
        const error = yield* Fiber.join(short)
        expect(error._tag === "RateLimitError" && [error.status, error.operation, error.retryAfter]).toEqual([
          429,
          "POST /v1/oauth/token",
          Duration.seconds(30)
        ])
        yield* advance(30_000)
        expect((yield* Fiber.join(long)).source_amount).toBe(3508679)
        expect(yield* attempts).toBe(1)
      }).pipe(provideClient({
        "POST /v1/oauth/token": FinTest.sequence(status(429, { "retry-after": "30" }), token),
        [FEE]: () => ok
      })))

    // A wait the service asks for that passes the deadline ends the call at once, with a RateLimitError saying so; with
    // Retry-After: 0 it is the backoff's own wait that passes it, and the 503 stays an ApiError.
    for (
      const [retryAfter, deadline, expected] of [
        ["30", "5 seconds", "RateLimitError"],
        // A next try at the very deadline is too late as well.
        ["5", "5 seconds", "RateLimitError"],
        ["0", "300 millis", "ApiError"]
      ] as const
    ) {
      it.effect(`a token 503 with Retry-After: ${retryAfter} past a ${deadline} deadline: ${expected} at once`, () =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline })))
          const { _tag, operation, status } = error as { _tag: string; operation?: string; status?: number }
          expect([_tag, status, operation]).toEqual([expected, 503, "POST /v1/oauth/token"])
          if (expected === "RateLimitError") expect(error.message).toContain("more than the call's deadline leaves")
        }).pipe(provideClient({
          "POST /v1/oauth/token": FinTest.sequence(status(503, { "retry-after": retryAfter }), token),
          [FEE]: () => ok
        })))
    }

    // Only a 5xx: a token 408 asking for a wait past the deadline stays the ApiError it is, its wait kept, as the
    // transport's own 408 does (`Retry.tooLate`).
    it.effect("a token 408 with Retry-After: 30 past a 5 seconds deadline: ApiError at once, with its retryAfter", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline: "5 seconds" })))
        expect(error._tag === "ApiError" && [error.status, error.operation, error.retryAfter]).toEqual([
          408,
          "POST /v1/oauth/token",
          Duration.seconds(30)
        ])
      }).pipe(provideClient({
        "POST /v1/oauth/token": FinTest.sequence(status(408, { "retry-after": "30" }), token),
        [FEE]: () => ok
      })))

    // Every 5xx, a 500 as much as a 503: as the transport's own retries turn it (`Retry.retry`).
    it.effect("a token 500 with Retry-After: 30 past a 5 seconds deadline: RateLimitError at once", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline: "5 seconds" })))
        const { _tag, operation, status } = error as { _tag: string; operation?: string; status?: number }
        expect([_tag, status, operation]).toEqual(["RateLimitError", 500, "POST /v1/oauth/token"])
        expect(error.message).toContain("more than the call's deadline leaves")
      }).pipe(provideClient({
        "POST /v1/oauth/token": FinTest.sequence(status(500, { "retry-after": "30" }), token),
        [FEE]: () => ok
      })))

    it.effect("a caller whose refresh fallback was refused meanwhile (a 401) still ends at once when the refresh is to wait past its deadline", () =>
      Effect.gen(function*() {
        const hour = 3_600_000
        yield* calculate // token-1: its refresh is due at 59 minutes, it is usable until 59.5
        yield* advance(hour - 61_000)
        // D sends with token-1, and is answered 401 two seconds later, while the refresh runs: token-1 is refused.
        const d = yield* Effect.fork(Effect.flip(calculate))
        yield* advance(1000)
        // C starts the refresh, with token-1 to fall back on; the refresh waits 35 s (before C's deadline), then 40 s.
        const c = yield* Effect.fork(Effect.flip(calculate))
        const startedC = yield* Clock.currentTimeMillis
        yield* advance(35_000)
        const [errorC, endedC] = yield* Effect.zip(Fiber.join(c), Clock.currentTimeMillis)
        expect(errorC._tag === "RateLimitError" && [errorC.operation, endedC - startedC]).toEqual([
          "POST /v1/oauth/refresh-token",
          35_000
        ])
        expect((yield* Fiber.join(d))._tag).toBe("RateLimitError")
      }).pipe(provideClient({
        "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
        "POST /v1/oauth/refresh-token": FinTest.sequence(
          status(503, { "retry-after": "35" }),
          status(503, { "retry-after": "40" }),
          status(503)
        ),
        [FEE]: (() => {
          let calls = 0
          const expired = FinTest.delayed("2 seconds", () => FinTest.json(401, { message: "expired" }))
          return (request: FinTest.RecordedRequest) => {
            calls += 1
            return calls === 2 ? expired(request) : ok
          }
        })()
      })))

    it.effect("a call from an uninterruptible region (a finalizer) leaves no fiber behind watching the fetch", () =>
      Effect.gen(function*() {
        const supervisor = yield* Supervisor.track
        const fiber = yield* Effect.fork(Effect.supervised(Effect.uninterruptible(calculate), supervisor))
        // The token call's 503, its 500 ms wait, then a token.
        yield* advance(500)
        expect((yield* Fiber.join(fiber)).source_amount).toBe(3508679)
        expect(yield* supervisor.value).toEqual([])
      }).pipe(provideClient({
        "POST /v1/oauth/token": FinTest.sequence(status(503), token),
        [FEE]: () => ok
      })))

    it.effect("a token 503 whose backoff would outlast the deadline: the 503 at once, as the transport's own retries do", () =>
      Effect.gen(function*() {
        const fiber = yield* Effect.fork(Effect.flip(calculate))
        // The waits are 500 ms then 1 s (jitter fixed at x1): the second ends past the 1.2 s deadline.
        yield* advance(500)
        const error = yield* Fiber.join(fiber)
        expect(error._tag === "ApiError" && [error.status, error.operation, error.attempts]).toEqual([
          503,
          "POST /v1/oauth/token",
          2
        ])
      }).pipe(provideClient({ "POST /v1/oauth/token": () => status(503), [FEE]: () => ok }, { deadline: "1200 millis" })))
  })

  it.effect("429 x3: RateLimitError after the last retry", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      yield* advance(2000)
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("RateLimitError")
      expect(error._tag === "RateLimitError" && error.attempts).toBe(3)
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({ [FEE]: () => status(429, { "retry-after": "0" }) })))

  for (const code of [400, 403, 404, 409, 422]) {
    it.effect(`${code} is not retried`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag).toBe("ApiError")
        expect(error._tag === "ApiError" && error.status).toBe(code)
        expect(yield* attempts).toBe(1)
      }).pipe(provideClient({ [FEE]: () => status(code) })))
  }

  it.effect("401 then 200: one fresh token and exactly 2 attempts, the resend counted as no retry", () =>
    Effect.gen(function*() {
      const retries = counterValue("effect_fin_retries_total", { operation: "fee-calculation" })
      const before = yield* retries
      yield* calculate
      expect(yield* retries).toBe(before)
      expect(yield* attempts).toBe(2)
      expect(yield* tokenRequests).toBe(2)
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      const auth = requests.filter((r) => r.path === "/v1/fee-calculation").map((r) => r.headers.authorization)
      expect(auth).toEqual(["Bearer token-1", "Bearer token-2"])
    }).pipe(provideClient({ [FEE]: FinTest.sequence(FinTest.json(401, { message: "Authentication failed" }), ok) })))

  it.effect("401 twice: AuthenticationError, no loop", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag).toBe("AuthenticationError")
      expect(error._tag === "AuthenticationError" && error.attempts).toBe(2)
      expect(yield* attempts).toBe(2)
      expect(yield* tokenRequests).toBe(2)
    }).pipe(provideClient({ [FEE]: () => FinTest.json(401, { message: "Authentication failed" }) })))

  // The service answers a 401 before doing anything: the one resend with a fresh token holds for an unsafe call too.
  it.effect("an unsafe POST's 401 is sent once more with a fresh token; a second 401 is final", () =>
    Effect.gen(function*() {
      const payout = HttpTransport.request({
        method: "POST",
        path: "/v1/transactions/transfer-payout",
        body: { amount: 500 },
        response: Schema.Unknown
      })
      expect(yield* payout).toEqual({ id: "p1" })
      expect(yield* Effect.flip(payout)).toMatchObject({ _tag: "AuthenticationError", status: 401, attempts: 2 })
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      const auth = requests.filter((r) => r.path === "/v1/transactions/transfer-payout").map((r) => r.headers.authorization)
      expect(auth).toEqual(["Bearer token-1", "Bearer token-2", "Bearer token-2", "Bearer token-3"])
    }).pipe(provideClient({
      "POST /v1/transactions/transfer-payout": FinTest.sequence(
        FinTest.json(401, { message: "Authentication failed" }),
        FinTest.json(200, { id: "p1" }),
        FinTest.json(401, { message: "Authentication failed" }),
        FinTest.json(401, { message: "Authentication failed" }),
        FinTest.json(200, { id: "p2" })
      )
    })))

  it.effect("only the first 401 of a call refreshes: 401, 503, 401 ends in AuthenticationError", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      yield* advance(500)
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("AuthenticationError")
      // 401 -> fresh token -> 503 -> scheduled retry -> 401 again: final, no second refresh.
      expect(error._tag === "AuthenticationError" && error.attempts).toBe(3)
      expect(yield* attempts).toBe(3)
      expect(yield* tokenRequests).toBe(2)
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(
        FinTest.json(401, { message: "Authentication failed" }),
        status(503),
        FinTest.json(401, { message: "Authentication failed" }),
        ok
      )
    })))

  it.effect("a transport failure is retried, then surfaces as TransportError", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      yield* advance(1500)
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("TransportError")
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({ [FEE]: () => FinTest.fail("ECONNRESET") })))

  it.effect("a connection refused for its setup (a TLS alert, as Node 22 names it) is not retried", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "TransportError", code: "ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE" })
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.fail("ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE") })))

  it.effect("a stalled body is cut by the attempt timeout, retried, then TimeoutError", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      yield* advance(1000) // attempt 1 times out
      yield* advance(500)
      yield* advance(1000) // attempt 2
      yield* advance(1000)
      yield* advance(1000) // attempt 3
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("TimeoutError")
      expect(error._tag === "TimeoutError" && error.kind).toBe("attempt")
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({ [FEE]: () => FinTest.stallBody(200) }, { timeout: "1 second" })))

  it.effect("a stalled response then success", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(calculate)
      yield* advance(1000)
      yield* advance(500)
      yield* Fiber.join(fiber)
      expect(yield* attempts).toBe(2)
    }).pipe(provideClient({ [FEE]: FinTest.sequence(FinTest.stall, ok) }, { timeout: "1 second" })))

  it.effect("a backoff that would outlast the deadline ends the call at once, with the service's error", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      // The waits are 500 ms, 1 s and 2 s, each x0.8-1.2: at most 4.2 s, so the fourth attempt fails before 4.5 s,
      // and its 3.2-4.8 s wait cannot fit in what is left of 5 s.
      for (let i = 0; i < 9; i++) yield* advance(500)
      const exit = yield* Fiber.poll(fiber)
      expect(Option.isSome(exit)).toBe(true)
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("ApiError")
      expect(error._tag === "ApiError" && [error.status, error.attempts]).toEqual([503, 4])
      expect(yield* attempts).toBe(4)
      // In whole milliseconds, though the jitter (x0.849 here) makes every wait a fraction of one (no "424ms
      // 691200ns" for an on-call reader).
      const millis = "(?:\\d+s(?: \\d+ms)?|\\d+ms)"
      const said = `^DEBUG \\["effect-fin: not retrying: the next wait of ${millis} would outlast the deadline ` +
        `\\(${millis} left\\)"\\] \\{"operation":"POST /v1/fee-calculation"\\}$`
      const notRetrying = logs.lines.filter((line) => line.includes("not retrying"))
      expect(notRetrying).toEqual([expect.stringMatching(new RegExp(said))])
    }).pipe(
      Effect.provide(logs.layer),
      Logger.withMinimumLogLevel(LogLevel.Debug),
      Effect.withRandom(Random.fixed([0.123456])),
      provideClient({ [FEE]: () => status(503) }, { deadline: "5 seconds", maxRetries: 10 })
    )
  })

  // An attempt started as the deadline falls would be cut at once: the service's own answer is the better error.
  it.effect("a backoff that ends exactly at the deadline ends the call at once, with the service's error", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "ApiError" && [error.status, error.attempts]).toEqual([503, 1])
      expect(yield* attempts).toBe(1)
      // 0.5 puts the jitter at x1: the first wait is 500 ms, exactly the deadline.
    }).pipe(Effect.withRandom(Random.fixed([0.5])), provideClient({ [FEE]: () => status(503) }, { deadline: "500 millis" })))

  it.effect("a Retry-After of exactly what is left of the deadline: RateLimitError at once", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "RateLimitError" && [error.status, error.attempts]).toEqual([429, 1])
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => status(429, { "retry-after": "10" }) }, { deadline: "10 seconds" })))

  // Past 2^53 ns (any time since 1970 + 104 days) the TestClock's readings are a microsecond or so off: what is left
  // read a little long, and a wait of exactly that much was taken to fit, for the next attempt to be refused at the
  // deadline (TimeoutError, the 503 lost). Found by test/retry-model.test.ts.
  it.effect("a Retry-After date ending exactly at the deadline, on a present-day clock: RateLimitError at once", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1))
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      // The first 503's backoff is 450 ms (jitter x0.9); the second asks for 3 s from then: 2550 ms, what is left.
      for (let i = 0; i < 60; i++) yield* advance(50)
      const error = yield* Fiber.join(fiber)
      expect(error._tag === "RateLimitError" && [error.status, error.attempts]).toEqual([503, 2])
      expect(yield* attempts).toBe(2)
    }).pipe(
      Effect.withRandom(Random.fixed([0.25])),
      provideClient({
        [FEE]: (request) =>
          request.at === Date.UTC(2026, 0, 1)
            ? status(503)
            : status(503, { "retry-after": new Date(request.at + 3000).toUTCString() })
      }, { deadline: "3 seconds", maxRetries: 2 })
    ))

  it.effect("the deadline still cuts short an attempt that runs past it", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(calculate))
      for (let i = 0; i < 10; i++) yield* advance(500)
      const error = yield* Fiber.join(fiber)
      expect(error._tag === "TimeoutError" && error.kind).toBe("deadline")
      // Waits of about 0.5 and 1 s fit; the third attempt starts before 2.5 s and stalls past the 5 s deadline.
      expect(yield* attempts).toBe(3)
    }).pipe(provideClient({ [FEE]: FinTest.sequence(status(503), status(503), FinTest.stall) }, {
      deadline: "5 seconds",
      timeout: "1 minute",
      maxRetries: 10
    })))

  // On the live clock the attempt and deadline timeouts take a cheaper path than Effect.timeoutFail; interrupting a
  // caller must still end its call at once, not when the 60-second timeout would fire (the test would time out).
  it.live("interrupting a call in flight on the live clock ends it at once", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(calculate)
      // In flight: its request sent (waited for, as a fixed pause could end before it on a loaded machine).
      yield* eventually(Effect.map(attempts, (n) => n === 1), "the request sent")
      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.stall }, { timeout: "60 seconds", deadline: "120 seconds" })), 10_000)

  // The attempt runs in the caller's fiber, not a fiber of its own: interrupting the caller stops the request then,
  // not at its timeout a minute on (the caller's end alone would leave the request running, unseen, that long).
  it.live("interrupting a call in flight stops its request at once", () => {
    let stopped = 0
    let reached: () => void = () => undefined
    const inFlight = new Promise<void>((resolve) => (reached = resolve))
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(calculate)
      yield* Effect.promise(() => inFlight)
      yield* Fiber.interrupt(fiber)
      expect(stopped).toBe(1)
    }).pipe(provideClient({
      [FEE]: () =>
        Effect.zipRight(
          Effect.sync(reached),
          Effect.onInterrupt(Effect.never, () => Effect.sync(() => void stopped++))
        )
    }, { timeout: "60 seconds", deadline: "120 seconds" }))
  }, 10_000)

  // Its closing listener (and its timeout's timer) go with it: a listener left would stay in the closing's set until
  // the client closes, the timer hold the process open for the rest of the timeout.
  it.live("interrupting a call in flight leaves no closing listener", () => {
    let reached: () => void = () => undefined
    const inFlight = new Promise<void>((resolve) => (reached = resolve))
    return Effect.gen(function*() {
      const closing = countListeners(
        Closing.of(yield* TokenProvider.TokenProvider) as { onClose: Closing.Closing["onClose"] }
      )
      const fiber = yield* Effect.fork(calculate)
      yield* Effect.promise(() => inFlight)
      yield* Fiber.interrupt(fiber)
      yield* Effect.sleep("10 millis")
      expect(closing.listeners).toBe(0)
    }).pipe(provideClient({
      [FEE]: () => Effect.zipRight(Effect.sync(reached), Effect.never)
    }, { timeout: "60 seconds", deadline: "120 seconds" }))
  }, 10_000)

  // Each wait and attempt after a failure listens for its client's closing; one that has ended stops listening, or a
  // long-lived client would keep a listener for every retry it ever made, until it closes.
  it("a closing listener that was stopped is not called, and one added after the close is called at once", () => {
    const closing = Closing.make()
    let called = 0
    const stop = closing.onClose(() => void called++)
    stop()
    closing.close()
    expect(called).toBe(0)
    closing.onClose(() => void called++)
    expect(called).toBe(1)
  })

  // The jitter wakes a retry at a fractional millisecond of the test clock, which its `currentTimeNanos` cannot convert:
  // a retried call must still end as it should, whatever the random jitter (the other tests fix it at x1).
  it.effect("retries under the test clock with any jitter end in the answer, not a defect", () =>
    Effect.gen(function*() {
      for (let seed = 0; seed < 20; seed++) {
        const exit = yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest)).pipe(
          Effect.provide(FinTest.layerClient({ [FEE]: FinTest.sequence(status(503), status(503), ok) })),
          Effect.withRandom(Random.make(seed)),
          Effect.exit
        )
        expect(Exit.isSuccess(exit), `seed ${seed}`).toBe(true)
      }
    }))

  // The wall clock set back in the middle of a call (an NTP step, a virtual machine resumed) gives it no more time: its
  // limits are measured on monotonic time, as its timers are. Here the first backoff (about 500 ms) does not fit in what
  // is left, so the call ends with its first attempt's timeout, as without the jump (measured on the wall clock, it
  // would have had another minute: every retry).
  it.live("the wall clock set back during a call gives it no more time before its deadline", () =>
    Effect.gen(function*() {
      const error = yield* withWallClockSetBack((setBack) =>
        Effect.gen(function*() {
          const fiber = yield* Effect.fork(Effect.flip(calculate))
          yield* Effect.sleep("30 millis")
          setBack(60_000)
          return yield* Fiber.join(fiber)
        })
      )
      expect(error).toMatchObject({ _tag: "TimeoutError", kind: "attempt", attempts: 1 })
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.stall }, { timeout: "100 millis", deadline: "250 millis" })), 10_000)

  // A deadline as long as the attempt's timeout ends the call as a deadline (a caller's own limit: the subdivision
  // fallback tells the two apart), on the live clock as on the test clock.
  it.live("a deadline equal to the timeout ends the call as a deadline on the live clock", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 3; i++) {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "TimeoutError" && error.kind).toBe("deadline")
      }
    }).pipe(provideClient({ [FEE]: () => FinTest.stall }, { timeout: "100 millis", deadline: "100 millis" })), 10_000)

  // A timed-out attempt's request is stopped, not left running: its connection is freed, and a stalled payment is
  // not sent on behind the caller's back.
  it.live("an attempt cut by its timeout on the live clock is interrupted before the call ends", () => {
    let stopped = 0
    return Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "TimeoutError", kind: "attempt", attempts: 1 })
      expect(stopped).toBe(1)
    }).pipe(provideClient({
      [FEE]: () => Effect.onInterrupt(Effect.never, () => Effect.sync(() => void stopped++))
    }, { timeout: "50 millis", deadline: "10 seconds", maxRetries: 0 }))
  }, 10_000)

  // A closing that has closed already is told at once (`Closing.onClose`): an attempt that starts just after its client
  // closed (its token handed out a moment before) ends then, as an interruption, not at its timeout an hour on.
  for (const clock of ["live", "test"] as const) {
    const run = clock === "live" ? it.live : it.effect
    run(`an attempt started after its client closed ends at once (${clock} clock)`, () => {
      let [started, stopped] = [0, 0]
      const closing = Closing.make()
      closing.close()
      return Effect.gen(function*() {
        const stalled = Effect.onInterrupt(Effect.zipRight(Effect.sync(() => void started++), Effect.never), () =>
          Effect.sync(() => void stopped++))
        const exit = yield* Effect.exit(timeoutFail(stalled, Duration.hours(1), () => "timed out", closing))
        expect(Exit.isInterrupted(exit)).toBe(true)
        // Ended before it began, or interrupted: never left running.
        expect(stopped).toBe(started)
      })
    }, 5_000)
  }

  // An attempt that ignores interruption (a user's client wrapped in `Effect.uninterruptible`, a pool that masks it)
  // cannot hold its caller: the time limit, the caller's interruption and the closing each end the call then, the
  // attempt told to stop and left to end on its own (here when the test lets it go).
  for (const clock of ["live", "test"] as const) {
    const run = clock === "live" ? it.live : it.effect
    run(`an attempt that ignores interruption holds neither its limit, its caller nor closing (${clock} clock)`, () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        // Waits in real time on either clock.
        const live = TestServices.provideLive
        const release = yield* Deferred.make<void>()
        let [started, ended] = [0, 0]
        const held = Effect.uninterruptible(
          Effect.zipRight(
            Effect.zipRight(Effect.sync(() => void started++), Deferred.await(release)),
            Effect.sync(() => void ended++)
          )
        )
        const limited = Effect.flip(timeoutFail(held, Duration.millis(50), () => "timed out"))
        const timedOut = yield* (clock === "test" ? forkSleeping(limited) : Effect.fork(limited))
        if (clock === "test") yield* TestClock.adjust("50 millis")
        expect(yield* Fiber.join(timedOut)).toBe("timed out")

        const caller = yield* Effect.fork(timeoutFail(held, Duration.hours(1), () => "timed out"))
        yield* live(eventually(Effect.sync(() => started === 2), "the second attempt"))
        expect(Exit.isInterrupted(yield* Fiber.interrupt(caller))).toBe(true)

        const closing = Closing.make()
        const closed = yield* Effect.fork(timeoutFail(held, Duration.hours(1), () => "timed out", closing))
        yield* live(eventually(Effect.sync(() => started === 3), "the third attempt"))
        closing.close()
        expect(Exit.isInterrupted(yield* Fiber.await(closed))).toBe(true)

        // Held all along, and said: once a process at Warning, then at Debug; let go, each runs to its end.
        const said = logs.lines.filter((line) => line.includes("is left to end on its own"))
        expect(said).toHaveLength(3)
        expect(said.filter((line) => line.startsWith("WARN")).length).toBeLessThanOrEqual(1)
        expect(ended).toBe(0)
        yield* Deferred.succeed(release, undefined)
        yield* live(eventually(Effect.sync(() => ended === 3), "the attempts' ends"))
      }).pipe(Effect.provide(logs.layer), Logger.withMinimumLogLevel(LogLevel.All))
    }, 10_000)
  }

  // The test above cannot know whether another test of this file said it first; here the module's state is fresh.
  it.live("an attempt left running is said at Warning the first time in a process, then at Debug", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      vi.resetModules()
      const Fresh = yield* Effect.promise(() => import("../src/internal/timeLimits.js"))
      const release = yield* Deferred.make<void>()
      const held = Effect.uninterruptible(Deferred.await(release))
      for (const _ of [1, 2, 3]) {
        expect(yield* Effect.flip(Fresh.timeoutFail(held, Duration.millis(20), () => "timed out"))).toBe("timed out")
      }
      yield* Deferred.succeed(release, undefined)
      const said = logs.lines.filter((line) => line.includes("is left to end on its own"))
      expect(said.map((line) => line.split(" ")[0])).toEqual(["WARN", "DEBUG", "DEBUG"])
    }).pipe(Effect.provide(logs.layer), Logger.withMinimumLogLevel(LogLevel.All))
  }, 10_000)

  // What an attempt sets in its fiber refs (a user's HttpClient wrapper calling FiberRef.set, say) stays its own, on
  // either clock: the caller's are as they were.
  for (const clock of ["live", "test"] as const) {
    const run = clock === "live" ? it.live : it.effect
    run(`an attempt's fiber refs are not joined into the caller's (${clock} clock)`, () => {
      const ref = FiberRef.unsafeMake("caller's")
      return Effect.gen(function*() {
        const set = Effect.as(FiberRef.set(ref, "attempt's"), "done")
        expect(yield* timeoutFail(set, Duration.hours(1), () => "timed out")).toBe("done")
        expect(yield* FiberRef.get(ref)).toBe("caller's")
      })
    })
  }

  it.effect("a deadline equal to the timeout ends the call as a deadline on the test clock", () =>
    Effect.gen(function*() {
      const error = yield* FinTest.advanceUntilDone(Effect.flip(calculate))
      expect(error._tag === "TimeoutError" && error.kind).toBe("deadline")
    }).pipe(provideClient({ [FEE]: () => FinTest.stall }, { timeout: "2 seconds", deadline: "2 seconds" })))

  // A call made from a finalizer (or any uninterruptible region) keeps its time limits, on the test clock and the live
  // one; interrupting such a caller from outside does not cut its call short (the call runs to its end).
  it.effect("a call from an uninterruptible region still times out and ends at its deadline", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.flip(Effect.uninterruptible(calculate)))
      for (let i = 0; i < 6; i++) yield* advance(500)
      const error = yield* Fiber.join(fiber)
      expect(error._tag === "TimeoutError" && error.kind).toBe("deadline")
      expect(yield* attempts).toBe(2)
    }).pipe(provideClient({ [FEE]: () => FinTest.stall }, { timeout: "1 second", deadline: "2 seconds" })))

  it.live("a call from an uninterruptible region still times out on the live clock", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.uninterruptible(calculate.pipe(HttpTransport.withOptions({ timeout: "50 millis", maxRetries: 0 })))
      )
      expect(error._tag === "TimeoutError" && error.kind).toBe("attempt")
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.stall })), 10_000)

  it.live("interrupting an uninterruptible caller does not cut its call short", () => {
    let answered = 0
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.uninterruptible(calculate))
      yield* Effect.sleep("20 millis")
      const exit = yield* Fiber.interrupt(fiber)
      // The interruption takes effect once the call has ended, with the answer it got.
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(yield* attempts).toBe(1)
      expect(answered).toBe(1)
    }).pipe(provideClient({
      [FEE]: () => Effect.as(Effect.sleep("100 millis").pipe(Effect.tap(() => void answered++)), ok)
    }))
  }, 10_000)

  it.effect("withOptions overrides maxRetries for one call", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions({ maxRetries: 0 })))
      expect(error._tag).toBe("ApiError")
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => status(503) })))

  it.effect("withOptions overrides the timeout and deadline for one call", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(
        Effect.flip(HttpTransport.withOptions(calculate, { timeout: "100 millis", deadline: "150 millis" }))
      )
      // The attempt times out at 100 ms; no backoff fits in the 50 ms left, so the call ends there.
      yield* advance(100)
      const error = yield* Fiber.join(fiber)
      expect(error._tag === "TimeoutError" && error.kind).toBe("attempt")
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.stall })))

  // As CallOptions says: the token fetch is shared, so it keeps the client's tokenTimeout and maxRetries; a call with
  // `{ timeout: "1 second", maxRetries: 0 }` still waits through its retries, each cut at 10 s.
  it.effect("withOptions timeout and maxRetries do not reach the token fetch (it keeps the client's)", () =>
    Effect.gen(function*() {
      const error = yield* FinTest.advanceUntilDone(
        Effect.flip(calculate.pipe(HttpTransport.withOptions({ timeout: "1 second", maxRetries: 0 })))
      )
      expect(error).toMatchObject({ _tag: "TimeoutError", kind: "token", operation: "POST /v1/oauth/token" })
      expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("POST /v1/oauth/token"))).toBe(3)
      expect(yield* attempts).toBe(0)
    }).pipe(provideClient({ [FEE]: () => status(200), "POST /v1/oauth/token": () => FinTest.stall })))

  it.effect("a nested withOptions that leaves an option undefined keeps the outer one (maxRetries 0 stays 0)", () =>
    Effect.gen(function*() {
      // A helper passing its own optional settings through: `maxRetries: undefined` means "not mine to say".
      const helper = (options: { readonly maxRetries?: number | undefined }) =>
        HttpTransport.withOptions({ timeout: "5 seconds", maxRetries: options.maxRetries })
      const error = yield* FinTest.advanceUntilDone(Effect.flip(
        calculate.pipe(helper({}), HttpTransport.withOptions({ maxRetries: 0, deadline: "20 seconds" }))
      ))
      expect(error._tag).toBe("ApiError")
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => status(503) })))

  it.effect("a call that dies (a platform client or schema that throws) is counted and traced as a defect", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const dies = HttpTransport.request({
        method: "GET",
        path: "/v1/dies",
        response: Schema.transform(Schema.Unknown, Schema.Unknown, {
          strict: true,
          decode: () => {
            throw new Error("boom")
          },
          encode: (u) => u
        }),
        name: "dies"
      })
      const exit = yield* Effect.exit(dies.pipe(Effect.provide(tracing)))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      const span = (yield* spans).find((s) => s.name === "effect-fin.dies")
      expect(span?.attributes.get("effect_fin.outcome")).toBe("defect")
      // The answer that came before the schema threw: its status is on the span, as any last answer's is.
      expect(span?.attributes.get("http.response.status_code")).toBe(200)
      expect(yield* outcomesOf("dies")).toEqual([["defect", 1]])
    }).pipe(provideClient({ "GET /v1/dies": () => ok })))

  it.effect("a call refused before anything is sent is counted and traced too, with no attempt", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const refused = HttpTransport.request({ method: "GET", path: "/v1/../x", response: Schema.Unknown, name: "refused" })
      expect((yield* Effect.flip(refused.pipe(Effect.provide(tracing))))._tag).toBe("RequestValidationError")
      const span = (yield* spans).find((s) => s.name === "effect-fin.refused")
      expect([span?.attributes.get("effect_fin.outcome"), span?.attributes.get("effect_fin.attempts")]).toEqual([
        "RequestValidationError",
        0
      ])
      expect(yield* outcomesOf("refused")).toEqual([["RequestValidationError", 1]])
    }).pipe(provideClient({})))

  it.effect("overrides that are no object (from untyped code) are a RequestValidationError, not a defect", () =>
    Effect.gen(function*() {
      for (const [given, words] of [
        [undefined, "undefined"],
        [null, "null"],
        [5000, "a number"],
        ["5 seconds", "a string"],
        [[{ timeout: "1 second" }], "an array"]
      ] as const) {
        const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(given as unknown as HttpTransport.CallOptions)))
        expect(error).toMatchObject({
          _tag: "RequestValidationError",
          message: `Invalid overrides: expected an object of timeout, deadline and maxRetries, not ${words}`
        })
      }
      expect(yield* attempts).toBe(0)
    }).pipe(provideClient({ [FEE]: () => ok })))

  it.effect("the mark of overrides that were no object is no key an options object can have, nor one shown", () =>
    Effect.gen(function*() {
      // An options object from untyped code (JSON) with a key of that name is an unknown override, told as one.
      const spoofed = { "(overrides)": "a number" } as unknown as HttpTransport.CallOptions
      expect(yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(spoofed)))).toMatchObject({
        _tag: "RequestValidationError",
        message: expect.stringContaining("Unknown override")
      })
      // `currentCallOptions` (a CallOptions) shows no key outside its type.
      const current = yield* HttpTransport.currentCallOptions.pipe(
        HttpTransport.withOptions(undefined as unknown as HttpTransport.CallOptions)
      )
      expect(Object.keys(current)).toEqual([])
      expect(yield* attempts).toBe(0)
    }).pipe(provideClient({ [FEE]: () => ok })))

  it.effect("an invalid override is a RequestValidationError and sends nothing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions({ maxRetries: -1 })))
      expect(error._tag).toBe("RequestValidationError")
      // The message says what was expected: a log line shows nothing else.
      expect(error.message).toBe("Invalid maxRetries override: expected a whole number from 0 to 10")
      // From untyped config, a null (meant as "none"?) is refused, as a null timeout is, not read as the client's own.
      for (const options of [{ maxRetries: null }, { timeout: null }, { deadline: null }]) {
        const given = options as unknown as HttpTransport.CallOptions
        expect(yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(given)))).toMatchObject({
          _tag: "RequestValidationError",
          issues: [{ path: Object.keys(options)[0] }]
        })
      }
      // Past 24 days a timer never fires (2^31 - 1 ms is the most one waits): no limit at all, without a word.
      // Below a millisecond a timer cannot count it: refused, and the words say so (not "greater than zero", which
      // half a millisecond is).
      for (const options of [{ timeout: "25 days" }, { deadline: Duration.days(30) }, { timeout: "0.5 millis" }] as const) {
        const refused = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(options)))
        expect(refused._tag === "RequestValidationError" && refused.issues.map((i) => i.expected)).toEqual([
          "a finite duration from 1 millisecond to 24 days"
        ])
      }
      // From untyped code, a bare number: said to lack its unit, as the client's own options say it.
      const bare = yield* Effect.flip(
        calculate.pipe(HttpTransport.withOptions({ deadline: 5000 } as unknown as HttpTransport.CallOptions))
      )
      expect(bare.message).toBe(
        `Invalid deadline override: expected a duration with its unit ("30 seconds", Duration.seconds(30)): a bare number would be read as milliseconds`
      )
      // From untyped code, a misspelt option would change nothing without a word.
      const unknown = yield* Effect.flip(
        calculate.pipe(HttpTransport.withOptions({ maxRetry: 0 } as unknown as HttpTransport.CallOptions))
      )
      expect(unknown).toMatchObject({
        _tag: "RequestValidationError",
        message: "Unknown override maxRetry: the options are timeout, deadline and maxRetries",
        issues: [{ path: "maxRetry", expected: "no such option: timeout, deadline or maxRetries" }]
      })
      // So is a `__proto__` of parsed JSON.
      const parsed = JSON.parse(`{"__proto__": 5}`) as HttpTransport.CallOptions
      expect(yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(parsed)))).toMatchObject({
        _tag: "RequestValidationError",
        issues: [{ path: "__proto__" }]
      })
      // A key with control characters is shown escaped, and cut between characters, never inside one.
      const odd = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(
        { [`\u001b[2J${"x".repeat(59)}\u{1f600}`]: 0 } as unknown as HttpTransport.CallOptions
      )))
      expect(odd._tag === "RequestValidationError" && odd.issues[0]!.path).toBe(`\\u001b[2J${"x".repeat(59)}\u{1f600}`)
      const bidi = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(
        { "max\u202eseirteR\u0085": 0 } as unknown as HttpTransport.CallOptions
      )))
      expect(bidi._tag === "RequestValidationError" && bidi.issues[0]!.path).toBe("max\\u202eseirteR\\u0085")
      expect(yield* attempts).toBe(0)
    }).pipe(provideClient({ [FEE]: () => ok })))

  // Options of a class (a getter) or inherited count as given, not dropped without a word.
  it.effect("options given through a getter or a prototype are taken", () =>
    Effect.gen(function*() {
      class Tight {
        get maxRetries() {
          return 0
        }
      }
      yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(new Tight())))
      expect(yield* attempts).toBe(1)
      yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(Object.create({ maxRetries: 0, maxRetry: 0 }))))
      expect(yield* attempts).toBe(2)
    }).pipe(provideClient({ [FEE]: () => status(503) })))

  // A class compiled to ES5 (or with Babel's loose mode) puts its methods on the prototype as enumerable keys: they
  // are the class's, not options of another name.
  it.effect("inherited keys other than the three are not options: an ES5 class's methods are let be", () =>
    Effect.gen(function*() {
      function Tight(this: { maxRetries: number }) {
        this.maxRetries = 0
      }
      Tight.prototype.describe = function() {
        return "no retries"
      }
      const options = new (Tight as unknown as new() => HttpTransport.CallOptions)()
      const error = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions(options)))
      expect(error._tag).toBe("ApiError")
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => status(503) })))

  it.effect("a 200 with malformed JSON: ResponseDecodeError, not retried", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag).toBe("ResponseDecodeError")
      if (error._tag === "ResponseDecodeError") {
        expect(error.issues).toEqual([{ path: "", expected: "a JSON document" }])
        expect(error.message).not.toContain("data")
      }
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.text(200, `{"data": {"source_currency": "US`) })))

  // What a reader of the error is told is expected: in words, never the schema's inner workings.
  for (
    const [name, body, message] of [
      ["no body at all (a 204)", FinTest.text(204, ""), "expected an object with data"],
      // A body of blank lines only (a server's or a proxy's "\r\n") is as empty: no "a JSON document" issue.
      ["a body of white space only (a 200)", FinTest.text(200, "\r\n \t"), "expected an object with data"],
      ["an object without data", FinTest.json(200, {}), "data: expected an object with source_currency, destination_currency, source_amount, exchange_rate, destination_amount, valid_till, fee (missing)"],
      ["a quote without its fields", FinTest.json(200, { data: { source_currency: "USD", destination_currency: "CAD" } }), "data.source_amount: expected a number from 0 to 9007199254740991 (missing); data.exchange_rate: expected a number above 0, up to 9007199254740991 (missing); data.destination_amount: expected a number from 0 to 9007199254740991 (missing); data.fee: expected an object with fixed, percentage, total, is_fee_applied (missing)"],
      ["a valid_till that is no date", FinTest.json(200, { data: { ...quoteBody.data, valid_till: "tomorrow" } }), "data.valid_till: expected an ISO 8601 date-time"]
    ] as const
  ) {
    it.effect(`a decode error says what was expected in words: ${name}`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error.message).toBe(`Unexpected response from POST /v1/fee-calculation: ${message}`)
      }).pipe(provideClient({ [FEE]: () => body }, { maxRetries: 0 })))
  }

  it.effect("a 200 with a wrong field type: ResponseDecodeError naming the path, not the value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag).toBe("ResponseDecodeError")
      if (error._tag === "ResponseDecodeError") {
        expect(error.issues.map((i) => i.path)).toEqual(["data.exchange_rate"])
        expect(error.issues[0]?.expected).toBe("a number")
        expect(error.message).toContain("data.exchange_rate")
        expect(JSON.stringify(error)).not.toContain("one point four")
      }
    }).pipe(provideClient({
      [FEE]: () => FinTest.json(200, { data: { ...quoteBody.data, exchange_rate: "one point four" } })
    })))

  for (const [status, headers] of [[204, {}], [202, { "content-length": "0" }], [200, {}]] as const) {
    it.effect(`an empty ${status} answer is a success for a schema that takes no body, sent once even when safe`, () =>
      Effect.gen(function*() {
        const answer = yield* acceptPayment
        expect(answer).toBeUndefined()
        expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("POST /v1/payments"))).toBe(1)
      }).pipe(provideClient({ "POST /v1/payments": () => FinTest.text(status, "", headers) })))
  }

  it.effect("an empty 200 where a quote is expected: ResponseDecodeError, not retried (never a TransportError)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag).toBe("ResponseDecodeError")
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.text(204, "") })))

  it.effect("PUT, PATCH and DELETE are sent as asked, and (not marked safe) never retried", () =>
    Effect.gen(function*() {
      for (const method of ["PUT", "PATCH", "DELETE"] as const) {
        const error = yield* Effect.flip(
          HttpTransport.request({ method, path: "/v1/beneficiaries/b1", body: { a: 1 }, response: Schema.Unknown })
        )
        expect(error._tag === "ApiError" && error.status).toBe(503)
        const sent = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(`${method} /v1/beneficiaries/b1`))
        expect([method, sent]).toEqual([method, 1])
      }
    }).pipe(provideClient({
      "PUT /v1/beneficiaries/b1": () => status(503),
      "PATCH /v1/beneficiaries/b1": () => status(503),
      "DELETE /v1/beneficiaries/b1": () => status(503)
    })))

  // Not even after a refused connection: a client that follows redirects (fetch) reports the redirect target's
  // refusal after the service has done the call.
  it.effect("a POST not marked safe is never retried, not even after a refused connection", () =>
    Effect.gen(function*() {
      const payout = Effect.flip(HttpTransport.request({
        method: "POST",
        path: "/v1/transactions/transfer-payout",
        body: { amount: 500 },
        response: Schema.Unknown
      }))
      expect(yield* payout).toMatchObject({ _tag: "ApiError", status: 503, attempts: 1 })
      expect(yield* payout).toMatchObject({ _tag: "TransportError", code: "ECONNREFUSED", attempts: 1 })
      const sent = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("POST /v1/transactions/transfer-payout"))
      expect(sent).toBe(2)
    }).pipe(provideClient({
      "POST /v1/transactions/transfer-payout": FinTest.sequence(status(503), FinTest.fail("ECONNREFUSED"), FinTest.json(200, {}))
    })))

  // JSON.stringify sends these as something else (a placeholder, Effect's inspection form, `{}`), and succeeds.
  it.effect("a body JSON would change is refused, nothing sent; dates, classes and an _id of one's own are sent", () =>
    Effect.gen(function*() {
      const send = (body: unknown) =>
        HttpTransport.request({ method: "POST", path: "/v1/things", body, response: Schema.Unknown, safe: true })
      const changed = [
        { account: Redacted.make("acct-123") },
        Redacted.make("acct-123"),
        { amount: BigDecimal.unsafeFromString("100.25") },
        { note: Option.some("x") },
        { wait: Duration.seconds(1) },
        { items: Chunk.make(1) },
        { byId: new Map([["a", 1]]) },
        [new Set([1])],
        { bytes: new Uint8Array([1, 2]) },
        { bytes: Buffer.from([1, 2]) },
        { at: new Date("not a date") },
        { amounts: [1, undefined] },
        [() => 1],
        // An amount not called (`order.total` for `order.total()`): JSON would leave the field out.
        { source_amount: () => 3508679 },
        { query: new URLSearchParams("a=1") },
        { cause: new Error("x") },
        { cause: Object.assign(new Error("x"), { code: 1 }) },
        { state: new (class {})() },
        // A field behind a getter of its class: JSON sends the object without it (here `{"currency":"USD"}`), an
        // Effect data class's too.
        new (class Transfer {
          readonly #cents = 1250
          readonly currency = "USD"
          get amount() {
            return this.#cents / 100
          }
        })(),
        {
          transfer: new (class Transfer extends Data.Class<{ readonly currency: string }> {
            readonly #cents = 1250
            get amount() {
              return this.#cents / 100
            }
          })({ currency: "USD" })
        },
        { gone: { toJSON: () => undefined } },
        { byKey: MutableHashMap.make(["a", 1]) },
        { via: { toJSON: () => Option.some(1) } },
        { via: { toJSON: () => Duration.seconds(1) } },
        { kind: Symbol("x") },
        { inherited: Object.create(Object.create(null, { a: { value: 1, enumerable: true } })) },
        runInNewContext("({ at: new Date('not a date') })"),
        runInNewContext("({ cause: Object.assign(new Error('x'), { code: 1 }) })"),
        runInNewContext("({ byId: new Map([['a', 1]]), amount: new Number(NaN) })"),
        { amount: new Number(Number.NaN) },
        { secret: { toJSON: () => Redacted.make("s") } }
      ]
      for (const body of changed) {
        const error = yield* Effect.flip(send(body))
        expect(error).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "body" }] })
        expect(error.message).toMatch(/^The request body cannot be sent as JSON: expected a value JSON holds as it is: /)
      }
      expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("POST /v1/things"))).toBe(0)
      // The refusal says what to mend in an amount not called, and in a class instance with a getter, which looks
      // the same whether the getter is derived from own fields or shows a private one: as its class's schema, sent.
      expect((yield* Effect.flip(send({ source_amount: () => 3508679 }))).message).toContain("no function (call it")
      class Named extends Schema.Class<Named>("Named")({ first: Schema.String, last: Schema.String }) {
        get full() {
          return `${this.first} ${this.last}`
        }
      }
      const named = new Named({ first: "Ann", last: "Lee" })
      expect((yield* Effect.flip(send(named))).message).toContain(
        "no class instance showing a field through a getter (give a plain object)"
      )
      yield* HttpTransport.request({
        method: "POST",
        path: "/v1/named",
        body: named,
        bodySchema: Named,
        response: Schema.Unknown,
        safe: true
      })
      const sentNamed = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(sentNamed.find((r) => r.path === "/v1/named")?.body).toEqual({ first: "Ann", last: "Lee" })

      class Payee extends Schema.Class<Payee>("Payee")({ name: Schema.String }) {}
      class Empty extends Schema.Class<Empty>("Empty")({}) {}
      // A document class of one's own whose JSON has an `_id` is no Effect data type.
      class Doc {
        toJSON() {
          return { _id: "doc-2", name: "Bo" }
        }
      }
      yield* send({
        at: new Date(0),
        utc: DateTime.unsafeMake(0),
        payee: new Payee({ name: "Ann" }),
        _id: "doc-1",
        doc: new Doc(),
        left: undefined,
        boxed: new String("x"),
        empty: new Empty(),
        // A getter of its class hidden by an own field of the same name: JSON sends the field.
        shadowed: Object.defineProperty(new (class Labelled {
          get label() {
            return "from the class"
          }
        })(), "label", { value: "own", enumerable: true }),
        // Made in another realm (a `vm` context): plain all the same.
        foreign: runInNewContext("({ list: [1, {}], nested: {}, boxed: new Number(5) })")
      })
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.find((r) => r.path === "/v1/things")?.body).toEqual({
        at: "1970-01-01T00:00:00.000Z",
        utc: "1970-01-01T00:00:00.000Z",
        payee: { name: "Ann" },
        _id: "doc-1",
        doc: { _id: "doc-2", name: "Bo" },
        boxed: "x",
        empty: {},
        shadowed: { label: "own" },
        foreign: { list: [1, {}], nested: {}, boxed: 5 }
      })
    }).pipe(provideClient({
      "POST /v1/things": () => FinTest.json(200, {}),
      "POST /v1/named": () => FinTest.json(200, {})
    })))

  describe("a body with its schema", () => {
    const Payout = Schema.Struct({
      // `finite()`: NumberFromString alone would send NaN as "NaN".
      amount: Schema.NumberFromString.pipe(Schema.finite(), Schema.positive()),
      send_at: Schema.DateTimeUtc,
      tags: Schema.Array(Schema.String)
    })
    const payout = (body: typeof Payout.Type) =>
      HttpTransport.request({ method: "POST", path: "/v1/payouts", body, bodySchema: Payout, response: Schema.Unknown })
    const sent = Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests).pipe(
      Effect.map((requests) => requests.filter((r) => r.path === "/v1/payouts").map((r) => r.body))
    )

    it.effect("is sent as the schema encodes it", () =>
      Effect.gen(function*() {
        yield* payout({ amount: 12.5, send_at: DateTime.unsafeMake(0), tags: ["a"] })
        expect(yield* sent).toEqual([{ amount: "12.5", send_at: "1970-01-01T00:00:00.000Z", tags: ["a"] }])
      }).pipe(provideClient({ "POST /v1/payouts": () => FinTest.json(200, {}) })))

    it.effect("a key the schema does not know (a misspelt field of a body in a variable) is refused, not dropped", () =>
      Effect.gen(function*() {
        // TypeScript checks excess keys only in a literal written in the call: one held in a variable compiles.
        const held = { amount: 12.5, send_at: DateTime.unsafeMake(0), tags: [], refrence: "invoice-42" }
        const error = yield* Effect.flip(payout(held))
        expect(error._tag === "RequestValidationError" && error.issues).toEqual([
          { path: "body.refrence", expected: "no such key" }
        ])
        expect(yield* sent).toEqual([])
      }).pipe(provideClient({ "POST /v1/payouts": () => FinTest.json(200, {}) })))

    it.effect("one the schema refuses is a RequestValidationError naming each issue, nothing sent", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(payout({ amount: -1, send_at: DateTime.unsafeMake(0), tags: [1 as unknown as string] }))
        expect(error._tag).toBe("RequestValidationError")
        expect(error.message).toMatch(/^Invalid request body: body\.amount: expected .*; body\.tags\[0\]: expected a string$/)
        expect(error._tag === "RequestValidationError" && error.issues.map((i) => i.path)).toEqual([
          "body.amount",
          "body.tags[0]"
        ])
        // The schema's `finite()` refuses what NumberFromString alone would send as "NaN" or "Infinity".
        for (const amount of [Number.NaN, Number.POSITIVE_INFINITY]) {
          const notFinite = yield* Effect.flip(payout({ amount, send_at: DateTime.unsafeMake(0), tags: [] }))
          expect(notFinite).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "body.amount" }] })
          expect(notFinite.message).toMatch(/^Invalid request body: body\.amount: expected .*finite/)
        }
        expect(JSON.stringify(error)).not.toContain("-1")
        // A body refused whole by its schema is `body`; an element of a top-level array, `body[1]`.
        const list = (body: unknown) =>
          Effect.flip(HttpTransport.request({
            method: "POST",
            path: "/v1/payouts",
            body: body as ReadonlyArray<string>,
            bodySchema: Schema.Array(Schema.String),
            response: Schema.Unknown
          }))
        const whole = yield* list("no list")
        expect(whole).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "body" }] })
        expect(whole.message).not.toContain("no list")
        expect(yield* list(["a", 2])).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "body[1]" }] })
        // From untyped code: a schema that is none.
        const notSchema = yield* Effect.flip(HttpTransport.request({
          method: "POST",
          path: "/v1/payouts",
          body: {},
          bodySchema: { encode: true } as unknown as Schema.Schema<object>,
          response: Schema.Unknown
        }))
        expect(notSchema).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "bodySchema", expected: "a Schema" }] })
        // Nor a response schema (a defect before).
        for (const response of [undefined, { decode: true }]) {
          const noResponse = yield* Effect.flip(HttpTransport.request({
            method: "GET",
            path: "/v1/payouts",
            response: response as unknown as Schema.Schema<unknown>
          }))
          expect(noResponse).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "response", expected: "a Schema" }] })
        }
        // A GET has no body, whatever a schema would make of none (a compile error; untyped code gets this).
        for (const extra of [{ bodySchema: Payout }, { body: { amount: 1 } }]) {
          const spec = { method: "GET", path: "/v1/payouts", response: Schema.Unknown, ...extra }
          const get = yield* Effect.flip(HttpTransport.request(spec as unknown as HttpTransport.RequestSpec<unknown, unknown>))
          expect(get).toMatchObject({ _tag: "RequestValidationError", message: "A GET request has no body: expected no body (put the values in query)" })
        }
        expect(yield* sent).toEqual([])
      }).pipe(provideClient({ "POST /v1/payouts": () => FinTest.json(200, {}) })))

    it("its type is checked against the schema's at compile time", () => {
      const typed = (body: { readonly amount: string }) =>
        // @ts-expect-error the schema's type has a number, the encoded form's text is not it
        HttpTransport.request({ method: "POST", path: "/v1/payouts", body, bodySchema: Payout, response: Schema.Unknown })
      // Without a schema, any body type-checks (and is checked when sent).
      const untyped = HttpTransport.request({ method: "POST", path: "/v1/x", body: { any: 1 }, response: Schema.Unknown })
      // An optional body passed on as it is, `undefined` included (under exactOptionalPropertyTypes too).
      const optional = (body: { readonly any: number } | undefined) =>
        HttpTransport.request({ method: "POST", path: "/v1/x", body, response: Schema.Unknown })
      // With a schema too: without it, `B` is `unknown`, which holds `undefined` anyway.
      const optionalTyped = (body: typeof Payout.Type | undefined) =>
        HttpTransport.request({ method: "POST", path: "/v1/x", body, bodySchema: Payout, response: Schema.Unknown })
      // A GET has none.
      const get = () => [
        // @ts-expect-error a GET has no body
        HttpTransport.request({ method: "GET", path: "/v1/x", body: { any: 1 }, response: Schema.Unknown }),
        // @ts-expect-error nor a schema of one
        HttpTransport.request({ method: "GET", path: "/v1/x", bodySchema: Payout, response: Schema.Unknown })
      ]
      // The spec stays one object type: helpers that take part of it (`Omit`) or extend it compile.
      const withResponse = (spec: Omit<HttpTransport.RequestSpec<unknown, unknown>, "response">) =>
        HttpTransport.request({ ...spec, response: Schema.Unknown })
      interface Tagged extends HttpTransport.RequestSpec<unknown, unknown> {
        readonly tag: string
      }
      const tagged = (spec: Tagged) => HttpTransport.request(spec)
      expect([typeof typed, Effect.isEffect(untyped), typeof get, typeof withResponse, typeof tagged, typeof optional])
        .toEqual(["function", true, "function", "function", "function", "function"])
      expect(typeof optionalTyped).toBe("function")
    })
  })

  it.effect("a query value left undefined (an optional parameter) is not sent", () =>
    Effect.gen(function*() {
      yield* HttpTransport.request({
        method: "GET",
        path: "/v1/items",
        query: { page: "2", cursor: undefined },
        response: Schema.Unknown
      })
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.filter((r) => r.path === "/v1/items").map((r) => new URL(r.url).search)).toEqual(["?page=2"])
      // Every value left undefined: no `?` at all.
      yield* HttpTransport.request({
        method: "GET",
        path: "/v1/items",
        query: { page: undefined },
        response: Schema.Unknown
      })
      const last = (yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)).at(-1)
      expect(last?.url.endsWith("/v1/items")).toBe(true)
    }).pipe(provideClient({ "GET /v1/items": () => FinTest.json(200, {}) })))

  it.effect("a query with a lone surrogate (text cut inside an emoji) is refused, not sent as U+FFFD", () =>
    Effect.gen(function*() {
      const cut = "Zo\u00eb \ud83d\ude00".slice(0, 5)
      for (const query of [{ name: cut }, { [cut]: "x" }, { name: "\ude00" }]) {
        const error = yield* Effect.flip(
          HttpTransport.request({ method: "GET", path: "/v1/items", query, response: Schema.Unknown })
        )
        expect(error).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "query" }] })
      }
      yield* HttpTransport.request({
        method: "GET",
        path: "/v1/items",
        query: { name: "Zo\u00eb \ud83d\ude00" },
        response: Schema.Unknown
      })
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.filter((r) => r.path === "/v1/items").map((r) => new URL(r.url).searchParams.get("name")))
        .toEqual(["Zo\u00eb \ud83d\ude00"])
    }).pipe(provideClient({ "GET /v1/items": () => FinTest.json(200, {}) })))

  it.effect("a query that is a URLSearchParams or a Map (untyped code) is refused, not sent without its values", () =>
    Effect.gen(function*() {
      for (const query of [new URLSearchParams({ country_code: "USA" }), new Map([["country_code", "USA"]])]) {
        const error = yield* Effect.flip(
          HttpTransport.request({
            method: "GET",
            path: "/v1/items",
            query: query as unknown as Record<string, string>,
            response: Schema.Unknown
          })
        )
        expect(error).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "query" }] })
      }
      yield* HttpTransport.request({
        method: "GET",
        path: "/v1/items",
        query: Object.assign(Object.create(null), { country_code: "USA" }),
        response: Schema.Unknown
      })
      class ListParams extends Schema.Class<ListParams>("ListParams")({ country_code: Schema.String }) {}
      yield* HttpTransport.request({
        method: "GET",
        path: "/v1/items",
        query: { ...new ListParams({ country_code: "CAN" }) },
        response: Schema.Unknown
      })
      yield* HttpTransport.request({
        method: "GET",
        path: "/v1/items",
        query: new ListParams({ country_code: "MEX" }) as unknown as Record<string, string>,
        response: Schema.Unknown
      })
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.filter((r) => r.path === "/v1/items").map((r) => new URL(r.url).search)).toEqual([
        "?country_code=USA",
        "?country_code=CAN",
        "?country_code=MEX"
      ])
    }).pipe(provideClient({ "GET /v1/items": () => FinTest.json(200, {}) })))

  // From untyped code: a misspelt key (`qurey`) or one a spec does not have (`headers`) would be dropped without a
  // word, a GET sent without its filters; no spec at all (an unset value) would be a TypeError.
  it.effect("a spec with a key it does not have, or no spec object (untyped code), is refused, nothing sent", () =>
    Effect.gen(function*() {
      const specs: ReadonlyArray<[unknown, string]> = [
        [{ method: "GET", path: "/v1/items", qurey: { country_code: "USA" }, response: Schema.Unknown }, "qurey"],
        [{ method: "GET", path: "/v1/items", headers: { "x-a": "1" }, response: Schema.Unknown }, "headers"],
        [null, ""],
        [undefined, ""],
        ["GET /v1/items", ""]
      ]
      for (const [spec, path] of specs) {
        const error = yield* Effect.flip(HttpTransport.request(spec as HttpTransport.RequestSpec<unknown, unknown>))
        expect(error).toMatchObject({ _tag: "RequestValidationError", issues: [{ path }] })
      }
      const misspelt = yield* Effect.flip(
        HttpTransport.request(specs[0]![0] as HttpTransport.RequestSpec<unknown, unknown>)
      )
      expect(misspelt.message).toBe(
        "Unknown request option qurey: expected one of " +
          "method, path, query, body, bodySchema, response, safe, name, check"
      )
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.filter((r) => r.path === "/v1/items")).toEqual([])
    }).pipe(provideClient({ "GET /v1/items": () => FinTest.json(200, {}) })))

  // An interface has no index signature (TS2322 as it is); spread, it is an object type that has one.
  it.effect("a query typed by an interface of text fields is taken spread, field by field checked", () =>
    Effect.gen(function*() {
      interface ListQuery {
        readonly country_code: string
        readonly per_page?: string | undefined
      }
      const query: ListQuery = { country_code: "USA" }
      yield* HttpTransport.request({ method: "GET", path: "/v1/items", query: { ...query }, response: Schema.Unknown })
      interface NotText {
        readonly page: number
      }
      const wrong: NotText = { page: 2 }
      const refused = HttpTransport.request({
        method: "GET",
        path: "/v1/items",
        // @ts-expect-error a query value is text
        query: { ...wrong },
        response: Schema.Unknown
      })
      expect((yield* Effect.flip(refused))._tag).toBe("RequestValidationError")
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.filter((r) => r.path === "/v1/items").map((r) => new URL(r.url).search)).toEqual([
        "?country_code=USA"
      ])
    }).pipe(provideClient({ "GET /v1/items": () => FinTest.json(200, {}) })))

  it.effect("a path that could escape is refused before sending", () =>
    Effect.gen(function*() {
      for (const path of ["/v1/../admin", "v1/x", "/v1/a?b=c", "/v1//x", "/v1/%2e%2e"]) {
        const error = yield* Effect.flip(HttpTransport.request({ method: "GET", path, response: Schema.Unknown }))
        expect(error._tag).toBe("RequestValidationError")
      }
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests).toHaveLength(0)
    }).pipe(provideClient({})))

  it.effect("sends User-Agent, JSON headers and no trace headers by default", () =>
    Effect.gen(function*() {
      yield* calculate
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      const call = requests.find((r) => r.path === "/v1/fee-calculation")!
      expect(call.headers["user-agent"]).toBe("effect-fin/0.1.0 my-app/2")
      expect(call.headers["content-type"]).toBe("application/json")
      expect(call.headers.accept).toBe("application/json")
      expect(call.headers.traceparent).toBeUndefined()
      expect(call.headers.b3).toBeUndefined()
      expect(call.body).toEqual(quoteRequest)
    }).pipe(provideClient({ [FEE]: () => ok }, { userAgent: "my-app/2" })))

  // The platform's own http.client span is off (its end holds the request: the bearer token, the client secret), so
  // the trace headers are those of effect-fin's span of the call, or of the token call.
  it.effect("sends traceparent and b3 with tracePropagation on: effect-fin's spans', the platform's own span off", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      yield* Effect.provide(calculate, tracing)
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      const recorded = yield* spans
      expect(recorded.map((span) => span.name).filter((name) => !name.startsWith("effect-fin."))).toEqual([])
      for (const [path, name] of [["/v1/fee-calculation", "effect-fin.fee-calculation"], ["/v1/oauth/token", "effect-fin.token"]]) {
        const span = recorded.find((s) => s.name === name)!
        const headers = requests.find((r) => r.path === path)?.headers
        expect(headers?.traceparent, path).toBe(`00-${span.traceId}-${span.spanId}-01`)
        // b3 too, as the README and the option's table promise (single header: trace-span-sampled[-parent]).
        expect(headers?.b3?.split("-").slice(0, 3).join("-"), path).toBe(`${span.traceId}-${span.spanId}-1`)
      }
    }).pipe(provideClient({ [FEE]: () => ok }, { tracePropagation: true })))

  // A client the user set up their own way (its span off for health checks, say) must not switch the platform's span,
  // or its trace headers, back on for effect-fin's calls: effect-fin's setting decides.
  for (const tracePropagation of [false, true]) {
    it.effect(`a client with its own tracer settings: no platform span, trace headers only as tracePropagation (${tracePropagation}) says`, () =>
      Effect.gen(function*() {
        const { layer: tracing, spans } = yield* recordingTracer
        yield* Effect.provide(calculate, tracing)
        const recorded = yield* spans
        expect(recorded.map((span) => span.name).filter((name) => !name.startsWith("effect-fin."))).toEqual([])
        const fee = recorded.find((span) => span.name === "effect-fin.fee-calculation")!
        const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
        expect(requests.find((r) => r.path === "/v1/fee-calculation")?.headers.traceparent).toBe(
          tracePropagation ? `00-${fee.traceId}-${fee.spanId}-01` : undefined
        )
      }).pipe(Effect.provide(
        FinClient.layer({ clientId: "id", clientSecret: "secret", baseUrl: "http://127.0.0.1:4010", tracePropagation }).pipe(
          Layer.provideMerge(Layer.effect(
            HttpClient.HttpClient,
            Effect.map(HttpClient.HttpClient, (client) =>
              HttpClient.withTracerPropagation(HttpClient.withTracerDisabledWhen(client, (r) => r.url.endsWith("/health")), true))
          ).pipe(Layer.provideMerge(FinTest.layerHttpClient({ "POST /v1/oauth/token": FinTest.tokenHandler(), [FEE]: () => ok }))))
        )
      )))
  }

  // A client of the user's that turns its failures into defects (`Effect.orDie`): the call still ends in a typed error,
  // and no span's end holds the request (the token call's body has the client secret).
  const printed: Array<string> = []
  it.effect("a client whose failures are defects: a TransportError all the same, no request in any span's end", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const error = yield* Effect.flip(Effect.provide(calculate, tracing))
      expect(error).toMatchObject({ _tag: "TransportError", code: "ECONNREFUSED", operation: "POST /v1/oauth/token" })
      const exits = (yield* spans).map((span) => span.status._tag === "Ended" ? Inspectable.format(span.status.exit) : "")
      expect(exits.join("\n")).not.toContain("client_secret")
      // Nor where a hook of the user's client prints the request: the token call's body is printed as its length.
      expect(printed.join("\n")).toContain("Uint8Array(")
      expect(printed.join("\n")).not.toContain("client_secret")
    }).pipe(Effect.provide(
      FinClient.layer({ clientId: "id", clientSecret: "secret", baseUrl: "http://127.0.0.1:4010", maxRetries: 0 }).pipe(
        Layer.provideMerge(Layer.effect(
          HttpClient.HttpClient,
          Effect.map(HttpClient.HttpClient, (client) =>
            HttpClient.transformResponse(client, Effect.orDie).pipe(
              HttpClient.tapRequest((request) => Effect.sync(() => printed.push(Inspectable.format(request))))
            ))
        ).pipe(Layer.provideMerge(FinTest.layerHttpClient({ "POST /v1/oauth/token": () => FinTest.fail() }))))
      )
    )))

  // A client of the user's that fails on a status (`HttpClient.filterStatusOk`): the answer is still the service's,
  // typed by its status (not a TransportError, which would be retried and never refresh the token).
  it.effect("a client that fails on a status (filterStatusOk): the answer's own typed error", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "ApiError", status: 422, operation: "POST /v1/fee-calculation" })
      const http = yield* FinTest.InMemoryHttp
      expect(yield* http.count(FEE)).toBe(1)
    }).pipe(Effect.provide(
      FinClient.layer({ clientId: "id", clientSecret: "secret", baseUrl: "http://127.0.0.1:4010" }).pipe(
        Layer.provideMerge(Layer.effect(
          HttpClient.HttpClient,
          Effect.map(HttpClient.HttpClient, HttpClient.filterStatusOk)
        ).pipe(Layer.provideMerge(FinTest.layerHttpClient({
          "POST /v1/oauth/token": FinTest.tokenHandler(),
          [FEE]: () => FinTest.json(422, { message: "Validation failed" })
        }))))
      )
    )))

  // A client of the user's that sends requests elsewhere itself (`HttpClient.mapRequest` to a sidecar or a gateway's
  // prefix) is answered from where it sent them: its answers (a 422 through filterStatusOk too) are taken.
  it.effect("a client that routes requests elsewhere itself (HttpClient.mapRequest) has its answers taken", () =>
    Effect.gen(function*() {
      expect(yield* calculate).toMatchObject({ source_currency: "USD" })
      const error = yield* Effect.flip(calculate)
      expect(error).toMatchObject({ _tag: "ApiError", status: 422 })
    }).pipe(Effect.provide(
      FinClient.layer({ clientId: "id", clientSecret: "secret", baseUrl: "http://127.0.0.1:4010" }).pipe(
        Layer.provideMerge(Layer.effect(
          HttpClient.HttpClient,
          Effect.map(HttpClient.HttpClient, (client) =>
            client.pipe(
              HttpClient.mapRequest((request) =>
                HttpClientRequest.setUrl(request, request.url.replace("4010/", "4010/egress/"))
              ),
              HttpClient.filterStatusOk
            ))
        ).pipe(Layer.provideMerge(FinTest.layerHttpClient({
          "POST /egress/v1/oauth/token": FinTest.tokenHandler(),
          "POST /egress/v1/fee-calculation": FinTest.sequence(ok, FinTest.json(422, { message: "Validation failed" }))
        }))))
      )
    )))

  // The platform sent none then either; a noop span's headers ("00-noop-noop-00") are no trace context.
  // Nor the context of a span of the user's around it: this call does not run in that span.
  it.effect("sends no trace headers when the tracer is off, even with tracePropagation and a span around it", () =>
    Effect.gen(function*() {
      yield* calculate.pipe(Effect.withTracerEnabled(false))
      yield* calculate.pipe(Effect.withTracerEnabled(false), Effect.withSpan("user-outer"))
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.map((r) => [r.path, r.headers.traceparent, r.headers.b3])).toEqual([
        ["/v1/oauth/token", undefined, undefined],
        ["/v1/fee-calculation", undefined, undefined],
        ["/v1/fee-calculation", undefined, undefined]
      ])
    }).pipe(provideClient({ [FEE]: () => ok }, { tracePropagation: true })))

  // The platform reads an inbound request's b3 and x-b3-* as they are: a parent span's ids may be any text its caller
  // sent. Only trace ids are sent on (a 64-bit b3 trace id padded for traceparent); else no trace headers at all.
  it.effect("tracePropagation under a parent from inbound headers: only well-formed ids go on", () =>
    Effect.gen(function*() {
      const { layer: tracing } = yield* recordingTracer
      const under = (headers: Record<string, string>) => {
        const parent = Option.getOrThrow(HttpTraceContext.fromHeaders(Headers.fromInput(headers)))
        return Effect.provide(calculate.pipe(Effect.withParentSpan(parent)), tracing)
      }
      yield* under({ "x-b3-traceid": "evil, 00-4bf92f3577b34da6a3ce929d0e0e4736", "x-b3-spanid": "00f067aa0ba902b7" })
      yield* under({ b3: `${"a".repeat(8_000)}-00f067aa0ba902b7` })
      yield* under({ "x-b3-traceid": "a3ce929d0e0e4736", "x-b3-spanid": "x, y" })
      // An all-zero trace id is none (W3C); upper-case hex goes on as traceparent spells it (lower case).
      yield* under({ b3: "00000000000000000000000000000000-00f067aa0ba902b7-1" })
      // A tracer that samples as the parent did (OpenTelemetry's default): not sampled is sent so, and b3 names the
      // parent span.
      const native = yield* Effect.tracer
      const parentBased = Tracer.make({
        span: (name, parent, context, links, startTime, kind, options) =>
          Object.defineProperty(native.span(name, parent, context, links, startTime, kind, options), "sampled", {
            value: Option.match(parent, { onNone: () => true, onSome: (p) => p.sampled })
          }),
        context: (f) => f()
      })
      const notSampled = HttpTraceContext.fromHeaders(Headers.fromInput({
        b3: "4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-0"
      }))
      yield* Effect.withTracer(calculate.pipe(Effect.withParentSpan(Option.getOrThrow(notSampled))), parentBased)
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      const sent = requests.filter((r) => r.path === "/v1/fee-calculation")
        .map((r) => [r.headers.traceparent, r.headers.b3])
      expect(sent.slice(0, 2)).toEqual([[undefined, undefined], [undefined, undefined]])
      expect(sent[2]![0]).toMatch(/^00-0{16}a3ce929d0e0e4736-[0-9a-f]{16}-01$/)
      expect(sent[2]![1]).toMatch(/^a3ce929d0e0e4736-[0-9a-f]{16}-1$/)
      expect(sent[3]).toEqual([undefined, undefined])
      expect(sent[4]![0]).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-00$/)
      expect(sent[4]![1]).toMatch(/^4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-0-00f067aa0ba902b7$/)
    }).pipe(provideClient({ [FEE]: () => ok }, { tracePropagation: true })))

  it.effect("a refused spec's path is not traced, a body schema that throws is a counted defect, effect-fin's own names are refused", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const Stamped = Schema.Struct({
        at: Schema.transform(Schema.String, Schema.DateFromSelf, {
          strict: true,
          decode: (s) => new Date(s),
          encode: (d) => d.toISOString()
        })
      })
      const [refused, thrown, named] = yield* Effect.all([
        Effect.flip(HttpTransport.request({
          method: "GET",
          path: "/v1/customers/jane.doe@example.com?card=4111111111111111",
          response: Schema.Unknown,
          name: "lookup"
        })),
        // An invalid Date's toISOString throws inside the schema's encode.
        Effect.exit(HttpTransport.request({
          method: "POST",
          path: "/v1/events",
          body: { at: new Date(Number.NaN) },
          bodySchema: Stamped,
          response: Schema.Unknown,
          name: "events"
        })),
        Effect.flip(HttpTransport.request({ method: "GET", path: "/v1/cards/token", response: Schema.Unknown, name: "token" }))
      ]).pipe(Effect.provide(tracing))
      expect(refused).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "path" }] })
      expect(attributesOf(yield* spans, "effect-fin.lookup")).toEqual([{
        "http.request.method": "GET",
        "effect_fin.attempts": 0,
        "effect_fin.outcome": "RequestValidationError"
      }])
      expect(Exit.isFailure(thrown) && Cause.isDie(thrown.cause)).toBe(true)
      expect(attributesOf(yield* spans, "effect-fin.events")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/events",
        "effect_fin.attempts": 0,
        "effect_fin.outcome": "defect"
      }])
      expect(yield* outcomesOf("events")).toEqual([["defect", 1]])
      // Traced and counted as `request`, never as the token call.
      expect(named).toMatchObject({ _tag: "RequestValidationError", issues: [{ path: "name" }] })
      expect(attributesOf(yield* spans, "effect-fin.token")).toEqual([])
      expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)).toEqual([])
    }).pipe(provideClient({})))

  it.effect("a spec changed after the call was made sends and traces what was checked, run once or again", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const transport = yield* HttpTransport.HttpTransport
      const spec = { method: "GET" as const, path: "/v1/ok", response: Schema.Unknown, name: "lookup" }
      const call = transport.request(spec)
      spec.path = "/v1/../admin"
      yield* Effect.provide(Effect.zipRight(call, call), tracing)
      const sent = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(sent.filter((r) => r.method === "GET").map((r) => r.path)).toEqual(["/v1/ok", "/v1/ok"])
      expect(attributesOf(yield* spans, "effect-fin.lookup").map((a) => a["url.path"])).toEqual(["/v1/ok", "/v1/ok"])
    }).pipe(provideClient({ "GET /v1/ok": () => FinTest.json(200, {}) })))

  it.effect("a spec that cannot be read (a getter that throws) is a defect of the effect, not an exception where it is made", () =>
    Effect.gen(function*() {
      const transport = yield* HttpTransport.HttpTransport
      const spec = {
        get method(): "GET" {
          throw new Error("unreadable")
        },
        path: "/v1/ok",
        response: Schema.Unknown
      }
      const exit = yield* Effect.exit(transport.request(spec))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause) && Cause.squash(exit.cause)).toEqual(new Error("unreadable"))
    }).pipe(provideClient({ "GET /v1/ok": () => FinTest.json(200, {}) })))

  it.effect("keeps the request id the service sent", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "ApiError" && error.requestId).toBe("req-123")
    }).pipe(provideClient({ [FEE]: () => status(404, { "x-request-id": "req-123" }) })))

  // README, Errors: `requestId` from `x-request-id`, `request-id` or `x-correlation-id` (the first of them sent, in
  // that order), at most 128 printable characters (what a user gives the service's support about a disputed payment).
  for (
    const [headers, kept] of [
      [{ "request-id": "req-2" }, "req-2"],
      [{ "x-correlation-id": "req-3", "request-id": "req-2", "x-request-id": "req-1" }, "req-1"],
      [{ "x-correlation-id": "req-3", "request-id": "req-2" }, "req-2"],
      [{ "x-correlation-id": "req-3" }, "req-3"],
      [{ "x-request-id": "r".repeat(128) }, "r".repeat(128)],
      [{ "x-request-id": "r".repeat(129) }, undefined],
      [{ "x-request-id": "req 1" }, undefined]
    ] as const
  ) {
    const shown = Object.entries(headers).map(([header, value]: [string, string]) =>
      `${header} as ${value.length > 16 ? `${value.length} characters` : JSON.stringify(value)}`
    ).join(" and ")
    const title = `a request id sent in ${shown}: ${
      kept === undefined ? "not kept" : kept.length > 16 ? "kept" : `${JSON.stringify(kept)} kept`
    }`
    it.effect(title, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" ? error.requestId : "not an ApiError").toBe(kept)
      }).pipe(provideClient({ [FEE]: () => status(404, headers) })))
  }

  it.effect("FinTest: a request no route matches gets the service's 404, is listed in unmatched, and is logged", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const error = yield* Effect.flip(calculate)
      expect(error._tag === "ApiError" && error.status).toBe(404)
      const http = yield* FinTest.InMemoryHttp
      expect((yield* http.unmatched).map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/fee-calculation"])
      expect(logs.lines.filter((line) => line.includes("no route matches POST /v1/fee-calculation"))).toHaveLength(1)
      expect(logs.lines.join("\n")).toContain("POST /v1/fee-calculations")
      yield* http.clear
      expect(yield* http.unmatched).toEqual([])
    }).pipe(
      // A misspelt route: the program would see a real-looking 404.
      provideClient({ "POST /v1/fee-calculations": () => ok }),
      Effect.provide(logs.layer)
    )
  })

  // A response schema with a record: the answer's own keys are in the issues' paths.
  const recordKeysRefused = Effect.flip(HttpTransport.request({
    method: "GET",
    path: "/v1/thing",
    response: Schema.Struct({ data: Schema.Record({ key: Schema.String, value: Schema.Number }) })
  })).pipe(Effect.map((error) => ({
    error,
    paths: error._tag === "ResponseDecodeError" ? error.issues.map((issue) => issue.path) : []
  })))

  // JSON.parse makes `__proto__` an own key; `Schema.Record` builds its object by assignment, which would make the
  // key's value the decoded object's prototype: a field read through it, in no `Object.keys` (escaped too).
  it.effect("an answer's __proto__ key is dropped, never the prototype of a decoded Schema.Record", () =>
    Effect.gen(function*() {
      for (const key of ["__proto__", "\\u005f_proto__"]) {
        const { data } = yield* HttpTransport.request({
          method: "GET",
          path: "/v1/thing",
          response: Schema.Struct({ data: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
        }).pipe(provideClient({
          "GET /v1/thing": () => FinTest.text(200, `{"data":{"USD":1,"${key}":{"EUR":5}}}`)
        }))
        expect(Object.getPrototypeOf(data)).toBe(Object.prototype)
        expect(data["EUR"]).toBeUndefined()
        expect(data).toEqual({ USD: 1 })
      }
    }))

  it.effect("a ResponseDecodeError naming the answer's own keys keeps its message on one line, without a credential", () =>
    Effect.gen(function*() {
      const { error, paths } = yield* recordKeysRefused
      expect(error._tag).toBe("ResponseDecodeError")
      expect(error.message).not.toMatch(/[\r\n\u2028]/)
      expect(error.message).not.toContain("test-secret")
      expect(paths.join(" ")).not.toMatch(/[\r\n\u2028]|test-secret/)
      expect(paths).toContain("data.a\\u000ab")
    }).pipe(provideClient({
      "GET /v1/thing": () => FinTest.json(200, { data: { "a\nb": "x", "c\u2028d": "x", "key test-secret": "x" } })
    })))

  it.effect("a ResponseDecodeError's path too long to keep is cut with ..., never into another key's", () =>
    Effect.map(recordKeysRefused, ({ paths }) => expect(paths).toEqual([`data.${"k".repeat(1019)}...`])).pipe(
      provideClient({ "GET /v1/thing": () => FinTest.json(200, { data: { ["k".repeat(1500)]: "x" } }) })
    ))

  it.effect("a ResponseDecodeError's path keeps no secret with a tab or DEL inside, as a path writes it", () =>
    Effect.map(recordKeysRefused, ({ error, paths }) => {
      expect(paths).toEqual(["data.<redacted>"])
      expect(error.message).not.toContain("half")
    }).pipe(provideClient({
      "GET /v1/thing": () => FinTest.json(200, { data: { "tab\thalf\u007fof-it": "x" } })
    }, { clientSecret: Redacted.make("tab\thalf\u007fof-it") })))

  // `error` as its constructor makes it from its own fields: the same keys in the same order, JSON, inspection (but
  // the stack) and encoding; and equality, for errors with no list (Effect compares arrays by reference).
  const asMade = (error: FinError) => {
    const Made = error.constructor as new(fields: object) => FinError
    const made = new Made({ ...error, message: error.message })
    expect(Object.keys(error)).toEqual(Object.keys(made))
    expect(JSON.stringify(error)).toBe(JSON.stringify(made))
    const shown = (u: unknown) => inspect(u).replace(/^\s+at .*\n/gm, "")
    expect(shown(error)).toBe(shown(made))
    expect(Inspectable.toStringUnknown(error)).toBe(Inspectable.toStringUnknown(made))
    expect(JSON.stringify(Schema.encodeSync(FinError)(error))).toBe(JSON.stringify(Schema.encodeSync(FinError)(made)))
    if (!("fieldErrors" in error || "issues" in error)) expect(Equal.equals(error, made)).toBe(true)
  }

  // The errors of a failed attempt are built without their constructor validating them again: each as its
  // constructor would build it (the same keys, in the schema's order, so the same JSON and inspection).
  it.effect("a failed attempt's errors are as their constructor makes them, every optional field given", () => {
    const head = { "retry-after": "5", "x-request-id": "req-1" }
    return Effect.forEach([
      FinTest.fail("ECONNRESET"),
      FinTest.failBody("ECONNRESET", 503, head),
      FinTest.json(503, { error: { code: "down", message: "Down" }, extra: 1 }, head),
      FinTest.json(429, { status: 7, message: "Slow", errors: [{ f: "m" }] }, head),
      FinTest.json(401, { message: "No" }, head)
    ], (reply) =>
      Effect.map(Effect.flip(calculate), asMade).pipe(
        provideClient({ [FEE]: () => reply }, { maxRetries: 0, maxRetryAfter: "10 seconds" })
      ), { discard: true })
  })

  // Every combination of a TransportError's optional fields (its code, its answer's status, Retry-After, request id).
  it.effect.prop("a failed attempt's TransportError is as its constructor makes it, whichever fields it has", {
    body: FastCheck.boolean(),
    code: FastCheck.constantFrom("ECONNRESET", "UND_ERR_SOCKET", "no code"),
    status: FastCheck.constantFrom(200, 429, 503),
    retryAfter: FastCheck.option(FastCheck.constantFrom("0", "5", "Wed, 21 Oct 2015 07:28:00 GMT")),
    requestId: FastCheck.option(FastCheck.constant("req-1"))
  }, ({ body, code, requestId, retryAfter, status }) => {
    const head = {
      ...(retryAfter === null ? {} : { "retry-after": retryAfter }),
      ...(requestId === null ? {} : { "x-request-id": requestId })
    }
    const reply = body ? FinTest.failBody(code, status, head) : FinTest.fail(code)
    return Effect.map(Effect.flip(calculate), (error) => {
      expect(error._tag).toBe("TransportError")
      asMade(error)
    }).pipe(provideClient({ [FEE]: () => reply }, { maxRetries: 0, maxRetryAfter: "10 seconds" }))
  })

  describe("error bodies (every documented shape)", () => {
    it("{message}", () => {
      expect(parseErrorBody(`{"message":"Authentication failed"}`)).toMatchObject({ message: "Authentication failed" })
    })
    it("422 {message, errors[{field: msg}]}", () => {
      const parsed = parseErrorBody(`{"message":"Invalid","errors":[{"source_amount":"must be positive"}]}`)
      expect(parsed.message).toBe("Invalid")
      expect(parsed.fieldErrors).toEqual([{ field: "source_amount", message: "must be positive" }])
    })
    it("400 {errors[object], message: 'Validation failed!'} with array messages", () => {
      const parsed = parseErrorBody(`{"errors":[{"name":["is required","too short"]}],"message":"Validation failed!"}`)
      expect(parsed.fieldErrors).toEqual([
        { field: "name", message: "is required" },
        { field: "name", message: "too short" }
      ])
    })
    it("409 {message, error: {beneficiary_id}}", () => {
      const parsed = parseErrorBody(
        `{"message":"A beneficiary with the same account details already exists.","error":{"beneficiary_id":"b1"}}`
      )
      expect(parsed.message).toBe("A beneficiary with the same account details already exists.")
      expect(parsed.code).toBeUndefined()
    })
    it("400 {status, message, data: {path: msg}} with a numeric code", () => {
      const parsed = parseErrorBody(
        `{"status":400,"message":"Validation failed","data":{"basic_info.email":"Must be a valid email address"}}`
      )
      expect(parsed.code).toBe(400)
      expect(parsed.fieldErrors).toEqual([{ field: "basic_info.email", message: "Must be a valid email address" }])
    })
    it("a numeric code JSON cannot write back (1e999 is Infinity) is no code: the body is kept", () => {
      const texts = [`{"status":1e999,"message":"Bad request"}`, `{"message":"Conflict","error":{"code":-1e999}}`]
      for (const text of texts) {
        const parsed = parseErrorBody(text)
        expect(parsed.code, text).toBeUndefined()
        expect(parsed.understood, text).toBe(false)
      }
    })
    it("423/500 {status, message}", () => {
      expect(parseErrorBody(`{"status":423,"message":"RELIANCE is not available for your client"}`)).toMatchObject({
        code: 423,
        message: "RELIANCE is not available for your client"
      })
    })
    it("403/409 {error: {code, message}} with a string code", () => {
      expect(parseErrorBody(`{"error":{"code":"forbidden","message":"Customer is not eligible for this operation"}}`))
        .toMatchObject({ code: "forbidden", message: "Customer is not eligible for this operation" })
    })
    // Not the service's own shape, but what a gateway or token server in front of it (OAuth 2.0) answers.
    it("an OAuth error {error, error_description}: its code and message, the body kept when they disagree", () => {
      expect(parseErrorBody(`{"error":"invalid_client","error_description":"Client authentication failed"}`))
        .toEqual({
          message: "Client authentication failed",
          code: "invalid_client",
          fieldErrors: undefined,
          understood: true
        })
      expect(parseErrorBody(`{"error":"invalid_request"}`))
        .toMatchObject({ code: "invalid_request", understood: false })
      expect(parseErrorBody(`{"message":"Refused","error_description":"Client authentication failed"}`))
        .toMatchObject({ message: "Refused", understood: false })
      expect(parseErrorBody(`{"message":"Refused","error_description":"Refused"}`))
        .toMatchObject({ message: "Refused", understood: true })
      // A numeric status stays the code (Spring's `{status, error, message}`), its `error` words kept in the body.
      expect(parseErrorBody(`{"status":429,"error":"Too Many Requests","message":"Slow down"}`))
        .toMatchObject({ code: 429, message: "Slow down", understood: false })
    })
    it("a field of an unexpected type costs only itself: a status as text, errors as one object", () => {
      expect(parseErrorBody(`{"status":"400","message":"Validation failed","errors":{"source_amount":"too big"}}`))
        .toEqual({
          message: "Validation failed",
          code: undefined,
          fieldErrors: [{ field: "source_amount", message: "too big" }],
          // The status as text is in no field: the body is kept for it.
          understood: false
        })
      expect(parseErrorBody(`["not", "an", "object"]`).understood).toBe(false)
    })
    it("422 {error: {code, type, message, details: [{field, message}]}} (crypto orchestration)", () => {
      const parsed = parseErrorBody(
        `{"error":{"code":422,"type":"FIN_ERROR","message":"One or more fields are invalid",` +
          `"details":[{"field":"amount","message":"must be positive"},{"field":"asset","message":"unknown"}]}}`
      )
      expect(parsed).toMatchObject({ code: 422, message: "One or more fields are invalid" })
      expect(parsed.fieldErrors).toEqual([
        { field: "amount", message: "must be positive" },
        { field: "asset", message: "unknown" }
      ])
      // `type` is not one of ApiError's fields: the body is kept for it.
      expect(parsed.understood).toBe(false)
      expect(parseErrorBody(`{"error":{"code":422,"message":"Invalid","details":null}}`).understood).toBe(true)
    })
    it("errors[] items of the form {field, message} are one field error each, not two", () => {
      const parsed = parseErrorBody(`{"message":"Validation failed!","errors":[{"field":"email","message":"is invalid"}]}`)
      expect(parsed.fieldErrors).toEqual([{ field: "email", message: "is invalid" }])
      expect(parsed.understood).toBe(true)
      // A list of messages, or more keys than the two (kept in the body then).
      const listed = parseErrorBody(`{"message":"Invalid","errors":[{"field":"email","message":["is invalid","too long"]}]}`)
      expect(listed.fieldErrors).toEqual([
        { field: "email", message: "is invalid" },
        { field: "email", message: "too long" }
      ])
      const coded = parseErrorBody(`{"message":"Invalid","errors":[{"field":"email","message":"is invalid","code":"format"}]}`)
      expect([coded.fieldErrors, coded.understood]).toEqual([[{ field: "email", message: "is invalid" }], false])
    })
    it("errors[] items with a message but no field ({code, message}) are no field errors: the body is kept", () => {
      const parsed = parseErrorBody(
        `{"message":"Validation failed!","errors":[{"code":"invalid_amount","message":"Amount exceeds the corridor limit"}]}`
      )
      expect([parsed.message, parsed.fieldErrors, parsed.understood]).toEqual(["Validation failed!", undefined, false])
      // Beside proper field maps, only those count.
      const mixed = parseErrorBody(`{"message":"Invalid","errors":[{"code":"x","message":"y"},{"email":"is invalid"}]}`)
      expect([mixed.fieldErrors, mixed.understood]).toEqual([[{ field: "email", message: "is invalid" }], false])
    })
    it("a blank message is no message: the body is kept", () => {
      for (const body of [`{"message":""}`, `{"message":"  "}`, `{"error":{"message":""}}`]) {
        expect(parseErrorBody(body), body).toMatchObject({ message: undefined, understood: false })
      }
      // A blank top-level message leaves the nested one.
      expect(parseErrorBody(`{"message":"","error":{"message":"Not eligible"}}`).message).toBe("Not eligible")
    })
    it.effect("a blank message gives ApiError the standard one, and the body", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" && [error.message, error.body]).toEqual([
          "The service answered 400 on POST /v1/fee-calculation",
          `{"message":""}`
        ])
      }).pipe(provideClient({ [FEE]: () => FinTest.json(400, { message: "" }) })))
    it.effect("at most 20 field errors are kept, and the body (cut to 1,024 characters) in ApiError.body", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag).toBe("ApiError")
        if (error._tag === "ApiError") {
          expect(error.fieldErrors?.map((f) => f.field)).toEqual(Array.from({ length: 20 }, (_, i) => `f${i}`))
          expect(error.body?.length).toBe(1024)
        }
      }).pipe(provideClient({
        [FEE]: () =>
          FinTest.json(422, {
            message: "Invalid",
            errors: Array.from({ length: 1_000 }, (_, i) => ({ [`f${i}`]: `bad value ${i}` }))
          })
      })))
    it("a body is understood only when ApiError's fields hold all of it", () => {
      expect(parseErrorBody(`{"message":"Authentication failed"}`).understood).toBe(true)
      expect(parseErrorBody(`{"status":400,"message":"Validation failed","data":{"a.b":"bad"}}`).understood).toBe(true)
      expect(parseErrorBody(`{"message":"Invalid","errors":[{"x":["bad"]}]}`).understood).toBe(true)
      expect(parseErrorBody(`{"message":"Conflict","error":{"beneficiary_id":"b1"}}`).understood).toBe(false)
      expect(parseErrorBody(`{"message":"exists","collisions":["w1"]}`).understood).toBe(false)
      expect(parseErrorBody(`{"message":"Invalid","errors":[{"x":{"nested":1}}]}`).understood).toBe(false)
      // So is a `data` entry that is no message: the body keeps it.
      const data = `{"status":400,"message":"Invalid","data":{"a":"bad","b":{"min":1}}}`
      expect(parseErrorBody(data).understood).toBe(false)
      // A nested message other than the top-level one is kept in the body; the same one is not.
      expect(parseErrorBody(`{"message":"a","error":{"message":"b"}}`).understood).toBe(false)
      expect(parseErrorBody(`{"message":"a","error":{"message":"a"}}`).understood).toBe(true)
      // A nested code other than the top-level status: the code is kept, and the body; the same one is understood.
      expect(parseErrorBody(`{"status":422,"error":{"code":"E_LIMIT","message":"over"}}`))
        .toMatchObject({ code: "E_LIMIT", message: "over", understood: false })
      expect(parseErrorBody(`{"status":422,"error":{"code":422,"message":"over"}}`).understood).toBe(true)
      // A `details` item not of the `{field, message}` form: the others are field errors, the body is kept.
      const details = parseErrorBody(
        `{"error":{"message":"bad","details":[{"field":"amount","message":"big"},{"x":1}]}}`
      )
      expect([details.fieldErrors, details.understood]).toEqual([[{ field: "amount", message: "big" }], false])
      expect(parseErrorBody(`{"error":{"message":"bad","details":"not a list"}}`).understood).toBe(false)
      // Up to 20 field errors fit ApiError.fieldErrors.
      const fields = (n: number) =>
        JSON.stringify({ message: "Invalid", errors: Array.from({ length: n }, (_, i) => ({ [`f${i}`]: "bad" })) })
      expect(parseErrorBody(fields(20)).understood).toBe(true)
      expect(parseErrorBody(fields(21)).understood).toBe(false)
      // The same bound in `data`, in `error.details`, and counting a field's messages one by one; 20 kept, in order.
      const bodies = (n: number) => {
        const names = Array.from({ length: n }, (_, i) => `f${i}`)
        return [
          { message: "Invalid", data: Object.fromEntries(names.map((name) => [name, "bad"])) },
          { error: { message: "Invalid", details: names.map((field) => ({ field, message: "bad" })) } },
          { message: "Invalid", errors: [{ f: names }] }
        ].map((body) => parseErrorBody(JSON.stringify(body)))
      }
      expect(bodies(20).map((parsed) => [parsed.understood, parsed.fieldErrors?.length])).toEqual([
        [true, 20],
        [true, 20],
        [true, 20]
      ])
      const first20 = Array.from({ length: 20 }, (_, i) => `f${i}`)
      const kept = (parsed: ReturnType<typeof parseErrorBody>) =>
        parsed.fieldErrors?.map((f) => `${f.field}:${f.message}`)
      expect(bodies(25_000).map((parsed) => [parsed.understood, kept(parsed)])).toEqual([
        [false, first20.map((name) => `${name}:bad`)],
        [false, first20.map((name) => `${name}:bad`)],
        [false, first20.map((name) => `f:${name}`)]
      ])
    })

    it.effect("the service's message is kept whole up to 1,024 characters, cut with ... past that", () =>
      Effect.gen(function*() {
        for (const length of [1024, 1025]) {
          const error = yield* Effect.flip(calculate)
          expect(error.message).toBe(
            `The service answered 400 on POST /v1/fee-calculation: ${"m".repeat(1024)}${length === 1024 ? "" : "..."}`
          )
        }
      }).pipe(provideClient({
        [FEE]: FinTest.sequence(FinTest.json(400, { message: "m".repeat(1024) }), FinTest.json(400, { message: "m".repeat(1025) }))
      })))
    it.effect("in the message: the service's words up to 1,024 characters, a field name up to 64, its message up to 200", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error.message).toBe(
          `The service answered 422 on POST /v1/fee-calculation: ${"x".repeat(500)} (${"f".repeat(64)}...: ${
            "m".repeat(200)
          }...)`
        )
      }).pipe(provideClient({
        [FEE]: () => FinTest.json(422, { message: "x".repeat(500), errors: [{ ["f".repeat(100)]: "m".repeat(300) }] })
      })))
    it.effect("a field error's message is kept up to 1,024 characters, cut with ... past that", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" && error.fieldErrors?.[0]?.message).toBe(`${"a".repeat(1024)}...`)
      }).pipe(provideClient({
        [FEE]: () => FinTest.json(422, { message: "Validation failed", errors: [{ source_amount: "a".repeat(1500) }] })
      })))
    // A log line or `Cause.pretty` shows only the message: it says what to change, on one line; fieldErrors has all.
    it.effect("ApiError's message: status, route, the service's words and each field error on one line", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error.message).toBe(
          "The service answered 422 on POST /v1/fee-calculation: Validation failed, see the docs " +
            `(a: too big; b: not a currency; c: missing; d: ${"x".repeat(200)}...)`
        )
        expect(error._tag === "ApiError" && error.fieldErrors?.map((f) => f.field)).toEqual(["a", "b", "c", "d", ""])
        expect(error._tag === "ApiError" && error.fieldErrors?.[0]?.message).toBe("too\n  big")
        // A service that already says it in these words is not repeated; a 429's message is one line too.
        const restated = yield* Effect.flip(calculate)
        expect(restated.message).toBe("The service answered 400 on POST /v1/fee-calculation: bad")
        const limited = yield* Effect.flip(calculate.pipe(HttpTransport.withOptions({ maxRetries: 0 })))
        expect(limited.message).toBe("Rate limited (429) on POST /v1/fee-calculation: slow down")
      }).pipe(provideClient({
        [FEE]: FinTest.sequence(
          FinTest.json(422, {
            message: "Validation failed,\n  see the docs\n",
            errors: [{ a: "too\n  big" }, { b: "not a currency" }, { c: "missing" }, { d: "x".repeat(300) }, { "": " " }]
          }),
          FinTest.json(400, { message: "The service answered 400 on POST /v1/fee-calculation: bad" }),
          FinTest.json(429, { message: "slow\ndown" })
        )
      })))
    // Said on one line, an echo of a secret with blanks in it, its blanks otherwise, must not become the secret.
    it.effect("an echoed secret with its blanks changed is redacted in the one-line message, not rebuilt", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error.message).toBe(
          "The service answered 422 on POST /v1/fee-calculation: bad <redacted> (x: <redacted>; y: <redacted>)"
        )
        expect(JSON.stringify(error)).not.toContain("abc def ghi jkl")
      }).pipe(provideClient({
        [FEE]: () =>
          FinTest.json(422, {
            message: "bad abc\ndef\nghi\njkl\nmno\npqr",
            errors: [{ x: "abc  def  ghi  jkl  mno  pqr" }, { y: "abc def ghi jkl mno pqr" }]
          })
      }, { clientSecret: Redacted.make("abc def ghi jkl mno pqr") })))
    it.effect("what ApiError's fields cannot hold stays in ApiError.body: a 409's existing beneficiary_id", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" && error.message).toBe(
          "The service answered 409 on POST /v1/fee-calculation: A beneficiary with the same account details already exists."
        )
        expect(error._tag === "ApiError" && error.body).toBe(JSON.stringify(conflict))
      }).pipe(provideClient({ [FEE]: () => FinTest.json(409, conflict) })))
    it.effect("a body ApiError's fields hold whole is not repeated in ApiError.body", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" && error.body).toBeUndefined()
      }).pipe(provideClient({ [FEE]: () => FinTest.json(404, { message: "Resource not found" }) })))
    it.effect("an unknown body is kept (truncated) in ApiError.body; an empty one is no body", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" && error.body).toBe("<html>" + "x".repeat(1018))
        expect(error._tag === "ApiError" && error.message).toContain("400")
        const empty = yield* Effect.flip(calculate)
        expect(empty).toMatchObject({ _tag: "ApiError", status: 400 })
        expect(empty).not.toHaveProperty("body")
      }).pipe(provideClient({
        [FEE]: FinTest.sequence(FinTest.text(400, "<html>" + "x".repeat(5000)), FinTest.text(400, ""))
      })))
    it.effect("a 422 from the service reaches the caller with its field errors", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calculate)
        expect(error._tag === "ApiError" && error.fieldErrors).toEqual([{ field: "source_amount", message: "too big" }])
      }).pipe(provideClient({ [FEE]: () => FinTest.json(422, { message: "Invalid", errors: [{ source_amount: "too big" }] }) })))
  })

  it.effect("backoff: 500 ms doubling, jittered x0.8-1.2; at the 8 s cap the jitter goes down only (6.4-8 s)", () =>
    Effect.gen(function*() {
      const delays = (random: number) =>
        Effect.map(
          Schedule.run(Schedule.delays(backoff), 0, [1, 2, 3, 4, 5, 6, 7]).pipe(Effect.withRandom(Random.fixed([random]))),
          (out) => Chunk.toReadonlyArray(out).map(Duration.toMillis)
        )
      expect(yield* delays(0)).toEqual([400, 800, 1600, 3200, 6400, 6400, 6400])
      expect(yield* delays(0.5)).toEqual([500, 1000, 2000, 4000, 7200, 7200, 7200])
      const high = yield* delays(0.999)
      expect(high.slice(0, 4).map(Math.round)).toEqual([600, 1200, 2399, 4798])
      for (const late of high.slice(4)) expect(late).toBeCloseTo(7998, 0)
    }))

  describe("check", () => {
    const Thing = Schema.Struct({ data: Schema.Struct({ id: Schema.String }) })
    const thing = (check: (value: typeof Thing.Type) => unknown) =>
      HttpTransport.request({
        method: "GET",
        path: "/v1/things",
        response: Thing,
        safe: true,
        name: "thing",
        check: check as (value: typeof Thing.Type) => ReadonlyArray<{ path: string; expected: string }>
      })
    const answering = provideClient({ "GET /v1/things": () => FinTest.json(200, { data: { id: "x" } }) })

    it.effect("issues as plain objects (or Issues) make the answer a ResponseDecodeError, not retried", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(thing((v) => v.data.id === "y" ? [] : [{ path: "data.id", expected: "y" }]))
        expect(error).toMatchObject({ _tag: "ResponseDecodeError", status: 200, attempts: 1 })
        expect(error.message).toBe("Unexpected response from GET /v1/things: data.id: expected y")
        expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("GET /v1/things"))).toBe(1)
        expect((yield* thing(() => [])).data.id).toBe("x")
        // Kept as a schema's are: the first 20, the message saying how many more there were.
        const many = yield* Effect.flip(thing(() => Array.from({ length: 5000 }, (_, i) => ({ path: `data.${i}`, expected: "x" }))))
        expect(many._tag === "ResponseDecodeError" && many.issues.map((i) => i.path)).toEqual(
          Array.from({ length: 20 }, (_, i) => `data.${i}`)
        )
        expect(many.message).toMatch(/; data\.19: expected x; and 4980 more$/)
      }).pipe(answering))

    // A check is given the decoded value alone, as documented: one with an optional parameter of its own gets none.
    it.effect("a check is given the value alone", () =>
      Effect.gen(function*() {
        const given: Array<ReadonlyArray<unknown>> = []
        yield* thing((...args: ReadonlyArray<unknown>) => (given.push(args), []))
        expect(given).toEqual([[{ data: { id: "x" } }]])
      }).pipe(answering))

    it.effect("a check that returns no list of issues, or throws, is a defect naming the mistake", () =>
      Effect.gen(function*() {
        for (const returned of [true, false, null, undefined, "x", [{ path: "data.id" }], [{ path: 1, expected: "y" }]]) {
          const exit = yield* Effect.exit(thing(() => returned))
          expect(Exit.isFailure(exit) && Cause.isDie(exit.cause), String(returned)).toBe(true)
          if (Exit.isFailure(exit)) {
            expect(Cause.pretty(exit.cause)).toContain(
              "effect-fin: a request's check must return a list of issues, each { path, expected } as text"
            )
          }
        }
        const thrown = yield* Effect.exit(thing(() => {
          throw new Error("boom")
        }))
        expect(Exit.isFailure(thrown) && Cause.isDie(thrown.cause)).toBe(true)
      }).pipe(answering))

    // An async step in the program's own schema is its mistake, not the service's answer: a defect saying so (in a
    // field too), not a ResponseDecodeError blaming the answer; a schema refusing the answer still is one.
    it.effect("a response schema with an async step is a defect naming the call, not a ResponseDecodeError", () =>
      Effect.gen(function*() {
        const later = Schema.transformOrFail(Schema.Unknown, Schema.Unknown, {
          decode: (id) => Effect.as(Effect.sleep("1 millis"), id),
          encode: ParseResult.succeed
        })
        // Found through a property, a filter, a transformation, and beside a field the answer lacks.
        const responses: ReadonlyArray<Schema.Schema.AnyNoContext> = [
          later,
          Schema.Struct({ data: Schema.Struct({ id: later }) }),
          Schema.Struct({ data: Schema.Struct({ id: later }) }).pipe(Schema.filter(() => true)),
          Schema.compose(Schema.Struct({ data: later }), Schema.Struct({ data: Schema.Unknown })),
          Schema.Struct({ data: Schema.Struct({ n: Schema.Number, id: later }) })
        ]
        for (const response of responses) {
          const exit = yield* Effect.exit(HttpTransport.request({ method: "GET", path: "/v1/things", response }))
          expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
          if (Exit.isFailure(exit)) {
            expect(Cause.pretty(exit.cause)).toContain(
              "effect-fin: the response schema of GET /v1/things does not decode synchronously"
            )
          }
        }
        const refused = yield* Effect.flip(HttpTransport.request({
          method: "GET",
          path: "/v1/things",
          response: Schema.Struct({ data: Schema.Struct({ id: Schema.Number }) })
        }))
        expect(refused._tag).toBe("ResponseDecodeError")
      }).pipe(answering))
  })

  describe("Retry-After parsing", () => {
    it("seconds, HTTP dates and retry-after-ms", () => {
      const now = Date.UTC(2026, 0, 1, 0, 0, 0)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after": "3" }, now)!)).toBe(3000)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }, now)!)).toBe(5000)
      // Both forms: the precise one when they agree to within a second (the seconds rounded, up or down), else the
      // longer wait (a zero in one cannot cancel the other's).
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "500", "retry-after": "1" }, now)!)).toBe(500)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "9500", "retry-after": "9" }, now)!)).toBe(9500)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "150", "retry-after": "9" }, now)!)).toBe(9000)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "100", "retry-after": "61" }, now)!)).toBe(61000)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "0", "retry-after": "30" }, now)!)).toBe(30000)
      // A whole second apart is no longer "within a second": the longer wait (a zero cannot cancel a 1 s wait).
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "0", "retry-after": "1" }, now)!)).toBe(1000)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "1000", "retry-after": "2" }, now)!)).toBe(2000)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "250", "retry-after": "soon" }, now)!)).toBe(250)
      // Sent twice, one value unreadable: the one that parses counts (the unreadable one does not swallow it).
      for (const value of ["30, garbage", "30, -1", "garbage, 30", "30, Thu, 01 Jan 2026 00:00:05 GMT", "Thursday, 01-Jan-26 00:00:07 GMT, 30"]) {
        expect(Duration.toMillis(parseRetryAfter({ "retry-after": value }, now)!), value).toBe(30_000)
      }
      // Milliseconds are whole ones: less than one is a wait of zero, which keeps the backoff.
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "0.001" }, now)!)).toBe(0)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after-ms": "1.9" }, now)!)).toBe(1)
      expect(parseRetryAfter({ "retry-after": "soon" }, now)).toBeUndefined()
      // The obsolete HTTP-date forms; asctime has no zone and is GMT.
      expect(Duration.toMillis(parseRetryAfter({ "retry-after": "Thursday, 01-Jan-26 00:00:07 GMT" }, now)!)).toBe(7000)
      expect(Duration.toMillis(parseRetryAfter({ "retry-after": "Thu Jan  1 00:00:09 2026" }, now)!)).toBe(9000)
      // Not seconds, not an HTTP date: ignored, so the backoff applies (Date.parse would read these as 2001, a wait of 0).
      for (
        const value of [
          "1.5", "-1", "120.5", "+5", "0x10", "1e3", "2026-01-01", "Thu, 01 Jan 2026 00:00:05", "",
          "Sat, 31 Feb 2026 00:00:05 GMT", "Tue Feb 30 00:00:05 2026"
        ]
      ) {
        expect(parseRetryAfter({ "retry-after": value }, now), value).toBeUndefined()
      }
      expect(parseRetryAfter({ "retry-after-ms": "-5" }, now)).toBeUndefined()
      expect(parseRetryAfter({}, now)).toBeUndefined()
    })

    // A date is the service's time, and either clock may be hours off: counted from the later of this machine's and
    // the answer's `Date`, so that neither alone, slow, reads a 2 s wait as an hour (past the cap: the retries end).
    it("an HTTP date is counted from the later of this machine's clock and the answer's Date", () => {
      const server = Date.UTC(2026, 0, 1, 0, 0, 0)
      const headers = { "retry-after": "Thu, 01 Jan 2026 00:00:02 GMT", date: "Thu, 01 Jan 2026 00:00:00 GMT" }
      // This machine an hour slow, or right.
      for (const skew of [-3_600_000, 0]) {
        expect(Duration.toMillis(parseRetryAfter(headers, server + skew)!), String(skew)).toBe(2000)
      }
      // The answer's Date (a proxy's) a day slow.
      expect(Duration.toMillis(parseRetryAfter({ ...headers, date: "Wed, 31 Dec 2025 00:00:00 GMT" }, server)!)).toBe(2000)
      // This machine an hour fast: the date reads as past, a wait of zero (the backoff applies).
      expect(Duration.toMillis(parseRetryAfter(headers, server + 3_600_000)!)).toBe(0)
      // Without a Date (or an unreadable one), this machine's clock.
      expect(Duration.toMillis(parseRetryAfter({ "retry-after": headers["retry-after"] }, server - 1000)!)).toBe(3000)
      expect(Duration.toMillis(parseRetryAfter({ ...headers, date: "yesterday" }, server - 1000)!)).toBe(3000)
      // A Date sent twice arrives joined: read when the two agree, else this machine's clock.
      const twice = (other: string) => ({ ...headers, date: `${headers.date}, ${other}` })
      expect(Duration.toMillis(parseRetryAfter(twice("Thu, 01 Jan 2026 00:00:01 GMT"), server - 3_600_000)!)).toBe(1000)
      expect(Duration.toMillis(parseRetryAfter(twice("Thu, 01 Jan 2026 02:00:00 GMT"), server - 1000)!)).toBe(3000)
      // "Within a few seconds": five apart still agree (the later one counts), six do not.
      expect(Duration.toMillis(parseRetryAfter(twice("Thu, 01 Jan 2026 00:00:05 GMT"), server - 1000)!)).toBe(0)
      expect(Duration.toMillis(parseRetryAfter(twice("Thu, 01 Jan 2026 00:00:06 GMT"), server - 1000)!)).toBe(3000)
    })

    it("an HTTP date is read field by field: its own year, times in range, each form's own layout", () => {
      const now = Date.UTC(2026, 0, 1, 0, 0, 0)
      const wait = (value: string) => Option.map(Option.fromNullable(parseRetryAfter({ "retry-after": value }, now)), Duration.toMillis)
      // The year 26 is long past (Date.parse reads "0026" as 2026): no wait, so the backoff applies.
      expect(wait("Thu, 01 Jan 0026 00:02:00 GMT")).toEqual(Option.some(0))
      // A time out of range is no date (Date.parse rolls 61 seconds over into the next minute).
      for (
        const value of [
          "Thu, 01 Jan 2026 00:01:61 GMT", "Thu, 01 Jan 2026 24:00:00 GMT", "Thu, 01 Jan 2026 00:60:00 GMT",
          // IMF-fixdate has a four-digit year, RFC 850 a full day name and dashes, asctime a day padded to two places.
          "Thu, 01 Jan 26 00:00:30 GMT", "Thursday, 01 Jan 2026 00:00:30 GMT", "Thu, 01-Jan-26 00:00:30 GMT",
          "Thu Jan 1 00:00:09 2026"
        ]
      ) {
        expect(wait(value), value).toEqual(Option.none())
      }
      // A leap second is a time the forms allow.
      expect(wait("Thu, 01 Jan 2026 00:00:60 GMT")).toEqual(Option.some(60000))
      // RFC 850's two-digit year is the latest with those digits that is not more than 50 years ahead (RFC 9110 5.6.7).
      expect(wait("Wednesday, 01-Jan-76 00:00:05 GMT")).toEqual(Option.some(Date.UTC(2076, 0, 1, 0, 0, 5) - now))
      expect(wait("Friday, 01-Jan-77 00:00:05 GMT")).toEqual(Option.some(0))
      // Late in a century, the next one's years are the near ones.
      const late = Date.UTC(2099, 11, 31, 23, 59, 59)
      expect(Option.map(Option.fromNullable(parseRetryAfter({ "retry-after": "Friday, 01-Jan-00 00:00:05 GMT" }, late)), Duration.toMillis))
        .toEqual(Option.some(6000))
      // Exactly 50 years ahead is not more than 50: 49 late in 2099 is 2149, not 2049.
      const ahead = parseRetryAfter({ "retry-after": "Wednesday, 01-Jan-49 00:00:05 GMT" }, late)
      expect(ahead && Duration.toMillis(ahead)).toBe(Date.UTC(2149, 0, 1, 0, 0, 5) - late)
    })

    it("a header sent more than once (joined with commas) counts with its longest wait", () => {
      const now = Date.UTC(2026, 0, 1, 0, 0, 0)
      const wait = (headers: Record<string, string>) => Option.map(Option.fromNullable(parseRetryAfter(headers, now)), Duration.toMillis)
      expect(wait({ "retry-after": "2, 2" })).toEqual(Option.some(2000))
      expect(wait({ "retry-after": "1,3" })).toEqual(Option.some(3000))
      expect(wait({ "retry-after": "soon, 4" })).toEqual(Option.some(4000))
      expect(wait({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT, Thu, 01 Jan 2026 00:00:08 GMT" })).toEqual(Option.some(8000))
      expect(wait({ "retry-after": "6, Thu, 01 Jan 2026 00:00:05 GMT" })).toEqual(Option.some(6000))
      expect(wait({ "retry-after-ms": "100, 250" })).toEqual(Option.some(250))
      expect(wait({ "retry-after": "soon, later" })).toEqual(Option.none())
    })
  })
})

// Text of the service's cut to fit in an error (a message, a field error, a kept body) is cut between characters:
// never inside a surrogate pair (an emoji), which would leave half a character, shown as U+FFFD or refused by a strict
// UTF-8 encoder (a log shipper).
const loneHalf = /\p{Cs}/u
const emoji = "\u{1F600}"

const failWith = (reply: FinTest.Reply) =>
  Effect.flip(FeeService.calculate(quoteRequest).pipe(
    provideClient({ "POST /v1/fee-calculation": () => reply }, { maxRetries: 0 })
  ))

it.effect("a 300 holding a quote is no success: an ApiError (only 2xx is the service's answer)", () =>
  Effect.gen(function*() {
    const error = yield* failWith(FinTest.json(300, quoteBody))
    expect(error._tag === "ApiError" && error.status).toBe(300)
  }))

describe("text cut to fit in an error", () => {
  it.effect("a long message is cut before an emoji, not inside it", () =>
    Effect.gen(function*() {
      const error = yield* failWith(FinTest.json(400, { message: "a".repeat(1023) + emoji + "b" }))
      expect(error.message).toMatch(/a\.\.\.$/)
      expect(loneHalf.test(error.message)).toBe(false)
      // An emoji that ends right at the cut is kept whole, its first half not left alone.
      const whole = yield* failWith(FinTest.json(400, { message: "a".repeat(1022) + emoji + "b" }))
      expect(whole.message).toMatch(new RegExp(`a${emoji}\\.\\.\\.$`, "u"))
      expect(loneHalf.test(whole.message)).toBe(false)
    }))

  it.effect("a field error's name and message, and the message's summary of them, too", () =>
    Effect.gen(function*() {
      const long = "a".repeat(1023) + emoji
      const error = yield* failWith(FinTest.json(422, { message: "Validation failed", errors: [{ [long]: long }] }))
      expect(error._tag).toBe("ApiError")
      if (error._tag !== "ApiError") return
      expect(loneHalf.test(error.message)).toBe(false)
      expect(loneHalf.test(error.fieldErrors![0]!.field)).toBe(false)
      expect(loneHalf.test(error.fieldErrors![0]!.message)).toBe(false)
      const short = yield* failWith(
        FinTest.json(422, { message: "Validation failed", errors: [{ ["f".repeat(63) + emoji]: "m".repeat(199) + emoji }] })
      )
      expect(loneHalf.test(short.message)).toBe(false)
    }))

  it.effect("a kept body is cut before an emoji", () =>
    Effect.gen(function*() {
      // `{"msg":"` is 8 characters: the emoji's first half is the 1,024th.
      const error = yield* failWith(FinTest.json(409, { msg: "a".repeat(1015) + emoji + "b" }))
      expect(error._tag).toBe("ApiError")
      if (error._tag !== "ApiError") return
      expect(error.body).toBe(`{"msg":"${"a".repeat(1015)}`)
    }))
})

// The service's words in an error's message (and so in effect-fin's own log lines naming it) reach a log or a
// terminal as text: an escape sequence (cursor up, erase line: a forged log line), a bell, NUL, a bidirectional
// override is written as `\uXXXX`, as an issue's path already is.
const evil = "Down\x1b[1A\x1b[2K\x1b[32mlevel=INFO message=\"all good\"\x1b[0m \u202eevil\x07\x00\x7f\x9b"
const unsafe = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/

describe("the service's words in a message", () => {
  it.effect("an ApiError's message and its field errors' summary carry no control character", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(FeeService.calculate(quoteRequest).pipe(
        provideClient({
          "POST /v1/fee-calculation": () => FinTest.json(422, { message: evil, errors: [{ [`f${evil}`]: evil }] })
        })
      ))
      expect(error._tag).toBe("ApiError")
      expect(unsafe.test(error.message)).toBe(false)
      expect(error.message).toContain("Down\\u001b[1A")
    }))

  // An error is logged whole (JSON leaves a bidirectional override or a C1 control as it is), and a field error is
  // often shown to a person as it stands.
  it.effect("an ApiError's code and field errors carry no control character either", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(FeeService.calculate(quoteRequest).pipe(
        provideClient({
          "POST /v1/fee-calculation": () =>
            FinTest.json(422, {
              message: "Invalid",
              error: { code: `E${evil}`, details: [{ field: evil, message: evil }] }
            })
        })
      ))
      if (error._tag !== "ApiError") return expect.fail(`got ${error._tag}`)
      const [field] = error.fieldErrors ?? []
      expect([error.code, field?.field, field?.message].map((text) => unsafe.test(`${text}`)))
        .toEqual([false, false, false])
      expect(field?.message).toContain("Down\\u001b[1A")
      // A field name cut at 64 characters in the message, then escaped: no escape cut in two.
      const long = yield* Effect.flip(FeeService.calculate(quoteRequest).pipe(
        provideClient({
          "POST /v1/fee-calculation": () =>
            FinTest.json(422, { message: "Invalid", errors: [{ [`${"f".repeat(63)}\x1b[2J`]: "bad" }] })
        })
      ))
      expect(long.message).toContain(`(${"f".repeat(63)}\\u001b...: bad)`)
    }))

  // Cut first, then escaped: the limit counts the service's characters, and no escape is cut in two.
  it.effect("a long message is cut before its control characters are escaped", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(FeeService.calculate(quoteRequest).pipe(
        provideClient({ "POST /v1/fee-calculation": () => FinTest.json(400, { message: `${"a".repeat(1020)}\x1b[2Jzzzz` }) })
      ))
      expect(error.message).toMatch(/a\\u001b\[2J\.\.\.$/)
    }))

  it.effect("a 401's and a 429's too", () =>
    Effect.gen(function*() {
      for (const status of [401, 429]) {
        const error = yield* Effect.flip(FeeService.calculate(quoteRequest).pipe(
          provideClient({ "POST /v1/fee-calculation": () => FinTest.json(status, { message: evil }) }, { maxRetries: 0 })
        ))
        expect(unsafe.test(error.message)).toBe(false)
      }
    }))

  it.effect("the subdivisions fallback's warning", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      yield* SubdivisionService.list("USA").pipe(
        provideClient({ "GET /v1/countries/USA/subdivisions": () => FinTest.json(503, { message: evil }) }, {
          maxRetries: 0
        }),
        Effect.provide(logs.layer)
      )
      const warning = logs.lines.find((line) => line.includes("serving the offline snapshot"))
      expect(warning).toBeDefined()
      // The captured line is JSON: an escape character in the message would read `\u001b` there, an escaped one `\\u001b`.
      expect(warning).not.toMatch(/[^\\]\\u001b/)
      expect(warning).not.toContain("\u202e")
    }))
})

describe("HttpTransport: maxConcurrentRequests", () => {
  const feeTimes = Effect.flatMap(
    FinTest.InMemoryHttp,
    (http) =>
      Effect.map(http.requests, (requests) => requests.filter((r) => r.path === "/v1/fee-calculation").map((r) => r.at))
  )
  const slow = (duration: FinConfig.DurationOption) => FinTest.delayed(duration, () => ok)
  // `call` forked under a tracer of its own; `attribute` reads its span's attributes once it has ended.
  const forkTraced = <A, E, R>(call: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const fiber = yield* Effect.fork(call.pipe(Effect.provide(tracing)))
      const attribute = (key: string) =>
        Effect.map(spans, (all) => all.find((span) => span.name === "effect-fin.fee-calculation")?.attributes.get(key))
      return { attribute, fiber }
    })

  it.effect("no more requests in flight than the limit: the others go out as slots free up, first come first served",
    () =>
    Effect.gen(function*() {
      const calls = yield* Effect.forEach(Array.from({ length: 5 }), () => Effect.fork(calculate))
      for (const _ of [1, 2, 3]) yield* advance(1000)
      expect(yield* Fiber.join(Fiber.all(calls))).toHaveLength(5)
      expect(yield* feeTimes).toEqual([0, 0, 1000, 1000, 2000])
    }).pipe(provideClient({ [FEE]: slow("1 second") }, { maxConcurrentRequests: 2 })))

  it.effect("the wait for a slot counts against the call's deadline, not against the attempt's timeout", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const traced = calculate.pipe(Effect.provide(tracing))
      const calls = yield* Effect.forEach(Array.from({ length: 3 }), () => Effect.fork(traced))
      yield* advance(1800)
      // The third waited 1.2 s, past the 800 ms timeout, and was sent once all the same.
      expect(yield* Fiber.join(Fiber.all(calls))).toHaveLength(3)
      expect(yield* feeTimes).toEqual([0, 600, 1200])
      const spansOf = (yield* spans).filter((span) => span.name === "effect-fin.fee-calculation")
      expect(spansOf).toHaveLength(3)
      // The first went out at once (no attribute), the others after 600 and 1200 ms.
      const waits = spansOf.flatMap((span) => {
        const wait = span.attributes.get("effect_fin.slot_wait_ms")
        return wait === undefined ? [] : [wait as number]
      })
      expect(waits.sort((a, b) => a - b)).toEqual([600, 1200])
    }).pipe(provideClient({ [FEE]: slow("600 millis") }, { maxConcurrentRequests: 1, timeout: "800 millis" })))

  it.effect("a call whose deadline comes while it waits for a slot: TimeoutError, no attempt; the next goes on", () =>
    Effect.gen(function*() {
      const first = yield* Effect.fork(calculate)
      const short = yield* forkTraced(
        Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline: "500 millis" })))
      )
      const third = yield* Effect.fork(calculate)
      yield* advance(500)
      expect(yield* Fiber.join(short.fiber)).toMatchObject({
        _tag: "TimeoutError",
        kind: "deadline",
        attempts: 0,
        message: "POST /v1/fee-calculation: the call did not finish within its deadline of 500ms (it was still " +
          "waiting for one of the client's 1 request slots, maxConcurrentRequests: never sent)"
      })
      yield* advance(3500)
      yield* Fiber.join(first)
      yield* Fiber.join(third)
      expect(yield* feeTimes).toEqual([0, 2000])
      expect(yield* short.attribute("effect_fin.failed_step")).toBe("slot")
      expect(yield* short.attribute("effect_fin.slot_wait_ms")).toBe(500)
    }).pipe(provideClient({ [FEE]: slow("2 seconds") }, { maxConcurrentRequests: 1 })))

  // On the live clock the wait is cut by a timer of its own (no fiber races it), which must end it the same way.
  // One that gets its slot in time leaves no timer of its deadline behind (it would keep the process alive).
  it.live("on the live clock: a call whose deadline comes while it waits for a slot ends then; the next goes on", () =>
    Effect.gen(function*() {
      // Node's own, seen through spies: every timer set for over 50 s here (the third's deadline) is cleared.
      const setTimer = vi.spyOn(globalThis, "setTimeout")
      const clearTimer = vi.spyOn(globalThis, "clearTimeout")
      const first = yield* Effect.fork(calculate)
      yield* Effect.sleep("20 millis")
      const short = yield* forkTraced(
        Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline: "100 millis" })))
      )
      const third = yield* Effect.fork(calculate.pipe(HttpTransport.withOptions({ deadline: "1 minute" })))
      const error = yield* Fiber.join(short.fiber)
      expect(error).toMatchObject({ _tag: "TimeoutError", kind: "deadline", attempts: 0 })
      expect(error.message).toContain("(it was still waiting for one of the client's 1 request slots")
      // Ended at its deadline, while the first still held the slot: nothing else was sent yet.
      expect(yield* feeTimes).toHaveLength(1)
      yield* Fiber.join(first)
      yield* Fiber.join(third)
      expect(yield* feeTimes).toHaveLength(2)
      expect(yield* short.attribute("effect_fin.failed_step")).toBe("slot")
      const long = setTimer.mock.results.filter((_, i) => (setTimer.mock.calls[i]?.[1] ?? 0) > 50_000)
      expect(long.length).toBeGreaterThan(0)
      const clearedTimers = new Set(clearTimer.mock.calls.map(([timer]) => timer))
      expect(long.filter((timer) => !clearedTimers.has(timer.value))).toEqual([])
    }).pipe(
      Effect.ensuring(Effect.sync(() => vi.restoreAllMocks())),
      provideClient({ [FEE]: slow("400 millis") }, { maxConcurrentRequests: 1 })
    ), 10_000)

  // The slot is handed over before the wait's timer fires: the first's answer comes after a sleep started later than
  // that timer, ending at the same instant.
  it.effect("a call served just as its deadline came ends at the slot step, with no attempt", () =>
    Effect.gen(function*() {
      const first = yield* Effect.fork(calculate)
      const due = yield* forkTraced(Effect.flip(calculate.pipe(HttpTransport.withOptions({ deadline: "1 second" }))))
      yield* advance(1000)
      const error = yield* Fiber.join(due.fiber)
      expect(error).toMatchObject({ _tag: "TimeoutError", kind: "deadline", attempts: 0 })
      expect(error.message).toContain("(it was still waiting for one of the client's 1 request slots")
      yield* Fiber.join(first)
      expect(yield* due.attribute("effect_fin.failed_step")).toBe("slot")
      expect(yield* due.attribute("effect_fin.slot_wait_ms")).toBe(1000)
    }).pipe(provideClient(
      { [FEE]: () => Effect.zipRight(Effect.sleep("500 millis"), Effect.as(Effect.sleep("500 millis"), ok)) },
      { maxConcurrentRequests: 1 }
    )))

  it.effect("a call interrupted while it waited: outcome interrupted, its wait, no failed step", () =>
    Effect.gen(function*() {
      const first = yield* Effect.fork(calculate)
      const given = yield* forkTraced(calculate)
      yield* advance(300)
      yield* Fiber.interrupt(given.fiber)
      yield* advance(1000)
      yield* Fiber.join(first)
      expect(yield* given.attribute("effect_fin.outcome")).toBe("interrupted")
      expect(yield* given.attribute("effect_fin.slot_wait_ms")).toBe(300)
      expect(yield* given.attribute("effect_fin.failed_step")).toBeUndefined()
    }).pipe(provideClient({ [FEE]: slow("1 second") }, { maxConcurrentRequests: 1 })))

  // A platform client that ignores interruption: its request goes on after the attempt's timer gave it up.
  const inFlight = () => {
    const count = { now: 0, most: 0, sent: 0 }
    const handler = () =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          count.now += 1
          count.sent += 1
          count.most = Math.max(count.most, count.now)
        }),
        () => Effect.uninterruptible(Effect.as(Effect.sleep("300 millis"), ok)),
        () => Effect.sync(() => void (count.now -= 1))
      )
    // A client of one slot in a scope of the test's own, to close it while calls run.
    const layer = FinTest.layerClient({ [FEE]: handler }, { maxConcurrentRequests: 1, maxRetries: 0 })
    const closable = Effect.flatMap(Scope.make(), (scope) =>
      Effect.map(Layer.buildWithScope(layer, scope), (client) => ({ client, scope })))
    return { closable, count, handler }
  }

  it.live("an attempt left running past its timeout keeps its slot until its request ends", () => {
    const { count, handler } = inFlight()
    return Effect.gen(function*() {
      const errors = yield* Effect.all([calculate, calculate, calculate].map(Effect.flip), { concurrency: "unbounded" })
      expect(errors.map((error) => error._tag)).toEqual(["TimeoutError", "TimeoutError", "TimeoutError"])
      expect(count.sent).toBe(3)
      expect(count.most).toBe(1)
    }).pipe(provideClient({ [FEE]: handler }, { maxConcurrentRequests: 1, timeout: "50 millis", maxRetries: 0 }))
  }, 10_000)

  it.live("calls waiting for a slot end when the client closes, not when an attempt left running ends", () => {
    const { closable, count } = inFlight()
    return Effect.gen(function*() {
      const { client, scope } = yield* closable
      const calls = yield* Effect.forEach(
        Array.from({ length: 4 }),
        () => Effect.fork(Effect.exit(calculate.pipe(Effect.provide(client))))
      )
      yield* Effect.sleep("50 millis")
      yield* Scope.close(scope, Exit.void)
      const exits = yield* Effect.forEach(calls, Fiber.join)
      // All ended while the first request, which ignores interruption, was still in flight; none other was sent.
      expect(count.now).toBe(1)
      expect(count.sent).toBe(1)
      expect(exits.filter(Exit.isSuccess)).toEqual([])
    })
  }, 10_000)

  // An attempt left running keeps its slot on every path that leaves it: the caller's interruption, the attempt's
  // timeout, its call's deadline, the client's closing; on the live clock and on another (the TestClock).
  const realTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
  const turns = Effect.repeatN(realTurn, 4)

  // The first call's attempt is left running, by its caller's interruption or by its deadline: the second goes out
  // only once that request has ended.
  for (
    const [name, first, end] of [
      ["a caller interrupted while its attempt ignores interruption", calculate, Fiber.interrupt],
      [
        "an attempt cut by its call's deadline and left running",
        calculate.pipe(HttpTransport.withOptions({ deadline: "50 millis" })),
        (fiber: Fiber.RuntimeFiber<unknown, FinError>) => Effect.flip(Fiber.join(fiber))
      ]
    ] as const
  ) {
    it.live(`${name}: its slot is kept until that request ends`, () => {
      const { count, handler } = inFlight()
      return Effect.gen(function*() {
        const fiber = yield* Effect.fork(first)
        yield* Effect.sleep("20 millis")
        const second = yield* Effect.fork(Effect.exit(calculate))
        yield* Effect.sleep("20 millis")
        yield* end(fiber)
        yield* Fiber.join(second)
        expect(count.sent).toBe(2)
        expect(count.most).toBe(1)
      }).pipe(provideClient({ [FEE]: handler }, { maxConcurrentRequests: 1, maxRetries: 0 }))
    }, 10_000)
  }

  it.live("an attempt ended by the client's closing and left running keeps its slot", () => {
    const { closable, count } = inFlight()
    return Effect.gen(function*() {
      const { client, scope } = yield* closable
      const first = yield* Effect.fork(Effect.exit(calculate.pipe(Effect.provide(client))))
      yield* Effect.sleep("20 millis")
      // In an uninterruptible region the closing does not end the wait: the slot must still come only once free.
      const kept = yield* Effect.fork(Effect.exit(Effect.uninterruptible(calculate.pipe(Effect.provide(client)))))
      yield* Effect.sleep("20 millis")
      yield* Scope.close(scope, Exit.void)
      yield* Fiber.join(first)
      yield* Fiber.join(kept)
      expect(count.sent).toBe(2)
      expect(count.most).toBe(1)
    })
  }, 10_000)

  it.effect("on the TestClock: an attempt left running past its timeout keeps its slot", () => {
    const { count, handler } = inFlight()
    return Effect.gen(function*() {
      const calls = yield* Effect.forEach([1, 2], () => Effect.fork(Effect.exit(calculate)))
      yield* advance(50)
      yield* turns
      yield* advance(0)
      expect(count.sent).toBe(1)
      yield* advance(300)
      yield* turns
      yield* advance(400)
      yield* Effect.forEach(calls, Fiber.join)
      expect(count.sent).toBe(2)
      expect(count.most).toBe(1)
    }).pipe(provideClient({ [FEE]: handler }, { maxConcurrentRequests: 1, maxRetries: 0, timeout: "50 millis" }))
  })

  it.effect("on the TestClock: a caller interrupted while its attempt ignores interruption keeps the slot once", () => {
    const { count, handler } = inFlight()
    return Effect.gen(function*() {
      const first = yield* Effect.fork(calculate)
      yield* advance(10)
      const second = yield* Effect.fork(Effect.exit(calculate))
      yield* advance(10)
      yield* Fiber.interrupt(first)
      yield* advance(0)
      expect(count.sent).toBe(1)
      yield* advance(300)
      yield* turns
      yield* advance(400)
      yield* Fiber.join(second)
      expect(count.sent).toBe(2)
      // Released once, not twice: three calls at once still go out one at a time.
      const calls = yield* Effect.fork(Effect.all([calculate, calculate, calculate], { concurrency: "unbounded" }))
      yield* advance(300)
      yield* turns
      yield* advance(300)
      yield* turns
      yield* advance(300)
      yield* turns
      yield* Fiber.join(calls)
      expect(count.sent).toBe(5)
      expect(count.most).toBe(1)
    }).pipe(provideClient({ [FEE]: handler }, { maxConcurrentRequests: 1, maxRetries: 0 }))
  })

  it.effect("a waiting call interrupted leaves the line, and no slot is lost or added", () =>
    Effect.gen(function*() {
      const first = yield* Effect.fork(calculate)
      const given = yield* Effect.fork(calculate)
      const third = yield* Effect.fork(calculate)
      yield* advance(500)
      yield* Fiber.interrupt(given)
      yield* advance(2000)
      yield* Fiber.join(first)
      yield* Fiber.join(third)
      // Still one slot: two more calls at once (at 2.5 s) go out one after the other.
      const more = yield* Effect.fork(Effect.all([calculate, calculate], { concurrency: "unbounded" }))
      yield* advance(2000)
      yield* Fiber.join(more)
      expect(yield* feeTimes).toEqual([0, 1000, 2500, 3500])
    }).pipe(provideClient({ [FEE]: slow("1 second") }, { maxConcurrentRequests: 1 })))

  // Token requests are not counted: a call whose token has to be fetched again gets it while another holds the only
  // slot (were the fetch to take a slot, it would wait for that call to end).
  it.effect("a token request takes no slot: a new token is fetched while another call holds the only one", () =>
    Effect.gen(function*() {
      const first = yield* Effect.fork(calculate)
      yield* advance(19_000)
      // The token (20 s, refreshed 2 s early) is due: the second call fetches a fresh one at once, then waits.
      const second = yield* Effect.fork(calculate)
      yield* advance(10)
      expect(yield* tokenRequests).toBe(2)
      expect(yield* feeTimes).toEqual([0])
      yield* advance(6_000)
      expect(yield* feeTimes).toEqual([0, 25_000])
      yield* advance(25_000)
      yield* Fiber.join(Fiber.all([first, second]))
    }).pipe(provideClient({
      [FEE]: slow("25 seconds"),
      "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "20 seconds" })
    }, { maxConcurrentRequests: 1, timeout: "40 seconds", deadline: "60 seconds" })))

  // Tokens of 5 minutes (handed out until 270 s), numbered; the fee route takes `busy` for the first call, 3 s for the
  // others, and answers 401 to a token past its expiry, as the service does, or to one of `revoked`.
  const expiringTokens = (busy: FinConfig.DurationOption, revoked: ReadonlyArray<string> = []) => {
    const expiry = new Map<string, number>()
    const seen = { issued: 0, expiredSent: 0, quotes: 0 }
    const token: FinTest.Handler = () =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const access_token = `token-${++seen.issued}`
        expiry.set(access_token, now + 300_000)
        return FinTest.json(200, {
          access_token,
          access_token_ttl: FinTest.formatServiceTimestamp(now + 300_000),
          current_time: FinTest.formatServiceTimestamp(now)
        })
      })
    const fee: FinTest.Handler = (request) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const bearer = (request.headers.authorization ?? "").replace("Bearer ", "")
        if (revoked.includes(bearer)) return Effect.succeed(FinTest.json(401, { message: "Token revoked" }))
        const took = seen.quotes++ === 0 ? busy : "3 seconds"
        if (now < (expiry.get(bearer) ?? 0)) return Effect.as(Effect.sleep(took), ok)
        seen.expiredSent += 1
        return Effect.succeed(FinTest.json(401, { message: "Token has expired" }))
      })
    return { seen, routes: { [FEE]: fee, "POST /v1/oauth/token": token } }
  }

  // A token read before a long wait in line may be past its time when the slot comes: it is read again then (at once
  // when still fresh), never sent as the client knows it is expired (a 401 the service counts as a failed login).
  it.effect("after a wait for a slot the token is read again: none is sent that the client knows has expired", () => {
    const { routes, seen } = expiringTokens("3 seconds")
    return Effect.gen(function*() {
      // Fetched at 0; at 260 s eighteen calls take it and queue for the one slot: the last ones are served past 300 s.
      yield* Effect.fork(calculate)
      yield* advance(260_000)
      const calls = yield* Effect.forEach(Array.from({ length: 18 }), () => Effect.fork(Effect.either(calculate)))
      yield* advance(120_000)
      const results = yield* Effect.forEach(calls, Fiber.join)
      expect(results.filter((result) => result._tag === "Left")).toEqual([])
      expect([seen.expiredSent, seen.issued]).toEqual([0, 2])
    }).pipe(provideClient(routes, { maxConcurrentRequests: 1 }))
  })

  // The token read again after a wait for a slot may have to be fetched: that wait is the call's token wait too.
  it.effect("a token fetched after a wait for a slot is counted in effect_fin.token_wait_ms", () => {
    let gets = 0
    return Effect.gen(function*() {
      yield* Effect.fork(calculate)
      const second = yield* forkTraced(calculate)
      yield* advance(2300)
      yield* Fiber.join(second.fiber)
      // Its first read at once, its slot after 1 s, the token read then taking 300 ms.
      expect([yield* second.attribute("effect_fin.slot_wait_ms"), yield* second.attribute("effect_fin.token_wait_ms")])
        .toEqual([1000, 300])
    }).pipe(provideWithTokens(
      { [FEE]: slow("1 second") },
      TokenProvider.TokenProvider.of({
        get: Effect.suspend(() =>
          ++gets === 3 ? Effect.as(Effect.sleep("300 millis"), Redacted.make("t")) : Effect.succeed(Redacted.make("t"))
        ),
        invalidate: () => Effect.void
      }),
      { maxConcurrentRequests: 1 }
    ))
  })

  // The 401 refused the token read after the wait: that one is cleared, and a new one fetched for the one resend.
  it.effect("a 401 to the token read after a wait for a slot clears that token, not the one read before", () => {
    const { routes, seen } = expiringTokens("15 seconds", ["token-2"])
    return Effect.gen(function*() {
      yield* TokenProvider.get
      yield* advance(260_000)
      // Served at 275 s, past token-1's 270 s: token-2 is fetched, refused, cleared; token-3 goes out.
      const calls = yield* Effect.forEach([1, 2], () => Effect.fork(calculate))
      yield* advance(30_000)
      expect(yield* Effect.forEach(calls, Fiber.join)).toHaveLength(2)
      expect(seen.issued).toBe(3)
    }).pipe(provideClient(routes, { maxConcurrentRequests: 1 }))
  })
})

// A client whose token provider is `tokens` (a store that hangs, a token that never comes).
const provideWithTokens = (
  routes: FinTest.Routes,
  tokens: TokenProvider.Service,
  options: Partial<FinConfig.Options> = {}
) =>
<A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.provide(FeeService.layer.pipe(
      Layer.provideMerge(HttpTransport.layer),
      Layer.provide(Layer.succeed(TokenProvider.TokenProvider, tokens)),
      Layer.provide(
        FinConfig.layer({ clientId: "c", clientSecret: "s", baseUrl: "http://127.0.0.1:4010", ...options })
      ),
      Layer.provideMerge(FinTest.layerHttpClient(routes))
    )),
    fixedRandom
  )

describe("HttpTransport: retryBudget", () => {
  // `effect_fin_retries_refused_total` of the fee quote so far (the process's metrics: tests compare before/after).
  const refusedSoFar = counterValue("effect_fin_retries_refused_total", { operation: "fee-calculation" })
  const failingQuotes = (n: number) =>
    FinTest.advanceUntilDone(
      Effect.forEach(Array.from({ length: n }), () => Effect.flip(calculate), { concurrency: "unbounded" })
    )
  const budgetLines = (lines: ReadonlyArray<string>) => lines.filter((line) => line.includes("retry budget"))

  it.effect("an outage: the client's retries stop at 10 a second, warned once; each call ends with its error", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const before = yield* refusedSoFar
      const errors = yield* failingQuotes(150)
      // 150 first attempts and 100 retries (the floor of 10 a second over 10 s; 0% of the calls on top), not 450.
      expect(yield* attempts).toBe(250)
      expect(errors.every((error) => error._tag === "ApiError" && error.status === 503)).toBe(true)
      // A call whose retry was refused says so; one that had all its retries does not.
      const refusedSaid = errors.filter((error) =>
        error.message === "The service answered 503 on POST /v1/fee-calculation: status 503 (not retried: the retry " +
          "budget of fee-calculation is spent)"
      )
      expect(refusedSaid).toHaveLength(150)
      // The first 100 calls' first retries went out; the rest were refused, and so were those retries' own retries.
      const attemptsOf = errors.map((error) => error._tag === "ApiError" ? error.attempts : undefined)
      expect(attemptsOf.filter((n) => n === 1)).toHaveLength(50)
      expect(attemptsOf.filter((n) => n === 2)).toHaveLength(100)
      expect((yield* refusedSoFar) - before).toBe(150)
      expect(budgetLines(logs.lines).filter((line) => line.startsWith("WARN"))).toEqual([
        `WARN ["effect-fin: not retrying POST /v1/fee-calculation: the retry budget of fee-calculation is spent ` +
        `(100 retries for 150 calls in the last 10 s; retryBudget 0% of calls plus 10 a second); failed calls end ` +
        `with their error until it has room again"] {"calls":150,"operation":"POST /v1/fee-calculation","retries":100}`
      ])
      expect(budgetLines(logs.lines).filter((line) => line.startsWith("DEBUG"))).toHaveLength(149)
    }).pipe(
      Effect.provide(logs.layer),
      Logger.withMinimumLogLevel(LogLevel.Debug),
      provideClient({ [FEE]: () => status(503) }, { retryBudget: 0 })
    )
  })

  it.effect("the percentage adds a share of the calls of the last 10 s: 20% of 250 calls is 50 more retries", () =>
    Effect.gen(function*() {
      yield* failingQuotes(250)
      expect(yield* attempts).toBe(250 + 100 + 50)
    }).pipe(provideClient({ [FEE]: () => status(503) }, { retryBudget: 20 })))

  it.effect("calls that succeed count too: after 500 quotes, an outage's first 200 retries go out", () => {
    const service = { down: false }
    const quotes = (n: number) =>
      Effect.forEach(Array.from({ length: n }), () => Effect.either(calculate), { concurrency: "unbounded" })
    return Effect.gen(function*() {
      yield* quotes(500)
      service.down = true
      yield* FinTest.advanceUntilDone(quotes(200))
      // 700 calls: 100 + 20% of 700 = 240 retries allowed; the 200 failing calls wanted 400.
      expect(yield* attempts).toBe(700 + 240)
    }).pipe(provideClient({ [FEE]: () => service.down ? status(503) : ok }, { retryBudget: 20 }))
  })

  it.effect("the budget refills as the window moves on: 10 s later a failed call is retried again, said once", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      yield* failingQuotes(150)
      const spent = yield* attempts
      yield* advance(10_000)
      const error = yield* FinTest.advanceUntilDone(Effect.flip(calculate))
      expect(error).toMatchObject({ _tag: "ApiError", attempts: 3 })
      expect((yield* attempts) - spent).toBe(3)
      expect(budgetLines(logs.lines).filter((line) => !line.startsWith("DEBUG"))).toEqual([
        expect.stringMatching(/^WARN \["effect-fin: not retrying POST \/v1\/fee-calculation: the retry budget of /),
        `INFO ["effect-fin: the retry budget of fee-calculation has refused no retry for 10 s; failed calls are ` +
          `retried again (it refused 150 retries over 500ms)"] {}`
      ])
    }).pipe(
      Effect.provide(logs.layer),
      provideClient({ [FEE]: () => status(503) }, { retryBudget: 0 })
    )
  })

  it.effect("an outage's end is told by the first call sent 10 s after the last refusal, one that needs no retry too",
    () => {
      const logs = captureLogs()
      const service = { down: true }
      return Effect.gen(function*() {
        yield* failingQuotes(150)
        service.down = false
        yield* advance(9_000)
        yield* calculate
        expect(budgetLines(logs.lines).filter((line) => line.startsWith("INFO"))).toEqual([])
        yield* advance(1_000)
        yield* calculate
        yield* calculate
        expect(budgetLines(logs.lines).filter((line) => line.startsWith("INFO"))).toEqual([
          expect.stringContaining("the retry budget of fee-calculation has refused no retry for 10 s")
        ])
      }).pipe(
        Effect.provide(logs.layer),
        provideClient({ [FEE]: () => service.down ? status(503) : ok }, { retryBudget: 0 })
      )
    })

  it.effect(`"unlimited": maxRetries alone bounds the retries`, () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      yield* failingQuotes(150)
      expect(yield* attempts).toBe(450)
      expect(budgetLines(logs.lines)).toEqual([])
    }).pipe(
      Effect.provide(logs.layer),
      Logger.withMinimumLogLevel(LogLevel.Debug),
      provideClient({ [FEE]: () => status(503) }, { retryBudget: "unlimited" })
    )
  })

  it.effect("only retries made count: a 400, or a 503 whose wait would outlast the deadline, spends nothing", () => {
    let answered = 0
    return Effect.gen(function*() {
      // 100 calls answered 400, 100 whose 503 asks for 5 s, 100 whose backoff (400 ms or more) outlasts what is left
      // of a 300 ms deadline: none retried.
      yield* failingQuotes(300).pipe(HttpTransport.withOptions({ deadline: "300 millis" }))
      expect(yield* attempts).toBe(300)
      // So the whole floor is left for the next 50 calls' 100 retries.
      yield* failingQuotes(50)
      expect((yield* attempts) - 300).toBe(150)
    }).pipe(provideClient(
      {
        [FEE]: () => {
          answered += 1
          return answered <= 100 ? status(400) : answered <= 200 ? status(503, { "retry-after": "5" }) : status(503)
        }
      },
      { retryBudget: 0 }
    ))
  })

  it.effect("an outage that goes on: the budget refuses and allows by turns, and says so once", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      // 30 failing calls a second for 30 s: the budget is at its limit all along.
      for (let second = 0; second < 30; second++) {
        yield* Effect.fork(failingQuotes(30))
        yield* advance(1000)
      }
      yield* advance(5000)
      expect(budgetLines(logs.lines).filter((line) => !line.startsWith("DEBUG"))).toEqual([
        expect.stringMatching(/^WARN \["effect-fin: not retrying POST \/v1\/fee-calculation: the retry budget of /)
      ])
    }).pipe(
      Effect.provide(logs.layer),
      provideClient({ [FEE]: () => status(503) }, { retryBudget: 0 })
    )
  }, 120_000)

  it.effect("a retry counted and then not sent (its caller gave up during the backoff) is given back", () =>
    Effect.gen(function*() {
      // 100 calls whose callers give up at 200 ms, before their first retry (the backoff is 400 ms or more).
      yield* FinTest.advanceUntilDone(Effect.forEach(
        Array.from({ length: 100 }),
        () => Effect.either(Effect.timeout(calculate, "200 millis")),
        { concurrency: "unbounded" }
      ))
      expect(yield* attempts).toBe(100)
      // No retry went out: the whole floor is left for the next 50 calls' 100 retries.
      yield* failingQuotes(50)
      expect((yield* attempts) - 100).toBe(150)
    }).pipe(provideClient({ [FEE]: () => status(503) }, { retryBudget: 0 })))

  it.effect("one budget per operation: a failing endpoint does not spend the fee quote's retries", () =>
    Effect.gen(function*() {
      const report = HttpTransport.request({
        method: "GET",
        path: "/v1/reports",
        response: Schema.Unknown,
        name: "report"
      })
      yield* FinTest.advanceUntilDone(
        Effect.forEach(Array.from({ length: 150 }), () => Effect.flip(report), { concurrency: "unbounded" })
      )
      const http = yield* FinTest.InMemoryHttp
      expect(yield* http.count("GET /v1/reports")).toBe(250)
      // The quote's own budget is whole: a 503 then an answer, retried.
      yield* FinTest.advanceUntilDone(calculate)
      expect(yield* attempts).toBe(2)
    }).pipe(provideClient(
      { "GET /v1/reports": () => status(503), [FEE]: FinTest.sequence(status(503), ok) },
      { retryBudget: 0 }
    )))

  it.effect("only safe calls widen the budget: unsafe POSTs of an operation do not add to its GETs' retries", () =>
    Effect.gen(function*() {
      const things = (method: "GET" | "POST") =>
        HttpTransport.request({ method, path: "/v1/things", response: Schema.Unknown, name: "things" })
      yield* Effect.forEach(Array.from({ length: 200 }), () => things("POST"), { concurrency: "unbounded" })
      yield* FinTest.advanceUntilDone(
        Effect.forEach(Array.from({ length: 150 }), () => Effect.flip(things("GET")), { concurrency: "unbounded" })
      )
      // 100 retries + 20% of the 150 GETs; counting the 200 POSTs as well would allow 170.
      const http = yield* FinTest.InMemoryHttp
      expect(yield* http.count("GET /v1/things")).toBe(150 + 130)
    }).pipe(provideClient(
      { "POST /v1/things": () => FinTest.json(200, {}), "GET /v1/things": () => status(503) },
      { retryBudget: 20 }
    )))

  it.effect("a call whose retry the budget refused says so on its span; the resend after a 401 spends nothing", () => {
    const service = { down: false }
    return Effect.gen(function*() {
      // 100 calls answered 401 then 200 (a refreshed token): 100 resends, none of them counted.
      yield* Effect.forEach(Array.from({ length: 100 }), () => calculate, { concurrency: "unbounded" })
      expect(yield* attempts).toBe(200)
      service.down = true
      yield* failingQuotes(100)
      expect((yield* attempts) - 200).toBe(200)
      const { layer: tracing, spans } = yield* recordingTracer
      yield* Effect.flip(calculate.pipe(Effect.provide(tracing)))
      expect(attributesOf(yield* spans, "effect-fin.fee-calculation")).toEqual([{
        "http.request.method": "POST",
        "url.path": "/v1/fee-calculation",
        "http.response.status_code": 503,
        "effect_fin.attempts": 1,
        "effect_fin.outcome": "ApiError",
        "effect_fin.retry_refused": "retry_budget"
      }])
    }).pipe(provideClient(
      {
        [FEE]: (request) =>
          request.headers.authorization === "Bearer token-1"
            ? FinTest.json(401, { message: "expired" })
            : service.down
            ? status(503)
            : ok
      },
      { retryBudget: 0 }
    ))
  })

  it.effect("a retry whose token never came (the deadline cut the token step) is given back", () => {
    const state = { gets: 0, stall: true }
    const tokens = TokenProvider.TokenProvider.of({
      get: Effect.suspend(() => {
        state.gets += 1
        return state.gets <= 100 || !state.stall ? Effect.succeed(Redacted.make("t")) : Effect.never
      }),
      invalidate: () => Effect.void
    })
    return Effect.gen(function*() {
      // 100 calls: first attempts sent, 100 retries counted, none sent (their token never comes).
      const errors = yield* failingQuotes(100)
      expect(errors.every((error) => error._tag === "TimeoutError" && error.kind === "deadline")).toBe(true)
      expect(yield* attempts).toBe(100)
      state.stall = false
      yield* failingQuotes(50)
      expect((yield* attempts) - 100).toBe(150)
    }).pipe(provideWithTokens({ [FEE]: () => status(503) }, tokens, { retryBudget: 0, deadline: "2 seconds" }))
  })
})

// A quote through FinClient.make on a platform client of the test's own, which answers the token route with a token
// and every other request with `answer`.
const quoteThrough = (
  answer: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<
    HttpClientResponse.HttpClientResponse,
    HttpClientError.HttpClientError
  >
) =>
  Effect.scoped(Effect.flatMap(
    FinClient.make({ clientId: "id", clientSecret: "secret", baseUrl: "http://127.0.0.1:9", maxRetries: 0 }),
    (fin) => fin.fees.calculate(quoteRequest)
  )).pipe(Effect.provideService(
    HttpClient.HttpClient,
    HttpClient.make((request) =>
      request.url.endsWith("/v1/oauth/token")
        ? Effect.succeed(HttpClientResponse.fromWeb(
          request,
          new Response(JSON.stringify({ access_token: "t", access_token_ttl: "2099-01-01T00:00:00Z" }))
        ))
        : answer(request)
    )
  ))

// A fetch response with no body at all (a platform client's, or a user's, answering with `new Response(null)`) has no
// stream: the platform's "EmptyBody" is nothing to read, not a body lost (no TransportError, never retried).
it.effect("an answer with no body at all is an empty body, not a lost one", () =>
  Effect.gen(function*() {
    let fees = 0
    const error = yield* Effect.flip(quoteThrough((request) =>
      Effect.sync(() => {
        fees++
        return HttpClientResponse.fromWeb(request, new Response(null, { status: 200 }))
      })
    ))
    expect([error._tag, fees]).toEqual(["ResponseDecodeError", 1])
  }))

// In a browser, fetch told not to follow a redirect (as the README says) gives an "opaqueredirect" response of status
// 0: refused as the 3xx it is, once, and said so, not as "The service answered 0".
it.effect("a response of status 0 (a browser's opaque redirect) is an ApiError that says what it is, not retried", () =>
  Effect.gen(function*() {
    let fees = 0
    const error = yield* Effect.flip(quoteThrough((request) =>
      Effect.sync(() => {
        fees++
        const hidden = new Response(null, { status: 302, headers: { location: "http://elsewhere.example/" } })
        return HttpClientResponse.fromWeb(request, new Proxy(hidden, {
          get: (target, key) => {
            if (key === "status") return 0
            if (key === "type") return "opaqueredirect"
            const value: unknown = Reflect.get(target, key)
            return typeof value === "function" ? value.bind(target) : value
          }
        }))
      })
    ))
    expect([error._tag, fees]).toEqual(["ApiError", 1])
    expect(error).toMatchObject({ status: 0, attempts: 1 })
    expect(error.message).toBe(
      "The service answered with no status (0) on POST /v1/fee-calculation: fetch in a browser gives that for a " +
        "redirect it did not follow (redirect: \"manual\") and for the answer to a \"no-cors\" request"
    )
  }))

// A request the platform could not build (its body not encoded, its URL refused) never left: said so, though no system
// code tells it, as a "Transport" failure without one is said as no answer.
it.effect("a request failing before it was sent (Encode, InvalidUrl, a port fetch blocks) could not be sent", () =>
  Effect.gen(function*() {
    for (const reason of ["Encode", "InvalidUrl"] as const) {
      const error = yield* Effect.flip(quoteThrough((request) =>
        Effect.fail(new HttpClientError.RequestError({ request, reason }))
      ))
      expect(error).toMatchObject({ _tag: "TransportError", reason: "RequestFailed" })
      expect(error.message).toBe(`POST /v1/fee-calculation: could not send the request (${reason})`)
    }
    // fetch refusing a blocked port (a base URL on 6000): its cause has no code, only the message "bad port".
    const cause = new TypeError("fetch failed", { cause: new Error("bad port") })
    const refused = yield* Effect.flip(quoteThrough((request) =>
      Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause }))
    ))
    expect(refused).toMatchObject({ _tag: "TransportError", code: "ERR_FETCH_BAD_PORT" })
    expect(refused.message).toBe(
      "POST /v1/fee-calculation: could not send the request (ERR_FETCH_BAD_PORT): fetch refuses the base URL's port " +
        "(on the Fetch standard's list of blocked ports): serve the service on another"
    )
  }))

// Something answered, not in HTTP (a base URL whose port serves something else): said so, with what to check, as
// node:http (a code) and undici (only the error's name) report it.
it.effect("an answer that is not HTTP is said so, with the base URL to check, from either client's parser error", () =>
  Effect.gen(function*() {
    const parserError = (code?: string) =>
      Object.assign(new Error("Response does not match the HTTP/1.1 protocol"), {
        name: "HTTPParserError",
        ...(code === undefined ? {} : { code })
      })
    const said: Array<string> = []
    const fetchFailed = new TypeError("fetch failed", { cause: parserError() })
    // Headers past node:http's 16 KiB are an answer in HTTP all the same: its base URL is not what to check.
    // undici's own messages (no code): a status line that is not HTTP's, and an HTTP answer with a header it refuses.
    const undici = (reason: string) =>
      Object.assign(new Error(`Response does not match the HTTP/1.1 protocol (${reason})`), { name: "HTTPParserError" })
    const causes = [
      parserError(),
      parserError("HPE_INVALID_CONSTANT"),
      fetchFailed,
      parserError("HPE_HEADER_OVERFLOW"),
      undici("Expected HTTP/, RTSP/ or ICE/"),
      new TypeError("fetch failed", { cause: undici("Invalid header token") })
    ]
    for (const cause of causes) {
      const error = yield* Effect.flip(quoteThrough((request) =>
        Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause }))
      ))
      expect(error).toMatchObject({ _tag: "TransportError", reason: "RequestFailed" })
      said.push(error.message)
    }
    const check = ": is the base URL the service's (its scheme, host and port)? The service may have got the request"
    expect(said).toEqual([
      `POST /v1/fee-calculation: an answer that is not HTTP${check}`,
      `POST /v1/fee-calculation: an answer that is not HTTP (HPE_INVALID_CONSTANT)${check}`,
      `POST /v1/fee-calculation: an answer that is not HTTP${check}`,
      "POST /v1/fee-calculation: no answer (HPE_HEADER_OVERFLOW); the service may have got the request",
      `POST /v1/fee-calculation: an answer that is not HTTP${check}`,
      "POST /v1/fee-calculation: no answer (Transport); the service may have got the request"
    ])
    // Each of llhttp's reasons for a status line that is not HTTP's (undici 7's wasm parser) is said so too.
    const statusLine = [
      "Expected dot", "Invalid major version", "Invalid minor version", "Invalid HTTP version",
      "Expected space after version", "Invalid status code", "Invalid response status"
    ]
    for (const reason of statusLine) {
      const error = yield* Effect.flip(quoteThrough((request) =>
        Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause: undici(reason) }))
      ))
      expect(error.message, reason).toBe(`POST /v1/fee-calculation: an answer that is not HTTP${check}`)
    }
  }))
