/**
 * Schemas and types of the emulator: routes, fault rules, counters, webhook requests and the data parts of the
 * options. Re-exported (with their documentation) from `Emulator.ts`.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import * as Padded from "../../internal/padded.js"
import * as Printable from "../../internal/printable.js"
import * as Quote from "../../internal/quote.js"
import * as Webhooks from "../../Webhooks.js"

/** The emulated operations, named as counters and fault rules name them. */
export const routeNames = Object.freeze([
  "POST /v1/oauth/token",
  "POST /v1/oauth/refresh-token",
  "POST /v1/fee-calculation",
  "GET /v1/countries/{country_code}/subdivisions"
] as const)

/** A faultable route, as `METHOD /path`. */
export type RouteName = typeof routeNames[number]

const routeChoices = `"*" or one of ${routeNames.map((r) => JSON.stringify(r)).join(", ")}`

/** A route of `routeNames`, or `*` for all of them (admin routes are never faulted). */
const RouteSelector = Schema.Literal("*", ...routeNames).annotations({
  title: routeChoices,
  // One message for the whole choice, not one per route.
  message: () => ({ message: routeChoices, override: true })
})

/** The kinds of fault a rule can inject. */
export const faultKinds = Object.freeze(
  ["status", "latency", "stall", "stallBody", "reset", "malformed", "truncated"] as const
)

/** One of `faultKinds`. */
export type FaultKind = typeof faultKinds[number]

// Fields every fault rule has.
const ruleFields = {
  /** Which route the rule applies to; default `*`. */
  route: Schema.optional(RouteSelector),
  /** Probability (0..1) that a matching request gets the fault; default 1. */
  rate: Schema.optional(
    Schema.Number.pipe(Schema.between(0, 1, { message: () => "a number from 0 to 1" }))
  ),
  /** Inject at most this many times, then the rule stays inert (until reset or replaced); default unlimited. */
  times: Schema.optional(Schema.Int.pipe(Schema.positive({ message: () => "a whole number greater than 0" })))
}

const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative({ message: () => "a whole number >= 0" }))

// A body the emulator can send: one `JSON.stringify` writes (no BigInt, cycle, function, or nesting deeper than it
// goes). Checked when the rule is set: otherwise the rule is kept, and every request it matches (and every read of the
// rules) dies with an empty 500.
const JSON_BODY = "a value JSON can write (no BigInt, cycle or function, nesting JSON.stringify can reach)"
const JsonBody = Schema.Unknown.pipe(
  Schema.filter((u) => {
    try {
      return JSON.stringify(u) !== undefined
    } catch {
      return false
    }
  }, {
    message: () => JSON_BODY,
    // Told also where the issues are told without quoting the value (nesting too deep to quote): not `unknown (refined)`.
    title: JSON_BODY
  })
)

/** Answer with an error status (and `Retry-After`, a body of choice). */
export const StatusFault = Schema.Struct({
  kind: Schema.Literal("status"),
  /** An error status, 400 to 599. */
  status: Schema.Int.pipe(Schema.between(400, 599, { message: () => "a whole number from 400 to 599" })),
  /** Sent as `Retry-After` (seconds). */
  retryAfter: Schema.optional(NonNegativeInt),
  /** Sent as `retry-after-ms`. */
  retryAfterMs: Schema.optional(NonNegativeInt),
  /** JSON body to send instead of the documented one for the status. */
  body: Schema.optional(JsonBody),
  ...ruleFields
})

/** Wait before handling the request. */
export const LatencyFault = Schema.Struct({
  kind: Schema.Literal("latency"),
  /** Added before the request is handled (or before the next matching fault). */
  millis: Schema.Int.pipe(Schema.between(0, 600_000, { message: () => "a whole number of milliseconds up to 600000" })),
  ...ruleFields
})

const bare = <K extends string>(kind: K) => Schema.Struct({ kind: Schema.Literal(kind), ...ruleFields })

// Never answer; send a 200's head and the start of its body, then nothing; reset the connection; a 200 whose body is
// not JSON; a body cut short of its Content-Length.
export const StallFault = bare("stall")
export const StallBodyFault = bare("stallBody")
export const ResetFault = bare("reset")
export const MalformedFault = bare("malformed")
export const TruncatedFault = bare("truncated")

/** One fault to inject: which kind, on which route, how often. */
export const FaultRule = Schema.Union(
  StatusFault,
  LatencyFault,
  StallFault,
  StallBodyFault,
  ResetFault,
  MalformedFault,
  TruncatedFault
).annotations({ title: "a fault rule" })

/** A decoded `FaultRule`. */
export type FaultRule = typeof FaultRule.Type

/** Body of `POST /__emulator/faults`. */
export const SetFaultsBody = Schema.Struct({
  faults: Schema.Array(FaultRule),
  /** Add to the current rules instead of replacing them. */
  append: Schema.optional(Schema.Boolean)
})

