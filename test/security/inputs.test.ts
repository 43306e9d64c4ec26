/**
 * Issue 6: input from outside is validated before use, one test per family. Each hostile value must fail with the
 * typed error of its family and, where a client is involved, nothing may leave: the in-memory `HttpClient` of
 * `FinTest` records every request (token calls included), and a valid input through the same client is the control
 * that shows requests would have been seen.
 */
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as CountryCode from "../../src/CountryCode.js"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import * as FinConfig from "../../src/FinConfig.js"
import type { FinError } from "../../src/FinError.js"
import * as FinTest from "../../src/FinTest.js"
import * as HttpTransport from "../../src/HttpTransport.js"
import * as Subdivisions from "../../src/Subdivisions.js"
import { quoteBody } from "../support.js"
import { bundleCli, type Cli, type CountingServer, countingServer } from "../cliHarness.js"

// --- A client on the recording in-memory HttpClient -------------------------------------------------------------------

const routes: FinTest.Routes = {
  "POST /v1/oauth/token": FinTest.tokenHandler(),
  // The documented quote, for the amount asked for (a quote for another is refused as no answer to the request).
  "POST /v1/fee-calculation": (request) => {
    const { destination_amount, source_amount } = request.body as { source_amount?: number; destination_amount?: number }
    return FinTest.json(200, { data: { ...quoteBody.data, ...(source_amount === undefined ? { destination_amount } : { source_amount }) } })
  },
  "GET /v1/countries/*/subdivisions": () =>
    FinTest.json(200, { data: { subdivisions: [{ code: "US-CA", name: "California" }] } })
}

const testOptions: FinConfig.Options = {
  clientId: "test-client",
  clientSecret: "test-secret",
  baseUrl: "http://127.0.0.1:4010",
  maxRetries: 0
}

/** The client's services over a fresh recording HttpClient; `sent` reads what reached it. */
const recordingClient = (options: Partial<FinConfig.Options> = {}) =>
  Effect.gen(function*() {
    const http = yield* Layer.build(FinTest.layerHttpClient(routes))
    const client = yield* Effect.provide(FinClient.make({ ...testOptions, ...options }), http)
    return { client, sent: Context.get(http, FinTest.InMemoryHttp).requests }
  })

/** A value for a report: short, and never throwing (bigint, cycles). */
const show = (value: unknown): string => {
  let text: string
  try {
    text = typeof value === "bigint"
      ? `${value}n`
      : typeof value === "number"
      ? Object.is(value, -0) ? "-0" : String(value)
      : JSON.stringify(value, (_, v: unknown) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v)) ??
        String(value)
  } catch {
    text = String(value)
  }
  return text.length > 60 ? `${text.slice(0, 60)}... (${text.length} characters)` : text
}

const failureOf = <A>(effect: Effect.Effect<A, FinError>) =>
  Effect.map(Effect.either(effect), (result) => (Either.isLeft(result) ? result.left : undefined))

/** Runs `call` on every input; each must fail with RequestValidationError. Returns the inputs that did not. */
const refuseAll = <I>(inputs: ReadonlyArray<I>, call: (input: I) => Effect.Effect<unknown, FinError>) =>
  Effect.gen(function*() {
    const wrong: Array<string> = []
    for (const input of inputs) {
      const error = yield* failureOf(call(input))
      if (error?._tag !== "RequestValidationError") wrong.push(`${show(input)}: ${error?._tag ?? "accepted"}`)
    }
    return wrong
  })

// --- Hostile values ----------------------------------------------------------------------------------------------------

const hostileCountries: ReadonlyArray<unknown> = [
  "usa", "Usa", "US", "us", "840", "../", "../v1", "../../v1/oauth/token", "..%2f", "%2e%2e", "%2E%2E%2Fv1", "USA/../x",
  "USA/", "USA?x=1", "USA#x", "USA%00", "USA\0", "USA\u200b",
  "\u0423SA" /* Cyrillic У */, "U\u0405A" /* Cyrillic Ѕ */, "US\u0410" /* Cyrillic А */,
  "\uff35\uff33\uff21" /* fullwidth */,
  " USA", "USA ", "USA\n", "\tUSA", "U SA", "",
  "A".repeat(100_000), "USA".repeat(1_000), "__proto__", "constructor", "toString", "hasOwnProperty", null, undefined,
  840, ["USA"], { toString: () => "USA" }, new String("USA")
]

