/**
 * Test layers for users (subpath `effect-fin/test`): a static token, an in-memory `HttpClient` that answers from
 * handler functions and records every request, and a `FeeService` with deterministic quotes. No network needed.
 * Importing it also makes every Effect error (an app's own too) that failed in a span inspect as itself, so that a
 * failed expectation on one shows a diff, not "Maximum call stack size exceeded".
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as FeeService from "./FeeService.js"
import * as FinClient from "./FinClient.js"
import type * as FinConfig from "./FinConfig.js"
import { ApiError, FieldError } from "./FinError.js"
import * as HttpTransport from "./HttpTransport.js"
import * as AnswerErrors from "./internal/answerErrors.js"
import * as Bytes from "./internal/bytes.js"
import * as CallOptions from "./internal/callOptions.js"
import * as Durations from "./internal/duration.js"
import * as Inspect from "./internal/inspect.js"
import * as Issues from "./internal/issues.js"
import * as Quote from "./internal/quote.js"
import * as Timestamps from "./internal/timestamp.js"
import * as TransportCause from "./internal/transportCause.js"
import * as Turn from "./internal/turn.js"
import * as TokenProvider from "./TokenProvider.js"

// Every Effect error (Data.TaggedError, Schema.TaggedError: the app's own too, one wrapping a FinError) inspects as
// itself when it failed in a span: a failed expectation on it shows a diff, not "Maximum call stack size exceeded".
Inspect.showUnwrapped(Cause.YieldableError)

/**
 * One log entry as `captureLogs` keeps it.
 *
 * @since 0.1.0
 * @category models
 */
export interface CapturedLog {
  /** The level's label: `"DEBUG"`, `"INFO"`, `"WARN"`, `"ERROR"`... */
  readonly level: string
  /** The message as logged: the value, or an array of them when several were logged at once. */
  readonly message: unknown
  /** The log annotations in effect (`Effect.annotateLogs`). */
  readonly annotations: Readonly<Record<string, unknown>>
  /** The labels of the log spans in effect (`Effect.withLogSpan`), innermost first. */
  readonly spans: ReadonlyArray<string>
  /** The cause logged with the entry, as `Cause.pretty` renders it; empty when there was none. */
  readonly cause: string
  /**
   * The whole entry as one line, `LEVEL "message" {annotations}`, then the span labels as a JSON list when there are
   * any and the cause when there is one, message and annotations as JSON
   * (a `Redacted` as `"<redacted>"`, an Error as its own fields, name, message and cause): what to search for a secret
   * in. Strings are JSON-escaped: search for `JSON.stringify(secret).slice(1, -1)` too when the secret may hold `"`,
   * `\\` or a control character.
   */
  readonly text: string
}