/** Body of `POST /__emulator/expire-tokens` (optional). */
export const ExpireTokensBody = Schema.Struct({
  /** Also expire the refresh tokens (default: access tokens only). */
  refresh: Schema.optional(Schema.Boolean)
})

/** Body of the admin routes that take no input (`reset`, `revoke-tokens`): empty, or `{}`. */
export const NoInputBody = Schema.Unknown.pipe(
  // Not `Schema.Struct({})`: that is TypeScript's `{}`, any value but null and undefined, extra fields and all.
  Schema.filter(
    (u) => typeof u === "object" && u !== null && !Array.isArray(u) && Object.keys(u).length === 0,
    { message: () => "no input: an empty body or {}" }
  )
)

/** An absolute http(s) URL: a webhook target. */
export const HttpUrl = Schema.String.pipe(
  Schema.filter((s) => {
    try {
      const url = new URL(s)
      return url.protocol === "http:" || url.protocol === "https:"
    } catch {
      return false
    }
  }, { message: () => "an absolute http(s) URL" })
).annotations({ title: "an absolute http(s) URL" })

// As `Webhooks.sign` takes it (and a handler): its padding rule, a control or an invisible formatting character (a
// zero-width space, a soft hyphen, a direction mark) at either end too.
const WebhookSecret = Schema.NonEmptyString.pipe(
  Schema.filter((s) => !Padded.isPadded(s), {
    message: () => "a webhook secret without whitespace, a control or an invisible formatting character at either end"
  })
)

// One message for the whole choice, not one per algorithm.
const Algorithm = Schema.Literal(...Webhooks.algorithms).annotations({
  message: () => ({ message: `one of ${Webhooks.algorithms.join(", ")}`, override: true })
})

const Uuid = Schema.UUID.annotations({ message: () => "a UUID" })

// A documented value, or one the documentation does not list (yet): upper-case words, as the listed ones are. One
// message for the whole, not one per listed value.
const listedOrNew = <const L extends ReadonlyArray<string>>(...listed: L) =>
  Schema.Union(Schema.Literal(...listed), Schema.String.pipe(Schema.pattern(/^[A-Z][A-Z_]{0,63}$/))).annotations({
    message: () => ({
      message: `${listed.join(", ")}, or another value in upper-case letters and _ (at most 64)`,
      override: true
    })
  })

/** What a `beneficiary.status` event says, and where and how it is sent. Everything has a default. */
export const WebhookRequest = Schema.Struct({
  /** Target; registered for later sends too. Default: the registered target. */
  url: Schema.optional(HttpUrl),
  beneficiaryId: Schema.optional(Uuid),
  customerId: Schema.optional(Uuid),
  /** `INDIVIDUAL` (default) or `BUSINESS`; other text plays a type the documentation does not list yet. */
  type: Schema.optional(listedOrNew("INDIVIDUAL", "BUSINESS")),
  /**
   * `PROCESSING`, `ACTIVE` (default), `INACTIVE` or `REJECTED`; other text plays a status the documentation does not
   * list yet (a receiver on effect-fin gets it as `Webhooks.Unlisted`); `null` sends the documented older payload,
   * whose `data` has no `status` field at all.
   */
  status: Schema.optional(
    Schema.Union(listedOrNew("PROCESSING", "ACTIVE", "INACTIVE", "REJECTED"), Schema.Null).annotations({
      // One message for the whole choice, as listedOrNew gives.
      message: () => ({
        message: "PROCESSING, ACTIVE, INACTIVE, REJECTED, or another value in upper-case letters and _ (at most 64)",
        override: true
      })
    })
  ),
  /** Default: `status === "ACTIVE"` (true with `status: null`, as in the documented older payload). */
  active: Schema.optional(Schema.Boolean),
  sandboxMode: Schema.optional(Schema.Boolean),
  /** The event's id; give the id of an event sent before to deliver it again, as the service may. Default: new. */
  eventId: Schema.optional(Uuid),
  /**
   * The event's `created_at` (ISO 8601 with a zone); an earlier one than an event already sent delivers out of
   * order, as the service may. Default: now, with microseconds.
   */
  createdAt: Schema.optional(Webhooks.Timestamp.pipe(Schema.encodedBoundSchema)),
  /**
   * Sign with this secret instead of the configured one (to exercise a receiver's rejection), under the padding rule of
   * the `webhookSecret` option (`Webhooks.sign` refuses a secret with whitespace around it).
   */
  secret: Schema.optional(WebhookSecret),
  algorithm: Schema.optional(Algorithm)
})

/** A decoded `WebhookRequest`. */
export type WebhookRequest = typeof WebhookRequest.Type

