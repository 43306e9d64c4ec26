/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time by origin (effect, @effect/platform, undici,
 * effect-fin's src/, Node internals, GC, idle), the top functions by self time, and the inclusive time of every
 * effect-fin function (what a call into our code costs with everything it calls).
 *
 *   npx tsx bench/lib/cpuprofile.ts <file.cpuprofile> [top]
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** Where a frame's code comes from. */
export const originOf = (frame: CallFrame): string => {
  const url = frame.url
  if (url === "") {
    if (frame.functionName === "(garbage collector)") return "GC"
    if (frame.functionName === "(idle)") return "idle"
    if (frame.functionName === "(program)") return "(program)"
    return "native"
  }
  if (url.startsWith("node:")) return "node internals"
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (m !== null) return m[1]!
  if (url.includes("/bench/.profile/")) return "bundle: effect-fin src/ + bench harness"
  if (url.includes("/src/")) return "effect-fin src/"
  if (url.includes("/bench/")) return "bench harness"
  return url
}

const label = (frame: CallFrame): string => {
  const file = frame.url === "" ? "" : ` ${frame.url.replace(/^.*node_modules\//, "").replace(/^.*\/(src|bench)\//, "$1/")}`
  return `${frame.functionName || "(anonymous)"}${file}:${frame.lineNumber + 1}`
}

/** The summary as text lines. */
export const summarize = (profile: Profile, top = 40): Array<string> => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<number, number>()
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0
    self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + dt)
    total += dt
  }
  const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === "(idle)")
    .reduce((s, [, t]) => s + t, 0)
  const busy = total - idle
  const byOrigin = new Map<string, number>()
  const byFunction = new Map<string, number>()
  const inclusive = new Map<string, number>()
  for (const [id, t] of self) {
    const frame = byId.get(id)!.callFrame
    byOrigin.set(originOf(frame), (byOrigin.get(originOf(frame)) ?? 0) + t)
    byFunction.set(label(frame), (byFunction.get(label(frame)) ?? 0) + t)
    // Inclusive time of effect-fin frames: each distinct frame on the stack once.
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame
      if (originOf(f) !== "effect-fin src/") continue
      const l = label(f)
      if (seen.has(l)) continue
      seen.add(l)
      inclusive.set(l, (inclusive.get(l) ?? 0) + t)
    }
  }
  const pct = (t: number) => `${((100 * t) / busy).toFixed(1).padStart(5)}%`
  const lines = [`busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms sampled`, "", "self time by origin:"]
  for (const [o, t] of [...byOrigin].filter(([o]) => o !== "idle").sort((a, b) => b[1] - a[1])) {
    lines.push(`  ${pct(t)}  ${o}`)
  }
  lines.push("", `top ${top} functions by self time:`)
  for (const [f, t] of [...byFunction].sort((a, b) => b[1] - a[1]).filter(([f]) => !f.startsWith("(idle)")).slice(0, top)) {
    lines.push(`  ${pct(t)}  ${f}`)
  }
  if (inclusive.size > 0) {
    lines.push("", "effect-fin functions (unbundled src/), inclusive time:")
    for (const [f, t] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(t)}  ${f}`)
  }
  return lines
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href) {
  const [file, top] = process.argv.slice(2)
  if (file === undefined) {
    process.stderr.write("usage: tsx bench/lib/cpuprofile.ts <file.cpuprofile> [top]\n")
    process.exitCode = 2
  } else {
    const profile = JSON.parse(Fs.readFileSync(file, "utf8")) as Profile
    process.stdout.write(`${summarize(profile, Number(top ?? 40)).join("\n")}\n`)
  }
}
