/**
 * The `effect-fin` command line: quotes, subdivisions, webhook verification and the local emulator, configured from
 * `FIN_*` variables. Human tables by default, `--json` for machines; every failure is one line starting with the error
 * tag, and a non-zero exit code.
 *
 * @since 0.1.0
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as FinError from "../FinError.js"
import * as Printable from "../internal/printable.js"
import * as Retry from "../internal/retry.js"
import { version } from "../internal/version.js"
import * as Snapshot from "../../scripts/lib/main.js"
import { commandOf, globalsAfterCommand, logLevels, logLevelValues, usageError, valueless } from "./argv.js"
import { emulator } from "./emulator.js"
import * as FailureLine from "./failureLine.js"
import { quote } from "./quote.js"
import * as Render from "./render.js"
import { printedAsJson } from "./shared.js"
import { bundledDataDir, snapshotArgs } from "./snapshot.js"
import { subdivisions } from "./subdivisions.js"
import { colourOn, stderrLogs } from "./terminal.js"
import { webhook } from "./webhook.js"

/**
 * How `run` is started.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions {
  /**
   * The folder of the snapshot bundled with the package: what `cross-check` compares with unless `--out` says
   * otherwise, wherever the command is run from. Default: the installed package's own data/ (found through its
   * exports), as the `effect-fin` binary has it.
   */
  readonly dataDir?: string | undefined
}

/**
 * Whether the command line (`process.argv.slice(2)`) runs the emulator, which serves until a signal stops it: the
 * command, not any argument (`webhook verify --signature emulator` is not the emulator). `--log-level` is the one
 * option before a command that takes a value.
 *
 * @since 0.1.0
 * @category running
 */
export const servesUntilStopped = (args: ReadonlyArray<string>): boolean => commandOf(args) === "emulator"

