import { describe, expect, it } from "@effect/vitest"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import type * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { readFileSync } from "node:fs"
import * as FeeService from "../src/FeeService.js"
import * as FinClient from "../src/FinClient.js"
import * as FinConfig from "../src/FinConfig.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import { version } from "../src/internal/version.js"
import * as TokenProvider from "../src/TokenProvider.js"
import { counterValue, eventually, quoteBody, quoteRequest, recordingTracer } from "./support.js"

const base = { clientId: "id", clientSecret: "secret" }
const configError = (options: FinConfig.Options) =>
  Effect.map(Effect.flip(FinConfig.resolve(options)), (e) => String(e))

// The path of each problem a ConfigError holds, sorted.
const problemPaths = (error: ConfigError.ConfigError): Array<string> => {
  const paths = (e: ConfigError.ConfigError): Array<string> =>
    e._op === "And" || e._op === "Or" ? [...paths(e.left), ...paths(e.right)] : [e.path.join(".")]
  return paths(error).sort()
}

// What reading the FIN_* variables given fails with.
const envError = (vars: Record<string, string>) =>
  Effect.flip(
    FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(vars)))))
  )

describe("FinConfig", () => {
  it.effect("fills in the documented defaults", () =>
    Effect.gen(function*() {
      const config = yield* FinConfig.resolve(base)
      expect(config.baseUrl).toBe("https://sandbox.api.fin.com")
      expect(Duration.toMillis(config.timeout)).toBe(30_000)
      expect(Duration.toMillis(config.deadline)).toBe(60_000)
      expect(config.maxRetries).toBe(2)
      expect(Duration.toMillis(config.maxRetryAfter)).toBe(60_000)
      expect(Duration.toMillis(config.tokenTimeout)).toBe(10_000)
      expect(Duration.toMillis(config.refreshMargin)).toBe(60_000)
      expect(config.tracePropagation).toBe(false)
      expect(config.subdivisionMode).toBe("fallback")
      expect(Duration.toHours(config.subdivisionCacheTtl)).toBe(24)
      expect(Duration.toSeconds(config.subdivisionFallbackCooldown)).toBe(30)
      expect(config.userAgent).toBe(`effect-fin/${version}`)
      expect(Redacted.isRedacted(config.clientSecret)).toBe(true)
      expect((yield* FinConfig.resolve({ ...base, environment: "production" })).baseUrl).toBe("https://api.fin.com")
    }))

  it("the version sent in User-Agent is package.json's", () => {
    expect(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version).toBe(version)
  })

  it.effect("accepts https anywhere and http on loopback only", () =>
    Effect.gen(function*() {
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "http://127.0.0.1:8080/" })).baseUrl).toBe("http://127.0.0.1:8080")
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "http://localhost:1" })).baseUrl).toBe("http://localhost:1")
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "http://[::1]:1" })).baseUrl).toBe("http://[::1]:1")
      // IPv4 loopback mapped into IPv6: what `effect-fin emulator --host ::ffff:127.0.0.1` prints to use.
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "http://[::ffff:127.0.0.1]:1" })).baseUrl).toBe("http://[::ffff:7f00:1]:1")
      expect(yield* configError({ ...base, baseUrl: "http://[::ffff:10.0.0.1]:1" })).toContain("must use https")
      expect(yield* configError({ ...base, baseUrl: "http://[::ffff:7f00:1:2]:1" })).toContain("must use https")
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "https://proxy.example/fin/" })).baseUrl).toBe("https://proxy.example/fin")
      expect(yield* configError({ ...base, baseUrl: "http://sandbox.api.fin.com" })).toContain("must use https")
      expect(yield* configError({ ...base, baseUrl: "ftp://x" })).toContain("must use https")
      expect(yield* configError({ ...base, baseUrl: "not a url" })).toContain("not a valid absolute URL")
      expect(yield* configError({ ...base, baseUrl: "https://u:p@x.example" })).toContain("credentials")
      expect(yield* configError({ ...base, baseUrl: "https://:secret@api.fin.com" })).toContain("baseUrl must not carry credentials")
      expect(yield* configError({ ...base, baseUrl: "https://x.example/?a=b" })).toContain("query")
      // A fragment is no part of any request: refused as the query is, not dropped without a word.
      expect(yield* configError({ ...base, baseUrl: "https://x.example/fin#v2" })).toContain("fragment")
      // Port 0: nothing listens there; refused when the layer is built, not as a TransportError at the first call.
      expect(yield* configError({ ...base, baseUrl: "http://127.0.0.1:0" })).toContain("baseUrl must not have port 0")
      expect(yield* configError({ ...base, baseUrl: "https://proxy.example:00/fin" })).toContain("port 0")
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "http://127.0.0.1:1" })).baseUrl).toBe("http://127.0.0.1:1")
      // Blanks and a newline around it (a value from a file) are dropped, as `new URL` drops them; a no-break or
      // zero-width space (a copy from a web page), which it would keep in the path percent-encoded, is refused.
      for (const padded of ["http://127.0.0.1:1\n", " http://127.0.0.1:1 ", "http://127.0.0.1:1\r\n"]) {
        expect((yield* FinConfig.resolve({ ...base, baseUrl: padded })).baseUrl).toBe("http://127.0.0.1:1")
      }
      const invisible = ["https://gw.example/pay\u00a0", "https://gw.example/pay/\u200b", "\ufeffhttps://gw.example\n"]
      for (const padded of invisible) {
        expect(yield* configError({ ...base, baseUrl: padded })).toContain(
          "baseUrl must not start or end with a no-break, zero-width or other invisible space"
        )
      }
    }))

  it.effect("a baseUrl ending in the API's version is refused: the routes add /v1 themselves", () =>
    Effect.gen(function*() {
      // Else "http://127.0.0.1:4010/v1" sends POST /v1/v1/oauth/token, reported as a 404 on POST /v1/oauth/token.
      expect(yield* configError({ ...base, baseUrl: "http://127.0.0.1:4010/v1" })).toContain(
        "baseUrl must not have /v1 as its path: the routes add it (give http://127.0.0.1:4010)"
      )
      expect(yield* configError({ ...base, baseUrl: "https://sandbox.api.fin.com/V1/" })).toContain("(give https://sandbox.api.fin.com)")
      // A gateway's own prefix may end so (mapped onto the service's root); nor is another segment the version.
      for (const baseUrl of ["https://gateway.example/payments/v1", "https://proxy.example/v1x"]) {
        expect((yield* FinConfig.resolve({ ...base, baseUrl })).baseUrl).toBe(baseUrl)
      }
    }))

  it.effect("every trailing slash of baseUrl is dropped: request paths are appended to it", () =>
    Effect.gen(function*() {
      // "https://proxy.example/fin//" kept as ".../fin/" would send ".../fin//v1/...", another path to most proxies.
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "https://proxy.example/fin//" })).baseUrl).toBe("https://proxy.example/fin")
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "http://127.0.0.1:8080///" })).baseUrl).toBe("http://127.0.0.1:8080")
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "https://api.fin.com//" })).baseUrl).toBe("https://api.fin.com")
    }))

  it.effect("an environment given with the other environment's address is a ConfigError, not a silent choice", () =>
    Effect.gen(function*() {
      // FIN_ENVIRONMENT=production with FIN_BASE_URL left at the sandbox's: production credentials sent to the sandbox.
      expect(yield* configError({ ...base, environment: "production", baseUrl: "https://sandbox.api.fin.com/" })).toContain(
        `baseUrl is the sandbox environment's address, and environment is "production"`
      )
      expect(yield* configError({ ...base, environment: "production", baseUrl: "https://SANDBOX.api.fin.com.:443/" })).toContain(
        `baseUrl is the sandbox environment's address`
      )
      expect(yield* configError({ ...base, environment: "sandbox", baseUrl: "https://api.fin.com/v1-proxy" })).toContain(
        `baseUrl is the production environment's address, and environment is "sandbox"`
      )
      // Alike, or one of them only, or another address (a proxy, the emulator): as given.
      expect((yield* FinConfig.resolve({ ...base, environment: "production", baseUrl: "https://api.fin.com" })).baseUrl)
        .toBe("https://api.fin.com")
      expect((yield* FinConfig.resolve({ ...base, baseUrl: "https://api.fin.com" })).baseUrl).toBe("https://api.fin.com")
      expect((yield* FinConfig.resolve({ ...base, environment: "production", baseUrl: "https://proxy.example" })).baseUrl)
        .toBe("https://proxy.example")
      // The same host on another port is another address (a forward, a tunnel): as given, as any other address is.
      const forward = { ...base, environment: "sandbox", baseUrl: "https://api.fin.com:8443" } as const
      expect((yield* FinConfig.resolve(forward)).baseUrl).toBe("https://api.fin.com:8443")
    }))

  it.effect("rejects bad numbers, durations and credentials with a ConfigError naming the option", () =>
    Effect.gen(function*() {
      expect(yield* configError({ ...base, maxRetries: -1 })).toContain("maxRetries")
      expect(yield* configError({ ...base, maxRetries: 1.5 })).toContain("maxRetries")
      expect(yield* configError({ ...base, timeout: "0 seconds" })).toContain("timeout must be greater than zero")
      // A bare number is refused when compiled, and at run time (from untyped code): Effect would read it as millis.
      expect(yield* configError({ ...base, timeout: 30 as unknown as FinConfig.DurationOption })).toContain(
        `timeout must say its unit ("30 seconds", Duration.seconds(30)): a bare number would be read as milliseconds`
      )
      // Text Effect cannot read (from a config file: "30s", "15 mins") is told the form it can: the one it meant when
      // it is a number and a unit spelled otherwise.
      expect(yield* configError({ ...base, timeout: "30s" as FinConfig.DurationOption })).toContain(
        `timeout is not a valid duration: write "30 seconds" (a number, a space and a unit Effect reads)`
      )
      for (const [text, form] of [["15 mins", "15 minutes"], ["2Hours", "2 hours"], [" 1.5 ms ", "1.5 millis"]]) {
        expect(yield* configError({ ...base, timeout: text as FinConfig.DurationOption })).toContain(`write "${form}"`)
      }
      // Not a form that is refused in its turn: that is said instead.
      expect(yield* configError({ ...base, timeout: "0s" as FinConfig.DurationOption })).toContain(
        `timeout is not a valid duration: its form Effect reads, "0 seconds", must be greater than zero`
      )
      expect(yield* configError({ ...base, timeout: "0.5ms" as FinConfig.DurationOption })).toContain(
        `its form Effect reads, "0.5 millis", must be at least 1 millisecond`
      )
      // Nor a guess where the unit may be months as well as minutes.
      for (const timeout of ["30 fortnights", "10 M", "10M"]) {
        expect(yield* configError({ ...base, timeout: timeout as FinConfig.DurationOption })).toContain(
          `timeout is not a valid duration: write a number and a unit such as "30 seconds" or "500 millis"`
        )
      }
      expect(yield* configError({ ...base, timeout: "10m" as FinConfig.DurationOption }))
        .toContain(`write "10 minutes"`)
      // @ts-expect-error a bare number
      expect(yield* configError({ ...base, refreshMargin: 0 })).toContain("refreshMargin must say its unit")
      // @ts-expect-error a bigint (nanoseconds)
      expect(yield* configError({ ...base, deadline: 5n })).toContain("a bare bigint would be read as nanoseconds")
      expect(yield* configError({ ...base, deadline: "0 seconds" })).toContain("deadline")
      expect(yield* configError({ ...base, tokenTimeout: "0 seconds" })).toContain(
        "tokenTimeout must be greater than zero"
      )
      expect(yield* configError({ ...base, tokenTimeout: Duration.infinity })).toContain("finite")
      // Past 24 days a timer never fires: these would be no limit at all. TTLs are no timers, and may be longer.
      for (const name of ["timeout", "deadline", "tokenTimeout", "maxRetryAfter"] as const) {
        expect(yield* configError({ ...base, [name]: "25 days" })).toContain(`${name} must be at most 24 days`)
      }
      for (const name of ["subdivisionCacheTtl", "refreshMargin", "subdivisionFallbackCooldown"] as const) {
        expect((yield* FinConfig.resolve({ ...base, [name]: "30 days" }))[name], name).toEqual(Duration.days(30))
      }
      expect(yield* configError({ ...base, timeout: "soon" as FinConfig.DurationOption })).toContain("timeout")
      // Blank only (an unset template value): said as empty, not as padding.
      for (const clientId of ["", " ", "\t\n"]) {
        expect(yield* configError({ ...base, clientId })).toContain("clientId must be a non-empty string")
      }
      expect(yield* configError({ ...base, clientSecret: "" })).toContain("clientSecret")
      // A zero-width space from a web page's copy, which trim keeps, is refused at either end as a blank is.
      for (const clientId of [" id", "acct-id\u200b", "\u2060acct-id"]) {
        expect(yield* configError({ ...base, clientId })).toContain("clientId must not start or end with whitespace")
      }
      // A bidi override or isolate at either end too: said as such, not as padding.
      for (const clientId of ["acct\ud800id", "acct\r\nid", "ac\u0000ct", "acct\u202eid", "\u202eacct", "acct\u2069"]) {
        expect(yield* configError({ ...base, clientId })).toContain(
          "clientId must hold no control characters, bidirectional overrides or lone surrogates"
        )
      }
      // A Redacted wiped (a layer built again after a shutdown that wiped it): a ConfigError, not a defect.
      const wiped = Redacted.make("s3cr3t-value")
      Redacted.unsafeWipe(wiped)
      expect(yield* configError({ ...base, clientSecret: wiped })).toContain(
        "clientSecret must be a non-empty string (given as a Redacted, one not wiped)"
      )
      // A secret file's trailing newline, said without the secret.
      const padded = yield* configError({ ...base, clientSecret: Redacted.make("s3cr3t-value\n") })
      expect(padded).toContain("clientSecret must not start or end with whitespace")
      expect(padded).not.toContain("s3cr3t-value")
      // A lone surrogate half anywhere (UTF-8 would send U+FFFD in its place), as a string or a Redacted, said without
      // the secret; a whole pair, an emoji, is taken.
      const halves = ["s3cr\ud800t-value", "s3cr3t-value\udfff", "\udbffs3cr3t-value", Redacted.make("s\udc00-value")]
      for (const clientSecret of halves) {
        const said = yield* configError({ ...base, clientSecret })
        expect(said).toContain("clientSecret must hold no lone surrogate halves (UTF-8 would send another secret)")
        expect(said).not.toContain("-value")
      }
      expect((yield* FinConfig.resolve({ ...base, clientSecret: "s3cr\ud83d\udd11t" })).clientId).toBe(base.clientId)
      // What trim leaves, as a webhook secret is checked: a C string's NUL, another C0 control, DEL, a C1 control, NEL,
      // a zero-width space, a soft hyphen, a direction mark or embedding.
      for (
        const clientSecret of [
          "s3cr3t-value\u0000",
          "\u001fs3cr3t-value",
          "s3cr3t-value\u007f",
          "\u0090s3cr3t-value",
          "s3cr3t-value\u0085",
          "s3cr3t-value\u200b",
          "s3cr3t-value\u00ad",
          "\u200fs3cr3t-value",
          "\u202as3cr3t-value",
          "s3cr3t-value\u061c"
        ]
      ) {
        const said = yield* configError({ ...base, clientSecret })
        expect(said).toContain(
          "clientSecret must not start or end with whitespace, a control character or an invisible formatting one"
        )
      }
      expect(yield* configError({ ...base, environment: "prod" as FinConfig.Environment })).toContain("environment")
      expect(yield* configError({ ...base, subdivisionMode: "sometimes" as FinConfig.SubdivisionMode })).toContain("subdivisionMode")
      expect(yield* configError({ ...base, userAgent: "bad\nheader" })).toContain("userAgent")
      expect(yield* configError({ ...base, userAgent: "app/1\x7f" })).toContain("userAgent")
      expect(yield* configError({ ...base, userAgent: "a".repeat(513) })).toContain("userAgent must be at most 512")
      // At the bound, taken; an empty one adds nothing to the library's own (no trailing blank).
      const longest = "a".repeat(512)
      expect((yield* FinConfig.resolve({ ...base, userAgent: longest })).userAgent).toBe(
        `effect-fin/${version} ${longest}`
      )
      expect((yield* FinConfig.resolve({ ...base, userAgent: "" })).userAgent).toBe(`effect-fin/${version}`)
    }))

  it.effect("an option that is none of FinConfig.Options (misspelt, from a config file) is a ConfigError naming it", () =>
    Effect.gen(function*() {
      // From a variable (or a spread) TypeScript does not check excess keys: `maxRetry: 0` would leave 2 retries.
      const misspelt: FinConfig.Options = { ...base, ...{ maxRetry: 0, timout: "1 second" } }
      const error = yield* Effect.flip(FinConfig.resolve(misspelt))
      expect(problemPaths(error)).toEqual(["maxRetry", "timout"])
      expect(String(error)).toContain("maxRetry is no option of FinConfig.Options")
      // Told along with the other problems; a key with control characters is shown escaped.
      const odd = { ...base, maxRetries: -1, ["\u001b[2Jx"]: 1 } as FinConfig.Options
      const both = yield* Effect.flip(FinConfig.resolve(odd))
      expect(problemPaths(both)).toEqual(["\\u001b[2Jx", "maxRetries"])
      expect(String(both)).not.toContain("\u001b")
      // A key every object inherits is no option either (`in` would take `constructor` for one).
      const inherited = { ...base, constructor: "x", toString: "y" } as FinConfig.Options
      expect(problemPaths(yield* Effect.flip(FinConfig.resolve(inherited)))).toEqual(["constructor", "toString"])
    }))

  it.effect("an option given as null (untyped config, meant as none?) is a ConfigError naming it, not its default", () =>
    Effect.gen(function*() {
      const names = [
        "environment", "baseUrl", "timeout", "deadline", "maxRetries", "maxRetryAfter", "tokenTimeout", "refreshMargin",
        "tracePropagation", "userAgent", "subdivisionMode", "subdivisionCacheTtl", "subdivisionFallbackCooldown",
        "maxConcurrentRequests", "retryBudget"
      ]
      for (const name of names) {
        const error = yield* Effect.flip(FinConfig.resolve({ ...base, [name]: null } as unknown as FinConfig.Options))
        expect(problemPaths(error), name).toEqual([name])
      }
    }))

  it.effect("maxConcurrentRequests is a whole number from 1, or none (no limit); FIN_MAX_CONCURRENT_REQUESTS too", () =>
    Effect.gen(function*() {
      expect((yield* FinConfig.resolve(base)).maxConcurrentRequests).toBeUndefined()
      expect((yield* FinConfig.resolve({ ...base, maxConcurrentRequests: 1 })).maxConcurrentRequests).toBe(1)
      expect((yield* FinConfig.resolve({ ...base, maxConcurrentRequests: 500 })).maxConcurrentRequests).toBe(500)
      for (const value of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "4"]) {
        const options = { ...base, maxConcurrentRequests: value } as FinConfig.Options
        const error = yield* Effect.flip(FinConfig.resolve(options))
        expect(problemPaths(error), String(value)).toEqual(["maxConcurrentRequests"])
        expect(String(error)).toContain("maxConcurrentRequests must be a whole number of 1 or more")
      }
      const fromEnv = (value: string) =>
        FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(
          new Map([["FIN_CLIENT_ID", "id"], ["FIN_CLIENT_SECRET", "s"], ["FIN_MAX_CONCURRENT_REQUESTS", value]])
        )))
      expect((yield* FinConfig.resolve(yield* fromEnv("64"))).maxConcurrentRequests).toBe(64)
      // Zero, an empty value (no 0) and what is no count are refused, naming the variable.
      for (const value of ["0", "", " 8", "8.0", "unlimited"]) {
        const error = yield* Effect.flip(fromEnv(value))
        expect(problemPaths(error), value).toEqual(["FIN_MAX_CONCURRENT_REQUESTS"])
      }
    }))

  it.effect("retryBudget is a whole percentage from 0 to 100 or unlimited, 20 by default; FIN_RETRY_BUDGET too", () =>
    Effect.gen(function*() {
      expect((yield* FinConfig.resolve(base)).retryBudget).toBe(20)
      for (const value of [0, 100, "unlimited"] as const) {
        expect((yield* FinConfig.resolve({ ...base, retryBudget: value })).retryBudget).toBe(value)
      }
      for (const value of [-1, 101, 12.5, Number.NaN, "20", "Unlimited", true]) {
        const options = { ...base, retryBudget: value } as FinConfig.Options
        const error = yield* Effect.flip(FinConfig.resolve(options))
        expect(problemPaths(error), String(value)).toEqual(["retryBudget"])
        expect(String(error)).toContain(
          `retryBudget must be a whole number from 0 to 100 (a percentage), or "unlimited"`
        )
      }
      const fromEnv = (value: string) =>
        FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(
          new Map([["FIN_CLIENT_ID", "id"], ["FIN_CLIENT_SECRET", "s"], ["FIN_RETRY_BUDGET", value]])
        )))
      expect((yield* FinConfig.resolve(yield* fromEnv("10"))).retryBudget).toBe(10)
      expect((yield* FinConfig.resolve(yield* fromEnv("UNLIMITED"))).retryBudget).toBe("unlimited")
      // Over 100, an empty value (no 0) and what is no count are refused, naming the variable.
      const over = yield* Effect.flip(fromEnv("150"))
      expect(problemPaths(over)).toEqual(["FIN_RETRY_BUDGET"])
      expect(String(over)).toContain("FIN_RETRY_BUDGET must be a whole number from 0 to 100")
      for (const value of ["", " 8", "8.0", "20%", "none"]) {
        const error = yield* Effect.flip(fromEnv(value))
        expect(problemPaths(error), value).toEqual(["FIN_RETRY_BUDGET"])
        expect(String(error)).toContain("Expected a whole number (digits only) or unlimited")
      }
    }))

  it.effect("reports every problem of the options at once, one InvalidData per option", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        FinConfig.resolve({ ...base, clientId: " id", maxRetries: -1, timeout: "0 seconds", baseUrl: "http://x.example" })
      )
      expect(problemPaths(error)).toEqual(["baseUrl", "clientId", "maxRetries", "timeout"])
      // A base URL given is checked whatever the environment, which it overrides.
      const both = yield* Effect.flip(
        FinConfig.resolve({ ...base, environment: "staging" as FinConfig.Environment, baseUrl: "ftp://x" })
      )
      expect(problemPaths(both)).toEqual(["baseUrl", "environment"])
      // Options that are no object at all fail the effect, not its construction.
      for (const given of [undefined, null, "id"]) {
        const nothing = yield* Effect.flip(FinConfig.resolve(given as unknown as FinConfig.Options))
        expect(ConfigError.isConfigError(nothing) ? "ConfigError" : "other", String(given)).toBe("ConfigError")
      }
    }))

  it.effect("from FIN_* variables, values that do not parse and values the option checks refuse are told together", () =>
    Effect.gen(function*() {
      const error = yield* envError({
        FIN_CLIENT_SECRET: "secret\n",
        FIN_TIMEOUT: "30",
        FIN_MAX_RETRIES: "11",
        FIN_BASE_URL: "http://x.example",
        FIN_ENVIRONMENT: "staging"
      })
      // FIN_CLIENT_ID missing, FIN_TIMEOUT and FIN_ENVIRONMENT unreadable; the secret, the count and the URL readable
      // but refused. Each variable named once.
      expect(problemPaths(error)).toEqual([
        "FIN_BASE_URL",
        "FIN_CLIENT_ID",
        "FIN_CLIENT_SECRET",
        "FIN_ENVIRONMENT",
        "FIN_MAX_RETRIES",
        "FIN_TIMEOUT"
      ])
      expect(String(error)).not.toContain("secret\n")
      expect(String(error)).toContain(
        `Expected a duration with its unit (e.g. "30 seconds", "500 millis") but received "30"`
      )
    }))

  it.effect("from FIN_* variables, one wording per kind of problem: what is not set, what is empty, what is not above zero", () =>
    Effect.gen(function*() {
      const error = yield* envError({
        FIN_CLIENT_ID: "",
        FIN_TIMEOUT: "-5 seconds",
        FIN_DEADLINE: "0 seconds",
        FIN_TOKEN_TIMEOUT: "10s",
        FIN_MAX_RETRY_AFTER: "0.5ms",
        FIN_REFRESH_MARGIN: "0s"
      })
      const problems = (e: ConfigError.ConfigError): Array<string> =>
        e._op === "And" || e._op === "Or"
          ? [...problems(e.left), ...problems(e.right)]
          : [`${e._op} ${e.path.join(".")}: ${"message" in e ? e.message : ""}`]
      expect(problems(error).sort()).toEqual([
        "InvalidData FIN_CLIENT_ID: FIN_CLIENT_ID must be a non-empty string",
        "InvalidData FIN_DEADLINE: FIN_DEADLINE must be greater than zero",
        // Zero where zero is allowed is the form to write; a form refused in its turn (under a millisecond) is said.
        `InvalidData FIN_MAX_RETRY_AFTER: Expected a duration Effect reads but received "0.5ms": its form Effect ` +
        `reads, "0.5 millis", must be at least 1 millisecond`,
        `InvalidData FIN_REFRESH_MARGIN: Expected a duration Effect reads but received "0s": write "0 seconds" (a ` +
        "number, a space and a unit Effect reads)",
        "InvalidData FIN_TIMEOUT: FIN_TIMEOUT must be greater than zero",
        // A number and a unit Effect does not read: the form it does.
        `InvalidData FIN_TOKEN_TIMEOUT: Expected a duration Effect reads but received "10s": write "10 seconds" (a ` +
        "number, a space and a unit Effect reads)",
        "MissingData FIN_CLIENT_SECRET: FIN_CLIENT_SECRET is not set"
      ])
    }))

  it.effect("from FIN_* variables, a negative duration is refused where zero is allowed; an empty count is no 0", () =>
    Effect.gen(function*() {
      // Config.duration would read "-30 seconds" as zero, which these options take ("off"): a sign typed by mistake
      // would turn off Retry-After waits or the fallback cool-down without a word. `FIN_MAX_RETRIES=` (an empty value
      // in a container spec) would read as 0 retries.
      const error = yield* envError({
        FIN_CLIENT_ID: "id",
        FIN_CLIENT_SECRET: "secret",
        FIN_MAX_RETRY_AFTER: "-30 seconds",
        FIN_SUBDIVISION_FALLBACK_COOLDOWN: "-1 minutes",
        FIN_MAX_RETRIES: ""
      })
      expect(problemPaths(error)).toEqual([
        "FIN_MAX_RETRIES",
        "FIN_MAX_RETRY_AFTER",
        "FIN_SUBDIVISION_FALLBACK_COOLDOWN"
      ])
      expect(String(error)).toContain("FIN_MAX_RETRY_AFTER must be zero or more")
    }))

  it.effect("from FIN_* variables under a nested provider, a missing one is named as the provider reads it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(FinConfig.optionsFromEnv.pipe(
        Effect.withConfigProvider(ConfigProvider.fromEnv().pipe(ConfigProvider.nested("EFFECT_FIN_NO_SUCH_MERCHANT")))
      ))
      // EFFECT_FIN_NO_SUCH_MERCHANT_FIN_CLIENT_ID is the variable read; with a dot, it is none an operator could set.
      expect(String(error)).toContain("EFFECT_FIN_NO_SUCH_MERCHANT_FIN_CLIENT_ID")
      expect(String(error)).toContain("EFFECT_FIN_NO_SUCH_MERCHANT_FIN_CLIENT_SECRET")
      expect(String(error)).not.toContain("<redacted>")
    }))

  // A nested provider (effect 3.22) reads every value as a list cut at its commas, and gives the first piece.
  it.effect("from FIN_* variables, a value a nested provider cut at a comma is refused, never used cut", () =>
    Effect.gen(function*() {
      const values = (prefix: string) =>
        new Map([
          [`${prefix}FIN_CLIENT_ID`, "id"],
          [`${prefix}FIN_CLIENT_SECRET`, "s3cr3t,tail"],
          [`${prefix}FIN_USER_AGENT`, "shop/1 (a, b)"]
        ])
      // A timeout cut to text that does not read ("1") is told once, as cut, not also as a duration with no unit.
      // A count cut to one the checks refuse ("12"): told once, as cut, not also as over 10.
      const nested = ConfigProvider.fromMap(
        new Map([...values("M."), ["M.FIN_TIMEOUT", "1,500 millis"], ["M.FIN_MAX_RETRIES", "12,000"]])
      ).pipe(ConfigProvider.nested("M"))
      const error = yield* Effect.flip(FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(nested)))
      expect(problemPaths(error)).toEqual(["FIN_CLIENT_SECRET", "FIN_MAX_RETRIES", "FIN_TIMEOUT", "FIN_USER_AGENT"])
      expect(String(error)).not.toContain("from 0 to 10")
      expect(String(error)).toContain("FIN_CLIENT_SECRET holds a list separator (a comma, unless")
      expect(String(error)).toContain("FIN_TIMEOUT holds a list separator (a comma, unless")
      expect(String(error)).not.toContain("Expected a duration")
      expect(String(error)).not.toContain("s3cr3t")
      // Not nested: read whole.
      const options = yield* FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(values(""))))
      expect([Redacted.value(options.clientSecret as Redacted.Redacted<string>), options.userAgent])
        .toEqual(["s3cr3t,tail", "shop/1 (a, b)"])
      // Nor with a separator of its own, which the text holds whole.
      const semicolons = ConfigProvider.fromMap(new Map([...values(""), ["FIN_CLIENT_SECRET", "s3cr3t;tail"]]), {
        seqDelim: ";"
      })
      const whole = yield* FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(semicolons))
      expect(Redacted.value(whole.clientSecret as Redacted.Redacted<string>)).toBe("s3cr3t;tail")
    }))

  // Only a value the provider cut is refused: one holding a separator that a provider not nested reads whole is used.
  it.effect("from FIN_* variables, any value a nested provider cut is refused (a count too), none read whole", () =>
    Effect.gen(function*() {
      const values = (prefix: string) =>
        new Map([
          [`${prefix}FIN_CLIENT_ID`, "id"],
          [`${prefix}FIN_CLIENT_SECRET`, "ab|cd"],
          [`${prefix}FIN_USER_AGENT`, "shop/1 (linux)"],
          [`${prefix}FIN_MAX_RETRIES`, "1|000"]
        ])
      const whole = ConfigProvider.fromMap(values(""), { seqDelim: "|" })
      const error = yield* Effect.flip(FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(whole)))
      // Read whole: only the count is refused, as not a count.
      expect(problemPaths(error)).toEqual(["FIN_MAX_RETRIES"])
      expect(String(error)).toContain(`received "1|000"`)
      const nested = ConfigProvider.fromMap(values("M."), { seqDelim: "|" }).pipe(ConfigProvider.nested("M"))
      const cut = yield* Effect.flip(FinConfig.optionsFromEnv.pipe(Effect.withConfigProvider(nested)))
      // Cut (a maxRetries of 1, used without a word before): each refused as cut, the secret's text never shown.
      expect(problemPaths(cut)).toEqual(["FIN_CLIENT_SECRET", "FIN_MAX_RETRIES"])
      expect(String(cut)).not.toContain("ab")
      const spaced = ConfigProvider.fromMap(values(""), { seqDelim: " " })
      const options = yield* FinConfig.optionsFromEnv.pipe(
        Effect.withConfigProvider(ConfigProvider.orElse(
          ConfigProvider.fromMap(new Map([["FIN_MAX_RETRIES", "3"]]), { seqDelim: " " }),
          () => spaced
        ))
      )
      expect([Redacted.value(options.clientSecret as Redacted.Redacted<string>), options.userAgent, options.maxRetries])
        .toEqual(["ab|cd", "shop/1 (linux)", 3])
    }))

  it.effect("from FIN_* variables, the environment clash names both variables", () =>
    Effect.gen(function*() {
      const error = yield* envError({
        FIN_CLIENT_ID: "id",
        FIN_CLIENT_SECRET: "secret",
        FIN_ENVIRONMENT: "production",
        FIN_BASE_URL: "https://sandbox.api.fin.com"
      })
      expect(String(error)).toContain(
        `FIN_BASE_URL is the sandbox environment's address, and FIN_ENVIRONMENT is "production"`
      )
    }))

  it.effect("layerFromEnv reads FIN_* variables, with the secret redacted", () =>
    Effect.gen(function*() {
      const options = yield* FinConfig.fromEnv.pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(
          new Map([
            ["FIN_CLIENT_ID", "env-id"],
            ["FIN_CLIENT_SECRET", "env-secret"],
            ["FIN_BASE_URL", "http://127.0.0.1:9"],
            ["FIN_MAX_RETRIES", "4"],
            ["FIN_TIMEOUT", "5 seconds"],
            ["FIN_SUBDIVISION_FALLBACK_COOLDOWN", "2 minutes"]
          ])
        ))
      )
      expect(options.clientId).toBe("env-id")
      expect(Redacted.isRedacted(options.clientSecret)).toBe(true)
      expect(String(options.clientSecret)).not.toContain("env-secret")
      const config = yield* FinConfig.resolve(options)
      expect(config.maxRetries).toBe(4)
      expect(Duration.toSeconds(config.timeout)).toBe(5)
      expect(Duration.toMinutes(config.subdivisionFallbackCooldown)).toBe(2)
    }))

  it.effect("FIN_TRACE_PROPAGATION reads true/false words in any case, and names the words it understands", () =>
    Effect.gen(function*() {
      const read = (value: string) =>
        FinConfig.fromEnv.pipe(
          Effect.map((options) => options.tracePropagation),
          Effect.withConfigProvider(ConfigProvider.fromMap(
            new Map([["FIN_CLIENT_ID", "id"], ["FIN_CLIENT_SECRET", "s"], ["FIN_TRACE_PROPAGATION", value]])
          ))
        )
      for (const value of ["TRUE", "True", "yes", "On", "1"]) expect(yield* read(value), value).toBe(true)
      for (const value of ["FALSE", "False", "no", "OFF", "0"]) expect(yield* read(value), value).toBe(false)
      const error = yield* Effect.flip(read("enabled"))
      expect(problemPaths(error)).toEqual(["FIN_TRACE_PROPAGATION"])
      expect(String(error)).toContain(`true/false, yes/no, on/off or 1/0 (in any case) but received "enabled"`)
    }))

  // A refused value is quoted as the options' own refusals quote one: escaped, and cut (a secret pasted into the
  // wrong variable, two lines of an env file swapped, is not copied whole into the error and the log that shows it).
  it.effect("a refused FIN_* duration, count, boolean or word is quoted escaped and cut to 64 characters", () =>
    Effect.gen(function*() {
      const refusal = (name: string, value: string) =>
        FinConfig.fromEnv.pipe(
          Effect.flip,
          Effect.map(String),
          Effect.withConfigProvider(ConfigProvider.fromMap(
            new Map([["FIN_CLIENT_ID", "id"], ["FIN_CLIENT_SECRET", "s"], [name, value]])
          ))
        )
      const names = [
        "FIN_TIMEOUT",
        "FIN_MAX_RETRIES",
        "FIN_TRACE_PROPAGATION",
        "FIN_ENVIRONMENT",
        "FIN_SUBDIVISION_MODE"
      ]
      for (const name of names) {
        const control = yield* refusal(name, "30 seconds\u202e\u0085")
        expect(control, name).toContain(`received "30 seconds\\u202e\\u0085"`)
        const long = yield* refusal(name, "s3cr3t-".repeat(500))
        expect(long, name).toContain(`received "${"s3cr3t-".repeat(500).slice(0, 64)}"`)
        expect(long, name).not.toContain("s3cr3t-".repeat(10))
      }
    }))

  it.effect("layerFromEnv fails with a ConfigError when FIN_CLIENT_ID is missing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Layer.build(FinClient.layerFromEnv()).pipe(
          Effect.provide(FinTest.layerHttpClient({})),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["FIN_CLIENT_SECRET", "s"]]))),
          Effect.scoped
        )
      )
      expect(String(error)).toContain("FIN_CLIENT_ID")
    }))
})

