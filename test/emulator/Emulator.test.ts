/**
 * The emulator itself over loopback, with plain `fetch`: documented shapes and errors, bearer checks, fee
 * validation, admin endpoints, counters, the webhook sender, `serve`, and a clean shutdown.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as LogLevel from "effect/LogLevel"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/TestClock"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import { Emulator } from "../../src/emulator/index.js"
import * as FinClient from "../../src/FinClient.js"
import * as App from "../../src/emulator/internal/app.js"
import * as TokenProvider from "../../src/TokenProvider.js"
import * as Webhooks from "../../src/Webhooks.js"
import {
  captureLogs,
  eventually,
  forkSleeping,
  recordingTracer,
  untilSleepsMoreThan,
  withWallClockSetBack
} from "../support.js"

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: unknown
}

/** One request with `fetch`; `body` is sent as JSON unless it is a string (sent as is). */
const call = (
  url: string,
  method: string,
  path: string,
  options: { readonly body?: unknown; readonly token?: string } = {}
): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
    const body = options.body === undefined
      ? undefined
      : typeof options.body === "string"
      ? options.body
      : JSON.stringify(options.body)
    const response = await fetch(url + path, { method, headers, ...(body === undefined ? {} : { body }) })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, text, json }
  })

const tokenOf = (emulator: Emulator.Service) =>
  Effect.map(
    call(emulator.url, "POST", "/v1/oauth/token", {
      body: { client_id: emulator.credentials.clientId, client_secret: emulator.credentials.clientSecret }
    }),
    (answer) => answer.json as Record<string, string>
  )

const fee = (emulator: Emulator.Service, token: string, body: unknown) =>
  call(emulator.url, "POST", "/v1/fee-calculation", { token, body })

const refused = (port: number) =>
  Effect.async<boolean>((resume) => {
    const socket = Net.connect({ port, host: "127.0.0.1" })
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(false))
    })
    socket.once("error", () => resume(Effect.succeed(true)))
  })

const SERVICE_TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+00$/

