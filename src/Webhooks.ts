/**
 * Fin webhooks: signature verification through a pluggable `WebhookCrypto`, event schemas, and an `HttpApp` handler
 * that reads a bounded body, verifies it, de-duplicates deliveries and reports out-of-order events as stale.
 *
 * The service signs only the raw body (`x-fin-signature` = hex HMAC, algorithm in `x-fin-signature-algorithm`,
 * default `sha256`); it sends no timestamp and promises no ordering, so the maximum age, the environment check and the
 * ordering are added here. Nothing in this module imports a Node-only module: it runs on Node, Bun, Deno and edge
 * runtimes. `effect-fin/node` adds a faster node:crypto verifier.
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as Headers from "@effect/platform/Headers"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import type * as FinConfig from "./FinConfig.js"
import { type WebhookFailureReason, WebhookVerificationError } from "./FinError.js"
import * as Bytes from "./internal/bytes.js"
import * as Durations from "./internal/duration.js"
import * as Inspect from "./internal/inspect.js"
import * as Issues from "./internal/issues.js"
import * as KeyCache from "./internal/keyCache.js"
import { memo } from "./internal/memo.js"
import * as Monotonic from "./internal/monotonic.js"
import * as Outage from "./internal/outage.js"
import * as OptionNames from "./internal/optionNames.js"
import * as Padded from "./internal/padded.js"
import * as Redact from "./internal/redact.js"
import * as Signature from "./internal/signatureHeaders.js"
import * as Spans from "./internal/spans.js"
import * as Timestamps from "./internal/timestamp.js"
import * as Wiped from "./internal/wiped.js"

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

/**
 * A signature algorithm `verify` accepts (`x-fin-signature-algorithm`) and `sign` uses; one of `algorithms`.
 *
 * @since 0.1.0
 * @category models
 */
export type Algorithm = Signature.Algorithm

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

const utf8 = new TextEncoder()

// The implementations known to read `signature` only through its view (never its `buffer`, never transferring it):
// they alone get signature bytes cut from the shared block (see `signatureBytes`); any other gets an array of its own.
const readsViewOnly = new WeakSet<WebhookCryptoService>()

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
const cryptoIn = (context: Context.Context<never>): WebhookCryptoService =>
  Context.getOrElse(context, WebhookCrypto, defaultWebCrypto)

// ---------------------------------------------------------------------------------------------------------------------
// Secrets and headers
// ---------------------------------------------------------------------------------------------------------------------

/**
 * A webhook secret. Prefer `Redacted` so it cannot be logged by accident; plain strings are accepted.
 *
 * @since 0.1.0
 * @category models
 */
export type Secret = Redacted.Redacted<string> | string

/**
 * One secret, or several during a rotation (a signature under any of them is accepted).
 *
 * @since 0.1.0
 * @category models
 */
export type Secrets = Secret | ReadonlyArray<Secret>

const paddedMessage =
  "holds a webhook secret that starts or ends with whitespace, a control character or an invisible formatting one " +
    "(a trailing newline, say)"

const checkEnvironment = (where: Where, environment: unknown): void => {
  if (environment !== undefined && environment !== "sandbox" && environment !== "production") {
    throw invalidOption(where, `environment must be "sandbox" or "production"`)
  }
}

/**
 * The secrets to try, whether one of them has whitespace around it (see `Padded.isPadded`), and whether one is not
 * text at all (untyped configuration: an unset variable, a number). `matched`: for each key, the success telling its
 * position in the list given (empty secrets are dropped from `keys`), made once.
 */
interface SecretList {
  readonly keys: ReadonlyArray<Redacted.Redacted<string>>
  readonly matched: ReadonlyArray<Effect.Effect<number>>
  readonly padded: boolean
  readonly notText: boolean
}

// The list of one `Redacted` secret, made once (it cannot change): the usual case, and on every verification.
const listsOfOne = new WeakMap<Redacted.Redacted<string>, SecretList>()

// The text of a secret; undefined for anything else, a `Redacted` wiped (`Redacted.unsafeWipe`) included.
const textOf = (secret: unknown): string | undefined => {
  if (typeof secret === "string") return secret
  if (!Redacted.isRedacted(secret)) return undefined
  const value = Wiped.valueOf(secret)
  return typeof value === "string" ? value : undefined
}

const notASecret: SecretList = { keys: [], matched: [], padded: false, notText: true }

// Empty secrets are dropped: an HMAC under an empty key proves nothing.
const secretList = (secrets: Secrets): SecretList => {
  if (Redacted.isRedacted(secrets)) {
    const one = secrets as Redacted.Redacted<string>
    let list = listsOfOne.get(one)
    if (list === undefined) listsOfOne.set(one, list = listOf([one]))
    return list
  }
  if (typeof secrets === "string") return listOf([secrets])
  return Array.isArray(secrets) ? listOf(secrets) : notASecret
}

const listOf = (secrets: ReadonlyArray<unknown>): SecretList => {
  const keys: Array<Redacted.Redacted<string>> = []
  const matched: Array<Effect.Effect<number>> = []
  let padded = false
  let notText = false
  for (const [position, secret] of secrets.entries()) {
    const value = textOf(secret)
    if (value === undefined) {
      notText = true
      continue
    }
    if (value === "") continue
    // A secret with surrounding whitespace (read from a file with its newline, say) never matches the service's:
    // refused, rather than every delivery answered as badly signed.
    padded ||= Padded.isPadded(value)
    keys.push(typeof secret === "string" ? Redacted.make(secret) : secret as Redacted.Redacted<string>)
    matched.push(Effect.succeed(position))
  }
  return { keys, matched, padded, notText }
}

const notTextMessage = "must be text or Redacted text (not wiped), or a list of them"

/**
 * Request headers in any of the usual forms: a plain record (header names in any case, Node's
 * `IncomingHttpHeaders` included), `Headers` from `@effect/platform`, or web `Headers`. A signature header given
 * twice (a list of two values, values joined with a comma, or a record with the name under two spellings) is refused
 * as repeated.
 *
 * @since 0.1.0
 * @category models
 */
export type HeadersInput =
  | Headers.Headers
  | globalThis.Headers
  | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const fail = Signature.fail

// Hex digit values by char code, upper and lower case alike.
const nibbles = (() => {
  const table = new Int8Array(128)
  for (let i = 0; i < 16; i++) {
    table[i.toString(16).charCodeAt(0)] = i
    table[i.toString(16).toUpperCase().charCodeAt(0)] = i
  }
  return table
})()

// Decodes checked hex into `out` (of half its length).
const decodeHex = (hex: string, out: Uint8Array): Uint8Array => {
  for (let i = 0; i < out.length; i++) {
    out[i] = (nibbles[hex.charCodeAt(2 * i)]! << 4) | nibbles[hex.charCodeAt(2 * i + 1)]!
  }
  return out
}

// Where a synchronous `verifySync` gets the signature bytes: it returns before any other code runs, so one buffer per
// length serves every call and the hot path allocates no typed array (a fresh one per call measurably slows a 1 KiB
// verification on Node).
const scratch: { readonly [A in Algorithm]: Uint8Array } = {
  sha256: new Uint8Array(32),
  sha384: new Uint8Array(48),
  sha512: new Uint8Array(64)
}

// Where the built-in asynchronous `verify` (`readsViewOnly`) gets the signature bytes: its own, cut from a shared block
// (WebCrypto copies them as it is called). A typed array this small is made on V8's heap, and moved out of it when the
// crypto first reads it: on Node, a fresh one per call costs more than the Effect around the call.
const signatureBlock = { buffer: new ArrayBuffer(8192), used: 0 }
const signatureBytes = (length: number): Uint8Array => {
  if (signatureBlock.used + length > signatureBlock.buffer.byteLength) {
    signatureBlock.buffer = new ArrayBuffer(8192)
    signatureBlock.used = 0
  }
  const bytes = new Uint8Array(signatureBlock.buffer, signatureBlock.used, length)
  signatureBlock.used += length
  return bytes
}

// The body as bytes. Past the type (an untyped `req.body`, say), an `ArrayBuffer` or another view (`await
// request.arrayBuffer()`) is taken as its bytes; anything else is undefined: see `notBytes`.
const toBytes = (body: Uint8Array | string): Uint8Array | undefined => {
  if (typeof body === "string") return utf8.encode(body)
  if (body instanceof Uint8Array) return body
  const value: unknown = body
  // Told by its tag, not `instanceof`: one from another realm (Node's own, under Jest) is bytes all the same.
  const tag = Object.prototype.toString.call(value)
  if (tag === "[object ArrayBuffer]" || tag === "[object SharedArrayBuffer]") {
    return new Uint8Array(value as ArrayBufferLike)
  }
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  return undefined
}

// A body that is no bytes nor text, one a framework already parsed as JSON most often: the program's mistake, a defect
// saying so, rather than a TypeError from inside the crypto (which one depends on the crypto provided).
const notBytes = (value: unknown) =>
  Effect.die(
    new Cause.IllegalArgumentException(
      `effect-fin: a webhook body must be the raw bytes (a Uint8Array) or the exact text received, not ${
        value === null ? "null" : typeof value === "object" ? "an object (was it parsed as JSON first?)" : typeof value
      }: see "Do not parse the body before the handler" in the README`
    )
  )

// Tries each secret in turn (rotation); the first match wins, and its position in the list given is the result.
const checkSignature = (
  crypto: WebhookCryptoService,
  parsed: Signature.SignatureHeaders,
  { keys: secrets, matched, notText, padded }: SecretList,
  body: Uint8Array
): Effect.Effect<number, WebhookVerificationError> => {
  // A secret wiped since its list was made (a handler's, at shutdown say) is no secret: refused, not a defect in the
  // crypto. (A loop, not `every` with a closure: this runs on every verification.)
  let wiped = notText
  for (let i = 0; !wiped && i < secrets.length; i++) wiped = textOf(secrets[i]) === undefined
  if (wiped) {
    return Effect.fail(fail("no_secret", "the configuration holds a webhook secret that is not text (or was wiped)"))
  }
  if (secrets.length === 0) return Effect.fail(fail("no_secret", "no webhook secret is configured"))
  if (padded) return Effect.fail(fail("no_secret", `the configuration ${paddedMessage}`))
  const { algorithm, hex } = parsed
  const verifySync = crypto.verifySync
  if (verifySync !== undefined) {
    const signature = decodeHex(hex, scratch[algorithm])
    for (let i = 0; i < secrets.length; i++) {
      // `true` only: a crypto of the user's, untyped, answering a promise (always truthy) would accept any signature.
      if (verifySync(algorithm, secrets[i]!, body, signature) === true) return matched[i]!
    }
    return Effect.fail(noMatch())
  }
  const length = digestLength[algorithm]
  const signature = decodeHex(hex, readsViewOnly.has(crypto) ? signatureBytes(length) : new Uint8Array(length))
  const tryFrom = (i: number): Effect.Effect<number, WebhookVerificationError> =>
    Effect.flatMap(
      crypto.verify(algorithm, secrets[i]!, body, signature),
      // `true` only, as for `verifySync` above: an untyped crypto answering a promise (truthy) matches nothing.
      (ok) =>
        ok === true
          ? matched[i]!
          : i + 1 < secrets.length
          ? tryFrom(i + 1)
          : Effect.fail(noMatch())
    )
  return tryFrom(0)
}

const noMatch = () => fail("bad_signature", "the signature matches none of the webhook secrets")

/**
 * Checks only the signature of a delivery: `x-fin-signature` must be the hex HMAC of the raw body bytes under one of
 * `secrets`, with the algorithm of `x-fin-signature-algorithm` (default `sha256`). Pass the body exactly as received;
 * a string is taken as its UTF-8 bytes; another value (a body parsed as JSON first) dies with
 * `IllegalArgumentException` once the headers are found well formed. Succeeds with the position, in `secrets`, of the
 * secret that matched (0 for a single secret): during a rotation, once no delivery matches the old secret's, it can go.
 * To verify and decode too, `verifyWithSecret` gives the event with that position, in one HMAC.
 *
 * @since 0.1.0
 * @category verification
 */
export const verifySignature = (
  rawBody: Uint8Array | string,
  headers: HeadersInput,
  secrets: Secrets
): Effect.Effect<number, WebhookVerificationError> =>
  // The hot path: one Effect step (which also reads the context) before the crypto.
  Effect.withFiberRuntime((fiber) => {
    const parsed = Signature.check(headers)
    if (Either.isLeft(parsed)) return parsed.left
    const bytes = toBytes(rawBody)
    if (bytes === undefined) return notBytes(rawBody)
    return checkSignature(cryptoIn(fiber.currentContext), parsed.right, secretList(secrets), bytes)
  })

/**
 * Headers the service sends with a delivery (a type literal, so it is usable wherever a header record is).
 *
 * @since 0.1.0
 * @category models
 */
export type SignedHeaders = {
  readonly "content-type": "application/json"
  /** The hex HMAC of the body's bytes, in lower case. */
  readonly "x-fin-signature": string
  readonly "x-fin-signature-algorithm": Algorithm
}

// A test's own mistake in `sign`: an `IllegalArgumentException`, as every other option check's defect.
const misused = (message: string) => Effect.die(new Cause.IllegalArgumentException(message))

/**
 * Signs a body as the service would and returns the headers it would send: for users' tests. One secret, as `verify`
 * takes it: a list, an empty, padded or wiped secret, one that is not text, or an algorithm outside the allow-list
 * (past the type, from a cast) is a defect (`IllegalArgumentException`) naming the mistake: a test's own bug.
 *
 * @since 0.1.0
 * @category signing
 */
export const sign = (
  rawBody: Uint8Array | string,
  secret: Secret,
  algorithm: Algorithm = "sha256"
): Effect.Effect<SignedHeaders> =>
  Effect.withFiberRuntime((fiber) => {
    // One secret (a list is for verifying during a rotation), text, not empty, as `verify` takes it.
    const list = typeof secret === "string" || Redacted.isRedacted(secret) ? secretList(secret) : notASecret
    const redacted = list.keys[0]
    if (list.notText || redacted === undefined || textOf(redacted) === undefined) {
      return misused("effect-fin: a webhook secret must be one text, and not empty")
    }
    if (list.padded) {
      return misused(`effect-fin: a webhook secret ${Padded.rule}`)
    }
    if (!algorithms.includes(algorithm)) {
      return misused(`effect-fin: the signature algorithm is not one of ${algorithms.join(", ")}`)
    }
    const bytes = toBytes(rawBody)
    if (bytes === undefined) return notBytes(rawBody)
    return Effect.map(cryptoIn(fiber.currentContext).sign(algorithm, redacted, bytes), (mac) => ({
      "content-type": "application/json" as const,
      "x-fin-signature": Encoding.encodeHex(mac),
      "x-fin-signature-algorithm": algorithm
    }))
  })

