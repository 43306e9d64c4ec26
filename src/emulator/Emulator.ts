/**
 * A local emulator of the service, the way stripe-mock serves Stripe's SDKs: the documented token, fee-calculation
 * and subdivision operations over real HTTP, a signed `beneficiary.status` webhook sender, fault injection per route
 * (status codes with `Retry-After`, latency, stalls, resets, malformed and truncated bodies) and counters, all on
 * one machine with no credentials.
 *
 * Start it from a test with `Emulator.layer(options)` (an ephemeral port on 127.0.0.1) or as a process with
 * `Emulator.serve(options)`. Times come from Effect's `Clock` (tests can drive token and quote expiry), random
 * choices from Effect's `Random` (or a seeded one with `seed`).
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as CountryCode from "../CountryCode.js"
import type * as FinConfig from "../FinConfig.js"
import * as Durations from "../internal/duration.js"
import * as Issues from "../internal/issues.js"
import * as Loopback from "../internal/loopback.js"
import type { FeeRule } from "../internal/quote.js"
import type * as Webhooks from "../Webhooks.js"
import * as App from "./internal/app.js"
import { EmulatorError } from "./internal/error.js"
import type { Counters } from "./internal/model.js"
import * as model from "./internal/model.js"
import * as State from "./internal/state.js"
import * as Webhook from "./internal/webhook.js"
import type { Delivery as WebhookDelivery } from "./internal/webhook.js"

// ---------------------------------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The emulated operations, as counters and fault rules name them.
 *
 * @since 0.1.0
 * @category constants
 */
export const routeNames: typeof model.routeNames = model.routeNames

/**
 * A route of the emulator a fault rule can target; one of `routeNames`.
 *
 * @since 0.1.0
 * @category models
 */
export type RouteName = model.RouteName

/**
 * The kinds of fault the emulator injects:
 * - `status`: an error status (400-599) with the documented body for it (or `body`), optional `Retry-After`
 *   (`retryAfter`, seconds) and `retry-after-ms` (`retryAfterMs`);
 * - `latency`: `millis` added before the request is handled (several latency rules add up; other faults still apply);
 * - `stall`: nothing is ever sent, not even headers;
 * - `stallBody`: 200 and headers, then a body that never finishes;
 * - `reset`: the connection is reset (TCP RST) before anything is sent;
 * - `malformed`: 200 with a body that is not JSON;
 * - `truncated`: 200 with a `Content-Length` larger than what is sent, then the connection closes.
 *
 * @since 0.1.0
 * @category constants
 */
export const faultKinds: typeof model.faultKinds = model.faultKinds

/**
 * A fault the emulator can inject; one of `faultKinds`.
 *
 * @since 0.1.0
 * @category models
 */
export type FaultKind = model.FaultKind

/**
 * Schema of a fault rule: a `kind` (see `faultKinds`) with its fields, plus `route` (one of `routeNames`, or `*`,
 * the default), `rate` (0..1, default 1; drawn from a `Random` seeded by the `seed` option when given) and `times`
 * (inject at most this many times; default unlimited). Rules are tried in order for each request: every latency
 * rule that fires adds its delay, and the first other rule that fires decides the answer.
 *
 * @since 0.1.0
 * @category schemas
 * @example
 * ```ts
 * // The next fee calculation gets a 503 asking to wait 50 ms, then the service answers normally.
 * emulator.setFaults([{ route: "POST /v1/fee-calculation", kind: "status", status: 503, retryAfterMs: 50, times: 1 }])
 * ```
 */
export const FaultRule: Schema.Schema<FaultRule, typeof model.FaultRule.Encoded> = model.FaultRule

/**
 * A fault rule and how often it fired since it was set (or since the last `reset`): what `injectedFaults` gives, and
 * `GET /__emulator/faults` as its `injected` counts beside the rules.
 *
 * @since 0.1.0
 * @category models
 */
export interface InjectedFault {
  /** The rule, as it was set. */
  readonly rule: FaultRule
  /** How many requests it fired on. */
  readonly injected: number
}

