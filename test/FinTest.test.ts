import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as FeeService from "../src/FeeService.js"
import type * as FinConfig from "../src/FinConfig.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as SubdivisionService from "../src/SubdivisionService.js"
import * as TokenStore from "../src/TokenStore.js"
import { defectOf, illegalArgument, provideClient, quoteBody, quoteRequest } from "./support.js"

const FEE = "POST /v1/fee-calculation"
const attempts = Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(FEE))

describe("FinTest.advanceUntilDone", () => {
  it.effect("moves the TestClock through a reset, a stall and a Retry-After; each request's `at` says when", () =>
    Effect.gen(function*() {
      const quote = yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest))
      expect(quote.exchange_rate).toBe(quoteBody.data.exchange_rate)
      expect(yield* attempts).toBe(4)
      const http = yield* FinTest.InMemoryHttp
      const fees = (yield* http.requests).filter((request) => request.path === "/v1/fee-calculation")
      // Backoff 500 ms (no jitter), a 30 s attempt timeout and a 1 s backoff, then the 1 s Retry-After.
      expect(fees.map((r) => r.at)).toEqual([0, 500, 31_500, 32_500])
      // `at` is always there (checked by tsc): a wait is one subtraction.
      const waited = (first: FinTest.RecordedRequest, second: FinTest.RecordedRequest): number => second.at - first.at
      expect(fees.slice(1).map((request, i) => waited(fees[i]!, request))).toEqual([500, 31_000, 1_000])
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(
        FinTest.fail(),
        FinTest.stall,
        FinTest.json(429, { message: "slow down" }, { "retry-after": "1" }),
        FinTest.json(200, quoteBody)
      )
    }, { maxRetries: 3 })))

  it.effect("a call that waits for nothing ends with the TestClock where it began, the token fetch included", () =>
    Effect.gen(function*() {
      yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest))
      const first = yield* Clock.currentTimeMillis
      yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest))
      expect([first, yield* Clock.currentTimeMillis]).toEqual([0, 0])
    }).pipe(provideClient({ [FEE]: () => FinTest.json(200, quoteBody) })))

  it.effect("ends a call that outlives its limit with a message saying so, and interrupts it", () =>
    Effect.gen(function*() {
      const stalled = FeeService.calculate(quoteRequest).pipe(HttpTransport.withOptions({ timeout: "1 hour", deadline: "2 hours" }))
      const exit = yield* Effect.exit(FinTest.advanceUntilDone(stalled, { step: "1 second", limit: "1 minute" }))
      expect(Exit.isFailure(exit) && Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message)).toEqual(
        Option.some(
          "effect-fin/test: still running after 1m of TestClock time (advanced 1s at a time); a stall with no timeout, " +
            "or a limit too short for the waits in it"
        )
      )
      expect(yield* attempts).toBe(1)
    }).pipe(provideClient({ [FEE]: () => FinTest.stall })))

  // Its finalizers run on the clock too (a release that calls the API, with its backoff): it keeps moving for them, up
  // to the limit again, so the test ends with the message rather than hanging; one that never ends is left to run,
  // the test's end not waiting for it.
  it.effect("a call cut at its limit has the clock still moving for its finalizers, then the message", () =>
    Effect.gen(function*() {
      let cleaned = false
      const message = (exit: Exit.Exit<unknown, unknown>) =>
        Exit.isFailure(exit) && Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message.split(" (")[0])
      const said = Option.some("effect-fin/test: still running after 1m of TestClock time")
      const cleanup = Effect.zipRight(Effect.sleep("30 seconds"), Effect.sync(() => (cleaned = true)))
      const released = Effect.never.pipe(Effect.ensuring(cleanup))
      const options = { step: "1 second", limit: "1 minute" } as const
      expect(message(yield* Effect.exit(FinTest.advanceUntilDone(released, options)))).toEqual(said)
      expect(cleaned).toBe(true)
      const never = Effect.never.pipe(Effect.ensuring(Effect.never))
      expect(message(yield* Effect.exit(FinTest.advanceUntilDone(never, options)))).toEqual(said)
    }))

  // The call runs in a fiber of its own, whose failure is the caller's: not also logged by Effect as a fiber that
  // "terminated with an unhandled error" into the test's captured logs.
  it.effect("a call that fails under it fails its caller, and nothing is logged of it", () =>
    Effect.gen(function*() {
      const { layer, logs } = FinTest.captureLogs({ minimumLevel: LogLevel.All })
      const failing = FinTest.advanceUntilDone(Effect.delay(Effect.fail("refused"), "1 second"))
      const exit = yield* Effect.exit(Effect.provide(failing, layer))
      expect([exit, logs]).toEqual([Exit.fail("refused"), []])
    }))

  it.effect("gives up once the limit is reached, not a step later; steps 100 ms by default", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(FinTest.advanceUntilDone(Effect.sleep("2 seconds"), { step: "1 second", limit: "1 second" }))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      const start = yield* Clock.currentTimeMillis
      yield* FinTest.advanceUntilDone(Effect.sleep("150 millis"))
      expect((yield* Clock.currentTimeMillis) - start).toBe(200)
    }))

  it.effect("stops at the limit when the step does not divide it, not up to a step past it", () =>
    Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      const options = { step: "300 millis", limit: "1 second" } as const
      const exit = yield* Effect.exit(FinTest.advanceUntilDone(Effect.sleep("1100 millis"), options))
      const moved = (yield* Clock.currentTimeMillis) - start
      expect([Exit.isFailure(exit) && Cause.isDie(exit.cause), moved]).toEqual([true, 1000])
    }))

  it.live("under a live clock (it.live), dies saying it needs the TestClock, not with a TypeError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(FinTest.advanceUntilDone(Effect.sleep("1 millis")))
      expect(Exit.isFailure(exit) && Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message)).toEqual(
        Option.some(
          "effect-fin/test: advanceUntilDone moves the TestClock, and the clock here is not one (an it.live test, or " +
            "Effect.runPromise without TestContext.TestContext?): provide TestContext.TestContext (it.effect does)"
        )
      )
    }))

  it("refuses a step or limit that is not a duration above zero", () => {
    expect(defectOf(FinTest.advanceUntilDone(Effect.void, { step: "0 millis" }))).toEqual(
      illegalArgument("effect-fin/test: advanceUntilDone: step must be greater than zero")
    )
    expect(defectOf(FinTest.advanceUntilDone(Effect.void, { limit: "soon" as "1 second" }))).toEqual(
      illegalArgument(
        "effect-fin/test: advanceUntilDone: limit is not a valid duration: write a number and a unit such as " +
          `"30 seconds" or "500 millis"`
      )
    )
  })
})