// ---------------------------------------------------------------------------------------------------------------------
// Timestamps
// ---------------------------------------------------------------------------------------------------------------------

// Epoch microseconds of an ISO 8601 date-time with a zone (`Z` or an offset), or undefined. Microseconds because the
// service sends them (`2026-04-04T17:38:26.843132Z`) and ordering should not lose them; a `DateTime` keeps milliseconds.
const parseTimestamp = (s: string): number | undefined => {
  const parsed = Timestamps.parse(s)
  return parsed?.zoned === true ? parsed.micros : undefined
}

const TimestampString = Schema.String.pipe(
  Schema.filter((s) => parseTimestamp(s) !== undefined, {
    identifier: "effect-fin.Timestamp",
    description: "an ISO 8601 date-time with a zone",
    // Random text is next to never a date-time: filtering it, an `Arbitrary` would search for ever.
    arbitrary: () => (fc) =>
      fc.tuple(Timestamps.arbitraryMillis(fc), fc.integer({ min: 0, max: 999 }))
        .map(([millis, micros]) => new Date(millis).toISOString().replace("Z", `${String(micros).padStart(3, "0")}Z`))
  })
)

/**
 * An ISO 8601 date-time with a zone (`Z` or an offset), up to nanosecond digits, as a `DateTime.Utc` (milliseconds).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Timestamp: Schema.Schema<DateTime.Utc, string> = Schema.transformOrFail(
  TimestampString,
  Timestamps.Utc,
  {
    strict: true,
    decode: (s) => ParseResult.succeed(DateTime.unsafeMake(Timestamps.parse(s)!.millis)),
    encode: (dateTime, _, ast) => Timestamps.encode(dateTime, ast)
  }
).annotations({ identifier: "effect-fin.Timestamp" })

// ---------------------------------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Any JSON value (present, of unknown shape): the `data` of events this library does not model.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonValue: Schema.Schema<unknown> = Schema.declare(
  (u: unknown): u is unknown => u !== undefined,
  {
    identifier: "effect-fin.JsonValue",
    description: "a JSON value",
    // A declaration has no Arbitrary, JSON Schema, Pretty or equivalence of its own: without these, each throws on
    // every event schema, and two decodings of one body would be unequal (compared by reference).
    arbitrary: () => (fc) => fc.jsonValue(),
    // Any of JSON's six types (an empty schema would not replace the declaration's missing one).
    jsonSchema: { anyOf: ["object", "array", "string", "number", "boolean", "null"].map((type) => ({ type })) },
    pretty: () => prettyJson,
    equivalence: () => jsonEquals
  }
)

// The value as JSON; a value built in code may hold what JSON cannot (a bigint, a cycle): that is shown as text. One
// nested deeper than `JSON.stringify` goes (some thousands of levels, a body of a few kilobytes) is named only.
const prettyJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    try {
      return String(u)
    } catch {
      return Object.prototype.toString.call(u)
    }
  }
}

// By content, as JSON compares: arrays item by item, objects key by key (in any order), anything else with `===`.
// Without recursion, and a pair of objects met again taken as equal: a decoded body some thousands of levels deep
// would overflow the stack, and a value built in code may hold a cycle.
const jsonEquals = (a: unknown, b: unknown): boolean => {
  const seen = new Map<object, Set<object>>()
  const pending: Array<readonly [unknown, unknown]> = [[a, b]]
  for (let pair = pending.pop(); pair !== undefined; pair = pending.pop()) {
    const [x, y] = pair
    if (x === y) continue
    if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false
    const met = seen.get(x) ?? new Set<object>()
    if (met.has(y)) continue
    seen.set(x, met.add(y))
    if (Array.isArray(x) || Array.isArray(y)) {
      if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false
      x.forEach((item: unknown, i) => pending.push([item, y[i]]))
      continue
    }
    const left = x as Record<string, unknown>
    const right = y as Record<string, unknown>
    const keys = Object.keys(left)
    if (keys.length !== Object.keys(right).length) return false
    for (const key of keys) {
      if (!Object.hasOwn(right, key)) return false
      pending.push([left[key], right[key]])
    }
  }
  return true
}

// At most 256 characters (the service's ids are UUIDs, 36): the handler keeps ids in its de-duplication store, which is
// bounded in entries, not in bytes (10,000 ids of a megabyte each would be 10 GB), and puts them in every log line.
// Whole characters only, none that acts on a terminal: an id is a store key (Redis writes it as UTF-8, where two
// lone surrogate halves both become U+FFFD, one key) and an annotation of log lines (written as it is).
const Id = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(256),
  Schema.filter((id) => !/[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|\p{Cs}/u.test(id), {
    message: () => "an id of whole, printable characters"
  })
).annotations({
  identifier: "effect-fin.Id",
  description: "a non-empty id of at most 256 printable characters"
})

/**
 * The documented event types, in the order of the service's `WebhookEventEnvelope.type` enum.
 *
 * @since 0.1.0
 * @category constants
 */
export const documentedEventTypes = Object.freeze([
  "customer.created",
  "customer.status",
  "customer.rfi",
  "transaction.status",
  "virtual_account.created",
  "virtual_account.created.v2",
  "virtual_account.status",
  "virtual_account.status.v2",
  "beneficiary.created",
  "beneficiary.status",
  "beneficiary.liquidation.deposit",
  "batch.transaction.item.status",
  "transit.payment.status"
] as const)

/**
 * An event type the service documents; one of `documentedEventTypes`.
 *
 * @since 0.1.0
 * @category models
 */
export type DocumentedEventType = typeof documentedEventTypes[number]

const documented: ReadonlySet<string> = new Set(documentedEventTypes)

/**
 * The event types the handler keeps in order per `event_reference_id`: each carries the whole current status of its
 * resource, so an older one arriving late is stale. Every other event (a deposit, a creation, a request for
 * information, an undocumented type) carries news of its own: it is never stale, and does not make others stale. Not
 * `batch.transaction.item.status` either: it is fired once per item (at `PENDING`), so there is no older status to
 * undo, and the docs do not say whether its `event_reference_id` is the item or the whole batch (if the batch, one
 * item's event would make the others' stale).
 *
 * @since 0.1.0
 * @category constants
 */
export const orderedEventTypes: ReadonlyArray<DocumentedEventType> = Object.freeze(documentedEventTypes.filter((type) =>
  /\.status(\.v\d+)?$/.test(type) && type !== "batch.transaction.item.status"
))

const ordered: ReadonlySet<string> = new Set(orderedEventTypes)

/**
 * The envelope exactly as sent: `{ event: { id, event_reference_id, type, created_at, sandbox_mode? }, data }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Envelope = Schema.Struct({
  event: Schema.Struct({
    id: Id,
    event_reference_id: Id,
    type: Id,
    created_at: TimestampString,
    // The crypto-orchestration guide's envelope has no `sandbox_mode`.
    sandbox_mode: Schema.optional(Schema.Boolean)
  }),
  data: JsonValue
}).annotations({ identifier: "effect-fin.WebhookEnvelope" })

/**
 * The envelope exactly as sent (see the `Envelope` schema).
 *
 * @since 0.1.0
 * @category models
 */
export type Envelope = typeof Envelope.Type

// Every decoded event is flat: `type` at the top, so `Match` and `switch` on `event.type` narrow.
const eventFields = {
  /** Unique per event; redeliveries of one event carry the same id. */
  id: Id,
  /** The resource the event is about (`beneficiary_id` for `beneficiary.status`, `payment_id` for transit). */
  event_reference_id: Id,
  /** When the service created the event, in UTC (to the millisecond; sent with microseconds). */
  created_at: Timestamp,
  /** Absent in the crypto-orchestration envelope. */
  sandbox_mode: Schema.optionalWith(Schema.Boolean, { as: "Option" })
}

const event = <const T extends string, D extends Schema.Schema.AnyNoContext>(type: T, data: D) =>
  Schema.Struct({
    /** The event type, as sent: the discriminant (`switch` and `Match` on it narrow the event). */
    type: Schema.Literal(type),
    ...eventFields,
    /** The payload: for `beneficiary.status`, `BeneficiaryStatusData`; for the other types, the JSON as sent. */
    data
  }).annotations({ identifier: `effect-fin.${type}` })

/**
 * A value the documentation does not list (yet), kept as received in `value`: a signed event with a new status or
 * type is passed on, not refused with a 400 and lost. An object rather than a plain string, so that a misspelt
 * comparison (`status === "ACTIV"`) does not compile: a branded string would compare with any text.
 *
 * @since 0.1.0
 * @category models
 */
export class Unlisted extends Schema.TaggedClass<Unlisted>("effect-fin.Unlisted")("Unlisted", {
  /** The value exactly as received. */
  value: Schema.String
}) {
  /** The value as received (in a template literal, a log line). */
  override toString(): string {
    return this.value
  }

  /** The value as received: an event written out as JSON is the service's. */
  toJSON(): string {
    return this.value
  }
}

// The listed values as themselves, anything else as `Unlisted` (the listed ones match first). An `Unlisted` holding a
// listed value (built by hand or drawn by an Arbitrary) is refused: it would encode as that value and decode back as
// the listed one, not as itself, and a `Match.when` on the value would miss it.
const listedOr = <const L extends ReadonlyArray<string>>(...listed: L) =>
  Schema.Union(
    Schema.Literal(...listed),
    Schema.transform(
      Schema.String,
      Schema.typeSchema(Unlisted).pipe(
        Schema.filter((unlisted) => !listed.includes(unlisted.value), { message: () => "a value that is not listed" })
      ),
      { strict: true, decode: (value) => new Unlisted({ value }), encode: (unlisted) => unlisted.value }
    )
  )

/**
 * A beneficiary type: `INDIVIDUAL`, `BUSINESS`, or a value the documentation does not list yet, as `Unlisted`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryType = listedOr("INDIVIDUAL", "BUSINESS")

/**
 * `INDIVIDUAL`, `BUSINESS`, or an `Unlisted` value.
 *
 * @since 0.1.0
 * @category models
 */
export type BeneficiaryType = typeof BeneficiaryType.Type

/**
 * A beneficiary status: one of the documented four, or a value the documentation does not list yet, as `Unlisted`.
 * `INITIATED` is one: the beneficiary details endpoint lists it, the webhook's own schema does not.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryStatus = listedOr("PROCESSING", "ACTIVE", "INACTIVE", "REJECTED")

/**
 * One of the documented four statuses, or an `Unlisted` value.
 *
 * @since 0.1.0
 * @category models
 */
export type BeneficiaryStatus = typeof BeneficiaryStatus.Type

/**
 * `data` of `beneficiary.status`. `status` is `None` in the older payload, which had no such field, and when it is
 * `null` (undocumented, but a signed status change is not worth losing over it).
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryStatusData = Schema.Struct({
  /** The beneficiary whose status changed (the event's `event_reference_id` too). */
  beneficiary_id: Id,
  /** The customer the beneficiary belongs to. */
  customer_id: Id,
  /** `INDIVIDUAL` or `BUSINESS` (another value as `Unlisted`). */
  type: BeneficiaryType,
  /** Whether the beneficiary is activated (`PATCH /v1/beneficiaries` switches it on and off). */
  active: Schema.Boolean,
  /** The new status; `None` in the older payload, which had none, or when it is `null`. */
  status: Schema.optionalWith(BeneficiaryStatus, { as: "Option", nullable: true })
})

/**
 * `data` of a decoded `beneficiary.status` event (see the `BeneficiaryStatusData` schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryStatusData extends Schema.Schema.Type<typeof BeneficiaryStatusData> {}

/**
 * The `beneficiary.status` event, its `data` decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryStatusEvent = event("beneficiary.status", BeneficiaryStatusData)

/**
 * A decoded `beneficiary.status` event (as `WebhookEventOf<"beneficiary.status">`).
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryStatusEvent extends Schema.Schema.Type<typeof BeneficiaryStatusEvent> {}

/**
 * The `customer.created` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CustomerCreatedEvent = event("customer.created", JsonValue)

/**
 * A decoded `customer.created` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomerCreatedEvent extends Schema.Schema.Type<typeof CustomerCreatedEvent> {}

/**
 * The `customer.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CustomerStatusEvent = event("customer.status", JsonValue)

/**
 * A decoded `customer.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomerStatusEvent extends Schema.Schema.Type<typeof CustomerStatusEvent> {}

/**
 * The `customer.rfi` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CustomerRfiEvent = event("customer.rfi", JsonValue)

/**
 * A decoded `customer.rfi` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomerRfiEvent extends Schema.Schema.Type<typeof CustomerRfiEvent> {}

/**
 * The `transaction.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TransactionStatusEvent = event("transaction.status", JsonValue)

/**
 * A decoded `transaction.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransactionStatusEvent extends Schema.Schema.Type<typeof TransactionStatusEvent> {}

/**
 * The `virtual_account.created` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountCreatedEvent = event("virtual_account.created", JsonValue)

/**
 * A decoded `virtual_account.created` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountCreatedEvent extends Schema.Schema.Type<typeof VirtualAccountCreatedEvent> {}

/**
 * The `virtual_account.created.v2` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountCreatedV2Event = event("virtual_account.created.v2", JsonValue)

/**
 * A decoded `virtual_account.created.v2` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountCreatedV2Event extends Schema.Schema.Type<typeof VirtualAccountCreatedV2Event> {}

/**
 * The `virtual_account.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountStatusEvent = event("virtual_account.status", JsonValue)

/**
 * A decoded `virtual_account.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountStatusEvent extends Schema.Schema.Type<typeof VirtualAccountStatusEvent> {}

/**
 * The `virtual_account.status.v2` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountStatusV2Event = event("virtual_account.status.v2", JsonValue)

/**
 * A decoded `virtual_account.status.v2` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountStatusV2Event extends Schema.Schema.Type<typeof VirtualAccountStatusV2Event> {}

/**
 * The `beneficiary.created` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryCreatedEvent = event("beneficiary.created", JsonValue)

/**
 * A decoded `beneficiary.created` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryCreatedEvent extends Schema.Schema.Type<typeof BeneficiaryCreatedEvent> {}

/**
 * The `beneficiary.liquidation.deposit` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryLiquidationDepositEvent = event("beneficiary.liquidation.deposit", JsonValue)

/**
 * A decoded `beneficiary.liquidation.deposit` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryLiquidationDepositEvent
  extends Schema.Schema.Type<typeof BeneficiaryLiquidationDepositEvent>
{}

/**
 * The `batch.transaction.item.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BatchTransactionItemStatusEvent = event("batch.transaction.item.status", JsonValue)

/**
 * A decoded `batch.transaction.item.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchTransactionItemStatusEvent extends Schema.Schema.Type<typeof BatchTransactionItemStatusEvent> {}

/**
 * The `transit.payment.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TransitPaymentStatusEvent = event("transit.payment.status", JsonValue)

/**
 * A decoded `transit.payment.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransitPaymentStatusEvent extends Schema.Schema.Type<typeof TransitPaymentStatusEvent> {}

/**
 * An event whose type is not documented (yet): `type` is `"Unknown"` so matching on `type` still narrows;
 * `received_type` holds the type as sent.
 *
 * @since 0.1.0
 * @category schemas
 */