/**
 * A fault rule (see the `FaultRule` schema): one interface per kind, so `rule.kind === "status"` narrows to
 * `StatusFaultRule`.
 *
 * @since 0.1.0
 * @category models
 */
export type FaultRule =
  | StatusFaultRule
  | LatencyFaultRule
  | StallFaultRule
  | StallBodyFaultRule
  | ResetFaultRule
  | MalformedFaultRule
  | TruncatedFaultRule

/**
 * Answer with an error `status` (400 to 599), with `retryAfter` (seconds) sent as `Retry-After`, `retryAfterMs` as
 * `retry-after-ms`, and a JSON `body` in place of the documented one for the status.
 *
 * @since 0.1.0
 * @category models
 */
export interface StatusFaultRule extends Schema.Schema.Type<typeof model.StatusFault> {}

/**
 * Wait `millis` (up to 600,000) before handling the request; every latency rule that fires adds its wait.
 *
 * @since 0.1.0
 * @category models
 */
export interface LatencyFaultRule extends Schema.Schema.Type<typeof model.LatencyFault> {}

/**
 * Never answer: the request waits until the client gives up.
 *
 * @since 0.1.0
 * @category models
 */
export interface StallFaultRule extends Schema.Schema.Type<typeof model.StallFault> {}

/**
 * Answer 200 (`application/json`) with the start of a body, `{"data":`, then nothing more: the route's own answer
 * is never made.
 *
 * @since 0.1.0
 * @category models
 */
export interface StallBodyFaultRule extends Schema.Schema.Type<typeof model.StallBodyFault> {}

/**
 * Reset the connection without an answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResetFaultRule extends Schema.Schema.Type<typeof model.ResetFault> {}

/**
 * A 200 whose body is not JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface MalformedFaultRule extends Schema.Schema.Type<typeof model.MalformedFault> {}

/**
 * A body cut short of its `Content-Length`.
 *
 * @since 0.1.0
 * @category models
 */
export interface TruncatedFaultRule extends Schema.Schema.Type<typeof model.TruncatedFault> {}

/**
 * What the emulator counted since it started or was last reset (admin routes are not counted).
 *
 * @since 0.1.0
 * @category models
 */
export type { Counters } from "./internal/model.js"

/**
 * Schema of what a webhook send may set: the target `url` (registered for later sends), the event's
 * `beneficiaryId`, `customerId`, `type`, `status`, `active`, `sandboxMode`, its `eventId` / `createdAt` (to deliver an
 * event again, or out of order, as the service may), and a `secret` / `algorithm` to sign with instead of the
 * configured ones. Everything is optional.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookRequest: typeof model.WebhookRequest = model.WebhookRequest

/**
 * What a webhook send may set (see the `WebhookRequest` schema).
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookRequest = model.WebhookRequest

/**
 * One webhook delivery: the target, the receiver's HTTP status, the envelope, the exact body sent, and the start of
 * the receiver's answer.
 *
 * @since 0.1.0
 * @category models
 */
export type { Delivery as WebhookDelivery } from "./internal/webhook.js"

/**
 * The documented `beneficiary.status` envelope the sender builds.
 *
 * @since 0.1.0
 * @category models
 */
export type { BeneficiaryStatusEnvelope } from "./internal/webhook.js"

/**
 * A fee: `fixed` plus `percentage` (4 = 4 %) of the source amount (the emulator's reading; the service does not say).
 *
 * @since 0.1.0
 * @category models
 */
export type { FeeRule } from "../internal/quote.js"

/**
 * Invalid options or input (`InvalidOptions`, `InvalidInput`), a host and port it could not listen on (`ListenFailed`:
 * a port in use, say, `listen EADDRINUSE: address already in use 127.0.0.1:4010`, or a host that does not resolve;
 * the listen's own error, with its `code`, is its `cause`), no webhook target (`WebhookNotRegistered`), or a delivery
 * that got no answer (`WebhookDeliveryFailed`).
 *
 * @since 0.1.0
 * @category errors
 */