// JSON for the entry's text, a BigInt as its digits; a value JSON still cannot write (a cycle) as `String` gives it,
// not an error thrown from inside the logger.
const asJson = (value: unknown): string => {
  // Each Error written once: one its own field points back to (a request holding its error) would be written again
  // without end, as a new object each time, which JSON's check for a cycle does not see.
  const written = new WeakSet<Error>()
  try {
    return JSON.stringify(value, (_, v: unknown) =>
      typeof v === "bigint" || typeof v === "symbol" || typeof v === "function"
        ? String(v)
        // As Effect's JSON logger writes an Error (JSON alone writes `{}`): its own fields (a `code`, a `config` with
        // headers), name and message; its `cause` too. A Map or Set as entries.
        : v instanceof Error
        ? written.has(v)
          ? "[Circular]"
          : (written.add(v),
            { ...v, name: v.name, message: v.message, ...(v.cause === undefined ? {} : { cause: v.cause }) })
        : v instanceof Map || v instanceof Set
        ? Array.from(v)
        : v) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * A logger that keeps every entry, for tests that check what a program logs (that no secret or token ever appears in
 * a log line, at any level, say). Provide `layer` to the program, then read `logs`, which fills as entries are
 * logged (kept across every program the layer is provided to, until `clear()`). Entries are kept only where the
 * layer is in effect: a layer built beside it (`Layer.merge`, `it.layer(Layer.merge(...))`) logs its build
 * elsewhere, so provide it under your layers (`Layer.provideMerge(yourLayer, layer)`) to keep those. `layer` also
 * sets the minimum level, `LogLevel.All` unless `minimumLevel` says otherwise, so debug and trace entries are kept
 * too (Effect's default minimum, `Info`, would drop them before any logger sees them); a minimum your program sets
 * itself (`Logger.withMinimumLogLevel`) still drops what is below it. The logger replaces Effect's default one:
 * nothing is printed.
 *
 * @since 0.1.0
 * @category logging
 * @example
 * ```ts
 * const { layer, logs } = FinTest.captureLogs()
 * yield* program.pipe(Effect.provide(layer))
 * expect(logs.filter((log) => log.text.includes(clientSecret))).toEqual([])
 * ```
 */
export const captureLogs = (options: { readonly minimumLevel?: LogLevel.LogLevel } = {}): {
  readonly logs: ReadonlyArray<CapturedLog>
  readonly layer: Layer.Layer<never>
  /** Empties `logs`: between the tests of an `it.layer` block that share one capture, say. */
  readonly clear: () => void
} => {
  const logs: Array<CapturedLog> = []
  const logger = Logger.make(({ annotations, cause, logLevel, message: logged, spans }) => {
    // Effect hands a logger the values logged as a list, of one value most of the time.
    const message = Array.isArray(logged) && logged.length === 1 ? logged[0] : logged
    const entry = {
      level: logLevel.label,
      message,
      annotations: Object.fromEntries(annotations),
      spans: Array.from(spans, (span) => span.label),
      // As Effect's own loggers render it: an Error's `cause` too.
      cause: Cause.isEmpty(cause) ? "" : Cause.pretty(cause, { renderErrorCause: true })
    }
    const text = [
      `${entry.level} ${asJson(message)} ${asJson(entry.annotations)}`,
      ...(entry.spans.length === 0 ? [] : [asJson(entry.spans)]),
      ...(entry.cause === "" ? [] : [entry.cause])
    ].join(" ")
    logs.push({ ...entry, text })
  })
  return {
    logs,
    clear: () => void logs.splice(0),
    layer: Layer.merge(
      Logger.replace(Logger.defaultLogger, logger),
      Logger.minimumLogLevel(options.minimumLevel ?? LogLevel.All)
    )
  }
}

/**
 * A static token provider (re-exported from `TokenProvider.layerStatic`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStaticToken: typeof TokenProvider.layerStatic = TokenProvider.layerStatic

/**
 * A request as the in-memory client saw it. `body` is the parsed JSON body (or the raw text if it was not JSON), a
 * streamed body read whole and parsed the same way, a `FormData` or a raw body (`HttpBody.raw`) as given, and
 * `undefined` with no body.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordedRequest {
  /** The HTTP method as sent, e.g. `POST`. */
  readonly method: string
  /** The whole URL as sent: base URL, path and query. */
  readonly url: string
  /** Path of the URL, e.g. `/v1/fee-calculation`. */
  readonly path: string
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>
  /** The JSON body parsed (the text if not JSON; a `FormData` or raw body as given); `undefined` with none. */
  readonly body: unknown
  /**
   * When it arrived: epoch milliseconds of the `Clock` (the `TestClock` under `it.effect`), so a test can see how long
   * its program, or the client's backoff and `Retry-After`, waited between two requests.
   */
  readonly at: number
}

/**
 * How the in-memory client answers one request.
 *
 * @since 0.1.0
 * @category models
 */
export type Reply =
  | {
    readonly _tag: "Respond"
    /** The answer's status (200-599). */
    readonly status: number
    /** The body's text, sent as it is (`json` writes it). */
    readonly body: string
    /** The answer's headers (`json` adds `content-type: application/json` unless given one). */
    readonly headers: Readonly<Record<string, string>>
    /** The body never finishes (headers are sent). */
    readonly stallBody: boolean
    /** The body fails after the headers, the connection lost with this system error code. */
    readonly failBody?: string | undefined
  }
  | { readonly _tag: "Fail"; readonly description: string }
  | { readonly _tag: "Stall" }

// A response's status is from 200 to 599 (fetch's `Response` refuses others, so would the client at request time, as a
// defect of the call): a reply with another is the test's mistake, refused where it is written.
const checked = (status: number): number => {
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new Cause.IllegalArgumentException(
      `effect-fin/test: ${status} is no response status (a whole number from 200 to 599)`
    )
  }
  return status
}

// Refused where the reply is written, as a bad status is, rather than a defect of the call that gets it.
const checkedHeaders = (headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> => {
  for (const [name, value] of Object.entries(headers)) {
    try {
      new Headers([[name, value]])
    } catch {
      throw new Cause.IllegalArgumentException(
        `effect-fin/test: ${JSON.stringify(name)}: ${JSON.stringify(value)} is no response header (a name of letters, ` +
          "digits and !#$%&'*+-.^_`|~, a value without line breaks)"
      )
    }
  }
  return headers
}

// The JSON text of a reply's body. JSON has no text for `undefined` (nor a function or a symbol): a status that has no
// body (204, 205, 304) is answered with none, as the service would; any other such reply is refused where it is
// written, rather than met by the request as a "Respond" value without a text body, the test having used `json`.
const jsonText = (status: number, body: unknown): string => {
  let text: string | undefined
  try {
    text = JSON.stringify(body)
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause)
    throw new Cause.IllegalArgumentException(`effect-fin/test: json: the body cannot be written as JSON (${reason})`)
  }
  if (text === undefined && noBody(status)) return ""
  if (text !== undefined) return bodyFor(status, text, "json")
  throw new Cause.IllegalArgumentException(
    `effect-fin/test: json: a ${status} answer needs a body JSON can write, not ${
      body === undefined
        ? "undefined"
        : typeof body === "object" && body !== null
        ? "an object whose toJSON gives undefined"
        : `a ${typeof body}`
    } (use FinTest.text(${status}, "") for an empty one)`
  )
}

// A status that has no body (204, 205, 304) is answered without one, as a server does: a body given for it would be
// dropped unseen, the test then asserting on what it never sent.
const bodyFor = (status: number, body: string, reply: string): string => {
  if (body !== "" && noBody(status)) {
    throw new Cause.IllegalArgumentException(`effect-fin/test: ${reply}: a ${status} answer has no body`)
  }
  return body
}

/**
 * A JSON answer, `content-type: application/json` unless `headers` give another (a header name in any case); a body
 * of `undefined` is no body for a status that has none (204, 205, 304). Throws `IllegalArgumentException` for a status
 * outside 200-599, a header no response can carry, a body for a status that has none, or a body JSON cannot write
 * (undefined for a status with a body, a BigInt, a cycle).
 *
 * @since 0.1.0
 * @category replies
 */
export const json = (status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): Reply => ({
  _tag: "Respond",
  status: checked(status),
  body: jsonText(status, body),
  // A content type of the test's, in whatever case, replaces the default rather than joining it ("application/json,
  // text/html", as `Headers` merges names differing only in case).
  headers: Object.keys(checkedHeaders(headers)).some((name) => name.toLowerCase() === "content-type")
    ? headers
    : { "content-type": "application/json", ...headers },
  stallBody: false
})

/**
 * An answer with a raw body (for malformed or truncated JSON). Throws `IllegalArgumentException` for a status outside
 * 200-599, a header no response can carry, or a body other than "" for a status that has none (204, 205, 304).
 *
 * @since 0.1.0
 * @category replies
 */
export const text = (status: number, body: string, headers: Readonly<Record<string, string>> = {}): Reply => ({
  _tag: "Respond",
  status: checked(status),
  body: bodyFor(status, body, "text"),
  headers: checkedHeaders(headers),
  stallBody: false
})

/**
 * Headers arrive, the body never finishes. Throws `IllegalArgumentException` for a status outside 200-599, and for
 * 204, 205 and 304, which have no body to stall.
 *
 * @since 0.1.0
 * @category replies
 */
export const stallBody = (status = 200): Reply => {
  if (noBody(checked(status))) {
    throw new Cause.IllegalArgumentException(`effect-fin/test: stallBody: a ${status} has no body to stall`)
  }
  return { _tag: "Respond", status, body: "", headers: {}, stallBody: true }
}

/**
 * No answer at all, ever (until the client gives up).
 *
 * @since 0.1.0
 * @category replies
 */
export const stall: Reply = Object.freeze({ _tag: "Stall" })

/**
 * The connection lost while the body is read (headers sent, `headers` among them: a 429's `Retry-After`, say): a
 * `TransportError` of reason `BodyReadFailed` carrying `code` and the status, as a real client's is (a 401's is an
 * `AuthenticationError`: its status says it all, and the token is refreshed). Throws
 * `IllegalArgumentException` for a status that has no body (204, 205, 304) or is outside 200-599, or a header no
 * response can carry.
 *
 * @since 0.1.0
 * @category replies
 */
export const failBody = (
  code = "ECONNRESET",
  status = 200,
  headers: Readonly<Record<string, string>> = {}
): Reply => {
  if (noBody(checked(status))) {
    throw new Cause.IllegalArgumentException(`effect-fin/test: failBody: a ${status} has no body to lose`)
  }
  return { _tag: "Respond", status, body: "", headers: checkedHeaders(headers), stallBody: false, failBody: code }
}

// A reply written by hand is read as one only with the fields `toResponse` reads: a body of text (not stringified as
// "[object Object]"), headers (not a TypeError from inside the client), a failure's description.
const isReply = (value: unknown): value is Reply => {
  if (typeof value !== "object" || value === null) return false
  const reply = value as { readonly _tag?: unknown; readonly body?: unknown; readonly headers?: unknown }
  switch (reply._tag) {
    case "Respond":
      return typeof reply.body === "string" && typeof reply.headers === "object" && reply.headers !== null
    case "Fail":
      return typeof (value as { readonly description?: unknown }).description === "string"
    case "Stall":
      return true
    default:
      return false
  }
}

const describeValue = (value: unknown): string => {
  if (value === undefined || value === null) return String(value)
  if (Effect.isEffect(value)) return "an Effect"
  if (typeof value === "object" && typeof (value as { readonly then?: unknown }).then === "function") return "a Promise"
  // A reply where a handler was expected (a route given `FinTest.json(...)` rather than `() => FinTest.json(...)`).
  if (isReply(value)) return "a reply"
  if (typeof value === "object" && "_tag" in value) {
    const tag = value._tag
    return tag === "Respond"
      ? `a "Respond" value without a text body and headers`
      : tag === "Fail"
      ? `a "Fail" value without a text description`
      : `a value tagged ${JSON.stringify(tag)}`
  }
  return typeof value === "object" ? "an object" : `a ${typeof value}`
}

// A route given something other than a handler (from untyped code, or past a cast), as a defect saying what to write.
const notAHandler = (routes: Routes): Cause.IllegalArgumentException | undefined => {
  // From untyped code: said as the layer is built, not a TypeError where it is made.
  if (typeof routes !== "object" || routes === null) {
    return new Cause.IllegalArgumentException(
      `effect-fin/test: routes must be an object of handlers by route, or one handler, not ${describeValue(routes)}`
    )
  }
  for (const [route, handler] of Object.entries(routes)) {
    if (typeof handler !== "function") {
      return new Cause.IllegalArgumentException(
        `effect-fin/test: the route ${JSON.stringify(route)} is given ${describeValue(handler)}, not a handler: ` +
          "write a function answering a reply, e.g. () => FinTest.json(200, body) or () => FinTest.stall"
      )
    }
  }
  return undefined
}

const noBody = (status: number) => status === 204 || status === 205 || status === 304

/**
 * A transport failure, as a refused or reset connection. A system error code (`ECONNREFUSED`, the default,
 * `ECONNRESET`, `ENOTFOUND`, `CERT_HAS_EXPIRED`...) is the `TransportError`'s `code`, as a real client's is; other
 * text only describes the failure.
 *
 * @since 0.1.0
 * @category replies
 */
export const fail = (description = "ECONNREFUSED"): Reply => ({ _tag: "Fail", description })

// What a real client's failure carries: the system error, with its code when the description is one.
const systemError = (description: string) =>
  Object.assign(new Error(description), TransportCause.isSystemCode(description) ? { code: description } : {})

/**
 * Answers a request; may use `Clock`, `Ref`s, anything without requirements.
 *
 * @since 0.1.0
 * @category models
 */
export type Handler = (request: RecordedRequest) => Reply | Effect.Effect<Reply>

/**
 * Runs `effect` while moving the `TestClock` forward, `step` at a time (default 100 ms), until it ends: the backoff,
 * `Retry-After`, timeouts and deadlines of the calls in it pass as they would in real time, without the test having to
 * work out how far to move the clock. Before each step the event loop turns once, so a call awaiting something quick
 * off the clock (a crypto job, a loopback socket) is not moved past it; one that waits longer may be. The clock ends a
 * whole number of steps on, at least one (how many, for a call over a socket, varies from run to run): a time that must
 * be exact is read inside `effect`, not after it. Past `limit` of virtual time (default 10 minutes) it is interrupted
 * (the clock still moving for its finalizers, up to `limit` more) and the test fails with a message saying so, instead
 * of waiting for the runner's own timeout with no hint. Each step costs the TestClock a few milliseconds of real time
 * (10 minutes in 100 ms steps: about 25 s): under a shorter test timeout, give a `limit` the test's waits fit in, or a
 * larger `step`. Either option that is not a duration above zero makes it die with `IllegalArgumentException`; run
 * where the clock is no `TestClock` (`it.live`, or a Promise runner's test without `TestContext.TestContext`), it dies
 * saying so.
 *
 * @since 0.1.0
 * @category clock
 * @example
 * ```ts
 * const error = yield* FinTest.advanceUntilDone(Effect.flip(FeeService.calculate(request)))
 * ```
 */
export const advanceUntilDone = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: { readonly step?: FinConfig.DurationOption | undefined; readonly limit?: FinConfig.DurationOption | undefined } =
    {}
): Effect.Effect<A, E, R> =>
  // Options checked in the effect: a bad one is a defect of its run, not an exception where it is built.
  Effect.suspend(() => {
    const step = durationOption("step", options.step, "100 millis")
    const limit = durationOption("limit", options.limit, "10 minutes")
    const notTestClock = Effect.dieMessage(
      "effect-fin/test: advanceUntilDone moves the TestClock, and the clock here is not one (an it.live test, or " +
        "Effect.runPromise without TestContext.TestContext?): provide TestContext.TestContext (it.effect does)"
    )
    // A daemon, interrupted with its caller: a fiber of the caller's own would hold up the caller's end (the test's)
    // until it ended, which a finalizer that never ends never does.
    const advancing = Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.forkDaemon(Effect.exit(restore(effect))), (fiber) =>
        restore(Effect.gen(function*() {
          let elapsed = Duration.zero
          // The fiber may need a few turns of the scheduler to reach its next sleep, or its end; and a turn of the
          // event loop for what it awaits off the clock (the client's WebCrypto key, a socket): else the clock moved a
          // step while no sleep was due, and a call that waits for nothing ended 100 ms later than it began.
          const settled = Effect.repeatN(Effect.yieldNow(), 9).pipe(
            Effect.zipRight(Effect.promise(() => new Promise<void>((resume) => void Turn.next(resume)))),
            Effect.zipRight(Fiber.poll(fiber))
          )
          // The last step stops at the limit: a step that does not divide it would otherwise carry the clock past it,
          // and a call that ends there would pass where the test said it should not.
          const stepOn = (passed: Duration.Duration) => {
            const next = Duration.min(step, Duration.subtract(limit, passed))
            return Effect.as(TestClock.adjust(next), Duration.sum(passed, next))
          }
          while (Option.isNone(yield* settled)) {
            if (Duration.greaterThanOrEqualTo(elapsed, limit)) {
              // Interrupted while the clock still moves: a finalizer of the program that waits on it (a release that
              // calls the API, with its backoff and timeouts; an `Effect.sleep`) would otherwise hang the test with no
              // hint, where this says why. Its cleanup gets up to `limit` again; one that outlasts that is left to run.
              const moving = Effect.gen(function*() {
                for (let cleanup = Duration.zero; Duration.lessThan(cleanup, limit);) {
                  yield* settled
                  cleanup = yield* stepOn(cleanup)
                }
              })
              yield* Effect.raceFirst(Fiber.interrupt(fiber), moving)
              return yield* Effect.dieMessage(
                `effect-fin/test: still running after ${Duration.format(limit)} of TestClock time (advanced ` +
                  `${Duration.format(step)} at a time); a stall with no timeout, or a limit too short for the ` +
                  "waits in it"
              )
            }
            elapsed = yield* stepOn(elapsed)
          }
          // The daemon ends with the effect's exit, never failing: else Effect logs its error ("Fiber terminated with
          // an unhandled error", at Debug) into the test's captured logs for every call that fails.
          return yield* Effect.flatten(Fiber.join(fiber))
        })).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))))
    return Effect.flatMap(Effect.clock, (clock) =>
      typeof (clock as { readonly adjust?: unknown }).adjust === "function" ? advancing : notTestClock)
  })