export const UnknownEvent = Schema.Struct({
  /** Always `"Unknown"`, so that matching on `type` narrows to this event. */
  type: Schema.Literal("Unknown"),
  /**
   * The event type as sent, e.g. a type added to the service after this version; never a documented one, which
   * decodes as its own event (and one built by hand would encode as that event's envelope, not decode back as itself).
   */
  received_type: Id.pipe(
    Schema.filter((type) => !documented.has(type), { message: () => "an event type the documentation does not list" })
  ),
  ...eventFields,
  /** The payload, the JSON as sent. */
  data: JsonValue
}).annotations({ identifier: "effect-fin.UnknownEvent" })

/**
 * A decoded event of a type the documentation does not list (see the `UnknownEvent` schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface UnknownEvent extends Schema.Schema.Type<typeof UnknownEvent> {}

/**
 * A decoded event (flat; `type` is the discriminant). To store events, encode them with `WebhookEventFromEnvelope`:
 * an `UnknownEvent` stored flat no longer decodes once a later version documents its type.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookEvent = Schema.Union(
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
  UnknownEvent
)

// Named, not `typeof WebhookEvent.Type`: an editor and a user's emitted declarations then print a variant by its name,
// not as the whole structure of every variant.
/**
 * A decoded event: a union on `type` (see the `WebhookEvent` schema).
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookEvent =
  | BeneficiaryStatusEvent
  | CustomerCreatedEvent
  | CustomerStatusEvent
  | CustomerRfiEvent
  | TransactionStatusEvent
  | VirtualAccountCreatedEvent
  | VirtualAccountCreatedV2Event
  | VirtualAccountStatusEvent
  | VirtualAccountStatusV2Event
  | BeneficiaryCreatedEvent
  | BeneficiaryLiquidationDepositEvent
  | BatchTransactionItemStatusEvent
  | TransitPaymentStatusEvent
  | UnknownEvent

/**
 * `"Unknown"` or one of the documented types.
 *
 * @since 0.1.0
 * @category models
 */
export type EventType = WebhookEvent["type"]

/**
 * The event variant of one type, e.g. `WebhookEventOf<"beneficiary.status">`.
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookEventOf<T extends EventType> = Extract<WebhookEvent, { readonly type: T }>

/**
 * From the envelope as sent to a flat `WebhookEvent` (and back). Encoding gives the envelope of the same event, not
 * its bytes: timestamps to the millisecond in UTC, a `null` status left out, and fields the schemas do not name
 * dropped (in the envelope's `event` or beside `event` and `data`, for every type; in a `beneficiary.status` event's
 * `data`); verify the raw body, and store it if you need what was sent.
 * To store a decoded event as JSON, encode it with this schema: `JSON.stringify` would write its `Option`s as objects,
 * and the flat form (`WebhookEvent` encoded) of an `UnknownEvent` whose type a later version documents no longer
 * decodes there, where the envelope decodes as that type's event.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookEventFromEnvelope: Schema.Schema<WebhookEvent, Envelope> = Schema.transform(
  Envelope,
  WebhookEvent,
  {
    // Not strict: the flat shape is chosen by `type` at run time, and `WebhookEvent` checks it right after.
    strict: false,
    decode: ({ data, event: { type, ...meta } }) =>
      documented.has(type) ? { type, ...meta, data } : { type: "Unknown", received_type: type, ...meta, data },
    encode: ({ data, type, ...rest }) => {
      const { received_type, ...meta } = rest as typeof rest & { readonly received_type?: string }
      return { event: { type: received_type ?? type, ...meta }, data }
    }
  }
)

// ---------------------------------------------------------------------------------------------------------------------
// Verification and decoding
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Checks beyond the signature, which the service does not provide itself.
 *
 * @since 0.1.0
 * @category models
 */
export interface VerifyOptions {
  /**
   * Refuse events whose `created_at` is older than this (`too_old`), or more than 5 minutes ahead of this clock
   * (`from_future`: one such event would make every genuine event of its resource stale). Off by default: then an
   * event dated ahead is taken as signed, and orders the status events of its resource after it.
   */
  readonly maxAge?: FinConfig.DurationOption | undefined
  /** Refuse events whose `sandbox_mode` says otherwise (`wrong_environment`); events without the field pass. */
  readonly environment?: "sandbox" | "production" | undefined
}

interface Decoded {
  readonly event: WebhookEvent
  /** The body as text (see `Delivery.body`). */
  readonly text: string
  /** `created_at` in epoch microseconds, for ordering. */
  readonly createdAt: number
  /** The position of the secret that verified it (see `Delivery.secret`). */
  readonly secret: number
  /**
   * A documented event whose data is not of the documented shape, of a type the handler has no handler for: it is
   * acknowledged (as `Unknown`, its data as sent), given to no handler.
   */
  readonly ignored?: true
}

// With `maxAge`, the clocks are trusted to agree within this (as Stripe's 5-minute signature tolerance does).
const MAX_FUTURE_SKEW_MILLIS = 5 * 60_000
// How long a handled id is kept past maxAge and the skew above (see `handlerSettings`).
const DEDUPE_MARGIN_MILLIS = 60_000

// `ignoreBOM`: a leading byte order mark is kept in the text (`Delivery.body` is the body as signed), and skipped
// only for JSON.parse.
const fatalUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
// Every issue, not the first: a sender mending its payload is told everything wrong with it at once.
const decodeEnvelope = Schema.decodeUnknownEither(Envelope, { errors: "all" })
const decodeFlat = Schema.decodeEither(WebhookEventFromEnvelope, { errors: "all" })
// An ignored event of a documented type is kept as an `UnknownEvent` holding that type (never handed to a handler).
const decodeUnknownEvent = Schema.decodeEither(Schema.Struct({ ...UnknownEvent.fields, received_type: Id }), {
  errors: "all"
})

const malformed = (message: string, issue?: ParseResult.ParseIssue) => {
  if (issue === undefined) return fail("malformed_body", message)
  const { issues, summary } = Issues.told(Issues.fromParseIssue(issue))
  return new WebhookVerificationError({ reason: "malformed_body", message: `${message}: ${summary}`, issues })
}

// `ignores`: the event types whose data need not be of the documented shape (the handler has no handler for them).
const decodeBody = (
  body: Uint8Array,
  secret: number,
  options: VerifyOptions,
  ignores?: (type: string) => boolean
): Effect.Effect<Decoded, WebhookVerificationError> =>
  Effect.suspend(() => {
    let json: unknown
    let text: string
    try {
      text = fatalUtf8.decode(body)
      json = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
    } catch {
      return Effect.fail(malformed("the body is not UTF-8 JSON"))
    }
    const envelope = decodeEnvelope(json)
    if (Either.isLeft(envelope)) return Effect.fail(malformed("the body is not a webhook envelope", envelope.left.issue))
    let decoded: Either.Either<WebhookEvent, ParseResult.ParseError> = decodeFlat(envelope.right)
    let ignored = false
    if (Either.isLeft(decoded) && ignores?.(envelope.right.event.type) === true) {
      const { data, event: { type, ...meta } } = envelope.right
      decoded = decodeUnknownEvent({ type: "Unknown", received_type: type, ...meta, data })
      ignored = true
    }
    if (Either.isLeft(decoded)) return Effect.fail(malformed("the event data is malformed", decoded.left.issue))
    const event = decoded.right
    const sandbox = event.sandbox_mode
    if (options.environment !== undefined && Option.isSome(sandbox) && sandbox.value !== (options.environment === "sandbox")) {
      return Effect.fail(fail("wrong_environment", `the event is not from the ${options.environment} environment`))
    }
    const createdAt = parseTimestamp(envelope.right.event.created_at)!
    return Effect.succeed(ignored ? { event, text, createdAt, secret, ignored } : { event, text, createdAt, secret })
  })

const formatMillis = (millis: number): string => Durations.formatMillis(Duration.millis(millis))

// With `maxAge`: refused when older than that, or dated more than 5 minutes ahead of the Clock.
const checkAge = (decoded: Decoded, options: VerifyOptions): Effect.Effect<Decoded, WebhookVerificationError> => {
  if (options.maxAge === undefined) return Effect.succeed(decoded)
  const maxAge = Duration.toMillis(Duration.decode(options.maxAge))
  return Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const age = now - DateTime.toEpochMillis(decoded.event.created_at)
    // By how much, and against what limit, so that a log says whether the event or the limit is wrong.
    return age > maxAge
      ? Effect.fail(
        fail("too_old", `the event was created ${formatMillis(age)} ago, over maxAge (${formatMillis(maxAge)})`)
      )
      : age < -MAX_FUTURE_SKEW_MILLIS
      ? Effect.fail(
        fail("from_future", `the event is dated ${formatMillis(-age)} ahead of this clock, over the 5 minutes allowed`)
      )
      : Effect.succeed(decoded)
  })
}

// The signature, then the event decoded, not yet checked for age.
const verifyDecoded = (
  body: Uint8Array,
  parsed: Signature.SignatureHeaders,
  secrets: SecretList,
  options: VerifyOptions,
  ignores?: (type: string) => boolean
): Effect.Effect<Decoded, WebhookVerificationError> =>
  Effect.withFiberRuntime((fiber) =>
    Effect.flatMap(
      checkSignature(cryptoIn(fiber.currentContext), parsed, secrets, body),
      (secret) => decodeBody(body, secret, options, ignores)
    )
  )

/**
 * Verifies a delivery (see `verifySignature`) and decodes its event. Fails with `WebhookVerificationError`, whose
 * `reason` says why; no error or log carries a secret or a received value (`too_old` and `from_future` say the age
 * worked out from the signed `created_at`).
 *
 * Dies with `IllegalArgumentException` (a defect: the program's mistake, not the delivery's) when `maxAge` is not a
 * duration greater than zero and finite (an infinite one would silently switch the check off), `environment` is
 * neither `"sandbox"` nor `"production"`, an option is none of these (nor of `HandlerOptions`, which extend them), or
 * `rawBody` is neither a `Uint8Array` nor a string (`req.body` after `express.json()`) while the signature headers are
 * well formed. A secret with whitespace, a control or an invisible formatting character at either end, or one that is
 * not text, fails the call (`no_secret`).
 *
 * @since 0.1.0
 * @category verification
 */
export const verify = (
  rawBody: Uint8Array | string,
  headers: HeadersInput,
  secrets: Secrets,
  options: VerifyOptions = {}
): Effect.Effect<WebhookEvent, WebhookVerificationError> =>
  Effect.map(verifying("verify", rawBody, headers, secrets, options), (decoded) => decoded.event)

/**
 * A delivery verified by `verifyWithSecret`: its event, and which secret verified it.
 *
 * @since 0.1.0
 * @category models
 */
export interface VerifiedDelivery {
  /** The event, decoded (as `verify` gives it). */
  readonly event: WebhookEvent
  /** The position, in `secrets`, of the secret the delivery was signed with (as the handler's `Delivery.secret`). */
  readonly secret: number
}

/**
 * `verify`, also telling which secret verified the delivery: its position in `secrets` (0 for a single secret), as the
 * handler gives its handlers in `Delivery.secret`. During a rotation, the old secret can go once no delivery has come
 * with its position for a while (Fin documents no redelivery window; see the README's Webhooks section). Fails and
 * dies as `verify` does.
 *
 * @since 0.1.0
 * @category verification
 */
export const verifyWithSecret = (
  rawBody: Uint8Array | string,
  headers: HeadersInput,
  secrets: Secrets,
  options: VerifyOptions = {}
): Effect.Effect<VerifiedDelivery, WebhookVerificationError> =>
  Effect.map(
    verifying("verifyWithSecret", rawBody, headers, secrets, options),
    ({ event, secret }): VerifiedDelivery => ({ event, secret })
  )

const verifying = (
  where: VerifyingFunction,
  rawBody: Uint8Array | string,
  headers: HeadersInput,
  secrets: Secrets,
  options: VerifyOptions
): Effect.Effect<Decoded, WebhookVerificationError> =>
  // In the effect, so that a bad option is a defect of its run, not an exception thrown where it is built.
  Effect.suspend(() => {
    // From untyped code (an unset configuration key): named like any other mistake, not a TypeError from Object.keys.
    if (typeof options !== "object" || options === null) {
      throw invalidOption(where, "takes an options object or none")
    }
    checkOptionNames(where, options)
    checkEnvironment(where, options.environment)
    const checked: VerifyOptions = options.maxAge === undefined
      ? options
      : { ...options, maxAge: checkedDuration(where, "maxAge", options.maxAge, false) }
    const parsed = Signature.check(headers)
    if (Either.isLeft(parsed)) return parsed.left
    const bytes = toBytes(rawBody)
    if (bytes === undefined) return notBytes(rawBody)
    return Effect.flatMap(
      verifyDecoded(bytes, parsed.right, secretList(secrets), checked),
      (decoded) => checkAge(decoded, checked)
    )
  })

