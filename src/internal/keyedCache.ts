/**
 * A per-key cache of successes with a TTL and one lookup in flight per key. Effect's `Cache` does not fit here: it
 * runs the lookup in the first caller's fiber (interrupting that caller interrupts every waiter) and keeps a failure
 * for the instant it happened; here lookups run in the owner's scope and failures are never kept.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"

type Entry<A, E> =
  | { readonly _tag: "Ready"; readonly value: A; readonly expiresAt: number }
  | { readonly _tag: "Pending"; readonly deferred: Deferred.Deferred<A, E> }

/** `get(key)`: the cached value while fresh, else the lookup (shared with every concurrent caller of that key). */
export const make = <K, A, E>(options: {
  readonly lookup: (key: K) => Effect.Effect<A, E>
  readonly timeToLive: Duration.Duration
}): Effect.Effect<(key: K) => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const ttl = Duration.toMillis(options.timeToLive)
    const ref = yield* SynchronizedRef.make(new Map<K, Entry<A, E>>())

    const settle = (key: K, deferred: Deferred.Deferred<A, E>, exit: Exit.Exit<A, E>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        SynchronizedRef.update(ref, (entries) => {
          const next = new Map(entries)
          if (Exit.isSuccess(exit) && ttl > 0) next.set(key, { _tag: "Ready", value: exit.value, expiresAt: now + ttl })
          else next.delete(key)
          return next
        })).pipe(Effect.zipRight(Deferred.done(deferred, exit)))

    return (key: K) =>
      Effect.flatten(SynchronizedRef.modifyEffect(ref, (entries) =>
        Effect.gen(function*() {
          const entry = entries.get(key)
          const now = yield* Clock.currentTimeMillis
          if (entry?._tag === "Ready" && now < entry.expiresAt) return [Effect.succeed(entry.value), entries] as const
          if (entry?._tag === "Pending") return [Deferred.await(entry.deferred), entries] as const
          const deferred = yield* Deferred.make<A, E>()
          yield* options.lookup(key).pipe(
            Effect.onExit((exit) => settle(key, deferred, exit)),
            Effect.forkIn(scope)
          )
          const next = new Map(entries)
          next.set(key, { _tag: "Pending", deferred })
          return [Deferred.await(deferred), next] as const
        })))
  })