describe("FinTest transport failures", () => {
  // As the real clients give them: a program branching on `code` or `reason` is testable without a network.
  it.effect("fail(code) is a TransportError carrying that code; failBody a BodyReadFailed with its code", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(refused).toMatchObject({ _tag: "TransportError", reason: "RequestFailed", code: "ENOTFOUND", attempts: 1 })
      expect(refused.message).toBe("POST /v1/fee-calculation: could not send the request (ENOTFOUND)")
      // A reset may come after the service got the request: the message does not say it was never sent.
      const reset = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(reset).toMatchObject({ _tag: "TransportError", reason: "RequestFailed", code: "ECONNRESET" })
      expect(reset.message).toBe(
        "POST /v1/fee-calculation: no answer (ECONNRESET); the service may have got the request"
      )
      const cut = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(cut).toMatchObject({
        _tag: "TransportError",
        reason: "BodyReadFailed",
        code: "ECONNRESET",
        status: 503,
        attempts: 1
      })
      expect(cut.message).toBe("POST /v1/fee-calculation: could not read the body of the 503 response (ECONNRESET)")
      // Only a 2xx head says the service did the call: a redirect's does not.
      const lost = Effect.flip(FeeService.calculate(quoteRequest))
      const cuts = [yield* lost, yield* lost]
      expect(cuts.map((error) => error.message)).toEqual([
        "POST /v1/fee-calculation: could not read the body of the 302 response (ECONNRESET)",
        "POST /v1/fee-calculation: could not read the body of the 200 response (ECONNRESET); the service did the call"
      ])
      // A description that is no system code is only a description.
      const other = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(other).toMatchObject({ _tag: "TransportError", reason: "RequestFailed" })
      expect(other).not.toHaveProperty("code")
      expect(other.message).toBe(
        "POST /v1/fee-calculation: no answer (Transport); the service may have got the request"
      )
    }).pipe(provideClient({
      [FEE]: FinTest.sequence(
        FinTest.fail("ENOTFOUND"),
        FinTest.fail("ECONNRESET"),
        FinTest.failBody("ECONNRESET", 503),
        FinTest.failBody("ECONNRESET", 302),
        FinTest.failBody("ECONNRESET", 200),
        FinTest.fail("connection refused")
      )
    }, { maxRetries: 0 })))

  it("failBody and stallBody refuse a status that has no body to lose or stall, when made", () => {
    for (const status of [204, 205, 304]) {
      expect(() => FinTest.failBody("ECONNRESET", status)).toThrow(`effect-fin/test: failBody: a ${status} has no body to lose`)
      // It would answer at once, empty, where the test means a body that never ends.
      expect(() => FinTest.stallBody(status)).toThrow(`effect-fin/test: stallBody: a ${status} has no body to stall`)
    }
  })

  // Refreshes (past 59 minutes) go to the handler that issues, whichever route of the test's it is on: one sequence.
  it.effect("the test's own token routes, exact or wildcard, answer issues and refreshes in one sequence", () =>
    Effect.gen(function*() {
      for (const route of ["POST /v1/oauth/*", "POST /v1/*/token", "POST /v1/oauth/token"] as const) {
        const bearers = yield* Effect.gen(function*() {
          yield* FeeService.calculate(quoteRequest)
          yield* TestClock.adjust("61 minutes")
          yield* FeeService.calculate(quoteRequest)
          const http = yield* FinTest.InMemoryHttp
          expect(yield* http.unmatched, route).toEqual([])
          return (yield* http.requests).filter((r) => r.path === "/v1/fee-calculation").map((r) => r.headers.authorization)
        }).pipe(provideClient({ [route]: FinTest.tokenHandler(), [FEE]: () => FinTest.json(200, quoteBody) }))
        expect(bearers, route).toEqual(["Bearer token-1", "Bearer token-2"])
      }
    }))

  it.effect("a route of the test's answering the token paths is not shadowed by the token routes added for it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(error._tag).toBe("AuthenticationError")
      const http = yield* FinTest.InMemoryHttp
      expect((yield* http.requests).map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/oauth/token"])
      // It is the route that answered, not listed as unused.
      expect(yield* http.unused).toEqual([FEE])
    }).pipe(provideClient({
      "POST /v1/oauth/*": () => FinTest.json(401, { message: "Authentication failed" }),
      [FEE]: () => FinTest.json(200, quoteBody)
    }, { maxRetries: 0 })))
})