const durationOption = (name: string, input: Duration.DurationInput | undefined, fallback: Duration.DurationInput) =>
  Durations.checkOrThrow(input ?? fallback, false, `effect-fin/test: advanceUntilDone: ${name}`)

/**
 * A handler that gives `replies` in turn, then repeats the last one. Its turn is its own state: make one per test.
 * Throws `IllegalArgumentException` when given no reply.
 *
 * @since 0.1.0
 * @category handlers
 */
export const sequence = (...replies: ReadonlyArray<Reply>): Handler => {
  if (replies.length === 0) throw new Cause.IllegalArgumentException("effect-fin/test: sequence needs at least one reply")
  let i = 0
  return () => replies[Math.min(i++, replies.length - 1)]!
}

/**
 * Answers like `handler`, after `duration` of (test) clock time: `handler` runs after the wait, so a call that gives
 * up first never runs it. For a service that did the work and answered late, write a handler that does the work at
 * once and then returns `Effect.delay(Effect.succeed(reply), duration)`. Throws `IllegalArgumentException` when
 * `duration` is no duration of zero or more (a bare number, from untyped code: its unit is not said).
 *
 * @since 0.1.0
 * @category handlers
 */
export const delayed = (duration: FinConfig.DurationOption, handler: Handler): Handler => {
  const wait = Durations.checkOrThrow(duration, true, "effect-fin/test: delayed: duration")
  return (request) =>
    Effect.zipRight(
      Effect.sleep(wait),
      Effect.suspend(() => {
        const answer = handler(request)
        return Effect.isEffect(answer) ? answer : Effect.succeed(answer)
      })
    )
}

