/**
 * Authenticated calls to the service: bearer token, retry schedule and the client's retry budget, `Retry-After`, the
 * overall deadline, one refresh-and-retry on 401, a span and metrics per call, and per-call overrides.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import { globalValue } from "effect/GlobalValue"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as FinConfig from "./FinConfig.js"
import { RequestValidationError, TimeoutError } from "./FinError.js"
import type { FinError } from "./FinError.js"
import * as CallOptionsInternal from "./internal/callOptions.js"
import * as Closing from "./internal/closing.js"
import * as Codecs from "./internal/codecs.js"
import * as DeadlineAware from "./internal/deadlineAware.js"
import * as Http from "./internal/http.js"
import * as KnownTokens from "./internal/knownTokens.js"
import * as Issues from "./internal/issues.js"
import * as Metrics from "./internal/metrics.js"
import * as Monotonic from "./internal/monotonic.js"
import * as OptionNames from "./internal/optionNames.js"
import * as RequestBody from "./internal/requestBody.js"
import * as Retry from "./internal/retry.js"
import * as RetryAllowed from "./internal/retryAllowed.js"
import * as RetryBudget from "./internal/retryBudget.js"
import * as Slots from "./internal/slots.js"
import * as Spans from "./internal/spans.js"
import * as TimeLimits from "./internal/timeLimits.js"
import * as TokenProvider from "./TokenProvider.js"

/**
 * The methods a call may use.
 *
 * @since 0.1.0
 * @category models
 */
export type RequestMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE"

// A GET has no body: `M` is inferred from the spec's method, and only a method that is surely GET shuts the body out
// (one held in a variable of several methods is checked when sent).
type BodyOf<M extends RequestMethod, T> = [M] extends ["GET"] ? undefined : T

/**
 * One call: method, path (under the base URL), optional JSON body (encoded by `bodySchema` when given; none on a GET,
 * a compile error) and query, and the schema of a 2xx body.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestSpec<A, I, B = unknown, J = unknown, M extends RequestMethod = RequestMethod> {
  /** The HTTP method; a `GET` takes no body and is the only one retried by default (see `safe`). */
  readonly method: M
  /** Starts with `/`; segments of letters, digits and `-._~` only (no `..`), so nothing can be injected. */
  readonly path: string
  /** Text values; one left `undefined` (an optional parameter) is not sent. */
  readonly query?: Readonly<Record<string, string | undefined>> | undefined
  /** The JSON body; with `bodySchema`, a value of its type, checked at compile time and encoded before sending. */
  readonly body?: BodyOf<M, NoInfer<B>> | undefined
  /**
   * Encodes `body` into what is sent (`Schema.NumberFromString` sends the text, `Schema.DateTimeUtc` the ISO time):
   * a body it refuses is a `RequestValidationError` naming each issue, and nothing is sent.
   */
  readonly bodySchema?: BodyOf<M, Schema.Schema<B, J, never>> | undefined
  /**
   * Decodes a 2xx answer's JSON body into the call's value; an empty body is read as `undefined` (`Schema.Void` takes
   * it). A body it refuses is a `ResponseDecodeError`, not retried. Decoded synchronously: a schema with an async
   * transformation or filter dies (a defect naming the call), once the request was sent.
   */
  readonly response: Schema.Schema<A, I, never>
  /**
   * Whether the call may be sent more than once (GET always is; another method only when it changes nothing, like
   * the fee quote's POST, or when the service documents it as idempotent). Unsafe calls are not retried after a
   * failure, so a retry can never double-charge; the one resend of any call is after a 401, which the service answers
   * before doing anything, with a fresh token. Default: `true` for GET only.
   */
  readonly safe?: boolean | undefined
  /**
   * Span name suffix and metric tag, e.g. `fee-calculation`: letters, digits and `._-`, starting with a letter or
   * digit, at most 64, the same for every call of the route (never an id: each name is a metric series); not `token`,
   * `webhook` or `webhook.handle` (effect-fin's own). Another is a `RequestValidationError`. Default `request`.
   */
  readonly name?: string | undefined
  /**
   * Checks a decoded answer against what was asked (a quote's currencies): each issue (`{ path, expected }`, or an
   * `Issue`) makes the attempt a `ResponseDecodeError` (not retried) holding it; none, an answer. Put what was
   * expected in `expected`, never the value received (errors keep no answered value). A check that throws is a defect
   * of what it threw; one that returns anything but such a list, a defect naming the mistake.
   */
  readonly check?: ((value: A) => ReadonlyArray<{ readonly path: string; readonly expected: string }>) | undefined
}