/** Body of `POST /__emulator/webhooks`: a `WebhookRequest`, plus `send: false` to only register `url`. */
export const WebhookAdminBody = Schema.Struct({
  ...WebhookRequest.fields,
  send: Schema.optional(Schema.Boolean)
})

// As a client can send them: FinConfig's rules for each.
const ClientId = Schema.NonEmptyString.pipe(
  Schema.filter((s) => !Padded.isPadded(s) && Printable.printable(s) === s, {
    message: () =>
      "a client id without surrounding whitespace, control characters, bidirectional overrides or lone surrogates"
  })
)
const ClientSecret = Schema.NonEmptyString.pipe(
  Schema.filter((s) => !Padded.isPadded(s) && !/\p{Cs}/u.test(s), {
    message: () =>
      "a client secret without whitespace, a control or an invisible formatting character at either end, or lone " +
      "surrogates"
  })
)

/** The data parts of the options (durations are checked apart). */
export const OptionsData = Schema.Struct({
  port: Schema.optional(Schema.Int.pipe(Schema.between(0, 65535, { message: () => "a port from 0 to 65535" }))),
  // Checked here, not left to the listen's lookup: blank, with a path, a port ("127.0.0.1:4010") or brackets
  // ("[::1]", as in a URL), it failed at the listen's lookup (`ListenFailed`: getaddrinfo ENOTFOUND [::1]), which
  // named neither the option nor what was wrong with it.
  // One colon is a port; an IPv6 address has two or more.
  host: Schema.optional(Schema.NonEmptyString.pipe(
    Schema.pattern(/^(?![^:]*:[^:]*$)[^\s\x00-\x1f\x7f/?#@[\]]+$/, {
      message: () =>
        "a host name or IP address to listen on (no port, brackets, spaces, control characters, / ? # or @)"
    })
  )),
  clientId: Schema.optional(ClientId),
  clientSecret: Schema.optional(ClientSecret),
  tokenEnvelope: Schema.optional(Schema.Literal("top", "data")),
  revokeOnIssue: Schema.optional(Schema.Boolean),
  rates: Schema.optional(Quote.Rates),
  fee: Schema.optional(Quote.FeeRule),
  beneficiaries: Schema.optional(Quote.Beneficiaries),
  defaultSourceCurrency: Schema.optional(Quote.CurrencyCode),
  // Keys are checked apart (countries the client can ask for), with a message naming the key.
  subdivisions: Schema.optional(Schema.Record({
    key: Schema.String,
    value: Schema.Array(Schema.Struct({ code: Schema.String, name: Schema.String }))
  })),
  faults: Schema.optional(Schema.Array(FaultRule)),
  seed: Schema.optional(Schema.Int),
  webhookSecret: Schema.optional(WebhookSecret),
  webhookUrl: Schema.optional(HttpUrl),
  webhookAlgorithm: Schema.optional(Algorithm),
  sandboxMode: Schema.optional(Schema.Boolean),
  // Checked apart (as `Duration` inputs); listed so that unknown option names are refused.
  accessTokenLifetime: Schema.optional(Schema.Unknown),
  refreshTokenLifetime: Schema.optional(Schema.Unknown),
  quoteLifetime: Schema.optional(Schema.Unknown),
  validTill: Schema.optional(Schema.Boolean),
  webhookTimeout: Schema.optional(Schema.Unknown),
  rateLimit: Schema.optional(Schema.Struct({
    requests: Schema.Int.pipe(Schema.between(1, 1_000_000, { message: () => "a whole number from 1 to 1,000,000" })),
    // Checked apart, as the other durations.
    per: Schema.optional(Schema.Unknown)
  }))
})

/** What the emulator counted since it started (or since the last reset). */
export interface Counters {
  /** Requests per route (`unmatched`: every other path, admin routes excluded). */
  readonly requests: Readonly<Record<RouteName | "unmatched", number>>
  /** Responses per status code sent by the API routes (faults included; a stall or reset sends none). */
  readonly statuses: Readonly<Record<string, number>>
  /** Faults injected, by kind. */
  readonly faults: Readonly<Record<FaultKind, number>>
  /** Successful `POST /v1/oauth/token` calls. */
  readonly tokensIssued: number
  /** Successful `POST /v1/oauth/refresh-token` calls. */
  readonly tokensRefreshed: number
  /** When each of the last 1,000 tokens was issued or refreshed (epoch ms), oldest first. */
  readonly tokenLog: ReadonlyArray<{ readonly at: number; readonly kind: "issue" | "refresh" }>
  /** Access tokens neither expired nor revoked, now. */
  readonly activeTokens: number
  /** Webhook deliveries that got an HTTP answer (any status). */
  readonly webhooksSent: number
  /** Webhook deliveries that got none (refused, reset, timed out). */
  readonly webhooksFailed: number
  /** API requests answered 429 by the rate limit (`rateLimit`), not by a fault rule. */
  readonly rateLimited: number
}
