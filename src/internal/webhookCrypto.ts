/**
 * The `WebhookCrypto` service and its WebCrypto implementation, re-exported by `Webhooks`.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as KeyCache from "./keyCache.js"
import type { Algorithm } from "./signatureHeaders.js"

// ---------------------------------------------------------------------------------------------------------------------
// Crypto
// ---------------------------------------------------------------------------------------------------------------------

/**
 * What `WebhookCrypto` implementations provide. `verify` must compare in constant time.
 *
 * @since 0.1.0
 * @category models
 */
export interface WebhookCryptoService {
  /** Whether `signature` (raw digest bytes) is the HMAC of `body` under `secret`. */
  readonly verify: (
    algorithm: Algorithm,
    secret: Redacted.Redacted<string>,
    body: Uint8Array,
    signature: Uint8Array
  ) => Effect.Effect<boolean>
  /** The HMAC of `body` under `secret` (raw digest bytes). */
  readonly sign: (algorithm: Algorithm, secret: Redacted.Redacted<string>, body: Uint8Array) => Effect.Effect<Uint8Array>
  /**
   * Optional synchronous `verify`, for implementations that have one (node:crypto): verification then costs no
   * Effect step and no allocation of its own. `signature` is only valid during the call (its buffer is reused).
   */
  readonly verifySync?:
    | ((
      algorithm: Algorithm,
      secret: Redacted.Redacted<string>,
      body: Uint8Array,
      signature: Uint8Array
    ) => boolean)
    | undefined
}

/**
 * The HMAC implementation used by `verify`, `sign` and `handler`. Optional: without it the portable WebCrypto
 * implementation is used; `effect-fin/node` provides a faster node:crypto one.
 *
 * @since 0.1.0
 * @category tags
 */
export class WebhookCrypto extends Context.Tag("effect-fin/WebhookCrypto")<WebhookCrypto, WebhookCryptoService>() {}

const hashNames: { readonly [A in Algorithm]: string } = { sha256: "SHA-256", sha384: "SHA-384", sha512: "SHA-512" }

export const utf8 = new TextEncoder()

// The implementations known to read `signature` only through its view (never its `buffer`, never transferring it):
// they alone get signature bytes cut from the shared block (see `signatureBytes`); any other gets an array of its own.
export const readsViewOnly = new WeakSet<WebhookCryptoService>()

/**
 * The portable implementation: WebCrypto `subtle.verify` (constant time), each secret's key imported once per
 * algorithm.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeWebCrypto = (): WebhookCryptoService => {
  const subtle = globalThis.crypto.subtle
  // While the import runs the entry is its promise (concurrent first calls share it), then the key itself, so a
  // verification is one `subtle.verify` call and nothing else.
  const keys = KeyCache.make<CryptoKey | Promise<CryptoKey>>((algorithm, secret) =>
    subtle.importKey("raw", utf8.encode(secret), { name: "HMAC", hash: hashNames[algorithm] }, false, [
      "sign",
      "verify"
    ]).then(
      (key) => {
        keys.set(algorithm, secret, key)
        return key
      },
      (error: unknown) => {
        // A failed import is not kept: the next call tries again.
        keys.forget(algorithm, secret)
        throw error
      }
    )
  )
  const withKey = <A>(
    algorithm: Algorithm,
    secret: Redacted.Redacted<string>,
    use: (key: CryptoKey) => Promise<A>
  ): Effect.Effect<A> =>
    Effect.promise(() => {
      const key = keys.get(algorithm, secret)
      // Not `instanceof Promise`: WebCrypto's promise is of the realm Node made it in, which a test runner that runs
      // tests in a realm of their own (Jest) does not share.
      return Predicate.isPromiseLike(key) ? key.then(use) : use(key)
    })
  const service: WebhookCryptoService = {
    verify: (algorithm, secret, body, signature) =>
      withKey(algorithm, secret, (key) => subtle.verify("HMAC", key, asBuffer(signature), asBuffer(body))),
    sign: (algorithm, secret, body) =>
      withKey(algorithm, secret, (key) => subtle.sign("HMAC", key, asBuffer(body)).then((mac) => new Uint8Array(mac)))
  }
  readsViewOnly.add(service)
  return service
}

// WebCrypto takes an ArrayBuffer-backed view only; bodies read from a request always are. One on a SharedArrayBuffer
// (a body handed over from a worker through shared memory; node:crypto takes it) is copied, not refused with a
// TypeError.
const asBuffer = (bytes: Uint8Array): Uint8Array<ArrayBuffer> =>
  (isShared(bytes.buffer) ? new Uint8Array(bytes) : bytes) as Uint8Array<ArrayBuffer>

// Told by its tag, not `instanceof`: from another realm, or where `SharedArrayBuffer` is not defined, all the same.
const isShared = (buffer: ArrayBufferLike): boolean =>
  Object.prototype.toString.call(buffer) === "[object SharedArrayBuffer]"

/**
 * Provides the WebCrypto implementation explicitly (it is also the default when no `WebhookCrypto` is provided).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWebCrypto: Layer.Layer<WebhookCrypto> = Layer.sync(WebhookCrypto, makeWebCrypto)

let defaultCrypto: WebhookCryptoService | undefined
const defaultWebCrypto = () => (defaultCrypto ??= makeWebCrypto())
export const cryptoIn = (context: Context.Context<never>): WebhookCryptoService =>
  Context.getOrElse(context, WebhookCrypto, defaultWebCrypto)
