/**
 * A per-key cache of successes with a TTL and one lookup in flight per key. Effect's `Cache` does not fit here: it
 * runs the lookup in the first caller's fiber (interrupting that caller interrupts every waiter) and keeps a failure
 * for the instant it happened; here lookups run in the owner's scope and failures are never kept.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as Monotonic from "./monotonic.js"

// `started` numbers the lookup an entry comes from, in the order the lookups began.
type Entry<A, E> =
  | { readonly _tag: "Ready"; readonly value: A; readonly expiresAt: number; readonly started: number }
  | { readonly _tag: "Pending"; readonly deferred: Deferred.Deferred<A, E>; readonly started: number }

/** A per-key cache with one lookup in flight per key. */
export interface KeyedCache<K, A, E> {
  /**
   * The cached value while fresh, else the lookup, shared with every concurrent caller of that key. With
   * `shared: false` the lookup (when one is needed) runs in the caller's own fiber, alone, and a success is cached all
   * the same: for a caller whose lookup must follow its own settings.
   */
  readonly get: (key: K, shared?: boolean) => Effect.Effect<A, E>
  /** The cached value while fresh; never a lookup. */
  readonly getIfFresh: (key: K) => Effect.Effect<Option.Option<A>>
}

/** An empty cache whose lookups run in the scope of its owner. */
export const make = <K, A, E>(options: {
  readonly lookup: (key: K) => Effect.Effect<A, E>
  readonly timeToLive: Duration.Duration
  /** Whether a success is kept (default: every one); one that is not is handed to its waiters only, as a failure is. */
  readonly cacheable?: ((key: K, value: A) => boolean) | undefined
}): Effect.Effect<KeyedCache<K, A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const ttl = Duration.toMillis(options.timeToLive)
    const ref = yield* SynchronizedRef.make(new Map<K, Entry<A, E>>())
    let lookups = 0

    const fresh = (entry: Entry<A, E> | undefined, now: number): entry is Extract<Entry<A, E>, { _tag: "Ready" }> =>
      entry?._tag === "Ready" && !Monotonic.reached(now, entry.expiresAt)

    // A success becomes the entry unless the entry comes from a lookup begun later (newer data, or a shared lookup
    // whose own result will come): the newest lookup wins, whichever ends first. A lone lookup's success so replaces
    // a shared lookup begun before it, and later callers stop waiting for that older one. A failure removes only the
    // lookup's own entry.
    const record = (key: K, started: number, deferred: Deferred.Deferred<A, E> | undefined, exit: Exit.Exit<A, E>) =>
      Effect.flatMap(Monotonic.millis, (now) =>
        SynchronizedRef.update(ref, (entries) => {
          const entry = entries.get(key)
          const own = deferred !== undefined && entry?._tag === "Pending" && entry.deferred === deferred
          const newer = entry !== undefined && entry.started > started && (entry._tag === "Pending" || fresh(entry, now))
          const next = new Map(entries)
          if (Exit.isSuccess(exit) && ttl > 0 && (own || !newer) && (options.cacheable?.(key, exit.value) ?? true)) {
            next.set(key, { _tag: "Ready", value: exit.value, expiresAt: Monotonic.plus(now, options.timeToLive), started })
          } else if (own) {
            next.delete(key)
          } else {
            return entries
          }
          return next
        }))

    const getIfFresh = (key: K) =>
      Effect.flatMap(SynchronizedRef.get(ref), (entries) => {
        const entry = entries.get(key)
        return Effect.map(Monotonic.millis, (now) => fresh(entry, now) ? Option.some(entry.value) : Option.none())
      })

    const alone = (key: K) =>
      Effect.flatMap(getIfFresh(key), (cached) =>
        Option.isSome(cached)
          ? Effect.succeed(cached.value)
          : Effect.suspend(() => {
            const started = ++lookups
            return Effect.onExit(options.lookup(key), (exit) => record(key, started, undefined, exit))
          }))

    // Uninterruptible up to the entry's update (the step only reads the clock and forks; the lock is held no longer):
    // a caller interrupted between the fork and the update would leave the lookup unrecorded, and the next caller
    // would start a second one beside it. Only the wait for the lookup's result is interruptible.
    const locked = (key: K) =>
      Effect.flatten(Effect.uninterruptible(SynchronizedRef.modifyEffect(ref, (entries) =>
        Effect.gen(function*() {
          const entry = entries.get(key)
          const now = yield* Monotonic.millis
          if (fresh(entry, now)) return [Effect.succeed(entry.value), entries] as const
          if (entry?._tag === "Pending") return [Deferred.await(entry.deferred), entries] as const
          const deferred = yield* Deferred.make<A, E>()
          const started = ++lookups
          // The fiber ends with the lookup's exit as its value, passed on to the waiters: the runtime does not also
          // report a failure as a fiber that "terminated with an unhandled error".
          const fiber = yield* options.lookup(key).pipe(
            Effect.onExit((exit) => Effect.zipRight(record(key, started, deferred, exit), Deferred.done(deferred, exit))),
            Effect.exit,
            // Not the first caller's interruptibility: closing the owner's scope must be able to stop it.
            Effect.interruptible,
            Effect.forkIn(scope)
          )
          // Into a closed scope (the owner is shutting down) the lookup is interrupted before it runs: the waiters
          // get the interruption instead of waiting for ever. Otherwise the deferred is already done by then.
          fiber.addObserver((exit) =>
            Deferred.unsafeDone(deferred, Exit.isSuccess(exit) ? exit.value : Exit.failCause(exit.cause))
          )
          const next = new Map(entries)
          next.set(key, { _tag: "Pending", deferred, started })
          return [Deferred.await(deferred), next] as const
        })
      )))

    // A fresh entry, or a lookup in flight, needs no lock: the lock serialises every caller (of every key), so a
    // cached answer cost each a turn of it (about four times the rest of a lookup), and a thousand callers of a lookup
    // in flight would wait one after another. Anything else goes through it.
    const get = (key: K, shared = true) =>
      shared
        ? Effect.flatMap(SynchronizedRef.get(ref), (entries) => {
          const entry = entries.get(key)
          if (entry?._tag === "Pending") return Deferred.await(entry.deferred)
          return Effect.flatMap(
            Monotonic.millis,
            (now) => fresh(entry, now) ? Effect.succeed(entry.value) : locked(key)
          )
        })
        : alone(key)

    return { get, getIfFresh }
  })