describe("FinTest replies", () => {
  // A real response has a status from 200 to 599 (fetch's Response refuses others): one outside is the test's mistake,
  // reported where it is written, not as a defect of the call that meets it.
  it("a status no HTTP response can have is refused when the reply is made", () => {
    for (const status of [0, 99, 101, 199, 600, 200.5, Number.NaN]) {
      const message = `effect-fin/test: ${status} is no response status (a whole number from 200 to 599)`
      expect(() => FinTest.json(status, {})).toThrow(message)
      expect(() => FinTest.text(status, "")).toThrow(message)
      expect(() => FinTest.stallBody(status)).toThrow(message)
      expect(() => FinTest.failBody("ECONNRESET", status)).toThrow(message)
    }
  })

  it("a header no response can carry is refused when the reply is made", () => {
    for (const [name, value] of [["x-a", "1\n2"], ["x a", "1"], ["", "1"], ["x-é", "1"]] as const) {
      const message = `effect-fin/test: ${JSON.stringify(name)}: ${JSON.stringify(value)} is no response header`
      expect(() => FinTest.json(200, {}, { [name]: value })).toThrow(message)
      expect(() => FinTest.text(200, "", { [name]: value })).toThrow(message)
      expect(() => FinTest.failBody("ECONNRESET", 429, { [name]: value })).toThrow(message)
    }
    expect(FinTest.json(200, {}, { "Retry-After": " 5 " })).toMatchObject({ headers: { "Retry-After": " 5 " } })
  })

  it.effect("json's content type is replaced by the test's, whatever the case of its name, not joined to it", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const seen = []
      for (let i = 0; i < 3; i++) seen.push((yield* client.get("http://127.0.0.1:4010/v1/page")).headers["content-type"])
      expect(seen).toEqual(["text/html", "text/html", "application/json"])
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      "GET /v1/page": FinTest.sequence(
        FinTest.json(200, {}, { "Content-Type": "text/html" }),
        FinTest.json(200, {}, { "content-type": "text/html" }),
        FinTest.json(200, {}, { "Retry-After": "1" })
      )
    }))))

  it.effect("a reply written by hand with such a status is a defect saying so, when the request meets it", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(FeeService.calculate(quoteRequest))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.pretty(exit.cause)).toContain("effect-fin/test: 700 is no response status (a whole number from 200 to 599)")
      }
    }).pipe(provideClient({
      [FEE]: () => ({ _tag: "Respond", status: 700, body: "{}", headers: {}, stallBody: false })
    }, { maxRetries: 0 })))

  it.effect("a reply written by hand with such a header is a defect saying so, when the request meets it", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(FeeService.calculate(quoteRequest))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.pretty(exit.cause)).toContain(`effect-fin/test: "x-a": "1\\n2" is no response header`)
      }
    }).pipe(provideClient({
      [FEE]: () => ({ _tag: "Respond", status: 200, body: "{}", headers: { "x-a": "1\n2" }, stallBody: false })
    }, { maxRetries: 0 })))

  it.effect("a reply written by hand with a body for a 204 is a defect saying so, when the request meets it", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(HttpTransport.request({ method: "DELETE", path: "/v1/thing", response: Schema.Void }))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.pretty(exit.cause)).toContain("effect-fin/test: reply: a 204 answer has no body")
      }
    }).pipe(provideClient({
      "DELETE /v1/thing": () => ({ _tag: "Respond", status: 204, body: "{}", headers: {}, stallBody: false })
    }, { maxRetries: 0 })))

  it.effect("json with no body answers a 204 with none; for a status with a body it is refused when made", () =>
    Effect.gen(function*() {
      const done = yield* HttpTransport.request({ method: "DELETE", path: "/v1/thing", response: Schema.Void })
      expect(done).toBeUndefined()
      // And the other way round: a body for a status without one would be dropped unseen.
      for (const status of [204, 205, 304]) {
        expect(() => FinTest.json(status, { a: 1 })).toThrow(`effect-fin/test: json: a ${status} answer has no body`)
        expect(() => FinTest.text(status, "x")).toThrow(`effect-fin/test: text: a ${status} answer has no body`)
      }
      for (const body of [undefined, () => 1, Symbol("x")]) {
        expect(() => FinTest.json(200, body)).toThrow("effect-fin/test: json: a 200 answer needs a body JSON can write")
      }
      expect(() => FinTest.json(200, { amount: 1n })).toThrow("effect-fin/test: json: the body cannot be written as JSON")
      expect(() => FinTest.json(200, { toJSON: () => undefined })).toThrow(
        "needs a body JSON can write, not an object whose toJSON gives undefined"
      )
    }).pipe(provideClient({ "DELETE /v1/thing": () => FinTest.json(204, undefined) }, { maxRetries: 0 })))

  it.effect("statuses from 200 to 599 are answered as given", () =>
    Effect.gen(function*() {
      const first = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(first).toMatchObject({ _tag: "ApiError", status: 599 })
      const second = yield* FeeService.calculate(quoteRequest)
      expect(second.source_amount).toBe(quoteBody.data.source_amount)
    }).pipe(provideClient({ [FEE]: FinTest.sequence(FinTest.json(599, {}), FinTest.json(200, quoteBody)) }, { maxRetries: 0 })))
})