/**
 * A token endpoint: answers `token-1`, `token-2`, ... (refresh tokens `refresh-1`, ...) with the service's
 * timestamp format, expiring `lifetime` after the current `Clock` time. Throws `IllegalArgumentException` when a
 * lifetime is not a duration from 1 second (expiries are sent in whole seconds) to 100 years. It counts for as long as
 * it lives: make one per test. Serve it on both token routes to number issued and refreshed tokens in one sequence.
 *
 * @since 0.1.0
 * @category handlers
 */
export const tokenHandler = (options: {
  readonly lifetime?: FinConfig.DurationOption | undefined
  readonly refreshLifetime?: FinConfig.DurationOption | undefined
  readonly envelope?: "top" | "data" | undefined
} = {}): Handler => {
  let issued = 0
  // A test's own mistake (a negative lifetime, one past what the timestamp format holds) stops it here, named.
  const checked = (name: string, input: Duration.DurationInput) =>
    Duration.toMillis(Durations.lifetimeOrThrow(input, `effect-fin/test: tokenHandler: ${name}`))
  const lifetime = checked("lifetime", options.lifetime ?? "1 hour")
  const refreshLifetime = checked("refreshLifetime", options.refreshLifetime ?? "7 days")
  return () =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      issued += 1
      const fields = {
        access_token: `token-${issued}`,
        access_token_ttl: formatServiceTimestamp(now + lifetime),
        refresh_token: `refresh-${issued}`,
        refresh_token_ttl: formatServiceTimestamp(now + refreshLifetime),
        current_time: formatServiceTimestamp(now)
      }
      return json(200, options.envelope === "data" ? { data: fields } : fields)
    })
}