describe("FinClient", () => {
  const routes: FinTest.Routes = {
    "POST /v1/oauth/token": (request) => {
      const body = request.body as { client_id: string }
      return FinTest.json(200, {
        access_token: `token-of-${body.client_id}`,
        access_token_ttl: "2099-01-01 00:00:00+00",
        current_time: "1970-01-01 00:00:00+00"
      })
    },
    "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody)
  }

  it.effect("make: two accounts in one program keep separate tokens", () =>
    Effect.gen(function*() {
      const a = yield* FinClient.make({ clientId: "alice", clientSecret: "a", baseUrl: "http://127.0.0.1:1" })
      const b = yield* FinClient.make({ clientId: "bob", clientSecret: "b", baseUrl: "http://127.0.0.1:1" })
      yield* a.fees.calculate(quoteRequest)
      yield* b.fees.calculate(quoteRequest)
      expect(Redacted.value(yield* a.tokens.get)).toBe("token-of-alice")
      expect(Redacted.value(yield* b.tokens.get)).toBe("token-of-bob")
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.filter((r) => r.path === "/v1/fee-calculation").map((r) => r.headers.authorization)).toEqual([
        "Bearer token-of-alice",
        "Bearer token-of-bob"
      ])
    }).pipe(Effect.scoped, Effect.provide(FinTest.layerHttpClient(routes))))

  it.effect("make: a client kept past its scope sends nothing, its token cached or not: each call is interrupted", () =>
    Effect.gen(function*() {
      const make = FinClient.make({ clientId: "alice", clientSecret: "a", baseUrl: "http://127.0.0.1:1" })
      const used = yield* Effect.scoped(Effect.tap(make, (client) => client.fees.calculate(quoteRequest)))
      const unused = yield* Effect.scoped(make)
      const listed = yield* Effect.scoped(Effect.tap(make, (client) => client.subdivisions.list("CAN")))
      const http = yield* FinTest.InMemoryHttp
      const before = (yield* http.requests).length
      for (const client of [used, unused, listed]) {
        const calls: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          client.fees.calculate(quoteRequest),
          client.subdivisions.list("USA"),
          client.tokens.get
        ]
        for (const call of calls) {
          const exit = yield* Effect.exit(call)
          expect(Exit.isInterrupted(exit)).toBe(true)
        }
        // As the README says: a request its validation refuses is still refused as such, not interrupted.
        const lowerCase: string = "usd"
        const refused = client.fees.calculate({ ...quoteRequest, source_currency: lowerCase })
        expect(Either.getLeft(yield* Effect.either(refused)).pipe(Option.map((e) => e._tag))).toEqual(
          Option.some("RequestValidationError")
        )
      }
      // And an answer it already holds is still given.
      expect((yield* listed.subdivisions.list("CAN")).source).toBe("api")
      expect((yield* http.requests).length).toBe(before)
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      ...routes,
      "GET /v1/countries/CAN/subdivisions": () =>
        FinTest.json(200, { data: { subdivisions: [{ code: "CA-ON", name: "Ontario" }] } })
    }))))

  // A call in flight when its client's scope closes (`ManagedRuntime.dispose()` does not interrupt the fibers it ran)
  // ends at once as an interruption, as a call on a closed client does, and sends nothing more: its wait for a retry
  // or its attempt would otherwise hold it, and the process, for up to a Retry-After or a timeout.
  for (const reply of ["backoff", "Retry-After", "stalled attempt"] as const) {
    it.effect(`make: a call in flight (${reply}) when its client's scope closes ends at once, sending nothing more`, () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const client = yield* Scope.extend(
          FinClient.make({ clientId: "alice", clientSecret: "a", baseUrl: "http://127.0.0.1:1", maxRetries: 5 }),
          scope
        )
        const call = yield* Effect.fork(client.fees.calculate(quoteRequest))
        yield* TestClock.adjust("10 millis")
        const http = yield* FinTest.InMemoryHttp
        const sent = Effect.map(http.requests, (all) => all.filter((r) => r.path === "/v1/fee-calculation").length)
        expect(yield* sent).toBe(1)
        yield* Scope.close(scope, Exit.void)
        // No time passes: the call has ended with the scope.
        expect(Exit.isInterrupted(yield* Fiber.await(call))).toBe(true)
        expect(yield* sent).toBe(1)
      }).pipe(Effect.provide(FinTest.layerHttpClient({
        ...routes,
        "POST /v1/fee-calculation": () =>
          reply === "stalled attempt"
            ? FinTest.stall
            : FinTest.json(503, { message: "down" }, reply === "Retry-After" ? { "retry-after": "30" } : {})
      }))))
  }

  // The same on the live clock, whose attempts are timed without a fiber of their own (TimeLimits.timeoutFail).
  it.live("make: a call whose attempt stalls ends when its client's scope closes, on the live clock too", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const client = yield* Scope.extend(
        FinClient.make({ clientId: "alice", clientSecret: "a", baseUrl: "http://127.0.0.1:1", timeout: "1 hour" }),
        scope
      )
      const call = yield* Effect.fork(client.fees.calculate(quoteRequest))
      const http = yield* FinTest.InMemoryHttp
      yield* eventually(Effect.map(http.count("POST /v1/fee-calculation"), (n) => n === 1), "the attempt")
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Fiber.await(call))).toBe(true)
    }).pipe(Effect.provide(FinTest.layerHttpClient({ ...routes, "POST /v1/fee-calculation": () => FinTest.stall }))))

  // The attempt the closing ends is interrupted before the call returns: a caller that goes on (a loop catching every
  // exit) must not leave it running, its socket open, with no timer left to end it.
  it.live("make: an attempt its client's closing ends is interrupted before the call returns (live clock)", () => {
    let stopped = 0
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const client = yield* Scope.extend(
        FinClient.make({ clientId: "alice", clientSecret: "a", baseUrl: "http://127.0.0.1:1", timeout: "1 hour" }),
        scope
      )
      const call = yield* Effect.fork(
        Effect.map(Effect.exit(client.fees.calculate(quoteRequest)), (exit) => [Exit.isInterrupted(exit), stopped])
      )
      const http = yield* FinTest.InMemoryHttp
      yield* eventually(Effect.map(http.count("POST /v1/fee-calculation"), (n) => n === 1), "the attempt")
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(call)).toEqual([true, 1])
    }).pipe(Effect.provide(FinTest.layerHttpClient({
      ...routes,
      "POST /v1/fee-calculation": () => Effect.onInterrupt(Effect.never, () => Effect.sync(() => void stopped++))
    })))
  })

  // A client of the user's that holds its requests uninterruptibly (`transformResponse(Effect.uninterruptible)`, a pool
  // that masks interruption) cannot hold a call past its limits: the attempt's timeout, then the deadline, end it.
  it.live("make: a client that ignores interruption still ends a call at its timeout and at its deadline", () => {
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => (release = resolve))
    return Effect.gen(function*() {
      const client = yield* FinClient.make({
        clientId: "alice",
        clientSecret: "a",
        baseUrl: "http://127.0.0.1:1",
        timeout: "100 millis",
        maxRetries: 0
      }).pipe(Effect.provide(Layer.effect(
        HttpClient.HttpClient,
        Effect.map(HttpClient.HttpClient, (http) => HttpClient.transformResponse(http, Effect.uninterruptible))
      )))
      const timedOut = yield* Effect.flip(client.fees.calculate(quoteRequest))
      expect(timedOut).toMatchObject({ _tag: "TimeoutError", kind: "attempt", attempts: 1 })
      const late = yield* Effect.flip(
        HttpTransport.withOptions(client.fees.calculate(quoteRequest), { timeout: "1 hour", deadline: "150 millis" })
      )
      expect(late).toMatchObject({ _tag: "TimeoutError", kind: "deadline" })
      // Both requests still held by the client; let go, they end on their own.
      const http = yield* FinTest.InMemoryHttp
      expect(yield* http.count("POST /v1/fee-calculation")).toBe(2)
      release()
    }).pipe(
      Effect.scoped,
      Effect.provide(FinTest.layerHttpClient({
        ...routes,
        "POST /v1/fee-calculation": () => Effect.as(Effect.promise(() => released), FinTest.json(200, quoteBody))
      }))
    )
  })

  // As a call's span says it was interrupted: the token fetch the closing ended says so on its own span.
  it.live("make: a token fetch ended by its client's closing has its attempts and outcome interrupted on its span", () =>
    Effect.gen(function*() {
      const { layer: tracing, spans } = yield* recordingTracer
      const scope = yield* Scope.make()
      const client = yield* Scope.extend(
        FinClient.make({ clientId: "alice", clientSecret: "a", baseUrl: "http://127.0.0.1:1" }),
        scope
      )
      const call = yield* Effect.fork(client.fees.calculate(quoteRequest).pipe(Effect.provide(tracing)))
      const http = yield* FinTest.InMemoryHttp
      yield* eventually(Effect.map(http.count("POST /v1/oauth/token"), (n) => n === 1), "the token attempt")
      yield* Scope.close(scope, Exit.void)
      yield* Fiber.await(call)
      const token = (yield* spans).find((span) => span.name === "effect-fin.token")
      expect(token?.attributes.get("effect_fin.outcome")).toBe("interrupted")
      expect(token?.attributes.get("effect_fin.attempts")).toBe(1)
      expect(token?.attributes.has("error.type")).toBe(false)
    }).pipe(Effect.provide(FinTest.layerHttpClient({ ...routes, "POST /v1/oauth/token": () => FinTest.stall }))))

  it.effect("layerConfig takes Config values, optional ones included", () =>
    Effect.gen(function*() {
      yield* FeeService.calculate(quoteRequest)
      expect(Redacted.value(yield* Effect.flatMap(TokenProvider.TokenProvider, (t) => t.get))).toBe("token-of-cfg")
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests.map((r) => r.headers["user-agent"])).toEqual([
        `effect-fin/${version} cfg-app/1`,
        `effect-fin/${version} cfg-app/1`
      ])
    }).pipe(
      Effect.provide(
        FinClient.layerConfig({
          clientId: Config.succeed("cfg"),
          clientSecret: Config.redacted(Config.succeed("s")),
          baseUrl: Config.succeed("http://localhost:1"),
          userAgent: Config.succeed("cfg-app/1")
        }).pipe(Layer.provideMerge(FinTest.layerHttpClient(routes)))
      )
    ))

  it.effect("a bad option fails the layer with a ConfigError before any request", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Layer.build(FinClient.layer({ clientId: "x", clientSecret: "y", baseUrl: "http://evil.example" })).pipe(Effect.scoped)
      )
      expect(ConfigError.isInvalidData(error)).toBe(true)
      const requests = yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
      expect(requests).toHaveLength(0)
    }).pipe(Effect.provide(FinTest.layerHttpClient(routes))))
})