// ---------------------------------------------------------------------------------------------------------------------
// De-duplication store
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The answer to a claim on an event id and its `event_reference_id`.
 *
 * @since 0.1.0
 * @category models
 */
export type Claim =
  /** Handle it; pass the token to `complete` or `release`. */
  | { readonly _tag: "Claimed"; readonly token: string }
  /** Another delivery of the same event holds a live claim. */
  | { readonly _tag: "InProgress" }
  /** The event was handled before. */
  | { readonly _tag: "Done" }
  /** Another event of the same reference is being handled: nothing was claimed, try again once it is done. */
  | { readonly _tag: "ReferenceBusy" }

/**
 * What the handler remembers about a handled event, for ordering.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handled {
  /** The event's `event_reference_id`, whose claim `complete` frees. */
  readonly referenceId: string
  /**
   * For an event kept in order (`orderedEventTypes`): its `created_at` in epoch microseconds, to record under `key`
   * (keeping the newest) for `ttl`. Absent for other events, which record nothing. The key is the event's status and
   * its reference (`orderKey`), so that statuses of different kinds of one resource never make each other stale.
   */
  readonly order?: { readonly key: string; readonly createdAt: number; readonly ttl: Duration.Duration } | undefined
}

/**
 * What the order of a status event is kept under: its type without a version suffix (`virtual_account.status.v2`
 * and `virtual_account.status` are one status) and its `event_reference_id`.
 *
 * @since 0.1.0
 * @category models
 */
export const orderKey = (type: string, referenceId: string): string => `${type.replace(/\.v\d+$/, "")}:${referenceId}`

/**
 * Where the handler keeps which events were handled (by `event.id`) and, per `event_reference_id`, the newest
 * `created_at` handled. A claim holds the event and its reference together, so while it lives no other event of that
 * resource is handled: otherwise both could pass the stale check and the older could be applied last. Shaped for a
 * shared store such as Redis (`effect-fin/redis`): `claim` is one atomic step over the event and the reference lock
 * (both under `ttl`, so a crashed handler's claim expires), `complete` marks the event done, max-updates the reference
 * and drops the lock, `renew` extends both while the token holds them (the handler renews while it runs and while
 * `complete` is under way: a `renew` may come beside a `complete`, so each is one atomic step, and a `renew` of an
 * event done answers `false`, never setting it back to pending), `release` is a compare-and-delete of both on the
 * token. A store that fails (an operation that dies or interrupts itself too) makes the handler answer 500, its claim
 * released, so the service delivers again: nothing is lost.
 *
 * @since 0.1.0
 * @category models
 */
export interface WebhookDedupeStoreService {
  /**
   * Claims `eventId` and `referenceId` for `ttl`, unless the event is claimed or handled already (`InProgress`,
   * `Done`) or another claim holds the reference (`ReferenceBusy`, and nothing is claimed). The handler runs it
   * uninterruptibly (a claim taken must be seen to be released), so it must end in bounded time: give remote calls a
   * timeout, as the Redis store does.
   */
  readonly claim: (
    eventId: string,
    referenceId: string,
    ttl: Duration.Duration
  ) => Effect.Effect<Claim, WebhookDedupeStoreError>
  /**
   * Marks `eventId` handled for `ttl` (unless another delivery has claimed it since `token`'s claim lapsed: that one
   * marks it), records `handled.order` under its key (keeping the newest) and frees the reference if `token` still
   * holds it.
   */
  readonly complete: (
    eventId: string,
    token: string,
    handled: Handled,
    ttl: Duration.Duration
  ) => Effect.Effect<void, WebhookDedupeStoreError>
  /**
   * Extends the event and reference claims held under `token` to `ttl` from now; `false` when `token` no longer holds
   * both (the claim expired, and maybe another delivery took it).
   */
  readonly renew: (
    eventId: string,
    referenceId: string,
    token: string,
    ttl: Duration.Duration
  ) => Effect.Effect<boolean, WebhookDedupeStoreError>
  /**
   * Drops the event and reference claims still held under `token`, so a redelivery runs the handler again; a no-op
   * once completed.
   */
  readonly release: (eventId: string, referenceId: string, token: string) => Effect.Effect<void, WebhookDedupeStoreError>
  /** The newest `created_at` (epoch microseconds) recorded under an order key (`Handled.order.key`). */
  readonly lastHandled: (key: string) => Effect.Effect<Option.Option<number>, WebhookDedupeStoreError>
}

/**
 * A de-duplication store could not be read or written. The handler answers 500 (the service delivers again); the
 * error is logged, never passed to the user's handlers.
 *
 * @since 0.1.0
 * @category errors
 */
export class WebhookDedupeStoreError extends Schema.TaggedError<WebhookDedupeStoreError>(
  "effect-fin.WebhookDedupeStoreError"
)("WebhookDedupeStoreError", {
  /** What the store was doing: `claim`, `complete`, `renew`, `release`, `lastHandled`. */
  operation: Schema.String,
  /** What went wrong (unreachable, no answer in time), for a log line. */
  message: Schema.String
}) {}

Inspect.showUnwrapped(WebhookDedupeStoreError)

/**
 * The de-duplication store the handler uses when its options name none. Without either, each handler keeps its own
 * in-memory store.
 *
 * @since 0.1.0
 * @category tags
 */
export class WebhookDedupeStore extends Context.Tag("effect-fin/WebhookDedupeStore")<
  WebhookDedupeStore,
  WebhookDedupeStoreService
>() {}

// A map whose entries expire; re-set keys count as new, so the oldest are first. Bounded: past `maxEntries` the
// expired entries go first, wherever they are (handlers of different TTLs may share a store), then the oldest live
// ones (`full` then says so).
// The order is kept in queues (an array and its head) of the entries as set, not by iterating the Map or a Set from
// its start: V8 leaves a deleted entry as a hole until the table is rebuilt, so finding the first entry again after
// deleting the one before costs a walk over every hole, O(maxEntries) per write. An entry removed or set again since
// is left in its queue and skipped when met (the queues are compacted once they hold twice the live entries).
const expiringMap = <V extends { readonly expiresAt: number }>(maxEntries: number) => {
  interface Entry {
    readonly key: string
    readonly value: V
  }
  interface Queue {
    items: Array<Entry>
    head: number
  }
  const map = new Map<string, Entry>()
  // The entries of each lifetime in the order they were set, which is their order of expiry (the clock only moves
  // on): the expired ones of each lifetime are at its head, found without searching the whole map on every insert.
  const byLifetime = new Map<number, Queue>()
  // All entries in the order they were set, for eviction past `maxEntries` (none without a limit).
  const inOrder: Queue | undefined = Number.isFinite(maxEntries) ? { items: [], head: 0 } : undefined
  let full = false
  const live = (entry: Entry) => map.get(entry.key) === entry
  const first = (queue: Queue): Entry | undefined => {
    while (queue.head < queue.items.length && !live(queue.items[queue.head]!)) queue.head += 1
    return queue.items[queue.head]
  }
  // Entries held by all the queues, live or not: past twice the live ones (and a little per queue), every queue is
  // compacted, so that dead entries behind a live head, in queues of many lifetimes, stay within a bound of map.size.
  let queued = 0
  const compact = (queue: Queue) => {
    const before = queue.items.length
    queue.items = queue.items.slice(queue.head).filter(live)
    queue.head = 0
    queued -= before - queue.items.length
  }
  const push = (queue: Queue, entry: Entry) => {
    queue.items.push(entry)
    queued += 1
    if (queued > 2 * (inOrder === undefined ? 1 : 2) * map.size + 64 * (byLifetime.size + 1)) {
      for (const each of byLifetime.values()) compact(each)
      if (inOrder !== undefined) compact(inOrder)
    } else if (queue.head > 64 && queue.head * 2 > queue.items.length) {
      queue.items = queue.items.slice(queue.head)
      queued -= queue.head
      queue.head = 0
    }
  }
  const remove = (key: string) => {
    map.delete(key)
  }
  const sweep = (now: number) => {
    for (const [lifetime, queue] of byLifetime) {
      let head = first(queue)
      while (head !== undefined && head.value.expiresAt <= now) {
        map.delete(head.key)
        head = first(queue)
      }
      if (head === undefined) {
        queued -= queue.items.length
        byLifetime.delete(lifetime)
      }
    }
    if (inOrder !== undefined) {
      while (map.size > maxEntries) {
        full = true
        map.delete(first(inOrder)!.key)
      }
    }
  }
  return {
    get full() {
      return full
    },
    get: (key: string, now: number): V | undefined => {
      const value = map.get(key)?.value
      return value !== undefined && value.expiresAt > now ? value : undefined
    },
    set: (key: string, value: V, now: number) => {
      const entry: Entry = { key, value }
      map.delete(key)
      map.set(key, entry)
      const lifetime = value.expiresAt - now
      let queue = byLifetime.get(lifetime)
      if (queue === undefined) byLifetime.set(lifetime, queue = { items: [], head: 0 })
      push(queue, entry)
      if (inOrder !== undefined) push(inOrder, entry)
      sweep(now)
    },
    delete: remove
  }
}

// NaN (an unset variable read as a number) would make every write drop every entry, the new one too: no
// de-duplication and no stale check, without a word.
const checkedMaxEntries = (options: { readonly maxEntries?: number | undefined }): number => {
  OptionNames.checkOrThrow("Webhooks.makeMemoryDedupeStore", options, { maxEntries: true }, {
    object: "({ maxEntries })",
    option: "(maxEntries)"
  })
  const maxEntries = options.maxEntries ?? 10_000
  if (Number.isSafeInteger(maxEntries) && maxEntries >= 1) return maxEntries
  throw new Cause.IllegalArgumentException(
    `effect-fin: Webhooks.makeMemoryDedupeStore: maxEntries must be a whole number of 1 or more, not ${
      OptionNames.shown(maxEntries)
    }`
  )
}

/**
 * An in-memory store for one process, bounded in size (default 10,000 handled events and as many references) and in
 * time (the TTLs the handler passes); claims are bounded by time only. The first time it forgets a handled event or
 * resource before its time (more events within `dedupeTtl` than `maxEntries`), it logs a warning.
 *
 * Throws `IllegalArgumentException` when `maxEntries` is not a whole number of 1 or more, or an option is none of
 * its own (`maxentries`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryDedupeStore = (options: { readonly maxEntries?: number | undefined } = {}): WebhookDedupeStoreService => {
  const maxEntries = checkedMaxEntries(options)
  const handledEvents = expiringMap<{ readonly expiresAt: number }>(maxEntries)
  const references = expiringMap<{ readonly createdAt: number; readonly expiresAt: number }>(maxEntries)
  // Times are monotonic (as the handler's renewals are): a wall clock stepped forward would otherwise expire every
  // live claim at once, and a redelivery would run beside its handler. Whole milliseconds, so that a lifetime
  // (expiresAt - now) is exact and entries of one TTL share one list.
  const currentMillis = Effect.map(Monotonic.millis, Math.floor)
  // Claims are never evicted before they expire: one lives only while its handler runs (so their number is that of
  // the deliveries in progress), and dropping a live one would let a duplicate of its event, or a second event of
  // its resource, run beside it.
  type Claimed = { readonly token: string; readonly expiresAt: number }
  const eventClaims = expiringMap<Claimed>(Number.POSITIVE_INFINITY)
  const referenceClaims = expiringMap<Claimed>(Number.POSITIVE_INFINITY)
  let counter = 0
  // Said once: a store this busy would say it on every event.
  let warned = false
  const holds = (claims: typeof eventClaims, key: string, token: string, now: number) =>
    claims.get(key, now)?.token === token
  const drop = (eventId: string, referenceId: string, token: string, now: number) => {
    if (holds(eventClaims, eventId, token, now)) eventClaims.delete(eventId)
    if (holds(referenceClaims, referenceId, token, now)) referenceClaims.delete(referenceId)
  }
  return {
    claim: (eventId, referenceId, ttl) =>
      Effect.map(currentMillis, (now): Claim => {
        if (handledEvents.get(eventId, now) !== undefined) return { _tag: "Done" }
        if (eventClaims.get(eventId, now) !== undefined) return { _tag: "InProgress" }
        if (referenceClaims.get(referenceId, now) !== undefined) return { _tag: "ReferenceBusy" }
        const claimed = { token: String(++counter), expiresAt: now + Duration.toMillis(ttl) }
        eventClaims.set(eventId, claimed, now)
        referenceClaims.set(referenceId, claimed, now)
        return { _tag: "Claimed", token: claimed.token }
      }),
    complete: (eventId, token, handled, ttl) =>
      Effect.flatMap(currentMillis, (now) => {
        // An event another delivery has claimed since (this claim lapsed) is left to that delivery to mark.
        const claimed = eventClaims.get(eventId, now)
        if (claimed === undefined || claimed.token === token) {
          handledEvents.set(eventId, { expiresAt: now + Duration.toMillis(ttl) }, now)
        }
        const order = handled.order
        const last = order === undefined ? undefined : references.get(order.key, now)
        if (order !== undefined && (last === undefined || last.createdAt < order.createdAt)) {
          references.set(
            order.key,
            { createdAt: order.createdAt, expiresAt: now + Duration.toMillis(order.ttl) },
            now
          )
        }
        drop(eventId, handled.referenceId, token, now)
        if (warned || !(handledEvents.full || references.full)) return Effect.void
        warned = true
        return Effect.logWarning(
          `effect-fin: the in-memory webhook dedupe store holds its most (maxEntries ${maxEntries}): handled events ` +
            "and resources are forgotten before their time, so a redelivery may run its handler again and an older " +
            "status pass as new; raise maxEntries, or share a store (effect-fin/redis)"
        )
      }),
    renew: (eventId, referenceId, token, ttl) =>
      Effect.map(currentMillis, (now) => {
        if (!holds(eventClaims, eventId, token, now) || !holds(referenceClaims, referenceId, token, now)) return false
        const claimed = { token, expiresAt: now + Duration.toMillis(ttl) }
        eventClaims.set(eventId, claimed, now)
        referenceClaims.set(referenceId, claimed, now)
        return true
      }),
    release: (eventId, referenceId, token) =>
      Effect.map(currentMillis, (now) => drop(eventId, referenceId, token, now)),
    lastHandled: (key) =>
      Effect.map(
        currentMillis,
        (now) => Option.map(Option.fromNullable(references.get(key, now)), (r) => r.createdAt)
      )
  }
}

/**
 * Provides an in-memory `WebhookDedupeStore` (one per layer build).
 *
 * Fails its build with an `IllegalArgumentException` defect when `maxEntries` is not a whole number of 1 or more, or
 * an option is none of its own, where `makeMemoryDedupeStore` throws it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemoryDedupeStore = (
  options: { readonly maxEntries?: number | undefined } = {}
): Layer.Layer<WebhookDedupeStore> => Layer.sync(WebhookDedupeStore, () => makeMemoryDedupeStore(options))

// ---------------------------------------------------------------------------------------------------------------------
// Handler
// ---------------------------------------------------------------------------------------------------------------------

/**
 * What the handler tells a user's handler about the delivery.
 *
 * @since 0.1.0
 * @category models
 */
