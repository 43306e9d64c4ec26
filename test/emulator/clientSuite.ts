/**
 * The real client (`FinClient.layer`) against the emulator over loopback, run once per platform `HttpClient` but
 * node:http's `NodeHttpClient.layer` (client-fetch.test.ts: FetchHttpClient; client-undici.test.ts:
 * NodeHttpClient.layerUndici; test/UndiciHttpClient.test.ts: UndiciHttpClient.layer). Real time throughout: short
 * timeouts, short token lifetimes.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Http from "node:http"
import * as Zlib from "node:zlib"
import type { AddressInfo } from "node:net"
import { Emulator } from "../../src/emulator/index.js"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import type * as FinConfig from "../../src/FinConfig.js"
import type { FinError } from "../../src/FinError.js"
import * as FinTest from "../../src/FinTest.js"
import * as HttpTransport from "../../src/HttpTransport.js"
import * as SubdivisionService from "../../src/SubdivisionService.js"
import * as Subdivisions from "../../src/Subdivisions.js"
import { acceptPayment, closedPort, quoteBody, refusedTls } from "../support.js"

const beneficiaryId = "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"
const usdToCad = { source_currency: "USD", source_amount: 100, destination_currency: "CAD" } as const

/** A fresh emulator and a fresh client on it for one test. */
const withClient = (
  httpClient: Layer.Layer<HttpClient.HttpClient>,
  emulatorOptions: Emulator.Options = {},
  clientOptions: Partial<FinConfig.Options> = {}
) =>
<A, E>(
  body: (emulator: Emulator.Service) => Effect.Effect<A, E, FinClient.Services | HttpClient.HttpClient>
): Effect.Effect<A, unknown> =>
  Effect.scoped(Effect.gen(function*() {
    const emulator = yield* Emulator.make(emulatorOptions)
    const client = FinClient.layer({
      ...emulator.credentials,
      baseUrl: emulator.url,
      // Long enough that no attempt times out on a loaded machine (a retry would change the counts the tests check);
      // the tests of timeouts shorten it for their call (timesOut).
      timeout: "10 seconds",
      tokenTimeout: "10 seconds",
      subdivisionMode: "online",
      ...clientOptions
    })
    return yield* body(emulator).pipe(Effect.provide(client), Effect.provide(httpClient))
  }))

const quote = FeeService.calculate(usdToCad)

const failureOf = <A>(effect: Effect.Effect<A, FinError, FinClient.Services>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) throw new Error("expected a failure")
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    if (failure === undefined) throw new Error(`expected a typed failure, got ${exit.cause._tag}`)
    return failure
  })

const noRetries = HttpTransport.withOptions({ maxRetries: 0 })

/** One attempt, with a timeout short enough for a stalled or slow answer to run into it. */
const timesOut = HttpTransport.withOptions({ maxRetries: 0, timeout: "300 millis" })

/**
 * A loopback server whose token route answers and whose fee route answers with `fee`; `closed` waits for the client to
 * close the fee request's connection.
 */