export { EmulatorError } from "./internal/error.js"

/**
 * A beneficiary the emulator knows: its payout currency and developer fee.
 *
 * @since 0.1.0
 * @category models
 */
export interface Beneficiary {
  /** The account's currency: the destination of every quote naming this beneficiary, whatever the request says. */
  readonly currency: string
  /** Added to the base fee when a request names this beneficiary. */
  readonly developerFee?: FeeRule | undefined
}

/**
 * Options of the emulator; every one has a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Port to listen on; default 0 (an ephemeral port) for `layer`/`make`, 4010 for `serve`. */
  readonly port?: number | undefined
  /** Host to listen on; default `127.0.0.1`. */
  readonly host?: string | undefined
  /** The accepted client id (refused where `FinConfig` refuses one: surrounding whitespace, control characters,
   * bidirectional overrides, lone surrogates); default `emulator-client`. */
  readonly clientId?: string | undefined
  /**
   * The accepted client secret (no whitespace, control or invisible formatting character at either end, as
   * `FinConfig`); default `emulator-secret`.
   */
  readonly clientSecret?: string | undefined
  /**
   * Lifetime of access tokens (1 second to 100 years); default 1 day (the documented example's). Use whole seconds:
   * expiries are sent so.
   */
  readonly accessTokenLifetime?: FinConfig.DurationOption | undefined
  /** Lifetime of refresh tokens (1 second to 100 years); default 7 days. */
  readonly refreshTokenLifetime?: FinConfig.DurationOption | undefined
  /** Token response at top level (the newer documented shape, default) or wrapped in `data` (the older one). */
  readonly tokenEnvelope?: "top" | "data" | undefined
  /** Whether issuing or refreshing a token revokes every token issued before; default false. */
  readonly revokeOnIssue?: boolean | undefined
  /**
   * Exchange rates keyed `"USD/CAD"`; default `defaultRates`. A missing inverse pair is derived; one given is used as
   * it is (a spread), not checked against the other.
   */
  readonly rates?: Readonly<Record<`${string}/${string}`, number>> | undefined
  /** The base fee: fixed part plus percentage of the source amount; default `{ fixed: 1, percentage: 1 }`. */
  readonly fee?: FeeRule | undefined
  /** How long a quote holds (`valid_till`, at most 100 years); default 15 minutes. */
  readonly quoteLifetime?: FinConfig.DurationOption | undefined
  /**
   * Whether quotes carry `valid_till` (default true, the current documented answer); false answers as the older
   * documented example did, with no `valid_till`: to test what your program does with such a quote.
   */
  readonly validTill?: boolean | undefined
  /** Known beneficiaries by id (a UUID); default `defaultBeneficiaries`. Any other `beneficiary_id` gets 404. */
  readonly beneficiaries?: Readonly<Record<string, Beneficiary>> | undefined
  /** Source currency of a request that names a beneficiary but no `source_currency`; default `USD`. */
  readonly defaultSourceCurrency?: string | undefined
  /**
   * The subdivision lists to serve, by country (three upper-case letters), instead of the snapshot's: to test what a
   * service whose list differs does to your program (renamed, missing or added entries, entries of another country,
   * none at all). Served as given; every other country keeps the snapshot's list.
   */
  readonly subdivisions?:
    | Readonly<Record<string, ReadonlyArray<{ readonly code: string; readonly name: string }>>>
    | undefined
  /** Fault rules active from the start (and again after a reset). */
  readonly faults?: ReadonlyArray<FaultRule> | undefined
  /**
   * Seed of the `Random` behind fault rates and ids, for runs that repeat exactly; default: Effect's `Random`. A
   * default webhook event id is still new after a reset and apart from another emulator's in this process (the ids of
   * a run repeat in the next run of the same program).
   */
  readonly seed?: number | undefined
  /** Secret the webhook sender signs with; default `emulator-webhook-secret`. */
  readonly webhookSecret?: string | undefined
  /** Webhook target registered from the start. */
  readonly webhookUrl?: string | undefined
  /** HMAC algorithm of the webhook signatures; default `sha256`. */
  readonly webhookAlgorithm?: Webhooks.Algorithm | undefined
  /** How long a webhook delivery may take (at most 24 days); default 10 seconds. */
  readonly webhookTimeout?: FinConfig.DurationOption | undefined
  /** `sandbox_mode` of the events sent; default true. */
  readonly sandboxMode?: boolean | undefined
  /**
   * A rate limit on the API's calls (the fee and subdivision routes, a call refused for its token included; the token
   * routes are not limited), a token bucket: `requests` (1 to 1,000,000) at once, then one every `per / requests`
   * (`per` default 1 second; at most 24 days), never more than `requests` saved up (a `per` that starts full lets
   * through up to about twice `requests`). A request over it is answered 429 with `Retry-After` (the whole seconds
   * until one would be let through, at least 1) and the documented error body, before any fault rule, and counted in
   * `rateLimited`; a reset fills it. Default: none. The service documents no limit of its own: this is to see what a
   * program does under one.
   */
  readonly rateLimit?: { readonly requests: number; readonly per?: FinConfig.DurationOption | undefined } | undefined
}

