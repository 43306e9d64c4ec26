/**
 * What the command line writes besides its answers: colour on a terminal only, and the log lines on standard error
 * (text, or JSON lines for a command given `--json`).
 *
 * @internal
 */
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as Printable from "../internal/printable.js"
import * as FailureLine from "./failureLine.js"
import * as Render from "./render.js"

// @effect/cli writes its help and usage errors in colour whatever the output is: a file, a pipe (or NO_COLOR) gets
// them as plain text.
const noColour = () => process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== ""
/** Whether `stream` gets colour: a terminal, with NO_COLOR unset or empty. */
export const colourOn = (stream: { readonly isTTY?: boolean | undefined }) => stream.isTTY === true && !noColour()

// A log line may quote the service (a fallback's warning names its error, message and all): its text, and the text of
// its annotations, escaped whole before the logger adds its own colour codes (the console keeps those, and would keep
// a colour code of the service's that could hide the rest of the line).
const printableLogs = <Output>(logger: Logger.Logger<unknown, Output>): Logger.Logger<unknown, Output> =>
  Logger.mapInputOptions(logger, (options: Logger.Logger.Options<unknown>) => ({
    ...options,
    message: printableValue(options.message),
    annotations: HashMap.map(options.annotations, printableValue)
  }))

const printableValue = (value: unknown): unknown =>
  typeof value === "string" ? Render.printable(value) : Array.isArray(value) ? value.map(printableValue) : value

/**
 * Log lines on standard error: as text, or, once a command given `--json` runs, one JSON document each (Effect's
 * structured form: message, logLevel, timestamp, annotations...), so that standard error is JSON lines as its failure
 * line is, for a script's `jq`. Escaped as the answer's JSON is.
 */
export const stderrLogs = (colors: boolean): Logger.Logger<unknown, void> => {
  const text = printableLogs(Logger.prettyLogger({ stderr: true, colors }))
  const json = Logger.withConsoleError(Logger.map(Logger.structuredLogger, (entry) => Printable.json(entry)))
  return Logger.make((options) => (FailureLine.isJson() ? json : text).log(options))
}
