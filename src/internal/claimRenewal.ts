/**
 * The renewal of a webhook claim: the claim on an event id (and its resource) kept alive while the user's handler
 * runs, and the handler stopped before the claim could lapse, so that a redelivery never runs beside it.
 *
 * Every time is on monotonic time (`Monotonic.millis`), as its timers, on the `Clock` the effect runs with (the
 * `TestClock` in tests): a wall clock set back would keep the handler running past its claim, one set forward stop it
 * early.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Monotonic from "./monotonic.js"
import type { WebhookDedupeStoreError, WebhookDedupeStoreService } from "./webhookDedupe.js"

/**
 * A claim taken in a store, and what its renewals need of the handler that took it.
 *
 * @internal
 */
export interface Renewal {
  readonly store: WebhookDedupeStoreService
  readonly eventId: string
  readonly referenceId: string
  /** The claim's token, as the store gave it. */
  readonly token: string
  /** How long the claim lives unless renewed; each renewal asks for as long again. */
  readonly claimTtl: Duration.Duration
  /** When the claim was last taken or renewed (`Monotonic.millis`): `keepClaim` moves it on. */
  readonly held: { at: number }
  /**
   * A store operation as the handler runs it: one that interrupts itself is failed, and an answer after an outage
   * says its end.
   */
  readonly guarded: <A>(
    store: WebhookDedupeStoreService,
    operation: string,
    self: Effect.Effect<A, WebhookDedupeStoreError>
  ) => Effect.Effect<A, WebhookDedupeStoreError>
  /** Notes a failed store operation; true when it begins an outage (said at Error, the rest at Debug). */
  readonly outageBegins: (store: WebhookDedupeStoreService, error: WebhookDedupeStoreError) => Effect.Effect<boolean>
}

/**
 * Why `keepClaim` stopped a running handler: the store's failure, not the handler's.
 *
 * @internal
 */
export class ClaimLost {
  constructor(readonly reason: string) {}
}

/**
 * A renewal that died (a driver's bug in a store of the user's): the store's defect, not the handler's failure.
 *
 * @internal
 */
export class RenewalDied {
  constructor(readonly defect: unknown) {}
}

/**
 * Why a handler was stopped, or not started, for a claim that could not be renewed in time.
 *
 * @internal
 */
export const unrenewed =
  "the claim on the event could not be renewed in time: the de-duplication store failed or was too slow"

// The handler stops a tenth of the claim's time before the claim could lapse, whatever its renewals do (a store that
// fails, or one that does not answer): from then on a redelivery may claim the event, and must not run beside it.
const marginOf = (claimMillis: number) => claimMillis / 10

/**
 * Whether too little of a claim taken or renewed at `heldAt` is left at `now` for a renewal: `keepClaim` would stop
 * a handler started now at once, so it is not started.
 *
 * @internal
 */
export const tooLateToStart = (claimTtl: Duration.Duration, heldAt: number, now: number): boolean => {
  const claimMillis = Duration.toMillis(claimTtl)
  const left = heldAt + claimMillis - marginOf(claimMillis) - now
  return left / 2 < claimMillis / 30
}

// One renewal, its answer or failure; none (Option) when it took longer than `millis`. Guarded: a renewal of the
// user's store that interrupts itself is a failed one, tried again, not a lost claim.
const renewWithin = (renewal: Renewal, millis: number) => {
  const { claimTtl, eventId, guarded, referenceId, store, token } = renewal
  return guarded(store, "renew", store.renew(eventId, referenceId, token, claimTtl)).pipe(
    Effect.either,
    Effect.timeoutTo({ duration: millis, onSuccess: Option.some, onTimeout: Option.none })
  )
}

/**
 * Renews a claim every third of its TTL for as long as it runs; fails once the claim is gone, or once it has expired
 * (counted from when the last successful renewal was sent, `held.at`) while the store could not be reached. It fails a
 * tenth of the claim's time before the claim could lapse, or a little sooner (too little left for a renewal). A
 * failed renewal is logged (at Error when it begins an outage) and tried again.
 *
 * @internal
 */
export const keepClaim = (renewal: Renewal): Effect.Effect<never, ClaimLost> =>
  Effect.gen(function*() {
    const { eventId, held, outageBegins, store } = renewal
    const claimMillis = Duration.toMillis(renewal.claimTtl)
    const claimMargin = marginOf(claimMillis)
    let stopAt = held.at + claimMillis - claimMargin
    while (true) {
      // Every third of the claim's time, and sooner as its end nears (half of what is left), so that a renewal that
      // failed or was slow leaves time for another; with no time left for one, the handler stops.
      const wait = Math.min(claimMillis / 3, (stopAt - (yield* Monotonic.millis)) / 2)
      if (wait < claimMillis / 30) return yield* Effect.fail(new ClaimLost(unrenewed))
      yield* Effect.sleep(wait)
      const sentAt = yield* Monotonic.millis
      if (sentAt >= stopAt) return yield* Effect.fail(new ClaimLost(unrenewed))
      const renewed = yield* renewWithin(renewal, stopAt - sentAt)
      if (Option.isNone(renewed)) return yield* Effect.fail(new ClaimLost(unrenewed))
      if (Either.isRight(renewed.value)) {
        if (!renewed.value.right) {
          return yield* Effect.fail(new ClaimLost("the claim on the event expired while its handler ran"))
        }
        held.at = sentAt
        stopAt = sentAt + claimMillis - claimMargin
      } else {
        // Every handler running renews: one line per handler and renewal, unless the outage was said already.
        const log = (yield* outageBegins(store, renewed.value.left)) ? Effect.logError : Effect.logDebug
        yield* log("effect-fin: could not renew a webhook claim; trying again").pipe(
          Effect.annotateLogs({ event_id: eventId, operation: "renew", reason: renewed.value.left.message })
        )
      }
    }
  })

