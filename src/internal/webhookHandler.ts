/**
 * The webhook `HttpApp` handler: the body read, verification, de-duplication, ordering, the user's handlers.
 *
 * @internal
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as Headers from "@effect/platform/Headers"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as FinConfig from "../FinConfig.js"
import type { WebhookVerificationError } from "../FinError.js"
import * as Bytes from "./bytes.js"
import * as ClaimRenewal from "./claimRenewal.js"
import * as Monotonic from "./monotonic.js"
import * as Outage from "./outage.js"
import * as Redact from "./redact.js"
import * as Signature from "./signatureHeaders.js"
import * as Spans from "./spans.js"
import {
  bodyReadBefore,
  encodedMessage,
  encodingOf,
  readBeforeMessage,
  takenAsUpgrade,
  tooLarge,
  transferCodingOf,
  upgradeMessage
} from "./webhookBody.js"
import {
  type Handled,
  WebhookDedupeStore,
  WebhookDedupeStoreError,
  type WebhookDedupeStoreService,
  makeMemoryDedupeStore,
  orderKey
} from "./webhookDedupe.js"
import {
  type EventType,
  WebhookEvent,
  type WebhookEventOf,
  documented,
  documentedEventTypes,
  ordered
} from "./webhookEvents.js"
import { MAX_FAILURE_TEXT, holdsSecret, renderedOrUndefined, squashedName } from "./webhookFailure.js"
import { type Answer, deliveriesOf, respond, settleAs, spanFailingOn500 } from "./webhookOutcome.js"
import { closing, makeReject } from "./webhookReject.js"
import {
  type Decoded,
  MAX_FUTURE_SKEW_MILLIS,
  type Secrets,
  type VerifyOptions,
  checkAge,
  checkEnvironment,
  checkOptionNames,
  checkedDuration,
  fail,
  invalidOption,
  malformed,
  notTextMessage,
  paddedMessage,
  secretList,
  textOf,
  verifyDecoded
} from "./webhookVerify.js"

// ---------------------------------------------------------------------------------------------------------------------
// Handler
// ---------------------------------------------------------------------------------------------------------------------

/**
 * What the handler tells a user's handler about the delivery.
 *
 * @since 0.1.0
 * @category models
 */
export interface Delivery {
  /**
   * A status event of the same kind (`orderKey`: its type, `.v2` or not) newer than this one was already handled
   * for the same `event_reference_id` (see `deliverStale` and `orderedEventTypes`); always `false` for other events.
   */
  readonly stale: boolean
  /**
   * The body as delivered (signed and verified), as text, a leading byte order mark included. An event's data is read
   * with `JSON.parse`, whose numbers are doubles: a whole number past `Number.MAX_SAFE_INTEGER` (an amount in a
   * currency's smallest unit, say) is no longer the one sent, and one past 1e308 is `Infinity`. Read such a number from
   * here, with a parser that keeps it.
   */
  readonly body: string
  /**
   * The position, in the handler's `secrets`, of the secret the delivery was signed with (0 for a single secret).
   * During a rotation, once no delivery comes with the old secret's, it can be taken out (also on the span, as
   * `fin.webhook.secret`).
   */
  readonly secret: number
}

/**
 * The user's handlers, one per event type (all optional; events without a handler are acknowledged, whatever their
 * data holds). `Unknown` receives events of undocumented types. `R`: the services they may require, `unknown` by
 * default (so `<H extends Handlers>` and `satisfies Handlers` take every handler). A variable annotated with this type gives
 * `handler` its `R` as the app's requirements: annotate with `Handlers<never>` (none) or `Handlers<Db>`, not the
 * default, whose `unknown` no server provides.
 *
 * @since 0.1.0
 * @category models
 */
export type Handlers<R = unknown> = {
  // `undefined` (a handler switched off by a flag) is no handler, as an absent key is.
  readonly [T in EventType]?:
    | ((event: WebhookEventOf<T>, delivery: Delivery) => Effect.Effect<unknown, unknown, R>)
    | undefined
}

/**
 * Refuses, at compile time, a key of `handlers` that is not an event type (a misspelt one would otherwise be accepted
 * beside valid ones, its events acknowledged and never handled). In a function generic over the handlers, where this
 * cannot be decided, take the check into its own parameter, so its callers' keys are checked:
 * `<H extends Handlers>(handlers: H & OnlyEventTypes<H>["handlers"]) => handler<H>({ secrets, handlers })`. The keys
 * are also checked when the handler is built.
 *
 * @since 0.1.0
 * @category models
 */
export type OnlyEventTypes<H> = {
  readonly handlers: { readonly [K in Exclude<keyof H, EventType>]: NotAnEventType<K> }
}

/**
 * The type a key of `handlers` that is not an event type is given, so that the compiler's error names the key and
 * says what is wrong (`... is not assignable to type 'NotAnEventType<"beneficiary.statsu">'`); no handler is one.
 *
 * @since 0.1.0
 * @category models
 */
export interface NotAnEventType<K> {
  readonly "effect-fin: not a webhook event type (Webhooks.documentedEventTypes lists them, and Unknown)": K
}

/**
 * The services the handlers of `H` require.
 *
 * @since 0.1.0
 * @category models
 */
export type HandlersContext<H> = {
  [K in keyof H]-?: ContextOf<H[K]>
}[keyof H]

