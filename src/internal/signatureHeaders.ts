/**
 * Reading and checking the signature headers of a webhook delivery: shared by `Webhooks` (which exports the header
 * names, algorithms and `HeadersInput` as its own) and the CLI's `webhook verify`, which checks its flags before it
 * waits for the body.
 *
 * @internal
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import { type WebhookFailureReason, WebhookVerificationError } from "../FinError.js"
// A type-only import: no cycle at run time.
import type { HeadersInput } from "./webhookVerify.js"

// The header names, algorithms and digest lengths, exported by `Webhooks` with their documentation; `Algorithm`, which
// `Webhooks` re-exports by its name, documented here: a consumer's emitted declarations print an alias through a path
// in `exports` only when that path exports the alias itself, not another alias of it (TS2742 or a path into dist/).
export const signatureHeader = "x-fin-signature"

export const algorithmHeader = "x-fin-signature-algorithm"

export const algorithms = Object.freeze(["sha256", "sha384", "sha512"] as const)

/**
 * A signature algorithm `verify` accepts (`x-fin-signature-algorithm`) and `sign` uses; one of `algorithms`.
 *
 * @since 0.1.0
 * @category models
 */
export type Algorithm = typeof algorithms[number]

export const digestLength: { readonly [A in Algorithm]: number } = Object.freeze({ sha256: 32, sha384: 48, sha512: 64 })

const isAlgorithm = (u: string): u is Algorithm => u === "sha256" || u === "sha384" || u === "sha512"

// A function found at `get` means the property is there: `hasProperty` and `isFunction` in one read (every
// verification reads the headers).
const isWebHeaders = (headers: HeadersInput): headers is globalThis.Headers =>
  typeof (headers as { readonly get?: unknown }).get === "function"

type Value = string | ReadonlyArray<string> | undefined

// Both headers, read in one pass over a record's keys. A record may spell a name in any case; one that gives a header
// under two spellings (a hand-made merge of two header sets) gives it twice: all its values, a list, which is refused
// as a repeated header, as HTTP would join them (not the one an order of keys happens to pick).
const readHeaders = (headers: HeadersInput): readonly [signature: Value, algorithm: Value] => {
  // From untyped code: no headers at all (API Gateway's `headers: null` for a request without any) hold no signature,
  // as a string or a number given for them does not, rather than a TypeError defect.
  const given: unknown = headers
  if (given === null || given === undefined) return [undefined, undefined]
  if (isWebHeaders(headers)) {
    return [headers.get(signatureHeader) ?? undefined, headers.get(algorithmHeader) ?? undefined]
  }
  const record: Readonly<Record<string, unknown>> = headers
  // By name first (an inherited or getter-backed record, a Proxy, as well), then any other spelling: a key is looked
  // at further only when it has the length of one of the names.
  let signature = valueOf(record[signatureHeader])
  let algorithm = valueOf(record[algorithmHeader])
  for (const key in record) {
    const isSignature = key.length === signatureHeader.length
    if (!isSignature && key.length !== algorithmHeader.length) continue
    const name = isSignature ? signatureHeader : algorithmHeader
    if (key === name || key.toLowerCase() !== name) continue
    const value = valueOf(record[key])
    if (value === undefined) continue
    if (isSignature) signature = joined(signature, value)
    else algorithm = joined(algorithm, value)
  }
  return [single(signature), single(algorithm)]
}

// What untyped code may give for a header (`null`, a number) is no value, in a list too.
const valueOf = (value: unknown): Value =>
  typeof value === "string" ? value : Array.isArray(value) ? value.filter(Predicate.isString) : undefined

const joined = (found: Value, value: string | ReadonlyArray<string>): Value =>
  found === undefined ? value : [...asList(found), ...asList(value)]

const asList = (value: string | ReadonlyArray<string>): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : value

// A list of one value (multi-value headers, as AWS Lambda passes them) is that value, an empty list no value (a
// missing signature, not a malformed one); a longer list stays a list, which no check accepts: a repeated signature or
// algorithm header is refused.
const single = (value: Value): Value =>
  typeof value === "string" || value === undefined || value.length > 1 ? value : value[0]

export const fail = (reason: WebhookFailureReason, message: string) => new WebhookVerificationError({ reason, message })

export interface SignatureHeaders {
  readonly algorithm: Algorithm
  /** Hex of the algorithm's digest length, checked. */
  readonly hex: string
}

const hexPattern = /^[0-9a-f]*$/i

// Repeated: given as a list, or joined with a comma as Node, web `Headers` and proxies join a repeated header (no hex
// digest or algorithm name holds one). Said so, or a proxy that copies the header reads as a malformed signature.
const isList = (value: string | ReadonlyArray<string> | undefined): value is ReadonlyArray<string> =>
  value !== undefined && typeof value !== "string"

const repeated = (name: string) => `${name} is repeated (a list, or values joined with a comma)`

/** What the messages call the two values: the headers, or what carries them (the CLI's flags). */
export interface Names {
  readonly signature: string
  readonly algorithm: string
}

const headerNames: Names = { signature: `the ${signatureHeader} header`, algorithm: `the ${algorithmHeader} header` }

/**
 * Reads and checks both headers, as `verify` does first. A signature that is not hex of the algorithm's digest length
 * can match no secret. `names` name the values in the messages.
 */
export const check = (
  headers: HeadersInput,
  names: Names = headerNames
): Either.Either<SignatureHeaders, WebhookVerificationError> => {
  const [signature, algorithmValue] = readHeaders(headers)
  if (signature === undefined || signature === "") {
    return Either.left(fail("missing_signature", `${names.signature} is missing`))
  }
  if (isList(algorithmValue) || algorithmValue?.includes(",")) {
    return Either.left(fail("unsupported_algorithm", repeated(names.algorithm)))
  }
  if (isList(signature) || signature.includes(",")) return Either.left(fail("bad_signature", repeated(names.signature)))
  // As sent by the service (a name in lower case) at no cost; otherwise trimmed and lower-cased.
  const algorithm = algorithmValue === undefined
    ? "sha256"
    : isAlgorithm(algorithmValue)
    ? algorithmValue
    : algorithmValue.trim() === ""
    ? "sha256"
    : algorithmValue.trim().toLowerCase()
  if (!isAlgorithm(algorithm)) {
    return Either.left(
      fail("unsupported_algorithm", `${names.algorithm} is not one of ${algorithms.join(", ")}`)
    )
  }
  const hex = signature.trim()
  if (hex.length !== digestLength[algorithm] * 2 || !hexPattern.test(hex)) {
    return Either.left(fail("bad_signature", `${names.signature} is not a hex ${algorithm} digest`))
  }
  return Either.right({ algorithm, hex })
}
