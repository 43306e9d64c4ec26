/**
 * What each piece of a call costs: copies of effect-fin's src/ in bench/.ablation/<cut>/ (ignored by git), each with
 * one piece cut out, loaded beside the current source and run in the same rounds against the same server. A cut
 * changes behaviour (a call with no time limit, no span...): it only sizes the piece, and is never shipped.
 */
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { Modules } from "./baseline.js"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")

/** One edit of a copied file: `from` (which must match) replaced with `to`. */
type Edit = readonly [file: string, from: string | RegExp, to: string]

/** The cuts, by what they take out of a call. */
export const cuts: Readonly<Record<string, ReadonlyArray<Edit>>> = {
  "the attempt's timer (the call's only fiber of its own; no time limit at all)": [[
    "internal/http.ts",
    /\(response\) =>\n\s*spec\.deadline !== undefined[\s\S]*?attempts: spec\.attempt\n\s*\}\), spec\.closing, spec\.onLeft\),/,
    "(response) => response,"
  ]],
  // The timer's two parts: with its fiber kept, this sizes the `setTimeout` alone (the piece above less this
  // one is the fiber).
  "the attempt's setTimeout alone (its fiber kept)": [[
    "internal/timeLimits.ts",
    "timer = millis <= MAX_TIMER_MILLIS ? setTimeout(() => end(TimedOut), millis) : undefined",
    "timer = undefined"
  ]],
  "the call's span": [["HttpTransport.ts", /\.pipe\(\n\s*Effect\.withSpan\(`effect-fin\.\$\{name\}`[\s\S]*?\}\)\n\s*\)\n(\s*)\}/, "\n$1}"]],
  "the last step (span outcome, latency and count metrics)": [[
    "HttpTransport.ts",
    "Effect.onExit((exit) => Effect.flatMap(Monotonic.millis, (now) => this.ended(exit, status, now)))",
    "(call) => call"
  ]],
  "the request's validation (FeeService schema)": [["FeeService.ts", "validate(request).pipe(", "Effect.succeed(request).pipe("]],
  "the answer's check (currencies and amount asked)": [["FeeService.ts", "check: asked(body),", ""]]
}

/** The name of a cut's client in the tables. */
export const cutName = (cut: string) => `effect-fin without ${cut}`

/** A copy of src/ with each cut made, loaded; an error names a cut whose edit no longer matches the source. */
export const loadCuts = async (): Promise<ReadonlyArray<readonly [string, Modules]>> => {
  const loaded: Array<readonly [string, Modules]> = []
  for (const [cut, edits] of Object.entries(cuts)) {
    const dir = Path.join(root, "bench/.ablation", String(loaded.length))
    await Fs.rm(dir, { recursive: true, force: true })
    await Fs.cp(Path.join(root, "src"), Path.join(dir, "src"), { recursive: true })
    for (const [file, from, to] of edits) {
      const path = Path.join(dir, "src", file)
      const text = await Fs.readFile(path, "utf8")
      const edited = text.replace(from, to)
      if (edited === text) throw new Error(`ablation "${cut}": its edit of src/${file} no longer matches`)
      await Fs.writeFile(path, edited)
    }
    const load = (file: string) => import(pathToFileURL(Path.join(dir, "src", file)).href)
    loaded.push([cut, {
      FinClient: await load("FinClient.ts"),
      FeeService: await load("FeeService.ts"),
      TokenProvider: await load("TokenProvider.ts")
    }])
  }
  return loaded
}