export interface Delivery {
  /**
   * A status event of the same kind (`orderKey`: its type, `.v2` or not) newer than this one was already handled
   * for the same `event_reference_id` (see `deliverStale` and `orderedEventTypes`); always `false` for other events.
   */
  readonly stale: boolean
  /**
   * The body as delivered (signed and verified), as text, a leading byte order mark included. An event's data is read
   * with `JSON.parse`, whose numbers are doubles: a whole number past `Number.MAX_SAFE_INTEGER` (an amount in a
   * currency's smallest unit, say) is no longer the one sent, and one past 1e308 is `Infinity`. Read such a number from
   * here, with a parser that keeps it.
   */
  readonly body: string
  /**
   * The position, in the handler's `secrets`, of the secret the delivery was signed with (0 for a single secret).
   * During a rotation, once no delivery comes with the old secret's, it can be taken out (also on the span, as
   * `fin.webhook.secret`).
   */
  readonly secret: number
}

/**
 * The user's handlers, one per event type (all optional; events without a handler are acknowledged, whatever their
 * data holds). `Unknown` receives events of undocumented types. `R`: the services they may require, `unknown` by
 * default (so `<H extends Handlers>` and `satisfies Handlers` take every handler). A variable annotated with this type gives
 * `handler` its `R` as the app's requirements: annotate with `Handlers<never>` (none) or `Handlers<Db>`, not the
 * default, whose `unknown` no server provides.
 *
 * @since 0.1.0
 * @category models
 */
export type Handlers<R = unknown> = {
  // `undefined` (a handler switched off by a flag) is no handler, as an absent key is.
  readonly [T in EventType]?:
    | ((event: WebhookEventOf<T>, delivery: Delivery) => Effect.Effect<unknown, unknown, R>)
    | undefined
}

/**
 * Refuses, at compile time, a key of `handlers` that is not an event type (a misspelt one would otherwise be accepted
 * beside valid ones, its events acknowledged and never handled). In a function generic over the handlers, where this
 * cannot be decided, take the check into its own parameter, so its callers' keys are checked:
 * `<H extends Handlers>(handlers: H & OnlyEventTypes<H>["handlers"]) => handler<H>({ secrets, handlers })`. The keys
 * are also checked when the handler is built.
 *
 * @since 0.1.0
 * @category models
 */
export type OnlyEventTypes<H> = {
  readonly handlers: { readonly [K in Exclude<keyof H, EventType>]: NotAnEventType<K> }
}

/**
 * The type a key of `handlers` that is not an event type is given, so that the compiler's error names the key and
 * says what is wrong (`... is not assignable to type 'NotAnEventType<"beneficiary.statsu">'`); no handler is one.
 *
 * @since 0.1.0
 * @category models
 */
export interface NotAnEventType<K> {
  readonly "effect-fin: not a webhook event type (Webhooks.documentedEventTypes lists them, and Unknown)": K
}

/**
 * The services the handlers of `H` require.
 *
 * @since 0.1.0
 * @category models
 */
export type HandlersContext<H> = {
  [K in keyof H]-?: ContextOf<H[K]>
}[keyof H]

// Distributed over a union, so that an `undefined` handler (or an optional key) requires nothing, not `unknown`.
type ContextOf<F> = F extends (...args: ReadonlyArray<never>) => Effect.Effect<infer _A, infer _E, infer R> ? R : never

/**
 * What `handler` and `makeHandler` take: the secrets, the handlers per event type, and the limits.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandlerOptions<H extends Handlers> extends VerifyOptions {
  /** The webhook secret, or several during a rotation. */
  readonly secrets: Secrets
  /**
   * One handler per event type (`Handlers`), given the decoded event; an event with none is acknowledged. A handler
   * that fails is answered 500, so the service delivers again.
   */
  readonly handlers: H
  /** Largest body accepted, in bytes (default 1 MiB); a larger one gets 413, read up to the chunk that goes past it. */
  readonly maxBodySize?: number | undefined
  /**
   * How long a delivery's body may take to arrive (default 10 seconds; the service sends a small JSON document at
   * once); a slower one gets 408 and its connection closed. Without it a body that never ends would hold what it
   * sent (up to `maxBodySize`, before any signature check) until the server's own request timeout: 300 s on Node.
   */
  readonly bodyTimeout?: FinConfig.DurationOption | undefined
  /** Also pass stale events to the handlers (with `delivery.stale`); by default they are only acknowledged. */
  readonly deliverStale?: boolean | undefined
  /** De-duplication store; default: the `WebhookDedupeStore` service if provided, else one in memory. */
  readonly store?: WebhookDedupeStoreService | undefined
  /**
   * How long a user handler may run (default 1 minute); one that runs longer is interrupted and counts as failed
   * (500, so the service delivers again). A handler that cannot be interrupted (`Effect.uninterruptible`) is waited
   * for, its claim renewed meanwhile, and still counts as failed: while the store renews the claim, a redelivery is
   * answered 409; once a renewal fails (the store unreachable), the claim lapses after `claimTtl` and a redelivery
   * runs the handler beside the one still running. Keep handlers interruptible. The handler's own work is timed: the
   * release of what it acquired in its scope (a commit) runs after, before its event is marked handled.
   */
  readonly handlerTimeout?: FinConfig.DurationOption | undefined
  /**
   * How long a claim on an event (and its resource) lives unless renewed: default 30 seconds, at least 1 second. While
   * a user handler runs, its claim is renewed every third of that, so it never expires under a live handler; a
   * process that dies mid-handler holds the event (409) and its resource (409 after `referenceWait`) for at most
   * this long, then the service's redelivery gets through. If a renewal finds the claim gone (it expired while the
   * store was unreachable, and maybe another delivery took it), the handler is interrupted and the delivery answered
   * 500 `{"outcome":"store_unavailable"}` (the store's failure, not the handler's).
   */
  readonly claimTtl?: FinConfig.DurationOption | undefined
  /**
   * How long handled event ids are remembered (default 24 hours; when `maxAge` is set, at least `maxAge` and the 5
   * minutes an event may be dated ahead, and a minute more, so that a replay is refused either as too old or as a
   * duplicate). A delivery repeated after that runs the handlers again, as does one whose id a bounded store dropped
   * first (the in-memory store keeps at most `maxEntries`, 10,000 by default).
   */
  readonly dedupeTtl?: FinConfig.DurationOption | undefined
  /**
   * How long the newest `created_at` handled per status and `event_reference_id` (`orderKey`) is remembered, for the
   * order of status events (default 30 days, at least `dedupeTtl`): a status event older than that one, redelivered
   * or replayed later, is stale rather than applied over the newer status.
   */
  readonly orderTtl?: FinConfig.DurationOption | undefined
  /**
   * How long a delivery waits while another event of the same `event_reference_id` is being handled (default 5
   * seconds; checked between its tries of the store, at most 200 ms apart, the last one at its end, so it may wait
   * one try longer); after that it gets 409 and the service delivers it again later.
   */
  readonly referenceWait?: FinConfig.DurationOption | undefined
}