/**
 * Formats epoch milliseconds the way the token endpoint does: `2025-12-28 10:34:45+00`.
 *
 * @since 0.1.0
 * @category handlers
 */
export const formatServiceTimestamp: (millis: number) => string = Timestamps.formatService

/**
 * What the in-memory client recorded.
 *
 * @since 0.1.0
 * @category models
 */
export interface InMemoryHttpService {
  /** Every request received since the start or the last `clear`, oldest first, unmatched ones included. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /**
   * Requests no route matched (answered with the service's 404): a misspelt route looks like a real 404 to the
   * program, so a test can assert there are none.
   */
  readonly unmatched: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /**
   * The test's routes that answered no request, in the order written: a misspelt route beside a `*` one that answers
   * in its place is listed here (its requests are not unmatched). The token routes `layerClient` adds are not listed.
   */
  readonly unused: Effect.Effect<ReadonlyArray<Route>>
  /**
   * Requests whose `METHOD /path` matches `route`: the routes' syntax, so a method not in upper case is a compile error
   * (a `*` stands for a segment; the emulator's counter names, `{country_code}`, match nothing here).
   */
  readonly count: (route: Route) => Effect.Effect<number>
  /** Forgets what was recorded: requests, unmatched ones, and which routes answered. */
  readonly clear: Effect.Effect<void>
}

/**
 * What `layerClient`'s in-memory service recorded: requests, unmatched ones, counts per route.
 *
 * @since 0.1.0
 * @category tags
 */
export class InMemoryHttp extends Context.Tag("effect-fin/test/InMemoryHttp")<InMemoryHttp, InMemoryHttpService>() {}

/**
 * Routes keyed `METHOD /path`, where a `*` segment matches any one segment: `"GET /v1/countries/* /subdivisions"`
 * (without the space). Where several match, the most specific (fewest `*`) answers. Unmatched requests get the
 * service's 404, its message naming the request and the routes given, with a warning logged (`InMemoryHttp.unmatched`
 * lists them). Only the method and the path are compared: not the host (every request is answered here, whatever
 * server it names) nor the query string (read it from `RecordedRequest.url` in the handler).
 *
 * @since 0.1.0
 * @category models
 */
export type Routes = Readonly<Record<Route, Handler>>

/**
 * A route of `Routes`: an upper-case method, a space, and a path (a misspelt method is a compile error).
 *
 * @since 0.1.0
 * @category models
 */
export type Route = `${"GET" | "POST" | "PUT" | "PATCH" | "DELETE"} /${string}`

const matches = (route: string, method: string, path: string): boolean => {
  // Split at the first space only: a route with a stray space ("GET /v1/countries/USA /subdivisions") then matches
  // nothing and is listed as unused, where cutting it there would answer the shorter path, silently.
  const space = route.indexOf(" ")
  const routeMethod = route.slice(0, space)
  const routePath = space === -1 ? "" : route.slice(space + 1)
  if (routeMethod !== method) return false
  const want = routePath.split("/")
  const have = path.split("/")
  return want.length === have.length && want.every((segment, i) => segment === "*" || segment === have[i])
}

// The number of `*` segments of a route: the fewer, the more specific.
const wildcards = (route: string) => route.split("/").filter((segment) => segment === "*").length

