/**
 * What the compiler shows of `CountryCode`: its name, not the 249 literals it stands for, in hovers and messages.
 */
import { describe, expect, it } from "vitest"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

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
  }, 30_000)
})
