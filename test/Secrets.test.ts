import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Inspectable from "effect/Inspectable"
import * as Logger from "effect/Logger"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as Util from "node:util"
import * as FeeService from "../src/FeeService.js"
import * as FinClient from "../src/FinClient.js"
import * as FinTest from "../src/FinTest.js"
import * as TokenProvider from "../src/TokenProvider.js"
import { advance, provideClient, quoteBody, quoteRequest, recordingTracer } from "./support.js"

const SECRET = "cs_live_9f3b1c77e2a94d0f"
let issued = 0
const freshToken = () => `at_${(++issued).toString().padStart(4, "0")}_7c1e44b0d9`
const REFRESH = "rt_55aa01c3e9"

// The token endpoint hands out distinctive tokens; the fee endpoint walks through every failure class.
const routes = (): FinTest.Routes => {
  const fees = FinTest.sequence(
    FinTest.json(401, { message: "Authentication failed" }),
    FinTest.json(503, { message: "unavailable" }, { "retry-after": "1" }),
    FinTest.text(200, `{"data": {"broken`),
    FinTest.json(429, { message: "slow down" }),
    FinTest.fail("reset"),
    FinTest.stallBody(200),
    // A debugging page of the service's quoting the session's refresh token, which this call did not send.
    FinTest.json(422, { message: `Invalid for session ${REFRESH}`, errors: [{ source_amount: "bad" }] }),
    FinTest.json(200, quoteBody)
  )
  const token = () =>
    FinTest.json(200, {
      access_token: freshToken(),
      access_token_ttl: "2099-01-01 00:00:00+00",
      refresh_token: REFRESH,
      refresh_token_ttl: "2099-01-01 00:00:00+00",
      current_time: "2026-01-01 00:00:00+00"
    })
  return { "POST /v1/oauth/token": token, "POST /v1/oauth/refresh-token": token, "POST /v1/fee-calculation": fees }
}

describe("secrets", () => {
  it.effect("the client secret and tokens never reach logs, spans, metrics or errors", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      // Everything a logger could print, the cause in full included.
      const logger = Logger.make(({ annotations, cause, message, spans }) => {
        lines.push(Inspectable.format({ message, annotations: [...annotations], spans: [...spans] }))
        if (!Cause.isEmpty(cause)) lines.push(Cause.pretty(cause, { renderErrorCause: true }))
      })
      const { layer: tracing, spans } = yield* recordingTracer
      const errors: Array<unknown> = []
      const scenario = Effect.gen(function*() {
        for (let i = 0; i < 8; i++) {
          const fiber = yield* Effect.fork(Effect.exit(FeeService.calculate(quoteRequest)))
          for (let step = 0; step < 40; step++) yield* advance(500)
          const exit = yield* Fiber.join(fiber)
          if (Exit.isFailure(exit)) errors.push(exit.cause)
        }
        // A 401 on the token call itself.
        const provider = yield* TokenProvider.TokenProvider
        const token = yield* provider.get
        yield* provider.invalidate(token)
      }).pipe(
        provideClient(routes(), { clientSecret: SECRET, timeout: "1 second", maxRetries: 1 }),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.All),
        Effect.provide(tracing)
      )
      yield* scenario

      // The sequence ends three calls in ResponseDecodeError, TransportError and ApiError, the rest succeed.
      expect(errors).toHaveLength(3)
      expect(lines.some((l) => l.includes("retrying POST /v1/fee-calculation"))).toBe(true)
      expect(lines.some((l) => l.includes("issuing an access token"))).toBe(true)
      expect(lines.some((l) => l.includes("got 401"))).toBe(true)

      const recorded = yield* spans
      expect(recorded.some((s) => s.name === "effect-fin.fee-calculation")).toBe(true)
      // Attributes, events (the native span keeps its events in `events`) and how it ended: a tracer that exports the
      // exit (the value a span's effect produced) must not find a request or response holding a credential in it.
      const spanText = recorded.map((s) =>
        `${s.name} ${Inspectable.format(Object.fromEntries(s.attributes))} ${s.status._tag === "Ended" ? Inspectable.format(s.status.exit) : "not ended"} ${
          Inspectable.format(
            ((s as { readonly events?: ReadonlyArray<readonly [string, bigint, unknown]> }).events ?? []).map((
              [name, , attributes]
            ) => [name, attributes])
          )
        }`
      )
      const metricText = Inspectable.format(Metric.unsafeSnapshot().map((m) => [m.metricKey.name, m.metricKey.tags]))
      const errorText = errors.flatMap((cause) => [String(cause), Inspectable.format(cause), JSON.stringify(cause)])
      const everything = [...lines, ...spanText, metricText, ...errorText].join("\n")
      expect(everything).toContain("fee-calculation")
      expect(everything).not.toContain(SECRET)
      expect(everything).not.toContain(REFRESH)
      expect(everything).toContain("Invalid for session <redacted>")
      expect(everything).not.toMatch(/at_\d{4}_7c1e44b0d9/)
      expect(everything).not.toContain("7c1e44b0d9")
      expect(issued).toBeGreaterThan(1)
    }))
  // A request hook on the client a user gives effect-fin (an app-wide logging wrapper), however it prints a request,
  // prints a token call's body, which holds the client secret or the refresh token, as its length only; the API calls'
  // bodies as they are. (The bearer header is the platform's to redact: it does so in Effect's loggers only.)
  it.effect("a request hook of the user's client prints a token call's body as its length only", () => {
    const printed: Array<string> = []
    const print = (request: HttpClientRequest.HttpClientRequest) =>
      Effect.sync(() =>
        printed.push(
          `${request.method} ${request.url}`,
          Inspectable.format(request),
          JSON.stringify(request),
          String(request),
          Util.inspect(request, { depth: 10 }),
          Inspectable.format(request.body)
        )
      )
    return Effect.gen(function*() {
      const client = yield* FinClient.make({ clientId: "app", clientSecret: SECRET, baseUrl: "http://127.0.0.1:1" })
        .pipe(Effect.provide(Layer.effect(
          HttpClient.HttpClient,
          Effect.map(HttpClient.HttpClient, (http) => HttpClient.tapRequest(http, print))
        )))
      yield* client.fees.calculate(quoteRequest)
      const http = yield* FinTest.InMemoryHttp
      // Issued, refused once (a 401), refreshed: both token calls went through the hook.
      expect(yield* http.count("POST /v1/oauth/token")).toBe(1)
      expect(yield* http.count("POST /v1/oauth/refresh-token")).toBe(1)
      const text = printed.join("\n")
      expect(text).toContain("/v1/oauth/refresh-token")
      expect(text).not.toContain(SECRET)
      expect(text).not.toContain(REFRESH)
      expect(text).toContain("Uint8Array(")
      // Sent as ever: the recorded bodies are the JSON the service documents.
      const requests = yield* http.requests
      expect(requests.find((r) => r.path === "/v1/oauth/refresh-token")?.body).toEqual({ refresh_token: REFRESH })
      expect(requests.find((r) => r.path === "/v1/oauth/token")?.headers["content-type"]).toBe("application/json")
      expect(text).toContain("source_currency")
    }).pipe(
      Effect.scoped,
      Effect.provide(FinTest.layerHttpClient({
        ...routes(),
        "POST /v1/fee-calculation": FinTest.sequence(
          FinTest.json(401, { message: "expired" }),
          FinTest.json(200, quoteBody)
        )
      }))
    )
  })
})
