/**
 * The token endpoint's answer: its schema (either documented envelope, the service's timestamps) and its decode, which
 * tells a failure in the envelope the service used.
 *
 * @internal
 */
import * as DateTime from "effect/DateTime"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Codecs from "./codecs.js"
import * as Timestamps from "./timestamp.js"

/** See `TokenProvider.parseTimestamp`. */
export const parseTimestamp = (text: string): number | undefined =>
  // No text (a field missing from untyped JSON) is no timestamp either, rather than a TypeError.
  typeof text === "string" ? Timestamps.toMillis(text.trim()) : undefined

// Whole milliseconds in the years 0000 to 9999 (what a decode gives), so that an `Arbitrary`'s values encode.
const Millis = Schema.Number.annotations({ arbitrary: () => Timestamps.arbitraryMillis })

const Timestamp = Schema.transformOrFail(Schema.String, Millis, {
  strict: true,
  decode: (text, _, ast) => {
    const millis = parseTimestamp(text)
    return millis === undefined ? ParseResult.fail(new ParseResult.Type(ast, text)) : ParseResult.succeed(millis)
  },
  // As the other timestamps are written (text the decode reads back, a year past 9999 included); a number that is no
  // time at all (NaN, past a Date's range) is refused, not thrown as `toISOString`'s RangeError.
  encode: (millis, _, ast) =>
    Option.match(DateTime.make(millis), {
      onNone: () => ParseResult.fail(new ParseResult.Type(ast, millis, "a time in epoch milliseconds")),
      onSome: (dateTime) => Timestamps.encode(DateTime.toUtc(dateTime), ast)
    })
}).annotations({ title: "a timestamp like 2025-12-28 10:34:45+00 or ISO 8601" })

/**
 * The access token goes into the Authorization header as `Bearer <token>`, which RFC 6750 spells in visible ASCII: one
 * with a blank, a control or another character (which undici or fetch refuse to send, or send mangled) is refused here,
 * not cached to fail every call until it expires; so is one past 8 KiB, which servers' header limits (Node's 16 KiB
 * for all of them) refuse with a 431 (a megabyte's token was sent, whole, with every call).
 */
export const BEARER = /^[\x21-\x7e]{1,8192}$/
const BearerToken = Schema.String.pipe(
  Schema.pattern(BEARER),
  Schema.annotations({ title: "a token of 1 to 8192 visible ASCII characters (no spaces)" })
)

// An optional field sent as null (as some serialisers write an absent one) is absent, not a failed token request.
const TokenFields = Schema.Struct({
  access_token: Schema.Redacted(BearerToken),
  access_token_ttl: Timestamp,
  refresh_token: Schema.optionalWith(Schema.Redacted(Schema.NonEmptyString), { nullable: true }),
  refresh_token_ttl: Schema.optionalWith(Timestamp, { nullable: true }),
  current_time: Schema.optionalWith(Timestamp, { nullable: true })
})

/** See `TokenProvider.TokenResponse`. */
export const TokenResponse = Schema.Union(TokenFields, Schema.Struct({ data: TokenFields })).pipe(
  Schema.transform(Schema.typeSchema(TokenFields), {
    strict: true,
    decode: (response) => ("data" in response ? response.data : response),
    encode: (fields) => fields
  })
)

// `TokenResponse` (either envelope), with a failure told in the envelope the service used (`data` holding an object,
// and no token, a null or an empty one at the top level), not also as the other's "data (missing)".
const decodeTopLevel = Codecs.decoderFor(TokenFields)
const decodeData = Codecs.decoderFor(Schema.Struct({ data: TokenFields }))
/** The decoded fields; `at` is where they were, for an issue found in them afterwards (`data.access_token_ttl`). */
export interface Located {
  readonly fields: typeof TokenResponse.Type
  readonly at: "" | "data."
}
const decodeUnwrapped: Codecs.Decoder<Located> = (json) =>
  Either.map(decodeTopLevel(json), (fields) => ({ fields, at: "" as const }))
const decodeWrapped: Codecs.Decoder<Located> = (json) =>
  Either.map(decodeData(json), (response) => ({ fields: response.data, at: "data." as const }))
/** `TokenResponse` as it is decoded from an answer (see above). */
export const decodeTokenResponse: Codecs.Decoder<Located> = (json) => {
  const wrapped = typeof json === "object" && json !== null && "data" in json && typeof json.data === "object" &&
    json.data !== null && (!("access_token" in json) || json.access_token === null || json.access_token === "")
  const [first, second] = wrapped ? [decodeWrapped, decodeUnwrapped] : [decodeUnwrapped, decodeWrapped]
  const decoded = first(json)
  return Either.isRight(decoded) ? decoded : Either.orElse(second(json), () => decoded)
}
