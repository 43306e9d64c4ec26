/**
 * What the compiler shows of `CountryCode`: its name, not the 249 literals it stands for, in hovers and messages.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { iso31661Alpha3ToAlpha2 } from "iso-3166"
import ts from "typescript"
import * as CountryCode from "../src/CountryCode.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

const shown = (source: string): string => {
  const file = join(root, "test", "__country-code-probe.ts")
  const options: ts.CompilerOptions = {
    strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: []
  }
  const host = ts.createCompilerHost(options)
  const read = host.readFile
  host.readFile = (name) => name === file ? source : read(name)
  const exists = host.fileExists
  host.fileExists = (name) => name === file || exists(name)
  const program = ts.createProgram([file], options, host)
  const checker = program.getTypeChecker()
  const statement = program.getSourceFile(file)!.statements.at(-1) as ts.VariableStatement
  const declaration = statement.declarationList.declarations[0]!
  return checker.typeToString(checker.getTypeAtLocation(declaration.name), undefined, ts.TypeFormatFlags.NoTruncation)
}

describe("CountryCode as the compiler shows it", () => {
  it("keeps its name inside other types (Option, Effect)", () => {
    const header = `import * as CountryCode from "../src/CountryCode.js"\n`
    expect(shown(`${header}export const code = CountryCode.fromAlpha2("US")`)).toBe("Option<CountryCode>")
    expect(shown(`${header}export const code = CountryCode.parse("us")`))
      .toBe("Effect<CountryCode, RequestValidationError, never>")
    expect(shown(`${header}export const code = [CountryCode.toAlpha2("USA")]`)).toBe("Alpha2Code[]")
  }, 120_000)

  it("keeps the good members of a union with a bad one in Checked", () => {
    const header = `import * as CountryCode from "../src/CountryCode.js"\n`
    // A union with one bad member keeps its good ones: the compiler's message then points at "US", not at "USA".
    expect(shown(`${header}export declare const checked: CountryCode.Checked<"USA" | "US">`))
      .toBe(`"USA" | "expected an ISO 3166-1 alpha-3 country code of the service, e.g. \\"USA\\""`)
    // As fromAlpha2's and the subdivision codes' checks do.
    expect(shown(`${header}export declare const checked: CountryCode.CheckedAlpha2<"US" | "USA">`))
      .toBe(`"US" | "expected an ISO 3166-1 alpha-2 country code, e.g. \\"US\\""`)
    const subdivisions = `import type * as Subdivisions from "../src/Subdivisions.js"\n`
    expect(shown(`${subdivisions}export declare const checked: Subdivisions.CheckedCode<"US-CA" | "CA">`))
      .toBe(`"US-CA" | "expected an ISO 3166-2 subdivision code, e.g. \\"US-CA\\""`)
  }, 120_000)
})

describe("CountryCode.validate", () => {
  it("refuses with one issue at `country` saying what is expected, for callers that map issues to fields", () => {
    for (const input of ["usa", "US", " USA", 840]) {
      const error = Effect.runSync(Effect.flip(CountryCode.validate(input)))
      expect(error.issues.map((i) => ({ path: i.path, expected: i.expected })), String(input)).toEqual([
        { path: "country", expected: "an ISO 3166-1 alpha-3 country code of the service" }
      ])
    }
  })
})

describe("CountryCode schema", () => {
  it("reports a refused value in one line, not once per code", () => {
    const decode = Schema.decodeUnknownEither(Schema.Struct({ country: CountryCode.CountryCode }))
    expect(decode({ country: "USA" })).toEqual(Either.right({ country: "USA" }))
    const refused = decode({ country: "usa" })
    expect(Either.isLeft(refused) && refused.left.message.split("\n")).toEqual([
      // The schema's name (JSON Schema and OpenAPI refer to it by it) in the outline; the issue says what is expected.
      "{ readonly country: effect-fin.CountryCode }",
      "└─ [\"country\"]",
      "   └─ Expected an ISO 3166-1 alpha-3 country code of the service"
    ])
  })
})

// The 49 countries without subdivisions are checked by no subdivision code's prefix: the table is checked against
// another source (the iso-3166 package, a dev dependency), so that no two of its rows can be swapped unseen.
describe("CountryCode.toAlpha2", () => {
  it("gives each of the 249 codes its ISO 3166-1 alpha-2 code, as the iso-3166 package has it", () => {
    const table = Object.fromEntries(CountryCode.alpha3Codes.map((code) => [code, CountryCode.toAlpha2(code)]))
    expect(table).toEqual(iso31661Alpha3ToAlpha2)
  })
})