const hostileCurrencies: ReadonlyArray<unknown> = [
  "usd", "Usd", "US", "USDD", "US D", " USD", "USD ", "USD\n", "USD\r\nX-Injected: 1", "USD\0", "../", "..%2f",
  "\uff35\uff33\uff24" /* fullwidth */, "U\u0405D" /* Cyrillic Ѕ */, "ÜSD", "%55SD", "", "U".repeat(10_000), "840", 840,
  null, ["USD"], { toString: () => "USD" }
]

const hostileAmounts: ReadonlyArray<unknown> = [
  0, -0, -1, -1e-9, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -Number.MAX_VALUE, Number.MAX_VALUE, 2 ** 53, "100", "1e400",
  "-1", "Infinity", "NaN", "0x10", "", " 100", 10n, null, true, [100], { valueOf: () => 100 }, new Number(100),
  // More than 8 decimal places: a float sum's artefact, a denormal.
  0.1 + 0.2, Number.MIN_VALUE
]

const hostileUuids: ReadonlyArray<unknown> = [
  "../../x", "not-a-uuid", "{e8fccaeb-fb9d-4fae-846e-ea7c97c70b31}", "urn:uuid:e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
  "e8fccaebfb9d4fae846eea7c97c70b31", "e8fccaeb-fb9d-4fae-846e-ea7c97c70b3", "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31a",
  "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31\n", " e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
  "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31/../../v1/oauth/token", "e8fccaeb-fb9d-4fae-846e-ea7c97c70bzz",
  "e8fccaeb\u2010fb9d-4fae-846e-ea7c97c70b31" /* Unicode hyphen */, "\uff45\uff18fccaeb-fb9d-4fae-846e-ea7c97c70b31",
  "", 42, null
]

// --- Families ----------------------------------------------------------------------------------------------------------