/**
 * The transport: one typed call to the service, with token, retries, timeouts and deadline.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * Sends the call with the client's token (resent once with a fresh one after a 401), retries (safe calls only),
   * timeouts and deadline (or the overrides of `withOptions`); gives the decoded 2xx body, or fails with a `FinError`.
   */
  readonly request: <A, I, B = unknown, J = unknown, M extends RequestMethod = RequestMethod>(
    spec: RequestSpec<A, I, B, J, M>
  ) => Effect.Effect<A, FinError>
}

/**
 * The transport of a client, provided by `layer` (or `FinClient.layer`).
 *
 * @since 0.1.0
 * @category tags
 */
export class HttpTransport extends Context.Tag("effect-fin/HttpTransport")<HttpTransport, Service>() {}

/**
 * Overrides of the client's options for the calls inside one effect. A token fetch is shared by every caller waiting
 * for it, so it keeps the client's `maxRetries` and `tokenTimeout`: only `deadline` bounds the wait for it.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallOptions {
  /** Per attempt of the call (not of a token fetch, which `tokenTimeout` bounds). */
  readonly timeout?: FinConfig.DurationOption | undefined
  /** The whole call, the wait for a token included. */
  readonly deadline?: FinConfig.DurationOption | undefined
  /** Retries of the call (not of a token fetch, which keeps the client's). */
  readonly maxRetries?: number | undefined
}

const OPTION_NAMES = ["timeout", "deadline", "maxRetries"] as const

const currentOptions = globalValue(
  "effect-fin/HttpTransport/currentOptions",
  () => FiberRef.unsafeMake<CallOptions>({})
)

/**
 * The per-call overrides in effect (from `withOptions`); empty when there are none.
 *
 * @since 0.1.0
 * @category accessors
 */
export const currentCallOptions: Effect.Effect<CallOptions> = FiberRef.get(currentOptions)

/**
 * Runs `self` with per-call overrides (`timeout`, `deadline`, `maxRetries`), like effect-aws's `withServiceConfig`.
 * An override out of range (a duration not above zero, below a millisecond or over 24 days, `maxRetries` not a whole
 * number from 0 to 10), or of another name (from untyped code), makes each call inside fail with a
 * `RequestValidationError` naming it, before anything is sent. `timeout` and `maxRetries` are the call's own: a token
 * fetch the call waits for keeps the client's `tokenTimeout` and `maxRetries` (it is shared), cut at `deadline` only.
 *
 * @since 0.1.0
 * @category combinators
 * @example
 * ```ts
 * fees.calculate(request).pipe(HttpTransport.withOptions({ deadline: "5 seconds", maxRetries: 0 }))
 * ```
 */
export const withOptions: {
  (options: CallOptions): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, options: CallOptions): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, options: CallOptions): Effect.Effect<A, E, R> =>
    // An option left undefined is not this caller's to say: the outer one (or the client's) stands. Every own
    // enumerable key is taken (one of another name is refused at the call), and the three by name, so that a getter of
    // a class or an inherited option counts; other inherited keys are not the options' own (a method of a class
    // compiled to ES5 is enumerable).
    Effect.locallyWith(self, currentOptions, (current) => {
      // From untyped code, no object at all (`undefined` read from a config file, a bare number): refused at each call
      // inside, as an override of another name is, not a TypeError here nor no override without a word.
      const notAnObject = OptionNames.notAnObject(options)
      if (notAnObject !== undefined) return { ...current, [CallOptionsInternal.NOT_AN_OBJECT]: notAnObject }
      const given = options as Readonly<Record<string, unknown>>
      const taken: Array<readonly [string, unknown]> = []
      for (const key of Object.keys(given)) if (given[key] !== undefined) taken.push([key, given[key]])
      for (const key of OPTION_NAMES) if (given[key] !== undefined) taken.push([key, given[key]])
      // Own data properties, a `__proto__` key of parsed JSON included (an assignment would set the prototype).
      return { ...current, ...Object.fromEntries(taken) }
    })
)

// The keys of a spec, all its own keys checked against them.
const SPEC_KEYS = {
  method: true,
  path: true,
  query: true,
  body: true,
  bodySchema: true,
  response: true,
  safe: true,
  name: true,
  check: true
} as const
const SPEC_EXPECTED = `one of ${Object.keys(SPEC_KEYS).join(", ")}`

