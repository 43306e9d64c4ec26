/**
 * Fin webhooks: signature verification through a pluggable `WebhookCrypto`, event schemas, and an `HttpApp` handler
 * that reads a bounded body, verifies it, de-duplicates deliveries and reports out-of-order events as stale.
 *
 * The service signs only the raw body (`x-fin-signature` = hex HMAC, algorithm in `x-fin-signature-algorithm`,
 * default `sha256`); it sends no timestamp and promises no ordering, so the maximum age, the environment check and the
 * ordering are added here. Nothing in this module imports a Node-only module: it runs on Node, Bun, Deno and edge
 * runtimes. `effect-fin/node` adds a faster node:crypto verifier.
 *
 * Each part is a module of its own under `internal/` (crypto, events, verification, de-duplication, handler), each
 * export documented where it is declared; this module is their public face and re-exports them all.
 *
 * @since 0.1.0
 */
import * as Signature from "./internal/signatureHeaders.js"

// ---------------------------------------------------------------------------------------------------------------------
// Signature headers and algorithms
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Header carrying the hex HMAC of the raw body.
 *
 * @since 0.1.0
 * @category constants
 */
export const signatureHeader = Signature.signatureHeader

/**
 * Header naming the HMAC algorithm; `sha256` when absent.
 *
 * @since 0.1.0
 * @category constants
 */
export const algorithmHeader = Signature.algorithmHeader

/**
 * The HMAC algorithms accepted; anything else is refused as `unsupported_algorithm`.
 *
 * @since 0.1.0
 * @category constants
 */
export const algorithms = Signature.algorithms

// Re-exported by its name (documented where it is declared), so a consumer's declarations can print it through this
// module's path: `sign` and `WebhookCrypto` use it.
export type { Algorithm } from "./internal/signatureHeaders.js"

/**
 * Digest length in bytes of each algorithm.
 *
 * @since 0.1.0
 * @category constants
 */
export const digestLength = Signature.digestLength


// ---------------------------------------------------------------------------------------------------------------------
// Crypto
// ---------------------------------------------------------------------------------------------------------------------

export {
  type WebhookCryptoService,
  WebhookCrypto,
  makeWebCrypto,
  layerWebCrypto
} from "./internal/webhookCrypto.js"

// ---------------------------------------------------------------------------------------------------------------------
// Secrets, signatures and verification
// ---------------------------------------------------------------------------------------------------------------------

export {
  type Secret,
  type Secrets,
  type HeadersInput,
  verifySignature,
  type SignedHeaders,
  sign,
  type VerifyOptions,
  verify,
  type VerifiedDelivery,
  verifyWithSecret
} from "./internal/webhookVerify.js"

// ---------------------------------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------------------------------

export {
  Timestamp,
  JsonValue,
  documentedEventTypes,
  type DocumentedEventType,
  orderedEventTypes,
  Envelope,
  Unlisted,
  BeneficiaryType,
  BeneficiaryStatus,
  BeneficiaryStatusData,
  BeneficiaryStatusEvent,
  CustomerCreatedEvent,
  CustomerStatusEvent,
  CustomerRfiEvent,
  TransactionStatusEvent,
  VirtualAccountCreatedEvent,
  VirtualAccountCreatedV2Event,
  VirtualAccountStatusEvent,
  VirtualAccountStatusV2Event,
  BeneficiaryCreatedEvent,
  BeneficiaryLiquidationDepositEvent,
  BatchTransactionItemStatusEvent,
  TransitPaymentStatusEvent,
  UnknownEvent,
  WebhookEvent,
  type EventType,
  type WebhookEventOf,
  WebhookEventFromEnvelope
} from "./internal/webhookEvents.js"

// ---------------------------------------------------------------------------------------------------------------------
// De-duplication store
// ---------------------------------------------------------------------------------------------------------------------

export {
  type Claim,
  type Handled,
  orderKey,
  type WebhookDedupeStoreService,
  WebhookDedupeStoreError,
  WebhookDedupeStore,
  makeMemoryDedupeStore,
  layerMemoryDedupeStore
} from "./internal/webhookDedupe.js"

// ---------------------------------------------------------------------------------------------------------------------
// Handler
// ---------------------------------------------------------------------------------------------------------------------

export {
  type Delivery,
  type Handlers,
  type OnlyEventTypes,
  type NotAnEventType,
  type HandlersContext,
  type HandlerOptions,
  defaultMaxBodySize,
  handler,
  makeHandler
} from "./internal/webhookHandler.js"