/**
 * Default credentials.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultCredentials: { readonly clientId: string; readonly clientSecret: string } = Object.freeze({
  clientId: "emulator-client",
  clientSecret: "emulator-secret"
})

/**
 * Default rate table (illustrative figures; USD/CAD and USD/EUR are the documented examples').
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultRates: Readonly<Record<string, number>> = Object.freeze({
  "USD/CAD": 1.45,
  "USD/EUR": 0.88,
  "USD/GBP": 0.79,
  "USD/AUD": 1.52,
  "USD/MXN": 17.1,
  "USD/INR": 83.2,
  "USD/PHP": 56.3,
  "USD/BRL": 5.1,
  "USD/NGN": 1500,
  "EUR/GBP": 0.86
})

/**
 * Default beneficiaries: the documented example ones, the webhook event's (the first: events default to it) and the
 * fee calculation requests' (`ceb7e6c9-...`: those examples, sent as documented, are quoted), each paid in CAD (the
 * documented quote's currency), with a developer fee.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBeneficiaries: Readonly<Record<string, Beneficiary>> = Object.freeze({
  [Webhook.exampleBeneficiaryId]: Object.freeze({
    currency: "CAD",
    developerFee: Object.freeze({ fixed: 0.5, percentage: 0.5 })
  }),
  "ceb7e6c9-ef2a-41c2-8459-38d67ec3c655": Object.freeze({
    currency: "CAD",
    developerFee: Object.freeze({ fixed: 0.5, percentage: 0.5 })
  })
})

/**
 * The running emulator.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** `http://127.0.0.1:PORT`: the `baseUrl` to give the client. */
  readonly url: string
  /** The port it listens on: the one the system chose when `port` was 0. */
  readonly port: number
  /** The credentials the token endpoint accepts. */
  readonly credentials: { readonly clientId: string; readonly clientSecret: string }
  /** The secret the webhook sender signs with. */
  readonly webhookSecret: string
  /** Replaces the fault rules (validated; counts of `times` start over). */
  readonly setFaults: (faults: ReadonlyArray<FaultRule>) => Effect.Effect<void, EmulatorError>
  /** Adds fault rules after the current ones. */
  readonly addFaults: (faults: ReadonlyArray<FaultRule>) => Effect.Effect<void, EmulatorError>
  /** Removes every fault rule. */
  readonly clearFaults: Effect.Effect<void>
  /** The current fault rules. */
  readonly faults: Effect.Effect<ReadonlyArray<FaultRule>>
  /** The current fault rules, each with how often it fired since it was set (or since the last `reset`). */
  readonly injectedFaults: Effect.Effect<ReadonlyArray<InjectedFault>>
  /** What was counted since the start or the last `reset` (requests per route, statuses, faults, tokens, webhooks). */
  readonly counters: Effect.Effect<Counters>
  /** Back to the start: no tokens, zero counters, the fault rules and webhook target of the options. */
  readonly reset: Effect.Effect<void>
  /** Revokes every access and refresh token; returns how many access tokens were active. */
  readonly revokeTokens: Effect.Effect<number>
  /**
   * Every access and refresh token issued so far (the last 10,000, oldest first; kept across `reset`): for tests that
   * check none reaches a log line, an error or a span.
   */
  readonly issuedTokens: Effect.Effect<ReadonlyArray<string>>
  /** Expires every access token now (and the refresh tokens with `refresh: true`); returns how many were active. */
  readonly expireTokens: (options?: { readonly refresh?: boolean | undefined }) => Effect.Effect<number>
  /** Registers the webhook target. */
  readonly registerWebhook: (url: string) => Effect.Effect<void, EmulatorError>
  /** Sends one signed `beneficiary.status` event; returns the receiver's status and the start of its answer. */
  readonly sendWebhook: (request?: WebhookRequest) => Effect.Effect<WebhookDelivery, EmulatorError>
}

