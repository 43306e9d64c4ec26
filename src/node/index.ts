/**
 * Node-only extras of effect-fin (subpath `effect-fin/node`).
 *
 * @since 0.1.0
 */

/**
 * The node:crypto webhook verifier: `Effect.provide(NodeWebhookCrypto.layer)`.
 *
 * @since 0.1.0
 */
export * as NodeWebhookCrypto from "./NodeWebhookCrypto.js"

/**
 * A lean platform `HttpClient` on undici's `Dispatcher.request`: `Effect.provide(UndiciHttpClient.layer)`.
 *
 * @since 0.1.0
 */
export * as UndiciHttpClient from "./UndiciHttpClient.js"
