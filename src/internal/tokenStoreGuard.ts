/**
 * The guard and the outage watch the token provider puts around a `TokenStore`: a store of the user's own bounded
 * in time and its failures made `TokenStoreError`s; each store's outages said once.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TokenStore from "../TokenStore.js"
import * as BoundedStore from "./boundedStore.js"
import * as Durations from "./duration.js"
import * as Monotonic from "./monotonic.js"
import * as Outage from "./outage.js"
import * as Wiped from "./wiped.js"

// A store of the user's own (effect-fin's bound their operations themselves) that hangs or dies is worked around as
// one that fails: each operation gets as long as a token request, even where the provider runs it uninterruptibly
// (the lock, the release in a finalizer), and a defect is its failure (without its message, which may quote what the
// store held). An operation runs in a fiber of its own, to its end (for at most `bound`), whoever stops waiting for
// it: a release that an interrupted call made in its finalizer still releases.
export const guardedStores = (timeout: Duration.Duration) => {
  const guarded = new WeakMap<TokenStore.Service, TokenStore.Service>()
  const tooLate = (operation: string, after: Duration.Duration) =>
    new TokenStore.TokenStoreError({ operation, message: `no answer within ${Duration.format(after)}` })
  // Interruptible whatever region forks it (a fiber forked in an uninterruptible one would be too, and its own
  // timeout could not stop it).
  const detached = <A>(operation: string, op: Effect.Effect<A, TokenStore.TokenStoreError>, bound: Duration.Duration) =>
    Effect.forkDaemon(
      op.pipe(
        Effect.catchAllDefect(() =>
          Effect.fail(new TokenStore.TokenStoreError({ operation, message: "the store failed unexpectedly (a defect)" }))
        ),
        // An operation that interrupts itself (a queue or pool of the store's that was shut down) is a failure too:
        // joined, its interruption would end the fetch, and every call, as the client's shutdown does.
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.fail(new TokenStore.TokenStoreError({ operation, message: "the store interrupted its operation" }))
            : Effect.failCause(cause)
        ),
        Effect.timeoutFail({ duration: bound, onTimeout: () => tooLate(operation, bound) }),
        Effect.interruptible
      )
    )
  // What a store of the user's answers to `get` is read (a wiped `Redacted`, a plain string, no `Option`): one this
  // provider cannot read is the store's failure, worked around as its other failures are, not a defect of every call.
  const readable = (u: unknown): boolean => Redacted.isRedacted(u) && typeof Wiped.valueOf(u) === "string"
  const time = (u: unknown): boolean => u === undefined || typeof u === "number"
  const checkedGet = (op: Effect.Effect<Option.Option<TokenStore.Tokens>, TokenStore.TokenStoreError>) =>
    Effect.filterOrFail(
      op,
      (stored) =>
        Option.isOption(stored) && Option.match(stored, {
          onNone: () => true,
          onSome: (t) =>
            typeof t === "object" && t !== null && readable(t.accessToken) && typeof t.refreshAt === "number" &&
            time(t.accessUsableUntil) && (t.refreshToken === undefined || readable(t.refreshToken)) &&
            time(t.refreshUsableUntil)
        }),
      () => new TokenStore.TokenStoreError({ operation: "get", message: "the store answered with no pair it can read" })
    )
  const awaited = <A>(attempt: Fiber.Fiber<A, TokenStore.TokenStoreError>) =>
    Effect.timeoutOption(Effect.interruptible(Fiber.join(attempt)), timeout)
  const guardOp = <A>(operation: string, op: Effect.Effect<A, TokenStore.TokenStoreError>) =>
    Effect.flatMap(detached(operation, op, timeout), (attempt) =>
      Effect.flatMap(awaited(attempt), (answer) =>
        Option.isSome(answer) ? Effect.succeed(answer.value) : Effect.fail(tooLate(operation, timeout))))
  // A lock that comes after its caller stopped waiting is released when it comes (within lockTtl, when it would expire
  // anyway), so that the other processes are not kept waiting for an owner that went on without it.
  const guardLock = (store: TokenStore.Service, key: string) =>
    Effect.flatMap(detached("lock", store.lock(key), store.lockTtl), (attempt) => {
      const releaseLate = Effect.forkDaemon(Effect.ignore(Effect.flatMap(Fiber.join(attempt), (lock) =>
        lock._tag === "Acquired"
          ? Effect.flatMap(detached("unlock", store.unlock(key, lock.owner), timeout), Fiber.join)
          : Effect.void)))
      return awaited(attempt).pipe(
        Effect.onInterrupt(() => releaseLate),
        Effect.flatMap((answer) =>
          Option.isSome(answer)
            ? Effect.succeed(answer.value)
            : Effect.zipRight(releaseLate, Effect.fail(tooLate("lock", timeout)))
        )
      )
    })
  return (store: TokenStore.Service): TokenStore.Service => {
    if (BoundedStore.isBounded(store)) return store
    let safe = guarded.get(store)
    if (safe === undefined) {
      // Checked as the built-in stores check theirs: at 0 the lock's renewal (or a waiter's polling) would loop with no
      // pause, and past 24 days its timer would never fire.
      for (const name of ["lockTtl", "waitInterval"] as const) {
        Durations.checkOrThrow(store[name], false, `effect-fin: the TokenStore's ${name}`, true)
      }
      safe = {
        ...store,
        get: (key) => guardOp("get", checkedGet(store.get(key))),
        set: (key, tokens, owner) => guardOp("set", store.set(key, tokens, owner)),
        clear: (key, token) => guardOp("clear", store.clear(key, token)),
        lock: (key) => guardLock(store, key),
        renew: (key, owner) => guardOp("renew", store.renew(key, owner)),
        unlock: (key, owner, failure) => guardOp("unlock", store.unlock(key, owner, failure)),
        failure: (key) => guardOp("failure", store.failure(key))
      }
      guarded.set(store, safe)
    }
    return safe
  }
}

// A store that fails is worked around, never reported as a FinError. Said once per outage as a warning, its end once
// at Info, the failures between at Debug (see `Outage`): while the token endpoint fails too (or every call meets a
// 401, instances revoking each other's tokens), each call reads the store and fails on it, a line each.
export const storeOutage = () => {
  // One outage per store: the provider built without one uses the store in each caller's context (or memory), and a
  // store that answers must not say the end of another's outage, a warning and an Info line on every call between.
  // `unavailable` is handed only the failure: the store it came from is noted when it fails (by the error itself, not
  // a span's Proxy of it).
  const outageOf = new WeakMap<TokenStore.TokenStoreError, Outage.Outage>()
  const unknown = Outage.make()
  const unavailable = (error: TokenStore.TokenStoreError) =>
    Effect.flatMap(Monotonic.millis, (now) => {
      const outage = outageOf.get(Cause.originalError(error)) ?? unknown
      return (outage.failed(error.operation, now) ? Effect.logWarning : Effect.logDebug)(
        "effect-fin: the token store is unavailable; going on without sharing tokens"
      ).pipe(Effect.annotateLogs({ operation: error.operation, reason: error.message }))
    })
  const watching = (outage: Outage.Outage) =>
    <A>(operation: string, self: Effect.Effect<A, TokenStore.TokenStoreError>) =>
      Effect.tapError(self, (error) => Effect.sync(() => outageOf.set(Cause.originalError(error), outage))).pipe(
        Effect.tap(() =>
          outage.down()
            ? Effect.flatMap(Monotonic.millis, (now) =>
              outage.answered(operation, now)
                ? Effect.logInfo("effect-fin: the token store is available again; tokens are shared again")
                : Effect.void)
            : Effect.void
        )
      )
  const tracked = new WeakMap<TokenStore.Service, TokenStore.Service>()
  // The store with its answers watched; made once per store, as the provider asks it for each token it needs.
  const track = (store: TokenStore.Service): TokenStore.Service => {
    let watched = tracked.get(store)
    if (watched === undefined) {
      const answered = watching(Outage.make())
      watched = {
        ...store,
        get: (key) => answered("get", store.get(key)),
        set: (key, tokens, owner) => answered("set", store.set(key, tokens, owner)),
        clear: (key, token) => answered("clear", store.clear(key, token)),
        lock: (key) => answered("lock", store.lock(key)),
        renew: (key, owner) => answered("renew", store.renew(key, owner)),
        unlock: (key, owner, failure) => answered("unlock", store.unlock(key, owner, failure)),
        failure: (key) => answered("failure", store.failure(key))
      }
      tracked.set(store, watched)
    }
    return watched
  }
  return { unavailable, track }
}