/**
 * A running emulator, provided by `layer`.
 *
 * @since 0.1.0
 * @category tags
 */
export class Emulator extends Context.Tag("effect-fin/Emulator")<Emulator, Service>() {}

// ---------------------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------------------

const invalidOptions = (message: string) => new EmulatorError({ reason: "InvalidOptions", message })

// In milliseconds: greater than zero, and from 1 second to 100 years for a lifetime, at most 24 days for a timer (past
// that it fires at once).
const positiveDuration = (
  name: string,
  input: Duration.DurationInput | undefined,
  fallback: Duration.DurationInput,
  kind: "lifetime" | "timer" = "lifetime"
): Either.Either<number, EmulatorError> =>
  Durations.check(input ?? fallback, false, kind === "timer").pipe(
    Either.flatMap((d) => {
      const problem = kind === "timer" ? undefined : Durations.lifetimeProblem(d)
      return problem === undefined ? Either.right(d) : Either.left(problem)
    }),
    Either.mapBoth({
      onLeft: (problem) => invalidOptions(`Invalid emulator option ${name}: ${name} ${problem}`),
      onRight: Duration.toMillis
    })
  )

const decodeOptionsData = Schema.decodeUnknownEither(model.OptionsData, { errors: "all", onExcessProperty: "error" })

const resolve = (options: Options, defaultPort: number): Effect.Effect<State.Settings, EmulatorError> =>
  Effect.gen(function*() {
    const data = yield* Either.mapLeft(
      decodeOptionsData(options),
      (error) => invalidOptions(`Invalid emulator options: ${Issues.describeAll(error)}`)
    )
    // A list for a country the client cannot ask for (a misspelt "GER") would leave the snapshot's served, unnoticed.
    for (const country of Object.keys(data.subdivisions ?? {})) {
      if (!CountryCode.isCountryCode(country)) {
        return yield* invalidOptions(
          `Invalid emulator option subdivisions: ${JSON.stringify(country)} is not a country code of ISO 3166-1 alpha-3, like DEU`
        )
      }
    }
    const beneficiaries: Record<string, Beneficiary> = {}
    // Ids are matched without regard to case, as UUIDs are.
    for (const [id, beneficiary] of Object.entries(data.beneficiaries ?? defaultBeneficiaries)) {
      beneficiaries[id.toLowerCase()] = beneficiary
    }
    return {
      host: data.host ?? "127.0.0.1",
      port: data.port ?? defaultPort,
      clientId: data.clientId ?? defaultCredentials.clientId,
      clientSecret: data.clientSecret ?? defaultCredentials.clientSecret,
      accessLifetime: yield* positiveDuration("accessTokenLifetime", options.accessTokenLifetime, "1 day"),
      refreshLifetime: yield* positiveDuration("refreshTokenLifetime", options.refreshTokenLifetime, "7 days"),
      tokenEnvelope: data.tokenEnvelope ?? "top",
      revokeOnIssue: data.revokeOnIssue ?? false,
      rates: data.rates ?? defaultRates,
      fee: data.fee ?? { fixed: 1, percentage: 1 },
      quoteLifetime: yield* positiveDuration("quoteLifetime", options.quoteLifetime, "15 minutes"),
      validTill: data.validTill ?? true,
      beneficiaries,
      defaultSourceCurrency: data.defaultSourceCurrency ?? "USD",
      subdivisions: data.subdivisions ?? {},
      faults: data.faults ?? [],
      seed: data.seed,
      webhookSecret: data.webhookSecret ?? "emulator-webhook-secret",
      webhookUrl: data.webhookUrl,
      webhookAlgorithm: data.webhookAlgorithm ?? "sha256",
      webhookTimeout: yield* positiveDuration("webhookTimeout", options.webhookTimeout, "10 seconds", "timer"),
      sandboxMode: data.sandboxMode ?? true,
      rateLimit: data.rateLimit === undefined ? undefined : {
        requests: data.rateLimit.requests,
        perMillis: yield* positiveDuration("rateLimit.per", options.rateLimit?.per, "1 second", "timer")
      }
    }
  })