// Distributed over a union, so that an `undefined` handler (or an optional key) requires nothing, not `unknown`.
type ContextOf<F> = F extends (...args: ReadonlyArray<never>) => Effect.Effect<infer _A, infer _E, infer R> ? R : never

/**
 * What `handler` and `makeHandler` take: the secrets, the handlers per event type, and the limits.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandlerOptions<H extends Handlers> extends VerifyOptions {
  /** The webhook secret, or several during a rotation. */
  readonly secrets: Secrets
  /**
   * One handler per event type (`Handlers`), given the decoded event; an event with none is acknowledged. A handler
   * that fails is answered 500, so the service delivers again.
   */
  readonly handlers: H
  /** Largest body accepted, in bytes (default 1 MiB); a larger one gets 413, read up to the chunk that goes past it. */
  readonly maxBodySize?: number | undefined
  /**
   * How long a delivery's body may take to arrive (default 10 seconds; the service sends a small JSON document at
   * once); a slower one gets 408 and its connection closed. Without it a body that never ends would hold what it
   * sent (up to `maxBodySize`, before any signature check) until the server's own request timeout: 300 s on Node.
   */
  readonly bodyTimeout?: FinConfig.DurationOption | undefined
  /** Also pass stale events to the handlers (with `delivery.stale`); by default they are only acknowledged. */
  readonly deliverStale?: boolean | undefined
  /** De-duplication store; default: the `WebhookDedupeStore` service if provided, else one in memory. */
  readonly store?: WebhookDedupeStoreService | undefined
  /**
   * How long a user handler may run (default 1 minute); one that runs longer is interrupted and counts as failed
   * (500, so the service delivers again). A handler that cannot be interrupted (`Effect.uninterruptible`) is waited
   * for, its claim renewed meanwhile, and still counts as failed: while the store renews the claim, a redelivery is
   * answered 409; once a renewal fails (the store unreachable), the claim lapses after `claimTtl` and a redelivery
   * runs the handler beside the one still running. Keep handlers interruptible. The handler's own work is timed: the
   * release of what it acquired in its scope (a commit) runs after, before its event is marked handled.
   */
  readonly handlerTimeout?: FinConfig.DurationOption | undefined
  /**
   * How long a claim on an event (and its resource) lives unless renewed: default 30 seconds, at least 1 second. While
   * a user handler runs, its claim is renewed every third of that, so it never expires under a live handler; a
   * process that dies mid-handler holds the event (409) and its resource (409 after `referenceWait`) for at most
   * this long, then the service's redelivery gets through. If a renewal finds the claim gone (it expired while the
   * store was unreachable, and maybe another delivery took it), the handler is interrupted and the delivery answered
   * 500 `{"outcome":"store_unavailable"}` (the store's failure, not the handler's).
   */
  readonly claimTtl?: FinConfig.DurationOption | undefined
  /**
   * How long handled event ids are remembered (default 24 hours; when `maxAge` is set, at least `maxAge` and the 5
   * minutes an event may be dated ahead, and a minute more, so that a replay is refused either as too old or as a
   * duplicate). A delivery repeated after that runs the handlers again, as does one whose id a bounded store dropped
   * first (the in-memory store keeps at most `maxEntries`, 10,000 by default).
   */
  readonly dedupeTtl?: FinConfig.DurationOption | undefined
  /**
   * How long the newest `created_at` handled per status and `event_reference_id` (`orderKey`) is remembered, for the
   * order of status events (default 30 days, at least `dedupeTtl`): a status event older than that one, redelivered
   * or replayed later, is stale rather than applied over the newer status.
   */
  readonly orderTtl?: FinConfig.DurationOption | undefined
  /**
   * How long a delivery waits while another event of the same `event_reference_id` is being handled (default 5
   * seconds; checked between its tries of the store, at most 200 ms apart, the last one at its end, so it may wait
   * one try longer); after that it gets 409 and the service delivers it again later.
   */
  readonly referenceWait?: FinConfig.DurationOption | undefined
}