describe("FinTest.layerClient routes", () => {
  // Nothing of the build waits on real time (WebCrypto's promises run on a thread pool): a client built in a fiber the
  // test forks (a LayerMap's, on first use) is ready before the test moves the TestClock, however loaded the machine.
  it("builds synchronously, its store key the SHA-256 and HMAC of the client id WebCrypto gives", async () => {
    expect(Exit.isSuccess(Effect.runSyncExit(Effect.scoped(Layer.build(FinTest.layerClient({})))))).toBe(true)
    const utf8 = new TextEncoder()
    const subtle = globalThis.crypto.subtle
    const digest = await subtle.digest("SHA-256", utf8.encode("test-client"))
    const secret = await subtle.importKey("raw", utf8.encode("test-secret"), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign"
    ])
    const mac = await subtle.sign("HMAC", secret, utf8.encode("effect-fin token store|test-client"))
    const key = TokenStore.keyFor("http://127.0.0.1:4010", "test-client", Redacted.make("test-secret"))
    expect(Effect.runSync(key)).toBe(
      `http://127.0.0.1:4010|${Buffer.from(digest).toString("hex")}|${Buffer.from(mac).subarray(0, 16).toString("hex")}`
    )
  })

  // Past the types (untyped code, a cast, routes read from elsewhere): a message saying what to write, not a TypeError
  // from inside the in-memory client.
  it.effect("a handler answering no reply (a Promise, undefined, another tag) is a defect saying what to return", () =>
    Effect.gen(function*() {
      const handlers: ReadonlyArray<readonly [unknown, string]> = [
        [async () => FinTest.json(200, quoteBody), "a Promise"],
        [() => undefined, "undefined"],
        [() => ({ _tag: "respond", status: 200, body: "{}", headers: {} }), `a value tagged "respond"`],
        [() => ({ _tag: "Respond", status: 200, body: "{}" }), `a "Respond" value without a text body and headers`],
        [
          () => ({ _tag: "Respond", status: 200, body: "{}", headers: null }),
          `a "Respond" value without a text body and headers`
        ],
        [() => ({ _tag: "Respond", status: 200, body: quoteBody, headers: {} }), `a "Respond" value without a text body and headers`],
        [() => ({ _tag: "Fail" }), `a "Fail" value without a text description`]
      ]
      for (const [handler, what] of handlers) {
        const exit = yield* Effect.exit(FeeService.calculate(quoteRequest).pipe(
          provideClient({ [FEE]: handler as FinTest.Handler }, { maxRetries: 0 })
        ))
        expect(Exit.isFailure(exit) && Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message)).toEqual(
          Option.some(
            `effect-fin/test: the handler for POST /v1/fee-calculation answered ${what}, which is no reply: return ` +
              "FinTest.json, text, fail(), failBody(), stallBody() or stall, or an Effect of one (not a Promise)"
          )
        )
      }
    }))

  it.effect("a handler whose Effect fails (past its type) is a defect saying what to answer instead", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(FeeService.calculate(quoteRequest).pipe(
        provideClient({ [FEE]: (() => Effect.fail("down")) as unknown as FinTest.Handler }, { maxRetries: 0 })
      ))
      expect(Exit.isFailure(exit) && Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message)).toEqual(
        Option.some(
          `effect-fin/test: the handler for POST /v1/fee-calculation failed with a string: a handler's Effect cannot ` +
            "fail; answer FinTest.fail(...) for a transport failure, or json(status, ...)"
        )
      )
    }))

  // Effect wraps an error that fails in a span in a Proxy, whose inspection chai (vitest's expect) looped on.
  it.effect("with effect-fin/test imported, an app's own error failed in a span shows a diff in a failed check", () =>
    Effect.gen(function*() {
      class QuoteFailed extends Data.TaggedError("QuoteFailed")<{ readonly cause: unknown }> {}
      const failed = yield* Effect.flip(
        FeeService.calculate(quoteRequest).pipe(
          Effect.mapError((cause) => new QuoteFailed({ cause })),
          Effect.withSpan("quote"),
          provideClient({ [FEE]: () => FinTest.json(503, { message: "busy" }) }, { maxRetries: 0 })
        )
      )
      expect(failed).toMatchObject({ _tag: "QuoteFailed", cause: { _tag: "ApiError", status: 503 } })
      expect(() => expect(failed).toMatchObject({ cause: { status: 500 } })).toThrow("expected QuoteFailed")
    }))

  it.effect("a misused route is named as the test wrote it, an Effect said to be one, a single handler refused", () =>
    Effect.gen(function*() {
      const messageOf = (routes: unknown) =>
        Effect.map(
          Effect.exit(FeeService.calculate(quoteRequest).pipe(Effect.provide(FinTest.layerClient(routes as FinTest.Routes)))),
          (exit) => Exit.isFailure(exit) ? Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message) : Option.none()
        )
      expect(yield* messageOf({ "POST /v1/oauth/token": FinTest.json(200, {}) })).toEqual(Option.some(
        `effect-fin/test: the route "POST /v1/oauth/token" is given a reply, not a handler: write a ` +
          "function answering a reply, e.g. () => FinTest.json(200, body) or () => FinTest.stall"
      ))
      expect(yield* messageOf({ [FEE]: Effect.sync(() => FinTest.json(200, quoteBody)) })).toEqual(Option.some(
        `effect-fin/test: the route "POST /v1/fee-calculation" is given an Effect, not a handler: write a ` +
          "function answering a reply, e.g. () => FinTest.json(200, body) or () => FinTest.stall"
      ))
      expect(yield* messageOf(() => FinTest.json(200, quoteBody))).toEqual(Option.some(
        "effect-fin/test: layerClient takes routes ({ \"GET /v1/...\": handler }), not one handler: use " +
          "layerHttpClient for a handler of every request"
      ))
    }))

  it.effect("a route given a reply instead of a handler is refused when the layer is built, saying what to write", () =>
    Effect.gen(function*() {
      const routes = { [FEE]: FinTest.stall as unknown as FinTest.Handler }
      // layerClient's routes, and layerHttpClient's (built with no request sent).
      for (const layer of [FinTest.layerClient(routes), FinTest.layerHttpClient(routes)]) {
        const exit = yield* Effect.exit(Effect.scoped(Layer.build(layer)))
        expect(Exit.isFailure(exit) && Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message)).toEqual(
          Option.some(
            `effect-fin/test: the route "POST /v1/fee-calculation" is given a reply, not a handler: write a ` +
              "function answering a reply, e.g. () => FinTest.json(200, body) or () => FinTest.stall"
          )
        )
      }
      // No routes at all (untyped code): refused so too when built, not a TypeError where the layer is made.
      for (const [routes, said] of [[null, "null"], [undefined, "undefined"], [5, "a number"]] as const) {
        const none = yield* Effect.exit(Effect.scoped(Layer.build(FinTest.layerHttpClient(routes as never))))
        expect(Exit.isFailure(none) && Option.map(Cause.dieOption(none.cause), (e) => (e as Error).message)).toEqual(
          Option.some(`effect-fin/test: routes must be an object of handlers by route, or one handler, not ${said}`)
        )
      }
    }))

  it.effect("a route's method is checked when compiled (tsc); a route no request matches is listed as unmatched", () =>
    Effect.gen(function*() {
      // @ts-expect-error a method in lower case never matches: a compile error
      const lower: FinTest.Routes = { "post /v1/fee-calculation": () => FinTest.json(200, quoteBody) }
      // @ts-expect-error no space between the method and the path
      const glued: FinTest.Routes = { "POST/v1/fee-calculation": () => FinTest.json(200, quoteBody) }
      // So is a count in another syntax (which would count nothing).
      // @ts-expect-error a method in lower case
      const _lowerCount = (http: FinTest.InMemoryHttpService) => http.count("post /v1/fee-calculation")
      // A misspelt path compiles: the request it was meant for is answered 404 and listed as unmatched.
      const misspelt: FinTest.Routes = { "POST /v1/fee-calulation": () => FinTest.json(200, quoteBody) }
      for (const routes of [lower, glued, misspelt]) {
        const [error, unmatched] = yield* Effect.flip(FeeService.calculate(quoteRequest)).pipe(
          Effect.zip(Effect.flatMap(FinTest.InMemoryHttp, (http) => http.unmatched)),
          provideClient(routes)
        )
        expect(error).toMatchObject({ _tag: "ApiError", status: 404 })
        expect(unmatched.map((request) => `${request.method} ${request.path}`)).toEqual([FEE])
      }
    }))

  it.effect("a route with a stray space in its path answers no request, not the path before the space", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const response = yield* client.get("http://127.0.0.1:4010/v1/countries/USA")
      const http = yield* FinTest.InMemoryHttp
      expect([response.status, (yield* http.unmatched).map((r) => r.path)]).toEqual([404, ["/v1/countries/USA"]])
      expect(yield* http.unused).toEqual(["GET /v1/countries/USA /subdivisions"])
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      "GET /v1/countries/USA /subdivisions": () => FinTest.json(200, { data: { subdivisions: [] } })
    }))))

  it.effect("a misspelt route beside a * route that answers in its place is listed as unused (not the added token routes)", () =>
    Effect.gen(function*() {
      const http = yield* FinTest.InMemoryHttp
      const error = yield* Effect.flip(FeeService.calculate(quoteRequest))
      expect(error).toMatchObject({ _tag: "ApiError", status: 422 })
      expect(yield* http.unmatched).toEqual([])
      expect(yield* http.unused).toEqual(["POST /v1/fee-calulation", "GET /v1/countries/*/subdivisions"])
      yield* http.clear
      expect(yield* http.unused).toEqual(["POST /v1/fee-calulation", "POST /v1/*", "GET /v1/countries/*/subdivisions"])
    }).pipe(provideClient({
      "POST /v1/fee-calulation": () => FinTest.json(200, quoteBody),
      "POST /v1/*": () => FinTest.json(422, { message: "not this one" }),
      "GET /v1/countries/*/subdivisions": () => FinTest.json(200, [])
    })))
})

