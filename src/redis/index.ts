/**
 * Redis stores (subpath `effect-fin/redis`, optional peer `ioredis`): token pairs and webhook de-duplication shared
 * by every process of a service.
 *
 * @since 0.1.0
 */

/**
 * A `TokenStore` in Redis: one token request per expiry across processes.
 *
 * @since 0.1.0
 */
export * as RedisTokenStore from "./RedisTokenStore.js"

/**
 * A `WebhookDedupeStore` in Redis: each event handled once across processes.
 *
 * @since 0.1.0
 */
export * as RedisWebhookDedupeStore from "./RedisWebhookDedupeStore.js"