/**
 * The default `maxBodySize`: 1 MiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxBodySize = 1024 * 1024

// How long a handled id is kept past maxAge and the clock skew `verify` allows (MAX_FUTURE_SKEW_MILLIS).
const DEDUPE_MARGIN_MILLIS = 60_000

const handlerSettings = (options: HandlerOptions<Handlers>) => {
  const invalid = (message: string) => invalidOption("handler", message)
  // From untyped code: no options, or no `handlers` (an unset configuration key), is named like any other mistake.
  if (typeof options !== "object" || options === null) throw invalid("takes an options object ({ secrets, handlers })")
  checkOptionNames("handler", options)
  // Every delivery would be refused (500, no_secret): a configuration mistake, said at once.
  const secrets = secretList(options.secrets)
  if (secrets.notText) throw invalid(`secrets ${notTextMessage}`)
  if (secrets.keys.length === 0) throw invalid("secrets holds no webhook secret (empty ones do not count)")
  if (secrets.padded) throw invalid(`secrets ${paddedMessage}`)
  checkEnvironment("handler", options.environment)
  // A Map's entries are no properties: every event would be acknowledged (200 handled) and none handled.
  if (
    typeof options.handlers !== "object" || options.handlers === null || Array.isArray(options.handlers) ||
    (options.handlers as unknown) instanceof Map
  ) {
    throw invalid("handlers must be an object of event types to handlers ({} to acknowledge every event)")
  }
  // A misspelt event type would leave its events acknowledged (200 handled) and never handled: lost for good.
  for (const [type, handle] of Object.entries(options.handlers)) {
    if (type !== "Unknown" && !documented.has(type)) {
      throw invalid(`handlers has "${type}", which is not an event type (${documentedEventTypes.join(", ")}, Unknown)`)
    }
    if (handle !== undefined && typeof handle !== "function") throw invalid(`handlers["${type}"] is not a function`)
  }
  const duration = (name: string, input: Duration.DurationInput | undefined, allowZero: boolean, timer = false) =>
    checkedDuration("handler", name, input, allowZero, timer)
  // From untyped configuration, "true" would be ignored without a word (only `true` delivers stale events).
  if (options.deliverStale !== undefined && typeof options.deliverStale !== "boolean") {
    throw invalid("deliverStale must be true or false")
  }
  const limit = options.maxBodySize ?? defaultMaxBodySize
  // 0 (an empty variable read as a number) would refuse every delivery: no event is empty.
  if (!Number.isSafeInteger(limit) || limit < 1) throw invalid("maxBodySize must be a whole number of bytes, 1 or more")
  const maxAge = options.maxAge === undefined ? undefined : duration("maxAge", options.maxAge, false)
  // An event dated ahead of this clock (as far as maxAge allows) stays young for that much longer than maxAge. A
  // minute more: at exactly maxAge old it is not too old yet, and its age is on the wall clock, the store's time on the
  // monotonic one.
  const dedupeTtl = Duration.max(
    duration("dedupeTtl", options.dedupeTtl ?? "24 hours", false),
    maxAge === undefined ? Duration.zero : Duration.sum(maxAge, MAX_FUTURE_SKEW_MILLIS + DEDUPE_MARGIN_MILLIS)
  )
  return {
    secrets,
    limit,
    maxAge,
    dedupeTtl,
    orderTtl: Duration.max(duration("orderTtl", options.orderTtl ?? "30 days", false), dedupeTtl),
    handlerTimeout: duration("handlerTimeout", options.handlerTimeout ?? "1 minute", false, true),
    bodyTimeout: duration("bodyTimeout", options.bodyTimeout ?? "10 seconds", false, true),
    claimTtl: Duration.max(duration("claimTtl", options.claimTtl ?? "30 seconds", false), Duration.seconds(1)),
    referenceWait: Duration.toMillis(duration("referenceWait", options.referenceWait ?? "5 seconds", true, true))
  }
}

// How often a delivery waiting for its reference asks the store again: after 25 ms, then twice as long each time, up to
// 200 ms (a shared store is not polled 40 times a second per waiting delivery).
const firstPollMillis = 25
const maxPollMillis = 200

/**
 * An `HttpApp` that receives Fin webhooks (mount it with `HttpRouter.post`):
 *
 * 1. checks `Content-Length` against `maxBodySize` (413), refuses a `Content-Encoding` other than `identity`, or a
 *    `Transfer-Encoding` other than `chunked` or `identity` (400: Fin documents no compression of deliveries), then
 *    reads the body on every runtime, stopping at the chunk that goes past that many bytes (413), within
 *    `bodyTimeout` (408);
 * 2. verifies the raw bytes (401 without detail), decodes the event and applies `maxAge` and `environment` (400);
 * 3. claims `event.id` and its `event_reference_id` in the store: 200 if the event was handled before, 409 while
 *    another delivery handles it; while another event of the same reference is being handled it waits (up to
 *    `referenceWait`, then 409), so events of one resource are handled one at a time, in the order checked next;
 * 4. answers 200 without calling the handlers if the event is a status event (`orderedEventTypes`) and a newer
 *    one of the same kind (`orderKey`) was handled for the same `event_reference_id` (stale), unless `deliverStale`;
 * 5. calls the handler for `event.type`, renewing the claim while it runs: 200 once it succeeds; 500 if it fails, runs
 *    past `handlerTimeout` or loses its claim, and the event is not marked handled, so a redelivery runs it again. A
 *    client that disconnects does not stop the handler: it runs to its end and the event is marked handled (nothing
 *    waits for it at shutdown: `makeHandler` does).
 *
 * Delivery is effectively once, not exactly once (a handler can succeed and the process die before the event is
 * marked handled): handlers must be idempotent.
 *
 * Throws `IllegalArgumentException` when an option is invalid: a size or duration that is zero (but `referenceWait`,
 * which may be), negative, NaN, infinite or not a duration, a `maxBodySize` that is no whole number, a
 * `handlerTimeout`, `bodyTimeout` or `referenceWait` over 24 days (past 2^31 - 1 ms a timer never fires), `secrets`
 * with no non-empty secret, one with whitespace, a control or an invisible formatting character at either end or one
 * that is not text, an `environment` other than `"sandbox"` and `"production"`, a `deliverStale` that is not a boolean
 * (`"true"` from configuration), a key that is no option (`maxBodysize`).
 *
 * @since 0.1.0
 * @category handler
 */
