/**
 * Turns Schema parse issues into safe `Issue`s: the path and the expected type, never the actual value (a decode
 * failure on a token response must not copy the token into an error).
 *
 * @internal
 */
import * as ParseResult from "effect/ParseResult"
import * as SchemaAST from "effect/SchemaAST"
import { Issue } from "../FinError.js"

const describe = (ast: SchemaAST.AST | SchemaAST.Type): string => String(ast)

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")

// `trusted` is set below a refinement: the messages of filters are ours (or the user's schema's), written without the
// value, whereas other messages (JSON parsing, say) may quote the input.
const collect = (
  issue: ParseResult.ParseIssue,
  path: ReadonlyArray<PropertyKey>,
  out: Array<Issue>,
  trusted = false
): void => {
  switch (issue._tag) {
    case "Pointer":
      collect(issue.issue, path.concat(issue.path), out, trusted)
      return
    case "Composite":
      if (Array.isArray(issue.issues)) {
        // An optional field's union with `undefined` would add a useless "expected undefined" beside the real issue.
        const inners = issue.issues as ReadonlyArray<ParseResult.ParseIssue>
        const useful = inners.filter((inner) => !(inner._tag === "Type" && inner.ast._tag === "UndefinedKeyword"))
        for (const inner of useful.length > 0 ? useful : inners) collect(inner, path, out, trusted)
      } else {
        collect(issue.issues as ParseResult.ParseIssue, path, out, trusted)
      }
      return
    case "Refinement":
      collect(issue.issue, path, out, issue.kind === "Predicate")
      return
    case "Transformation":
      collect(issue.issue, path, out)
      return
    case "Type":
      out.push(
        new Issue({
          path: formatPath(path),
          expected: trusted && issue.message !== undefined ? issue.message : describe(issue.ast)
        })
      )
      return
    case "Missing":
      out.push(new Issue({ path: formatPath(path), expected: `${describe(issue.ast)} (missing)` }))
      return
    case "Unexpected":
      out.push(new Issue({ path: formatPath(path), expected: "no such key" }))
      return
    case "Forbidden":
      out.push(new Issue({ path: formatPath(path), expected: "a synchronous value" }))
      return
  }
}

/** The safe issues of a parse failure, at most `limit` of them. */
export const fromParseIssue = (issue: ParseResult.ParseIssue, limit = 20): ReadonlyArray<Issue> => {
  const out: Array<Issue> = []
  collect(issue, [], out)
  return out.slice(0, limit)
}

/** One readable line: `source_amount: expected a positive finite number; ...`. */
export const summarize = (issues: ReadonlyArray<Issue>): string =>
  issues.map((i) => (i.path === "" ? `expected ${i.expected}` : `${i.path}: expected ${i.expected}`)).join("; ")

/**
 * Every message of a parse failure with its path, one line: `rates.USD/CAD: a finite rate > 0; ...`. Messages may
 * quote the values, so this is for options a program gives (the emulator's, the test layers'), never for data from
 * outside.
 */
export const describeAll = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => `${issue.path.length === 0 ? "" : `${issue.path.join(".")}: `}${issue.message}`)
    .join("; ")