const decoder = new TextDecoder()

const parsedText = (bytes: Uint8Array): unknown => {
  const text = decoder.decode(bytes)
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

// What a test reads of a request's body. A stream is read whole first (an app's own service may stream its upload,
// and a test must see what was sent, not nothing); a FormData, or a raw body, is kept as given.
const bodyOf = (request: HttpClientRequest.HttpClientRequest): Effect.Effect<unknown, HttpClientError.RequestError> => {
  const body = request.body
  switch (body._tag) {
    case "Uint8Array":
      return Effect.succeed(parsedText(body.body))
    case "Stream":
      return Effect.scoped(Bytes.readUpTo(body.stream, Infinity)).pipe(
        Effect.map(({ bytes }) => parsedText(bytes)),
        Effect.mapError((cause) => new HttpClientError.RequestError({ request, reason: "Encode", cause }))
      )
    case "FormData":
      return Effect.succeed(body.formData)
    case "Raw":
      return Effect.succeed(body.body)
    case "Empty":
      return Effect.succeed(undefined)
  }
}

const toResponse = (request: HttpClientRequest.HttpClientRequest, reply: Reply, signal: AbortSignal) => {
  switch (reply._tag) {
    case "Stall":
      return Effect.never
    case "Fail":
      return Effect.fail(
        new HttpClientError.RequestError({
          request,
          reason: "Transport",
          description: reply.description,
          cause: systemError(reply.description)
        })
      )
    case "Respond": {
      const bytes = new TextEncoder().encode(reply.body)
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          if (reply.stallBody) {
            // Headers are out; the body hangs until the client aborts.
            signal.addEventListener("abort", () => controller.error(new Error("aborted")))
            return
          }
          if (reply.failBody !== undefined) return controller.error(systemError(reply.failBody))
          if (bytes.length > 0) controller.enqueue(bytes)
          controller.close()
        }
      })
      // A reply written by hand rather than with `json`/`text` (the type is exported) is checked here, where the
      // client would otherwise die on `Response`'s own RangeError (a status) or TypeError (a header).
      const status = checked(reply.status)
      const headers = checkedHeaders(reply.headers)
      bodyFor(status, reply.body, "reply")
      return Effect.succeed(
        HttpClientResponse.fromWeb(
          request,
          new Response(noBody(status) ? null : stream, { status, headers })
        )
      )
    }
  }
}