export const handler = <const H extends object>(
  options: HandlerOptions<H & Handlers> & OnlyEventTypes<H>
): HttpApp.Default<never, HandlersContext<H> | Scope.Scope> => makeApp(options)(detached)

/**
 * `handler` for an app that lives in a scope (a layer): closing the scope, as a server's shutdown does, waits for the
 * user handlers still running (each for at most `handlerTimeout` of work, then for the release of what it acquired
 * in its scope, which no timeout bounds: give a release that may hang a timeout of its own), so they end with their
 * finalizers and their events marked handled, instead of being cut off with the process and their claims held for
 * `claimTtl`. A delivery that arrives once the scope is closing gets 503 `{"outcome":"shutting_down"}`, and the
 * service delivers it again.
 *
 * Build the server inside this scope (in the layer returned to `Layer.unwrapScoped`, the server layer provided
 * there): it then closes first, so no delivery is accepted while the handlers drain.
 *
 * Dies with `IllegalArgumentException` (a defect) when an option is invalid, where `handler` throws it.
 *
 * @since 0.1.0
 * @category handler
 */
export const makeHandler = <const H extends object>(
  options: HandlerOptions<H & Handlers> & OnlyEventTypes<H>
): Effect.Effect<HttpApp.Default<never, HandlersContext<H> | Scope.Scope>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const app = makeApp(options)
    const running = yield* FiberSet.make<Answer>()
    // Deliveries admitted (past the shutdown check) and not yet forked or answered: the closing waits for them too, so
    // one that was claiming its event when the scope began to close still runs its handler, or frees its claim.
    let admitted = 0
    let closing = false
    const idle = yield* Deferred.make<void>()
    const leave = Effect.sync(() => {
      admitted -= 1
      if (closing && admitted === 0) Deferred.unsafeDone(idle, Exit.void)
    })
    // Added after the set, so it runs before the set's own finalizer, which interrupts what is still running. A
    // delivery's fiber, forked uninterruptible, would be waited for all the same; the wait is said here, not left to
    // how the fibers happen to be forked.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        return Effect.zipRight(admitted === 0 ? Effect.void : Deferred.await(idle), FiberSet.awaitEmpty(running))
      })
    )
    return app({
      fork: FiberSet.run(running),
      admit: (delivery, refused) =>
        Effect.suspend(() => {
          if (closing) return refused
          admitted += 1
          return Effect.ensuring(delivery, leave)
        })
    })
  })