describe("token metrics", () => {
  const tokenRequests = (outcome: string) => counterValue("effect_fin_token_requests_total", { outcome })

  it.effect("a token fetch that succeeds after retries counts once, as a success (its retries on their own)", () =>
    Effect.gen(function*() {
      const [ok, failed] = [yield* tokenRequests("success"), yield* tokenRequests("ApiError")]
      const issue = FinTest.tokenHandler()
      let turn = 0
      const flaky: FinTest.Handler = (request) =>
        ++turn <= 2 ? FinTest.json(503, { message: "Service unavailable" }) : issue(request)
      yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest)).pipe(
        Effect.provide(FinTest.layerClient({
          "POST /v1/oauth/token": flaky,
          "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody)
        }))
      )
      expect(turn).toBe(3)
      expect([(yield* tokenRequests("success")) - ok, (yield* tokenRequests("ApiError")) - failed]).toEqual([1, 0])
    }))

  // A slow token route holds every call that needs a token: timed once per token call, its retries' waits included.
  it.effect("effect_fin_token_request_duration_ms times each token call, by grant and outcome, retries included", () =>
    Effect.gen(function*() {
      const timed = Effect.sync(() =>
        Metric.unsafeSnapshot().flatMap((pair) => {
          const tags = Object.fromEntries(pair.metricKey.tags.map((tag) => [tag.key, tag.value]))
          const state = pair.metricState as MetricState.MetricState.Histogram
          return pair.metricKey.name === "effect_fin_token_request_duration_ms" && tags.grant === "client_credentials"
            ? [{ outcome: tags.outcome, count: state.count, sum: state.sum }]
            : []
        })
      )
      const before = yield* timed
      const issue = FinTest.tokenHandler()
      let turn = 0
      yield* FinTest.advanceUntilDone(FeeService.calculate(quoteRequest)).pipe(
        Effect.provide(FinTest.layerClient({
          // The first answer asks a wait of 3 seconds: the token call lasts it, at least.
          "POST /v1/oauth/token": (request) =>
            ++turn === 1
              ? FinTest.json(503, { message: "Service unavailable" }, { "retry-after": "3" })
              : issue(request),
          "POST /v1/fee-calculation": () => FinTest.json(200, quoteBody)
        }))
      )
      const after = (yield* timed).find((entry) => entry.outcome === "success")!
      const was = before.find((entry) => entry.outcome === "success") ?? { count: 0, sum: 0 }
      expect(after.count - was.count).toBe(1)
      // The wait asked, on the TestClock: 3 s, up to the float sums' last digits.
      expect(after.sum - was.sum).toBeCloseTo(3000, 3)
    }))
})
