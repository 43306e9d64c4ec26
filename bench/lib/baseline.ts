/**
 * The before/after comparison: effect-fin's source as it was before the performance work (`baselineRef`), extracted
 * with `git archive` into bench/.baseline/<ref>/ (ignored by git) and loaded beside the current source, so both run in
 * the same process, against the same server, in the same rounds.
 */
import { execFile } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type * as FeeService from "../../src/FeeService.js"
import type * as FinClient from "../../src/FinClient.js"
import type * as TokenProvider from "../../src/TokenProvider.js"

/** The last commit before the optimisations of issue 6 (its transport already has the one-refresh-per-call fix). */
export const baselineRef = "61e9176"

/** What the benchmarks use of a copy of effect-fin. */
export interface Modules {
  readonly FinClient: typeof FinClient
  readonly FeeService: typeof FeeService
  readonly TokenProvider: typeof TokenProvider
}

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")

const run = (args: ReadonlyArray<string>, cwd: string) =>
  new Promise<void>((resolve, reject) =>
    execFile(args[0]!, args.slice(1), { cwd, maxBuffer: 1 << 26 }, (error) => (error ? reject(error) : resolve()))
  )

/**
 * The baseline's modules, or `undefined` (with the reason) when they cannot be had: no git, or a checkout without
 * that commit.
 */
export const loadBaseline = async (): Promise<{ readonly modules?: Modules; readonly reason?: string }> => {
  const dir = Path.join(root, "bench/.baseline", baselineRef)
  try {
    try {
      await Fs.access(Path.join(dir, "src/FinClient.ts"))
    } catch {
      await Fs.mkdir(dir, { recursive: true })
      const tar = Path.join(dir, "src.tar")
      await run(["git", "archive", "--format=tar", `--output=${tar}`, baselineRef, "src"], root)
      await run(["tar", "-xf", tar], dir)
      await Fs.rm(tar)
    }
    const load = (file: string) => import(pathToFileURL(Path.join(dir, "src", file)).href)
    return {
      modules: {
        FinClient: await load("FinClient.ts"),
        FeeService: await load("FeeService.ts"),
        TokenProvider: await load("TokenProvider.ts")
      }
    }
  } catch (e) {
    return { reason: e instanceof Error ? e.message.split("\n")[0]! : String(e) }
  }
}
