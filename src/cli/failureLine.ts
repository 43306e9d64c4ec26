/**
 * The line the process prints for a failure outside the command's own effect, JSON when the command asked for it.
 *
 * @internal
 */
import * as Render from "./render.js"

// Whether the command running was given `--json`: what the process itself says of a failure it sees outside the
// command (standard output that cannot be written, a signal) is then JSON too. Module state, not the command's: the
// process's own handlers (in start.ts) print after the command has ended, or while it still runs.
let json = false

/** Whether the command now running was given `--json` (set as it starts, reset before each run). */
export const setJson = (on: boolean): void => {
  json = on
}

/** Whether the command now running was given `--json`: its log lines are JSON too. */
export const isJson = (): boolean => json

/**
 * The line for a failure outside the command (`message`: "interrupted (SIGINT)", "cannot write to standard output
 * (EPIPE)"): `{"error":{"_tag":tag,"message":...}}` when the command was given `--json`, else `effect-fin: <message>`.
 */
export const failureLine = (tag: string, message: string): string =>
  json ? Render.errorJson({ _tag: tag, message }) : Render.printable(`effect-fin: ${message}`)