// After keepClaim gave up on a claim it could not renew in time, while the interrupted handler still finishes: best
// effort, a renewal every thirtieth of the claim's time until one succeeds, then every third; stops once the
// claim is found gone (another delivery may hold it by then), or once it has lapsed unrenewed.
const renewOnward = (renewal: Renewal) =>
  Effect.gen(function*() {
    const claimMillis = Duration.toMillis(renewal.claimTtl)
    // keepClaim gives up a tenth of the claim's time before it lapses, or a little sooner (too little left for a
    // renewal): past this, a renewal would find it gone.
    let lapsesAt = (yield* Monotonic.millis) + marginOf(claimMillis) + claimMillis / 15
    // First after a pause: a handler that stops at once (no finalizer to speak of) asks the store nothing more.
    let pause = claimMillis / 30
    while (true) {
      yield* Effect.sleep(pause)
      const sentAt = yield* Monotonic.millis
      if (sentAt >= lapsesAt) return
      const within = Math.min(claimMillis / 3, lapsesAt - sentAt)
      const renewed = yield* renewWithin(renewal, within)
      const ok = Option.isSome(renewed) && Either.isRight(renewed.value)
      if (ok && !renewed.value.right) return
      if (ok) lapsesAt = sentAt + claimMillis
      pause = ok ? claimMillis / 3 : claimMillis / 30
    }
  })

/**
 * Runs `work` (a user's handler) while its claim is renewed (`keepClaim`), the two raced: `work`'s own exit when it
 * ends first; `ClaimLost` when the claim is found gone or could not be renewed in time, `work` interrupted then, a
 * tenth of the claim's time before the claim could lapse, so that a redelivery never claims the event and runs beside
 * it; `RenewalDied` when a renewal dies (the store's defect, not `work`'s failure).
 *
 * Once the claim could not be renewed in time, `work`'s finalizers (a commit in a release) and uninterruptible regions
 * still run: the claim is renewed onward meanwhile, as far as the store answers (not when it was found gone), and that
 * renewal is interrupted once the race ends. A failure of `work` once stopped, which the race drops, is given to
 * `onStoppedFailure`. Run it uninterruptibly (as the handler's delivery fiber is): interrupted from outside while
 * stopped work still releases, it ends the onward renewal at once, and the claim may lapse before the release ends.
 *
 * @internal
 */
export const renewingWhile = <A, E, R>(
  renewal: Renewal,
  work: Effect.Effect<A, E, R>,
  onStoppedFailure: (cause: Cause.Cause<E>) => Effect.Effect<void>
): Effect.Effect<A, E | ClaimLost | RenewalDied, R> =>
  Effect.suspend(() => {
    let onward: Fiber.RuntimeFiber<void> | undefined
    // Whether keepClaim stopped the handler (it ended first, failing or dying).
    let stopped = false
    const keep = keepClaim(renewal).pipe(
      Effect.tapErrorCause((cause) => {
        stopped = !Cause.isInterruptedOnly(cause)
        // The onward renewal forked only when the claim could not be renewed in time: the common case is one race.
        return Option.exists(Cause.failureOption(cause), (error) => error.reason === unrenewed)
          ? Effect.uninterruptible(Effect.map(
            // Interruptible: a fiber forked here would inherit the uninterruptible region.
            Effect.forkDaemon(Effect.interruptible(renewOnward(renewal))),
            (fiber) => {
              onward = fiber
            }
          ))
          : Effect.void
      }),
      Effect.catchAllDefect((defect) => Effect.fail(new RenewalDied(defect)))
    )
    return Effect.raceFirst(
      work.pipe(
        // Stopped (its claim lost), its releases may still fail (a commit that dies): said, where the race drops the
        // loser's exit.
        Effect.onExit((exit) =>
          stopped && Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
            ? onStoppedFailure(exit.cause)
            : Effect.void
        )
      ),
      Effect.interruptible(keep)
    ).pipe(
      // A renewal that died in renewOnward is the store's defect too, as one in keepClaim is, not a claim lost to an
      // outage.
      Effect.exit,
      Effect.flatMap((result) =>
        onward === undefined
          ? result
          : Effect.flatMap(Fiber.interrupt(onward), (ended) =>
            Exit.isFailure(ended) && Cause.isDie(ended.cause)
              ? Effect.fail(new RenewalDied(Cause.squash(ended.cause)))
              : result)
      ),
      Effect.ensuring(Effect.suspend(() => onward === undefined ? Effect.void : Fiber.interrupt(onward)))
    )
  })
