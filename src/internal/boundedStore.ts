/**
 * The token stores of effect-fin (memory, Redis) bound their own operations and never die, so `TokenProvider` runs
 * them as they are; any other store is run guarded (see `TokenProvider`). The mark is a global symbol, so it holds
 * across the package's entries, and not enumerable, so a store spread into a new object (`{ ...store, get }`, as a
 * wrapper of the user's) is not marked.
 *
 * @internal
 */

const mark = Symbol.for("effect-fin/TokenStore/bounded")

/** `store`, marked as bounding its own operations. */
export const bounded = <S extends object>(store: S): S => Object.defineProperty(store, mark, { value: true })

/** Whether `store` was marked by `bounded`. */
export const isBounded = (store: object): boolean => (store as { readonly [mark]?: unknown })[mark] === true
