/**
 * Errors that inspect well in tests, wherever they failed.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import { NodeInspectSymbol } from "effect/Inspectable"

type Inspect = (this: object, ...args: Array<unknown>) => unknown

/**
 * Makes the errors of `classes` inspect as the error itself when Effect has wrapped one in a Proxy (to keep the span
 * it failed in: every error a call fails with). Effect's errors answer `NodeInspectSymbol` with `this`, the Proxy,
 * which chai (vitest's `expect`) inspects again, and again: a failed `toMatchObject` on an error a call returned would
 * end in "Maximum call stack size exceeded" instead of a diff. Node's `util.inspect` shows the same as before.
 */
export const showUnwrapped = (...classes: ReadonlyArray<{ readonly prototype: object }>): void => {
  for (const { prototype } of classes) {
    const inherited = (prototype as { readonly [NodeInspectSymbol]?: Inspect })[NodeInspectSymbol]
    if (inherited === undefined) continue
    Object.defineProperty(prototype, NodeInspectSymbol, {
      value(this: object, ...args: Array<unknown>) {
        const original = Cause.originalError(this)
        return original === this ? inherited.apply(this, args) : original
      },
      configurable: true,
      writable: true
    })
  }
}
