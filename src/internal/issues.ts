/**
 * Turns Schema parse issues into safe `Issue`s: the path and the expected type, never the actual value (a decode
 * failure on a token response must not copy the token into an error).
 *
 * @internal
 */
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as SchemaAST from "effect/SchemaAST"
import { Issue, RequestValidationError } from "../FinError.js"
import * as Printable from "./printable.js"
import { short } from "./short.js"

// What a schema expects, in words: its own title or description (`an ISO 8601 date-time`, `a number`), else what its
// shape is (`an object with data`), never the schema's inner workings (`(Struct (Encoded side) <-> ...)`). A
// transformation is described by what it is decoded from (what the service sends).
const describe = (ast: SchemaAST.AST): string => {
  const own = annotated(ast)
  if (own !== undefined) return own
  switch (ast._tag) {
    case "Transformation":
      return describe(ast.from)
    case "Refinement":
      // A check of the schema's with no words of its own: its name, else what it checks and that it checks it.
      return Option.getOrElse(SchemaAST.getIdentifierAnnotation(ast), () => `${describe(ast.from)} (refined)`)
    case "TypeLiteral": {
      const keys = ast.propertySignatures.map((property) => String(property.name))
      return keys.length === 0 ? "an object" : `an object with ${keys.join(", ")}`
    }
    case "TupleType":
      return "an array"
    case "Union":
      // An optional field's `undefined` goes without saying.
      return ast.types.filter((type) => type._tag !== "UndefinedKeyword").map(describe).join(" or ")
    case "Literal":
      // JSON has no bigint: `1n` as Effect writes it (JSON.stringify would throw, a defect in place of the error).
      return ast.literal === null
        ? "null"
        : typeof ast.literal === "bigint"
        ? `${ast.literal}n`
        : JSON.stringify(ast.literal)
    default:
      return String(ast)
  }
}

// Ours have a phrase as title; Effect's own a word ("string", "nonEmptyString") and a phrase as description.
const annotated = (ast: SchemaAST.AST): string | undefined => {
  const title = Option.getOrUndefined(SchemaAST.getTitleAnnotation(ast))
  if (title?.includes(" ")) return title
  return Option.getOrUndefined(SchemaAST.getDescriptionAnnotation(ast)) ?? title
}

// A union member the value plainly is not, beside another member's real issue: `expected undefined` (an optional
// field) or `expected null` (a nullable one).
const isAbsentMember = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type" &&
  (issue.ast._tag === "UndefinedKeyword" || (issue.ast._tag === "Literal" && issue.ast.literal === null))

// The value is not of a member's type as a whole (no key within it, no check of the member's own): `Type`, also under
// a transformation whose encoded side it fails (a string read as something) and as every member of a union (literals).
const isPlainMismatch = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type" ||
  (issue._tag === "Transformation" && issue.kind === "Encoded" && isPlainMismatch(issue.issue)) ||
  (issue._tag === "Composite" && issue.ast._tag === "Union" && Array.isArray(issue.issues) &&
    (issue.issues as ReadonlyArray<ParseResult.ParseIssue>).every(isPlainMismatch))

// A key from the data (a record's, an unknown one) is written with its control characters, line breaks and bidi
// overrides escaped (`\u000a`), so that a path, and the message saying it, stays one line.
const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => {
    if (typeof key === "number") return `[${key}]`
    const name = Printable.printable(String(key))
    return i === 0 ? name : `.${name}`
  }).join("")

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
        const inners = issue.issues as ReadonlyArray<ParseResult.ParseIssue>
        const useful = inners.filter((inner) => !isAbsentMember(inner))
        // A value that is none of a union's plain members ("a" | "b" | a string read as Unlisted) is one issue
        // naming them all.
        if (issue.ast._tag === "Union" && useful.length > 1 && useful.every(isPlainMismatch)) {
          out.push(new Issue({ path: formatPath(path), expected: describe(issue.ast) }))
          return
        }
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
          expected: (trusted ? issue.message ?? annotatedMessage(issue) : undefined) ?? describe(issue.ast)
        })
      )
      return
    case "Missing":
      out.push(new Issue({ path: formatPath(path), expected: `${describe(issue.ast.type)} (missing)` }))
      return
    case "Unexpected":
      out.push(new Issue({ path: formatPath(path), expected: "no such key" }))
      return
    case "Forbidden":
      out.push(new Issue({ path: formatPath(path), expected: "a synchronous value" }))
      return
  }
}

