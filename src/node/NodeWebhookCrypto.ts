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
 * @since 0.1.0
 * @category constructors
 */
export const make = (): WebhookCryptoService => {
  // A KeyObject prepared once per secret (and algorithm): createHmac then skips converting the secret on every call.
  const keys = KeyCache.make((_algorithm, secret) => createSecretKey(Buffer.from(secret, "utf8")))
  const verifySync: NonNullable<WebhookCryptoService["verifySync"]> = (algorithm, secret, body, signature) => {
    const mac = createHmac(algorithm, keys.get(algorithm, secret)).update(body).digest()
    return mac.length === signature.length && timingSafeEqual(mac, signature)
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
