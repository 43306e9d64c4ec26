import { FetchHttpClient } from "@effect/platform"
import { Layer, Redacted } from "effect"
import { FinClient } from "effect-fin"
import { RedisTokenStore, RedisWebhookDedupeStore } from "effect-fin/redis"

const redis = { url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", timeout: "1 second" } as const
// Optional: AES-GCM at rest (16, 24 or 32 bytes, base64, not hex); every instance needs the same key.
const key = process.env.TOKEN_STORE_KEY

// One token request per expiry across all instances.
export const client = FinClient.layerFromEnv().pipe(
  Layer.provide(RedisTokenStore.layer({ ...redis, ...(key ? { encryptionKey: Redacted.make(key) } : {}) })),
  Layer.provide(Layer.provide(FetchHttpClient.layer, Layer.succeed(FetchHttpClient.RequestInit, { redirect: "manual" })))
)

// Every Webhooks.handler without a `store` option uses it: each event handled once across all instances.
export const webhookStore = RedisWebhookDedupeStore.layer(redis)
