/**
 * Webhook secrets, signature checks and the verification of a delivery, re-exported by `Webhooks`.
 *
 * @internal
 */
import * as Headers from "@effect/platform/Headers"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as FinConfig from "../FinConfig.js"
import { WebhookVerificationError } from "../FinError.js"
import * as Durations from "./duration.js"
import * as Issues from "./issues.js"
import * as OptionNames from "./optionNames.js"
import * as Padded from "./padded.js"
import * as Signature from "./signatureHeaders.js"
import * as Wiped from "./wiped.js"
import { type WebhookCryptoService, cryptoIn, readsViewOnly, utf8 } from "./webhookCrypto.js"
import { Envelope, Id, UnknownEvent, WebhookEvent, WebhookEventFromEnvelope, parseTimestamp } from "./webhookEvents.js"
import type { HandlerOptions, Handlers } from "./webhookHandler.js"

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

export const paddedMessage =
  "holds a webhook secret that starts or ends with whitespace, a control character or an invisible formatting one " +
    "(a trailing newline, say)"

export const checkEnvironment = (where: Where, environment: unknown): void => {
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
export const textOf = (secret: unknown): string | undefined => {
  if (typeof secret === "string") return secret
  if (!Redacted.isRedacted(secret)) return undefined
  const value = Wiped.valueOf(secret)
  return typeof value === "string" ? value : undefined
}

const notASecret: SecretList = { keys: [], matched: [], padded: false, notText: true }

// Empty secrets are dropped: an HMAC under an empty key proves nothing.
export const secretList = (secrets: Secrets): SecretList => {
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

export const notTextMessage = "must be text or Redacted text (not wiped), or a list of them"

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

export const fail = Signature.fail

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
const scratch: { readonly [A in Signature.Algorithm]: Uint8Array } = {
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
  const length = Signature.digestLength[algorithm]
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
  readonly "x-fin-signature-algorithm": Signature.Algorithm
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
  algorithm: Signature.Algorithm = "sha256"
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
    if (!Signature.algorithms.includes(algorithm)) {
      return misused(`effect-fin: the signature algorithm is not one of ${Signature.algorithms.join(", ")}`)
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

export interface Decoded {
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
export const MAX_FUTURE_SKEW_MILLIS = 5 * 60_000

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

export const malformed = (message: string, issue?: ParseResult.ParseIssue) => {
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

// An age rounded up, a limit it passed rounded down (a maxAge of "1500 micros" read "2ms ago, over maxAge (2ms)").
const formatMillis = (millis: number, round: (millis: number) => number = Math.ceil): string =>
  Durations.formatMillis(Duration.millis(millis), round)

// With `maxAge`: refused when older than that, or dated more than 5 minutes ahead of the Clock.
export const checkAge = (
  decoded: Decoded,
  options: VerifyOptions
): Effect.Effect<Decoded, WebhookVerificationError> => {
  if (options.maxAge === undefined) return Effect.succeed(decoded)
  const maxAge = Duration.toMillis(Duration.decode(options.maxAge))
  return Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const age = now - DateTime.toEpochMillis(decoded.event.created_at)
    // By how much, and against what limit, so that a log says whether the event or the limit is wrong.
    return age > maxAge
      ? Effect.fail(
        fail(
          "too_old",
          `the event was created ${formatMillis(age)} ago, over maxAge (${formatMillis(maxAge, Math.floor)})`
        )
      )
      : age < -MAX_FUTURE_SKEW_MILLIS
      ? Effect.fail(
        fail("from_future", `the event is dated ${formatMillis(-age)} ahead of this clock, over the 5 minutes allowed`)
      )
      : Effect.succeed(decoded)
  })
}

// The signature, then the event decoded, not yet checked for age.
export const verifyDecoded = (
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

// The functions verifying a delivery on their own, and the handler: who says an option is wrong.
type VerifyingFunction = "verify" | "verifyWithSecret"

type Where = "handler" | VerifyingFunction

// The handler's options, checked once when it is built: a NaN or negative value (an unset variable read as a number,
// say) would otherwise switch off the body limit or the de-duplication without a word, and no secret would refuse
// every delivery.
export const invalidOption = (where: Where, message: string) =>
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
export const checkOptionNames = (where: Where, options: object): void => {
  const [shown] = OptionNames.unknown(options, handlerOptionNames)
  if (shown !== undefined) {
    throw invalidOption(where, `"${shown}" is no option of Webhooks.${where === "handler" ? "HandlerOptions" : "VerifyOptions"}`)
  }
}

export const checkedDuration = (
  where: Where,
  name: string,
  input: Duration.DurationInput | undefined,
  allowZero: boolean,
  timer = false
) => Durations.checkOrThrow(input, allowZero, `effect-fin: Webhooks.${where}: ${name}`, timer)