/**
 * The default `maxBodySize`: 1 MiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxBodySize = 1024 * 1024

// The functions verifying a delivery on their own, and the handler: who says an option is wrong.
type VerifyingFunction = "verify" | "verifyWithSecret"

type Where = "handler" | VerifyingFunction

// The handler's options, checked once when it is built: a NaN or negative value (an unset variable read as a number,
// say) would otherwise switch off the body limit or the de-duplication without a word, and no secret would refuse
// every delivery.
const invalidOption = (where: Where, message: string) =>
  new Cause.IllegalArgumentException(`effect-fin: Webhooks.${where}: ${message}`)

// Every option, by name: a key that is none (misspelt, `maxBodysize`; from a config file) would otherwise leave its
// default in force without a word. A record of the types' own keys, so a new option cannot be left out.
const verifyOptionNames: { readonly [K in keyof VerifyOptions]-?: true } = { maxAge: true, environment: true }
const handlerOptionNames: { readonly [K in keyof HandlerOptions<Handlers>]-?: true } = {
  ...verifyOptionNames,
  secrets: true,
  handlers: true,
  maxBodySize: true,
  bodyTimeout: true,
  deliverStale: true,
  store: true,
  handlerTimeout: true,
  claimTtl: true,
  dedupeTtl: true,
  orderTtl: true,
  referenceWait: true
}

// `verify` takes a handler's options too (they extend its own, so one object may serve both): the others are ignored.
const checkOptionNames = (where: Where, options: object): void => {
  const [shown] = OptionNames.unknown(options, handlerOptionNames)
  if (shown !== undefined) {
    throw invalidOption(where, `"${shown}" is no option of Webhooks.${where === "handler" ? "HandlerOptions" : "VerifyOptions"}`)
  }
}

const checkedDuration = (
  where: Where,
  name: string,
  input: Duration.DurationInput | undefined,
  allowZero: boolean,
  timer = false
) => Durations.checkOrThrow(input, allowZero, `effect-fin: Webhooks.${where}: ${name}`, timer)

const handlerSettings = (options: HandlerOptions<Handlers>) => {
  const invalid = (message: string) => invalidOption("handler", message)
  // From untyped code: no options, or no `handlers` (an unset configuration key), is named like any other mistake.
  if (typeof options !== "object" || options === null) throw invalid("takes an options object ({ secrets, handlers })")
  checkOptionNames("handler", options)
  // Every delivery would be refused (500, no_secret): a configuration mistake, said at once.
  const secrets = secretList(options.secrets)
  if (secrets.notText) throw invalid(`secrets ${notTextMessage}`)
  if (secrets.keys.length === 0) throw invalid("secrets holds no webhook secret (empty ones do not count)")
  if (secrets.padded) throw invalid(`secrets ${paddedMessage}`)
  checkEnvironment("handler", options.environment)
  // A Map's entries are no properties: every event would be acknowledged (200 handled) and none handled.
  if (
    typeof options.handlers !== "object" || options.handlers === null || Array.isArray(options.handlers) ||
    (options.handlers as unknown) instanceof Map
  ) {
    throw invalid("handlers must be an object of event types to handlers ({} to acknowledge every event)")
  }
  // A misspelt event type would leave its events acknowledged (200 handled) and never handled: lost for good.
  for (const [type, handle] of Object.entries(options.handlers)) {
    if (type !== "Unknown" && !documented.has(type)) {
      throw invalid(`handlers has "${type}", which is not an event type (${documentedEventTypes.join(", ")}, Unknown)`)
    }
    if (handle !== undefined && typeof handle !== "function") throw invalid(`handlers["${type}"] is not a function`)
  }
  const duration = (name: string, input: Duration.DurationInput | undefined, allowZero: boolean, timer = false) =>
    checkedDuration("handler", name, input, allowZero, timer)
  // From untyped configuration, "true" would be ignored without a word (only `true` delivers stale events).
  if (options.deliverStale !== undefined && typeof options.deliverStale !== "boolean") {
    throw invalid("deliverStale must be true or false")
  }
  const limit = options.maxBodySize ?? defaultMaxBodySize
  // 0 (an empty variable read as a number) would refuse every delivery: no event is empty.
  if (!Number.isSafeInteger(limit) || limit < 1) throw invalid("maxBodySize must be a whole number of bytes, 1 or more")
  const maxAge = options.maxAge === undefined ? undefined : duration("maxAge", options.maxAge, false)
  // An event dated ahead of this clock (as far as maxAge allows) stays young for that much longer than maxAge. A
  // minute more: at exactly maxAge old it is not too old yet, and its age is on the wall clock, the store's time on the
  // monotonic one.
  const dedupeTtl = Duration.max(
    duration("dedupeTtl", options.dedupeTtl ?? "24 hours", false),
    maxAge === undefined ? Duration.zero : Duration.sum(maxAge, MAX_FUTURE_SKEW_MILLIS + DEDUPE_MARGIN_MILLIS)
  )
  return {
    secrets,
    limit,
    maxAge,
    dedupeTtl,
    orderTtl: Duration.max(duration("orderTtl", options.orderTtl ?? "30 days", false), dedupeTtl),
    handlerTimeout: duration("handlerTimeout", options.handlerTimeout ?? "1 minute", false, true),
    bodyTimeout: duration("bodyTimeout", options.bodyTimeout ?? "10 seconds", false, true),
    claimTtl: Duration.max(duration("claimTtl", options.claimTtl ?? "30 seconds", false), Duration.seconds(1)),
    referenceWait: Duration.toMillis(duration("referenceWait", options.referenceWait ?? "5 seconds", true, true))
  }
}

// How often a delivery waiting for its reference asks the store again: after 25 ms, then twice as long each time, up to
// 200 ms (a shared store is not polled 40 times a second per waiting delivery).
const firstPollMillis = 25
const maxPollMillis = 200

type Outcome =
  | "handled"
  | "duplicate"
  | "stale"
  | "in_progress"
  | "reference_busy"
  | "rejected"
  | "failed"
  | "store_unavailable"
  | "shutting_down"

interface Answer {
  readonly status: number
  readonly outcome: Outcome
}

// Why `keepClaim` stopped a running handler: the store's failure, not the handler's.
class ClaimLost {
  constructor(readonly reason: string) {}
}

// A renewal that died (a driver's bug in a store of the user's): the store's defect, not the handler's failure.
class RenewalDied {
  constructor(readonly defect: unknown) {}
}

// A delivery answered 500 (its handler failed, the store is unavailable, no secret) ends its effect-fin span as
// failed, as a failed call's does: an operator's tracing shows it as an error, not only by an attribute. The span's
// error is this marker, never the handler's own cause (logged, redacted, by itself); the answer goes out as before.
// Its answer is kept out of what a tracer renders (`Cause.prettyErrors`: its `toString`, else all its properties as
// JSON, the whole response with them): the span's error reads as the message alone.
class FailedDelivery<A> {
  readonly _tag = "effect-fin/FailedDelivery"
  readonly message = "the webhook delivery was answered 500"
  declare readonly value: A
  constructor(value: A) {
    Object.defineProperty(this, "value", { value, enumerable: false })
  }
  toString(): string {
    return this.message
  }
}
const spanFailingOn500 = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  statusOf: (a: A) => number,
  name: string,
  options?: Tracer.SpanOptions
): Effect.Effect<A, E, R> =>
  self.pipe(
    Effect.flatMap((a) => statusOf(a) === 500 ? Effect.fail(new FailedDelivery(a)) : Effect.succeed(a)),
    Effect.withSpan(name, { ...options, captureStackTrace: false }),
    Effect.catchIf((e): e is FailedDelivery<A> => e instanceof FailedDelivery, (e) => Effect.succeed(e.value))
  ) as Effect.Effect<A, E, R>

// The outcome, recorded on the current span.
const settleAs = (status: number, outcome: Outcome): Effect.Effect<Answer> =>
  Effect.as(Spans.annotateOwn({ "fin.webhook.outcome": outcome }), { status, outcome })

// Each answered delivery, once, as it is answered: forged requests or a secret out of step, which the logs say once a
// minute, are counted one by one, to alert on. Labels from two closed lists only.
const deliveries = Metric.counter("effect_fin_webhook_deliveries_total", {
  description: "Webhook deliveries answered, by outcome (and reason, for one rejected)",
  incremental: true
})
const deliveriesOf = memo((outcome) => Metric.tagged(deliveries, "outcome", outcome))
const rejectionsOf = memo((reason) =>
  Metric.taggedWithLabels(deliveries, [MetricLabel.make("outcome", "rejected"), MetricLabel.make("reason", reason)])
)

const respond = (status: number, outcome: Outcome) =>
  settleAs(status, outcome).pipe(
    Effect.zipRight(Metric.increment(deliveriesOf(outcome))),
    Effect.as(HttpServerResponse.unsafeJson({ outcome }, { status }))
  )

const statusOf: { readonly [R in WebhookFailureReason]: number } = {
  missing_signature: 401,
  bad_signature: 401,
  unsupported_algorithm: 401,
  no_secret: 500,
  malformed_body: 400,
  too_old: 400,
  from_future: 400,
  wrong_environment: 400,
  body_too_large: 413,
  body_timeout: 408
}

// A cause as Effect's loggers render it, or undefined where that throws (an error whose causes make a cycle).
const renderedOrUndefined = (cause: Cause.Cause<unknown>): string | undefined => {
  try {
    return Cause.pretty(cause, { renderErrorCause: true })
  } catch {
    return undefined
  }
}

// What a failure's error is called (its name and message), for a cause that cannot be rendered whole.
const squashedName = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`
    return Predicate.isObject(error) ? "an object" : String(error)
  } catch {
    return "an error that cannot be shown"
  }
}

// Whether anything in the cause a logger may print (by inspecting it, serialising it, or calling `toJSON`) holds text
// `redact` changes: every text reached through own data fields, enumerable or not (an `Error`'s message and stack, an
// error nested in a field), enumerable getters (read as JSON reads them), a boxed string, a Map's or Set's entries,
// and what a `toJSON` gives; bytes are not read (no logger shows them as text). A cycle is walked once. Past
// MAX_WALKED objects, or where a field cannot be read, nothing can be told: held.
const holdsSecret = (cause: Cause.Cause<unknown>, redact: (text: string) => string): boolean => {
  const seen = new Set<object>()
  const texts: Array<string> = []
  const pending: Array<unknown> = [cause]
  try {
    while (pending.length > 0) {
      const value = pending.pop()
      if (typeof value === "string") {
        texts.push(value)
        continue
      }
      if (typeof value !== "object" || value === null || seen.has(value)) continue
      if (seen.size >= MAX_WALKED) return true
      seen.add(value)
      if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) continue
      // A boxed string's text is its value, which JSON writes (its own fields are its characters, one each).
      if (value instanceof String) texts.push(String.prototype.valueOf.call(value))
      if (value instanceof Map) for (const [key, entry] of value) pending.push(key, entry)
      if (value instanceof Set) for (const entry of value) pending.push(entry)
      for (const key of Reflect.ownKeys(value)) {
        if (typeof key === "string") texts.push(key)
        const field = Reflect.getOwnPropertyDescriptor(value, key)
        if (field === undefined) continue
        // An enumerable getter's value is what JSON writes (an object literal's `get key()`): read, as JSON would.
        if ("value" in field) pending.push(field.value)
        else if (field.enumerable === true && field.get !== undefined) pending.push(Reflect.get(value, key))
      }
      const toJSON: unknown = (value as { readonly toJSON?: unknown }).toJSON
      if (typeof toJSON === "function") pending.push(toJSON.call(value))
    }
  } catch {
    return true
  }
  const structure = texts.join("\n")
  return redact(structure) !== structure
}
const MAX_WALKED = 10_000

// The most of a failed handler's text logged once it had to be redacted: its cause and stack, not a page.
const MAX_FAILURE_TEXT = 16 * 1024

const closing = Headers.fromInput({ connection: "close" })

// 401 says nothing (the verification guide asks for no detail); 400 names the reason (the sender is authenticated by
// then). A delivery refused before its body is read whole (`unread`: 413, 408, and the checks of the headers) has its
// connection closed, rather than the server reading the rest of a body that may never end.
// Rejecting a delivery, and logging it: once per reason at Warning (Error for a 500, our own misconfiguration: no
// secret), then at Debug until a new delivery is handled (a replay of a captured one is no reset) and a minute has
// passed (for a 400, a minute alone: see below). Anyone who can reach the endpoint can send unsigned requests, and a
// secret out of step fails every delivery and redelivery: one line each would flood the logs (the span and the metric
// still count each one), as would one per real delivery with forged requests in between.
const warnAgainAfterMillis = 60_000

const makeReject = () => {
  // Per reason: when it was last said above Debug, and whether a new delivery was handled since.
  const said = new Map<WebhookVerificationError["reason"], { at: number; handledSince: boolean }>()
  // On monotonic time: a wall clock set back an hour would otherwise keep an outage of 400s at Debug for that hour.
  const reject = (error: WebhookVerificationError, unread = false) =>
    Effect.flatMap(Monotonic.millis, (now) => {
      const status = statusOf[error.reason]
      const headers = unread || status === 413 || status === 408 ? closing : Headers.empty
      const response = status === 401 || status === 500 || status === 413 || status === 408
        ? HttpServerResponse.empty({ status, headers })
        : HttpServerResponse.unsafeJson({ error: error.reason }, { status, headers })
      const last = said.get(error.reason)
      // Most 400s come after the signature verified: each such is an authentic event refused (a payload the service
      // changed, a clock off), so it is said again once a minute while it lasts, not only after a delivery was handled.
      const loud = last === undefined ||
        ((last.handledSince || status === 400) && now - last.at >= warnAgainAfterMillis)
      if (loud) said.set(error.reason, { at: now, handledSince: false })
      const log = !loud ? Effect.logDebug : status === 500 ? Effect.logError : Effect.logWarning
      // What was wrong, for the operator: the error's text (for a body that does not decode, where and what was
      // expected; never a value).
      return log("effect-fin: webhook delivery rejected").pipe(
        Effect.annotateLogs({ reason: error.reason, status, detail: error.message.slice(0, 1024) }),
        Effect.zipRight(Spans.annotateOwn({ "fin.webhook.outcome": "rejected", "fin.webhook.reason": error.reason })),
        Effect.zipRight(Metric.increment(rejectionsOf(error.reason))),
        Effect.as(response)
      )
    })
  const verified = () => {
    for (const entry of said.values()) entry.handledSince = true
  }
  return { reject, verified }
}

// A body parser that ran before the handler (express.json() on Node, `await request.json()` on a web `Request`) left
// nothing to read: said so, rather than a signature that matches no secret (the empty rest of a Node stream) or a
// defect answered 500 without a word (a web `Request`'s used body stream is locked).
const bodyReadBefore = (source: unknown): boolean =>
  (Predicate.hasProperty(source, "bodyUsed") && source.bodyUsed === true) ||
  (Predicate.hasProperty(source, "readableEnded") && source.readableEnded === true)

// A request with `Connection: Upgrade` (`Upgrade: h2c`, offered by some HTTP/1.1 clients with a POST) reaches the app
// through Node's 'upgrade' event when the server has a listener for it (`HttpServer.serve` adds one): its body is then
// left on the socket, and the request's stream ends empty. Said so, rather than as a signature that matches no secret.
const takenAsUpgrade = (source: unknown): boolean =>
  Predicate.hasProperty(source, "upgrade") && source.upgrade === true &&
  !(Predicate.hasProperty(source, "method") && source.method === "CONNECT")

const upgradeMessage = "the delivery asked for a protocol upgrade (an Upgrade header) and the server took it as " +
  "one: its body is not readable by the handler; whatever adds the Upgrade header on the way must leave deliveries " +
  "as they are"

const readBeforeMessage = "the body was read before the handler (a body parser, or request.json()): " +
  "mount the handler where nothing reads the body first (see \"Do not parse the body before the handler\" in " +
  "the README)"

// The codings a header lists but the `harmless` ones (none: undefined), for a message. A body sent compressed (by a
// proxy on the way, say) would fail as a bad signature or as not JSON, pointing at the secret or at the sender: the
// coding is named instead (its first 64 characters, quoted: the sender's text). A header sent twice is one list (Node
// joins them with a comma).
const codingsBut = (header: string | undefined, harmless: ReadonlyArray<string>): string | undefined => {
  const value = header?.trim().toLowerCase()
  if (value === undefined) return undefined
  const harmful = value.split(",").some((coding) => coding.trim() !== "" && !harmless.includes(coding.trim()))
  return harmful ? value : undefined
}

const encodingOf = (header: string | undefined) => codingsBut(header, ["identity"])

// Node's server undoes `chunked` only: a body sent with another transfer coding (`gzip, chunked`, from a proxy that
// compresses hop by hop) reaches the handler compressed. `identity` (of HTTP/1.1's first version) changes nothing.
const transferCodingOf = (header: string | undefined) => codingsBut(header, ["chunked", "identity"])

const encodedMessage = (encoding: string, header = "Content-Encoding") =>
  `the body came with ${header} ${JSON.stringify(encoding.slice(0, 64))}: Fin documents no compression of ` +
  "deliveries, so whatever compressed it on the way (a proxy) must leave webhook deliveries as they are"

const tooLarge = (limit: number) => fail("body_too_large", `the body is larger than ${limit} bytes`)

/**
 * An `HttpApp` that receives Fin webhooks (mount it with `HttpRouter.post`):
 *
 * 1. checks `Content-Length` against `maxBodySize` (413), refuses a `Content-Encoding` other than `identity`, or a
 *    `Transfer-Encoding` other than `chunked` or `identity` (400: Fin documents no compression of deliveries), then
 *    reads the body on every runtime, stopping at the chunk that goes past that many bytes (413), within
 *    `bodyTimeout` (408);
 * 2. verifies the raw bytes (401 without detail), decodes the event and applies `maxAge` and `environment` (400);
 * 3. claims `event.id` and its `event_reference_id` in the store: 200 if the event was handled before, 409 while
 *    another delivery handles it; while another event of the same reference is being handled it waits (up to
 *    `referenceWait`, then 409), so events of one resource are handled one at a time, in the order checked next;
 * 4. answers 200 without calling the handlers if the event is a status event (`orderedEventTypes`) and a newer
 *    one of the same kind (`orderKey`) was handled for the same `event_reference_id` (stale), unless `deliverStale`;
 * 5. calls the handler for `event.type`, renewing the claim while it runs: 200 once it succeeds; 500 if it fails, runs
 *    past `handlerTimeout` or loses its claim, and the event is not marked handled, so a redelivery runs it again. A
 *    client that disconnects does not stop the handler: it runs to its end and the event is marked handled (nothing
 *    waits for it at shutdown: `makeHandler` does).
 *
 * Delivery is effectively once, not exactly once (a handler can succeed and the process die before the event is
 * marked handled): handlers must be idempotent.
 *
 * Throws `IllegalArgumentException` when an option is invalid: a size or duration that is zero (but `referenceWait`,
 * which may be), negative, NaN, infinite or not a duration, a `maxBodySize` that is no whole number, a
 * `handlerTimeout`, `bodyTimeout` or `referenceWait` over 24 days (past 2^31 - 1 ms a timer never fires), `secrets`
 * with no non-empty secret, one with whitespace, a control or an invisible formatting character at either end or one
 * that is not text, an `environment` other than `"sandbox"` and `"production"`, a `deliverStale` that is not a boolean
 * (`"true"` from configuration), a key that is no option (`maxBodysize`).
 *
 * @since 0.1.0
 * @category handler
 */
export const handler = <const H extends object>(
  options: HandlerOptions<H & Handlers> & OnlyEventTypes<H>
): HttpApp.Default<never, HandlersContext<H> | Scope.Scope> => makeApp(options)(detached)