describe("Inputs from outside are validated before use", () => {
  it.scoped("country codes: RequestValidationError from every entry point, nothing sent", () =>
    Effect.gen(function*() {
      for (const mode of ["online", "fallback", "offline"] as const) {
        const { client, sent } = yield* recordingClient({ subdivisionMode: mode })
        const list = yield* refuseAll(hostileCountries, (c) => client.subdivisions.list(c as string))
        const crossCheck = yield* refuseAll(hostileCountries, (c) => client.subdivisions.crossCheck(c as string))
        expect({ mode, list, crossCheck }).toEqual({ mode, list: [], crossCheck: [] })
        expect(yield* sent).toEqual([])
        // Control: a valid code goes out (offline: from the snapshot, still nothing sent).
        const usa = yield* client.subdivisions.list("USA")
        expect(usa.source).toBe(mode === "offline" ? "snapshot" : "api")
        expect((yield* sent).map((r) => `${r.method} ${r.path}`)).toEqual(
          mode === "offline" ? [] : ["POST /v1/oauth/token", "GET /v1/countries/USA/subdivisions"]
        )
      }
      // The offline lookups and CountryCode.validate refuse the same inputs with the same error.
      for (const country of hostileCountries) {
        const what = show(country)
        expect(CountryCode.isCountryCode(country), what).toBe(false)
        expect((yield* Effect.flip(CountryCode.validate(country)))._tag, what).toBe("RequestValidationError")
        if (typeof country !== "string") continue
        expect(Either.getLeft(Subdivisions.forCountry(country)).pipe(Option.map((e) => e._tag)), what).toEqual(
          Option.some("RequestValidationError")
        )
        expect(Either.isLeft(Subdivisions.search(country, "a")), what).toBe(true)
        expect(Either.isLeft(Subdivisions.isValid(country, "US-CA")), what).toBe(true)
      }
      // Alpha-2 is converted only on purpose, and only exactly.
      expect(CountryCode.fromAlpha2("US")).toEqual(Option.some("USA"))
      // @ts-expect-error an alpha-3 code is no alpha-2 code: a literal one does not compile (it would only give None)
      expect(CountryCode.fromAlpha2("USA")).toEqual(Option.none())
      // @ts-expect-error lower case
      expect(CountryCode.fromAlpha2("us")).toEqual(Option.none())
      // A caller's own type parameter is left to the run-time answer, as in Subdivisions.
      const ofAlpha2 = <S extends string>(alpha2: S) => CountryCode.fromAlpha2(alpha2)
      expect([ofAlpha2("GB"), ofAlpha2("GBR")]).toEqual([Option.some("GBR"), Option.none()])
      for (const alpha2 of ["us", "U\u0405", "US ", "../", "__proto__", "constructor"]) {
        expect(CountryCode.fromAlpha2(alpha2), alpha2).toEqual(Option.none())
      }
      // Each of the 249 has its own alpha-2 code, which converts back; the type says which codes those are.
      const alpha2s = CountryCode.alpha3Codes.map(CountryCode.toAlpha2)
      expect(new Set(alpha2s).size).toBe(249)
      expect(alpha2s.filter((alpha2) => !/^[A-Z]{2}$/.test(alpha2))).toEqual([])
      expect(alpha2s.map((alpha2) => Option.getOrNull(CountryCode.fromAlpha2(alpha2)))).toEqual(CountryCode.alpha3Codes)
      const us: CountryCode.Alpha2Code = CountryCode.toAlpha2("USA")
      // @ts-expect-error not an alpha-2 code of the table
      const unknown: CountryCode.Alpha2Code = "XX"
      expect([us, unknown]).toEqual(["US", "XX"])
      // The lenient reader (for people typing codes) ignores case and spaces and reads alpha-2, in ASCII only.
      for (const [typed, code] of [["usa", "USA"], [" Usa ", "USA"], ["us", "USA"], ["GB", "GBR"], ["\tcan\n", "CAN"]]) {
        expect(yield* CountryCode.parse(typed!), typed).toBe(code)
      }
      for (const typed of ["\u0131ta", "U\u0405", "uk", "xx", "usa/..", "u s", "", "__proto__", "U$A"]) {
        expect((yield* Effect.flip(CountryCode.parse(typed)))._tag, typed).toBe("RequestValidationError")
      }
      // Values that are not text at all (a query parameter given twice is an array, a JSON field may be anything):
      // the same typed answers, no TypeError thrown.
      for (const value of [["us"], null, undefined, 840, { code: "US" }]) {
        const what = JSON.stringify(value) ?? "undefined"
        const input = value as unknown as string
        expect((yield* Effect.flip(CountryCode.parse(input)))._tag, what).toBe("RequestValidationError")
        expect(Option.isNone(Subdivisions.byCode(input)), what).toBe(true)
        const search = Subdivisions.search("USA", input)
        expect(Either.isLeft(search) && search.left.issues.map((i) => i.path), what).toEqual(["text"])
        expect(Subdivisions.isValid("USA", input), what).toEqual(Either.right(false))
      }
    }))

  it.scoped("currency codes: RequestValidationError naming the field, nothing sent", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* recordingClient()
      const calculate = (request: unknown) => client.fees.calculate(request as FeeService.FeeCalculationRequest)
      const asSource = yield* refuseAll(hostileCurrencies, (c) =>
        calculate({ source_currency: c, destination_currency: "CAD", source_amount: 100 }))
      const asDestination = yield* refuseAll(hostileCurrencies, (c) =>
        calculate({ source_currency: "USD", destination_currency: c, source_amount: 100 }))
      expect({ asSource, asDestination }).toEqual({ asSource: [], asDestination: [] })
      const error = yield* Effect.flip(calculate({ source_currency: "usd", destination_currency: "CAD", source_amount: 1 }))
      expect(error._tag === "RequestValidationError" && error.issues.map((i) => i.path)).toEqual(["source_currency"])
      expect(yield* sent).toEqual([])
      yield* calculate({ source_currency: "USD", destination_currency: "CAD", source_amount: 100 })
      expect((yield* sent).map((r) => r.path)).toEqual(["/v1/oauth/token", "/v1/fee-calculation"])
    }))

  it.scoped("amounts: zero, negative, NaN, infinities, past MAX_SAFE_INTEGER, more than 8 decimal places, strings and other non-numbers are refused, nothing sent", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* recordingClient()
      const calculate = (request: unknown) => client.fees.calculate(request as FeeService.FeeCalculationRequest)
      const source = yield* refuseAll(hostileAmounts, (amount) =>
        calculate({ source_currency: "USD", destination_currency: "CAD", source_amount: amount }))
      const destination = yield* refuseAll(hostileAmounts, (amount) =>
        calculate({ source_currency: "USD", destination_currency: "CAD", destination_amount: amount }))
      expect({ source, destination }).toEqual({ source: [], destination: [] })
      // Both amounts, or neither, and unknown fields are refused too.
      const shapes = yield* refuseAll([
        { source_currency: "USD", destination_currency: "CAD", source_amount: 1, destination_amount: 1 },
        { source_currency: "USD", destination_currency: "CAD" },
        { source_currency: "USD", destination_currency: "CAD", source_amount: 1, fee_override: 0 },
        JSON.parse(`{"source_currency":"USD","destination_currency":"CAD","source_amount":1,"__proto__":{"admin":true}}`),
        null,
        "source_amount=1",
        []
      ], calculate)
      expect(shapes).toEqual([])
      expect(yield* sent).toEqual([])
      // Amounts up to Number.MAX_SAFE_INTEGER, to 8 decimal places, pass through untouched: tiny ones are the caller's
      // business.
      for (const amount of [0.00000001, 0.01, Number.MAX_SAFE_INTEGER]) {
        yield* calculate({ source_currency: "USD", destination_currency: "CAD", source_amount: amount })
      }
      const quoted = (yield* sent).filter((r) => r.path === "/v1/fee-calculation")
      expect(quoted.map((r) => (r.body as { source_amount: number }).source_amount))
        .toEqual([0.00000001, 0.01, Number.MAX_SAFE_INTEGER])
    }))

  it.scoped("beneficiary ids: malformed UUIDs are refused, nothing sent; canonical UUIDs in either case go as given", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* recordingClient()
      const calculate = (request: unknown) => client.fees.calculate(request as FeeService.FeeCalculationRequest)
      const wrong = yield* refuseAll(hostileUuids, (id) => calculate({ beneficiary_id: id, source_amount: 100 }))
      expect(wrong).toEqual([])
      expect(yield* sent).toEqual([])
      const lower = "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"
      for (const id of [lower, lower.toUpperCase()]) yield* calculate({ beneficiary_id: id, source_amount: 100 })
      const quoted = (yield* sent).filter((r) => r.path === "/v1/fee-calculation")
      expect(quoted.map((r) => (r.body as { beneficiary_id: string }).beneficiary_id)).toEqual([lower, lower.toUpperCase()])
    }))

  it.scoped("configuration: hostile URLs, header injection, bad numbers and durations: ConfigError naming the option", () =>
    Effect.gen(function*() {
      const base = { clientId: "id", clientSecret: "secret" }
      const hostile: ReadonlyArray<readonly [string, Partial<Record<keyof FinConfig.Options, unknown>>]> = [
        ["baseUrl", { baseUrl: "javascript:alert(1)" }],
        ["baseUrl", { baseUrl: "file:///etc/passwd" }],
        ["baseUrl", { baseUrl: "data:text/plain,hi" }],
        ["baseUrl", { baseUrl: "ws://127.0.0.1:4010" }],
        ["baseUrl", { baseUrl: "http://sandbox.api.fin.com" }],
        ["baseUrl", { baseUrl: "http://127.0.0.1.evil.example" }],
        ["baseUrl", { baseUrl: "http://localhost.evil.example" }],
        ["baseUrl", { baseUrl: "http://localhost./" }],
        ["baseUrl", { baseUrl: "http://127.0.0.1\n.evil.example" }],
        // Refused for the line break itself, not only for leaving loopback over http (`new URL` would drop it).
        ["baseUrl", { baseUrl: "https://api.fin.com\n.evil.example" }],
        ["baseUrl", { baseUrl: "https://api.fin.com\t.evil.example/" }],
        ["baseUrl", { baseUrl: "https://api.fin.com.evil\r\n.example" }],
        ["baseUrl", { baseUrl: "https://api.fin.com\r.evil.example" }],
        ["baseUrl", { baseUrl: "http://0.0.0.0:4010" }],
        // IPv4 mapped into IPv6: another machine's address is no loopback (127.0.0.1 mapped is, as 127.0.0.1 is).
        ["baseUrl", { baseUrl: "http://[::ffff:a00:1]" }],
        ["baseUrl", { baseUrl: "http://10.0.0.1" }],
        ["baseUrl", { baseUrl: "https://user:pass@api.fin.com" }],
        ["baseUrl", { baseUrl: "https://token@api.fin.com" }],
        ["baseUrl", { baseUrl: "http://127.0.0.1@evil.example" }],
        ["baseUrl", { baseUrl: "https://api.fin.com/?redirect=evil" }],
        ["baseUrl", { baseUrl: "https://api.fin.com/#x" }],
        ["baseUrl", { baseUrl: "//api.fin.com" }],
        ["baseUrl", { baseUrl: "api.fin.com" }],
        ["baseUrl", { baseUrl: "" }],
        ["userAgent", { userAgent: "app/1\r\nX-Injected: 1" }],
        ["userAgent", { userAgent: "app/1\nX-Injected: 1" }],
        ["userAgent", { userAgent: "app/1\r" }],
        ["userAgent", { userAgent: "app\0" }],
        ["userAgent", { userAgent: "app/\u00e9" }],
        ["userAgent", { userAgent: "app\u2028" }],
        // From untyped configuration: not text, so not what would be sent ("effect-fin/0.1.0 5").
        ["userAgent", { userAgent: 5 }],
        ["userAgent", { userAgent: { toString: () => "app/1" } }],
        ["userAgent", { userAgent: Symbol("app") }],
        ["userAgent", { userAgent: Object.create(null) }],
        ["maxRetries", { maxRetries: 1.5 }],
        ["maxRetries", { maxRetries: -1 }],
        ["maxRetries", { maxRetries: 11 }],
        ["maxRetries", { maxRetries: 1e9 }],
        ["maxRetries", { maxRetries: Number.NaN }],
        ["maxRetries", { maxRetries: Number.POSITIVE_INFINITY }],
        ["maxRetries", { maxRetries: "2" }],
        ["clientId", { clientId: " " }],
        ["clientSecret", { clientSecret: "" }],
        ["environment", { environment: "staging" }],
        ["subdivisionMode", { subdivisionMode: "ONLINE" }],
        ...([
          "timeout",
          "deadline",
          "tokenTimeout",
          "maxRetryAfter",
          "refreshMargin",
          "subdivisionCacheTtl",
          "subdivisionFallbackCooldown"
        ] as const)
          .flatMap((name) =>
            [-1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, "-5 seconds", "soon", -1n, [-1, 0], [
              0,
              Number.NaN
            ]].map((value) => [name, { [name]: value }] as const)
          ),
        // A timer counts whole milliseconds: less than one (but more than none) would fire after about one.
        ...(["timeout", "deadline", "tokenTimeout", "maxRetryAfter"] as const)
          .flatMap((name) => [0.5, "1 nanos", "999 micros", 1n].map((value) => [name, { [name]: value }] as const)),
        ["tracePropagation", { tracePropagation: "false" }],
        ["tracePropagation", { tracePropagation: 1 }]
      ]
      const wrong: Array<string> = []
      for (const [name, options] of hostile) {
        const result = yield* Effect.either(FinConfig.resolve({ ...base, ...options } as FinConfig.Options))
        const ok = Either.isLeft(result) && result.left._op === "InvalidData" && result.left.path[0] === name
        const outcome = Either.isRight(result) ? "accepted" : String(result.left)
        if (!ok) wrong.push(`${name} = ${show(Object.values(options)[0])}: ${outcome}`)
      }
      expect(wrong).toEqual([])
      // Through the client: a refused base URL fails the client's construction, and nothing is sent anywhere.
      const http = yield* Layer.build(FinTest.layerHttpClient(routes))
      for (const baseUrl of ["http://localhost.evil.example", "http://127.0.0.1.evil.example", "javascript:alert(1)"]) {
        const error = yield* Effect.flip(Effect.provide(FinClient.make({ ...testOptions, baseUrl }), http))
        expect(ConfigError.isConfigError(error), baseUrl).toBe(true)
      }
      expect(yield* Context.get(http, FinTest.InMemoryHttp).requests).toEqual([])
      // The same from FIN_* variables.
      const fromEnv = (vars: Record<string, string>) =>
        Effect.flip(FinConfig.optionsFromEnv).pipe(
          Effect.withConfigProvider(
            ConfigProvider.fromMap(new Map(Object.entries({ FIN_CLIENT_ID: "id", FIN_CLIENT_SECRET: "secret", ...vars })))
          )
        )
      for (
        const [variable, value] of [
          ["FIN_BASE_URL", "http://localhost.evil.example"],
          ["FIN_USER_AGENT", "app\r\nX-Injected: 1"],
          ["FIN_MAX_RETRIES", "1.5"],
          ["FIN_MAX_RETRIES", "1e3"],
          // An empty value must not read as 0 (retries off); nor anything but digits as a count.
          ["FIN_MAX_RETRIES", ""],
          ["FIN_MAX_RETRIES", " 3"],
          ["FIN_MAX_RETRIES", "1e1"],
          ["FIN_MAX_RETRIES", "3.0"],
          ["FIN_TIMEOUT", "30"],
          ["FIN_CLIENT_ID", "id\n"],
          ["FIN_TIMEOUT", "-5 seconds"],
          ["FIN_TIMEOUT", "Infinity"],
          ["FIN_REFRESH_MARGIN", "-5 seconds"],
          ["FIN_MAX_RETRY_AFTER", "-1 millis"],
          ["FIN_SUBDIVISION_CACHE_TTL", "-24 hours"],
          ["FIN_SUBDIVISION_CACHE_TTL", "NaN hours"],
          ["FIN_SUBDIVISION_FALLBACK_COOLDOWN", "30"],
          ["FIN_MAX_RETRIES", "11"],
          ["FIN_TIMEOUT", "0 millis"],
          ["FIN_CLIENT_SECRET", ""]
        ] as const
      ) {
        const error = yield* fromEnv({ [variable]: value })
        expect(ConfigError.isConfigError(error), `${variable}=${value}`).toBe(true)
        // Named by the variable that holds the bad value, not by the option it feeds.
        expect(String(error), `${variable}=${value}`).toContain(`Invalid data at ${variable}:`)
      }
      // Zero stays allowed where it means "off", and a loopback URL stays allowed.
      const zero = yield* FinConfig.resolve({
        ...base,
        maxRetryAfter: "0 seconds",
        refreshMargin: "0 seconds",
        subdivisionCacheTtl: Duration.zero,
        subdivisionFallbackCooldown: "0 millis"
      })
      expect(
        [zero.maxRetryAfter, zero.refreshMargin, zero.subdivisionCacheTtl, zero.subdivisionFallbackCooldown].map(
          Duration.toMillis
        )
      ).toEqual([0, 0, 0, 0])
      const loopback = yield* FinConfig.resolve({ ...base, baseUrl: "http://localhost:4010/" })
      expect(loopback.baseUrl).toBe("http://localhost:4010")
    }))

  it.scoped("request paths, per-call options and bodies: traversal, CRLF, bad overrides, non-JSON bodies refused, nothing sent", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* recordingClient()
      const get = (path: string) => client.transport.request({ method: "GET", path, response: Schema.Unknown })
      const wrong = yield* refuseAll([
        "/v1/../v1/oauth/token", "/v1/..", "/v1/.", "/v1/./x", "/..", "/v1/%2e%2e/oauth/token", "/v1/%2E%2E%2Foauth",
        "/v1/..%2f..%2fadmin", "/v1/%2f%2fevil.example", "/v1/.%2e/x", "/v1/x\r\nX-Injected: 1",
        "/v1/x%0d%0aX-Injected:%201",
        "/v1/x\nHost: evil.example", "/v1/x y", "/v1/x\0", "/v1/x?admin=1", "/v1/x#frag", "/v1/x;jsessionid=1",
        "//evil.example/v1", "///evil.example", "http://evil.example/v1", "https:evil.example", "/v1//x", "/v1/x/",
        "/v1\\..\\admin", "/v1/@evil.example", "/v1/\u2025", "/v1/\uff0e\uff0e/admin", "/v1/\u00fc", "v1/x", "/", ""
      ], get)
      expect(wrong).toEqual([])
      // Per-call overrides are checked the same way.
      const overrides: ReadonlyArray<HttpTransport.CallOptions> = [
        { timeout: "-1 seconds" }, { timeout: Number.NaN as unknown as "1 second" }, { timeout: Duration.infinity },
        { timeout: "0 seconds" }, { timeout: 30 as unknown as "1 second" }, { timeout: "soon" as "1 second" },
        { deadline: "-5 seconds" }, { deadline: Duration.infinity },
        { maxRetries: 1.5 }, { maxRetries: -1 }, { maxRetries: 11 }, { maxRetries: Number.NaN }
      ]
      const badOverrides = yield* refuseAll(overrides, (options) =>
        HttpTransport.withOptions(get("/v1/countries/USA/subdivisions"), options))
      expect(badOverrides).toEqual([])
      // A body JSON cannot hold, or would send as another value, is refused before anything is sent (JSON.stringify
      // would throw, drop it, or write a placeholder, an inspection form, `{}`).
      const cyclic: Record<string, unknown> = {}
      cyclic.self = cyclic
      const changed = [{ account: Redacted.make("acct-1") }, { fee: Option.some(1) }, { byId: new Map([["a", 1]]) }]
      const badBodies = yield* refuseAll([{ amount: 10n }, 10n, cyclic, () => 1, Symbol("x"), ...changed], (body) =>
        client.transport.request({ method: "POST", path: "/v1/fee-calculation", body, response: Schema.Unknown }))
      expect(badBodies).toEqual([])
      expect(yield* sent).toEqual([])
      // Query values are encoded, never spliced: the service sees exactly the values given, under the path given.
      const query = { q: "a&admin=1", r: "x\r\nX-Injected: 1", s: "../#frag", "t&u": "=" }
      const path = "/v1/countries/USA/subdivisions"
      yield* client.transport.request({ method: "GET", path, query, response: Schema.Unknown })
      const [, request] = yield* sent
      const url = new URL(request!.url)
      expect(url.pathname).toBe(path)
      expect(Object.fromEntries(url.searchParams)).toEqual(query)
      expect(url.hash).toBe("")
      expect(Object.keys(request!.headers)).not.toContain("x-injected")
    }))

  // From untyped code, a cast, or a value read from configuration: the flag that keeps a payment from being sent twice,
  // the method, a metric label, query values and numbers JSON would turn into null are checked before anything is sent.
  it.scoped("request specs: a bad method, safe flag, name, check, query value, GET body, long path or non-finite number is refused, nothing sent", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* recordingClient()
      const request = (spec: Record<string, unknown>) =>
        client.transport.request(
          { method: "POST", path: "/v1/transfers", response: Schema.Unknown, ...spec } as unknown as HttpTransport.RequestSpec<
            unknown,
            unknown
          >
        )
      const wrong = yield* refuseAll<Record<string, unknown>>([
        { method: "post" }, { method: "OPTIONS" }, { method: "GET", body: { a: 1 } }, { safe: "false" }, { safe: 1 },
        { name: "" }, { name: "a\nb" }, { name: "x".repeat(65) }, { name: "fee calculation" }, { name: "token" },
        { name: "webhook" }, { name: "webhook.handle" },
        { query: { a: 1 } }, { query: { a: null } }, { query: { a: ["x", "y"] } }, { query: "a=1" }, { query: ["a"] },
        { body: { amount: Number.NaN } }, { body: { amount: Number.POSITIVE_INFINITY } }, { body: [Number.NEGATIVE_INFINITY] },
        { path: `/v1/${"x".repeat(2_100)}` }, { path: `/${"x".repeat(2_048)}` }, { check: "currency" }
      ], request)
      expect(wrong).toEqual([])
      expect(yield* sent).toEqual([])
      // A query value left undefined (an optional parameter) is left out, not sent as "undefined".
      yield* request({ method: "GET", path: "/v1/countries/USA/subdivisions", query: { a: "1", b: undefined } })
      const calls = (yield* sent).filter((r) => r.path === "/v1/countries/USA/subdivisions")
      expect(calls.map((r) => new URL(r.url).search)).toEqual(["?a=1"])
      // A path of 2,048 characters, the most there may be, goes out.
      const longest = `/${"x".repeat(2_047)}`
      yield* Effect.either(request({ method: "GET", path: longest }))
      expect((yield* sent).filter((r) => r.path === longest)).toHaveLength(1)
      // A name of 64 characters, the most there may be, is taken.
      yield* Effect.either(request({ method: "GET", path: "/v1/named", name: `n${"x".repeat(63)}` }))
      expect((yield* sent).filter((r) => r.path === "/v1/named")).toHaveLength(1)
    }))
})

