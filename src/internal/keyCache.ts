/**
 * Prepared HMAC keys per algorithm and secret, for the `WebhookCrypto` implementations: a key is imported once per
 * secret, not once per delivery.
 *
 * @internal
 */
import * as Redacted from "effect/Redacted"

/** The HMAC algorithms of the webhooks (mirrors `Webhooks.Algorithm`, kept here so this module imports nothing). */
export type Algorithm = "sha256" | "sha384" | "sha512"

// Users usually hold one or two secrets, but a caller that builds a new secret per call must not grow the cache
// without bound.
const maxKeysPerAlgorithm = 64

/** A cache of `prepare(algorithm, secret)` per algorithm and secret value. */
export interface KeyCache<K> {
  readonly get: (algorithm: Algorithm, secret: Redacted.Redacted<string>) => K
  /** Replaces the entry of a secret, e.g. a pending import by the key it resolved to. */
  readonly set: (algorithm: Algorithm, secret: string, key: K) => void
  readonly forget: (algorithm: Algorithm, secret: string) => void
}

/**
 * A cache that makes each entry with `prepare` on its first `get`, at most 64 per algorithm (the least recently used
 * go first: a secret in use is not dropped for the one-off secrets of other handlers of the process).
 */
export const make = <K>(prepare: (algorithm: Algorithm, secret: string) => K): KeyCache<K> => {
  const caches: { readonly [A in Algorithm]: Map<string, K> } = {
    sha256: new Map(),
    sha384: new Map(),
    sha512: new Map()
  }
  // The secret each cache holds last: one used again and again (a handler's one secret) is not moved on every use.
  const newest: Record<Algorithm, string | undefined> = { sha256: undefined, sha384: undefined, sha512: undefined }
  return {
    get: (algorithm, secret) => {
      const cache = caches[algorithm]
      const value = Redacted.value(secret)
      let key = cache.get(value)
      if (key !== undefined) {
        // The newest again: a `Map` iterates in insertion order, so the first key is the least recently used.
        if (newest[algorithm] !== value) {
          cache.delete(value)
          cache.set(value, key)
        }
      } else {
        key = prepare(algorithm, value)
        if (cache.size >= maxKeysPerAlgorithm) {
          for (const oldest of cache.keys()) {
            cache.delete(oldest)
            break
          }
        }
        cache.set(value, key)
      }
      newest[algorithm] = value
      return key
    },
    set: (algorithm, secret, key) => {
      const cache = caches[algorithm]
      if (cache.has(secret)) cache.set(secret, key)
    },
    forget: (algorithm, secret) => {
      caches[algorithm].delete(secret)
      if (newest[algorithm] === secret) newest[algorithm] = undefined
    }
  }
}