/**
 * An in-memory `HttpClient` answering from `routes` (or one handler for everything), plus `InMemoryHttp` to read
 * what was sent. Every request sent is kept, with no limit, for as long as the layer lives (`clear` forgets them): a
 * test's client, not one for a soak or a benchmark of millions of calls.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttpClient = (routes: Routes | Handler): Layer.Layer<HttpClient.HttpClient | InMemoryHttp> =>
  inMemory(routes, "", typeof routes === "object" && routes !== null ? Object.keys(routes) : [])

// `basePath`: the path of the client's base URL (a proxy's prefix), taken off each request's path before it is matched
// and recorded, so that routes and counts are written as the API's paths. `own`: the routes the test wrote.
const inMemory = (
  routes: Routes | Handler,
  basePath: string,
  own: ReadonlyArray<string>
): Layer.Layer<HttpClient.HttpClient | InMemoryHttp> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    // The most specific route first (fewest `*` segments), whatever the order of the keys; then in the order given.
    const refused = typeof routes === "function" ? undefined : notAHandler(routes)
    if (refused !== undefined) return yield* Effect.die(refused)
    const table = typeof routes === "function"
      ? []
      : Object.entries(routes).sort(([a], [b]) => wildcards(a) - wildcards(b))
    const recorded = yield* Ref.make<ReadonlyArray<RecordedRequest>>([])
    const unmatched = yield* Ref.make<ReadonlyArray<RecordedRequest>>([])
    const answered = yield* Ref.make<ReadonlySet<string>>(new Set())
    const client = HttpClient.make((request, url, signal) =>
      Effect.gen(function*() {
        const headers: Record<string, string> = {}
        for (const [key, value] of Object.entries(request.headers)) headers[key.toLowerCase()] = value
        const seen: RecordedRequest = {
          method: request.method,
          url: url.toString(),
          path: basePath !== "" && url.pathname.startsWith(`${basePath}/`)
            ? url.pathname.slice(basePath.length)
            : url.pathname,
          headers,
          body: yield* bodyOf(request),
          at: yield* Clock.currentTimeMillis
        }
        yield* Ref.update(recorded, (all) => [...all, seen])
        const found = typeof routes === "function"
          ? undefined
          : table.find(([route]) => matches(route, seen.method, seen.path))
        if (found !== undefined) yield* Ref.update(answered, (routes) => new Set(routes).add(found[0]))
        const handler = typeof routes === "function" ? routes : found?.[1]
        if (handler === undefined) {
          yield* Ref.update(unmatched, (all) => [...all, seen])
          yield* Effect.logWarning(
            `effect-fin/test: no route matches ${seen.method} ${seen.path}; answering the service's 404`
          ).pipe(Effect.annotateLogs("routes", typeof routes === "function" ? [] : Object.keys(routes)))
        }
        // The service's 404, its message saying it came from no route of the test's (the warning is not shown by
        // `it.effect`, and a misspelt route would read as the service's own refusal).
        const answer = handler === undefined
          ? json(404, {
            message: `Resource not found (effect-fin/test: no route matches ${seen.method} ${seen.path}; routes: ${
              typeof routes === "function" || own.length === 0 ? "none" : own.join(", ")
            })`
          })
          : handler(seen)
        // A handler's Effect cannot fail (its type says so); one that does, past a cast or from JS, is named here
        // rather than reaching the client as an HttpClientError it cannot read.
        const reply = Effect.isEffect(answer)
          ? yield* Effect.orDieWith(answer as Effect.Effect<unknown, unknown>, (error) =>
            new Cause.IllegalArgumentException(
              `effect-fin/test: the handler for ${seen.method} ${seen.path} failed with ${describeValue(error)}: ` +
                "a handler's Effect cannot fail; answer FinTest.fail(...) for a transport failure, or json(status, ...)"
            ))
          : answer
        if (!isReply(reply)) {
          // From untyped code (or past a cast): a Promise, undefined, a reply written by hand with another shape.
          return yield* Effect.die(
            new Cause.IllegalArgumentException(
              `effect-fin/test: the handler for ${seen.method} ${seen.path} answered ${describeValue(reply)}, ` +
                "which is no reply: return FinTest.json, text, fail(), failBody(), stallBody() or stall, or an " +
                "Effect of one (not a Promise)"
            )
          )
        }
        return yield* toResponse(request, reply, signal)
      })
    )
    const service: InMemoryHttpService = {
      requests: Ref.get(recorded),
      unmatched: Ref.get(unmatched),
      unused: Effect.map(Ref.get(answered), (used) => own.filter((route) => !used.has(route)) as Array<Route>),
      count: (route) =>
        Effect.map(Ref.get(recorded), (all) => all.filter((r) => matches(route, r.method, r.path)).length),
      clear: Effect.all([Ref.set(recorded, []), Ref.set(unmatched, []), Ref.set(answered, new Set())], {
        discard: true
      })
    }
    return Layer.merge(Layer.succeed(HttpClient.HttpClient, client), Layer.succeed(InMemoryHttp, service))
  }))

/**
 * The real client (`FinClient.layer`) on the in-memory `HttpClient`, with test credentials and a loopback base URL
 * unless `options` says otherwise (a base URL with a path, a proxy's prefix, is taken off each request's path: routes,
 * counts and recorded paths are the API's). Token routes are added for the token paths no route of `routes` answers
 * (a `"POST /v1/oauth/*"` of yours answers both, and is not shadowed by a more specific one): `POST /v1/oauth/token`
 * answers with `tokenHandler()`, and `POST /v1/oauth/refresh-token` with the issue route's handler (that one, or
 * yours), so refreshes (past about 59 minutes of `TestClock` time) are answered too and counted in the same sequence.
 * The in-memory `HttpClient` is provided too, so an app's own services that need one send through the same routes
 * and are recorded in the same `InMemoryHttp`.
 *
 * A handler keeps its state (the turn of a `sequence`, the count of a `tokenHandler`) for as long as it lives: routes
 * made once and shared by several tests carry that state from one test to the next. Make the routes in each test, or
 * in a function called by each.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerClient = (
  routes: Routes,
  options: Partial<FinConfig.Options> = {}
): Layer.Layer<FinClient.Services | InMemoryHttp | HttpClient.HttpClient, ConfigError.ConfigError> =>
  // Suspended: the token endpoint added here is made with each build, so a layer provided in several tests does not
  // carry its token count from one to the next.
  Layer.suspend(() => {
    // Checked as the test wrote them, before the token routes are added from them (a misused one is named as written).
    if (typeof routes === "function") {
      return Layer.die(
        new Cause.IllegalArgumentException(
          "effect-fin/test: layerClient takes routes ({ \"GET /v1/...\": handler }), not one handler: use " +
            "layerHttpClient for a handler of every request"
        )
      )
    }
    const refused = notAHandler(routes)
    if (refused !== undefined) return Layer.die(refused)
    // The handler of the test's that answers a token path, as the in-memory client picks it (the most specific): a
    // route such as `"POST /v1/oauth/*"` is not shadowed by an added, more specific one, and refreshes go to the
    // handler that issues (one sequence).
    const answering = (path: string) =>
      Object.entries(routes).filter(([route]) => matches(route, "POST", path))
        .sort(([a], [b]) => wildcards(a) - wildcards(b))[0]?.[1]
    const ownIssue = answering("/v1/oauth/token")
    const issue = ownIssue ?? tokenHandler()
    const withToken: Routes = {
      ...(ownIssue === undefined ? { "POST /v1/oauth/token": issue } : {}),
      ...(answering("/v1/oauth/refresh-token") === undefined ? { "POST /v1/oauth/refresh-token": issue } : {}),
      ...routes
    }
    const baseUrl = options.baseUrl ?? "http://127.0.0.1:4010"
    return FinClient.layer({ clientId: "test-client", clientSecret: "test-secret", ...options, baseUrl }).pipe(
      Layer.provideMerge(inMemory(withToken, basePathOf(baseUrl), Object.keys(routes)))
    )
  })

// The path of a base URL, without its trailing slash; empty for one that is no URL (FinClient.layer refuses it).
const basePathOf = (baseUrl: string): string => {
  try {
    return new URL(baseUrl).pathname.replace(/\/+$/, "")
  } catch {
    return ""
  }
}

/**
 * Options of the deterministic fee service, checked when the layer is built (the emulator takes the same ones).
 *
 * @since 0.1.0
 * @category models
 */