// Where a claimed delivery runs to its end: a fiber detached from the request (see `handle`), tracked by `makeHandler`,
// whose `admit` answers `refused` once its scope is closing.
interface Runner {
  readonly fork: <R>(finish: Effect.Effect<Answer, never, R>) => Effect.Effect<Fiber.RuntimeFiber<Answer>, never, R>
  readonly admit: <A, E, R>(delivery: Effect.Effect<A, E, R>, refused: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const detached: Runner = { fork: Effect.forkDaemon, admit: (delivery) => delivery }

// A user's handler for one event, as `handle` calls it.
type UserHandler<R> = (event: WebhookEvent, delivery: Delivery) => Effect.Effect<unknown, unknown, R>

// A delivery that holds the claim on its event (its `token`, taken at `sentAt`), and what its steps need of it.
interface Claimed<R> {
  readonly store: WebhookDedupeStoreService
  readonly decoded: Decoded
  readonly token: string
  readonly sentAt: number
  readonly renewal: ClaimRenewal.Renewal
  readonly userHandler: UserHandler<R> | undefined
  // Whether the event is a status event whose order is kept (`orderKey`: `key`).
  readonly isOrdered: boolean
  readonly key: string
  // What the store records once the event is handled.
  readonly handled: Handled
  readonly releaseClaim: Effect.Effect<void>
}

const makeApp = <const H extends object>(
  options: HandlerOptions<H & Handlers>
): (runner: Runner) => HttpApp.Default<never, HandlersContext<H> | Scope.Scope> => {
  const {
    bodyTimeout,
    claimTtl,
    dedupeTtl,
    handlerTimeout,
    limit,
    maxAge,
    orderTtl,
    referenceWait,
    secrets
  } = handlerSettings(
    options
  )
  // A user handler's failure as logged: as it is, unless its text holds a webhook secret (an error quoting its
  // configuration, say), which is then logged redacted, as text. The secrets are read when it is logged (rotated
  // since, maybe).
  const logFailure = (cause: Cause.Cause<unknown>) => {
    // As Effect's loggers render it (an error's own `cause` included), searched whole however long.
    const text = renderedOrUndefined(cause)
    const redact = (text: string) =>
      Redact.redactor(secrets.keys.flatMap((key) => textOf(key) ?? []), text.length)(text)
    // An error that is its own cause, or its cause's (a cycle), overflows Effect's rendering, in every logger too: said
    // without it, rather than not at all.
    if (text === undefined) {
      return Effect.logError(
        "effect-fin: webhook handler failed with an error whose causes make a cycle (not renderable): " +
          redact(squashedName(cause)).slice(0, MAX_FAILURE_TEXT)
      )
    }
    const redacted = redact(text)
    // The cause is handed to the loggers as it is only when nothing in it holds a secret: not its rendering alone,
    // which leaves out an error's own fields (`error.config`, a tagged error's fields, an object's with a `toString`),
    // but its whole structure as a logger that inspects or serialises it sees it.
    return redacted === text && !holdsSecret(cause, redact)
      ? Effect.logError("effect-fin: webhook handler failed", cause)
      // One message: a second would be a second `message` key in a logfmt line, which parsers drop.
      : Effect.logError(
        `effect-fin: webhook handler failed (a webhook secret redacted): ${redacted.slice(0, MAX_FAILURE_TEXT)}`
      )
  }
  const timedOut = () => `the handler ran longer than handlerTimeout (${Duration.format(handlerTimeout)})`
  const verifyOptions: VerifyOptions = { maxAge, environment: options.environment }
  const { reject, verified } = makeReject()
  type Claim = Claimed<HandlersContext<H>>
  const ownStore = makeMemoryDedupeStore()
  // Said once: a store provided beside the server rather than to it is otherwise silently replaced by this one.
  let ownStoreAnnounced = false
  const storeFor: Effect.Effect<WebhookDedupeStoreService> = options.store !== undefined
    ? Effect.succeed(options.store)
    : Effect.flatMap(Effect.serviceOption(WebhookDedupeStore), (provided) => {
      if (Option.isSome(provided)) return Effect.succeed(provided.value)
      if (ownStoreAnnounced) return Effect.succeed(ownStore)
      ownStoreAnnounced = true
      return Effect.as(
        Effect.logInfo(
          "effect-fin: no WebhookDedupeStore provided to this webhook handler; de-duplicating in this process's memory " +
            "(to share a store, give it as the handler's `store` option, or provide it to the server's layer with " +
            "Layer.provide: merged beside it, it does not reach the handler)"
        ),
        ownStore
      )
    })
  // Only documented types reach it (the data of others is kept as sent), so no key of Object's prototype.
  const unhandled = (type: string) => (options.handlers as Readonly<Record<string, unknown>>)[type] === undefined
  const handlerFor = (event: WebhookEvent) =>
    // Indexing by `event.type` picks the entry whose parameter is this very variant.
    options.handlers[event.type] as UserHandler<HandlersContext<H>> | undefined

  // A store outage is said once at Error, its end at Info, and every delivery in between at Debug (see `Outage`): the
  // service retries each delivery, often, and a line each would flood. One outage per store: served with several (one
  // per tenant, provided per request), one store's answers must not say the end of another's outage.
  const outages = new WeakMap<WebhookDedupeStoreService, Outage.Outage>()
  const outageOf = (store: WebhookDedupeStoreService): Outage.Outage => {
    const known = outages.get(store)
    if (known !== undefined) return known
    const outage = Outage.make()
    outages.set(store, outage)
    return outage
  }
  const outageBegins = (store: WebhookDedupeStoreService, error: WebhookDedupeStoreError) =>
    Effect.map(Monotonic.millis, (now) => outageOf(store).failed(error.operation, now))

  // A store of the user's own whose operation interrupts itself (a pool of its own shut down) has failed: left an
  // interruption, it would end the delivery as the server's shutdown does, and hold its claim until that expires.
  const guarded = <A>(
    store: WebhookDedupeStoreService,
    operation: string,
    self: Effect.Effect<A, WebhookDedupeStoreError>
  ) => {
    const outage = outageOf(store)
    return Effect.matchCauseEffect(self, {
      onFailure: (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.fail(new WebhookDedupeStoreError({ operation, message: "the store interrupted its operation" }))
          : Effect.failCause(cause),
      onSuccess: (answer) =>
        outage.down()
          ? Effect.flatMap(Monotonic.millis, (now) =>
            outage.answered(operation, now)
              ? Effect.as(Effect.logInfo("effect-fin: webhook de-duplication store available again"), answer)
              : Effect.succeed(answer))
          : Effect.succeed(answer)
    })
  }

  // Claims the event, polling while another event of its reference is being handled, for up to `referenceWait`. Runs
  // uninterruptibly but for the pauses (`restore`): a claim taken is always seen, so that it can be released.
  const claimWaiting = (
    store: WebhookDedupeStoreService,
    eventId: string,
    referenceId: string,
    restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  ) =>
    Effect.gen(function*() {
      const limit = Monotonic.plus(yield* Monotonic.millis, Duration.millis(referenceWait))
      let pause = firstPollMillis
      while (true) {
        const sentAt = yield* Monotonic.millis
        const claim = yield* guarded(store, "claim", store.claim(eventId, referenceId, claimTtl))
        if (claim._tag !== "ReferenceBusy" || Monotonic.reached(sentAt, limit)) return { claim, sentAt }
        // The last pause ends at the limit, not up to a pause past it: the 409 comes at `referenceWait` (a test that
        // moves the TestClock by it gets its answer).
        const left = Monotonic.left(yield* Monotonic.millis, limit)
        yield* restore(Effect.sleep(Duration.min(Duration.millis(pause), left)))
        pause = Math.min(pause * 2, maxPollMillis)
      }
    })

  const storeUnavailable = (store: WebhookDedupeStoreService, error: WebhookDedupeStoreError, eventId: string) =>
    Effect.flatMap(outageBegins(store, error), (begins) => {
      const log = begins ? Effect.logError : Effect.logDebug
      return log("effect-fin: webhook de-duplication store unavailable; answering 500 so the service retries").pipe(
        Effect.annotateLogs({ event_id: eventId, operation: error.operation, reason: error.message }),
        Effect.zipRight(settleAs(500, "store_unavailable"))
      )
    })
  // The answer to a delivery whose store failed before its handler ran.
  const answerStoreFailure = (store: WebhookDedupeStoreService, eventId: string) => (error: WebhookDedupeStoreError) =>
    Effect.flatMap(storeUnavailable(store, error, eventId), (answer) => respond(answer.status, answer.outcome))
  const shuttingDown = respond(503, "shutting_down")

  // An event past maxAge that was handled before is a duplicate (200), so a delivery whose 200 was lost is not
  // answered 400 for ever, and one being handled right now is in progress (409), like every other event; the rest
  // are refused as too old, and the claim taken to tell is given back at once.
  const handledBefore = (event: WebhookEvent, tooOld: WebhookVerificationError) =>
    Effect.flatMap(storeFor, (store) =>
      Effect.uninterruptible(Effect.flatMap(
        guarded(store, "claim", store.claim(event.id, event.event_reference_id, claimTtl)),
        (claim) =>
          claim._tag === "Done"
            ? respond(200, "duplicate")
            : claim._tag === "InProgress"
            ? respond(409, "in_progress")
            : claim._tag === "Claimed"
            ? Effect.zipRight(
              guarded(store, "release", store.release(event.id, event.event_reference_id, claim.token)),
              reject(tooOld)
            )
            : reject(tooOld)
      )).pipe(Effect.catchTag("WebhookDedupeStoreError", answerStoreFailure(store, event.id))))

  // What each step of `handle` works on once the event is claimed: the claim's renewal, the user's handler, what is
  // recorded once the event is handled, the claim's release.
  const claimedFor = (
    store: WebhookDedupeStoreService,
    decoded: Decoded,
    token: string,
    sentAt: number
  ): Claim => {
    const { event } = decoded
    const referenceId = event.event_reference_id
    const renewal: ClaimRenewal.Renewal = {
      store,
      eventId: event.id,
      referenceId,
      token,
      claimTtl,
      // When the claim was last taken or renewed (keepClaim moves it on).
      held: { at: sentAt },
      guarded,
      outageBegins
    }
    const userHandler = decoded.ignored ? undefined : handlerFor(event)
    // An event no handler takes is acknowledged and leaves no order: a status the user does handle (the other
    // version of it, say) must never be made stale by one that was not applied.
    const isOrdered = ordered.has(event.type) && userHandler !== undefined
    const key = orderKey(event.type, referenceId)
    const handled: Handled = isOrdered
      ? { referenceId, order: { key, createdAt: decoded.createdAt, ttl: orderTtl } }
      : { referenceId }
    // A failed release leaves the claim to expire (claimTtl): the event is late, not lost. Suspended: a store that
    // acts when its method is called (not when the effect runs) must not release a claim that is still needed.
    const releaseClaim = guarded(
      store,
      "release",
      Effect.suspend(() => store.release(event.id, referenceId, token))
    ).pipe(
      Effect.catchAll(() => Effect.void)
    )
    return { store, decoded, token, sentAt, renewal, userHandler, isOrdered, key, handled, releaseClaim }
  }

  // Whether a newer status event of the same kind was handled for the same reference.
  const isStale = ({ decoded, isOrdered, key, store }: Claim) =>
    Effect.gen(function*() {
      const last = isOrdered ? yield* guarded(store, "lastHandled", store.lastHandled(key)) : Option.none()
      return Option.isSome(last) && last.value > decoded.createdAt
    })

  const acknowledgeStale = ({ decoded: { event }, handled, store, token }: Claim) =>
    Effect.gen(function*() {
      yield* guarded(store, "complete", store.complete(event.id, token, handled, dedupeTtl))
      yield* Effect.logInfo("effect-fin: stale webhook event acknowledged, not handled").pipe(
        Effect.annotateLogs({ event_id: event.id, event_type: event.type })
      )
      return yield* settleAs(200, "stale")
    })

  // The user's handler for the event, its claim renewed while it runs; none started when `late`.
  const runUserHandler = ({ decoded, renewal, userHandler }: Claim, stale: boolean, late: boolean) =>
    Effect.exit(
      late
        ? Effect.fail(ClaimRenewal.unrenewed)
        : userHandler === undefined
        ? Effect.void
        // Interruptible even where the server runs the app uninterruptibly, so the timeout can stop it. Suspended:
        // a handler that throws before returning its effect fails here too, and frees its claim. Scoped
        // here: what it acquires is released before its event is marked handled or released (and its resource
        // freed), its claim renewed meanwhile; outside the timeout, which bounds the handler's work: a release
        // (a commit) ending after it would otherwise fail, and be run again by every redelivery, work done.
        // Stopped once its claim could not be renewed, its finalizers still run with the claim renewed onward (see
        // `renewingWhile`), so a redelivery does not claim the event and run beside them.
        : ClaimRenewal.renewingWhile(
          renewal,
          Effect.scoped(Effect.timeoutFail(
            Effect.interruptible(Effect.suspend(() =>
              userHandler(decoded.event, { stale, body: decoded.text, secret: decoded.secret })
            )),
            { duration: handlerTimeout, onTimeout: timedOut }
          )),
          (cause) =>
            Effect.annotateLogs(logFailure(cause), { event_id: decoded.event.id, event_type: decoded.event.type })
        )
    )

  // The answer to a delivery whose handler failed, was stopped for its claim, or was not started (`late`).
  const answerFailure = (
    { decoded: { event }, releaseClaim, store }: Claim,
    cause: Cause.Cause<unknown>,
    late: boolean
  ) =>
    Effect.gen(function*() {
      // A store that died renewing the claim is a defect of the store's, answered as its other defects are
      // (500 from the platform, outcome defect; the claim released on the way out), not a failed handler.
      const died = Cause.failureOption(cause)
      if (Option.isSome(died) && died.value instanceof ClaimRenewal.RenewalDied) {
        return yield* Effect.die(died.value.defect)
      }
      yield* releaseClaim
      // Not "handler failed" when it never ran: the operator looks at the store, not at the handler's code.
      const lost = Option.filter(
        Cause.failureOption(cause),
        (e): e is ClaimRenewal.ClaimLost => e instanceof ClaimRenewal.ClaimLost
      )
      // Stopped for its claim, the store's doing: said as the store's, at Debug once its outage was said.
      const logged = late
        ? Effect.logWarning(`effect-fin: webhook handler not started: ${ClaimRenewal.unrenewed}`)
        : Option.isSome(lost)
        ? (outageOf(store).down() ? Effect.logDebug : Effect.logWarning)(
          `effect-fin: webhook handler stopped: ${lost.value.reason}`
        )
        : logFailure(cause)
      yield* logged.pipe(Effect.annotateLogs({ event_id: event.id, event_type: event.type }))
      // Counted as the store's too: an alert on failed handlers must not fire for a store's outage.
      return yield* settleAs(500, late || Option.isSome(lost) ? "store_unavailable" : "failed")
    })

  // The claim is still renewed while the event is marked handled: a store slow to answer must not let it lapse
  // (a redelivery would run the handler again beside a delivery answered 200). Said when it could not be kept,
  // unless marked meanwhile (a renewal refused as the event is done is no lost claim). Not for an event no
  // handler takes: there is nothing to run again, and its claim may have lapsed before (answered late).
  // A renewal that dies (the store's defect) keeps it no better: said, with the defect (the fork drops it).
  const markHandled = ({ decoded: { event }, handled, renewal, store, token, userHandler }: Claim) => {
    let marked = false
    const kept = ClaimRenewal.keepClaim(renewal).pipe(
      Effect.tapErrorCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logWarning(
          "effect-fin: webhook handled, but its claim could not be kept while the event was marked handled " +
            "(the de-duplication store failed or was too slow): a redelivery may run the handler again",
          ...(Cause.isDie(cause) ? [cause] : [])
        ).pipe(Effect.annotateLogs({ event_id: event.id, event_type: event.type }), Effect.unless(() => marked))
      )
    )
    const completing = guarded(store, "complete", store.complete(event.id, token, handled, dedupeTtl))
    return userHandler === undefined ? completing : Effect.flatMap(
      Effect.fork(Effect.interruptible(kept)),
      (keeping) => completing.pipe(Effect.tap(() => void (marked = true)), Effect.ensuring(Fiber.interrupt(keeping)))
    )
  }

  // The steps of a claimed delivery: stale or not, the user's handler, the event marked handled.
  const deliver = (claimed: Claim) =>
    Effect.gen(function*() {
      const stale = yield* isStale(claimed)
      if (stale && options.deliverStale !== true) return yield* acknowledgeStale(claimed)
      // A claim answered late, or a slow stale check, may have left the claim lapsed (another delivery may run the
      // event now): the handler does not start then, where keepClaim would stop it only once it had begun. Nor
      // when too little is left for a renewal: keepClaim would stop it at once (`tooLateToStart`, keepClaim's first
      // test).
      const now = yield* Monotonic.millis
      const late = claimed.userHandler !== undefined && ClaimRenewal.tooLateToStart(claimTtl, claimed.sentAt, now)
      const exit = yield* runUserHandler(claimed, stale, late)
      if (Exit.isFailure(exit)) return yield* answerFailure(claimed, exit.cause, late)
      yield* markHandled(claimed)
      return yield* settleAs(200, stale ? "stale" : "handled")
    })

  // Once claimed, the delivery runs to its end in a fiber of its own: a client that gives up (the service's own
  // timeout, shorter than the handler) does not stop the user's handler midway, to have it start again from
  // scratch on every redelivery. It finishes (within handlerTimeout) and is marked handled; meanwhile a
  // redelivery gets 409, then 200 duplicate. So it has its own span and its own scope (the request's closes
  // when the client goes), and logs a store failure itself, answered or not. A store that failed after the
  // claim must not hold the event and its resource until the claim expires.
  const finish = (claimed: Claim) => {
    const { decoded: { event }, releaseClaim, store } = claimed
    return deliver(claimed).pipe(
      Effect.catchTag("WebhookDedupeStoreError", (error) =>
        Effect.zipRight(releaseClaim, storeUnavailable(store, error, event.id))),
      // Nor one of the user's own that died (a driver's bug): the delivery is a 500, and a redelivery runs it.
      // The outcome on this span too, as the request's gets it: first, as a release that dies too (the same
      // broken driver) would skip it. onError, not tapDefect: that release's defect joins the first rather than
      // replacing it.
      Effect.onError((cause) =>
        Cause.isDie(cause)
          ? Effect.zipRight(Spans.annotateOwn({ "fin.webhook.outcome": "defect" }), releaseClaim)
          : Effect.void
      ),
      Effect.scoped,
      (self) =>
        spanFailingOn500(self, (answer) => answer.status, "effect-fin.webhook.handle", {
          attributes: { "fin.webhook.event_id": event.id, "fin.webhook.event_type": event.type }
        })
    )
  }

  // A delivery: its event claimed (waiting while another event of its reference is handled), answered at once when
  // it was handled before or is being handled, else run to its end (`finish`) and answered as it ended.
  const handle = (store: WebhookDedupeStoreService, decoded: Decoded, runner: Runner) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const { event } = decoded
        yield* Spans.annotateOwn({ "fin.webhook.event_id": event.id, "fin.webhook.event_type": event.type })
        const { claim, sentAt } = yield* claimWaiting(store, event.id, event.event_reference_id, restore)
        if (claim._tag === "Done") return yield* respond(200, "duplicate")
        if (claim._tag === "InProgress") return yield* respond(409, "in_progress")
        if (claim._tag === "ReferenceBusy") return yield* respond(409, "reference_busy")
        const claimed = claimedFor(store, decoded, claim.token, sentAt)
        const finishing = finish(claimed)
        // A delivery interrupted before that (while its claim was taken) ends here, and frees the claim.
        yield* Effect.onInterrupt(restore(Effect.void), () => claimed.releaseClaim)
        const answer = yield* Effect.flatMap(runner.fork(finishing), (fiber) => restore(Fiber.join(fiber)))
        // A new delivery handled: the rejections' warnings start again. Not on a replay of a captured one, which
        // verifies too (a duplicate, too old, one whose handler fails and is released each time, or one older than
        // the last handled, stale each time it is replayed once its id is forgotten).
        if (answer.outcome === "handled") verified()
        return yield* respond(answer.status, answer.outcome)
      })).pipe(Effect.catchTag("WebhookDedupeStoreError", answerStoreFailure(store, decoded.event.id)))

  return (runner) => Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.method !== "POST") {
      return HttpServerResponse.empty({ status: 405, headers: Headers.set(closing, "allow", "POST") })
    }
    const contentLength = request.headers["content-length"]
    if (contentLength !== undefined) {
      if (!/^\d+$/.test(contentLength)) return yield* reject(malformed("the Content-Length header is not a number"), true)
      if (Number(contentLength) > limit) return yield* reject(tooLarge(limit))
    }
    // Checked before the body is read, so unsigned requests cost no body read.
    const parsed = Signature.check(request.headers)
    if (Either.isLeft(parsed)) return yield* reject(parsed.left, true)
    const encoding = encodingOf(request.headers["content-encoding"])
    if (encoding !== undefined) return yield* reject(malformed(encodedMessage(encoding)), true)
    const transfer = transferCodingOf(request.headers["transfer-encoding"])
    if (transfer !== undefined) {
      return yield* reject(malformed(encodedMessage(transfer, "Transfer-Encoding")), true)
    }
    if (bodyReadBefore(request.source)) return yield* reject(malformed(readBeforeMessage))
    if (takenAsUpgrade(request.source)) return yield* reject(malformed(upgradeMessage), true)
    const read = contentLength === "0"
      ? Effect.succeed(new Uint8Array(0))
      : Effect.flatMap(
        Bytes.readAtMost(request.stream, limit),
        Option.match({ onNone: () => Effect.fail(tooLarge(limit)), onSome: Effect.succeed })
      )
    const body = yield* read.pipe(
      Effect.catchTag("RequestError", () => Effect.fail(malformed("the body could not be read"))),
      // The platform runs the app uninterruptibly: the read is made interruptible so the timeout can end it, and the
      // 408 go out at once, rather than when the client closes the connection.
      Effect.interruptible,
      Effect.timeoutFail({
        duration: bodyTimeout,
        onTimeout: () => fail("body_timeout", `the body did not arrive within ${Duration.format(bodyTimeout)}`)
      })
    )
    const decoded = yield* verifyDecoded(body, parsed.right, secrets, verifyOptions, unhandled)
    yield* Spans.annotateOwn({ "fin.webhook.secret": decoded.secret })
    return yield* checkAge(decoded, verifyOptions).pipe(
      Effect.matchEffect({
        onFailure: (error) =>
          error.reason === "too_old"
            ? runner.admit(handledBefore(decoded.event, error), shuttingDown)
            : reject(error),
        onSuccess: (decoded) =>
          runner.admit(Effect.flatMap(storeFor, (store) => handle(store, decoded, runner)), shuttingDown)
      })
    )
  }).pipe(
    Effect.catchTag("WebhookVerificationError", reject),
    // A defect (a store's driver bug) is answered 500 by the platform, past `respond`: counted here, once.
    Effect.tapDefect(() =>
      Effect.zipRight(Spans.annotateOwn({ "fin.webhook.outcome": "defect" }), Metric.increment(deliveriesOf("defect")))
    ),
    (self) => spanFailingOn500(self, (response) => response.status, "effect-fin.webhook")
  )
}