/**
 * The `effect-fin` command and its subcommands: `quote`, `subdivisions`, `webhook verify`, `emulator`. `snapshot` and
 * `cross-check` (named in its description) are not among them: `run` dispatches those before this parser sees them,
 * so a program that mounts `command` itself does not get them.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make("effect-fin").pipe(
  Command.withDescription(
    "Fin Orchestration API from the command line, configured by FIN_* variables: FIN_CLIENT_ID and " +
      "FIN_CLIENT_SECRET (for calls to the service), FIN_ENVIRONMENT (sandbox or production), FIN_BASE_URL (the " +
      "emulator's address, say); the README lists the others (FIN_TIMEOUT, FIN_MAX_RETRIES...). Also: " +
      "`effect-fin snapshot --help` (rebuild or check the ISO 3166-2 snapshot) and `effect-fin cross-check --help` " +
      "(compare it with the API)"
  ),
  Command.withSubcommands([quote, subdivisions, webhook, emulator])
)

// Its subcommands, by name.
const commands = Command.getSubcommands(command)

// The shells @effect/cli's built-in `--completions` writes a script for.
const shells = ["sh", "bash", "fish", "zsh"]

// The line added to the parser's own "Invalid subcommand for effect-fin - use one of ...", which it says whatever was
// wrong: its list has no `snapshot` or `cross-check`, which `run` dispatches before it, but only as the first
// argument; `webhook`'s own subcommand misspelt, or a shell `--completions` does not know, are said as such.
const commandHint = (args: ReadonlyArray<string>): Option.Option<string> => {
  const completions = args.findIndex((arg) => arg === "--completions" || arg.startsWith("--completions="))
  const given = args[completions]
  const shell = given?.startsWith("--completions=") ? given.slice("--completions=".length) : args[completions + 1]
  if (completions !== -1 && !shells.includes(shell ?? "")) {
    return Option.some(`effect-fin: --completions takes one of ${shells.join(", ")}`)
  }
  const named = commandOf(args)
  return named === "snapshot" || named === "cross-check"
    ? Option.some(`effect-fin: '${named}' comes first, before any option (effect-fin ${named} --help)`)
    : named === "webhook"
    ? Option.some("effect-fin: webhook's one subcommand is verify (effect-fin webhook verify --help)")
    : HashMap.has(commands, named ?? "")
    ? Option.none()
    : Option.some("effect-fin: or 'snapshot', 'cross-check' (the subdivisions snapshot: see their --help)")
}

// sysexits.h's EX_TEMPFAIL: a failure worth a later try (`Retry.worthALaterTry`), so a script may run the command
// again (a quote or a lookup changes nothing); any other failure is 1.
const exitTryLater = 75

const worthRetrying = (error: unknown): boolean => FinError.isFinError(error) && Retry.worthALaterTry(error)

/**
 * Runs the command line on `argv` (as `process.argv`), printing any failure as one line.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>, options: RunOptions = {}) => {
  const args = argv.slice(2)
  // The snapshot tool has its own flags (and --help); it runs as is rather than through @effect/cli's parser. It
  // writes to the streams itself, quoting arguments, files and the service, in no colour: its text is made printable
  // on the way, escape sequences and all.
  const [sub, ...rest] = args
  if (sub === "snapshot" || sub === "cross-check") {
    const dataDir = options.dataDir ?? bundledDataDir()
    const parsed = snapshotArgs(sub, rest, dataDir)
    if (Either.isLeft(parsed)) {
      return usageError(Printable.lines(parsed.left))
    }
    return Effect.flatMap(
      Effect.promise(() =>
        Snapshot.main(parsed.right, {
          program: "effect-fin snapshot",
          bundledDir: dataDir,
          stdout: (text) => void process.stdout.write(Printable.lines(text)),
          stderr: (text) => void process.stderr.write(Printable.lines(text))
        })
      ),
      (code) => Effect.sync(() => {
        process.exitCode = code
      })
    )
  }
  // @effect/cli's built-in `--wizard` prompts on the terminal, writing its own colour codes: with no terminal on
  // standard input (a pipe, /dev/null, a CI job) it would wait for ever for answers that cannot come.
  // @effect/cli takes `--wizard=true` (`=1`, `=yes`, `=on`) too: every `--wizard=` form is refused here (one that is
  // false is a usage error there anyway).
  if (args.some((arg) => arg === "--wizard" || arg.startsWith("--wizard=")) && process.stdin.isTTY !== true) {
    return usageError("effect-fin: --wizard asks its questions on a terminal, and standard input is none")
  }
  // First: `--log-level --json` is a level not given, not a level "--json".
  const missing = valueless(args)
  if (missing !== undefined) return usageError(missing)
  // @effect/cli answers a log level it does not know (`--log-level verbose`, `--log-level Debug`) with "Received
  // unknown argument: '--log-level'", as if the option did not exist: the value is named here, with the levels it takes.
  const badLevel = logLevelValues(args).find((level) => !logLevels.includes(level))
  if (badLevel !== undefined) {
    return usageError(Render.printable(
      `effect-fin: --log-level: expected one of ${logLevels.join(", ")} (lower case), got ${JSON.stringify(badLevel)}`
    ))
  }
  // An argument holding an escape character is shown escaped wherever it is quoted; one that is a colour code the
  // parser uses too would take the parser's own codes with it, so such a run prints no colour at all.
  const colour = (stream: { readonly isTTY?: boolean | undefined }) =>
    colourOn(stream) && !args.some((arg) => arg.includes("\x1b"))
  // A run without `--json` prints its failures as text even after one with it, in one process (a program or a test).
  const reset = Effect.sync(() => FailureLine.setJson(false))
  const parsed = [...argv.slice(0, 2), ...globalsAfterCommand(args)]
  return Effect.zipRight(reset, Command.run(command, { name: "effect-fin", version })(parsed)).pipe(
    // Option names as written: @effect/cli's default case-insensitive matching consumes `--JSON` (or `--OFFLINE`,
    // `--FROM USD` with its value) and then finds no value under `--json`, so the option was silently dropped (a
    // table for a script that asked JSON, a network call for `--OFFLINE`). A usage error instead.
    Effect.provide(CliConfig.layer({ isCaseSensitive: true })),
    // Logs (a fallback's warning, say) go to stderr: stdout carries only the answer, which `--json` keeps parseable.
    Effect.provide(Logger.replace(Logger.defaultLogger, stderrLogs(colour(process.stderr)))),
    Effect.tapErrorCause((cause) => Effect.sync(() => {
      process.exitCode = Option.exists(Cause.failureOption(cause), worthRetrying) ? exitTryLater : 1
    })),
    Effect.catchAll((error) =>
      // @effect/cli has already printed a usage error (one line, then a blank one): exit 2, as `snapshot` and the
      // usage errors of most tools, so a script tells it from a failed call (1). Ours are one line with the tag.
      ValidationError.isValidationError(error)
        ? Effect.zipRight(
          ValidationError.isCommandMismatch(error)
            ? Option.match(commandHint(args), { onNone: () => Effect.void, onSome: Console.error })
            : Effect.void,
          Effect.sync(() => {
            process.exitCode = 2
          })
        )
        : Predicate.isObject(error) && printedAsJson.has(Cause.originalError(error))
        ? Effect.void
        : Console.error(Render.errorLine(error))
    ),
    // A defect (a bug, or a value no code path expected) would otherwise end the process with exit 1 and not a word
    // (the runtime's own report is off): one line too.
    Effect.catchAllDefect((defect) => {
      const said = Predicate.hasProperty(defect, "message") && typeof defect.message === "string"
        ? defect.message.split("\n")[0]!
        : String(defect)
      return Console.error(FailureLine.failureLine("Defect", `unexpected failure: ${said}`))
    }),
    (program) =>
      Effect.flatMap(Effect.console, (console) =>
        Effect.withConsole(
          program,
          Render.printableConsole(console, { out: colour(process.stdout), err: colour(process.stderr) }, args)
        ))
  )
}
