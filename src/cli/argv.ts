/**
 * The command line as `run` reads it before @effect/cli's parser: the command named, the options given no value, the
 * log levels, @effect/cli's own options moved after the command's, and the usage error for what is found wrong.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import type * as Usage from "@effect/cli/Usage"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { emulator } from "./emulator.js"
import { quote } from "./quote.js"
import { subdivisions } from "./subdivisions.js"
import { verify } from "./webhook.js"

/** The command named on the command line: its first word that is no option (nor `--log-level`'s value). */
export const commandOf = (args: ReadonlyArray<string>): string | undefined =>
  args.find((arg, i) => !arg.startsWith("-") && args[i - 1] !== "--log-level")

/** The levels @effect/cli's built-in `--log-level` takes: Effect's, in lower case. */
export const logLevels = ["all", "trace", "debug", "info", "warning", "error", "fatal", "none"]

/** The values given to `--log-level` (`--log-level X` or `--log-level=X`), up to a `--` that ends the options. */
export const logLevelValues = (args: ReadonlyArray<string>): Array<string> => {
  const end = args.indexOf("--")
  const options = end === -1 ? args : args.slice(0, end)
  return options.flatMap((arg, i) =>
    arg.startsWith("--log-level=")
      ? [arg.slice("--log-level=".length)]
      : arg === "--log-level" && i + 1 < options.length
      ? [options[i + 1]!]
      : []
  )
}

// @effect/cli's own options, which it reads on any command line.
const builtIns = ["--help", "-h", "--version", "--wizard", "--completions", "--log-level"]

// Each command's options (read from its own usage, so a new one is in them), and those of them that take a value.
// @effect/cli reads one given no value as no option at all: `quote --from` is "Received unknown argument: '--from'",
// and `quote --from $CURRENCY --to CAD` with the variable unset takes `--to` as the currency, then calls `CAD` unknown.
const commandOptions: ReadonlyMap<
  string,
  { readonly command: string; readonly options: ReadonlySet<string>; readonly takingValues: ReadonlySet<string> }
> = new Map(
  Object.entries({
    quote: ["quote", Command.getUsage(quote)],
    subdivisions: ["subdivisions", Command.getUsage(subdivisions)],
    webhook: ["webhook verify", Command.getUsage(verify)],
    emulator: ["emulator", Command.getUsage(emulator)]
  } as const).map(([word, [command, usage]]) => {
    const named = namedIn(usage)
    const optionsOf = (some: ReadonlyArray<Usage.Named>) =>
      some.flatMap((one) => one.names.filter((name) => name.startsWith("-")))
    return [word, {
      command,
      options: new Set([...optionsOf(named), ...builtIns]),
      takingValues: new Set([...optionsOf(named.filter((one) => Option.isSome(one.acceptedValues))), "--log-level"])
    }]
  })
)

function namedIn(usage: Usage.Usage): Array<Usage.Named> {
  switch (usage._tag) {
    case "Named":
      return [usage]
    case "Optional":
    case "Repeated":
      return namedIn(usage.usage)
    case "Alternation":
    case "Concat":
      return [...namedIn(usage.left), ...namedIn(usage.right)]
    default:
      return []
  }
}

/**
 * The line for the first option of the command named that is given no value: last, or followed by one of its options
 * (or by the `--` that ends them). Another text, even one starting with `--`, is its value to the parser (`--search
 * --x` searches for "--x"). Not when `--help` or `--version` is asked (not as a value): the parser shows it anyway.
 */
export const valueless = (args: ReadonlyArray<string>): string | undefined => {
  const named = commandOptions.get(commandOf(args) ?? "")
  if (named === undefined) return undefined
  const end = args.indexOf("--")
  const options = end === -1 ? args : args.slice(0, end + 1)
  const takesValue = (i: number) => i >= 0 && named.takingValues.has(options[i]!)
  if (options.some((arg, i) => (arg === "--help" || arg === "-h" || arg === "--version") && !takesValue(i - 1))) {
    return undefined
  }
  const missing = options.find((_, i) =>
    takesValue(i) && (i + 1 === options.length || options[i + 1] === "--" || named.options.has(options[i + 1]!))
  )
  return missing === undefined
    ? undefined
    : `effect-fin: ${missing} needs a value (see effect-fin ${named.command} --help)`
}

/**
 * @effect/cli reads its own `--help` (`-h`) and `--log-level` only before a command's own options and arguments:
 * `quote --from USD --help` was "Received unknown argument: '--help'", and `--log-level debug` so too. Given after
 * them (not as an option's value, not past a `--`), they are moved to follow the command's name.
 */
export const globalsAfterCommand = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const word = commandOf(args)
  const named = commandOptions.get(word ?? "")
  if (word === undefined || named === undefined) return args
  const end = args.indexOf("--")
  const options = end === -1 ? args : args.slice(0, end)
  // The command's words as given (`webhook verify`): the options go after them, or are left where they are.
  const words = named.command.split(" ")
  const first = args.indexOf(word)
  if (words.some((w, k) => args[first + k] !== w)) return args
  const after = first + words.length
  const moved: Array<string> = []
  const kept: Array<string> = []
  for (let i = after; i < options.length; i++) {
    const arg = options[i]!
    // An option taking a value is read with it: `--search -h` searches for "-h".
    const pair = named.takingValues.has(arg) ? options.slice(i, i + 2) : [arg]
    i += pair.length - 1
    const global = arg === "--help" || arg === "-h" || arg === "--log-level" || arg.startsWith("--log-level=")
    if (global) moved.push(...pair)
    else kept.push(...pair)
  }
  return moved.length === 0 ? args : [...args.slice(0, after), ...moved, ...kept, ...args.slice(options.length)]
}

/** A usage error found before the parser runs: its line on standard error, exit code 2 (as the parser's own). */
export const usageError = (line: string) =>
  Effect.zipRight(Console.error(line), Effect.sync(() => void (process.exitCode = 2)))