describe("FinTest handlers", () => {
  // FinConfig takes a base URL with a path (a proxy's prefix); routes are still written as the API's paths.
  it.effect("layerClient with a base URL that has a path: routes, counts and recorded paths are the API's paths", () =>
    Effect.gen(function*() {
      const quote = yield* FeeService.calculate(quoteRequest)
      expect(quote.source_amount).toBe(3508679)
      const http = yield* FinTest.InMemoryHttp
      expect(yield* http.count(FEE)).toBe(1)
      expect(yield* http.unmatched).toEqual([])
      const sent = (yield* http.requests).find((r) => r.path === "/v1/fee-calculation")
      expect(sent?.url).toBe("http://127.0.0.1:4010/api/v1/fee-calculation")
    }).pipe(provideClient({ [FEE]: () => FinTest.json(200, quoteBody) }, { baseUrl: "http://127.0.0.1:4010/api/" })))


  it.effect("the most specific route answers, wherever it is listed: an exact path before a * one", () =>
    Effect.gen(function*() {
      const list = SubdivisionService.list("USA").pipe(Effect.map((answer) => answer.subdivisions.map((s) => s.code)))
      expect(yield* list).toEqual(["US-CA"])
    }).pipe(provideClient({
      "GET /v1/countries/*/subdivisions": () => FinTest.json(200, { data: { subdivisions: [] } }),
      "GET /v1/countries/USA/subdivisions": () =>
        FinTest.json(200, { data: { subdivisions: [{ code: "US-CA", name: "California" }] } })
    }, { subdivisionMode: "online" })))


  // A layer made once (at a file's top) and provided in several tests: each build starts its own token count.
  it.effect("layerClient's own token endpoint starts again with each build of the layer", () =>
    Effect.gen(function*() {
      const layer = FinTest.layerClient({ [FEE]: () => FinTest.json(200, quoteBody) })
      const tokenSent = FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)),
        Effect.map((requests) => requests.find((r) => r.path === "/v1/fee-calculation")?.headers["authorization"]),
        Effect.provide(layer)
      )
      expect([yield* tokenSent, yield* tokenSent]).toEqual(["Bearer token-1", "Bearer token-1"])
    }))

  // An app's own services on the same in-memory client: their requests are routed and recorded with the client's.
  it.effect("layerClient provides its in-memory HttpClient too, recorded in the same InMemoryHttp", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const response = yield* client.get("http://127.0.0.1:4010/v1/mine")
      const body = yield* response.json
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect([response.status, body, requests.map((r) => r.path)]).toEqual([200, { mine: true }, ["/v1/mine"]])
    }).pipe(Effect.provide(FinTest.layerClient({ "GET /v1/mine": () => FinTest.json(200, { mine: true }) }))))

  it("tokenHandler refuses lifetimes no token endpoint could send, when made", () => {
    for (const lifetime of ["-5 seconds", Number.NaN, 0, "soon", "3000000 days"] as const) {
      expect(() => FinTest.tokenHandler({ lifetime: lifetime as unknown as FinConfig.DurationOption }), String(lifetime)).toThrow(
        /^effect-fin\/test: tokenHandler: lifetime /
      )
    }
    expect(() => FinTest.tokenHandler({ refreshLifetime: "-1 seconds" })).toThrow(/refreshLifetime must be greater than zero/)
    // Expiries go out in whole seconds: under one, the expiry could read as the issue time, and every call fail.
    expect(() => FinTest.tokenHandler({ lifetime: "500 millis" })).toThrow(
      "effect-fin/test: tokenHandler: lifetime must be at least 1 second (expiries are sent in whole seconds)"
    )
    expect(() => FinTest.tokenHandler({ lifetime: "1 second", refreshLifetime: "30 days" })).not.toThrow()
  })

  it("delayed refuses a duration without its unit (from untyped code), when made", () => {
    const reply = () => FinTest.json(200, {})
    expect(() => FinTest.delayed(100 as unknown as "100 millis", reply)).toThrow(
      illegalArgument(
        `effect-fin/test: delayed: duration must say its unit ("30 seconds", Duration.seconds(30)): a bare number would be read as milliseconds`
      )
    )
    expect(() => FinTest.delayed("-1 seconds", reply)).toThrow("delayed: duration must be zero or more")
    expect(() => FinTest.delayed("0 seconds", reply)).not.toThrow()
  })

  it("sequence with no replies is refused when made, not a 500 the client retries", () => {
    expect(() => FinTest.sequence()).toThrow(
      illegalArgument("effect-fin/test: sequence needs at least one reply")
    )
  })
})