const feeServer = (fee: (response: Http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly closed: Effect.Effect<void>; readonly server: Http.Server }>((resume) => {
      let closedBy: () => void = () => undefined
      const closed = new Promise<void>((resolve) => (closedBy = resolve))
      const server = Http.createServer((request, response) => {
        if (request.url === "/v1/oauth/token") {
          const now = Date.now()
          response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
            access_token: "fee-server-token",
            access_token_ttl: FinTest.formatServiceTimestamp(now + 3_600_000),
            current_time: FinTest.formatServiceTimestamp(now)
          }))
          return
        }
        response.on("close", () => closedBy())
        fee(response)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, closed: Effect.promise(() => closed), server }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

// A 200 body that never ends (until the client closes the connection).
const endlessBody = (response: Http.ServerResponse) => {
  response.writeHead(200, { "content-type": "application/json" })
  const chunk = " ".repeat(64 * 1024)
  const write = () => {
    while (!response.destroyed && response.write(chunk));
  }
  response.on("drain", write)
  response.write("{")
  write()
}

// A valid quote padded with 16 MiB of JSON whitespace, gzipped to about 16 KiB: its Content-Length is the compressed
// size. Read whole, it would decode. Made when first sent.
let gzippedBomb: Buffer | undefined
const compressedBody = (response: Http.ServerResponse) => {
  gzippedBomb ??= Zlib.gzipSync(JSON.stringify(quoteBody).replace("{", `{${" ".repeat(16 * 1024 * 1024)}`))
  response.writeHead(200, {
    "content-type": "application/json",
    "content-encoding": "gzip",
    "content-length": String(gzippedBomb.length)
  })
  response.end(gzippedBomb)
}

/** A quote through a client on `server` with a long timeout and no retries (or `maxRetries`). */
export const quoteFrom = (
  server: { readonly url: string },
  httpClient: Layer.Layer<HttpClient.HttpClient>,
  maxRetries = 0
) =>
  failureOf(quote).pipe(
    Effect.provide(FinClient.layer({
      clientId: "client",
      clientSecret: Redacted.make("secret"),
      baseUrl: server.url,
      timeout: "1 minute",
      maxRetries
    })),
    Effect.provide(httpClient)
  )

export const clientSuite = (name: string, httpClient: Layer.Layer<HttpClient.HttpClient>) => {
  const run = (emulatorOptions?: Emulator.Options, clientOptions?: Partial<FinConfig.Options>) =>
    withClient(httpClient, emulatorOptions, clientOptions)

  describe(`FinClient against the emulator (${name})`, () => {
    describe("happy paths", () => {
      it.live("gets a token and quotes from the source amount", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            const result = yield* quote
            expect(result.source_currency).toBe("USD")
            expect(result.destination_currency).toBe("CAD")
            expect(result.exchange_rate).toBe(1.45)
            // Default fee 1 + 1 % of 100 = 2; (100 - 2) x 1.45.
            expect(result.fee).toMatchObject({ fixed: 1, percentage: 1, total: 2, is_fee_applied: true })
            expect(result.source_amount).toBe(100)
            expect(result.destination_amount).toBe(142.1)
            expect(Option.isSome(result.valid_till)).toBe(true)
            const counters = yield* emulator.counters
            expect(counters.tokensIssued).toBe(1)
            expect(counters.activeTokens).toBe(1)
            expect(counters.requests["POST /v1/oauth/token"]).toBe(1)
            expect(counters.requests["POST /v1/fee-calculation"]).toBe(1)
            expect(counters.statuses).toEqual({ "200": 2 })
          })
        ))

      it.live("quotes from the destination amount, reusing the token", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* quote
            const result = yield* FeeService.calculate({
              source_currency: "USD",
              destination_amount: 142.1,
              destination_currency: "CAD"
            })
            expect(result.destination_amount).toBe(142.1)
            expect(result.source_amount).toBe(100)
            expect(result.fee.total).toBe(2)
            expect((yield* emulator.counters).tokensIssued).toBe(1)
          })
        ))

      it.live("applies a beneficiary's developer fee and currency", () =>
        run()(() =>
          Effect.gen(function*() {
            const result = yield* FeeService.calculate({ beneficiary_id: beneficiaryId, source_amount: 100 })
            expect(result.source_currency).toBe("USD")
            expect(result.destination_currency).toBe("CAD")
            // Base 1 + 1 % plus developer 0.5 + 0.5 %: 1.5 + 1.5 % of 100 = 3; (100 - 3) x 1.45.
            expect(result.fee).toMatchObject({ fixed: 1.5, percentage: 1.5, total: 3 })
            expect(result.destination_amount).toBe(140.65)
          })
        ))

      it.live("an unknown beneficiary is a 404 ApiError, not retried", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            const error = yield* failureOf(
              FeeService.calculate({ beneficiary_id: "00000000-0000-4000-8000-000000000000", source_amount: 1 })
            )
            expect(error).toMatchObject({
              _tag: "ApiError",
              status: 404,
              message: "The service answered 404 on POST /v1/fee-calculation: Resource not found"
            })
            expect((yield* emulator.counters).requests["POST /v1/fee-calculation"]).toBe(1)
          })
        ))

      it.live("lists subdivisions from the API, a country without any, and cross-checks them", () =>
        run()(() =>
          Effect.gen(function*() {
            const usa = yield* SubdivisionService.list("USA")
            expect(usa.source).toBe("api")
            expect(usa.subdivisions.map((s) => s.code)).toContain("US-CA")
            expect(usa.subdivisions.find((s) => s.code === "US-CA")?.name).toBe("California")
            const none = Subdivisions.countriesWithout()[0]!
            const empty = yield* SubdivisionService.list(none)
            expect(empty).toEqual({ country: none, subdivisions: [], source: "api" })
            const diff = yield* SubdivisionService.crossCheck("FRA")
            expect(diff).toMatchObject({ missing: [], extra: [], renamed: [] })
          })
        ))

      it.live("a list set in the options is served instead of the snapshot's: a cross-check sees how it differs", () =>
        run({
          subdivisions: {
            FRA: [
              ...Subdivisions.forCountry("FRA").pipe(
                Either.getOrThrow,
                (entries) => entries.filter((s) => s.code !== "FR-75C" && s.code !== "FR-IDF")
              ),
              { code: "FR-ZZZ", name: "Nowhere" },
              { code: "DE-BY", name: "Bayern" }
            ].map((s) => s.code === "FR-13" ? { code: s.code, name: "Bouches du Rhône" } : { code: s.code, name: s.name }),
            DEU: []
          }
        })(() =>
          Effect.gen(function*() {
            const diff = yield* SubdivisionService.crossCheck("FRA")
            expect(diff).toMatchObject({
              missing: [{ code: "FR-ZZZ", name: "Nowhere" }],
              extra: [{ code: "FR-75C" }, { code: "FR-IDF" }],
              renamed: [{ code: "FR-13", apiName: "Bouches du Rhône", snapshotName: "Bouches-du-Rhône" }]
            })
            expect(diff.invalid.map((i) => i.code)).toEqual(["DE-BY"])
            // Other countries stay the snapshot's; one set to none is served as none.
            expect((yield* SubdivisionService.list("USA")).subdivisions.length).toBe(57)
            expect((yield* SubdivisionService.list("DEU")).subdivisions).toEqual([])
          })
        ))

      it.live("an unknown country is a 404 ApiError", () =>
        run()(() =>
          Effect.gen(function*() {
            // The client refuses unknown codes before sending, so the path is sent through the transport.
            const error = yield* failureOf(HttpTransport.request({
              method: "GET",
              path: "/v1/countries/XYZ/subdivisions",
              response: SubdivisionService.SubdivisionsResponse
            }))
            expect(error).toMatchObject({
              _tag: "ApiError",
              status: 404,
              message: "The service answered 404 on GET /v1/countries/XYZ/subdivisions: Resource not found"
            })
          })
        ))

      it.live("reads the data-wrapped token envelope", () =>
        run({ tokenEnvelope: "data" })(() => Effect.map(quote, (q) => expect(q.destination_amount).toBe(142.1))))
    })

    describe("faults", () => {
      it.live("a 500 is retried, then the call succeeds", () =>
        run({ faults: [{ route: "POST /v1/fee-calculation", kind: "status", status: 500, times: 1 }] })((emulator) =>
          Effect.gen(function*() {
            expect((yield* quote).destination_amount).toBe(142.1)
            const counters = yield* emulator.counters
            expect(counters.requests["POST /v1/fee-calculation"]).toBe(2)
            expect(counters.faults.status).toBe(1)
            expect(counters.statuses["500"]).toBe(1)
          })
        ))

      it.live("503s with retry-after-ms are retried (the wait itself: HttpTransport.test.ts, on the TestClock)", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* emulator.setFaults([
              { route: "POST /v1/fee-calculation", kind: "status", status: 503, retryAfterMs: 20, times: 2 }
            ])
            expect((yield* quote).destination_amount).toBe(142.1)
            const counters = yield* emulator.counters
            expect(counters.requests["POST /v1/fee-calculation"]).toBe(3)
            expect(counters.statuses["503"]).toBe(2)
          })
        ))

      it.live("a 429 with Retry-After on the token call is retried", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* emulator.setFaults([{ kind: "status", status: 429, retryAfter: 1, times: 1 }])
            // The rule is on every route: the token call takes it and is retried.
            expect((yield* quote).destination_amount).toBe(142.1)
            const counters = yield* emulator.counters
            expect(counters.requests["POST /v1/oauth/token"]).toBe(2)
            expect(counters.statuses["429"]).toBe(1)
          })
        ))

      it.live("a 429 after the last retry is a RateLimitError with the wait asked for", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* FeeService.calculate(usdToCad)
            yield* emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "status", status: 429, retryAfter: 3 }])
            const error = yield* failureOf(noRetries(quote))
            expect(error._tag).toBe("RateLimitError")
            expect(error._tag === "RateLimitError" && error.retryAfter && Duration.toMillis(error.retryAfter)).toBe(3000)
          })
        ))

      it.live("400 and 422 are not retried", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "status", status: 400, times: 1 }])
            expect(yield* failureOf(quote)).toMatchObject({
              _tag: "ApiError",
              status: 400,
              message: "The service answered 400 on POST /v1/fee-calculation: Malformed request body"
            })
            yield* emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "status", status: 422, times: 1 }])
            const error = yield* failureOf(quote)
            expect(error).toMatchObject({ _tag: "ApiError", status: 422 })
            expect(error.message).toMatch(/^The service answered 422 on POST \/v1\/fee-calculation: Validation failed \(request: /)
            expect(error._tag === "ApiError" && error.fieldErrors?.[0]?.field).toBe("request")
            expect((yield* emulator.counters).requests["POST /v1/fee-calculation"]).toBe(2)
          })
        ))

      it.live("a reset connection is a TransportError, and is retried", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* quote
            yield* emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "reset" }])
            const reset = yield* failureOf(noRetries(quote))
            expect(reset).toMatchObject({ _tag: "TransportError", reason: "RequestFailed" })
            // The service got the request before the reset: the message must not say it was never sent.
            expect(reset.message).toMatch(/^POST \/v1\/fee-calculation: no answer \((ECONNRESET|UND_ERR_SOCKET)\); /)
            expect(reset.message).toMatch(/; the service may have got the request$/)
            yield* emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "reset", times: 1 }])
            expect((yield* quote).destination_amount).toBe(142.1)
            expect((yield* emulator.counters).faults.reset).toBe(2)
          })
        ))

      it.live("a stalled response is a TimeoutError", () =>
        run({ faults: [{ route: "POST /v1/fee-calculation", kind: "stall" }] })((emulator) =>
          Effect.gen(function*() {
            const error = yield* failureOf(timesOut(quote))
            expect(error).toMatchObject({ _tag: "TimeoutError", kind: "attempt" })
            expect((yield* emulator.counters).faults.stall).toBe(1)
          })
        ))

      it.live("a stalled body is a TimeoutError", () =>
        run({ faults: [{ route: "POST /v1/fee-calculation", kind: "stallBody" }] })((emulator) =>
          Effect.gen(function*() {
            expect(yield* failureOf(timesOut(quote))).toMatchObject({ _tag: "TimeoutError", kind: "attempt" })
            expect((yield* emulator.counters).statuses["200"]).toBe(2)
          })
        ))

      it.live("a malformed body is a ResponseDecodeError, not retried", () =>
        run({ faults: [{ route: "POST /v1/fee-calculation", kind: "malformed" }] })((emulator) =>
          Effect.gen(function*() {
            expect(yield* failureOf(quote)).toMatchObject({ _tag: "ResponseDecodeError", status: 200 })
            expect((yield* emulator.counters).requests["POST /v1/fee-calculation"]).toBe(1)
          })
        ))

      it.live("a truncated body is a TransportError or a TimeoutError", () =>
        run({ faults: [{ route: "POST /v1/fee-calculation", kind: "truncated" }] })(() =>
          Effect.gen(function*() {
            const error = yield* failureOf(timesOut(quote))
            expect(["TransportError", "TimeoutError"]).toContain(error._tag)
          })
        ))

      it.live("a 204 (no body at all) is a success for Schema.Void, sent once though safe", () =>
        Effect.scoped(Effect.gen(function*() {
          let received = 0
          const server = yield* feeServer((response) => {
            received++
            response.writeHead(204).end()
          })
          const answer = yield* acceptPayment.pipe(
            Effect.provide(FinClient.layer({ clientId: "client", clientSecret: Redacted.make("secret"), baseUrl: server.url })),
            Effect.provide(httpClient)
          )
          expect(answer).toBeUndefined()
          expect(received).toBe(1)
        })))

      it.live("a connection reset mid-body is a TransportError naming the code (ECONNRESET, or undici's)", () =>
        Effect.scoped(Effect.gen(function*() {
          const server = yield* feeServer((response) => {
            response.writeHead(200, {
              "content-type": "application/json",
              "content-length": "1000",
              "x-request-id": "req-cut-1"
            })
            response.write(JSON.stringify(quoteBody).slice(0, 40), () => response.socket?.resetAndDestroy())
          })
          const error = yield* quoteFrom(server, httpClient)
          // The head had arrived: its status and request id are kept.
          expect(error).toMatchObject({ _tag: "TransportError", reason: "BodyReadFailed", status: 200, requestId: "req-cut-1" })
          // Whether the reset or the closed socket is seen first depends on timing.
          expect(error.message).toMatch(
            new RegExp(
              "^POST /v1/fee-calculation: could not read the body of the 200 response \\((ECONNRESET|UND_ERR_SOCKET)\\)" +
                "; the service did the call$"
            )
          )
        })))

      it.live("a refused connection is a TransportError naming the system's code (ECONNREFUSED)", () =>
        Effect.gen(function*() {
          const port = yield* closedPort
          const error = yield* quoteFrom({ url: `http://127.0.0.1:${port}` }, httpClient)
          expect(error._tag === "TransportError" && [error.reason, error.code]).toEqual(["RequestFailed", "ECONNREFUSED"])
          expect(error.message).toBe("POST /v1/oauth/token: could not send the request (ECONNREFUSED)")
        }))

      it.live("a TLS handshake refused (a self-signed certificate, TLS to a plain HTTP port) is tried once", () =>
        Effect.scoped(Effect.gen(function*() {
          const tls = yield* refusedTls
          const refusals = [
            ["selfSigned", "DEPTH_ZERO_SELF_SIGNED_CERT"],
            ["plain", "ERR_SSL_WRONG_VERSION_NUMBER"]
          ] as const
          for (const [server, code] of refusals) {
            expect(yield* quoteFrom({ url: tls[server] }, httpClient, 3)).toMatchObject({
              _tag: "TransportError",
              reason: "RequestFailed",
              code,
              operation: "POST /v1/oauth/token",
              attempts: 1
            })
          }
          // One connection each, though the client retries: waiting cannot mend a certificate or a protocol.
          expect(tls.connections()).toEqual({ selfSigned: 1, plain: 1 })
        })))

      it.live("a body that never ends is cut off at 4 MiB: a ResponseDecodeError, and the connection closed", () =>
        Effect.scoped(Effect.gen(function*() {
          const server = yield* feeServer(endlessBody)
          expect(yield* quoteFrom(server, httpClient)).toMatchObject({ _tag: "ResponseDecodeError", status: 200 })
          yield* server.closed
        })))

      it.live("a compressed body is not trusted by its Content-Length: never read whole, a ResponseDecodeError", () =>
        Effect.scoped(Effect.gen(function*() {
          const server = yield* feeServer(compressedBody)
          // A client that decompresses (fetch) is cut off at 4 MiB; one that does not (undici) reads gzip, not JSON.
          expect(yield* quoteFrom(server, httpClient)).toMatchObject({ _tag: "ResponseDecodeError", status: 200 })
        })))

      it.live("added latency beyond the timeout is a TimeoutError; below it, a success", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* quote
            yield* emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "latency", millis: 600, times: 1 }])
            expect(yield* failureOf(timesOut(quote))).toMatchObject({ _tag: "TimeoutError" })
            yield* emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "latency", millis: 50 }])
            expect((yield* quote).destination_amount).toBe(142.1)
          })
        ))

      it.live("wrong credentials are an AuthenticationError, not retried", () =>
        withClient(httpClient, {}, { clientSecret: "wrong" })((emulator) =>
          Effect.gen(function*() {
            expect(yield* failureOf(quote)).toMatchObject({ _tag: "AuthenticationError", status: 401 })
            expect((yield* emulator.counters).requests["POST /v1/oauth/token"]).toBe(1)
          })
        ))
    })

    describe("tokens", () => {
      it.live("an access token near expiry is refreshed with the refresh token", () =>
        run({ accessTokenLifetime: "1 second" })((emulator) =>
          Effect.gen(function*() {
            yield* quote
            yield* Effect.sleep("1100 millis")
            yield* quote
            const counters = yield* emulator.counters
            expect(counters.tokensIssued).toBe(1)
            expect(counters.tokensRefreshed).toBe(1)
            expect(counters.statuses["401"]).toBeUndefined()
          })
        ))

      it.live("once the refresh token has expired too, a new token is issued", () =>
        run({ accessTokenLifetime: "1 second", refreshTokenLifetime: "2 seconds" })((emulator) =>
          Effect.gen(function*() {
            yield* quote
            yield* Effect.sleep("2100 millis")
            yield* quote
            const counters = yield* emulator.counters
            expect(counters.tokensIssued).toBe(2)
            expect(counters.tokensRefreshed).toBe(0)
          })
        ))

      it.live("a token expired on the server: 401, one refresh, success", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* quote
            expect(yield* emulator.expireTokens()).toBe(1)
            expect((yield* quote).destination_amount).toBe(142.1)
            const counters = yield* emulator.counters
            expect(counters.statuses["401"]).toBe(1)
            expect(counters.tokensRefreshed).toBe(1)
            expect(counters.requests["POST /v1/fee-calculation"]).toBe(3)
          })
        ))

      it.live("revoked tokens: 401, the refresh is refused too, a new token, success", () =>
        run()((emulator) =>
          Effect.gen(function*() {
            yield* quote
            expect(yield* emulator.revokeTokens).toBe(1)
            expect((yield* quote).destination_amount).toBe(142.1)
            const counters = yield* emulator.counters
            expect(counters.requests["POST /v1/oauth/refresh-token"]).toBe(1)
            expect(counters.statuses["401"]).toBe(2)
            expect(counters.tokensIssued).toBe(2)
            expect(counters.activeTokens).toBe(1)
          })
        ))

      it.live("with revokeOnIssue, a second client's token revokes the first's, which recovers", () =>
        run({ revokeOnIssue: true })((emulator) =>
          Effect.gen(function*() {
            yield* quote
            const other = yield* FinClient.make({
              ...emulator.credentials,
              baseUrl: emulator.url,
              timeout: "10 seconds"
            })
            yield* other.fees.calculate(usdToCad)
            expect((yield* quote).destination_amount).toBe(142.1)
            const counters = yield* emulator.counters
            expect(counters.tokensIssued).toBe(3)
            expect(counters.activeTokens).toBe(1)
          }).pipe(Effect.scoped)
        ))
    })
  })
}