/**
 * `handler` for an app that lives in a scope (a layer): closing the scope, as a server's shutdown does, waits for the
 * user handlers still running (each for at most `handlerTimeout` of work, then for the release of what it acquired
 * in its scope, which no timeout bounds: give a release that may hang a timeout of its own), so they end with their
 * finalizers and their events marked handled, instead of being cut off with the process and their claims held for
 * `claimTtl`. A delivery that arrives once the scope is closing gets 503 `{"outcome":"shutting_down"}`, and the
 * service delivers it again.
 *
 * Build the server inside this scope (in the layer returned to `Layer.unwrapScoped`, the server layer provided
 * there): it then closes first, so no delivery is accepted while the handlers drain.
 *
 * Dies with `IllegalArgumentException` (a defect) when an option is invalid, where `handler` throws it.
 *
 * @since 0.1.0
 * @category handler
 */
export const makeHandler = <const H extends object>(
  options: HandlerOptions<H & Handlers> & OnlyEventTypes<H>
): Effect.Effect<HttpApp.Default<never, HandlersContext<H> | Scope.Scope>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const app = makeApp(options)
    const running = yield* FiberSet.make<Answer>()
    // Deliveries admitted (past the shutdown check) and not yet forked or answered: the closing waits for them too, so
    // one that was claiming its event when the scope began to close still runs its handler, or frees its claim.
    let admitted = 0
    let closing = false
    const idle = yield* Deferred.make<void>()
    const leave = Effect.sync(() => {
      admitted -= 1
      if (closing && admitted === 0) Deferred.unsafeDone(idle, Exit.void)
    })
    // Added after the set, so it runs before the set's own finalizer, which interrupts what is still running. A
    // delivery's fiber, forked uninterruptible, would be waited for all the same; the wait is said here, not left to
    // how the fibers happen to be forked.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        return Effect.zipRight(admitted === 0 ? Effect.void : Deferred.await(idle), FiberSet.awaitEmpty(running))
      })
    )
    return app({
      fork: FiberSet.run(running),
      admit: (delivery, refused) =>
        Effect.suspend(() => {
          if (closing) return refused
          admitted += 1
          return Effect.ensuring(delivery, leave)
        })
    })
  })

// Where a claimed delivery runs to its end: a fiber detached from the request (see `handle`), tracked by `makeHandler`,
// whose `admit` answers `refused` once its scope is closing.
interface Runner {
  readonly fork: <R>(finish: Effect.Effect<Answer, never, R>) => Effect.Effect<Fiber.RuntimeFiber<Answer>, never, R>
  readonly admit: <A, E, R>(delivery: Effect.Effect<A, E, R>, refused: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const detached: Runner = { fork: Effect.forkDaemon, admit: (delivery) => delivery }

const makeApp = <const H extends object>(
  options: HandlerOptions<H & Handlers>
): (runner: Runner) => HttpApp.Default<never, HandlersContext<H> | Scope.Scope> => {
  const {
    bodyTimeout,
    claimTtl,
    dedupeTtl,
    handlerTimeout,
    limit,
    maxAge,
    orderTtl,
    referenceWait,
    secrets
  } = handlerSettings(
    options
  )
  const claimMillis = Duration.toMillis(claimTtl)
  // A user handler's failure as logged: as it is, unless its text holds a webhook secret (an error quoting its
  // configuration, say), which is then logged redacted, as text. The secrets are read when it is logged (rotated
  // since, maybe).
  const logFailure = (cause: Cause.Cause<unknown>) => {
    // As Effect's loggers render it (an error's own `cause` included), searched whole however long.
    const text = renderedOrUndefined(cause)
    const redact = (text: string) =>
      Redact.redactor(secrets.keys.flatMap((key) => textOf(key) ?? []), text.length)(text)
    // An error that is its own cause, or its cause's (a cycle), overflows Effect's rendering, in every logger too: said
    // without it, rather than not at all.
    if (text === undefined) {
      return Effect.logError(
        "effect-fin: webhook handler failed with an error whose causes make a cycle (not renderable): " +
          redact(squashedName(cause)).slice(0, MAX_FAILURE_TEXT)
      )
    }
    const redacted = redact(text)
    // The cause is handed to the loggers as it is only when nothing in it holds a secret: not its rendering alone,
    // which leaves out an error's own fields (`error.config`, a tagged error's fields, an object's with a `toString`),
    // but its whole structure as a logger that inspects or serialises it sees it.
    return redacted === text && !holdsSecret(cause, redact)
      ? Effect.logError("effect-fin: webhook handler failed", cause)
      // One message: a second would be a second `message` key in a logfmt line, which parsers drop.
      : Effect.logError(
        `effect-fin: webhook handler failed (a webhook secret redacted): ${redacted.slice(0, MAX_FAILURE_TEXT)}`
      )
  }
  const timedOut = () => `the handler ran longer than handlerTimeout (${Duration.format(handlerTimeout)})`
  const verifyOptions: VerifyOptions = { maxAge, environment: options.environment }
  const { reject, verified } = makeReject()
  const ownStore = makeMemoryDedupeStore()
  // Said once: a store provided beside the server rather than to it is otherwise silently replaced by this one.
  let ownStoreAnnounced = false
  const storeFor: Effect.Effect<WebhookDedupeStoreService> = options.store !== undefined
    ? Effect.succeed(options.store)
    : Effect.flatMap(Effect.serviceOption(WebhookDedupeStore), (provided) => {
      if (Option.isSome(provided)) return Effect.succeed(provided.value)
      if (ownStoreAnnounced) return Effect.succeed(ownStore)
      ownStoreAnnounced = true
      return Effect.as(
        Effect.logInfo(
          "effect-fin: no WebhookDedupeStore provided to this webhook handler; de-duplicating in this process's memory " +
            "(to share a store, give it as the handler's `store` option, or provide it to the server's layer with " +
            "Layer.provide: merged beside it, it does not reach the handler)"
        ),
        ownStore
      )
    })
  // Only documented types reach it (the data of others is kept as sent), so no key of Object's prototype.
  const unhandled = (type: string) => (options.handlers as Readonly<Record<string, unknown>>)[type] === undefined
  const handlerFor = (event: WebhookEvent) =>
    // Indexing by `event.type` picks the entry whose parameter is this very variant.
    options.handlers[event.type] as
      | ((event: WebhookEvent, delivery: Delivery) => Effect.Effect<unknown, unknown, HandlersContext<H>>)
      | undefined

  // A store outage is said once at Error, its end at Info, and every delivery in between at Debug (see `Outage`): the
  // service retries each delivery, often, and a line each would flood. One outage per store: served with several (one
  // per tenant, provided per request), one store's answers must not say the end of another's outage.
  const outages = new WeakMap<WebhookDedupeStoreService, Outage.Outage>()
  const outageOf = (store: WebhookDedupeStoreService): Outage.Outage => {
    const known = outages.get(store)
    if (known !== undefined) return known
    const outage = Outage.make()
    outages.set(store, outage)
    return outage
  }
  const outageBegins = (store: WebhookDedupeStoreService, error: WebhookDedupeStoreError) =>
    Effect.map(Monotonic.millis, (now) => outageOf(store).failed(error.operation, now))

  // A store of the user's own whose operation interrupts itself (a pool of its own shut down) has failed: left an
  // interruption, it would end the delivery as the server's shutdown does, and hold its claim until that expires.
  const guarded = <A>(
    store: WebhookDedupeStoreService,
    operation: string,
    self: Effect.Effect<A, WebhookDedupeStoreError>
  ) => {
    const outage = outageOf(store)
    return Effect.matchCauseEffect(self, {
      onFailure: (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.fail(new WebhookDedupeStoreError({ operation, message: "the store interrupted its operation" }))
          : Effect.failCause(cause),
      onSuccess: (answer) =>
        outage.down()
          ? Effect.flatMap(Monotonic.millis, (now) =>
            outage.answered(operation, now)
              ? Effect.as(Effect.logInfo("effect-fin: webhook de-duplication store available again"), answer)
              : Effect.succeed(answer))
          : Effect.succeed(answer)
    })
  }

  // Claims the event, polling while another event of its reference is being handled, for up to `referenceWait`. Runs
  // uninterruptibly but for the pauses (`restore`): a claim taken is always seen, so that it can be released.
  const claimWaiting = (
    store: WebhookDedupeStoreService,
    eventId: string,
    referenceId: string,
    restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  ) =>
    Effect.gen(function*() {
      const limit = Monotonic.plus(yield* Monotonic.millis, Duration.millis(referenceWait))
      let pause = firstPollMillis
      while (true) {
        const sentAt = yield* Monotonic.millis
        const claim = yield* guarded(store, "claim", store.claim(eventId, referenceId, claimTtl))
        if (claim._tag !== "ReferenceBusy" || Monotonic.reached(sentAt, limit)) return { claim, sentAt }
        // The last pause ends at the limit, not up to a pause past it: the 409 comes at `referenceWait` (a test that
        // moves the TestClock by it gets its answer).
        const left = Monotonic.left(yield* Monotonic.millis, limit)
        yield* restore(Effect.sleep(Duration.min(Duration.millis(pause), left)))
        pause = Math.min(pause * 2, maxPollMillis)
      }
    })

  // Renews a claim every third of its TTL for as long as it runs; fails once the claim is gone, or once it has expired
  // (counted from when the last successful renewal was sent) while the store could not be reached. On monotonic time,
  // as its timers: a wall clock set back would keep the handler running past its claim, one set forward stop it early.
  // The handler stops a tenth of the claim's time before the claim could lapse, whatever its renewals do (a store that
  // fails, or one that does not answer): from then on a redelivery may claim the event, and must not run beside it.
  const claimMargin = claimMillis / 10
  const unrenewed = "the claim on the event could not be renewed in time: the de-duplication store failed or was too slow"

  // One renewal, its answer or failure; none (Option) when it took longer than `millis`. Guarded: a renewal of the
  // user's store that interrupts itself is a failed one, tried again, not a lost claim.
  const renewWithin = (
    store: WebhookDedupeStoreService,
    eventId: string,
    referenceId: string,
    token: string,
    millis: number
  ) =>
    guarded(store, "renew", store.renew(eventId, referenceId, token, claimTtl)).pipe(
      Effect.either,
      Effect.timeoutTo({ duration: millis, onSuccess: Option.some, onTimeout: Option.none })
    )

  const keepClaim = (
    store: WebhookDedupeStoreService,
    eventId: string,
    referenceId: string,
    token: string,
    held: { at: number }
  ): Effect.Effect<never, ClaimLost> =>
    Effect.gen(function*() {
      let stopAt = held.at + claimMillis - claimMargin
      while (true) {
        // Every third of the claim's time, and sooner as its end nears (half of what is left), so that a renewal that
        // failed or was slow leaves time for another; with no time left for one, the handler stops.
        const wait = Math.min(claimMillis / 3, (stopAt - (yield* Monotonic.millis)) / 2)
        if (wait < claimMillis / 30) return yield* Effect.fail(new ClaimLost(unrenewed))
        yield* Effect.sleep(wait)
        const sentAt = yield* Monotonic.millis
        if (sentAt >= stopAt) return yield* Effect.fail(new ClaimLost(unrenewed))
        const renewed = yield* renewWithin(store, eventId, referenceId, token, stopAt - sentAt)
        if (Option.isNone(renewed)) return yield* Effect.fail(new ClaimLost(unrenewed))
        if (Either.isRight(renewed.value)) {
          if (!renewed.value.right) {
            return yield* Effect.fail(new ClaimLost("the claim on the event expired while its handler ran"))
          }
          held.at = sentAt
          stopAt = sentAt + claimMillis - claimMargin
        } else {
          // Every handler running renews: one line per handler and renewal, unless the outage was said already.
          const log = (yield* outageBegins(store, renewed.value.left)) ? Effect.logError : Effect.logDebug
          yield* log("effect-fin: could not renew a webhook claim; trying again").pipe(
            Effect.annotateLogs({ event_id: eventId, operation: "renew", reason: renewed.value.left.message })
          )
        }
      }
    })

  // After keepClaim gave up on a claim it could not renew in time, while the interrupted handler still finishes: best
  // effort, a renewal every thirtieth of the claim's time until one succeeds, then every third; stops once the
  // claim is found gone (another delivery may hold it by then), or once it has lapsed unrenewed.
  const renewOnward = (store: WebhookDedupeStoreService, eventId: string, referenceId: string, token: string) =>
    Effect.gen(function*() {
      // keepClaim gives up a tenth of the claim's time before it lapses, or a little sooner (too little left for a
      // renewal): past this, a renewal would find it gone.
      let lapsesAt = (yield* Monotonic.millis) + claimMargin + claimMillis / 15
      // First after a pause: a handler that stops at once (no finalizer to speak of) asks the store nothing more.
      let pause = claimMillis / 30
      while (true) {
        yield* Effect.sleep(pause)
        const sentAt = yield* Monotonic.millis
        if (sentAt >= lapsesAt) return
        const within = Math.min(claimMillis / 3, lapsesAt - sentAt)
        const renewed = yield* renewWithin(store, eventId, referenceId, token, within)
        const ok = Option.isSome(renewed) && Either.isRight(renewed.value)
        if (ok && !renewed.value.right) return
        if (ok) lapsesAt = sentAt + claimMillis
        pause = ok ? claimMillis / 3 : claimMillis / 30
      }
    })

  const storeUnavailable = (store: WebhookDedupeStoreService, error: WebhookDedupeStoreError, eventId: string) =>
    Effect.flatMap(outageBegins(store, error), (begins) => {
      const log = begins ? Effect.logError : Effect.logDebug
      return log("effect-fin: webhook de-duplication store unavailable; answering 500 so the service retries").pipe(
        Effect.annotateLogs({ event_id: eventId, operation: error.operation, reason: error.message }),
        Effect.zipRight(settleAs(500, "store_unavailable"))
      )
    })
  // The answer to a delivery whose store failed before its handler ran.
  const answerStoreFailure = (store: WebhookDedupeStoreService, eventId: string) => (error: WebhookDedupeStoreError) =>
    Effect.flatMap(storeUnavailable(store, error, eventId), (answer) => respond(answer.status, answer.outcome))
  const shuttingDown = respond(503, "shutting_down")

  // An event past maxAge that was handled before is a duplicate (200), so a delivery whose 200 was lost is not
  // answered 400 for ever, and one being handled right now is in progress (409), like every other event; the rest
  // are refused as too old, and the claim taken to tell is given back at once.
  const handledBefore = (event: WebhookEvent, tooOld: WebhookVerificationError) =>
    Effect.flatMap(storeFor, (store) =>
      Effect.uninterruptible(Effect.flatMap(
        guarded(store, "claim", store.claim(event.id, event.event_reference_id, claimTtl)),
        (claim) =>
          claim._tag === "Done"
            ? respond(200, "duplicate")
            : claim._tag === "InProgress"
            ? respond(409, "in_progress")
            : claim._tag === "Claimed"
            ? Effect.zipRight(
              guarded(store, "release", store.release(event.id, event.event_reference_id, claim.token)),
              reject(tooOld)
            )
            : reject(tooOld)
      )).pipe(Effect.catchTag("WebhookDedupeStoreError", answerStoreFailure(store, event.id))))

  const handle = (store: WebhookDedupeStoreService, decoded: Decoded, runner: Runner) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const { createdAt, event } = decoded
        yield* Spans.annotateOwn({ "fin.webhook.event_id": event.id, "fin.webhook.event_type": event.type })
        const referenceId = event.event_reference_id
        const { claim, sentAt } = yield* claimWaiting(store, event.id, referenceId, restore)
        // When the claim was last taken or renewed (keepClaim moves it on).
        const renewed = { at: sentAt }
        if (claim._tag === "Done") return yield* respond(200, "duplicate")
        if (claim._tag === "InProgress") return yield* respond(409, "in_progress")
        if (claim._tag === "ReferenceBusy") return yield* respond(409, "reference_busy")
        const userHandler = decoded.ignored ? undefined : handlerFor(event)
        // An event no handler takes is acknowledged and leaves no order: a status the user does handle (the other
        // version of it, say) must never be made stale by one that was not applied.
        const isOrdered = ordered.has(event.type) && userHandler !== undefined
        const key = orderKey(event.type, referenceId)
        const handled: Handled = isOrdered ? { referenceId, order: { key, createdAt, ttl: orderTtl } } : { referenceId }
        // A failed release leaves the claim to expire (claimTtl): the event is late, not lost. Suspended: a store that
        // acts when its method is called (not when the effect runs) must not release a claim that is still needed.
        const releaseClaim = guarded(
          store,
          "release",
          Effect.suspend(() => store.release(event.id, referenceId, claim.token))
        ).pipe(
          Effect.catchAll(() => Effect.void)
        )
        const run = Effect.gen(function*() {
          const last = isOrdered ? yield* guarded(store, "lastHandled", store.lastHandled(key)) : Option.none()
          const stale = Option.isSome(last) && last.value > createdAt
          if (stale && options.deliverStale !== true) {
            yield* guarded(store, "complete", store.complete(event.id, claim.token, handled, dedupeTtl))
            yield* Effect.logInfo("effect-fin: stale webhook event acknowledged, not handled").pipe(
              Effect.annotateLogs({ event_id: event.id, event_type: event.type })
            )
            return yield* settleAs(200, "stale")
          }
          // A claim answered late, or a slow stale check, may have left the claim lapsed (another delivery may run the
          // event now): the handler does not start then, where keepClaim would stop it only once it had begun. Nor
          // when too little is left for a renewal: keepClaim would stop it at once (its own test, below).
          const left = sentAt + claimMillis - claimMargin - (yield* Monotonic.millis)
          const late = userHandler !== undefined && left / 2 < claimMillis / 30
          const exit = yield* Effect.exit(
            late
              ? Effect.fail(unrenewed)
              : userHandler === undefined
              ? Effect.void
              // Interruptible even where the server runs the app uninterruptibly, so the timeout can stop it. Suspended:
              // a handler that throws before returning its effect fails here too, and frees its claim. Scoped
              // here: what it acquires is released before its event is marked handled or released (and its resource
              // freed), its claim renewed meanwhile; outside the timeout, which bounds the handler's work: a release
              // (a commit) ending after it would otherwise fail, and be run again by every redelivery, work done.
              // Once keepClaim gives up on a claim it could not renew, the handler is interrupted, but its finalizers
              // (a commit in a release) and uninterruptible regions still run: renewOnward goes on renewing it, as far
              // as the store answers, while the race waits for them, so a redelivery does not claim the event and run
              // beside them (not when the claim was found gone). Forked only then: the common case is one race.
              : Effect.suspend(() => {
                let onward: Fiber.RuntimeFiber<void> | undefined
                // Whether keepClaim stopped the handler (it ended first, failing or dying).
                let stopped = false
                const keep = keepClaim(store, event.id, referenceId, claim.token, renewed).pipe(
                  Effect.tapErrorCause((cause) => {
                    stopped = !Cause.isInterruptedOnly(cause)
                    return Option.exists(Cause.failureOption(cause), (error) => error.reason === unrenewed)
                      ? Effect.uninterruptible(Effect.map(
                        // Interruptible: a fiber forked here would inherit the uninterruptible region.
                        Effect.forkDaemon(Effect.interruptible(renewOnward(store, event.id, referenceId, claim.token))),
                        (fiber) => {
                          onward = fiber
                        }
                      ))
                      : Effect.void
                  }),
                  Effect.catchAllDefect((defect) => Effect.fail(new RenewalDied(defect)))
                )
                return Effect.raceFirst(
                  Effect.scoped(Effect.timeoutFail(
                    Effect.interruptible(Effect.suspend(() =>
                      userHandler(event, { stale, body: decoded.text, secret: decoded.secret })
                    )),
                    { duration: handlerTimeout, onTimeout: timedOut }
                  )).pipe(
                    // Stopped (its claim lost), its releases may still fail (a commit that dies): said, where the race
                    // drops the loser's exit.
                    Effect.onExit((exit) =>
                      stopped && Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
                        ? Effect.annotateLogs(logFailure(exit.cause), { event_id: event.id, event_type: event.type })
                        : Effect.void
                    )
                  ),
                  Effect.interruptible(keep)
                ).pipe(
                  // A renewal that died in renewOnward is the store's defect too, as one in keepClaim is, not a claim
                  // lost to an outage.
                  Effect.exit,
                  Effect.flatMap((result) =>
                    onward === undefined
                      ? result
                      : Effect.flatMap(Fiber.interrupt(onward), (ended) =>
                        Exit.isFailure(ended) && Cause.isDie(ended.cause)
                          ? Effect.fail(new RenewalDied(Cause.squash(ended.cause)))
                          : result)
                  ),
                  Effect.ensuring(Effect.suspend(() => onward === undefined ? Effect.void : Fiber.interrupt(onward)))
                )
              })
          )
          if (Exit.isFailure(exit)) {
            // A store that died renewing the claim is a defect of the store's, answered as its other defects are
            // (500 from the platform, outcome defect; the claim released on the way out), not a failed handler.
            const died = Cause.failureOption(exit.cause)
            if (Option.isSome(died) && died.value instanceof RenewalDied) return yield* Effect.die(died.value.defect)
            yield* releaseClaim
            // Not "handler failed" when it never ran: the operator looks at the store, not at the handler's code.
            const lost = Option.filter(Cause.failureOption(exit.cause), (e): e is ClaimLost => e instanceof ClaimLost)
            // Stopped for its claim, the store's doing: said as the store's, at Debug once its outage was said.
            const logged = late
              ? Effect.logWarning(`effect-fin: webhook handler not started: ${unrenewed}`)
              : Option.isSome(lost)
              ? (outageOf(store).down() ? Effect.logDebug : Effect.logWarning)(
                `effect-fin: webhook handler stopped: ${lost.value.reason}`
              )
              : logFailure(exit.cause)
            yield* logged.pipe(Effect.annotateLogs({ event_id: event.id, event_type: event.type }))
            // Counted as the store's too: an alert on failed handlers must not fire for a store's outage.
            return yield* settleAs(500, late || Option.isSome(lost) ? "store_unavailable" : "failed")
          }
          // The claim is still renewed while the event is marked handled: a store slow to answer must not let it lapse
          // (a redelivery would run the handler again beside a delivery answered 200). Said when it could not be kept,
          // unless marked meanwhile (a renewal refused as the event is done is no lost claim). Not for an event no
          // handler takes: there is nothing to run again, and its claim may have lapsed before (answered late).
          // A renewal that dies (the store's defect) keeps it no better: said, with the defect (the fork drops it).
          let marked = false
          const kept = keepClaim(store, event.id, referenceId, claim.token, renewed).pipe(
            Effect.tapErrorCause((cause) =>
              Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logWarning(
                "effect-fin: webhook handled, but its claim could not be kept while the event was marked handled " +
                  "(the de-duplication store failed or was too slow): a redelivery may run the handler again",
                ...(Cause.isDie(cause) ? [cause] : [])
              ).pipe(Effect.annotateLogs({ event_id: event.id, event_type: event.type }), Effect.unless(() => marked))
            )
          )
          const completing = guarded(store, "complete", store.complete(event.id, claim.token, handled, dedupeTtl))
          yield* userHandler === undefined ? completing : Effect.flatMap(
            Effect.fork(Effect.interruptible(kept)),
            (keeping) =>
              completing.pipe(Effect.tap(() => void (marked = true)), Effect.ensuring(Fiber.interrupt(keeping)))
          )
          return yield* settleAs(200, stale ? "stale" : "handled")
        })
        // Once claimed, the delivery runs to its end in a fiber of its own: a client that gives up (the service's own
        // timeout, shorter than the handler) does not stop the user's handler midway, to have it start again from
        // scratch on every redelivery. It finishes (within handlerTimeout) and is marked handled; meanwhile a
        // redelivery gets 409, then 200 duplicate. So it has its own span and its own scope (the request's closes
        // when the client goes), and logs a store failure itself, answered or not. A store that failed after the
        // claim must not hold the event and its resource until the claim expires.
        const finish = run.pipe(
          Effect.catchTag("WebhookDedupeStoreError", (error) =>
            Effect.zipRight(releaseClaim, storeUnavailable(store, error, event.id))),
          // Nor one of the user's own that died (a driver's bug): the delivery is a 500, and a redelivery runs it.
          // The outcome on this span too, as the request's gets it: first, as a release that dies too (the same
          // broken driver) would skip it. onError, not tapDefect: that release's defect joins the first rather than
          // replacing it.
          Effect.onError((cause) =>
            Cause.isDie(cause)
              ? Effect.zipRight(Spans.annotateOwn({ "fin.webhook.outcome": "defect" }), releaseClaim)
              : Effect.void
          ),
          Effect.scoped,
          (self) =>
            spanFailingOn500(self, (answer) => answer.status, "effect-fin.webhook.handle", {
              attributes: { "fin.webhook.event_id": event.id, "fin.webhook.event_type": event.type }
            })
        )
        // A delivery interrupted before that (while its claim was taken) ends here, and frees the claim.
        yield* Effect.onInterrupt(restore(Effect.void), () => releaseClaim)
        const answer = yield* Effect.flatMap(runner.fork(finish), (fiber) => restore(Fiber.join(fiber)))
        // A new delivery handled: the rejections' warnings start again. Not on a replay of a captured one, which
        // verifies too (a duplicate, too old, one whose handler fails and is released each time, or one older than
        // the last handled, stale each time it is replayed once its id is forgotten).
        if (answer.outcome === "handled") verified()
        return yield* respond(answer.status, answer.outcome)
      })).pipe(Effect.catchTag("WebhookDedupeStoreError", answerStoreFailure(store, decoded.event.id)))

