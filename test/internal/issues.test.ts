import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Issues from "../../src/internal/issues.js"

// What a decode error says was expected, for the schemas a user may give HttpTransport.request.
const expected = <A, I>(schema: Schema.Schema<A, I>, input: unknown): string => {
  const result = Schema.decodeUnknownEither(schema, { errors: "all" })(input)
  return Either.isLeft(result) ? Issues.summarize(Issues.fromParseIssue(result.left.issue)) : "decoded"
}

describe("Issues", () => {
  it("says what was expected in words, never the value", () => {
    expect(expected(Schema.Struct({ n: Schema.Int }), { n: 1.5 })).toBe("n: expected an integer")
    expect(expected(Schema.Struct({ s: Schema.NonEmptyString }), { s: "" })).toBe("s: expected a non empty string")
    expect(expected(Schema.Literal("a", "b"), "secret-c")).toBe(`expected "a" or "b"`)
    expect(expected(Schema.Struct({ v: Schema.Literal(1n, 2n) }), { v: "secret-c" })).toBe(`v: expected 1n or 2n`)
    expect(expected(Schema.Struct({ k: Schema.optional(Schema.Literal("a", "b")) }), { k: "secret-c" })).toBe(
      `k: expected "a" or "b"`
    )
    expect(expected(Schema.Struct({ o: Schema.Struct({ x: Schema.String }) }), { o: 5 })).toBe("o: expected an object with x")
    const pair = Schema.Struct({ x: Schema.String, y: Schema.Number })
    expect(expected(Schema.Struct({ o: pair }), { o: 5 })).toBe("o: expected an object with x, y")
    // A schema's own title of one word stands when it has no description (Effect's keywords have one: `a string`).
    expect(expected(Schema.Struct({ o: pair.annotations({ title: "Point" }) }), { o: 5 })).toBe("o: expected Point")
    expect(expected(Schema.Struct({ t: Schema.Tuple(Schema.String) }), { t: 5 })).toBe("t: expected an array")
    // A schema with no words of its own is written as Effect writes it.
    expect(expected(Schema.Struct({ t: Schema.TemplateLiteral("id_", Schema.String) }), { t: 5 })).toBe(
      "t: expected `id_${string}`"
    )
    expect(expected(Schema.Struct({ o: Schema.String }), {})).toBe("o: expected a string (missing)")
  })

  it("a check of the schema's is named by its identifier, else said to be one", () => {
    const filtered = Schema.String.pipe(Schema.filter((s) => s === "x"))
    expect(expected(Schema.Struct({ id: filtered.annotations({ identifier: "AccountId" }) }), { id: "secret-p" })).toBe(
      "id: expected AccountId"
    )
    expect(expected(Schema.Struct({ status: filtered }), { status: "secret-p" })).toBe("status: expected a string (refined)")
  })

  it("a filter's message is kept, returned or given as its message annotation (Effect's way to word a filter)", () => {
    const returned = Schema.Number.pipe(Schema.filter((n) => n > 0 || "a positive amount"))
    const annotated = Schema.Number.pipe(Schema.filter((n) => n > 0, { message: () => "a positive amount" }))
    const overriding = Schema.Number.pipe(
      Schema.filter((n) => n > 0, { message: () => ({ message: "a positive amount", override: true }) })
    )
    for (const amount of [returned, annotated, overriding]) {
      expect(expected(Schema.Struct({ amount }), { amount: -5 })).toBe("amount: expected a positive amount")
    }
    // One that throws gives way to the schema's description.
    const throwing = Schema.Number.pipe(Schema.filter((n) => n > 0, {
      message: () => {
        throw new Error("no")
      }
    }))
    expect(expected(Schema.Struct({ amount: throwing }), { amount: -5 })).toBe("amount: expected a number (refined)")
  })

  it("an optional or nullable member goes without saying", () => {
    const optional = Schema.Struct({ k: Schema.Union(Schema.String, Schema.Number, Schema.Undefined) })
    expect(expected(optional, { k: true })).toBe("k: expected a string or a number")
    expect(expected(Schema.Struct({ n: Schema.NullOr(Schema.Number) }), { n: "x" })).toBe("n: expected a number")
    // Unless there is no other: then they are what was expected, not nothing.
    expect(expected(Schema.Struct({ k: Schema.optional(Schema.Null) }), { k: 5 })).toBe(
      "k: expected null; k: expected undefined"
    )
  })

  // A message other than a filter's may quote the input (a user's declared schema, JSON parsing): never kept.
  it("a declared schema's own message, which may quote the value, gives way to its title, under a filter too", () => {
    const thing = Schema.declare<number, number, readonly []>([], {
      decode: () => (input, _, ast) => ParseResult.fail(new ParseResult.Type(ast, input, `bad value ${String(input)}`)),
      encode: () => (input) => ParseResult.succeed(input as number)
    }, { title: "a thing" })
    expect(expected(Schema.Struct({ s: thing }), { s: 12345 })).toBe("s: expected a thing")
    expect(expected(Schema.Struct({ s: thing.pipe(Schema.filter(() => true)) }), { s: 12345 })).toBe("s: expected a thing")
  })

  it("a key the schema does not have is said to be none", () => {
    const result = Schema.decodeUnknownEither(Schema.Struct({ a: Schema.String }), { onExcessProperty: "error" })({
      a: "x",
      extra: 1
    })
    expect(Either.isLeft(result) && Issues.summarize(Issues.fromParseIssue(result.left.issue))).toBe(
      "extra: expected no such key"
    )
  })

  it("describeAll leaves out an optional option's 'Expected undefined' beside a real problem inside it", () => {
    const schema = Schema.Struct({ fee: Schema.optional(Schema.Struct({ fixed: Schema.NonNegative })) })
    const result = Schema.decodeUnknownEither(schema, { errors: "all" })({ fee: { fixed: -1 } })
    const described = Either.isLeft(result) ? Issues.describeAll(result.left) : "decoded"
    expect(described).toContain("fee.fixed: ")
    expect(described).not.toContain("Expected undefined")
    // A problem with the value as a whole has no path to put before it.
    const root = Schema.decodeUnknownEither(Schema.Number)("x")
    expect(Either.isLeft(root) && Issues.describeAll(root.left)).toBe(`Expected number, actual "x"`)
  })

  it("a value none of a union's plain members is, one read from a string among them: one issue naming all", () => {
    const Unlisted = Schema.transform(Schema.String, Schema.Struct({ unlisted: Schema.String }), {
      strict: true,
      decode: (s) => ({ unlisted: s }),
      encode: (u) => u.unlisted
    })
    expect(expected(Schema.Struct({ k: Schema.Union(Schema.Literal("a", "b"), Unlisted) }), { k: 5 })).toBe(
      `k: expected "a" or "b" or a string`
    )
    // A string that fails to be read as a member is no plain mismatch: not told it should have been a string.
    expect(expected(Schema.Struct({ k: Schema.Union(Schema.Literal("a"), Schema.NumberFromString) }), { k: "x" }))
      .toBe(`k: expected "a"; k: expected a string to be decoded into a number`)
  })

  it("a schema that decodes asynchronously, run synchronously, is said to need a synchronous value", () => {
    const slow = Schema.transformOrFail(Schema.String, Schema.String, {
      strict: true,
      decode: (s) => Effect.delay(Effect.succeed(s), "1 millis"),
      encode: ParseResult.succeed
    })
    expect(expected(Schema.Struct({ s: slow }), { s: "secret-s" })).toBe("s: expected a synchronous value")
  })

  it("told counts the issues not even built among those left out", () => {
    expect(Issues.told([], 3).summary).toBe("; and 3 more")
  })

  it("describeAll leaves out 'Expected undefined' beside another problem at the same path", () => {
    const result = Schema.decodeUnknownEither(Schema.Struct({ n: Schema.optional(Schema.Number) }), { errors: "all" })({
      n: "x"
    })
    expect(Either.isLeft(result) && Issues.allIssues(result.left)).toEqual([
      { path: "n", message: `Expected number, actual "x"` }
    ])
    // Alone, it is the problem: kept.
    const alone = Schema.decodeUnknownEither(Schema.Struct({ u: Schema.Undefined }), { errors: "all" })({ u: 5 })
    expect(Either.isLeft(alone) && Issues.allIssues(alone.left)).toEqual([
      { path: "u", message: "Expected undefined, actual 5" }
    ])
  })

  it("allIssues of a value nested deeper than the stack quotes says the issues without the value", () => {
    let deep: unknown = 1
    for (let i = 0; i < 200_000; i++) deep = [deep]
    const result = Schema.decodeUnknownEither(Schema.Struct({ a: Schema.Number }), { errors: "all" })({ a: deep })
    expect(Either.isLeft(result) && Issues.allIssues(result.left)).toEqual([
      { path: "a", message: "expected a number" }
    ])
  })
})