// A filter's `message` annotation (`Schema.filter(p, { message: () => "a positive amount" })`), as the filter's own
// words: only when it gives its text at once (not an Effect); one that throws is no message.
const annotatedMessage = (issue: ParseResult.Type): string | undefined => {
  const annotation = SchemaAST.getMessageAnnotation(issue.ast)
  if (Option.isNone(annotation)) return undefined
  try {
    const message: unknown = annotation.value(issue)
    if (typeof message === "string") return message
    // `{ message, override }`: the text is the same either way here.
    const text = typeof message === "object" && message !== null
      ? (message as { readonly message?: unknown }).message
      : undefined
    if (typeof text === "string") return text
  } catch {
    // A message that cannot be had: the schema's description stands.
  }
  return undefined
}

/** The most issues an error keeps: enough to fix a request or a schema by, and a message still of a readable size. */
export const MAX_ISSUES = 20

/** Every safe issue of a parse failure (an error keeps the first `MAX_ISSUES` of them: see `told`). */
export const fromParseIssue = (issue: ParseResult.ParseIssue): ReadonlyArray<Issue> => {
  const out: Array<Issue> = []
  collect(issue, [], out)
  return out
}

/** One readable line: `source_amount: expected a positive finite number; ...`. */
export const summarize = (issues: ReadonlyArray<Issue>): string =>
  issues.map((i) => (i.path === "" ? `expected ${i.expected}` : `${i.path}: expected ${i.expected}`)).join("; ")

/**
 * What an error keeps of the issues `found`: the first `MAX_ISSUES`, and the line saying them, which ends with how many
 * more there were (`...; and 5 more`, `uncounted` more not even built), so that mending those told is not taken for
 * mending everything.
 */
export const told = (
  found: ReadonlyArray<Issue>,
  uncounted = 0
): { readonly issues: ReadonlyArray<Issue>; readonly summary: string } => {
  const { first, more } = firstOf(found, uncounted)
  const kept = first.map((issue) => {
    const path = short(issue.path, MAX_PATH)
    return path === issue.path ? issue : new Issue({ path, expected: issue.expected })
  })
  return { issues: kept, summary: `${summarize(kept)}${more}` }
}

/** The most characters of a path an error keeps (a key of the input's own, a megabyte long, is cut), then `...`. */
export const MAX_PATH = 1024


/** The first `MAX_ISSUES` of `found`, and the end of the line telling them: `; and 5 more`, or nothing. */
export const firstOf = <T>(
  found: ReadonlyArray<T>,
  uncounted = 0
): { readonly first: ReadonlyArray<T>; readonly more: string } => {
  const first = found.slice(0, MAX_ISSUES)
  const more = found.length - first.length + uncounted
  return { first, more: more > 0 ? `; and ${more} more` : "" }
}

/**
 * One input refused: `message` and what was expected, said in the message too (a log line shows only the message),
 * e.g. `Invalid search limit: expected a number of results, 0 or more`.
 */
export const refusal = (path: string, message: string, expected: string): RequestValidationError =>
  new RequestValidationError({ message: `${message}: expected ${expected}`, issues: [new Issue({ path, expected })] })

/**
 * Every message of a parse failure with its path, one line: `rates.USD/CAD: a finite rate > 0; ...`. Messages may
 * quote the values, so this is for options a program gives (the emulator's, the test layers'), never for data from
 * outside.
 */
export const describeAll = (error: ParseResult.ParseError): string =>
  allIssues(error).map(({ message, path }) => `${path === "" ? "" : `${path}: `}${message}`).join("; ")

/**
 * Every issue of a parse failure, its path written by `pathOf` (default `a.b.0`), but for an optional value's other
 * form beside a real problem with it ("fee: Expected undefined, actual {...}" beside what is wrong with the fee).
 * Messages may quote the values, as in `describeAll`.
 */
export const allIssues = (
  error: ParseResult.ParseError,
  pathOf: (path: ReadonlyArray<PropertyKey>) => string = (path) => path.join(".")
): Array<{ readonly path: string; readonly message: string }> => {
  let formatted: ReadonlyArray<ParseResult.ArrayFormatterIssue>
  try {
    formatted = ParseResult.ArrayFormatter.formatErrorSync(error)
  } catch {
    // Quoting a value nested deeper than the stack goes (200,000 brackets fit in an admin body of the emulator)
    // overflows it: the issues are then told without the values, as `fromParseIssue` tells them.
    return fromParseIssue(error.issue).map((issue) => ({ path: issue.path, message: `expected ${issue.expected}` }))
  }
  const issues = formatted.map((issue) => ({
    path: pathOf(issue.path),
    message: issue.message,
    // The path as keys, to tell a value's own problems from another's whose name it begins.
    keys: issue.path.map(String)
  }))
  const within = (inner: ReadonlyArray<string>, outer: ReadonlyArray<string>) =>
    inner.length >= outer.length && outer.every((key, i) => inner[i] === key)
  return issues.filter(({ keys, message }) =>
    !message.startsWith("Expected undefined,") ||
    !issues.some((other) => other.message !== message && within(other.keys, keys))
  ).map(({ message, path }) => ({ path, message }))
}
