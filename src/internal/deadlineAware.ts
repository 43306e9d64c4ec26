/**
 * The deadline-aware `get` of the token providers this library makes, kept by service object rather than as a member
 * of the service: a provider that wraps one (the service spread, `get` overridden) is another object, so the
 * transport asks its `get`, never the inner provider's behind its back.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import { globalValue } from "effect/GlobalValue"
import type * as Redacted from "effect/Redacted"
import type { FinError } from "../FinError.js"
import { version } from "./version.js"

/**
 * `get` for a caller that must be done by `deadline` (milliseconds, on `Monotonic.millis`): a token at hand is
 * handed out at once; a caller that would wait for one past the deadline ends then, with `onDeadline()`.
 */
export type GetBefore = (
  deadline: number,
  onDeadline: () => FinError
) => Effect.Effect<Redacted.Redacted<string>, FinError>

// One map per effect-fin version, shared by its ESM and CommonJS builds (a provider made by one, a transport by the
// other, in an app that loads both).
const byService = globalValue(
  `effect-fin/internal/deadlineAware/${version}`,
  () => new WeakMap<object, GetBefore>()
)

/** Records `getBefore` as the deadline-aware `get` of `service`. */
export const register = <S extends object>(service: S, getBefore: GetBefore): S => {
  byService.set(service, getBefore)
  return service
}

/** The deadline-aware `get` of `service`, if this library made it. */
export const of = (service: object): GetBefore | undefined => byService.get(service)
