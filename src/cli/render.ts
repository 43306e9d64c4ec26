/**
 * Plain-text tables and one-line errors for the command line.
 *
 * @internal
 */
import type * as Console from "effect/Console"
import * as ConfigError from "effect/ConfigError"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as FinError from "../FinError.js"
import * as Printable from "../internal/printable.js"

// Config.redacted hides the whole message of a missing secret, so the variable names are listed here instead.
const configProblems = (error: ConfigError.ConfigError): Array<string> => {
  switch (error._op) {
    case "And":
    case "Or":
      return [...configProblems(error.left), ...configProblems(error.right)]
    case "MissingData":
      return [`${error.path.join(".")} is not set`]
    default: {
      const name = error.path.join(".")
      // The checks' own messages name the variable already ("FIN_BASE_URL must use https").
      if (error.message.startsWith(`${name} `)) return [error.message]
      return [`${name}: ${error.message === "<redacted>" ? "invalid" : error.message}`]
    }
  }
}

/** `text` with what would act on a terminal written as `\uXXXX` (see `internal/printable`). */
export const printable = Printable.printable

/** `value` as indented JSON, safe to print (a webhook's signed body is the sender's text). */
export const json = (value: unknown): string => Printable.json(value, 2)

/** JSON text as written (its numbers too), on one line, safe to print (see `internal/printable`). */
export const compactJson = Printable.compactJson

// The columns a cell takes on a terminal: a combining mark takes none (Jordan's "Al ‘A̅şimah" takes 10 columns, in 11
// code units). Not the emoji presentation selector or the keycap mark: "❤️" and "1️⃣" are drawn two columns wide.
const columns = (cell: string): number => cell.replace(/(?![\ufe0f\u20e3])[\p{Mn}\p{Me}]/gu, "").length

/** A left-aligned table with a header row and a rule under it; its cells printable. */
export const table = (header: ReadonlyArray<string>, body: ReadonlyArray<ReadonlyArray<string>>): string => {
  const rows = body.map((row) => row.map(printable))
  const widths = header.map((h, i) => Math.max(columns(h), ...rows.map((row) => columns(row[i] ?? ""))))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((cell, i) => cell + " ".repeat(widths[i]! - columns(cell))).join("  ").trimEnd()
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

/** Two columns: label and value (printable). */
export const pairs = (rows: ReadonlyArray<readonly [string, string]>): string => {
  const width = Math.max(...rows.map(([label]) => label.length))
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${printable(value)}`).join("\n")
}

// effect-fin's ApiErrors say the status, operation and field errors on one line already; one made elsewhere (a user's
// test double: "Validation failed") gets the status and operation and every field error added.
const apiErrorText = (error: FinError.ApiError): string => {
  const where = error.operation === undefined ? `${error.status}` : `${error.status} on ${error.operation}`
  const message = error.message.split("\n")[0]!
  if (error.operation !== undefined && message.includes(where)) return message
  const fields = (error.fieldErrors ?? []).map((f) => `${f.field}: ${f.message}`.replace(/\s+/g, " ")).join("; ")
  return `${where}: ${message}${fields === "" ? "" : ` (${fields})`}`
}

/**
 * `effect-fin: ApiError: The service answered 422 on POST /v1/fee-calculation: ...`: the tag first, so scripts can
 * match on it; one printable line.
 */
export const errorLine = (error: unknown): string => {
  const { message, tag } = described(error)
  return printable(tag === undefined ? `effect-fin: ${message}` : `effect-fin: ${tag}: ${message}`)
}

/**
 * `{"error":{"_tag":"ApiError","status":422,...}}`: the failure of a `--json` command as one printable line of JSON.
 * effect-fin's errors with all their fields, as their schema encodes them (`FinError`, `WebhookVerificationError`);
 * any other with its tag and the message `errorLine` gives it.
 */
export const errorJson = (error: unknown): string => Printable.json({ error: encoded(error) })

const encodeFinError = Schema.encodeUnknownOption(Schema.Union(FinError.FinError, FinError.WebhookVerificationError))

// The tag first, as in the text line.
const encoded = (error: unknown): unknown =>
  Option.getOrElse(Option.map(encodeFinError(error), ({ _tag, ...fields }) => ({ _tag, ...fields })), () => {
    const { message, tag } = described(error)
    return { _tag: tag ?? "Error", message }
  })

// The error's tag (none for an error without one) and its message's first line.
const described = (error: unknown): { readonly tag?: string; readonly message: string } => {
  if (ConfigError.isConfigError(error)) {
    return { tag: "ConfigError", message: [...new Set(configProblems(error))].join("; ") }
  }
  if (error instanceof FinError.ApiError) return { tag: "ApiError", message: apiErrorText(error) }
  if (Predicate.hasProperty(error, "_tag") && typeof error._tag === "string") {
    const message = Predicate.hasProperty(error, "message") && typeof error.message === "string" ? error.message : ""
    // The platform's errors may say nothing themselves (its ServeError); their cause then does.
    const cause = Predicate.hasProperty(error, "cause") && error.cause instanceof Error ? error.cause.message : ""
    return { tag: error._tag, message: (message === "" ? cause : message).split("\n")[0]! }
  }
  return { message: error instanceof Error ? error.message.split("\n")[0]! : String(error) }
}

/**
 * `console` with what its `log` and `error` print, its `unsafe` ones too (where the logger writes), made printable
 * (`internal/printable`'s `screen`): @effect/cli's usage errors quote the arguments as given, control characters
 * included, and a logged cause is the errors' own text. An argument of `argv` quoted is escaped whole, a colour code
 * of its own too (`screen` could not tell it from the parser's). The colour codes are taken out for an output that is
 * not a terminal (`colour` off for it). Everything else is the console's own, bound to it (a console may be a class,
 * with getters and private state).
 */
export const printableConsole = (
  console: Console.Console,
  colour: { readonly out: boolean; readonly err: boolean },
  argv: ReadonlyArray<string> = []
): Console.Console => printableMethods(console, colour, argv, true)

const printableMethods = <C extends object>(
  console: C,
  colour: { readonly out: boolean; readonly err: boolean },
  argv: ReadonlyArray<string>,
  unsafeToo: boolean
): C => {
  const printable = (on: boolean) => (args: ReadonlyArray<unknown>): Array<unknown> =>
    args.map((arg) => typeof arg === "string" ? Printable.screen(Printable.quoting(arg, argv), on) : arg)
  const out = printable(colour.out)
  const err = printable(colour.err)
  const call = (key: string, args: Array<unknown>): unknown =>
    (Reflect.get(console, key, console) as (...args: ReadonlyArray<unknown>) => unknown).apply(console, args)
  // Over an empty object, not the console itself: a frozen console's methods could only be handed out unchanged.
  return new Proxy({} as C, {
    get: (_, key) => {
      if (key === "log") return (...args: ReadonlyArray<unknown>) => call("log", out(args))
      if (key === "error") return (...args: ReadonlyArray<unknown>) => call("error", err(args))
      const value: unknown = Reflect.get(console, key, console)
      if (key === "unsafe" && unsafeToo && typeof value === "object" && value !== null) {
        return printableMethods(value, colour, argv, false)
      }
      return typeof value === "function" ? value.bind(console) : value
    },
    has: (_, key) => key in console
  })
}
