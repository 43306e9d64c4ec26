/**
 * Runs the command line on Node; loaded by `bin.ts` once the optional peers are known to be installed.
 *
 * @internal
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { failureLine } from "./failureLine.js"
import { run, servesUntilStopped } from "./main.js"

// A command stopped by a signal (Ctrl-C, a supervisor's SIGTERM) exits as shells expect (128 + the signal's number),
// never 0: `effect-fin quote --json > quote.json && next` must not go on with an empty answer. The emulator serves
// until it is stopped: a signal is its normal end.
const serves = servesUntilStopped(process.argv.slice(2))
const signals = { SIGINT: 2, SIGTERM: 15 } as const
let stoppedBy: keyof typeof signals | undefined
for (const signal of Object.keys(signals) as Array<keyof typeof signals>) {
  process.once(signal, () => {
    stoppedBy ??= signal
  })
}

// Standard output that cannot be written (a full disk, a pipe closed early) is said in one line, exit 1: not Node's
// stack trace of an unhandled 'error' event, and never 0 (`effect-fin quote --json > quote.json && next`).
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  const line = failureLine("StdoutError", `cannot write to standard output (${error.code ?? error.message})`)
  process.stderr.write(`${line}\n`)
  process.exit(1)
})
// Standard error that cannot be written (its reader gone) loses the logs and failure lines only, which nothing else
// could carry: not the answer on standard output, nor the command's own exit code (Node would throw its EPIPE as
// uncaught at the next line written there, exit 1 before the answer).
process.stderr.on("error", () => {})

NodeRuntime.runMain(Effect.provide(run(process.argv), NodeContext.layer), {
  disableErrorReporting: true,
  // `run` logs to stderr; the runtime's own pretty logger would write to stdout.
  disablePrettyLogger: true,
  teardown: (exit, onExit) => {
    if (Exit.isSuccess(exit)) return onExit(typeof process.exitCode === "number" ? process.exitCode : 0)
    if (!Cause.isInterruptedOnly(exit.cause)) return onExit(1)
    if (serves) return onExit(0)
    const line = failureLine("Interrupted", `interrupted${stoppedBy === undefined ? "" : ` (${stoppedBy})`}`)
    process.stderr.write(`${line}\n`)
    onExit(128 + signals[stoppedBy ?? "SIGINT"])
  }
})
