/**
 * A seeded property-based fuzz of what the service (or a proxy in between) sends back, on the in-memory client: any
 * status from 200 to 599, headers that lie or repeat (content type and length, encoding, `Retry-After` of every
 * form), and bodies made from the documented answers and error shapes (service-facts 3-5) with fields mutated, or
 * none of them. Whatever comes back, a call ends as a success or a typed `FinError` (never a defect or a hang), within
 * the attempts its policy allows, with a printable message, a kept body of at most 1024 characters, and no credential
 * in the error or in any log line.
 */
import { describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as Runtime from "effect/Runtime"
import * as FeeService from "../src/FeeService.js"
import * as FinClient from "../src/FinClient.js"
import * as FinError from "../src/FinError.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as SubdivisionService from "../src/SubdivisionService.js"
import { quoteBody, quoteRequest } from "./support.js"

const seed = 0x0f_e551
// 2,000 per property passed (about 140 s for the four here); the default keeps the file near 40 s.
const numRuns = Number(process.env.FIN_FUZZ_RUNS ?? 600)
const SECRET = "sk_live_9fQ2xR7vLm3pT8wZ4kHc"
const FEE = "POST /v1/fee-calculation"
const TOKEN = "POST /v1/oauth/token"
const SUBDIVISIONS = "GET /v1/countries/USA/subdivisions"
const UNSAFE = "POST /v1/beneficiaries"

// What `Printable.printable` escapes: none of it may reach a message.
const unprintable = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|\p{Cs}/u

// ---------------------------------------------------------------------------------------------------------------------
// Replies

// Placeholders a handler fills in at answer time: the credentials of the request it answers, echoed in several forms.
const ECHOES = ["@@SECRET@@", "@@BEARER@@", "@@BEARER_URL@@", "@@BEARER_HEAD@@", "@@SECRET_HEAD@@"] as const
// Raw JSON tokens no `JSON.stringify` writes, put where a placeholder string stood.
const RAW = ["1e999", "-1e999", "NaN", "01", "1.", ".5", "0x10", "-", "9007199254740993", "-0", "1E+400"] as const
const rawMark = (raw: string) => `@@RAW:${raw}@@`

const echo = FastCheck.constantFrom(...ECHOES)
const weirdText = FastCheck.oneof(
  FastCheck.string({ unit: "grapheme", maxLength: 40 }),
  FastCheck.string({ unit: "binary", maxLength: 40 }),
  FastCheck.constantFrom("\u001b[2J\u001b[H", "a\r\nINFO forged", "\u202eevil", "\ud800", "\u2028", "\u0000", " ", ""),
  FastCheck.string({ minLength: 1100, maxLength: 3000 }),
  echo,
  echo.map((e) => `token ${e} refused`)
)
const numberish = FastCheck.oneof(
  FastCheck.double(),
  FastCheck.integer(),
  FastCheck.constantFrom(0, -1, 1e308, 2 ** 53, Number.MAX_SAFE_INTEGER, 1e-9, 3508679, 29, 1.45),
  FastCheck.constantFrom(...RAW).map(rawMark),
  FastCheck.constantFrom("NaN", "Infinity", "1e999", "", "12abc", "3508679")
)
const deep = (depth: number) => rawMark(`${"[".repeat(depth)}${"]".repeat(depth)}`)
const anyValue: FastCheck.Arbitrary<unknown> = FastCheck.oneof(
  { weight: 3, arbitrary: numberish },
  { weight: 3, arbitrary: weirdText },
  FastCheck.constantFrom(null, true, false, [], {}, { nested: { deeper: [1, "x", null] } }),
  FastCheck.integer({ min: 1, max: 20_000 }).map(deep),
  FastCheck.jsonValue({ maxDepth: 3 })
)

type Json = { [key: string]: unknown }

// `base` with a few of its fields (dotted paths) removed, replaced or joined by others.
const mutated = (base: Json, paths: ReadonlyArray<string>): FastCheck.Arbitrary<unknown> =>
  FastCheck.array(
    FastCheck.record({
      path: FastCheck.constantFrom(...paths, "extra", "data.extra", "__proto__"),
      op: FastCheck.constantFrom("delete", "set", "set", "set"),
      value: anyValue
    }),
    { maxLength: 3 }
  ).map((edits) => {
    const copy = structuredClone(base)
    for (const { op, path, value } of edits) {
      const keys = path.split(".")
      let at: Json = copy
      for (const key of keys.slice(0, -1)) {
        const next = at[key]
        if (typeof next !== "object" || next === null || Array.isArray(next)) at = {}
        else at = next as Json
      }
      const last = keys[keys.length - 1]!
      if (op === "delete") delete at[last]
      else Object.defineProperty(at, last, { value, enumerable: true, writable: true, configurable: true })
    }
    return copy
  })

const quotePaths = [
  "data",
  ...Object.keys(quoteBody.data).map((key) => `data.${key}`),
  ...Object.keys(quoteBody.data.fee).map((key) => `data.fee.${key}`)
]
const subdivisionsBody = {
  data: { subdivisions: [{ name: "New York", code: "US-NY" }, { name: "Texas", code: "US-TX" }] }
}
const subdivisionPaths = ["data", "data.subdivisions", "data.subdivisions.0", "data.subdivisions.0.code",
  "data.subdivisions.0.name", "data.subdivisions.1.code"]
const tokenFields = {
  access_token: "@@ISSUE@@",
  access_token_ttl: "2099-12-28 10:34:45+00",
  refresh_token: "@@ISSUE_REFRESH@@",
  refresh_token_ttl: "2099-12-28 10:34:45+00",
  current_time: "2099-12-21 10:34:45+00"
}
const tokenPaths = Object.keys(tokenFields)

// The documented error shapes (service-facts 5), then mutated.
const errorShapes: ReadonlyArray<Json> = [
  { message: "Authentication failed" },
  { message: "Resource not found" },
  { message: "Validation failed!", errors: [{ source_amount: "must be positive" }] },
  { status: 400, message: "Validation failed", data: { "basic_info.email": "Must be a valid email address" } },
  { status: 400, message: "Malformed request body" },
  { status: 423, message: "RELIANCE is not available for your client" },
  { status: 500, message: "Internal server error" },
  { message: "A beneficiary with the same account details already exists.", error: { beneficiary_id: "x" } },
  { error: { code: "forbidden", message: "Customer is not eligible for this operation" } },
  { error: { code: "TRANSACTION_NOT_FOUND", message: "The requested transaction could not be found" } },
  {
    error: {
      code: 422,
      type: "FIN_ERROR",
      message: "One or more fields are invalid",
      details: [{ field: "a", message: "b" }]
    }
  },
  { error: { code: 500104, type: "PROVIDER_ERROR", message: "Balance not Available", details: { retry_attempts: 0 } } },
  { message: "one or more wallets already exist for this customer", collisions: [] }
]
const errorPaths = ["message", "status", "errors", "errors.0", "errors.0.source_amount", "data", "error", "error.code",
  "error.message", "error.details", "error.details.0.field", "error.details.0.message", "error.type"]
const manyFieldErrors = FastCheck.integer({ min: 1, max: 60 }).map((n) => ({
  message: "@@SECRET@@",
  errors: Array.from({ length: n }, (_, i) => ({ [`f${i}@@BEARER@@`]: `bad @@BEARER_URL@@ \u001b[31m${i}` }))
}))

const body = (valid: Json, paths: ReadonlyArray<string>): FastCheck.Arbitrary<string> =>
  FastCheck.oneof(
    { weight: 4, arbitrary: FastCheck.oneof(FastCheck.constant(valid), mutated(valid, paths)).map(jsonText) },
    {
      weight: 4,
      arbitrary: FastCheck.oneof(
        FastCheck.constantFrom(...errorShapes),
        FastCheck.constantFrom(...errorShapes).chain((shape) => mutated(shape, errorPaths)),
        manyFieldErrors
      ).map(jsonText)
    },
    { weight: 1, arbitrary: FastCheck.jsonValue({ maxDepth: 4 }).map(jsonText) },
    { weight: 1, arbitrary: weirdText },
    {
      weight: 1,
      arbitrary: FastCheck.constantFrom(
        "",
        " ",
        "\ufeff{}",
        "<html><body>502 Bad Gateway</body></html>",
        "{\"message\":",
        "null",
        `{"message":"${"x".repeat(5000)}"}`,
        `{"data":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
        `{"message":"m","extra":${"[".repeat(100_000)}${"]".repeat(100_000)}}`
      )
    }
  )

const jsonText = (value: unknown): string => {
  let text = JSON.stringify(value) ?? "null"
  for (const [marked, raw] of [...text.matchAll(/"@@RAW:([^@]*)@@"/g)].map((m) => [m[0], m[1]!] as const)) {
    text = text.replace(marked, raw)
  }
  return text
}

const dates = FastCheck.date({ min: new Date(0), max: new Date(Date.UTC(2200, 0)), noInvalidDate: true })
const latin1 = FastCheck.string({
  unit: FastCheck.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c))
})
const waitValue = FastCheck.oneof(
  FastCheck.integer({ min: 0, max: 8 }).map(String),
  FastCheck.constantFrom("99999999999999999999999", "-1", "1.5", "0", "1, 2", "5, garbage", " 3 ", "0.0001", "3e2",
    "Wed, 21 Oct 2015 07:28:00 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Friday, 31-Dec-99 23:59:59 GMT",
    "Sun Nov  6 08:49:37 1994", "Fri, 31 Feb 2031 00:00:00 GMT", "@@SECRET@@"),
  dates.map((d) => d.toUTCString()),
  latin1
)
const headers: FastCheck.Arbitrary<Record<string, string>> = FastCheck.record({
  "content-type": FastCheck.constantFrom("application/json", "application/json; charset=utf-8",
    "application/json; charset=iso-8859-1", "text/html", "text/plain; charset=utf-16", "application/problem+json",
    "", "application/octet-stream", "APPLICATION/JSON"),
  "content-encoding": FastCheck.constantFrom("gzip", "br", "identity", "deflate", "x-garbage", "gzip, identity"),
  "content-length": FastCheck.constantFrom("0", "1", "5", "99999999999", "-1", "abc", "1.5", "4194305"),
  "retry-after": waitValue,
  "retry-after-ms": waitValue,
  "x-request-id": FastCheck.oneof(latin1, FastCheck.constantFrom("@@SECRET@@", "@@BEARER@@", "req-123")),
  date: FastCheck.oneof(dates.map((d) => d.toUTCString()), latin1)
}, { requiredKeys: [] })

const STATUSES = [200, 201, 202, 204, 205, 206, 299, 300, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 408,
  409, 410, 413, 418, 422, 423, 425, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505, 507, 511, 599]
const status = FastCheck.oneof(FastCheck.constantFrom(...STATUSES), FastCheck.integer({ min: 200, max: 599 }))

/** One reply as generated: a `Respond` whose placeholders are filled in at answer time, or a failure. */
type Planned =
  | {
    readonly _tag: "Respond"
    readonly status: number
    readonly body: string
    readonly headers: Record<string, string>
  }
  | { readonly _tag: "Fail"; readonly code: string }
  | { readonly _tag: "FailBody"; readonly code: string; readonly status: number }
  | { readonly _tag: "StallBody"; readonly status: number }
  | { readonly _tag: "Stall" }

const noBody = (s: number) => s === 204 || s === 205 || s === 304
const planned = (valid: Json, paths: ReadonlyArray<string>): FastCheck.Arbitrary<Planned> =>
  FastCheck.oneof(
    {
      weight: 12,
      arbitrary: FastCheck.record({ status, body: body(valid, paths), headers }).map((r): Planned => ({
        _tag: "Respond",
        ...r,
        body: noBody(r.status) ? "" : r.body
      }))
    },
    {
      weight: 1,
      arbitrary: FastCheck.constantFrom("ECONNREFUSED", "ECONNRESET", "socket hang up")
        .map((code): Planned => ({ _tag: "Fail", code }))
    },
    {
      weight: 1,
      arbitrary: FastCheck.record({ code: FastCheck.constantFrom("ECONNRESET", "UND_ERR_SOCKET"), status })
        .map(({ code, status }): Planned => noBody(status) ? { _tag: "Stall" } : { _tag: "FailBody", code, status })
    },
    {
      weight: 1,
      arbitrary: status.map((s): Planned => noBody(s) ? { _tag: "Stall" } : { _tag: "StallBody", status: s })
    }
  )

interface Case {
  readonly maxRetries: number
  readonly replies: ReadonlyArray<Planned>
}
const caseOf = (valid: Json, paths: ReadonlyArray<string>): FastCheck.Arbitrary<Case> =>
  FastCheck.record({
    maxRetries: FastCheck.integer({ min: 0, max: 3 }),
    replies: FastCheck.array(planned(valid, paths), { minLength: 1, maxLength: 4 })
  })

// ---------------------------------------------------------------------------------------------------------------------
// Running a case

interface Seen {
  /** Every credential sent or issued (the secret, each access and refresh token). */
  readonly credentials: Set<string>
  /** The access tokens the fuzzed token route issued in this case. */
  readonly issued: Set<string>
  /** How many of the fuzzed route's answers were 401. */
  unauthorized: number
  served: number
}

const fill = (text: string, secret: string, bearer: string): string =>
  text.replaceAll("@@SECRET@@", secret)
    .replaceAll("@@SECRET_HEAD@@", secret.slice(0, 18))
    .replaceAll("@@BEARER@@", bearer)
    .replaceAll("@@BEARER_URL@@", encodeURIComponent(bearer).replaceAll(".", "%2E"))
    .replaceAll("@@BEARER_HEAD@@", bearer.slice(0, 20))

// A handler answering the case's replies in turn (the last one again after), its placeholders filled in.
const fuzzed = (c: Case, seen: Seen): FinTest.Handler => (request) => {
  const planned = c.replies[Math.min(seen.served, c.replies.length - 1)]!
  seen.served += 1
  const bearer = (request.headers["authorization"] ?? "").replace(/^Bearer /, "")
  const secret = (request.body as { client_secret?: string } | undefined)?.client_secret ?? SECRET
  switch (planned._tag) {
    case "Fail":
      return FinTest.fail(planned.code)
    case "FailBody":
      // A 401 whose body is lost is a 401 all the same: the token refreshed, the call resent once.
      if (planned.status === 401) seen.unauthorized += 1
      return FinTest.failBody(planned.code, planned.status)
    case "StallBody":
      return FinTest.stallBody(planned.status)
    case "Stall":
      return FinTest.stall
    case "Respond": {
      if (planned.status === 401) seen.unauthorized += 1
      let text = fill(planned.body, secret, bearer)
      if (text.includes("@@ISSUE")) {
        const n = seen.credentials.size
        const access = `eyJhbGciOiJIUzI1NiJ9.fuzz${n}.Qm9vZ2llV29vZ2llQmFuZ2Jhbmc`
        const refresh = `rt_fuzz${n}_Tm90QVJlYWxSZWZyZXNoVG9rZW4`
        seen.credentials.add(access).add(refresh)
        seen.issued.add(access)
        text = text.replaceAll("@@ISSUE_REFRESH@@", refresh).replaceAll("@@ISSUE@@", access)
      }
      const head: Record<string, string> = {}
      for (const [name, value] of Object.entries(planned.headers)) head[name] = fill(value, secret, bearer)
      return FinTest.text(planned.status, text, head)
    }
  }
}

// A token route issuing realistic tokens (long, so a cut echo of one is found too), recorded as credentials.
const issuing = (seen: Seen): FinTest.Handler => () => {
  const n = seen.credentials.size
  const access = `eyJhbGciOiJIUzI1NiJ9.ok${n}.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg`
  const refresh = `rt_ok${n}_cmVmcmVzaC10b2tlbi1vZi10aGUtcGFpcg`
  seen.credentials.add(access).add(refresh)
  return FinTest.json(200, { ...tokenFields, access_token: access, refresh_token: refresh })
}

type Route = "fee" | "subdivisions" | "token" | "unsafe"

// The route whose requests a case counts (its answers are the fuzzed ones).
const counted = (route: Route) =>
  route === "token" ? TOKEN : route === "fee" ? FEE : route === "unsafe" ? UNSAFE : SUBDIVISIONS

const call = (route: Route): Effect.Effect<unknown, FinError.FinError, FinClient.Services> => {
  switch (route) {
    case "fee":
    case "token":
      return FeeService.calculate(quoteRequest)
    case "subdivisions":
      return SubdivisionService.list("USA")
    case "unsafe":
      return HttpTransport.request({
        method: "POST",
        path: "/v1/beneficiaries",
        body: { a: 1 },
        response: Schema.Unknown
      })
  }
}

interface Outcome {
  readonly exit: Exit.Exit<unknown, unknown>
  readonly requests: number
  readonly logs: ReadonlyArray<string>
}

// One client per property (a build costs more than a case): each case clears what was recorded, and its logs.
let logs: Array<string> = []
const logger = Logger.make(({ annotations, cause, logLevel, message }) => {
  logs.push(`${logLevel.label} ${JSON.stringify(message)} ${JSON.stringify(Object.fromEntries(annotations))} ${
    Cause.isEmpty(cause) ? "" : Cause.pretty(cause)
  }`)
})

const clientFor = (route: Route, current: () => Case, seen: Seen) => {
  const routes: FinTest.Routes = route === "token"
    // The previous case's token is refused: each case fetches its own, from the fuzzed route.
    ? {
      [TOKEN]: (request) => fuzzed(current(), seen)(request),
      [FEE]: (request: FinTest.RecordedRequest) =>
        seen.issued.has((request.headers["authorization"] ?? "").replace(/^Bearer /, ""))
          ? FinTest.json(200, quoteBody)
          : FinTest.json(401, { message: "Authentication failed" })
    }
    : {
      [TOKEN]: issuing(seen),
      [counted(route)]: (request: FinTest.RecordedRequest) => fuzzed(current(), seen)(request)
    }
  return FinTest.layerClient(routes, {
    clientId: "fuzz-client",
    clientSecret: SECRET,
    maxRetries: TOKEN_RETRIES,
    timeout: "5 seconds",
    tokenTimeout: "5 seconds",
    deadline: "40 seconds",
    // Zero for the token route: a failed fetch keeps no wait, so the next case asks the route again (a refusal's
    // second, which this does not shorten, is waited out by `runCase`).
    maxRetryAfter: route === "token" ? "0 seconds" : "6 seconds",
    subdivisionMode: "online",
    subdivisionCacheTtl: "0 seconds"
  })
}

// Token calls take the client's `maxRetries`; API calls the case's, per call.
const TOKEN_RETRIES = 1

// `FinTest.advanceUntilDone`, cheaper: the clock is moved only once the call has had 200 turns to end without it (a
// failed answer takes some 20, more than advanceUntilDone waits for), each move costing milliseconds of real time.
// Past 5 minutes of TestClock time the call hangs: a defect, which the property reports.
const driven = <A, R>(effect: Effect.Effect<A, never, R>): Effect.Effect<A, never, R> =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    for (let moves = 0; moves <= 10; moves++) {
      for (let turn = 0; turn < 200 && fiber.unsafePoll() === null; turn++) yield* Effect.yieldNow()
      const exit = fiber.unsafePoll()
      if (exit !== null) return yield* exit
      yield* TestClock.adjust("30 seconds")
    }
    yield* Fiber.interrupt(fiber)
    return yield* Effect.dieMessage("still running after 5 minutes of TestClock time")
  })

const runCase = (route: Route, c: Case, seen: Seen) =>
  Effect.gen(function*() {
    const http = yield* FinTest.InMemoryHttp
    yield* http.clear
    seen.unauthorized = 0
    seen.served = 0
    seen.issued.clear()
    logs = []
    // Past the second a refusal of the previous case's is held for, in which no token request would be sent.
    if (route === "token") yield* TestClock.adjust("1 second")
    const calls = route === "token" ? 2 : 1
    const exits = yield* driven(Effect.all(
      Array.from({ length: calls }, () =>
        Effect.exit(call(route).pipe(HttpTransport.withOptions({ maxRetries: c.maxRetries })))),
      { concurrency: "unbounded" }
    )).pipe(Effect.exit)
    const requests = yield* http.count(counted(route))
    return exits._tag === "Success"
      ? exits.value.map((exit): Outcome => ({ exit, requests, logs }))
      : [{ exit: exits, requests, logs }]
  })

// What is wrong with an outcome, if anything (one assertion per case keeps thousands of cases cheap).
const problemOf = (route: Route, c: Case, seen: Seen, { exit, logs, requests }: Outcome): string | undefined => {
  if (Exit.isFailure(exit)) {
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    if (failure === undefined || !FinError.isFinError(failure)) {
      return `ended with no FinError: ${Cause.pretty(exit.cause)}`
    }
    const error: FinError.FinError = failure
    if (unprintable.test(error.message)) return `unprintable message: ${JSON.stringify(error.message)}`
    if ("body" in error && error.body !== undefined && error.body.length > 1024) return `body of ${error.body.length}`
    const shown = [JSON.stringify(error), String(error), ...logs]
    for (const credential of seen.credentials) {
      if (shown.some((text) => text.includes(credential))) return `credential ${credential} shown: ${shown.join("\n")}`
    }
    const { attempts, operation } = error._tag === "RequestValidationError" ? {} : error
    if (operation === counted(route) && attempts !== undefined && attempts > requests) {
      return `attempts ${attempts} > ${requests} requests`
    }
  } else {
    for (const credential of seen.credentials) {
      if (logs.some((text) => text.includes(credential))) return `credential ${credential} logged`
    }
  }
  // The 401 resend, once, is on top of the policy's retries; an unsafe call is never retried otherwise.
  const resend = seen.unauthorized > 0 ? 1 : 0
  const allowed = route === "unsafe" ? 1 + resend : route === "token" ? 1 + TOKEN_RETRIES : 1 + c.maxRetries + resend
  if (requests > allowed) return `${requests} requests, at most ${allowed} allowed`
  return undefined
}

const property = (route: Route, arbitrary: FastCheck.Arbitrary<Case>) => {
  let current: Case | undefined
  const seen: Seen = { credentials: new Set([SECRET]), issued: new Set(), unauthorized: 0, served: 0 }
  return Effect.gen(function*() {
    const runtime = yield* Effect.runtime<FinClient.Services | FinTest.InMemoryHttp>()
    yield* Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(arbitrary, async (c) => {
          current = c
          for (const outcome of await Runtime.runPromise(runtime)(runCase(route, c, seen))) {
            const problem = problemOf(route, c, seen, outcome)
            if (problem !== undefined) throw new Error(problem)
          }
        }),
        { seed, numRuns, endOnFailure: false }
      )
    )
  }).pipe(
    Effect.provide(clientFor(route, () => current!, seen)),
    Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
    Logger.withMinimumLogLevel(LogLevel.All),
    Effect.withRandom(Random.make(seed))
  )
}

describe("response fuzz", () => {
  it.effect("FeeService.calculate", () => property("fee", caseOf(quoteBody, quotePaths)), 120_000)
  it.effect(
    "SubdivisionService.list",
    () => property("subdivisions", caseOf(subdivisionsBody, subdivisionPaths)),
    120_000
  )
  it.effect("the token route", () => property("token", caseOf(tokenFields, tokenPaths)), 120_000)
  it.effect("an unsafe POST", () => property("unsafe", caseOf({ data: { id: "x" } }, ["data", "data.id"])), 120_000)
})