describe("Emulator", () => {
  // A layer built beside it that fails interrupts its build, maybe while its server is starting to listen: the
  // platform closes only a server that listens, so one that began to listen then was left listening, holding the
  // process (a test runner that never exits).
  it.live("a build cut short while its server starts leaves no server listening", () =>
    Effect.gen(function*() {
      const servers = () => process.getActiveResourcesInfo().filter((kind) => kind === "TCPServerWrap").length
      const turn = Effect.promise(() => new Promise<void>((resume) => setImmediate(resume)))
      const turns = Effect.zipRight(Effect.repeatN(turn, 19), Effect.sleep("20 millis"))
      // A server a test before this one closed is counted until the loop's next turn (its close is told before that).
      yield* turns
      const before = servers()
      for (let i = 0; i < 20; i++) {
        const exit = yield* Effect.exit(Effect.scoped(Layer.build(Layer.merge(Emulator.layer(), Layer.fail("beside")))))
        expect(Exit.isFailure(exit)).toBe(true)
      }
      // A listen left running ends within a few turns of the event loop (a loopback address's lookup, then the bind).
      yield* turns
      expect(servers()).toBe(before)
    }))

  describe("tokens", () => {
    it.scopedLive("issues tokens with the service's timestamps, top level by default", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const token = yield* tokenOf(emulator)
        expect(Object.keys(token).sort()).toEqual([
          "access_token",
          "access_token_ttl",
          "current_time",
          "refresh_token",
          "refresh_token_ttl"
        ])
        expect(token["access_token_ttl"]).toMatch(SERVICE_TIMESTAMP)
        expect(token["refresh_token_ttl"]).toMatch(SERVICE_TIMESTAMP)
        expect(token["current_time"]).toMatch(SERVICE_TIMESTAMP)
        const now = TokenProvider.parseTimestamp(token["current_time"]!)!
        expect(TokenProvider.parseTimestamp(token["access_token_ttl"]!)! - now).toBe(86_400_000)
        expect(TokenProvider.parseTimestamp(token["refresh_token_ttl"]!)! - now).toBe(7 * 86_400_000)
        // Shaped as the documented tokens (JWTs, "eyJhbGciOiJIUzI1NiIs..."): header, claims, a 32-byte signature.
        for (const [name, typ, lifetime] of [["access_token", "access", 86_400], ["refresh_token", "refresh", 7 * 86_400]] as const) {
          const [header, claims, signature] = token[name]!.split(".")
          expect(token[name]!.startsWith("eyJhbGciOiJIUzI1NiIs")).toBe(true)
          expect(JSON.parse(Buffer.from(header!, "base64url").toString())).toEqual({ alg: "HS256", typ: "JWT" })
          const payload = JSON.parse(Buffer.from(claims!, "base64url").toString())
          expect(payload).toMatchObject({ iss: "effect-fin-emulator", typ })
          expect(payload.exp - payload.iat).toBe(lifetime)
          expect(Buffer.from(signature!, "base64url")).toHaveLength(32)
        }
        expect(token["access_token"]).not.toBe(token["refresh_token"])
        // Listed for tests that look for leaks, kept across a reset.
        yield* emulator.reset
        expect(yield* emulator.issuedTokens).toEqual([token["access_token"], token["refresh_token"]])
      }))

    // README: `issuedTokens` holds "every token handed out, the last 10,000" (a test that looks for leaks in its logs
    // relies on it): 5,001 pairs, the first and the last alone.
    it.scopedLive("issuedTokens keeps the last 10,000 tokens handed out, dropping the oldest first", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const first = yield* tokenOf(emulator)
        yield* Effect.forEach(Array.from({ length: 4_999 }), () => tokenOf(emulator), { concurrency: 16 })
        const last = yield* tokenOf(emulator)
        const issued = yield* emulator.issuedTokens
        expect(issued).toHaveLength(10_000)
        expect(issued).not.toContain(first["access_token"])
        expect(issued.slice(-2)).toEqual([last["access_token"], last["refresh_token"]])
        // 5,001 loopback token requests: seconds on an idle machine, about a minute on a loaded 2-CPU one. The limit
        // only stops a hang, as test/cli.test.ts's does.
      }), 180_000)

    it.scopedLive("wraps in data when asked; checks credentials and fields", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ tokenEnvelope: "data", clientId: "id", clientSecret: "secret" })
        const good = yield* call(emulator.url, "POST", "/v1/oauth/token", {
          body: { client_id: "id", client_secret: "secret" }
        })
        expect(good.status).toBe(200)
        expect(Object.keys(good.json as object)).toEqual(["data"])
        const bad = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: { client_id: "id", client_secret: "x" } })
        expect(bad.status).toBe(401)
        expect(bad.json).toEqual({ message: "Authentication failed" })
        const missing = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: { client_id: "id" } })
        expect(missing.status).toBe(422)
        expect(missing.json).toEqual({
          message: "Validation failed",
          errors: [{ client_secret: "The client_secret field is required." }]
        })
        // Not JSON at all: the customer routes' documented 400, borrowed (service-facts 5 documents only 401 and 422
        // for the token routes); JSON but not an object: a field error.
        const notJson = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: "{nope" })
        expect([notJson.status, notJson.json]).toEqual([400, { status: 400, message: "Malformed request body" }])
        expect((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: "[]" })).status).toBe(422)
        const counters = yield* emulator.counters
        expect(counters.tokensIssued).toBe(1)
        expect(counters.statuses).toEqual({ "200": 1, "400": 1, "401": 1, "422": 2 })
      }))

    it.scopedLive("refreshes with a valid refresh token only", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const token = yield* tokenOf(emulator)
        const refreshed = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
          body: { refresh_token: token["refresh_token"] }
        })
        expect(refreshed.status).toBe(200)
        const fresh = refreshed.json as Record<string, string>
        expect(fresh["access_token"]).not.toBe(token["access_token"])
        // A refresh token stays usable until it expires, even after use (as the README says: the service's
        // documentation says neither way).
        const again = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
          body: { refresh_token: token["refresh_token"] }
        })
        expect(again.status).toBe(200)
        const unknown = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", { body: { refresh_token: "nope" } })
        expect(unknown.status).toBe(401)
        expect(unknown.json).toEqual({ message: "Authentication failed" })
        expect((yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", { body: {} })).status).toBe(422)
        yield* emulator.expireTokens({ refresh: true })
        const expired = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
          body: { refresh_token: fresh["refresh_token"] }
        })
        expect(expired.status).toBe(401)
        expect((yield* emulator.counters).tokensRefreshed).toBe(2)
      }))

    it.scopedLive("each token does its own job: a refresh token is no bearer, an access token refreshes nothing", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const token = yield* tokenOf(emulator)
        const path = "/v1/countries/USA/subdivisions"
        const asBearer = yield* call(emulator.url, "GET", path, { token: token["refresh_token"]! })
        expect([asBearer.status, asBearer.json]).toEqual([401, { message: "Authentication failed" }])
        const asRefresh = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
          body: { refresh_token: token["access_token"] }
        })
        expect([asRefresh.status, asRefresh.json]).toEqual([401, { message: "Authentication failed" }])
        expect((yield* call(emulator.url, "GET", path, { token: token["access_token"]! })).status).toBe(200)
      }))

    it.scopedLive("an empty client_id, client_secret or refresh_token is a missing field (422), not a 401", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const empty = yield* call(emulator.url, "POST", "/v1/oauth/token", {
          body: { client_id: "", client_secret: "" }
        })
        expect([empty.status, empty.json]).toEqual([422, {
          message: "Validation failed",
          errors: [
            { client_id: "The client_id field is required." },
            { client_secret: "The client_secret field is required." }
          ]
        }])
        const refresh = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", { body: { refresh_token: "" } })
        expect([refresh.status, refresh.json]).toEqual([422, {
          message: "Validation failed",
          errors: [{ refresh_token: "The refresh_token field is required." }]
        }])
      }))

    it.scopedLive("takes the bearer scheme in any case (RFC 9110), not a header with more after the token", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const token = (yield* tokenOf(emulator))["access_token"]!
        const status = (authorization: string) =>
          Effect.promise(() =>
            fetch(`${emulator.url}/v1/countries/USA/subdivisions`, { headers: { authorization } }).then((r) => r.status)
          )
        expect(yield* status(`bearer ${token}`)).toBe(200)
        expect(yield* status(`BEARER  ${token} `)).toBe(200)
        expect(yield* status(`Bearer ${token} extra`)).toBe(401)
        expect(yield* status(`Bearer ${token},Basic abc`)).toBe(401)
      }))

    it.scopedLive("answers 401 for a missing, unknown, revoked or expired bearer token", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const path = "/v1/countries/USA/subdivisions"
        const expectRefused = (answer: Answer) => {
          expect(answer.status).toBe(401)
          expect(answer.json).toEqual({ message: "Authentication failed" })
        }
        expectRefused(yield* call(emulator.url, "GET", path))
        expectRefused(yield* call(emulator.url, "GET", path, { token: "unknown" }))
        const first = (yield* tokenOf(emulator))["access_token"]!
        expect((yield* call(emulator.url, "GET", path, { token: first })).status).toBe(200)
        expect(yield* emulator.revokeTokens).toBe(1)
        expectRefused(yield* call(emulator.url, "GET", path, { token: first }))
        const second = (yield* tokenOf(emulator))["access_token"]!
        expect(yield* emulator.expireTokens()).toBe(1)
        expectRefused(yield* call(emulator.url, "GET", path, { token: second }))
        expect((yield* emulator.counters).activeTokens).toBe(0)
      }))

    it.scopedLive("with revokeOnIssue, a new token revokes the previous ones", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ revokeOnIssue: true })
        const first = (yield* tokenOf(emulator))["access_token"]!
        const second = (yield* tokenOf(emulator))["access_token"]!
        const path = "/v1/countries/FRA/subdivisions"
        expect((yield* call(emulator.url, "GET", path, { token: first })).status).toBe(401)
        expect((yield* call(emulator.url, "GET", path, { token: second })).status).toBe(200)
        expect((yield* emulator.counters).activeTokens).toBe(1)
      }))

    it.scopedLive("revoking (revokeTokens, or revokeOnIssue) ends the refresh tokens too", () =>
      Effect.gen(function*() {
        const refresh = (emulator: Emulator.Service, token: Record<string, string>) =>
          Effect.map(
            call(emulator.url, "POST", "/v1/oauth/refresh-token", { body: { refresh_token: token["refresh_token"] } }),
            (answer) => answer.status
          )
        const emulator = yield* Emulator.make()
        const revoked = yield* tokenOf(emulator)
        yield* emulator.revokeTokens
        expect(yield* refresh(emulator, revoked)).toBe(401)
        const onIssue = yield* Emulator.make({ revokeOnIssue: true })
        const first = yield* tokenOf(onIssue)
        const second = yield* tokenOf(onIssue)
        expect(yield* refresh(onIssue, first)).toBe(401)
        expect(yield* refresh(onIssue, second)).toBe(200)
      }))

    it.scoped("expiry and valid_till follow Effect's Clock (driven by the TestClock here)", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ accessTokenLifetime: "1 hour", quoteLifetime: "10 minutes" })
        const token = yield* tokenOf(emulator)
        // The TestClock starts at the epoch.
        expect(token["current_time"]).toBe("1970-01-01 00:00:00+00")
        expect(token["access_token_ttl"]).toBe("1970-01-01 01:00:00+00")
        const quote = yield* fee(emulator, token["access_token"]!, {
          source_currency: "USD",
          source_amount: 10,
          destination_currency: "EUR"
        })
        expect((quote.json as { data: { valid_till: string } }).data.valid_till).toBe("1970-01-01T00:10:00Z")
        yield* TestClock.adjust("59 minutes")
        expect((yield* emulator.counters).activeTokens).toBe(1)
        yield* TestClock.adjust("1 minute")
        expect((yield* emulator.counters).activeTokens).toBe(0)
        const late = yield* fee(emulator, token["access_token"]!, {
          source_currency: "USD",
          source_amount: 10,
          destination_currency: "EUR"
        })
        expect(late.status).toBe(401)
      }))

    // The older documented answer had no valid_till (a client reads such a quote as never valid).
    it.scoped("validTill false: quotes as the older documented example, without valid_till", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ validTill: false })
        const quote = yield* fee(emulator, (yield* tokenOf(emulator))["access_token"]!, {
          source_currency: "USD",
          source_amount: 10,
          destination_currency: "EUR"
        })
        expect(Object.keys((quote.json as { data: object }).data)).toEqual([
          "source_currency", "destination_currency", "source_amount", "exchange_rate", "destination_amount", "fee"
        ])
      }))
  })

  describe("request bodies", () => {
    // 2 MiB of JSON whitespace: over the emulator's 1 MiB limit; read whole, bodies this size (and 600 MB ones) would
    // be held in memory, and a large enough one would end the process.
    const large = " ".repeat(2 * 1024 * 1024)

    it.scopedLive("a body over 1 MiB is answered 413, with or without Content-Length, and the emulator goes on", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const declared = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: large })
        expect([declared.status, declared.json]).toEqual([413, { message: "Request body too large" }])
        // Closed, not kept alive: Node's server would otherwise read the rest of the body, however long, to reuse it.
        expect(declared.headers.get("connection")).toBe("close")
        const streamed = yield* Effect.promise(() =>
          fetch(`${emulator.url}/v1/oauth/token`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: new Blob([large]).stream(),
            duplex: "half"
          } as RequestInit)
        )
        expect([streamed.status, streamed.headers.get("connection")]).toEqual([413, "close"])
        expect((yield* tokenOf(emulator))["access_token"]).toBeTypeOf("string")
      }))
  })

  describe("request bodies (limits)", () => {
    it.scopedLive("a body of exactly 1 MiB is read, and one of blanks only is an empty body, not malformed JSON", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const credentials = JSON.stringify({
          client_id: emulator.credentials.clientId,
          client_secret: emulator.credentials.clientSecret
        })
        const exact = credentials + " ".repeat(1024 * 1024 - credentials.length)
        const answer = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: exact })
        expect(answer.status).toBe(200)
        const blanks = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: " \n\t " })
        expect([blanks.status, blanks.json]).toEqual([422, {
          message: "The request body is not a JSON object",
          errors: [{ body: "must be a JSON object" }]
        }])
        expect((yield* call(emulator.url, "POST", "/__emulator/reset", { body: "\n" })).status).toBe(200)
      }))
  })

  describe("fee calculation", () => {
    const check = (body: unknown, status: number, errors?: ReadonlyArray<Record<string, string>>) =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const answer = yield* fee(emulator, (yield* tokenOf(emulator))["access_token"]!, body)
        expect(answer.status).toBe(status)
        if (errors !== undefined) expect((answer.json as { errors: unknown }).errors).toEqual(errors)
        return answer
      })

    it.scopedLive("answers the documented shape, with valid_till in ISO 8601 with Z", () =>
      Effect.gen(function*() {
        const answer = yield* check({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" }, 200)
        const data = (answer.json as { data: Record<string, unknown> }).data
        expect(Object.keys(data)).toEqual([
          "source_currency",
          "destination_currency",
          "source_amount",
          "exchange_rate",
          "destination_amount",
          "valid_till",
          "fee"
        ])
        expect(data["valid_till"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
        expect(data["fee"]).toEqual({ fixed: 1, percentage: 1, total: 2, is_fee_applied: true })
      }))

    it.scopedLive("uses the configured rate table and fee, inverse pairs included", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ rates: { "EUR/USD": 2 }, fee: { fixed: 0, percentage: 0 } })
        const token = (yield* tokenOf(emulator))["access_token"]!
        const answer = yield* fee(emulator, token, {
          source_currency: "USD",
          source_amount: 10,
          destination_currency: "EUR"
        })
        expect((answer.json as { data: unknown }).data).toMatchObject({
          exchange_rate: 0.5,
          destination_amount: 5,
          fee: { total: 0, is_fee_applied: false }
        })
      }))

    it.scopedLive("400 on a body that is not JSON (the customer routes' Malformed request body, borrowed), 422 on one not an object", () =>
      Effect.gen(function*() {
        const answer = yield* check("{\"source_amount\": ", 400)
        expect(answer.json).toEqual({ status: 400, message: "Malformed request body" })
        const list = yield* check([1, 2], 422, [{ body: "must be a JSON object" }])
        expect(list.json).toMatchObject({ message: "The request body is not a JSON object" })
      }))

    it.scopedLive("422 on an amount past Number.MAX_SAFE_INTEGER (1e308 would round to Infinity, sent as null)", () =>
      Effect.gen(function*() {
        for (const field of ["source_amount", "destination_amount"]) {
          yield* check({ source_currency: "USD", [field]: 1e308, destination_currency: "CAD" }, 422, [
            { [field]: `The ${field} must be a number greater than 0 and at most ${Number.MAX_SAFE_INTEGER}.` }
          ])
        }
      }))

    it.scopedLive("422 on an amount with more than 8 decimal places, as FeeService.validate refuses it", () =>
      Effect.gen(function*() {
        for (const field of ["source_amount", "destination_amount"]) {
          yield* check({ source_currency: "USD", [field]: 0.1 + 0.2, destination_currency: "CAD" }, 422, [
            { [field]: `The ${field} must have at most 8 decimal places.` }
          ])
        }
      }))

    it.scopedLive("422 on an amount whose decimal places a number cannot hold, as FeeService.validate refuses it", () =>
      Effect.gen(function*() {
        for (const field of ["source_amount", "destination_amount"]) {
          yield* check({ source_currency: "USD", [field]: 123456789.12345678, destination_currency: "CAD" }, 422, [
            { [field]: `The ${field} must have no more decimal places than its size leaves a number.` }
          ])
        }
      }))

    it.scopedLive("422 on both amounts or neither", () =>
      Effect.gen(function*() {
        yield* check({ source_currency: "USD", source_amount: 1, destination_amount: 2, destination_currency: "CAD" }, 422, [
          { destination_amount: "Send either source_amount or destination_amount, not both." }
        ])
        yield* check({ source_currency: "USD", destination_currency: "CAD" }, 422, [
          { source_amount: "The source_amount or destination_amount field is required." }
        ])
      }))

    it.scopedLive("422 on non-positive or non-numeric amounts", () =>
      Effect.gen(function*() {
        const rule = { source_amount: `The source_amount must be a number greater than 0 and at most ${Number.MAX_SAFE_INTEGER}.` }
        yield* check({ source_currency: "USD", source_amount: 0, destination_currency: "CAD" }, 422, [rule])
        yield* check({ source_currency: "USD", source_amount: -5, destination_currency: "CAD" }, 422, [rule])
        yield* check({ source_currency: "USD", source_amount: "5", destination_currency: "CAD" }, 422, [rule])
      }))

    it.scopedLive("422 on bad currency codes, a bad UUID, and missing targets", () =>
      Effect.gen(function*() {
        yield* check({ source_currency: "usd", source_amount: 1, destination_currency: "CA" }, 422, [
          { source_currency: "The source_currency must be a currency code of three upper-case letters." },
          { destination_currency: "The destination_currency must be a currency code of three upper-case letters." }
        ])
        yield* check({ source_amount: 1, beneficiary_id: "not-a-uuid" }, 422, [
          { beneficiary_id: "The beneficiary_id must be a valid UUID." }
        ])
        yield* check({ source_amount: 1 }, 422, [
          { destination_currency: "The destination_currency or beneficiary_id field is required." },
          { source_currency: "The source_currency field is required unless beneficiary_id is given." }
        ])
      }))

    it.scopedLive("a currency code is exactly three letters; the amount limits themselves are accepted", () =>
      Effect.gen(function*() {
        yield* check({ source_currency: "USDX", source_amount: 1, destination_currency: " CAD" }, 422, [
          { source_currency: "The source_currency must be a currency code of three upper-case letters." },
          { destination_currency: "The destination_currency must be a currency code of three upper-case letters." }
        ])
        // At the limits, validation lets the amount through: MAX_SAFE_INTEGER to the quote (which refuses it, for the
        // cents), 8 decimal places to the rounding to the cent.
        const largest = { source_currency: "USD", source_amount: Number.MAX_SAFE_INTEGER, destination_currency: "CAD" }
        yield* check(largest, 422, [
          { source_amount: "The quote's amounts pass 70368744177663.99, past which a number does not hold every cent." }
        ])
        const before = Date.now()
        const eight = yield* check({ ...largest, source_amount: 2.12345678 }, 200)
        const after = Date.now()
        expect(eight.json).toMatchObject({ data: { source_amount: 2.12 } })
        // A beneficiary configured in upper case matches a request in lower case (UUIDs ignore case).
        const upper = "0B6A3F1E-7C2D-4E5F-9A8B-1C2D3E4F5A6B"
        const known = yield* Emulator.make({ beneficiaries: { [upper]: { currency: "EUR" } } })
        const named = yield* fee(known, (yield* tokenOf(known))["access_token"]!, {
          source_amount: 10,
          beneficiary_id: upper.toLowerCase()
        })
        expect([named.status, named.json]).toMatchObject([200, { data: { destination_currency: "EUR" } }])
        // valid_till: 15 minutes on from when the quote was made (between `before` and `after`), cut to whole seconds.
        const validTill = Date.parse((eight.json as { data: { valid_till: string } }).data.valid_till)
        expect(validTill % 1000).toBe(0)
        expect(validTill).toBeGreaterThanOrEqual(Math.floor((before + 15 * 60_000) / 1000) * 1000)
        expect(validTill).toBeLessThanOrEqual(after + 15 * 60_000)
      }))

    it.scopedLive("422 on an unsupported pair, 404 on an unknown beneficiary", () =>
      Effect.gen(function*() {
        const pair = yield* check({ source_currency: "USD", source_amount: 1, destination_currency: "XYZ" }, 422, [
          { destination_currency: "No rate for USD/XYZ." }
        ])
        expect(pair.json).toMatchObject({ message: "Unsupported currency pair USD/XYZ" })
        const unknown = yield* check({ source_amount: 1, beneficiary_id: "00000000-0000-4000-8000-000000000000" }, 404)
        expect(unknown.json).toEqual({ message: "Resource not found" })
        // The fee route's documented request examples, sent as documented, are quoted (their beneficiary is known).
        const documented = "ceb7e6c9-ef2a-41c2-8459-38d67ec3c655"
        const send = { source_currency: "USD", source_amount: 3508679, destination_currency: "CAD" }
        yield* check({ ...send, beneficiary_id: documented }, 200)
        const receive = { source_currency: "USD", destination_amount: 59456, destination_currency: "CAD" }
        yield* check({ ...receive, beneficiary_id: documented }, 200)
      }))
  })

  describe("subdivisions and other paths", () => {
    it.scopedLive("serves the snapshot as {data:{subdivisions:[{name, code}]}}; unknown countries are 404", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const token = (yield* tokenOf(emulator))["access_token"]!
        const usa = yield* call(emulator.url, "GET", "/v1/countries/USA/subdivisions", { token })
        const list = (usa.json as { data: { subdivisions: Array<{ name: string; code: string }> } }).data.subdivisions
        expect(list).toContainEqual({ name: "California", code: "US-CA" })
        expect(Object.keys(list[0]!)).toEqual(["name", "code"])
        const ata = yield* call(emulator.url, "GET", "/v1/countries/ATA/subdivisions", { token })
        expect(ata.json).toEqual({ data: { subdivisions: [] } })
        for (const code of ["XYZ", "usa", "US"]) {
          const answer = yield* call(emulator.url, "GET", `/v1/countries/${code}/subdivisions`, { token })
          expect(answer.status).toBe(404)
          expect(answer.json).toEqual({ message: "Resource not found" })
        }
        const other = yield* call(emulator.url, "GET", "/v1/nothing-here", { token })
        expect(other.status).toBe(404)
        expect(other.json).toEqual({ message: "Resource not found" })
        const counters = yield* emulator.counters
        expect(counters.requests["GET /v1/countries/{country_code}/subdivisions"]).toBe(5)
        expect(counters.requests.unmatched).toBe(1)
        expect(counters.statuses).toEqual({ "200": 3, "404": 4 })
      }))
  })

  describe("subdivisions (odd country codes)", () => {
    it.scopedLive("a country named as an object's property (toString, constructor) is a 404, not a 500", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ subdivisions: { FRA: [] } })
        const token = (yield* tokenOf(emulator))["access_token"]!
        for (const code of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
          const answer = yield* call(emulator.url, "GET", `/v1/countries/${code}/subdivisions`, { token })
          expect([code, answer.status, answer.json]).toEqual([code, 404, { message: "Resource not found" }])
        }
      }))
  })

  describe("faults", () => {
    it.scopedLive("a status fault sends the documented body and the Retry-After headers", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({
          faults: [{ route: "POST /v1/oauth/token", kind: "status", status: 503, retryAfter: 2, retryAfterMs: 1500 }]
        })
        const answer = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })
        expect(answer.status).toBe(503)
        expect(answer.headers.get("retry-after")).toBe("2")
        expect(answer.headers.get("retry-after-ms")).toBe("1500")
        expect(answer.json).toEqual({ message: "Service Unavailable" })
        yield* emulator.setFaults([{ kind: "status", status: 500, body: { error: { code: "X", message: "custom" } } }])
        const custom = yield* call(emulator.url, "GET", "/v1/countries/USA/subdivisions")
        expect(custom.json).toEqual({ error: { code: "X", message: "custom" } })
        yield* emulator.setFaults([{ kind: "status", status: 500 }])
        const documented = yield* call(emulator.url, "GET", "/v1/countries/USA/subdivisions")
        expect(documented.json).toEqual({ status: 500, message: "Internal server error" })
      }))

    it.scopedLive("status faults 400 and 423 send the documented bodies, with their status (service-facts 5)", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const path = "/v1/countries/USA/subdivisions"
        // The first rule that fires decides the answer: the second is not used up by the first request.
        yield* emulator.setFaults([
          { kind: "status", status: 400, times: 1 },
          { kind: "status", status: 423, times: 1 }
        ])
        const malformed = yield* call(emulator.url, "GET", path)
        expect([malformed.status, malformed.json]).toEqual([400, { status: 400, message: "Malformed request body" }])
        const locked = yield* call(emulator.url, "GET", path)
        expect([locked.status, locked.json]).toEqual([423, { status: 423, message: "Locked" }])
      }))

    it.scopedLive("status faults 401, 404 and 422 send the documented bodies (service-facts 5)", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const path = "/v1/countries/USA/subdivisions"
        yield* emulator.setFaults([401, 404, 422].map((status) => ({ kind: "status" as const, status, times: 1 })))
        const answers = [yield* call(emulator.url, "GET", path), yield* call(emulator.url, "GET", path)]
        answers.push(yield* call(emulator.url, "GET", path))
        expect(answers.map((a) => [a.status, a.json])).toEqual([
          [401, { message: "Authentication failed" }],
          [404, { message: "Resource not found" }],
          [422, { message: "Validation failed", errors: [{ request: "rejected by an injected fault" }] }]
        ])
      }))

    it.scopedLive("a status fault whose body JSON cannot write is refused, not kept to answer empty 500s", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const circular: Record<string, unknown> = {}
        circular["self"] = circular
        for (const body of [{ amount: 10n }, circular, () => "body"]) {
          const set = yield* Effect.either(emulator.setFaults([{ kind: "status", status: 503, body }]))
          expect(set._tag).toBe("Left")
          const added = yield* Effect.either(emulator.addFaults([{ kind: "status", status: 503, body }]))
          expect(added._tag).toBe("Left")
        }
        const made = yield* Effect.either(Emulator.make({ faults: [{ kind: "status", status: 503, body: { n: 1n } }] }))
        expect(made._tag).toBe("Left")
        expect(yield* emulator.faults).toEqual([])
        expect((yield* call(emulator.url, "GET", "/__emulator/faults")).json).toEqual({ faults: [], injected: [] })
        expect((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status).toBe(422)
      }))

    it.scopedLive("admin input nested deeper than the stack goes is a 400, and options an EmulatorError, not a defect", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        // 400 KB: within the 1 MiB an admin body may have; JSON.parse reads it, quoting it in a message overflows.
        const deep = "[".repeat(200_000) + "]".repeat(200_000)
        const faults = yield* call(emulator.url, "POST", "/__emulator/faults", {
          body: `{"faults":[{"kind":"latency","millis":${deep}}]}`
        })
        expect(faults.status).toBe(400)
        expect(faults.text).toContain("millis")
        const body = yield* call(emulator.url, "POST", "/__emulator/faults", {
          body: `{"faults":[{"kind":"status","status":500,"body":${deep}}]}`
        })
        expect([body.status, body.json]).toMatchObject([400, {
          errors: [{
            path: "faults[0].body",
            message: "expected a value JSON can write (no BigInt, cycle or function, nesting JSON.stringify can reach)"
          }]
        }])
        const hooks = yield* call(emulator.url, "POST", "/__emulator/webhooks", { body: `{"status":${deep}}` })
        expect(hooks.status).toBe(400)
        expect(yield* emulator.faults).toEqual([])
        const made = yield* Effect.exit(Emulator.make({ fee: JSON.parse(deep) }))
        expect(made).toMatchObject({ _tag: "Failure", cause: { _tag: "Fail", error: { reason: "InvalidOptions" } } })
      }))

    it.scopedLive("a malformed body is a 200 that is not JSON", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ faults: [{ kind: "malformed" }] })
        const answer = yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })
        expect(answer.status).toBe(200)
        expect(answer.headers.get("content-type")).toContain("application/json")
        expect(answer.json).toBeUndefined()
      }))

    it.scopedLive("a truncated body promises more than it sends, then the connection closes", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ faults: [{ kind: "truncated" }] })
        const outcome = yield* Effect.promise(() =>
          new Promise<{ readonly status: number; readonly length: string | undefined; readonly error: boolean }>(
            (resolve) => {
              const request = Http.request(`${emulator.url}/v1/oauth/token`, { method: "POST" }, (response) => {
                response.on("data", () => {})
                response.on("error", () =>
                  resolve({ status: response.statusCode!, length: response.headers["content-length"], error: true }))
                response.on("end", () =>
                  resolve({ status: response.statusCode!, length: response.headers["content-length"], error: false }))
              })
              request.end("{}")
            }
          )
        )
        expect(outcome.status).toBe(200)
        expect(Number(outcome.length)).toBeGreaterThan(512)
        expect(outcome.error).toBe(true)
      }))

    it.scopedLive("rules apply to their route, at most `times` times, after the added latency", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        yield* emulator.setFaults([
          { route: "POST /v1/oauth/token", kind: "latency", millis: 10 },
          { route: "POST /v1/oauth/token", kind: "status", status: 502, times: 2 },
          // After the rule deciding the answer: its delay is added all the same.
          { route: "POST /v1/oauth/token", kind: "latency", millis: 1 }
        ])
        const statuses: Array<number> = []
        for (let i = 0; i < 3; i++) {
          statuses.push((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status)
        }
        // Not this route.
        statuses.push((yield* call(emulator.url, "GET", "/v1/countries/USA/subdivisions")).status)
        expect(statuses).toEqual([502, 502, 422, 401])
        const counters = yield* emulator.counters
        expect(counters.faults).toMatchObject({ latency: 6, status: 2 })
        yield* emulator.clearFaults
        expect(yield* emulator.faults).toEqual([])
      }))

    it.scoped("every latency rule that fires adds its delay: one wait of their sum (on the TestClock here)", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        yield* emulator.setFaults([
          { route: "POST /v1/oauth/token", kind: "latency", millis: 100 },
          { route: "*", kind: "latency", millis: 200 },
          { route: "GET /v1/countries/{country_code}/subdivisions", kind: "latency", millis: 400 },
          { route: "POST /v1/oauth/token", kind: "status", status: 503, times: 1 }
        ])
        const answer = yield* forkSleeping(call(emulator.url, "POST", "/v1/oauth/token", { body: {} }))
        expect(Chunk.toReadonlyArray(yield* TestClock.sleeps())).toEqual([300])
        // Its faults were decided when it arrived: the rules cleared while it waits, it still gets its 503.
        yield* emulator.clearFaults
        yield* TestClock.adjust("300 millis")
        expect((yield* Fiber.join(answer)).status).toBe(503)
        // The shortest wait there is, 1 ms, is waited too (the sleeps are told as times: the clock is at 300 ms).
        yield* emulator.setFaults([{ kind: "latency", millis: 1 }])
        const short = yield* forkSleeping(call(emulator.url, "POST", "/v1/oauth/token", { body: {} }))
        expect(Chunk.toReadonlyArray(yield* TestClock.sleeps())).toEqual([301])
        yield* TestClock.adjust("1 millis")
        expect((yield* Fiber.join(short)).status).toBe(422)
      }))

    it.scopedLive("with a seed, a fractional rate makes the same choices on every run", () =>
      Effect.gen(function*() {
        const run = Effect.scoped(Effect.gen(function*() {
          const emulator = yield* Emulator.make({ seed: 42, faults: [{ kind: "status", status: 503, rate: 0.5 }] })
          const statuses: Array<number> = []
          for (let i = 0; i < 20; i++) {
            statuses.push((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status)
          }
          const counters = yield* emulator.counters
          expect(counters.faults.status).toBe(statuses.filter((s) => s === 503).length)
          // A reset starts the seeded choices over, as a new emulator would.
          yield* emulator.reset
          const again: Array<number> = []
          for (let i = 0; i < 20; i++) {
            again.push((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status)
          }
          expect(again).toEqual(statuses)
          return statuses
        }))
        const first = yield* run
        expect(yield* run).toEqual(first)
        // Some of each.
        expect(first).toContain(503)
        expect(first).toContain(422)
      }))

    it.scopedLive("with a seed, the fault choices do not move when tokens are issued in between", () =>
      Effect.gen(function*() {
        // The same lookups, with one token issued first or three: timed revocations bring such differences.
        const run = (tokens: number) =>
          Effect.scoped(Effect.gen(function*() {
            const emulator = yield* Emulator.make({
              seed: 7,
              faults: [{ kind: "status", status: 503, rate: 0.5, route: "GET /v1/countries/{country_code}/subdivisions" }]
            })
            let token = ""
            for (let i = 0; i < tokens; i++) token = (yield* tokenOf(emulator))["access_token"]!
            const statuses: Array<number> = []
            for (let i = 0; i < 16; i++) {
              statuses.push((yield* call(emulator.url, "GET", "/v1/countries/USA/subdivisions", { token })).status)
            }
            return statuses
          }))
        const one = yield* run(1)
        expect(yield* run(3)).toEqual(one)
        expect(one).toContain(503)
        expect(one).toContain(200)
      }))

    it.scopedLive("with a seed, a rule on every route makes the same choices when tokens are issued in between", () =>
      Effect.gen(function*() {
        // `*`, the default route: the token requests are faulted too, and their number must not move the lookups'.
        const run = (tokens: number) =>
          Effect.scoped(Effect.gen(function*() {
            const emulator = yield* Emulator.make({ seed: 7, faults: [{ kind: "status", status: 503, rate: 0.5 }] })
            const statuses: Array<number> = []
            for (let i = 0; i < 16; i++) {
              for (let j = 0; j < (i % 4 === 0 ? tokens : 0); j++) yield* call(emulator.url, "POST", "/v1/oauth/token")
              statuses.push((yield* call(emulator.url, "GET", "/v1/countries/USA/subdivisions")).status)
            }
            return statuses
          }))
        const none = yield* run(0)
        expect(yield* run(2)).toEqual(none)
        expect(none).toContain(503)
        expect(none).toContain(401)
      }))

    it.scopedLive("with a seed, a rule whose `times` are spent draws no more: the others' choices do not move", () =>
      Effect.gen(function*() {
        const rated = { kind: "status", status: 503, rate: 0.5 } as const
        const run = (spent: boolean) =>
          Effect.scoped(Effect.gen(function*() {
            // Either a one-time rule before the rated one (both draw on the first request), or the rated one alone
            // with a request more: either way two draws, after which only the rated rule should draw.
            const emulator = yield* Emulator.make({
              seed: 3,
              faults: spent ? [{ kind: "status", status: 502, rate: 0.999999, times: 1 }, rated] : [rated]
            })
            const first = (yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status
            if (spent) expect(first).toBe(502)
            else yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })
            const statuses: Array<number> = []
            for (let i = 0; i < 20; i++) {
              statuses.push((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status)
            }
            return statuses
          }))
        const alone = yield* run(false)
        expect(yield* run(true)).toEqual(alone)
        expect(alone).toContain(503)
        expect(alone).toContain(422)
      }))

    it.scopedLive("two emulators with the same seed hand out different tokens, neither accepting the other's", () =>
      Effect.gen(function*() {
        const first = yield* Emulator.make({ seed: 1 })
        const second = yield* Emulator.make({ seed: 1 })
        const token = (yield* tokenOf(first))["access_token"]!
        expect((yield* tokenOf(second))["access_token"]).not.toBe(token)
        expect((yield* call(second.url, "GET", "/v1/countries/USA/subdivisions", { token })).status).toBe(401)
      }))

    it.scopedLive("closing the emulator ends stalled requests and webhook deliveries, and frees the port", () =>
      Effect.gen(function*() {
        // A receiver that never answers.
        let heard = 0
        const stalled = Http.createServer(() => void heard++)
        yield* Effect.acquireRelease(
          Effect.async<void>((resume) => void stalled.listen(0, "127.0.0.1", () => resume(Effect.void))),
          () => Effect.sync(() => (stalled.closeAllConnections(), stalled.close()))
        )
        const receiver = `http://127.0.0.1:${(stalled.address() as Net.AddressInfo).port}`
        const { delivering, inFlight, port } = yield* Effect.scoped(Effect.gen(function*() {
          const emulator = yield* Emulator.make({ faults: [{ kind: "stall" }] })
          const inFlight = yield* Effect.fork(
            Effect.tryPromise(() => fetch(`${emulator.url}/v1/oauth/token`, { method: "POST", body: "{}" }))
          )
          // Until the server has the request.
          while ((yield* emulator.counters).requests["POST /v1/oauth/token"] === 0) yield* Effect.sleep("5 millis")
          expect(yield* refused(emulator.port)).toBe(false)
          // A webhook delivery waiting on a receiver that never answers: the emulator's closing fails it.
          const delivering = yield* Effect.fork(Effect.flip(emulator.sendWebhook({ url: `${receiver}/hooks` })))
          yield* eventually(Effect.sync(() => heard > 0), "the receiver has the delivery")
          return { delivering, inFlight, port: emulator.port }
        }))
        expect(Exit.isFailure(yield* Fiber.await(inFlight))).toBe(true)
        expect(yield* refused(port)).toBe(true)
        const failed = yield* Fiber.join(delivering).pipe(Effect.timeout("5 seconds"))
        expect(failed.reason).toBe("WebhookDeliveryFailed")
      }))
  })

  describe("rate limit", () => {
    const quote = { source_currency: "USD", source_amount: 10, destination_currency: "EUR" }
    const subdivisions = (emulator: Emulator.Service, token: string) =>
      call(emulator.url, "GET", "/v1/countries/FRA/subdivisions", { token })

    it.scoped("the API's calls over it get 429 with Retry-After; the token routes are not limited; it grows back", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ rateLimit: { requests: 2, per: "1 second" } })
        for (const _ of [1, 2, 3]) yield* tokenOf(emulator)
        const token = (yield* tokenOf(emulator))["access_token"]!
        const statuses = (answers: ReadonlyArray<Answer>) => answers.map((answer) => answer.status)
        // Two at once, then none: the fee and subdivision routes share the limit.
        expect(statuses([yield* fee(emulator, token, quote), yield* subdivisions(emulator, token)])).toEqual([200, 200])
        const over = yield* fee(emulator, token, quote)
        expect(over.status).toBe(429)
        expect(over.headers.get("retry-after")).toBe("1")
        expect(over.json).toEqual({ message: "Too Many Requests" })
        expect((yield* subdivisions(emulator, token)).status).toBe(429)
        // One every half second grows back; the wait said is at least a second, rounded up.
        yield* TestClock.adjust("500 millis")
        expect(statuses([yield* fee(emulator, token, quote), yield* fee(emulator, token, quote)])).toEqual([200, 429])
        // Never more than `requests` saved up.
        yield* TestClock.adjust("1 minute")
        const burst = yield* Effect.forEach([1, 2, 3], () => fee(emulator, token, quote))
        expect(statuses(burst)).toEqual([200, 200, 429])
        const counters = yield* emulator.counters
        expect(counters.rateLimited).toBe(4)
        expect(counters.statuses["429"]).toBe(4)
        expect(counters.tokensIssued).toBe(4)
        // A reset fills it again.
        yield* emulator.reset
        expect((yield* emulator.counters).rateLimited).toBe(0)
        const again = (yield* tokenOf(emulator))["access_token"]!
        expect(statuses(yield* Effect.forEach([1, 2], () => fee(emulator, again, quote)))).toEqual([200, 200])
      }))

    it.scoped("a client that waits the Retry-After it was given is let through (2 per 7 s: no rounding short)", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ rateLimit: { requests: 2, per: "7 seconds" } })
        const token = (yield* tokenOf(emulator))["access_token"]!
        const answers = (n: number) => Effect.forEach(Array.from({ length: n }), () => fee(emulator, token, quote))
        const [, , over] = yield* answers(3)
        expect([over!.status, over!.headers.get("retry-after")]).toEqual([429, "4"])
        yield* TestClock.adjust("4 seconds")
        const [ok, again] = yield* answers(2)
        expect([ok!.status, again!.status, again!.headers.get("retry-after")]).toEqual([200, 429, "3"])
        // 7 s after the first two: a whole `per`, and the wait it was told.
        yield* TestClock.adjust("3 seconds")
        expect((yield* fee(emulator, token, quote)).status).toBe(200)
        // A wait a fraction of a millisecond past a whole second (3 per 3.001 s: 1000.33 ms) is told as 2 s, not 1.
        const fine = yield* Emulator.make({ rateLimit: { requests: 3, per: "3001 millis" } })
        const fineToken = (yield* tokenOf(fine))["access_token"]!
        const [, , , fineOver] = yield* Effect.forEach([1, 2, 3, 4], () => fee(fine, fineToken, quote))
        expect([fineOver!.status, fineOver!.headers.get("retry-after")]).toEqual([429, "2"])
        yield* TestClock.adjust("2 seconds")
        expect((yield* fee(fine, fineToken, quote)).status).toBe(200)
      }))

    it.scoped("a clock set back and forward again credits its time once: no second call at one reading", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ rateLimit: { requests: 1, per: "10 seconds" } })
        const token = (yield* tokenOf(emulator))["access_token"]!
        yield* TestClock.setTime(10_000)
        expect((yield* fee(emulator, token, quote)).status).toBe(200)
        yield* TestClock.setTime(0)
        expect((yield* fee(emulator, token, quote)).status).toBe(429)
        yield* TestClock.setTime(10_000)
        expect((yield* fee(emulator, token, quote)).status).toBe(429)
        yield* TestClock.setTime(20_000)
        expect((yield* fee(emulator, token, quote)).status).toBe(200)
      }))

    // The TestClock's own `currentTimeNanos` is `BigInt(millis * 1e6)`: a RangeError at 0.30000000000000004 ms.
    it.scoped("a TestClock at a fractional millisecond reads as any other time", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ rateLimit: { requests: 1 } })
        const token = (yield* tokenOf(emulator))["access_token"]!
        for (const _ of [1, 2, 3]) yield* TestClock.adjust(Duration.millis(0.1))
        expect((yield* fee(emulator, token, quote)).status).toBe(200)
        expect((yield* fee(emulator, token, quote)).status).toBe(429)
        // `per` left out: one second.
        yield* TestClock.adjust("1 second")
        expect((yield* fee(emulator, token, quote)).status).toBe(200)
      }))

    it.scoped("a call over it is refused before any fault rule: it draws no fault and counts in none", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({
          rateLimit: { requests: 1 },
          faults: [{ kind: "status", status: 503, route: "POST /v1/fee-calculation" }]
        })
        const token = (yield* tokenOf(emulator))["access_token"]!
        expect((yield* fee(emulator, token, quote)).status).toBe(503)
        expect((yield* fee(emulator, token, quote)).status).toBe(429)
        const counters = yield* emulator.counters
        expect([counters.faults.status, counters.rateLimited]).toEqual([1, 1])
        expect((yield* emulator.injectedFaults).map((fault) => fault.injected)).toEqual([1])
      }))

    it.scoped("a bad rateLimit is an InvalidOptions naming it", () =>
      Effect.gen(function*() {
        for (
          const rateLimit of [
            { requests: 0 },
            { requests: 1.5 },
            { requests: 2_000_000 },
            { requests: 2, per: "0 seconds" },
            { requests: 2, per: "25 days" },
            { requests: 2, per: "soon" },
            { requests: 2, burst: 3 },
            { per: "1 second" }
          ]
        ) {
          const error = yield* Effect.flip(Emulator.make({ rateLimit } as Emulator.Options))
          expect(error, JSON.stringify(rateLimit)).toMatchObject({ _tag: "EmulatorError", reason: "InvalidOptions" })
          expect(error.message, JSON.stringify(rateLimit)).toContain("rateLimit")
        }
      }))

    // The client honours the limit's Retry-After: 20 quotes at once against 10 a second (some refused, as many as
    // did not fit in the first second) all end in a quote.
    it.scopedLive("FinClient under it: the calls refused are retried after the wait it asks for, and all succeed", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ rateLimit: { requests: 10, per: "1 second" } })
        const client = yield* FinClient.make({ ...emulator.credentials, baseUrl: emulator.url, maxRetries: 1 })
        const quotes = yield* Effect.forEach(
          Array.from({ length: 20 }),
          () => client.fees.calculate({ source_currency: "USD", source_amount: 10, destination_currency: "EUR" }),
          { concurrency: "unbounded" }
        )
        expect(quotes).toHaveLength(20)
        const counters = yield* emulator.counters
        expect(counters.rateLimited).toBeGreaterThan(0)
        expect(counters.requests["POST /v1/fee-calculation"]).toBe(20 + counters.rateLimited)
      }).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)
  })

  describe("admin endpoints", () => {
    const hooks = "http://127.0.0.1:1/hooks"

    it.scopedLive("a padded webhook secret is a 400 naming it (InvalidInput from code), registering nothing", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        for (const secret of [" padded ", "whsec\n", "\u0001whsec"]) {
          const answer = yield* call(emulator.url, "POST", "/__emulator/webhooks", { body: { url: hooks, secret } })
          expect([answer.status, answer.text.includes("secret")], JSON.stringify(secret)).toEqual([400, true])
          const error = yield* Effect.flip(Effect.catchAllDefect(emulator.sendWebhook({ secret }), Effect.fail))
          expect(error).toMatchObject({ _tag: "EmulatorError", reason: "InvalidInput" })
        }
        expect((yield* call(emulator.url, "GET", "/__emulator")).json).toMatchObject({ webhook: { url: null } })
      }))

    it.scopedLive("an unknown algorithm is one problem naming the choices, not one per algorithm", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const body = { url: hooks, algorithm: "md5" }
        const answer = yield* call(emulator.url, "POST", "/__emulator/webhooks", { body })
        expect([answer.status, answer.json]).toEqual([400, {
          message: "Invalid body for POST /__emulator/webhooks: algorithm: one of sha256, sha384, sha512",
          errors: [{ path: "algorithm", message: "one of sha256, sha384, sha512" }]
        }])
        const option = yield* Effect.flip(Emulator.make({ webhookAlgorithm: "md5" as "sha256" }))
        expect(option.message).toBe("Invalid emulator options: webhookAlgorithm: one of sha256, sha384, sha512")
      }))

    it.scopedLive("send: false with event or signing fields is a 400 naming them, and registers nothing", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const answer = yield* call(emulator.url, "POST", "/__emulator/webhooks", {
          body: { url: hooks, send: false, status: "REJECTED", secret: "other" }
        })
        const unused = "not used when send is false (it only registers url)"
        expect(answer.status).toBe(400)
        expect((answer.json as { errors: unknown }).errors).toEqual([
          { path: "status", message: unused },
          { path: "secret", message: unused }
        ])
        expect((yield* call(emulator.url, "GET", "/__emulator")).json).toMatchObject({ webhook: { url: null } })
      }))

    it.scopedLive("send: false without a url is a 400, and registers nothing", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ webhookUrl: hooks })
        const answer = yield* call(emulator.url, "POST", "/__emulator/webhooks", { body: { send: false } })
        expect([answer.status, answer.json]).toEqual([400, {
          message: "Invalid body for POST /__emulator/webhooks: url is required when send is false"
        }])
        expect((yield* call(emulator.url, "GET", "/__emulator")).json).toMatchObject({ webhook: { url: hooks } })
      }))

    // A client giving up on a stall is what stalls are for: the emulator logs nothing about it, even at Debug, in the
    // program it runs in (the platform's 499 would otherwise be logged as an unhandled error, its response dumped).
    it.scopedLive("a request its client gave up on is not logged as an unhandled error", () => {
      const log = captureLogs()
      return Effect.gen(function*() {
        const emulator = yield* Emulator.make({ faults: [{ kind: "stall", route: "POST /v1/fee-calculation" }] })
        // Given up once the request has reached the (stalling) emulator, not after a fixed 100 ms: on a loaded machine
        // fetch's first request can take longer than that to be sent, and would be given up before it was counted.
        const client = new AbortController()
        const sent = fetch(`${emulator.url}/v1/fee-calculation`, { method: "POST", signal: client.signal }).then(
          () => "answered",
          (error: Error) => error.name
        )
        yield* eventually(
          Effect.map(emulator.counters, (c) => c.requests["POST /v1/fee-calculation"] === 1),
          "the request to reach the emulator"
        )
        client.abort()
        const aborted = yield* Effect.promise(() => sent)
        expect(aborted).toBe("AbortError")
        // The server sees the connection close, then ends the request's fiber.
        yield* Effect.sleep("300 millis")
        expect((yield* emulator.counters).requests["POST /v1/fee-calculation"]).toBe(1)
        expect(log.lines.filter((line) => line.includes("unhandled"))).toEqual([])
      }).pipe(Effect.provide(log.layer), Logger.withMinimumLogLevel(LogLevel.Debug))
    })

    it.scopedLive("reset, revoke-tokens and clearing faults refuse a body not JSON, or with fields, with 400", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        yield* emulator.setFaults([{ kind: "stall", route: "POST /v1/fee-calculation" }])
        // A DELETE of the faults with rules in its body (meant as a POST) would otherwise clear them all, and say so.
        const routes = [
          ["POST", "/__emulator/reset"],
          ["POST", "/__emulator/revoke-tokens"],
          ["DELETE", "/__emulator/faults"]
        ] as const
        for (const [method, path] of routes) {
          const garbage = yield* call(emulator.url, method, path, { body: "garbage{" })
          expect([garbage.status, garbage.json], path).toMatchObject([400, {
            message: `Invalid body for ${method} ${path}: not valid JSON`
          }])
          const fields = yield* call(emulator.url, method, path, { body: { faults: [{ kind: "stall" }] } })
          expect([fields.status, fields.json], path).toMatchObject([400, {
            message: `Invalid body for ${method} ${path}: no input: an empty body or {}`
          }])
        }
        expect(yield* emulator.faults).toHaveLength(1)
        // No body, or {}, as before.
        expect((yield* call(emulator.url, "POST", "/__emulator/revoke-tokens")).json).toEqual({ revoked: 0 })
        expect((yield* call(emulator.url, "POST", "/__emulator/reset", { body: {} })).json).toEqual({ reset: true })
        expect(yield* emulator.faults).toHaveLength(0)
      }))

    it.scopedLive("set, read and clear faults; counters; reset", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const rule = { route: "POST /v1/fee-calculation", kind: "status", status: 503, retryAfter: 1, times: 1 }
        const set = yield* call(emulator.url, "POST", "/__emulator/faults", { body: { faults: [rule] } })
        expect(set.status).toBe(200)
        expect(set.json).toEqual({ faults: [rule], injected: [0] })
        const latency = { kind: "latency", millis: 1 }
        const appended = yield* call(emulator.url, "POST", "/__emulator/faults", {
          body: { faults: [latency], append: true }
        })
        expect(appended.json).toEqual({ faults: [rule, latency], injected: [0, 0] })
        expect((yield* call(emulator.url, "GET", "/__emulator/faults")).json).toEqual(appended.json)
        expect(yield* emulator.faults).toEqual([rule, latency])

        expect((yield* call(emulator.url, "DELETE", "/__emulator/faults")).json).toEqual({ faults: [], injected: [] })
        expect(yield* emulator.faults).toEqual([])

        yield* tokenOf(emulator)
        const counters = yield* call(emulator.url, "GET", "/__emulator/counters")
        expect(counters.json).toEqual(yield* emulator.counters)
        expect(counters.json).toMatchObject({ tokensIssued: 1, activeTokens: 1, requests: { "POST /v1/oauth/token": 1 } })

        expect((yield* call(emulator.url, "POST", "/__emulator/expire-tokens", { body: {} })).json).toEqual({ expired: 1 })
        yield* tokenOf(emulator)
        expect((yield* call(emulator.url, "POST", "/__emulator/revoke-tokens")).json).toEqual({ revoked: 1 })
        expect((yield* call(emulator.url, "POST", "/__emulator/expire-tokens")).json).toEqual({ expired: 0 })

        expect((yield* call(emulator.url, "POST", "/__emulator/reset")).status).toBe(200)
        const after = yield* emulator.counters
        expect(after.tokensIssued).toBe(0)
        expect(after.requests["POST /v1/oauth/token"]).toBe(0)
        expect(after.statuses).toEqual({})

        const info = yield* call(emulator.url, "GET", "/__emulator")
        expect(info.json).toMatchObject({
          url: emulator.url,
          credentials: emulator.credentials,
          webhook: { algorithm: "sha256", secret: emulator.webhookSecret },
          routes: [...Emulator.routeNames]
        })
      }))

    it.scopedLive("the token log keeps the newest 1,000 issues and refreshes, oldest first", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        let refreshToken = (yield* tokenOf(emulator))["refresh_token"]!
        for (let i = 0; i < 1000; i++) {
          const answer = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
            body: { refresh_token: refreshToken }
          })
          refreshToken = (answer.json as Record<string, string>)["refresh_token"]!
        }
        const counters = yield* emulator.counters
        expect([counters.tokensIssued, counters.tokensRefreshed]).toEqual([1, 1000])
        // 1,001 entries made: the issue, the oldest, is the one dropped.
        expect(counters.tokenLog).toHaveLength(1000)
        expect(counters.tokenLog.every((entry) => entry.kind === "refresh")).toBe(true)
      }))

    it.scopedLive("GET faults counts how often each rule fired; appending keeps the counts, setting anew not", () =>
      Effect.gen(function*() {
        const rule = { route: "POST /v1/fee-calculation", kind: "status", status: 503, retryAfter: 1, times: 1 } as const
        const latency = { kind: "latency", millis: 1 } as const
        const emulator = yield* Emulator.make({ faults: [rule, latency] })
        // The 503 once (its `times`), the latency on every request, the token's included.
        const token = (yield* tokenOf(emulator))["access_token"]!
        const quote = { source_currency: "USD", source_amount: 10, destination_currency: "EUR" }
        expect((yield* fee(emulator, token, quote)).status).toBe(503)
        expect((yield* fee(emulator, token, quote)).status).toBe(200)
        const fired = yield* call(emulator.url, "GET", "/__emulator/faults")
        expect(fired.json).toEqual({ faults: [rule, latency], injected: [1, 3] })
        expect(yield* emulator.injectedFaults).toEqual([{ rule, injected: 1 }, { rule: latency, injected: 3 }])
        const more = yield* call(emulator.url, "POST", "/__emulator/faults", { body: { faults: [rule], append: true } })
        expect(more.json).toEqual({ faults: [rule, latency, rule], injected: [1, 3, 0] })
        yield* emulator.setFaults([latency])
        expect(yield* Effect.provideService(Emulator.injectedFaults, Emulator.Emulator, emulator))
          .toEqual([{ rule: latency, injected: 0 }])
        yield* emulator.addFaults([rule])
        yield* tokenOf(emulator)
        expect(yield* emulator.injectedFaults).toEqual([{ rule: latency, injected: 1 }, { rule, injected: 0 }])
        // A reset goes back to the options' rules, none fired.
        yield* emulator.reset
        expect(yield* emulator.injectedFaults).toEqual([{ rule, injected: 0 }, { rule: latency, injected: 0 }])
      }))

    it.scopedLive("POST faults replaces the rules unless append; expire-tokens keeps refresh tokens unless asked", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const rule = (status: number) => ({ kind: "status", status })
        yield* call(emulator.url, "POST", "/__emulator/faults", { body: { faults: [rule(500)] } })
        const replaced = yield* call(emulator.url, "POST", "/__emulator/faults", { body: { faults: [rule(502)] } })
        expect(replaced.json).toEqual({ faults: [rule(502)], injected: [0] })
        const appended = yield* call(emulator.url, "POST", "/__emulator/faults", {
          body: { faults: [rule(503)], append: true }
        })
        expect(appended.json).toEqual({ faults: [rule(502), rule(503)], injected: [0, 0] })
        yield* emulator.clearFaults
        const token = yield* tokenOf(emulator)
        const expired = yield* call(emulator.url, "POST", "/__emulator/expire-tokens")
        expect(expired.json).toEqual({ expired: 1 })
        const refreshed = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
          body: { refresh_token: token["refresh_token"] }
        })
        expect(refreshed.status).toBe(200)
        yield* emulator.expireTokens()
        const kept = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
          body: { refresh_token: (refreshed.json as Record<string, string>)["refresh_token"] }
        })
        expect(kept.status).toBe(200)
      }))

    it.scopedLive("reset restores the webhook target of the options", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ webhookUrl: "http://127.0.0.1:1/first" })
        yield* emulator.registerWebhook("http://127.0.0.1:1/second")
        yield* emulator.reset
        expect((yield* call(emulator.url, "GET", "/__emulator")).json).toMatchObject({
          webhook: { url: "http://127.0.0.1:1/first" }
        })
      }))

    it.scopedLive("reset zeroes every counter: requests, statuses, faults, tokens, the token log, webhooks", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ faults: [{ kind: "status", status: 500, times: 1 }] })
        const fresh = yield* emulator.counters
        expect((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status).toBe(500)
        const token = yield* tokenOf(emulator)
        const refresh = { refresh_token: token["refresh_token"] }
        yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", { body: refresh })
        // Nothing listens on port 1: a failed delivery.
        yield* Effect.flip(emulator.sendWebhook({ url: "http://127.0.0.1:1/hooks" }))
        const used = yield* emulator.counters
        expect([used.faults.status, used.tokensIssued, used.tokensRefreshed, used.webhooksFailed]).toEqual([1, 1, 1, 1])
        yield* emulator.reset
        expect(yield* emulator.counters).toEqual(fresh)
      }))

    it.scopedLive("a request counted before a reset and answered after it: not counted after it, its token dead", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make({ faults: [{ kind: "latency", millis: 300 }] })
        const inFlight = yield* Effect.fork(Effect.all(Array.from({ length: 5 }, () => tokenOf(emulator)), {
          concurrency: "unbounded"
        }))
        // All five counted, and held by the latency rule: the reset comes before any is answered.
        yield* Effect.repeat(emulator.counters, {
          until: (counters) => counters.requests["POST /v1/oauth/token"] === 5,
          schedule: Schedule.spaced("5 millis")
        })
        yield* emulator.reset
        const tokens = yield* Fiber.join(inFlight)
        const counters = yield* emulator.counters
        // `toMatchObject` takes `statuses: {}` as "an object", whatever it holds: compared whole here.
        expect(counters).toMatchObject({ tokensIssued: 0, activeTokens: 0, tokenLog: [] })
        expect(counters.statuses).toEqual({})
        expect(counters.requests["POST /v1/oauth/token"]).toBe(0)
        // Handed out all the same (and listed for leak checks), but as dead as the reset left every other token.
        const accessTokens = tokens.map((answer) => answer["access_token"]!)
        expect(yield* emulator.issuedTokens).toEqual(expect.arrayContaining(accessTokens))
        yield* emulator.clearFaults
        const body = { source_currency: "USD", source_amount: 100, destination_currency: "CAD" }
        expect((yield* fee(emulator, accessTokens[0]!, body)).status).toBe(401)
      }))

    it.scopedLive("reset restores the fault rules of the options", () =>
      Effect.gen(function*() {
        const initial = [{ kind: "status" as const, status: 500, times: 1 }]
        const emulator = yield* Emulator.make({ faults: initial })
        expect((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status).toBe(500)
        expect((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status).toBe(422)
        yield* emulator.reset
        expect(yield* emulator.faults).toEqual(initial)
        expect((yield* call(emulator.url, "POST", "/v1/oauth/token", { body: {} })).status).toBe(500)
      }))

    it.scopedLive("reset forgets the tokens: one issued before is refused, none is active", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const token = yield* tokenOf(emulator)
        yield* emulator.reset
        const path = "/v1/countries/USA/subdivisions"
        expect((yield* call(emulator.url, "GET", path, { token: token["access_token"]! })).status).toBe(401)
        const refreshed = yield* call(emulator.url, "POST", "/v1/oauth/refresh-token", {
          body: { refresh_token: token["refresh_token"] }
        })
        expect(refreshed.status).toBe(401)
        expect((yield* emulator.counters).activeTokens).toBe(0)
      }))

    it.scopedLive("an admin 400 names the first 20 problems and counts the rest, not a body many times the request's", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        // 12 bytes a rule: 80,000 of them fit in 1 MiB, and were answered with 24 MB.
        const body = `{"faults":[${Array.from({ length: 2000 }, () => "{\"kind\":\"x\"}").join(",")}]}`
        const answer = yield* call(emulator.url, "POST", "/__emulator/faults", { body })
        expect(answer.status).toBe(400)
        const { errors, message } = answer.json as { errors: ReadonlyArray<unknown>; message: string }
        expect(errors).toHaveLength(20)
        expect(message).toMatch(/; and 1980 more$/)
        expect(answer.text.length).toBeLessThan(body.length)
        expect(yield* emulator.faults).toEqual([])
      }))

    it.scopedLive("rejects invalid admin input with 400 and a message naming the problem", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const bad = (path: string, body: unknown) =>
          Effect.map(call(emulator.url, "POST", path, { body }), (answer) => {
            expect(answer.status).toBe(400)
            return (answer.json as { message: string }).message
          })
        expect(yield* bad("/__emulator/faults", "{not json")).toContain("not valid JSON")
        expect(yield* bad("/__emulator/faults", { faults: [{ kind: "status", status: 500, rate: 2 }] })).toContain(
          "faults[0].rate: a number from 0 to 1"
        )
        expect(yield* bad("/__emulator/faults", { faults: [{ kind: "status", status: 200 }] })).toContain(
          "faults[0].status: a whole number from 400 to 599"
        )
        expect(yield* bad("/__emulator/faults", { faults: [{ kind: "explode" }] })).toContain("faults[0].kind")
        // One problem for a route not in the list, not one per route it is not.
        const route = yield* call(emulator.url, "POST", "/__emulator/faults", { body: { faults: [{ kind: "stall", route: "GET /v2/x" }] } })
        expect((route.json as { errors: unknown }).errors).toEqual([{
          path: "faults[0].route",
          message: `"*" or one of ${Emulator.routeNames.map((name) => JSON.stringify(name)).join(", ")}`
        }])
        expect(yield* bad("/__emulator/faults", { faults: [{ kind: "stall", retry_after: 1 }] })).toContain(
          "retry_after"
        )
        expect(yield* bad("/__emulator/faults", {})).toContain("faults")
        expect(yield* bad("/__emulator/faults", { faults: [{ kind: "latency", millis: -1 }] })).toContain(
          "faults[0].millis"
        )
        // `LatencyFaultRule`: "up to 600,000" milliseconds, that one included.
        expect(yield* bad("/__emulator/faults", { faults: [{ kind: "latency", millis: 600_001 }] })).toContain(
          "faults[0].millis: a whole number of milliseconds up to 600000"
        )
        yield* emulator.setFaults([{ kind: "latency", millis: 600_000, times: 1 }])
        yield* emulator.clearFaults
        // `times` counts injections: 0 would be a rule that never acts.
        expect(yield* bad("/__emulator/faults", { faults: [{ kind: "stall", times: 0 }] })).toContain(
          "faults[0].times: a whole number greater than 0"
        )
        expect(yield* bad("/__emulator/expire-tokens", { refresh: "yes" })).toContain("refresh")
        expect(yield* bad("/__emulator/webhooks", { url: "ftp://x" })).toContain("url: an absolute http(s) URL")
        expect(yield* bad("/__emulator/webhooks", { beneficiaryId: "nope" })).toContain("beneficiaryId")
        expect(yield* bad("/__emulator/webhooks", {})).toContain("No webhook target")
        // The reason `EmulatorError` documents for it, which a program matches on.
        expect(yield* Effect.flip(emulator.sendWebhook())).toMatchObject({
          _tag: "EmulatorError",
          reason: "WebhookNotRegistered",
          message: "No webhook target: pass a url (or register one first)"
        })
        // An https target is one too (a receiver behind TLS).
        const https = { url: "https://127.0.0.1:1/hooks", send: false }
        const registered = yield* call(emulator.url, "POST", "/__emulator/webhooks", { body: https })
        expect(registered.json).toEqual({ url: https.url })
        expect(yield* emulator.faults).toEqual([])
        const missing = yield* call(emulator.url, "GET", "/__emulator/nothing")
        expect([missing.status, missing.json]).toEqual([404, { message: "No admin route GET /__emulator/nothing" }])
        // A path it has, with a method it does not take: which ones it does.
        const put = yield* call(emulator.url, "PUT", "/__emulator/faults?x=1", { body: { faults: [] } })
        expect([put.status, put.headers.get("allow"), put.json]).toEqual([405, "GET, POST, DELETE", {
          message: "PUT is not taken by /__emulator/faults?x=1: use GET or POST or DELETE"
        }])
        const posted = yield* call(emulator.url, "POST", "/__emulator/counters")
        expect([posted.status, posted.headers.get("allow")]).toEqual([405, "GET"])
        // Admin traffic is not counted.
        expect((yield* emulator.counters).statuses).toEqual({})
      }))

    it.scopedLive("programmatic input and options are validated too", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const rule = { kind: "status", status: 99 } as unknown as Emulator.FaultRule
        const error = yield* Effect.flip(emulator.setFaults([rule]))
        expect(error).toMatchObject({ _tag: "EmulatorError", reason: "InvalidInput" })
        expect(error.message).toContain("a whole number from 400 to 599")
        const options = yield* Effect.flip(Emulator.make({ rates: { "USD-CAD": 1 } as Record<string, number> }))
        expect(options).toMatchObject({ _tag: "EmulatorError", reason: "InvalidOptions" })
        const duration = yield* Effect.flip(Emulator.make({ accessTokenLifetime: "0 seconds" }))
        expect(duration.message).toContain("accessTokenLifetime")
        // A port in use: said in the error's message (the platform's ServeError has none, its reason in its cause).
        const busy = yield* Effect.flip(Emulator.make({ port: emulator.port }))
        expect(busy).toMatchObject({ _tag: "EmulatorError", reason: "ListenFailed" })
        expect(busy.message).toBe(`listen EADDRINUSE: address already in use 127.0.0.1:${emulator.port}`)
        expect(busy.cause).toMatchObject({ code: "EADDRINUSE" })
        // A host with a port, or in a URL's brackets: the listen's lookup failed on it, "An error has occurred".
        for (const host of ["127.0.0.1:4010", "localhost:0", "[::1]"]) {
          const error = yield* Effect.flip(Emulator.make({ host }))
          expect(error, host).toMatchObject({ _tag: "EmulatorError", reason: "InvalidOptions" })
          expect(error.message).toContain("no port, brackets")
        }
        // Past what a timestamp in the documented format holds (year 9999), or what a timer waits (24 days).
        for (const [name, value] of [
          ["accessTokenLifetime", "3000000 days"],
          ["refreshTokenLifetime", "100000000 days"],
          ["quoteLifetime", "40000 days"],
          ["webhookTimeout", "25 days"],
          ["accessTokenLifetime", "-5 seconds"],
          // Expiries go out in whole seconds: under one, the expiry could read as the issue time.
          ["accessTokenLifetime", "500 millis"],
          ["refreshTokenLifetime", "999 millis"]
        ] as const) {
          const error = yield* Effect.flip(Emulator.make({ [name]: value }))
          expect(error, `${name} ${value}`).toMatchObject({ _tag: "EmulatorError", reason: "InvalidOptions" })
          expect(error.message).toContain(name)
        }
        // A host no listen can take, said before any lookup (the listen's own error only said "An error has occurred").
        for (
          const host of [" ", "\r\n", "localhost/", "http://127.0.0.1", "127.0.0.1 ", "localhost?x", "localhost#x",
            "user@localhost", "local\x1bhost", "local\x7fhost"]
        ) {
          const error = yield* Effect.flip(Emulator.make({ host }))
          expect(error, JSON.stringify(host)).toMatchObject({ _tag: "EmulatorError", reason: "InvalidOptions" })
          expect(error.message).toContain("host")
        }
        // An IPv6 address has colons: taken (a machine without IPv6 fails the listen, not the options).
        const ipv6 = yield* Emulator.make({ host: "::1", port: 0 }).pipe(
          Effect.as("listened"),
          Effect.catchAll((error) => Effect.succeed(error._tag === "EmulatorError" ? error.reason : error._tag))
        )
        expect(ipv6).not.toBe("InvalidOptions")
        // Credentials a client could not send as they are (FinConfig refuses them), and a webhook
        // secret a handler would refuse (no_secret).
        for (
          const credentials of [
            { clientId: "client " },
            { clientSecret: " secret\n" },
            // What the client's configuration refuses too: a control character in an id, at a secret's end.
            { clientId: "cli\u0007ent" },
            { clientId: "client\u202e" },
            { clientSecret: "secret\u0000" },
            { clientSecret: "\u0085secret" },
            // A zero-width space, DEL or a C1 control at either end, as FinConfig refuses them.
            { clientId: "client\u200b" },
            { clientId: "\u2060client" },
            { clientSecret: "secret\u007f" },
            // A lone surrogate half anywhere in a secret (UTF-8 would send another), as FinConfig refuses it.
            { clientSecret: "sec\ud800ret" },
            { webhookSecret: "\u200bwhsec" },
            { webhookSecret: "whsec\u0090" },
            { webhookSecret: "whsec\n" },
            { webhookSecret: "\u0001whsec" },
            { webhookSecret: "whsec\u0085" }
          ]
        ) {
          const error = yield* Effect.flip(Emulator.make(credentials))
          expect(error, JSON.stringify(credentials)).toMatchObject({ _tag: "EmulatorError", reason: "InvalidOptions" })
        }
        // A list for a country the client cannot ask for (a misspelt "GER") is a mistake, said at once.
        for (const key of ["GER", "fra", "FR"]) {
          const error = yield* Effect.flip(Emulator.make({ subdivisions: { [key]: [] } }))
          expect(error.message, key).toBe(
            `Invalid emulator option subdivisions: ${JSON.stringify(key)} is not a country code of ISO 3166-1 alpha-3, like DEU`
          )
        }
        const webhook = yield* Effect.flip(emulator.registerWebhook("not a url"))
        expect(webhook.reason).toBe("InvalidInput")
      }))
  })

  describe("webhooks", () => {
    // A small receiver that verifies each delivery with Webhooks.verify and queues what it accepted.
    const receiver = (secret: string) =>
      Effect.gen(function*() {
        const received = yield* Queue.unbounded<Webhooks.WebhookEvent>()
        const headers: Array<Readonly<Record<string, string>>> = []
        const server = yield* NodeHttpServer.make(() => Http.createServer(), { port: 0, host: "127.0.0.1" })
        const app = Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          headers.push(request.headers)
          const body = new Uint8Array(yield* request.arrayBuffer)
          return yield* Webhooks.verify(body, request.headers, secret).pipe(
            Effect.flatMap((event) => Queue.offer(received, event)),
            Effect.as(HttpServerResponse.unsafeJson({ outcome: "received" })),
            Effect.catchTag("WebhookVerificationError", () => Effect.succeed(HttpServerResponse.empty({ status: 401 })))
          )
        }).pipe(Effect.orDie)
        yield* HttpServer.serveEffect(app).pipe(Effect.provideService(HttpServer.HttpServer, server))
        const address = server.address
        const port = address._tag === "TcpAddress" ? address.port : 0
        return { url: `http://127.0.0.1:${port}/hooks`, received, headers }
      })

    it.scopedLive("delivers a signed beneficiary.status event that Webhooks.verify accepts", () =>
      Effect.gen(function*() {
        const target = yield* receiver("whsec-test")
        const emulator = yield* Emulator.make({ webhookSecret: "whsec-test", webhookUrl: target.url })
        const delivery = yield* emulator.sendWebhook({ status: "REJECTED", type: "BUSINESS" })
        expect(delivery.status).toBe(200)
        expect(delivery.event.event.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
        expect(delivery.event.event.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
        const event = yield* Queue.take(target.received)
        expect(event.type).toBe("beneficiary.status")
        expect(event.id).toBe(delivery.event.event.id)
        // The documented headers only: no trace context of the emulator's own client.
        expect(Object.keys(target.headers[0]!).filter((name) => /^(traceparent|tracestate|b3)$/.test(name))).toEqual([])
        if (event.type !== "beneficiary.status") throw new Error("narrowing")
        expect(event.data).toMatchObject({
          beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
          customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
          type: "BUSINESS",
          active: false
        })
        expect(event.data.status).toEqual(Option.some("REJECTED"))
        expect(event.event_reference_id).toBe(event.data.beneficiary_id)
        expect(event.sandbox_mode).toEqual(Option.some(true))
        // A wrong secret is refused by the receiver; the sender reports its status.
        const forged = yield* emulator.sendWebhook({ secret: "other", algorithm: "sha512" })
        expect(forged.status).toBe(401)
        expect((yield* emulator.counters).webhooksSent).toBe(2)
      }))

    it.scoped("created_at is the clock's time to the microsecond, as the documented 2026-04-04T17:38:26.843132Z", () =>
      Effect.gen(function*() {
        const target = yield* receiver("whsec-test")
        const emulator = yield* Emulator.make({ webhookSecret: "whsec-test", webhookUrl: target.url })
        // At a fractional millisecond near the epoch (where a test's TestClock starts, or a jittered retry wakes), the
        // TestClock's own `currentTimeNanos` is a RangeError (0.30000000000000004 ms): read as any other time.
        for (const _ of [1, 2, 3]) yield* TestClock.adjust(Duration.millis(0.1))
        expect((yield* emulator.sendWebhook()).event.event.created_at).toBe("1970-01-01T00:00:00.000300Z")
        yield* TestClock.setTime(Date.parse("2026-04-04T17:38:26.843Z"))
        const delivery = yield* emulator.sendWebhook()
        expect(delivery.event.event.created_at).toBe("2026-04-04T17:38:26.843000Z")
        // Sent within the same microsecond: the next one a microsecond later, in order.
        expect((yield* emulator.sendWebhook()).event.event.created_at).toBe("2026-04-04T17:38:26.843001Z")
        // A clock set back (an NTP step) is followed, not held at the last event's time.
        yield* TestClock.setTime(Date.parse("2026-04-04T16:38:26.843Z"))
        expect((yield* emulator.sendWebhook()).event.event.created_at).toBe("2026-04-04T16:38:26.843000Z")
      }))

    // On the wall clock, as a receiver's maxAge reads it: the live clock's nanoseconds are monotonic, and a wall clock
    // stepped since the process started (an NTP step, a laptop woken) would date every event that much off.
    it.scopedLive("created_at follows the wall clock stepped forward; events sent back to back keep their order", () =>
      withWallClockSetBack((setBack) =>
        Effect.gen(function*() {
          const target = yield* receiver("whsec-test")
          const emulator = yield* Emulator.make({ webhookSecret: "whsec-test", webhookUrl: target.url })
          setBack(-2 * 3_600_000)
          const first = (yield* emulator.sendWebhook()).event.event.created_at
          const second = (yield* emulator.sendWebhook()).event.event.created_at
          expect(Math.abs(Date.now() - Date.parse(first))).toBeLessThan(60_000)
          expect(second > first).toBe(true)
        })
      ))

    it.scopedLive("an event's defaults (ACTIVE, the first configured beneficiary) and what a request sets", () =>
      Effect.gen(function*() {
        const target = yield* receiver("whsec-test")
        const beneficiary = "0b6a3f1e-7c2d-4e5f-9a8b-1c2d3e4f5a6b"
        const emulator = yield* Emulator.make({
          webhookSecret: "whsec-test",
          webhookUrl: target.url,
          beneficiaries: { [beneficiary]: { currency: "EUR" } }
        })
        const plain = yield* emulator.sendWebhook()
        expect(plain.event.data).toEqual({
          type: "INDIVIDUAL",
          active: true,
          status: "ACTIVE",
          customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
          beneficiary_id: beneficiary
        })
        expect(plain.event.event.sandbox_mode).toBe(true)
        expect(target.headers[0]!["x-fin-signature-algorithm"]).toBe("sha256")
        const customer = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
        const set = yield* emulator.sendWebhook({ sandboxMode: false, algorithm: "sha512", customerId: customer })
        expect(set.status).toBe(200)
        expect(set.event.event.sandbox_mode).toBe(false)
        expect(set.event.data.customer_id).toBe(customer)
        expect(target.headers[1]!["x-fin-signature-algorithm"]).toBe("sha512")
        expect(target.headers[1]!["x-fin-signature"]).toMatch(/^[0-9a-f]{128}$/)
      }))

    // The documented older payload had no status: `status: null` sends it, through the API and the admin route, so a
    // receiver's handling of it (Option.none()) is tested before production sends one.
    it.scopedLive("status: null sends the older payload, without status, which the receiver reads as none", () =>
      Effect.gen(function*() {
        const target = yield* receiver("whsec-test")
        const emulator = yield* Emulator.make({ webhookSecret: "whsec-test", webhookUrl: target.url })
        const delivery = yield* emulator.sendWebhook({ status: null })
        expect(delivery.event.data).not.toHaveProperty("status")
        expect(delivery.event.data.active).toBe(true)
        const admin = yield* Effect.promise(() =>
          fetch(`${emulator.url}/__emulator/webhooks`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ status: null, active: false })
          }).then((response) => response.status)
        )
        expect(admin).toBe(200)
        for (const active of [true, false]) {
          const event = yield* Queue.take(target.received)
          if (event.type !== "beneficiary.status") throw new Error("narrowing")
          expect([event.data.status, event.data.active]).toEqual([Option.none(), active])
        }
      }))

    it.scopedLive("delivers an event again (its id given) and out of order (an earlier created_at)", () =>
      Effect.gen(function*() {
        const target = yield* receiver("whsec-test")
        const emulator = yield* Emulator.make({ webhookSecret: "whsec-test", webhookUrl: target.url })
        const first = yield* emulator.sendWebhook({ status: "ACTIVE" })
        const again = yield* emulator.sendWebhook({ status: "ACTIVE", eventId: first.event.event.id })
        const older = yield* emulator.sendWebhook({ status: "PROCESSING", createdAt: "2026-04-04T17:38:26.843132Z" })
        const received = [yield* Queue.take(target.received), yield* Queue.take(target.received), yield* Queue.take(target.received)]
        expect(received.map((e) => e.id)).toEqual([first.event.event.id, first.event.event.id, older.event.event.id])
        expect(again.event.event.created_at).not.toBe("2026-04-04T17:38:26.843132Z")
        expect(older.event.event.created_at).toBe("2026-04-04T17:38:26.843132Z")
        expect(DateTime.formatIso(received[2]!.created_at)).toBe("2026-04-04T17:38:26.843Z")
        const refused = yield* Effect.flip(emulator.sendWebhook({ createdAt: "yesterday", eventId: "not-a-uuid" }))
        expect(refused.message).toContain("createdAt")
        expect(refused.message).toContain("eventId")
      }))

    // A default event id is new: with a seed too, after a reset, and from a second emulator of the same seed (a
    // receiver de-duplicating by id would drop the event as one it handled).
    it.scopedLive("with a seed, a default event id is new after a reset, and apart from another emulator's", () =>
      Effect.gen(function*() {
        const target = yield* receiver("whsec-test")
        const emulator = yield* Emulator.make({ seed: 1, webhookSecret: "whsec-test", webhookUrl: target.url })
        const first = yield* emulator.sendWebhook({ status: "PROCESSING" })
        yield* emulator.reset
        const second = yield* emulator.sendWebhook({ status: "ACTIVE" })
        const other = yield* Emulator.make({ seed: 1, webhookSecret: "whsec-test", webhookUrl: target.url })
        const third = yield* other.sendWebhook({ status: "REJECTED" })
        const ids = [first, second, third].map((delivery) => delivery.event.event.id)
        expect(new Set(ids).size).toBe(3)
      }))

    it.scopedLive("the admin endpoint registers a target and sends; failures are reported", () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.make()
        const target = yield* receiver(emulator.webhookSecret)
        const registered = yield* call(emulator.url, "POST", "/__emulator/webhooks", {
          body: { url: target.url, send: false }
        })
        expect(registered.json).toEqual({ url: target.url })
        const sent = yield* call(emulator.url, "POST", "/__emulator/webhooks", {
          body: { status: "ACTIVE", beneficiaryId: "4d715f20-0000-4000-8000-000000000001" }
        })
        expect(sent.status).toBe(200)
        expect(sent.json).toMatchObject({
          url: target.url,
          status: 200,
          // The start of the receiver's answer, so a test can tell a duplicate from a handled one.
          answer: `{"outcome":"received"}`,
          event: { data: { active: true, status: "ACTIVE", beneficiary_id: "4d715f20-0000-4000-8000-000000000001" } }
        })
        const event = yield* Queue.take(target.received)
        expect(event.event_reference_id).toBe("4d715f20-0000-4000-8000-000000000001")

        // A status (and type) the documentation does not list yet, as the service may send: received as Unlisted.
        const unlisted = yield* call(emulator.url, "POST", "/__emulator/webhooks", {
          body: { status: "SUSPENDED", type: "TRUST" }
        })
        expect(unlisted.status).toBe(200)
        const suspended = yield* Queue.take(target.received)
        if (suspended.type !== "beneficiary.status") throw new Error("narrowing")
        expect(suspended.data.status).toEqual(Option.some(new Webhooks.Unlisted({ value: "SUSPENDED" })))
        expect(suspended.data.type).toEqual(new Webhooks.Unlisted({ value: "TRUST" }))
        expect(suspended.data.active).toBe(false)
        // What is wrong is said once per field, without the optional field's other form ("Expected undefined").
        const refused = yield* call(emulator.url, "POST", "/__emulator/webhooks", {
          body: { status: "suspended", eventId: "x" }
        })
        expect(refused.status).toBe(400)
        const said = "PROCESSING, ACTIVE, INACTIVE, REJECTED, or another value in upper-case letters and _ (at most 64)"
        expect(refused.json).toEqual({
          message: `Invalid body for POST /__emulator/webhooks: status: ${said}; eventId: a UUID`,
          errors: [{ path: "status", message: said }, { path: "eventId", message: "a UUID" }]
        })

        // Nothing listens on a port that was just closed.
        const closed = yield* Effect.scoped(Effect.map(Emulator.make(), (other) => other.port))
        const failed = yield* call(emulator.url, "POST", "/__emulator/webhooks", {
          body: { url: `http://127.0.0.1:${closed}/hooks` }
        })
        expect(failed.status).toBe(502)
        const error = yield* Effect.flip(emulator.sendWebhook())
        expect(error.reason).toBe("WebhookDeliveryFailed")
        // The system's word for it, for the receiver's developer.
        expect(error.message).toBe(`The webhook delivery to http://127.0.0.1:${closed}/hooks failed: Transport (ECONNREFUSED)`)
        // A receiver behind Basic auth: its password is not repeated in the message (a test's log).
        const behindAuth = yield* Effect.flip(
          emulator.sendWebhook({ url: `http://hooks:pa55word@127.0.0.1:${closed}/hooks` })
        )
        expect(behindAuth.message).toBe(
          `The webhook delivery to http://***@127.0.0.1:${closed}/hooks failed: Transport (ECONNREFUSED)`
        )
        const counters = yield* emulator.counters
        expect(counters.webhooksSent).toBe(2)
        expect(counters.webhooksFailed).toBe(3)
      }))
  })

  describe("webhook answers", () => {
    // A receiver behind Basic auth, given as `user:pass@` in its URL: the platform's client would drop them from the
    // request, and its span records the URL whole; they go as an `authorization` header (which it redacts) instead.
    // The admin routes' answers name the receiver without them too (a test script prints them to its CI log).
    it.scopedLive("a receiver's `user:pass@` is sent as Basic credentials; no span or admin answer holds it", () =>
      Effect.gen(function*() {
        const authorizations: Array<string | undefined> = []
        const receiver = Http.createServer((request, response) => {
          authorizations.push(request.headers.authorization)
          request.resume()
          request.on("end", () => response.end("ok"))
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))),
          () => Effect.promise(() => new Promise<void>((resolve) => receiver.close(() => resolve())))
        )
        const { port } = receiver.address() as Net.AddressInfo
        const { layer: tracing, spans } = yield* recordingTracer
        const target = `http://hooks:pa%2055word@127.0.0.1:${port}/hooks`
        const [sent, ...answers] = yield* Effect.gen(function*() {
          const emulator = yield* Emulator.make({ webhookUrl: target })
          return [
            yield* emulator.sendWebhook(),
            yield* call(emulator.url, "GET", "/__emulator"),
            yield* call(emulator.url, "POST", "/__emulator/webhooks", { body: { url: target, send: false } }),
            yield* call(emulator.url, "POST", "/__emulator/webhooks", { body: {} })
          ] as const
        }).pipe(Effect.scoped, Effect.provide(tracing))
        expect(sent.status).toBe(200)
        expect(authorizations).toEqual(Array(2).fill(`Basic ${Buffer.from("hooks:pa 55word").toString("base64")}`))
        for (const answer of answers) {
          expect(answer.text).not.toContain("55word")
          expect(answer.text).toContain(`"http://***@127.0.0.1:${port}/hooks"`)
        }
        // A user name far past any header limit: the receiver's refusal, not a defect of the emulator's.
        const long = yield* Effect.scoped(Effect.flatMap(
          Emulator.make({ webhookUrl: `http://${"u".repeat(200_000)}:pw@127.0.0.1:${port}/hooks` }),
          (emulator) => emulator.sendWebhook()
        ))
        expect(long.status).toBe(431)
        const recorded = yield* spans
        expect(recorded.map((span) => span.name)).toContain("http.client POST")
        for (const span of recorded) expect(JSON.stringify([...span.attributes])).not.toContain("55word")
      }))

    it.scopedLive("a receiver that answers its status then stalls its body counts as answered, with that status", () =>
      Effect.gen(function*() {
        const sockets = new Set<Net.Socket>()
        const stalling = Http.createServer((_request, response) => {
          response.writeHead(200, { "content-type": "text/plain", "content-length": "100" })
          response.write("partial")
        })
        stalling.on("connection", (socket) => sockets.add(socket))
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => stalling.listen(0, "127.0.0.1", resolve))),
          () =>
            Effect.sync(() => {
              for (const socket of sockets) socket.destroy()
              stalling.close()
            })
        )
        const { port } = stalling.address() as Net.AddressInfo
        const emulator = yield* Emulator.make({ webhookUrl: `http://127.0.0.1:${port}/hooks`, webhookTimeout: "300 millis" })
        const delivery = yield* emulator.sendWebhook()
        expect(delivery.status).toBe(200)
        expect(yield* emulator.counters).toMatchObject({ webhooksSent: 1, webhooksFailed: 0 })
      }))

    // On the TestClock: the head comes 600 ms into a 1 s budget, so the body has only what is left, not another second.
    it.scoped("a receiver that sends no answer head fails the delivery at webhookTimeout, no later", () =>
      Effect.gen(function*() {
        let arrived: () => void = () => {}
        const requested = new Promise<void>((resolve) => arrived = resolve)
        const silent = Http.createServer(() => arrived())
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))),
          () =>
            Effect.sync(() => silent.closeAllConnections()).pipe(
              Effect.zipRight(Effect.promise(() => new Promise((resolve) => silent.close(resolve))))
            )
        )
        const { port } = silent.address() as Net.AddressInfo
        const url = `http://127.0.0.1:${port}/hooks`
        const emulator = yield* Emulator.make({ webhookUrl: url, webhookTimeout: "1 second" })
        const delivery = yield* Effect.fork(Effect.flip(emulator.sendWebhook()))
        yield* Effect.promise(() => requested)
        yield* TestClock.adjust("1 second")
        const error = yield* Fiber.join(delivery)
        expect([error.reason, error.message]).toEqual([
          "WebhookDeliveryFailed",
          `The webhook delivery to ${url} got no answer within 1s`
        ])
      }))

    it.scoped("a delivery's answer head and body share one webhookTimeout", () =>
      Effect.gen(function*() {
        let answer: Http.ServerResponse | undefined
        let arrived: () => void = () => {}
        const requested = new Promise<void>((resolve) => arrived = resolve)
        const slow = Http.createServer((_request, response) => {
          answer = response
          arrived()
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve))),
          () => Effect.sync(() => slow.closeAllConnections()).pipe(Effect.zipRight(Effect.promise(() => new Promise((resolve) => slow.close(resolve)))))
        )
        const { port } = slow.address() as Net.AddressInfo
        const emulator = yield* Emulator.make({ webhookUrl: `http://127.0.0.1:${port}/hooks`, webhookTimeout: "1 second" })
        const delivery = yield* Effect.fork(emulator.sendWebhook())
        yield* Effect.promise(() => requested)
        yield* TestClock.adjust("600 millis")
        // The TestClock keeps every sleep until its time (the head's timeout too): one more is the body's timeout.
        const before = (yield* TestClock.sleeps()).length
        answer!.writeHead(200, { "content-type": "text/plain" })
        answer!.write("start ")
        // However long the head takes to reach the sender over loopback (the TestClock does not move meanwhile).
        yield* untilSleepsMoreThan(before, delivery)
        yield* TestClock.adjust("400 millis")
        // Had the body a second of its own, this end would be read into the answer.
        answer!.end("late")
        const sent = yield* Fiber.join(delivery)
        expect([sent.status, sent.answer]).toEqual([200, ""])
      }))

    // Only the start of a long answer is read, and cut between characters, never inside one.
    it.scopedLive("a delivery keeps the start of a long answer, in whole characters", () =>
      Effect.gen(function*() {
        const long = Http.createServer((_request, response) => {
          response.writeHead(200, { "content-type": "text/plain; charset=utf-8" })
          response.end("é" + "😀".repeat(200_000))
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => long.listen(0, "127.0.0.1", resolve))),
          () => Effect.sync(() => long.closeAllConnections()).pipe(Effect.zipRight(Effect.promise(() => new Promise((resolve) => long.close(resolve)))))
        )
        const { port } = long.address() as Net.AddressInfo
        const emulator = yield* Emulator.make({ webhookUrl: `http://127.0.0.1:${port}/hooks` })
        const delivery = yield* emulator.sendWebhook()
        expect(delivery.status).toBe(200)
        const characters = Array.from(delivery.answer)
        expect(characters.length).toBeLessThanOrEqual(1024)
        expect(characters.length).toBeGreaterThan(1000)
        expect(characters.slice(0, 2)).toEqual(["é", "😀"])
        // No half of a character (a lone surrogate); a sequence the read cut would be U+FFFD.
        expect(characters.every((c) => c === "é" || c === "😀" || c === "\uFFFD")).toBe(true)
      }))
  })

  describe("layer and serve", () => {
    it.live("the layer provides the service, an accessor per operation; closed, the port refuses connections", () =>
      Effect.gen(function*() {
        const port = yield* Effect.gen(function*() {
          const emulator = yield* Emulator.Emulator
          expect(emulator.url).toBe(`http://127.0.0.1:${emulator.port}`)
          expect(emulator.credentials).toEqual(Emulator.defaultCredentials)
          expect((yield* call(emulator.url, "GET", "/__emulator/counters")).status).toBe(200)
          yield* Emulator.setFaults([{ kind: "stall" }])
          yield* Emulator.addFaults([{ kind: "malformed", route: "POST /v1/fee-calculation" }])
          expect((yield* Emulator.faults).map((rule) => rule.kind)).toEqual(["stall", "malformed"])
          yield* Emulator.clearFaults
          expect(yield* Emulator.faults).toEqual([])
          expect((yield* Emulator.counters).tokensIssued).toBe(0)
          const token = yield* tokenOf(emulator)
          expect(yield* Emulator.issuedTokens).toEqual([token["access_token"], token["refresh_token"]])
          const refresh = (t: Record<string, string>) =>
            Effect.map(
              call(emulator.url, "POST", "/v1/oauth/refresh-token", { body: { refresh_token: t["refresh_token"] } }),
              (answer) => answer.status
            )
          // Expired alone, the refresh token still serves; expired with it, or revoked, it does not.
          expect(yield* Emulator.expireTokens()).toBe(1)
          expect(yield* refresh(token)).toBe(200)
          const second = yield* tokenOf(emulator)
          expect(yield* Emulator.expireTokens({ refresh: true })).toBe(2)
          expect(yield* refresh(second)).toBe(401)
          const third = yield* tokenOf(emulator)
          expect(yield* Emulator.revokeTokens).toBe(1)
          expect(yield* refresh(third)).toBe(401)
          expect((yield* Effect.flip(Emulator.registerWebhook("not a url"))).reason).toBe("InvalidInput")
          yield* Emulator.registerWebhook("http://127.0.0.1:1/hooks")
          const delivery = yield* Effect.flip(Emulator.sendWebhook())
          expect(delivery.message).toContain("127.0.0.1:1")
          yield* Emulator.reset
          expect((yield* Emulator.counters).tokensIssued).toBe(0)
          return emulator.port
        }).pipe(Effect.provide(Emulator.layer()))
        expect(yield* refused(port)).toBe(true)
      }))

    it.live("serve logs its URL, runs until interrupted, then frees the port", () =>
      Effect.gen(function*() {
        const captured = yield* Queue.unbounded<
          { readonly message: string; readonly url: string; readonly admin: unknown }
        >()
        const capture = Logger.make(({ annotations, message }) => {
          const annotation = (name: string) => [...annotations].find(([key]) => key === name)?.[1]
          Queue.unsafeOffer(captured, {
            message: String(Array.isArray(message) ? message[0] : message),
            url: String(annotation("url")),
            admin: annotation("admin")
          })
        })
        const serving = (options: Emulator.Options) =>
          Emulator.serve(options).pipe(
            Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
            Logger.withMinimumLogLevel(LogLevel.Info),
            Effect.fork
          )
        const fiber = yield* serving({ port: 0 })
        const logged = yield* Queue.take(captured)
        expect(logged.message).toMatch(/^effect-fin emulator listening on http:\/\/127\.0\.0\.1:\d+$/)
        expect(logged.admin).toBe(`${logged.url}/__emulator`)
        const info = yield* call(logged.url, "GET", "/__emulator")
        expect(info.json).toMatchObject({ url: logged.url })
        yield* Fiber.interrupt(fiber)
        expect(yield* refused(Number(new URL(logged.url).port))).toBe(true)
        // A scoped loopback address is listened on; its zone id (no part of a URL a client takes) is left out of the
        // URL, which is loopback's: the admin URL is logged.
        const scoped = yield* serving({ port: 0, host: "::1%lo" })
        const scopedLogged = yield* Queue.take(captured)
        expect([scopedLogged.url.startsWith("http://[::1]:"), scopedLogged.admin]).toEqual([
          true,
          `${scopedLogged.url}/__emulator`
        ])
        yield* Fiber.interrupt(scoped)
      }))
  })
})