// From untyped code: no spec at all (an unset configuration value), or a key that is none of the spec's (`qurey` for
// `query`, `headers`, `timeout`), which would otherwise be dropped without a word (a GET sent without its filters).
const specShape = (given: unknown): Either.Either<void, RequestValidationError> => {
  const notAnObject = OptionNames.notAnObject(given)
  if (notAnObject !== undefined) {
    return Either.left(
      Issues.refusal("", "Invalid request spec", `an object of method, path and response, not ${notAnObject}`)
    )
  }
  const [unknown] = OptionNames.unknown(given as object, SPEC_KEYS)
  return unknown === undefined
    ? Either.void
    : Either.left(Issues.refusal(unknown, `Unknown request option ${unknown}`, SPEC_EXPECTED))
}

const PATH = /^(\/[A-Za-z0-9\-._~]+)+$/
// Far past any route of the service; a longer one (an id from outside, say) would end up whole in errors and spans.
const MAX_PATH = 2048
const METHODS: ReadonlySet<unknown> = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"])
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
// effect-fin's own spans and metric labels (`effect-fin.token`, `operation="token"`): a call named so would be
// counted and traced as them.
const OWN_NAMES: ReadonlySet<string> = new Set(["token", "webhook", "webhook.handle"])

const isPlainPath = (path: unknown): path is string =>
  typeof path === "string" && path.length <= MAX_PATH && PATH.test(path) &&
  !path.split("/").some((s) => s === "." || s === "..")

// What the types say, checked too: a spec may come from untyped code, a cast or configuration, and `safe` is what
// keeps a payment from being sent twice (`"false"` would be truthy).
const validateSpec = (
  spec: Omit<RequestSpec<unknown, unknown>, "response" | "check" | "bodySchema"> & {
    readonly response?: unknown
    readonly check?: unknown
    readonly bodySchema?: unknown
  },
  pathValid: boolean,
  nameValid: boolean,
  config: FinConfig.Resolved,
  options: CallOptions,
  defaults: Either.Either<CallOptionsInternal.Resolved, RequestValidationError>
): Either.Either<CallOptionsInternal.Resolved, RequestValidationError> => {
  if (!METHODS.has(spec.method)) {
    return Either.left(Issues.refusal("method", "Invalid request method", "GET, POST, PUT, PATCH or DELETE"))
  }
  if (!pathValid) {
    return Either.left(
      Issues.refusal("path", "Invalid request path", `an absolute path of plain segments, at most ${MAX_PATH} characters`)
    )
  }
  if (spec.safe !== undefined && typeof spec.safe !== "boolean") {
    return Either.left(Issues.refusal("safe", "Invalid request option safe", "true or false"))
  }
  if (!nameValid) {
    return Either.left(
      Issues.refusal(
        "name",
        "Invalid request name",
        "letters, digits and ._-, starting with a letter or digit (at most 64), the same for every call, and not " +
          "token, webhook or webhook.handle (effect-fin's own)"
      )
    )
  }
  if (spec.check !== undefined && typeof spec.check !== "function") {
    return Either.left(Issues.refusal("check", "Invalid request option check", "a function"))
  }
  if (!Schema.isSchema(spec.response)) {
    return Either.left(Issues.refusal("response", "Invalid request option response", "a Schema"))
  }
  if (spec.bodySchema !== undefined && !Schema.isSchema(spec.bodySchema)) {
    return Either.left(Issues.refusal("bodySchema", "Invalid request option bodySchema", "a Schema"))
  }
  if (spec.method === "GET" && (spec.body !== undefined || spec.bodySchema !== undefined)) {
    return Either.left(Issues.refusal("body", "A GET request has no body", "no body (put the values in query)"))
  }
  // Without per-call overrides, the options resolved once when the transport was built.
  return hasNoKeys(options) ? defaults : CallOptionsInternal.resolve(config, options)
}

// A UTF-16 surrogate with no partner (text cut inside an emoji): URL encoding writes it as U+FFFD, another character.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

// `?` and the text values, in order; one left undefined is not sent (never as "undefined").
const queryString = (query: unknown): Either.Either<string, RequestValidationError> => {
  if (query === undefined) return Either.right("")
  // Made only when refused: an error (a schema-checked class, with its stack trace) costs more than the whole query.
  const refused = () => Either.left(Issues.refusal("query", "Invalid request query", "an object of text values"))
  if (typeof query !== "object" || query === null || Array.isArray(query)) return refused()
  // A URLSearchParams, a Map (from untyped code, or past a cast) holds its values as entries, not fields: they would
  // all be left out without a word. (An instance of a class whose fields are the values, a Schema.Class, is taken.)
  if (Symbol.iterator in query) return refused()
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue
    if (typeof value !== "string") return refused()
    // Sent as it is, or not at all: a lone surrogate would arrive as U+FFFD, a value the caller never gave.
    if (LONE_SURROGATE.test(key) || LONE_SURROGATE.test(value)) {
      return Either.left(
        Issues.refusal("query", "Invalid request query", "text of whole characters (no lone UTF-16 surrogate)")
      )
    }
    params.append(key, value)
  }
  const text = params.toString()
  return Either.right(text === "" ? "" : `?${text}`)
}

