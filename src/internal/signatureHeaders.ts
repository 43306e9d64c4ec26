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
// Declared in `Webhooks`, not here: a consumer's emitted declarations print an alias by the module that declares it,
// and this one has no path in `exports` (TS2742). A type-only import: no cycle at run time.
import type { HeadersInput } from "../Webhooks.js"

// The header names, algorithms and digest lengths, exported by `Webhooks` with their documentation.
export const signatureHeader = "x-fin-signature"

export const algorithmHeader = "x-fin-signature-algorithm"

export const algorithms = ["sha256", "sha384", "sha512"] as const

export type Algorithm = typeof algorithms[number]

export const digestLength: { readonly [A in Algorithm]: number } = { sha256: 32, sha384: 48, sha512: 64 }

const isAlgorithm = (u: string): u is Algorithm => u === "sha256" || u === "sha384" || u === "sha512"

const isWebHeaders = (headers: HeadersInput): headers is globalThis.Headers =>
  Predicate.hasProperty(headers, "get") && Predicate.isFunction(headers.get)

// `name` is lower case. A record may spell it in any case; one that gives it under two spellings (a hand-made merge of
// two header sets) gives it twice: all its values, a list, which is refused as a repeated header, as HTTP would join
// them (not the one an order of keys happens to pick).
const findHeader = (headers: HeadersInput, name: string): string | ReadonlyArray<string> | undefined => {
  // From untyped code: no headers at all (API Gateway's `headers: null` for a request without any) hold no signature,
  // as a string or a number given for them does not, rather than a TypeError defect.
  const given: unknown = headers
  if (given === null || given === undefined) return undefined
  if (isWebHeaders(headers)) return headers.get(name) ?? undefined
  const record: Readonly<Record<string, string | ReadonlyArray<string> | undefined>> = headers
  let found: string | ReadonlyArray<string> | undefined
  let values: Array<string> | undefined
  for (const key of Object.keys(record)) {
    const value = record[key]
    if (value === undefined || key.length !== name.length || (key !== name && key.toLowerCase() !== name)) continue
    if (found === undefined) found = value
    else (values ??= [...asList(found)]).push(...asList(value))
  }
  return values ?? found
}

const asList = (value: string | ReadonlyArray<string>): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : value

// A list of one value (multi-value headers, as AWS Lambda passes them) is that value, an empty list no value (a
// missing signature, not a malformed one); a longer list stays a list, which no check accepts: a repeated signature or
// algorithm header is refused.
const readHeader = (headers: HeadersInput, name: string): string | ReadonlyArray<string> | undefined => {
  const value = findHeader(headers, name)
  return typeof value === "string" || value === undefined || value.length > 1 ? value : value[0]
}

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

const repeated = (name: string) => `the ${name} header is repeated (a list, or values joined with a comma)`

/**
 * Reads and checks both headers, as `verify` does first. A signature that is not hex of the algorithm's digest length
 * can match no secret.
 */
export const check = (
  headers: HeadersInput
): Either.Either<SignatureHeaders, WebhookVerificationError> => {
  const signature = readHeader(headers, signatureHeader)
  if (signature === undefined || signature === "") {
    return Either.left(fail("missing_signature", `the ${signatureHeader} header is missing`))
  }
  const algorithmValue = readHeader(headers, algorithmHeader)
  if (isList(algorithmValue) || algorithmValue?.includes(",")) {
    return Either.left(fail("unsupported_algorithm", repeated(algorithmHeader)))
  }
  if (isList(signature) || signature.includes(",")) return Either.left(fail("bad_signature", repeated(signatureHeader)))
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
      fail("unsupported_algorithm", `the signature algorithm is not one of ${algorithms.join(", ")}`)
    )
  }
  const hex = signature.trim()
  if (hex.length !== digestLength[algorithm] * 2 || !hexPattern.test(hex)) {
    return Either.left(fail("bad_signature", `the ${signatureHeader} header is not a hex ${algorithm} digest`))
  }
  return Either.right({ algorithm, hex })
}
