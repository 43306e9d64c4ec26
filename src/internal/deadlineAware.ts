/**
 * The deadline-aware `get` of the token providers this library makes, kept by service object rather than as a member
 * of the service: a provider that wraps one (the service spread, `get` overridden) is another object, so the
 * transport asks its `get`, never the inner provider's behind its back.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type { FinError } from "../FinError.js"
import * as ByService from "./byService.js"

/**
 * `get` for a caller that must be done by `deadline` (milliseconds, on `Monotonic.millis`): a token at hand is
 * handed out at once; a caller that would wait for one past the deadline ends then, with `onDeadline()`.
 */
export type GetBefore = (
  deadline: number,
  onDeadline: () => FinError
) => Effect.Effect<Redacted.Redacted<string>, FinError>

const registry = ByService.make<GetBefore>("deadlineAware")

/** Records `getBefore` as the deadline-aware `get` of `service`. */
export const register: <S extends object>(service: S, getBefore: GetBefore) => S = registry.register

/** The deadline-aware `get` of `service`, if this library made it. */
export const of: (service: object) => GetBefore | undefined = registry.of