// A query string (`?a=1&b=2`) with its values written REDACTED (`?a=REDACTED&b=REDACTED`).
const keysOf = (query: string): string => query.replace(/=[^&]*/g, "=REDACTED")

const hasNoKeys = (options: CallOptions): boolean => {
  for (const _ in options) return false
  return !Object.hasOwn(options, CallOptionsInternal.NOT_AN_OBJECT)
}

// A spec read once, as checked: a spec object changed after the call was made (and the call run later, or again)
// cannot send what was not checked, nor trace other values than those sent. (By name rather than spread: a spec's
// fields may be getters of its class.) No spec object: its fields read as absent, as those of a spec from untyped code
// may be (refused before use). Throws what reading it throws (a getter that throws, a revoked Proxy).
const readSpec = <A, I, B, J, M extends RequestMethod>(given: RequestSpec<A, I, B, J, M>) => {
  const read = typeof given === "object" && given !== null ? given : {} as typeof given
  return {
    method: read.method,
    path: read.path,
    query: read.query,
    body: read.body,
    bodySchema: read.bodySchema,
    response: read.response,
    safe: read.safe,
    name: read.name,
    check: read.check
  }
}

// What every call of one transport shares.
interface Shared {
  readonly config: FinConfig.Resolved
  readonly tokens: TokenProvider.Service
  readonly getBefore: DeadlineAware.GetBefore | undefined
  readonly closing: Closing.Closing | undefined
  readonly isClosed: () => boolean
  readonly credentialsOf: (sent: string, secret: string) => ReadonlyArray<string>
  readonly client: Http.Client
  readonly headers: { readonly accept: string; readonly "user-agent": string }
  readonly secret: string
  readonly slots: Slots.Slots | undefined
}

// A call checked and ready to be sent.
interface Asked<A> {
  readonly name: string
  readonly operation: string
  readonly method: RequestMethod
  readonly url: string
  readonly body: string | undefined
  readonly decode: Codecs.Decoder<A>
  readonly check: ((value: A) => ReadonlyArray<{ readonly path: string; readonly expected: string }>) | undefined
  readonly options: CallOptionsInternal.Resolved
  readonly safe: boolean
  // The operation's retry budget (safe calls only, unless `retryBudget` is "unlimited").
  readonly budget: RetryBudget.RetryBudget | undefined
}

// One call on its way: its attempts, token and 401 handling, retries and deadline, and what became of it so far, which
// its span and metrics tell at its end. Measured on monotonic time, as the timers are: the wall clock may be set back
// during the call.
class Call<A> {
  private readonly deadlineAt: number
  private attempts = 0
  // The status of the last answer: the span's status when the call then ends without one (the deadline cut the next
  // attempt, a reset, a response schema that threw).
  private lastStatus: number | undefined
  // The operation's retry budget: a retry it counted is given back if the call ends before sending it (its caller
  // gave up during the backoff, its token or slot never came), and a refusal goes on the span.
  private readonly budgetState: RetryAllowed.BudgetState = { countedAt: undefined, refused: false }
  // The time spent waiting for tokens, on the span when a millisecond or more: a fetch shared with other callers is a
  // child of the first one's span only, so another's span would show a gap with nothing in it. `waitingForToken` stays
  // set when the token step fails, dies or is cut by the deadline: the call then ended at the token step.
  private tokenAskedAt = 0
  private tokenWait = 0
  private waitingForToken = false
  // The time spent waiting for a slot (`maxConcurrentRequests`), on the span likewise; `slotAskedAt` is set while the
  // call waits for one, and stays set for one served only as its deadline came: either ended at that step.
  private slotWait = 0
  private slotAskedAt: number | undefined
  // The token of the last request sent: the one a 401 refused.
  private sentWith: Redacted.Redacted<string> | undefined
  // Whether the call's first 401 has cleared its token and been tried again (a later 401 is final).
  private refreshed = false

  constructor(
    private readonly shared: Shared,
    private readonly asked: Asked<A>,
    private readonly started: number
  ) {
    this.deadlineAt = Monotonic.plus(started, asked.options.deadline)
  }