const decodeInput = <A, I>(schema: Schema.Schema<A, I>, what: string) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  return (input: unknown): Effect.Effect<A, EmulatorError> =>
    Either.match(decode(input), {
      onLeft: (error) =>
        Effect.fail(
          new EmulatorError({
            reason: "InvalidInput",
            message: `Invalid ${what}: ${Issues.describeAll(error)}`
          })
        ),
      onRight: Effect.succeed
    })
}

const decodeFaults = decodeInput(Schema.Array(model.FaultRule), "fault rules")
const decodeWebhookRequest = decodeInput(model.WebhookRequest, "webhook request")
const decodeWebhookUrl = decodeInput(model.HttpUrl, "webhook url")

// ---------------------------------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------------------------------

// A zone id (`::1%lo`) is listened on, but no URL the WHATWG parser (and so effect-fin's client) takes: on a loopback
// address it changes nothing (loopback is on one interface), so it is left out there, and the URL is one that works.
const urlHost = (host: string): string => {
  if (host === "0.0.0.0") return "127.0.0.1"
  if (host === "::") return "[::1]"
  if (!host.includes(":")) return host
  const unscoped = `[${host.replace(/%.*$/, "")}]`
  return host.includes("%") && Loopback.urlIsLoopback(`http://${unscoped}`) ? unscoped : `[${host}]`
}

// Stops listening, then ends every connection, in-flight ones included (a stalled request would otherwise hold
// `server.close` forever); done once the server reports every connection closed.
const shutdown = (server: Http.Server, sockets: Set<Net.Socket>) =>
  Effect.async<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
    for (const socket of sockets) socket.destroy()
  })

