/**
 * What this library keeps about a service it made, by service object rather than as a member of the service: one that
 * wraps it (the service spread, a member overridden) is another object, so nothing reaches the inner service behind
 * the wrapper's back, and a service of the user's own has nothing kept.
 *
 * @internal
 */
import { globalValue } from "effect/GlobalValue"
import { version } from "./version.js"

/** Values kept per service object under `name`. */
export interface ByService<V> {
  /** Records `value` for `service`, and returns `service`. */
  readonly register: <S extends object>(service: S, value: V) => S
  /** The value recorded for `service`, if this library made it. */
  readonly of: (service: object) => V | undefined
}

/**
 * Values per service object under `name`: one map per effect-fin version, shared by its ESM and CommonJS builds (a
 * provider made by one, a transport by the other, in an app that loads both).
 */
export const make = <V>(name: string): ByService<V> => {
  const byService = globalValue(`effect-fin/internal/${name}/${version}`, () => new WeakMap<object, V>())
  return {
    register: (service, value) => {
      byService.set(service, value)
      return service
    },
    of: (service) => byService.get(service)
  }
}
