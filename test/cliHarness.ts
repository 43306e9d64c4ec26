/**
 * The `effect-fin` command as a child process (one esbuild bundle of src/cli/bin.ts, not a transpile per run), and a
 * loopback HTTP server that only counts what reaches it: hostile arguments must fail before anything is sent.
 */
import { build } from "esbuild"
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { constants } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

export interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** A signal sent to the command once `when` resolves, or once its standard error holds the text `when` names. */
export interface Stop {
  readonly when: Promise<unknown> | { readonly stderrIncludes: string }
  readonly signal: NodeJS.Signals
}

export interface Cli {
  /**
   * Runs `effect-fin ARGS` with only the given variables (plus PATH and HOME) and `stdin` as standard input (`null`:
   * left open, as a terminal's), in `cwd` (default: the repository).
   */
  readonly run: (
    args: ReadonlyArray<string>,
    env?: Record<string, string>,
    stdin?: string | null,
    cwd?: string,
    stop?: Stop
  ) => Promise<CliResult>
  /** A scratch folder that lives as long as the bundle. */
  readonly dir: string
  readonly dispose: () => void
}

/**
 * Bundles the command (packages left external, resolved from the repo) into a temporary folder of the repository,
 * so that, as in an installed package, it finds the package's own data/ through a self-reference.
 */
export const bundleCli = async (): Promise<Cli> => {
  mkdirSync(join(root, ".scratch"), { recursive: true })
  const dir = mkdtempSync(join(root, ".scratch", "cli-"))
  const bin = join(dir, "bin.mjs")
  await build({
    entryPoints: [join(root, "src", "cli", "bin.ts")],
    bundle: true,
    packages: "external",
    format: "esm",
    platform: "node",
    target: "node20",
    outfile: bin,
    logLevel: "silent"
  })
  const run = (
    args: ReadonlyArray<string>,
    env: Record<string, string> = {},
    stdin: string | null = "",
    cwd = root,
    stop?: Stop
  ) =>
    new Promise<CliResult>((resolve) => {
      const clean: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1", ...env }
      const child = execFile(
        process.execPath,
        [bin, ...args],
        { cwd, env: clean, encoding: "utf8" },
        // A command killed by a signal it did not handle exits as a shell says it (128 + the signal's number), never
        // as a plain failure: a test's stop signal that came before the command's own end is told apart.
        (error, stdout, stderr) =>
          resolve({
            code: error === null ? 0 : error.signal ? 128 + constants.signals[error.signal] : Number(error.code ?? 1),
            stdout,
            stderr
          })
      )
      // A command may stop reading early (a body over its limit): the rest of the input is then refused, harmlessly.
      child.stdin?.on("error", () => {})
      if (stdin !== null) child.stdin?.end(stdin)
      if (stop === undefined) return
      const { when, signal } = stop
      if (when instanceof Promise) {
        void when.then(() => child.kill(signal))
        return
      }
      let stderr = ""
      const watch = (text: string) => {
        stderr += text
        if (!stderr.includes(when.stderrIncludes)) return
        // Once: a second signal, after the command has let go of its handlers, would kill it outright.
        child.stderr?.off("data", watch)
        child.kill(signal)
      }
      child.stderr?.on("data", watch)
    })
  return { run, dir, dispose: () => rmSync(dir, { recursive: true, force: true }) }
}

export interface CountingServer {
  readonly url: string
  /** `METHOD path` of every request received. */
  readonly received: ReadonlyArray<string>
  readonly close: () => Promise<void>
}

/** A server on 127.0.0.1 that records each request and answers 503. */
export const countingServer = (): Promise<CountingServer> =>
  new Promise((resolve) => {
    const received: Array<string> = []
    const server = Http.createServer((request, response) => {
      received.push(`${request.method} ${request.url}`)
      response.writeHead(503, { "content-type": "application/json" }).end("{}")
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        received,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