const makeWithDefaultPort = (
  options: Options,
  defaultPort: number
): Effect.Effect<Service, EmulatorError, Scope.Scope> =>
  Effect.gen(function*() {
    const settings = yield* resolve(options, defaultPort)
    const state = yield* State.make(settings)
    // The webhook sender's own connection pool, closed with the emulator.
    const client = NodeHttpClient.makeUndici(yield* NodeHttpClient.makeDispatcher)

    const sockets = new Set<Net.Socket>()
    const server = Http.createServer()
    server.on("connection", (socket) => {
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
    })
    // Not cut short while it starts listening (a layer built beside this one failing): the platform closes only a
    // server that listens, so one interrupted then would be left listening once its bind ended, holding the process.
    const httpServer = yield* Effect.uninterruptible(
      NodeHttpServer.make(() => server, { port: settings.port, host: settings.host })
    ).pipe(
      // The platform's ServeError has no message of its own (a busy port's reason is in its cause alone).
      Effect.mapError((error) =>
        new EmulatorError({
          reason: "ListenFailed",
          message: error.cause instanceof Error ? error.cause.message : `could not listen: ${String(error.cause)}`,
          // Kept: a program that tries the next port on EADDRINUSE reads its `code`, as it did on the ServeError.
          cause: error.cause
        })
      )
    )
    // Added after the server: finalizers run in reverse, so this runs before the platform's own close.
    yield* Effect.addFinalizer(() => shutdown(server, sockets))
    const port = httpServer.address._tag === "TcpAddress" ? httpServer.address.port : settings.port
    const url = `http://${urlHost(settings.host)}:${port}`

    const sendWebhook = (request: WebhookRequest) => Webhook.send(state, client, request)
    const replaceFaults = (rules: ReadonlyArray<FaultRule>) => Effect.asVoid(state.setFaults(rules, false))
    const appendFaults = (rules: ReadonlyArray<FaultRule>) => Effect.asVoid(state.setFaults(rules, true))

    const service: Service = {
      url,
      port,
      credentials: { clientId: settings.clientId, clientSecret: settings.clientSecret },
      webhookSecret: settings.webhookSecret,
      setFaults: (faults) => Effect.flatMap(decodeFaults(faults), replaceFaults),
      addFaults: (faults) => Effect.flatMap(decodeFaults(faults), appendFaults),
      clearFaults: Effect.asVoid(state.setFaults([], false)),
      faults: Effect.map(state.faults, (faults) => faults.map(({ rule }) => rule)),
      injectedFaults: state.faults,
      counters: state.counters,
      reset: state.reset,
      revokeTokens: state.revokeTokens,
      issuedTokens: state.issuedTokens,
      expireTokens: (options) => state.expireTokens(options?.refresh ?? false),
      registerWebhook: (target) => Effect.flatMap(decodeWebhookUrl(target), (valid) => state.setWebhookUrl(valid)),
      sendWebhook: (request = {}) => Effect.flatMap(decodeWebhookRequest(request), sendWebhook)
    }

    const info = Effect.map(state.webhookUrl, (webhookUrl) => ({
      url,
      credentials: service.credentials,
      // The secret too (a local test value, printed at start): a script driving the emulator checks signatures.
      // The target without its `user:pass@` (a receiver behind Basic auth), as messages show it.
      webhook: {
        url: webhookUrl === undefined ? null : Webhook.shown(webhookUrl),
        algorithm: settings.webhookAlgorithm,
        secret: settings.webhookSecret
      },
      routes: routeNames
    }))

    yield* HttpServer.serveEffect(App.make(state, { info, sendWebhook })).pipe(
      Effect.provideService(HttpServer.HttpServer, httpServer),
      // A request its client gave up on (a stall the client timed out, by design here) ends its fiber with the
      // platform's 499, which Effect would log as an unhandled error: noise in the logs of the program under test.
      Effect.locally(FiberRef.unhandledErrorLogLevel, Option.none())
    )
    return service
  })

/**
 * Starts an emulator for the life of the scope; it stops (every connection closed) when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, EmulatorError, Scope.Scope> =>
  makeWithDefaultPort(options, 0)

/**
 * An emulator on an ephemeral port of 127.0.0.1 (unless `options` say otherwise), for tests:
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { FetchHttpClient } from "@effect/platform"
 * import { Effect, Layer } from "effect"
 * import { FeeService, FinClient } from "effect-fin"
 * import { Emulator } from "effect-fin/emulator"
 *
 * const client = Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) =>
 *   FinClient.layer({ ...emulator.credentials, baseUrl: emulator.url })
 * ))
 * const program = FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
 * program.pipe(
 *   Effect.provide(client),
 *   Effect.provide(Layer.merge(Emulator.layer(), FetchHttpClient.layer))
 * )
 * ```
 */
export const layer = (options: Options = {}): Layer.Layer<Emulator, EmulatorError> =>
  Layer.scoped(Emulator, make(options))