// Pinned by mutation testing: behaviours the tests above left free (mut review).
describe("FinTest pinned behaviours", () => {
  let ran = 0

  it("stallBody and failBody default to a 200, failBody to ECONNRESET, fail to ECONNREFUSED", () => {
    expect(FinTest.stallBody()).toMatchObject({ status: 200, stallBody: true })
    expect(FinTest.failBody()).toMatchObject({ status: 200, failBody: "ECONNRESET" })
    expect(FinTest.fail()).toEqual({ _tag: "Fail", description: "ECONNREFUSED" })
  })

  it.effect("a call given up at the limit, or by its caller, is interrupted at once (its finalizers run)", () =>
    Effect.gen(function*() {
      let interrupted = 0
      const stalled = Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => { interrupted += 1 })))
      yield* Effect.exit(FinTest.advanceUntilDone(stalled, { step: "1 second", limit: "2 seconds" }))
      expect(interrupted).toBe(1)
      // The caller's own timeout: the call run in the background is not left running (a leaked fiber).
      yield* Effect.exit(Effect.timeout(FinTest.advanceUntilDone(stalled, { step: "1 second" }), "3 seconds"))
      expect(interrupted).toBe(2)
    }))

  it.effect("the limit is 10 minutes by default", () =>
    Effect.gen(function*() {
      yield* FinTest.advanceUntilDone(Effect.sleep("9 minutes"), { step: "10 seconds" })
      const exit = yield* Effect.exit(FinTest.advanceUntilDone(Effect.sleep("11 minutes"), { step: "10 seconds" }))
      expect(Exit.isFailure(exit) && Option.map(Cause.dieOption(exit.cause), (e) => (e as Error).message)).toEqual(
        Option.some(
          "effect-fin/test: still running after 10m of TestClock time (advanced 10s at a time); a stall with no " +
            "timeout, or a limit too short for the waits in it"
        )
      )
    }))

  it.effect("a route matches a path of its length only, segments compared with their case", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const statuses = []
      for (const path of ["/v1/things", "/v1/things/1", "/v1/THINGS", "/v1"]) {
        statuses.push((yield* client.get(`http://127.0.0.1:4010${path}`)).status)
      }
      expect(statuses).toEqual([200, 404, 404, 404])
      const http = yield* FinTest.InMemoryHttp
      expect((yield* http.unmatched).map((r) => r.path)).toEqual(["/v1/things/1", "/v1/THINGS", "/v1"])
      // The service's 404, as the real one words it, saying which routes the test gave (a misspelt one would read as
      // the service's refusal); and clear forgets every request, matched or not.
      expect(yield* Effect.flatMap(client.get("http://127.0.0.1:4010/v1"), (r) => r.json)).toEqual({
        message: "Resource not found (effect-fin/test: no route matches GET /v1; routes: GET /v1/things)"
      })
      yield* http.clear
      expect([yield* http.requests, yield* http.unmatched]).toEqual([[], []])
      // With no routes at all, it says so.
      const none = HttpClient.HttpClient.pipe(
        Effect.flatMap((other) => other.get("http://127.0.0.1:4010/v1")),
        Effect.flatMap((r) => r.json)
      )
      expect(yield* Effect.provide(none, FinTest.layerHttpClient({}))).toEqual({
        message: "Resource not found (effect-fin/test: no route matches GET /v1; routes: none)"
      })
    }).pipe(Effect.provide(FinTest.layerHttpClient({ "GET /v1/things": () => FinTest.json(200, []) }))))

  it.effect("json with no body answers a 205 and a 304 with none, as a 204", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      for (const path of ["/v1/reset", "/v1/cached"]) {
        const response = yield* client.get(`http://127.0.0.1:4010${path}`)
        expect([response.status, yield* response.text]).toEqual([path === "/v1/reset" ? 205 : 304, ""])
      }
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      "GET /v1/reset": () => FinTest.json(205, undefined),
      "GET /v1/cached": () => FinTest.json(304, undefined)
    }))))

  it.effect("only the base URL's path as a whole segment is taken off a request's path (/api, not /apix)", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      yield* client.get("http://127.0.0.1:4010/apix/v1/mine")
      const http = yield* FinTest.InMemoryHttp
      expect((yield* http.unmatched).map((r) => r.path)).toEqual(["/apix/v1/mine"])
    }).pipe(Effect.provide(FinTest.layerClient({ "GET /v1/mine": () => FinTest.json(200, {}) }, {
      baseUrl: "http://127.0.0.1:4010/api"
    }))))

  // The added refresh route goes to the handler that issues (the most specific), whatever the order written.
  it.effect("refreshes go to the test's most specific issuing route, not the first one written", () =>
    Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      yield* TestClock.adjust("61 minutes")
      yield* FeeService.calculate(quoteRequest)
      const http = yield* FinTest.InMemoryHttp
      const bearers = (yield* http.requests).filter((r) => r.path === "/v1/fee-calculation")
        .map((r) => r.headers.authorization)
      expect(bearers).toEqual(["Bearer token-1", "Bearer token-2"])
    }).pipe(provideClient({
      // Its own count: a refresh sent to it would give token-1 again.
      "POST /v1/*/token": FinTest.tokenHandler(),
      "POST /v1/oauth/token": FinTest.tokenHandler(),
      [FEE]: () => FinTest.json(200, quoteBody)
    })))

  it.effect("tokenHandler numbers access and refresh tokens together, in the service timestamp format", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(1_500)
      const client = yield* HttpClient.HttpClient
      const issue = Effect.flatMap(client.post("http://127.0.0.1:4010/v1/oauth/token"), (response) => response.json)
      yield* issue
      expect(yield* issue).toEqual({
        data: {
          access_token: "token-2",
          access_token_ttl: "1970-01-01 01:00:01+00",
          refresh_token: "refresh-2",
          refresh_token_ttl: "1970-01-08 00:00:01+00",
          current_time: "1970-01-01 00:00:01+00"
        }
      })
      expect(FinTest.formatServiceTimestamp(Date.UTC(2025, 11, 28, 10, 34, 45, 999))).toBe("2025-12-28 10:34:45+00")
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      "POST /v1/oauth/token": FinTest.tokenHandler({ envelope: "data" })
    }))))

  it("layerFeeService names every problem of its options, not the first", () => {
    const exit = Effect.runSyncExit(Effect.provide(
      FeeService.FeeService,
      // A key with a "/" compiles (README: refused when the layer is built), whatever its case or parts.
      FinTest.layerFeeService({
        rates: { "USD/CAD": -1, "usd/cad": 1, "USD/CAD/EUR": 1 },
        fee: { fixed: 0, percentage: 100 }
      })
    ))
    const message = Exit.isFailure(exit) && exit.cause._tag === "Die" ? String(exit.cause.defect) : "built"
    expect(message).toContain("a finite rate > 0")
    expect(message).toContain("a percentage below 100")
    expect(message).toContain("rates.usd/cad: is unexpected")
    expect(message).toContain("rates.USD/CAD/EUR: is unexpected")
    // No options at all, from untyped code: the same IllegalArgumentException, not a TypeError.
    for (const options of [null, undefined]) {
      const none = Effect.runSyncExit(Effect.provide(FeeService.FeeService, FinTest.layerFeeService(options as never)))
      expect(Exit.isFailure(none) && Option.getOrUndefined(Cause.dieOption(none.cause))).toMatchObject({
        _tag: "IllegalArgumentException",
        message: expect.stringContaining("FinTest.layerFeeService: Expected { readonly rates:")
      })
    }
  })

  it.effect("layerFeeService's valid_till is the lifetime's end cut to the whole second, never rounded up", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(1_600)
      const quote = yield* FeeService.calculate(quoteRequest)
      expect(Option.map(quote.valid_till, (till) => till.epochMillis)).toEqual(Option.some(901_000))
    }).pipe(Effect.provide(FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 } }))))

  it.effect("delayed runs its handler after the wait: a call that gives up first never runs it", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const call = Effect.timeout(client.get("http://127.0.0.1:4010/v1/slow"), "500 millis")
      yield* FinTest.advanceUntilDone(Effect.exit(call))
      expect(ran).toBe(0)
      // A handler answering an Effect (a tokenHandler) is answered with that Effect's reply, after the wait.
      const token = yield* FinTest.advanceUntilDone(
        Effect.flatMap(client.post("http://127.0.0.1:4010/v1/oauth/token"), (response) => response.json)
      )
      expect([token, yield* Clock.currentTimeMillis]).toMatchObject([{ access_token: "token-1" }, 1_000])
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      "GET /v1/slow": FinTest.delayed("1 second", () => {
        ran += 1
        return FinTest.json(200, {})
      }),
      "POST /v1/oauth/token": FinTest.delayed("500 millis", FinTest.tokenHandler())
    }))))

  it.effect("a request body that is no JSON is recorded as its text", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      yield* client.execute(HttpClientRequest.post("http://127.0.0.1:4010/v1/notes").pipe(
        HttpClientRequest.bodyText("not {json")
      ))
      const http = yield* FinTest.InMemoryHttp
      expect((yield* http.requests).map((r) => r.body)).toEqual(["not {json"])
    }).pipe(Effect.provide(FinTest.layerHttpClient({ "POST /v1/notes": () => FinTest.json(201, {}) }))))

  it.effect("a streamed body is recorded read whole, a FormData or raw one as given; a failed stream fails it", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const send = (body: HttpBody.HttpBody) =>
        client.execute(HttpClientRequest.post("http://127.0.0.1:4010/v1/notes").pipe(HttpClientRequest.setBody(body)))
      const utf8 = new TextEncoder()
      yield* send(HttpBody.stream(Stream.make(utf8.encode("{\"a\":"), utf8.encode("1}")), "application/json"))
      const form = new FormData()
      form.append("file", "contents")
      yield* send(HttpBody.formData(form))
      const blob = new Blob(["raw"])
      yield* send(HttpBody.raw(blob))
      const failed = yield* Effect.flip(send(HttpBody.stream(Stream.fail("disk gone"), "text/plain")))
      const http = yield* FinTest.InMemoryHttp
      const [streamed, formed, raw] = (yield* http.requests).map((r) => r.body)
      expect(streamed).toEqual({ a: 1 })
      expect(formed instanceof FormData && formed.get("file")).toBe("contents")
      expect(raw).toBe(blob)
      expect(failed).toMatchObject({ _tag: "RequestError", reason: "Encode", cause: "disk gone" })
    }).pipe(Effect.provide(FinTest.layerHttpClient({ "POST /v1/notes": () => FinTest.json(201, {}) }))))

  it.effect("layerHttpClient given one handler answers every request with it, none unmatched", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const response = yield* client.get("http://127.0.0.1:4010/v1/anything/at/all")
      const http = yield* FinTest.InMemoryHttp
      expect([response.status, yield* http.unmatched, yield* http.unused]).toEqual([202, [], []])
    }).pipe(Effect.provide(FinTest.layerHttpClient(() => FinTest.json(202, {})))))

  it.effect("advanceUntilDone moves the clock only as far as the waits in the effect need, in whole steps", () =>
    Effect.gen(function*() {
      expect(yield* FinTest.advanceUntilDone(Effect.succeed(1))).toBe(1)
      const none = yield* Clock.currentTimeMillis
      yield* FinTest.advanceUntilDone(Effect.sleep("250 millis"))
      const partStep = yield* Clock.currentTimeMillis
      yield* FinTest.advanceUntilDone(Effect.zipRight(Effect.yieldNow(), Effect.sleep("100 millis")))
      expect([none, partStep, yield* Clock.currentTimeMillis]).toEqual([0, 300, 400])
    }))

  it.effect("tokenHandler answers at the top level by default, as the newer documented response", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const body = yield* Effect.flatMap(client.post("http://127.0.0.1:4010/v1/oauth/token"), (r) => r.json)
      expect(body).toMatchObject({ access_token: "token-1", refresh_token: "refresh-1" })
      expect(body).not.toHaveProperty("data")
    }).pipe(Effect.provide(FinTest.layerHttpClient({ "POST /v1/oauth/token": FinTest.tokenHandler() }))))

  it.effect("a request without a body is recorded with body undefined", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      yield* client.get("http://127.0.0.1:4010/v1/countries/USA/subdivisions")
      const http = yield* FinTest.InMemoryHttp
      const [request] = yield* http.requests
      expect(request).toMatchObject({ method: "GET", path: "/v1/countries/USA/subdivisions" })
      expect(request?.body).toBeUndefined()
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      "GET /v1/countries/*/subdivisions": () => FinTest.json(200, {})
    }))))

  it.effect("fail's cause carries a code for a system error code only, for an app's own HttpClient user", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const cause = (path: string) =>
        Effect.map(Effect.flip(client.get(`http://127.0.0.1:4010${path}`)), (error) => error.cause)
      expect(yield* cause("/v1/reset")).toMatchObject({ code: "ECONNRESET" })
      // OpenSSL 3.2's alerts, as Node 22 names them, hold a "/".
      expect(yield* cause("/v1/alert")).toMatchObject({ code: "ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE" })
      expect(yield* cause("/v1/hangup")).not.toHaveProperty("code")
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      "GET /v1/reset": () => FinTest.fail("ECONNRESET"),
      "GET /v1/alert": () => FinTest.fail("ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE"),
      "GET /v1/hangup": () => FinTest.fail("socket hang up")
    }))))
})

