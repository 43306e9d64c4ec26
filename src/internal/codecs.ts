/**
 * The decoders of answers and the encoders of request bodies, each built once per schema and kept while it lives.
 *
 * @internal
 */
import type * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** A decoder or an encoder, built once per schema (building one per call is a measurable cost on the hot path). */
export type Decoder<A> = (u: unknown) => Either.Either<A, ParseResult.ParseError>

// The parser `make` builds of a schema, built on its first use and kept while the schema lives.
const perSchema = (make: (schema: Schema.Schema.AnyNoContext) => Decoder<unknown>) => {
  const made = new WeakMap<Schema.Schema.AnyNoContext, Decoder<unknown>>()
  return (schema: Schema.Schema.AnyNoContext): Decoder<unknown> => {
    let parser = made.get(schema)
    if (parser === undefined) made.set(schema, parser = make(schema))
    return parser
  }
}

const decoders = perSchema((schema) => Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "ignore" }))
// A key the body schema does not know (a misspelt optional field of a body passed by name) is refused, not dropped.
const encoders = perSchema((schema) =>
  Schema.encodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
)

/** The cached decoder of `schema`. */
export const decoderFor = <A, I>(schema: Schema.Schema<A, I, never>): Decoder<A> => decoders(schema) as Decoder<A>

/** The cached encoder of `schema` (a request body's), every issue reported. */
export const encoderFor = <B, J>(schema: Schema.Schema<B, J, never>): Decoder<J> => encoders(schema) as Decoder<J>