/**
 * Runs an emulator as a process (for `effect-fin emulator --port`): listens on `port` (default 4010) and `host`
 * (default 127.0.0.1), logs its URL and credentials with Effect's logger, and runs until interrupted, then closes
 * every connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serve = (options: Options = {}): Effect.Effect<never, EmulatorError> =>
  Effect.scoped(Effect.gen(function*() {
    const emulator = yield* makeWithDefaultPort(options, 4010)
    const where = Loopback.isEveryInterface(options.host)
      ? " (every interface: the API answers other machines too)"
      : ""
    yield* Effect.logInfo(`effect-fin emulator listening on ${emulator.url}${where}`).pipe(
      Effect.annotateLogs({
        url: emulator.url,
        clientId: emulator.credentials.clientId,
        clientSecret: emulator.credentials.clientSecret,
        // Off loopback the admin routes answer no one (loopback clients only): no URL for them then.
        ...(Loopback.urlIsLoopback(emulator.url) ? { admin: `${emulator.url}/__emulator` } : {})
      })
    )
    return yield* Effect.never
  }))

// ---------------------------------------------------------------------------------------------------------------------
// Accessors
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The counters of the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const counters: Effect.Effect<Counters, never, Emulator> = Effect.flatMap(Emulator, (e) => e.counters)

/**
 * Replaces the fault rules of the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const setFaults = (faults: ReadonlyArray<FaultRule>): Effect.Effect<void, EmulatorError, Emulator> =>
  Effect.flatMap(Emulator, (e) => e.setFaults(faults))

/**
 * Adds fault rules after those of the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const addFaults = (faults: ReadonlyArray<FaultRule>): Effect.Effect<void, EmulatorError, Emulator> =>
  Effect.flatMap(Emulator, (e) => e.addFaults(faults))

/**
 * The fault rules of the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const faults: Effect.Effect<ReadonlyArray<FaultRule>, never, Emulator> = Effect.flatMap(
  Emulator,
  (e) => e.faults
)

/**
 * The fault rules of the emulator in context, each with how often it fired.
 *
 * @since 0.1.0
 * @category accessors
 */
export const injectedFaults: Effect.Effect<ReadonlyArray<InjectedFault>, never, Emulator> = Effect.flatMap(
  Emulator,
  (e) => e.injectedFaults
)

/**
 * Removes the fault rules of the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const clearFaults: Effect.Effect<void, never, Emulator> = Effect.flatMap(Emulator, (e) => e.clearFaults)

/**
 * Resets the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const reset: Effect.Effect<void, never, Emulator> = Effect.flatMap(Emulator, (e) => e.reset)

/**
 * Revokes every token of the emulator in context; returns how many access tokens were active.
 *
 * @since 0.1.0
 * @category accessors
 */
export const revokeTokens: Effect.Effect<number, never, Emulator> = Effect.flatMap(Emulator, (e) => e.revokeTokens)

/**
 * Every token the emulator in context issued (see `Service.issuedTokens`).
 *
 * @since 0.1.0
 * @category accessors
 */
export const issuedTokens: Effect.Effect<ReadonlyArray<string>, never, Emulator> = Effect.flatMap(
  Emulator,
  (e) => e.issuedTokens
)

/**
 * Expires every access token of the emulator in context now (the refresh tokens too with `refresh: true`); returns
 * how many were active.
 *
 * @since 0.1.0
 * @category accessors
 */
export const expireTokens = (
  options?: { readonly refresh?: boolean | undefined }
): Effect.Effect<number, never, Emulator> => Effect.flatMap(Emulator, (e) => e.expireTokens(options))

/**
 * Registers the webhook target of the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const registerWebhook = (url: string): Effect.Effect<void, EmulatorError, Emulator> =>
  Effect.flatMap(Emulator, (e) => e.registerWebhook(url))

/**
 * Sends a signed `beneficiary.status` event from the emulator in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const sendWebhook = (request?: WebhookRequest): Effect.Effect<WebhookDelivery, EmulatorError, Emulator> =>
  Effect.flatMap(Emulator, (e) => e.sendWebhook(request))
