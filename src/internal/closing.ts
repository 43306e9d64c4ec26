/**
 * The moment a client begins to close, which its calls in flight listen for: an attempt to a stalled service or a wait
 * for a `Retry-After` would otherwise hold them, and the process, for up to a `timeout` or a minute after the client
 * is gone (`ManagedRuntime.dispose()` does not interrupt the fibers it ran), only to end as an interruption anyway.
 * Kept by token provider, as `DeadlineAware` keeps its `get`: the provider is the part of a client that has a scope.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as ByService from "./byService.js"

/** A client's closing, as its calls see it. */
export interface Closing {
  /** Calls `f` once the client begins to close (at once if it has); the function returned stops that. */
  readonly onClose: (f: () => void) => () => void
}

/** A closing, the function that closes it (once), and whether it has. */
export const make = (): Closing & { readonly close: () => void; readonly isClosed: () => boolean } => {
  let closed = false
  const listeners = new Set<() => void>()
  return {
    onClose: (f) => {
      if (closed) {
        f()
        return () => {}
      }
      listeners.add(f)
      return () => listeners.delete(f)
    },
    close: () => {
      if (closed) return
      closed = true
      for (const f of listeners) f()
      listeners.clear()
    },
    isClosed: () => closed
  }
}

const registry = ByService.make<Closing>("closing")

/** Records `closing` as that of the client `service` belongs to. */
export const register: <S extends object>(service: S, closing: Closing) => S = registry.register

/** The closing of the client `service` belongs to, if this library made it. */
export const of: (service: object) => Closing | undefined = registry.of

/**
 * `self`, ended as an interruption once `closing` closes. It races `self` in a fiber of its own: for the waits and
 * attempts after a failure, not for a call's first attempt (`TimeLimits.timeoutFail` listens without one).
 */
export const interruptOnClose = <A, E, R>(self: Effect.Effect<A, E, R>, closing: Closing): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    self,
    Effect.async<never>((resume) => {
      const stop = closing.onClose(() => resume(Effect.interrupt))
      return Effect.sync(stop)
    })
  )