describe("FinTest.captureLogs", () => {
  it.effect("keeps every entry, debug and trace ones too, with a text to search for the secret and the tokens", () =>
    Effect.gen(function*() {
      const { layer, logs } = FinTest.captureLogs()
      const program = Effect.zipRight(
        FinTest.advanceUntilDone(FeeService.calculate(quoteRequest)),
        Effect.zipRight(
          Effect.logTrace("traced"),
          Effect.logWarning("checked", 10n).pipe(Effect.annotateLogs("note", "kept"))
        )
      )
      const routes = { [FEE]: FinTest.sequence(FinTest.json(503, {}), FinTest.json(200, quoteBody)) }
      yield* program.pipe(provideClient(routes), Effect.provide(layer))
      // The retry's line is logged at debug level, which Effect's default minimum (Info) would have dropped.
      const retry = logs.find((log) => log.level === "DEBUG" && String(log.message).startsWith("effect-fin: retrying"))
      expect(retry?.text).toMatch(/^DEBUG "effect-fin: retrying POST \/v1\/fee-calculation after ApiError/)
      // Trace, the lowest level, too.
      expect(logs.at(-2)).toMatchObject({ level: "TRACE", message: "traced" })
      // Several values logged at once are one message; a BigInt is written as its digits.
      expect(logs.at(-1)).toEqual({
        level: "WARN",
        message: ["checked", 10n],
        annotations: { note: "kept" },
        spans: [],
        cause: "",
        text: `WARN ["checked","10"] {"note":"kept"}`
      })
      expect(logs.filter((log) => log.text.includes("test-secret") || log.text.includes("token-"))).toEqual([])
    }))

  it.effect("keeps only entries at or above minimumLevel, and a cause as Cause.pretty renders it", () =>
    Effect.gen(function*() {
      const { layer, logs } = FinTest.captureLogs({ minimumLevel: LogLevel.Warning })
      const cyclic: { self?: unknown } = {}
      cyclic.self = cyclic
      yield* Effect.logDebug("dropped").pipe(
        Effect.zipRight(Effect.logError("failed", Cause.fail("boom"))),
        // A value JSON cannot write is shown as String gives it, not an error thrown from inside the logger.
        Effect.zipRight(Effect.logWarning(cyclic)),
        Effect.provide(layer)
      )
      expect(logs.map((log) => [log.level, log.message])).toEqual([["ERROR", "failed"], ["WARN", cyclic]])
      expect(logs[1]!.text).toBe("WARN [object Object] {}")
      expect(logs[0]!.cause).toBe(Cause.pretty(Cause.fail("boom")))
      expect(logs[0]!.text).toBe(`ERROR "failed" {} ${Cause.pretty(Cause.fail("boom"))}`)
    }))

  it.effect("writes into text what JSON alone would lose: an Error's message and cause, a Map's entries", () =>
    Effect.gen(function*() {
      const { layer, logs } = FinTest.captureLogs()
      const nested = new Error("outer", { cause: new Error("in-cause-1") })
      // An Error's own fields too (a `code`, a client's `config` with its headers), as Effect's loggers print them.
      const failed = Object.assign(new Error("in-message", { cause: "in-cause-2" }), { token: "in-field" })
      yield* Effect.logError(failed, new Map([["key", "in-map"]])).pipe(
        Effect.zipRight(Effect.logError("died", Cause.die(nested))),
        Effect.provide(layer)
      )
      expect(logs[0]!.text).toBe(
        `ERROR [{"token":"in-field","name":"Error","message":"in-message","cause":"in-cause-2"},[["key","in-map"]]] {}`
      )
      // The cause as Effect's own loggers render it, an Error's cause included.
      expect(logs[1]!.cause).toContain("in-cause-1")
      expect(logs[1]!.text).toContain("in-cause-1")
      // A symbol or function as String gives it (JSON drops them from an object), a Set's values, undefined as itself.
      yield* Effect.logInfo(undefined).pipe(
        Effect.annotateLogs({ symbol: Symbol("in-symbol"), set: new Set(["in-set"]) }),
        Effect.provide(layer)
      )
      expect(logs[2]!.text).toBe(`INFO undefined {"symbol":"Symbol(in-symbol)","set":["in-set"]}`)
      // An Error one of its own fields points back to (a request holding its error): written, not String's text.
      const cyclic: Error & { request?: unknown } = new Error("in-cyclic")
      cyclic.request = { url: "/v1/x", error: cyclic }
      yield* Effect.logError({ token: "in-entry", error: cyclic }).pipe(Effect.provide(layer))
      expect(logs[3]!.text).toBe(
        `ERROR {"token":"in-entry","error":{"request":{"url":"/v1/x","error":"[Circular]"},"name":"Error",` +
          `"message":"in-cyclic"}} {}`
      )
    }))

  it.effect("keeps the log spans' labels, innermost first, in text too; clear() empties logs", () =>
    Effect.gen(function*() {
      const { clear, layer, logs } = FinTest.captureLogs()
      yield* Effect.logInfo("inside").pipe(
        Effect.withLogSpan("inner"),
        Effect.withLogSpan("outer"),
        Effect.provide(layer)
      )
      expect(logs.map((log) => [log.spans, log.text])).toEqual([
        [["inner", "outer"], `INFO "inside" {} ["inner","outer"]`]
      ])
      clear()
      expect(logs).toEqual([])
      yield* Effect.logInfo("after").pipe(Effect.provide(layer))
      expect(logs.map((log) => log.message)).toEqual(["after"])
    }))
})