  return (runner) => Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.method !== "POST") {
      return HttpServerResponse.empty({ status: 405, headers: Headers.set(closing, "allow", "POST") })
    }
    const contentLength = request.headers["content-length"]
    if (contentLength !== undefined) {
      if (!/^\d+$/.test(contentLength)) return yield* reject(malformed("the Content-Length header is not a number"), true)
      if (Number(contentLength) > limit) return yield* reject(tooLarge(limit))
    }
    // Checked before the body is read, so unsigned requests cost no body read.
    const parsed = Signature.check(request.headers)
    if (Either.isLeft(parsed)) return yield* reject(parsed.left, true)
    const encoding = encodingOf(request.headers["content-encoding"])
    if (encoding !== undefined) return yield* reject(malformed(encodedMessage(encoding)), true)
    const transfer = transferCodingOf(request.headers["transfer-encoding"])
    if (transfer !== undefined) {
      return yield* reject(malformed(encodedMessage(transfer, "Transfer-Encoding")), true)
    }
    if (bodyReadBefore(request.source)) return yield* reject(malformed(readBeforeMessage))
    if (takenAsUpgrade(request.source)) return yield* reject(malformed(upgradeMessage), true)
    const read = contentLength === "0"
      ? Effect.succeed(new Uint8Array(0))
      : Effect.flatMap(
        Bytes.readAtMost(request.stream, limit),
        Option.match({ onNone: () => Effect.fail(tooLarge(limit)), onSome: Effect.succeed })
      )
    const body = yield* read.pipe(
      Effect.catchTag("RequestError", () => Effect.fail(malformed("the body could not be read"))),
      // The platform runs the app uninterruptibly: the read is made interruptible so the timeout can end it, and the
      // 408 go out at once, rather than when the client closes the connection.
      Effect.interruptible,
      Effect.timeoutFail({
        duration: bodyTimeout,
        onTimeout: () => fail("body_timeout", `the body did not arrive within ${Duration.format(bodyTimeout)}`)
      })
    )
    const decoded = yield* verifyDecoded(body, parsed.right, secrets, verifyOptions, unhandled)
    yield* Spans.annotateOwn({ "fin.webhook.secret": decoded.secret })
    return yield* checkAge(decoded, verifyOptions).pipe(
      Effect.matchEffect({
        onFailure: (error) =>
          error.reason === "too_old"
            ? runner.admit(handledBefore(decoded.event, error), shuttingDown)
            : reject(error),
        onSuccess: (decoded) =>
          runner.admit(Effect.flatMap(storeFor, (store) => handle(store, decoded, runner)), shuttingDown)
      })
    )
  }).pipe(
    Effect.catchTag("WebhookVerificationError", reject),
    // A defect (a store's driver bug) is answered 500 by the platform, past `respond`: counted here, once.
    Effect.tapDefect(() =>
      Effect.zipRight(Spans.annotateOwn({ "fin.webhook.outcome": "defect" }), Metric.increment(deliveriesOf("defect")))
    ),
    (self) => spanFailingOn500(self, (response) => response.status, "effect-fin.webhook")
  )
}