  // No timer of its own for the deadline (a fiber per call): every wait of the call is cut at it instead, the attempts
  // (by their own timer: the deadline's when it comes first), the token step, the 401's invalidation; the retry
  // policy's waits end before it. The error says which step the deadline cut when it was not an attempt: a wait for a
  // token or a slot is not the service being slow at this request (which may never have been sent), and an on-call
  // reader should not look for it there.
  private readonly deadlineError = () =>
    new TimeoutError({
      message: `${this.asked.operation}: the call did not finish within its deadline of ${
        Duration.format(this.asked.options.deadline)
      }${
        this.waitingForToken
          ? " (it was still waiting for an access token)"
          : this.slotAskedAt !== undefined
          ? ` (it was still waiting for one of the client's ${this.shared.config.maxConcurrentRequests} request ` +
            "slots, maxConcurrentRequests: never sent)"
          : ""
      }`,
      kind: "deadline",
      timeout: this.asked.options.deadline,
      operation: this.asked.operation,
      attempts: this.attempts
    })

  private readonly answered = (status: number) => {
    this.lastStatus = status
  }

  // Told this call's deadline, a shared token fetch that is to wait past it ends this call at once, with its error.
  private readonly getToken = Effect.flatMap(Monotonic.millis, (now) => {
    const { getBefore, tokens } = this.shared
    // Already waiting when the 401's clear of the refused token came first: the wait counts from there.
    if (!this.waitingForToken) this.tokenAskedAt = now
    this.waitingForToken = true
    return getBefore === undefined
      ? TimeLimits.timeoutAt(tokens.get, this.deadlineAt, this.deadlineError)
      : getBefore(this.deadlineAt, this.deadlineError)
  }).pipe(
    Effect.mapBoth({
      onFailure: (error) => new Retry.NotRetryable(error),
      onSuccess: (token) => {
        this.waitingForToken = false
        return token
      }
    })
  )

  private readonly send = (token: Redacted.Redacted<string>) =>
    Effect.flatMap(Monotonic.millis, (now) => {
      const { closing, slots } = this.shared
      this.tokenWait += now - this.tokenAskedAt
      if (slots === undefined) return this.sendNow(token, now)
      this.slotAskedAt = now
      // The wait for a slot is cut at the deadline; the attempt's own timeout starts once it has one.
      return slots.withSlot(
        (held) =>
          Effect.flatMap(Monotonic.millis, (served) => {
            // Served as its deadline came: it ended at the slot step all the same (its wait counted at the end).
            if (Monotonic.reached(served, this.deadlineAt)) return Effect.fail(this.deadlineError())
            this.slotWait += served - now
            this.slotAskedAt = undefined
            // The token was read before the wait: after a wait in line it is read again (at once when still fresh), so
            // that a long line never sends one the client knows is due or expired. (Not once the client is closing: a
            // call from an uninterruptible region goes on with the one it has.)
            if (served === now || this.shared.isClosed()) return this.sendNow(token, served, held.keepUntil)
            return Effect.flatMap(this.getToken, (fresh) =>
              Effect.flatMap(Monotonic.millis, (at) => {
                this.tokenWait += at - this.tokenAskedAt
                return this.sendNow(fresh, at, held.keepUntil)
              }))
          }),
        // Ended by the client's closing too: the attempts it waits on may be left to end on their own.
        TimeLimits.cutAt(this.deadlineAt, this.deadlineError, closing)
      )
    })

  private sendNow(
    token: Redacted.Redacted<string>,
    now: number,
    onLeft?: (fiber: Fiber.RuntimeFiber<unknown>) => void
  ) {
    if (Monotonic.reached(now, this.deadlineAt)) return Effect.fail(this.deadlineError())
    const { asked, shared } = this
    this.sentWith = token
    this.attempts += 1
    // A call's first request counts towards its operation's retry budget (the first one after an episode of refusals
    // has passed also tells its end); a later one is the retry counted, sent now: nothing to give back.
    const over = this.attempts === 1 ? asked.budget?.sent(now) : undefined
    if (this.attempts > 1) this.budgetState.countedAt = undefined
    const sending = Http.execute(shared.client, {
      method: asked.method,
      url: asked.url,
      headers: { ...shared.headers, authorization: `Bearer ${Redacted.value(token)}` },
      body: asked.body,
      decode: asked.decode,
      check: asked.check,
      timeout: asked.options.timeout,
      kind: "attempt",
      deadline: { left: Monotonic.between(now, this.deadlineAt), error: this.deadlineError },
      operation: asked.operation,
      attempt: this.attempts,
      credentials: shared.credentialsOf(Redacted.value(token), shared.secret),
      onStatus: this.answered,
      closing: shared.closing,
      onLeft
    })
    return over === undefined ? sending : Effect.zipRight(RetryAllowed.episodeOver(asked.name, over), sending)
  }

  // One scheduled attempt. The first 401 of the call clears that token and tries once more with a fresh one, outside
  // `maxRetries`; a later 401 is final, so a revoked client can never loop. Its token is left for the next call's
  // first 401 to clear: clearing it here would cost a client whose every token is refused a second token request a
  // call, and hold the error back while a hanging store clears it.
  private readonly attempt = Effect.flatMap(this.getToken, (token) =>
    this.send(token).pipe(
      Effect.catchIf(
        (e) => e._tag === "AuthenticationError" && e.status === 401 && !this.refreshed,
        (refused) => {
          const { operation } = this.asked
          this.refreshed = true
          return Effect.logDebug(`effect-fin: ${operation} got 401; refreshing the token and retrying once`).pipe(
            Effect.annotateLogs({ operation, status: 401 }),
            // On the span as a retry is (with no wait): else it shows a resend with nothing to say why.
            Effect.zipRight(Spans.annotateRetry(refused, this.attempts)),
            // Clearing the refused token is the first part of getting a fresh one: a deadline that cuts it ended the
            // call at the token step (its message and `failed_step` say so), not in an attempt.
            Effect.zipRight(Effect.flatMap(Monotonic.millis, (now) => {
              this.waitingForToken = true
              this.tokenAskedAt = now
              return TimeLimits.timeoutAt(
                this.shared.tokens.invalidate(this.sentWith ?? token),
                this.deadlineAt,
                this.deadlineError
              )
            })),
            Effect.zipRight(this.getToken),
            Effect.flatMap(this.send)
          )
        }
      )
    ))

  // Built by the first failure only, as the schedule is: a call that succeeds at once makes neither.
  private policy(): Retry.PolicyOptions<Retry.Retried> {
    const { budget, name, operation, options, safe } = this.asked
    return {
      maxRetries: safe ? options.maxRetries : 0,
      operation,
      waitCap: this.shared.config.maxRetryAfter,
      timeLeft: Effect.map(Monotonic.millis, (now) => Monotonic.left(now, this.deadlineAt)),
      allowed: budget === undefined ? undefined : RetryAllowed.retryAllowed(budget, name, operation, this.budgetState),
      onRetry: (error, retry, until) =>
        Effect.logDebug(
          `effect-fin: retrying ${operation} after ${error._tag}${
            error._tag === "ApiError" ? ` ${error.status}` : ""
          } (retry ${retry} of ${options.maxRetries})`
        ).pipe(
          // The line's facts as annotations too, for a structured logger to filter on.
          Effect.annotateLogs({ operation, error: error._tag, retry }),
          Effect.zipRight(Metric.increment(Metrics.retriesOf(name))),
          // The resend it announces counts the one after a 401 too (`attempts` so far), as the span's does.
          Effect.zipRight(Spans.annotateRetry(error, this.attempts, until))
        )
    }
  }

  // The call: its attempts, retried by the policy; the span's outcome and the metrics at its end, however it ends.
  run(): Effect.Effect<A, FinError> {
    const { closing } = this.shared
    // The schedule comes into play once an attempt has failed: `Effect.retry` then sees that error first, at the same
    // time, so it decides as it always did, and a call that succeeds at once never builds a schedule.
    const retried = Effect.catchAll(this.attempt, (error) => {
      let first: Retry.Retried | undefined = error
      const again = Effect.suspend(() => {
        if (first === undefined) return this.attempt
        const e = first
        first = undefined
        return Effect.fail(e)
      })
      const retrying = Retry.retry(again, this.policy())
      // Its waits end when the client closes, as its attempts do (which cannot stop a wait between them).
      return closing === undefined
        ? retrying
        : Effect.checkInterruptible((interruptible) =>
          interruptible ? Closing.interruptOnClose(retrying, closing) : retrying
        )
    })
    let status = 0
    return retried.pipe(
      Effect.map((success) => {
        status = success.status
        return success.value
      }),
      Effect.mapError((e): FinError => {
        const error = e._tag === "NotRetryable" ? e.error : e
        // Said in the error too: read in an application's log, `attempts: 1` alone would look like no retries.
        return this.budgetState.refused
          ? Retry.withMessage(error, `${error.message} (not retried: the retry budget of ${this.asked.name} is spent)`)
          : error
      }),
      Effect.onExit((exit) => Effect.flatMap(Monotonic.millis, (now) => this.ended(exit, status, now)))
    )
  }

  // One step at the end: the span's outcome (a success, a failure, a defect or an interruption) and token wait, then
  // the metrics. `status` is the success's.
  private ended(exit: Exit.Exit<A, FinError>, status: number, now: number): Effect.Effect<void> {
    const { budget, name } = this.asked
    if (this.budgetState.countedAt !== undefined) budget?.refund(this.budgetState.countedAt)
    const failure = exit._tag === "Success" ? undefined : Cause.failureOption(exit.cause)
    // No failure: an interruption, or a defect (a platform client or a response schema that threw).
    const other = exit._tag === "Failure" && Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect"
    const outcome = failure === undefined ? "success" : failure._tag === "Some" ? failure.value._tag : other
    // A call that ended at its token step (its deadline, a fetch that failed, an interruption) waited until now: the
    // wait that matters most.
    const waited = this.tokenWait + (this.waitingForToken ? now - this.tokenAskedAt : 0)
    const slotWaited = this.slotWait + (this.slotAskedAt === undefined ? 0 : now - this.slotAskedAt)
    const extra = waited >= 1 || slotWaited >= 1
      ? {
        ...(waited >= 1 ? { "effect_fin.token_wait_ms": Math.round(waited) } : {}),
        ...(slotWaited >= 1 ? { "effect_fin.slot_wait_ms": Math.round(slotWaited) } : {})
      }
      : undefined
    const errorStatus = failure?._tag === "Some" ? Spans.statusOf(failure.value) : undefined
    // A token that could not be had: its status is the token endpoint's (on the `effect-fin.token` span), not this
    // operation's, which was maybe never sent.
    const lastAnswer = failure === undefined
      ? status
      : this.waitingForToken
      ? this.lastStatus
      : errorStatus ?? this.lastStatus
    // The count's status is the error's own where it has one (a token route's 503 too, as the caller sees it): a token
    // service down counts as a 5xx, not as `none` or as the 401 that sent the call for a token.
    const counted = errorStatus ?? lastAnswer
    const metrics = Effect.zipRight(
      Metric.update(Metrics.latencyByOutcome(name)(outcome), now - this.started),
      Metric.increment(Metrics.requestsBy(name, outcome, counted))
    )
    if (failure === undefined) {
      return Effect.zipRight(Spans.annotateOutcome(this.attempts, "success", status, extra), metrics)
    }
    // An interrupted call failed at no step (its token wait says where it was).
    const step = outcome === "interrupted"
      ? extra
      : this.waitingForToken
      ? { ...extra, "effect_fin.failed_step": "token" }
      : this.slotAskedAt !== undefined
      ? { ...extra, "effect_fin.failed_step": "slot" }
      : extra
    const ended = this.budgetState.refused ? { ...step, "effect_fin.retry_refused": "retry_budget" } : step
    return Effect.zipRight(Spans.annotateOutcome(this.attempts, outcome, lastAnswer, ended), metrics)
  }
}

/**
 * Builds the transport of a client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service, never, FinConfig.FinConfig | TokenProvider.TokenProvider | Http.Client> =
  Effect.gen(function*() {
    const config = yield* FinConfig.FinConfig
    const tokens = yield* TokenProvider.TokenProvider
    const closing = Closing.of(tokens)
    let closed = false
    closing?.onClose(() => {
      closed = true
    })
    const shared: Shared = {
      config,
      tokens,
      getBefore: DeadlineAware.of(tokens),
      closing,
      isClosed: () => closed,
      // The other tokens of the session (its refresh token, the access token replaced), redacted as the one sent is.
      credentialsOf: KnownTokens.listWith(KnownTokens.of(tokens)),
      client: Http.configure(yield* Http.Client, config.tracePropagation),
      headers: { accept: "application/json", "user-agent": config.userAgent },
      // Not sent on API calls, but never to be kept in an error either (a debugging page may dump a process's
      // settings).
      secret: Redacted.value(config.clientSecret),
      // One line for every call of this client (its attempts, not its waits between them nor its token requests).
      slots: config.maxConcurrentRequests === undefined ? undefined : Slots.make(config.maxConcurrentRequests)
    }
    const defaults = CallOptionsInternal.resolve(config, {})
    // A gateway's prefix (`https://gw.example.com/payments`) is part of the path a span names (its url.path).
    const basePath = Spans.basePathOf(config.baseUrl)
    const server = Spans.serverAttributesOf(config.baseUrl)
    // A retry budget per operation (`retryBudget`): an outage's retries are bounded across the operation's calls.
    const percent = config.retryBudget
    const budgets = new Map<string, RetryBudget.RetryBudget>()
    const budgetOf = percent === "unlimited" ? undefined : (name: string) => {
      let budget = budgets.get(name)
      if (budget === undefined) budgets.set(name, budget = RetryBudget.make(percent))
      return budget
    }

    const request = <A, I, B, J, M extends RequestMethod>(given: RequestSpec<A, I, B, J, M>): Effect.Effect<A, FinError> => {
      let shape
      let spec
      try {
        shape = specShape(given)
        spec = readSpec(given)
      } catch (defect) {
        // A spec that cannot be read: a defect of the effect, not thrown here.
        return Effect.die(defect)
      }
      // The spec's check is given the value alone, as documented (the answer's headers are for effect-fin's own).
      const userCheck = spec.check
      const check = userCheck === undefined ? undefined : (value: A) => userCheck(value)
      // A name that is refused is no metric label or span name: the call is counted and traced as `request`.
      const nameValid = spec.name === undefined ||
        (typeof spec.name === "string" && NAME.test(spec.name) && !OWN_NAMES.has(spec.name))
      const name = nameValid ? spec.name ?? "request" : "request"
      const pathValid = isPlainPath(spec.path)
      // Only what was checked goes into the span: a refused path may hold anything (personal data, a query, megabytes).
      const attributes: Record<string, string | number> = { ...server }
      if (METHODS.has(spec.method)) attributes["http.request.method"] = spec.method
      if (pathValid) {
        attributes["url.path"] = basePath + spec.path
        // Which OpenTelemetry's HTTP client spans require; a checked baseUrl holds no credentials, query or fragment.
        attributes["url.full"] = config.baseUrl + spec.path
      }
      return Effect.gen(function*() {
        // Ended before anything is sent: counted and traced all the same, with no attempt (no latency either).
        const endedAs = (outcome: string) =>
          Effect.zipRight(
            Spans.annotateOutcome(0, outcome, undefined),
            Metric.increment(Metrics.requestsBy(name, outcome, undefined))
          )
        const refused = (error: RequestValidationError) => endedAs(error._tag)
        yield* Effect.tapError(shape, refused)
        const options = yield* validateSpec(
          spec,
          pathValid,
          nameValid,
          config,
          yield* FiberRef.get(currentOptions),
          defaults
        ).pipe(Effect.tapError(refused))
        // A schema that throws (a transform's own bug, an invalid Date's toISOString) is a defect, counted as one.
        const encoded = spec.bodySchema === undefined
          ? Either.right(spec.body)
          : yield* Effect.tapDefect(
            Effect.sync(() => RequestBody.encodedBody(spec.bodySchema!, spec.body)),
            () => endedAs("defect")
          )
        const body = yield* Effect.tapError(Either.flatMap(encoded, RequestBody.jsonBody), refused)
        const query = yield* Effect.tapError(queryString(spec.query), refused)
        // Its values written REDACTED, as OpenTelemetry has it for a URL's sensitive ones: each may be personal data.
        if (pathValid && query !== "") {
          yield* Spans.annotateOwn({ "url.full": config.baseUrl + spec.path + keysOf(query) })
        }
        const safe = spec.safe ?? spec.method === "GET"
        const call = new Call(shared, {
          name,
          operation: `${spec.method} ${spec.path}`,
          method: spec.method,
          url: config.baseUrl + spec.path + query,
          body,
          decode: Codecs.decoderFor(spec.response),
          check,
          options,
          safe,
          budget: safe ? budgetOf?.(name) : undefined
        }, yield* Monotonic.millis)
        return yield* call.run()
      }).pipe(
        Effect.withSpan(`effect-fin.${name}`, {
          kind: "client",
          // The call site would be this line of effect-fin, never the user's: capturing it costs a stack trace per call.
          captureStackTrace: false,
          attributes
        })
      )
    }

    return HttpTransport.of({ request })
  })

/**
 * The transport of a client; requires its options, its token provider and the platform `HttpClient`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<HttpTransport, never, FinConfig.FinConfig | TokenProvider.TokenProvider | Http.Client> =
  Layer.effect(HttpTransport, make)

/**
 * Calls `spec` through the transport in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const request = <A, I, B = unknown, J = unknown, M extends RequestMethod = RequestMethod>(
  spec: RequestSpec<A, I, B, J, M>
): Effect.Effect<A, FinError, HttpTransport> =>
  Effect.flatMap(HttpTransport, (transport) => transport.request(spec))