export interface FeeServiceOptions {
  /** Rates keyed `"USD/CAD"`, each finite and above zero; the inverse pair is derived when missing. */
  readonly rates: Readonly<Record<`${string}/${string}`, number>>
  /** Default `{ fixed: 0, percentage: 0 }` (the emulator's default is `{ fixed: 1, percentage: 1 }`). */
  readonly fee?: FeeRule | undefined
  /**
   * Default 15 minutes from the current `Clock` time; `valid_till` is sent in whole seconds, as the emulator does, so
   * from 1 second to 100 years (as the emulator takes it).
   */
  readonly quoteLifetime?: FinConfig.DurationOption | undefined
  /**
   * Known beneficiaries by id (a UUID, matched without regard to case): their currency and developer fee (added to
   * the base fee).
   */
  readonly beneficiaries?:
    | Readonly<Record<string, { readonly currency: string; readonly developerFee?: FeeRule | undefined }>>
    | undefined
  /** The source currency of a request that names none (it then names a beneficiary); default `USD`. */
  readonly defaultSourceCurrency?: string | undefined
}

/**
 * A fee: `fixed` plus `percentage` (4 = 4 %) of the source amount, each finite and zero or more, the percentage below
 * 100.
 *
 * @since 0.1.0
 * @category models
 */
export interface FeeRule {
  /** The fixed part, in units of the source currency. */
  readonly fixed: number
  /** The part taken from the source amount, in percent (4 = 4 %); below 100. */
  readonly percentage: number
}

const FeeServiceOptionsData = Schema.Struct({
  rates: Quote.Rates,
  fee: Schema.optional(Quote.FeeRule),
  beneficiaries: Schema.optional(Quote.Beneficiaries),
  defaultSourceCurrency: Schema.optional(Quote.CurrencyCode),
  quoteLifetime: Schema.optional(Schema.Unknown)
})

// A mistake in a test's set-up is the test's bug: it stops the layer's construction with a message naming each problem,
// rather than giving quotes no service could (an infinite source amount, a negative rate).
const quoteSettings = (options: FeeServiceOptions): { readonly settings: Quote.QuoteSettings; readonly lifetime: number } => {
  const invalid = (message: string) => new Cause.IllegalArgumentException(`FinTest.layerFeeService: ${message}`)
  const decoded = Schema.decodeUnknownEither(FeeServiceOptionsData, { errors: "all", onExcessProperty: "error" })(
    options
  )
  // As the emulator's: at least a second (`valid_till` is sent in whole seconds), at most 100 years. Told with the
  // other options' problems, so that one error names them all.
  const lifetime = Durations.checkLifetime(
    (typeof options === "object" && options !== null ? options.quoteLifetime : undefined) ?? "15 minutes"
  )
  if (Either.isLeft(decoded) || Either.isLeft(lifetime)) {
    throw invalid([
      ...(Either.isLeft(decoded) ? [Issues.describeAll(decoded.left)] : []),
      ...(Either.isLeft(lifetime) ? [`quoteLifetime ${lifetime.left}`] : [])
    ].join("; "))
  }
  const data = decoded.right
  const beneficiaries: Record<string, typeof Quote.Beneficiary.Type> = {}
  for (const [id, beneficiary] of Object.entries(data.beneficiaries ?? {})) beneficiaries[id.toLowerCase()] = beneficiary
  return {
    settings: {
      rates: data.rates,
      fee: data.fee ?? { fixed: 0, percentage: 0 },
      beneficiaries,
      defaultSourceCurrency: data.defaultSourceCurrency ?? "USD"
    },
    lifetime: Duration.toMillis(lifetime.right)
  }
}

const operation = "POST /v1/fee-calculation"

// Only what an override is checked against: this service neither waits nor retries.
const overrideDefaults: CallOptions.Resolved = {
  timeout: Duration.seconds(30),
  deadline: Duration.seconds(60),
  maxRetries: 2
}

/**
 * A `FeeService` that computes quotes from a rate table with no network, with the emulator's figures for the same
 * options: requests are validated exactly like the real service's (a bad one is a `RequestValidationError`), an
 * unknown beneficiary is an `ApiError` 404, an unknown pair an `ApiError` 422 with its field error. Invalid options
 * stop the layer's construction with an `IllegalArgumentException` naming each problem.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFeeService = (options: FeeServiceOptions): Layer.Layer<FeeService.FeeService> =>
  Layer.sync(FeeService.FeeService, () => {
    const { lifetime, settings } = quoteSettings(options)
    return FeeService.FeeService.of({
      calculate: (request) =>
        Effect.gen(function*() {
          // The request first, then the overrides the real client would refuse (`withOptions({ maxRetries: -1 })`), in
          // the real client's order (it validates the request before the transport sees the overrides).
          const valid = yield* FeeService.validate(request)
          yield* CallOptions.resolve(overrideDefaults, yield* HttpTransport.currentCallOptions)
          const quoted = Quote.quote(settings, valid)
          if (Either.isLeft(quoted)) {
            const problem = quoted.left
            if (problem._tag === "UnknownBeneficiary") {
              return yield* new ApiError({
                status: 404,
                message: AnswerErrors.apiErrorMessage(404, operation, "Resource not found", undefined),
                operation,
                attempts: 1
              })
            }
            const fieldErrors = [new FieldError({ field: problem.field, message: problem.detail })]
            return yield* new ApiError({
              status: 422,
              message: AnswerErrors.apiErrorMessage(422, operation, problem.message, fieldErrors),
              fieldErrors,
              operation,
              attempts: 1
            })
          }
          const figures = quoted.right
          const now = yield* Clock.currentTimeMillis
          // Whole seconds, as the emulator sends it.
          const till = DateTime.unsafeMake(Math.floor((now + lifetime) / 1000) * 1000)
          return new FeeService.FeeQuote({ ...figures, valid_till: Option.some(till), fee: new FeeService.Fee(figures.fee) })
        })
    })
  })
