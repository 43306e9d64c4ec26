import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
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
    expect(expected(Schema.Struct({ k: Schema.optional(Schema.Literal("a", "b")) }), { k: "secret-c" })).toBe(
      `k: expected "a" or "b"`
    )
    expect(expected(Schema.Struct({ o: Schema.Struct({ x: Schema.String }) }), { o: 5 })).toBe("o: expected an object with x")
    expect(expected(Schema.Struct({ o: Schema.String }), {})).toBe("o: expected a string (missing)")
  })

  it("a check of the schema's is named by its identifier, else said to be one", () => {
    const filtered = Schema.String.pipe(Schema.filter((s) => s === "x"))
    expect(expected(Schema.Struct({ id: filtered.annotations({ identifier: "AccountId" }) }), { id: "secret-p" })).toBe(
      "id: expected AccountId"
    )
    expect(expected(Schema.Struct({ status: filtered }), { status: "secret-p" })).toBe("status: expected a string (refined)")
  })
})
