/**
 * A `WebhookCrypto` on node:crypto: HMAC with a `KeyObject` prepared once per secret, compared with
 * `timingSafeEqual`. Synchronous, so faster than WebCrypto's promise round trip on Node.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createHmac, createSecretKey, timingSafeEqual } from "node:crypto"
import * as KeyCache from "../internal/keyCache.js"
import type { WebhookCrypto, WebhookCryptoService } from "../Webhooks.js"

// The core's `WebhookCrypto` tag, by its key: importing the core's value here would bundle a second copy of the whole
// Webhooks module into this entry (tags with one key are one service).
const WebhookCryptoTag = Context.GenericTag<WebhookCrypto, WebhookCryptoService>("effect-fin/WebhookCrypto")

/**
 * The node:crypto `WebhookCryptoService`: HMAC and `timingSafeEqual`, synchronous.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): WebhookCryptoService => {
  // A KeyObject prepared once per secret (and algorithm): createHmac then skips converting the secret on every call.
  const keys = KeyCache.make((_algorithm, secret) => createSecretKey(Buffer.from(secret, "utf8")))
  // The digest as a "binary" (latin1: one char per byte, lossless) string copied into a reused buffer per digest
  // length: on Node 20 `digest()` creating a Buffer from C++ costs about a quarter of a 1 KiB verification, the string
  // and the copy almost nothing.
  const scratch: Readonly<Record<number, Buffer | undefined>> = {
    32: Buffer.alloc(32),
    48: Buffer.alloc(48),
    64: Buffer.alloc(64)
  }
  const verifySync: NonNullable<WebhookCryptoService["verifySync"]> = (algorithm, secret, body, signature) => {
    const mac = createHmac(algorithm, keys.get(algorithm, secret)).update(body).digest("binary")
    const buffer = scratch[mac.length]
    if (buffer === undefined || mac.length !== signature.length) return false
    buffer.write(mac, "latin1")
    return timingSafeEqual(buffer, signature)
  }
  return {
    verifySync,
    verify: (algorithm, secret, body, signature) => Effect.sync(() => verifySync(algorithm, secret, body, signature)),
    sign: (algorithm, secret, body) =>
      Effect.sync(() => new Uint8Array(createHmac(algorithm, keys.get(algorithm, secret)).update(body).digest()))
  }
}

/**
 * Provides the node:crypto `WebhookCrypto`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<WebhookCrypto> = Layer.sync(WebhookCryptoTag, make)