describe("emulator admin routes", () => {
  it("treat IPv4, IPv6 and mapped loopback addresses as loopback, and nothing else", () => {
    for (const address of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"]) expect(App.isLoopback(address)).toBe(true)
    for (const address of ["192.0.2.2", "10.0.0.1", "::ffff:10.0.0.1", "fd00::2", "0.0.0.0", "::", "1127.0.0.1"]) {
      expect(App.isLoopback(address)).toBe(false)
    }
  })

  it.effect("answer 403 to a client that is not on loopback", () =>
    Effect.gen(function*() {
      const route = App.loopbackOnly(Effect.succeed(HttpServerResponse.text("admin")))
      const from = (remoteAddress: string | undefined) => {
        const request = HttpServerRequest.fromWeb(new Request("http://emulator/__emulator", { method: "POST" }))
        return Effect.provideService(
          route,
          HttpServerRequest.HttpServerRequest,
          remoteAddress === undefined ? request : request.modify({ remoteAddress })
        )
      }
      expect((yield* from("192.0.2.7")).status).toBe(403)
      expect((yield* from("::ffff:10.1.2.3")).status).toBe(403)
      expect((yield* from("127.0.0.1")).status).toBe(200)
      expect((yield* from("::1")).status).toBe(200)
      // In-process, with no socket: nothing to refuse.
      expect((yield* from(undefined)).status).toBe(200)
    }))

  it.scopedLive("answer 403 to a client not on loopback that resets the connection right after its request", () =>
    Effect.gen(function*() {
      let acted = 0
      const raw = Http.createServer()
      // As a client on another machine looks: its address where Node gives one. Node asks the system when first asked,
      // and once the client has reset the connection there is none to give.
      const nodeAddress = Object.getOwnPropertyDescriptor(Net.Socket.prototype, "remoteAddress")!.get!
      raw.on("connection", (socket: Net.Socket) => {
        Object.defineProperty(socket, "remoteAddress", {
          get: () => (nodeAddress.call(socket) === undefined ? undefined : "192.0.2.7")
        })
      })
      const server = yield* NodeHttpServer.make(() => raw, { port: 0, host: "127.0.0.1" })
      const port = server.address._tag === "TcpAddress" ? server.address.port : 0
      // Behind a router, as the emulator's admin routes are.
      const app = HttpRouter.empty.pipe(
        HttpRouter.post(
          "/__emulator/revoke-tokens",
          App.loopbackOnly(Effect.sync(() => {
            acted += 1
            return HttpServerResponse.text("admin")
          }))
        )
      )
      yield* HttpServer.serveEffect(app).pipe(Effect.provideService(HttpServer.HttpServer, server))
      const request = "POST /__emulator/revoke-tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
      const send = (reset: boolean) =>
        Effect.async<string>((resume) => {
          const socket = Net.connect({ port, host: "127.0.0.1" })
          let answer = ""
          socket.on("data", (chunk) => (answer += chunk))
          socket.on("error", () => {})
          socket.on("close", () => resume(Effect.succeed(answer)))
          socket.on("connect", () => {
            socket.write(request)
            if (reset) socket.resetAndDestroy()
            else socket.end()
          })
        })
      expect(yield* send(false)).toMatch(/^HTTP\/1.1 403/)
      for (let i = 0; i < 10; i++) yield* send(true)
      yield* Effect.sleep("50 millis")
      expect(acted).toBe(0)
    }))

  it.effect("answer 403 to a browser page of another site, even from loopback (a foreign Origin or Host)", () =>
    Effect.gen(function*() {
      const route = App.loopbackOnly(Effect.succeed(HttpServerResponse.text("admin")))
      const withHeaders = (headers: Record<string, string>) =>
        Effect.provideService(
          route,
          HttpServerRequest.HttpServerRequest,
          HttpServerRequest.fromWeb(new Request("http://emulator/__emulator", { method: "POST", headers })).modify({
            remoteAddress: "127.0.0.1"
          })
        )
      // A page on any site can send simple requests to loopback; a rebound DNS name reaches it with its own Host.
      expect((yield* withHeaders({ origin: "https://evil.example" })).status).toBe(403)
      expect((yield* withHeaders({ origin: "null" })).status).toBe(403)
      expect((yield* withHeaders({ host: "evil.example:4010" })).status).toBe(403)
      expect((yield* withHeaders({ origin: "http://localhost:3000", host: "127.0.0.1:4010" })).status).toBe(200)
      expect((yield* withHeaders({ origin: "http://[::1]:3000", host: "[::1]:4010" })).status).toBe(200)
      // Every name of this machine a local client may type: all answered.
      for (const host of ["localhost:4010", "127.0.0.1", "0.0.0.0:4010", "[::]:4010", "[0:0:0:0:0:0:0:1]:4010",
        "[::ffff:127.0.0.1]:4010", "localhost.:4010", "app.localhost:4010", `${Os.hostname()}:4010`]) {
        expect([host, (yield* withHeaders({ host })).status]).toEqual([host, 200])
      }
    }))
})