// --- The command line ----------------------------------------------------------------------------------------------------

describe("Inputs from outside: the effect-fin command line", () => {
  let cli: Cli | undefined
  let server: CountingServer | undefined

  beforeAll(async () => {
    ;[cli, server] = await Promise.all([bundleCli(), countingServer()])
  })
  afterAll(async () => {
    cli?.dispose()
    await server?.close()
  })

  it("hostile arguments: exit 1, one line naming RequestValidationError, nothing reaches the service", async () => {
    const env = { FIN_CLIENT_ID: "id", FIN_CLIENT_SECRET: "secret", FIN_BASE_URL: server!.url, FIN_MAX_RETRIES: "0" }
    const hostile = [
      ["subdivisions", "../v1"],
      ["quote", "--from", "USD", "--to", "CAD", "--amount", "1e400"],
      // Only plain decimals: these are all numbers to `Number`, none of them what the user should have typed.
      ...["0x10", "1e2", " 12", "0b11", "Infinity", "abc", "0", "12.", ""].map((amount) =>
        ["quote", "--from", "USD", "--to", "CAD", "--amount", amount]
      ),
      ["quote", "--from", "USD", "--to", "CAD", "--receive", "0o17"],
      // One bad value per case: a case with two would pass on the first refusal and hide the second one's.
      ["quote", "--from", "US D", "--to", "CAD", "--amount", "100"],
      ["quote", "--from", "USD", "--to", "CAD\r\nX-Injected: 1", "--amount", "100"],
      ["quote", "--from", "USDD", "--to", "CAD", "--amount", "100"],
      ["quote", "--from", "USD", "--to", "CA", "--amount", "100"],
      ["quote", "--amount", "100", "--beneficiary", "../../x"]
    ]
    const results = await Promise.all(hostile.map((args) => cli!.run(args, env)))
    results.forEach((result, i) => {
      const what = hostile[i]!.join(" ")
      expect(result.code, what).toBe(1)
      expect(result.stdout, what).toBe("")
      expect(result.stderr.trimEnd().split("\n"), what).toHaveLength(1)
      expect(result.stderr, what).toMatch(/^effect-fin: RequestValidationError: /)
      expect(result.stderr, what).not.toContain("secret")
    })
    expect(server!.received).toEqual([])
    // Control: a valid argument does reach the service, failing with 503 (so exit 75: worth a later try, unlike 1).
    const valid = await cli!.run(["subdivisions", "USA"], { ...env, FIN_SUBDIVISION_MODE: "online" })
    expect(valid.code).toBe(75)
    expect(valid.stderr).toMatch(/^effect-fin: ApiError: /)
    expect(server!.received.length).toBeGreaterThan(0)
    // Eighteen processes, seventeen at once: on a loaded machine that can take longer than the default 30 s.
  }, 120_000)
})
