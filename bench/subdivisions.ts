/**
 * Benchmark of the offline subdivision lookups against the npm packages `iso-3166` (4.4.0) and `iso-3166-2` (1.0.0).
 *
 *   npm run bench:subdivisions
 *
 * Cold load is measured in fresh Node processes on esbuild bundles (what an application ships; no tsx in the way),
 * median of several runs. Per-call times are measured in this process after warm-up, over rotating inputs, median
 * of several rounds. Prints a table and writes bench/results/subdivisions.md. `runSubdivisionsBench()` returns the
 * rows, for a combined `npm run bench`.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { build } from "esbuild"
import { execFile } from "node:child_process"
import * as Fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as CountryCode from "../src/CountryCode.js"
import * as Subdivisions from "../src/Subdivisions.js"
import { machineLines, writeReport } from "./lib/report.js"

/**
 * One figure of a benchmark: `library` did `operation` in `value` `unit`.
 */
export interface BenchRow {
  readonly suite: string
  readonly operation: string
  readonly library: string
  readonly value: number
  readonly unit: "ms" | "ns/op"
  /** The goal for effect-fin, e.g. `< 10 ms`. */
  readonly target?: string
  readonly note?: string
}

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const suite = "subdivisions"
const ours = "effect-fin"
const peer1 = "iso-3166 4.4.0"
const peer2 = "iso-3166-2 1.0.0"

// ---------------------------------------------------------------------------------------------------------------
// Cold load, in fresh processes
// ---------------------------------------------------------------------------------------------------------------

// Runs in a fresh `node`; prints, in ms, wall-clock and CPU time (the process, all threads) of the import and of the
// first lookup for one library. CPU time shows what the work costs even when a busy machine stretches the wall
// clock. argv: kind, module URL(s).
const childSource = `
const [kind, url, url2] = process.argv.slice(2)
const ms = (a, b) => (b.user - a.user + b.system - a.system) / 1000
const t0 = performance.now()
const c0 = process.cpuUsage()
let lookup = () => {}
if (kind === "ours" || kind === "ours-all") {
  const m = await import(url)
  lookup = kind === "ours" ? () => m.forCountry("USA") : () => { for (const c of m.countryCodes) m.forCountry(c) }
} else if (kind === "iso-3166") {
  const [{ iso31662 }, { iso31661Alpha3ToAlpha2 }] = await Promise.all([import(url), import(url2)])
  lookup = () => {
    const prefix = iso31661Alpha3ToAlpha2["USA"] + "-"
    return iso31662.filter((e) => e.code.startsWith(prefix))
  }
} else if (kind === "iso-3166-2") {
  const m = (await import(url)).default
  lookup = () => m.country("USA")
} else {
  await import(url)
}
const t1 = performance.now()
const c1 = process.cpuUsage()
lookup()
const t2 = performance.now()
const c2 = process.cpuUsage()
process.stdout.write(JSON.stringify({ import: t1 - t0, first: t2 - t1, importCpu: ms(c0, c1), firstCpu: ms(c1, c2) }))
`

interface ColdSample {
  readonly import: number
  readonly first: number
  readonly importCpu: number
  readonly firstCpu: number
}

const runChild = (script: string, args: ReadonlyArray<string>) =>
  new Promise<ColdSample>((resolve, reject) => {
    execFile(process.execPath, [script, ...args], (error, stdout) => {
      if (error !== null) reject(error)
      else resolve(JSON.parse(stdout) as ColdSample)
    })
  })

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/**
 * Cold load figures, from `runs` fresh processes per case (median), the cases interleaved so that a busy moment of
 * the machine does not fall on one library only.
 */
export const coldRows = async (runs: number): Promise<ReadonlyArray<BenchRow>> => {
  const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "effect-fin-bench-"))
  try {
    // The library module as an application bundles it (effect included), the data module alone, an empty module.
    const entry = Path.join(dir, "entry.ts")
    await Fs.writeFile(
      entry,
      `export * from ${JSON.stringify(Path.join(root, "src/Subdivisions.ts"))}\n` +
        `export { alpha3Codes as countryCodes } from ${JSON.stringify(Path.join(root, "src/CountryCode.ts"))}\n`
    )
    await Fs.writeFile(Path.join(dir, "empty.mjs"), "export {}\n")
    await build({
      entryPoints: { subdivisions: entry, data: Path.join(root, "src/internal/subdivisionsData.ts") },
      bundle: true,
      format: "esm",
      platform: "neutral",
      outdir: dir,
      outExtension: { ".js": ".mjs" },
      logLevel: "silent"
    })
    const child = Path.join(dir, "child.mjs")
    await Fs.writeFile(child, childSource)
    const url = (path: string) => pathToFileURL(path).href
    const cases = {
      ours: ["ours", url(Path.join(dir, "subdivisions.mjs"))],
      oursAll: ["ours-all", url(Path.join(dir, "subdivisions.mjs"))],
      oursData: ["ours-data", url(Path.join(dir, "data.mjs"))],
      empty: ["empty", url(Path.join(dir, "empty.mjs"))],
      iso3166: [
        "iso-3166",
        url(Path.join(root, "node_modules/iso-3166/2.js")),
        url(Path.join(root, "node_modules/iso-3166/1-a3-to-1-a2.js"))
      ],
      iso31662: ["iso-3166-2", url(Path.join(root, "node_modules/iso-3166-2/iso3166.min.js"))]
    } as const
    type Case = keyof typeof cases
    const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, [] as Array<ColdSample>])) as Record<
      Case,
      Array<ColdSample>
    >
    for (let i = 0; i < runs; i++) {
      for (const key of Object.keys(cases) as Array<Case>) samples[key].push(await runChild(child, cases[key]))
    }
    const m = (key: Case, pick: (s: ColdSample) => number) => median(samples[key].map(pick))
    const row = (operation: string, library: string, value: number, extra: Partial<BenchRow> = {}): BenchRow => ({
      suite,
      operation,
      library,
      value,
      unit: "ms",
      ...extra
    })
    const wall = (s: ColdSample) => s.import + s.first
    const cpu = (s: ColdSample) => s.importCpu + s.firstCpu
    const split = (key: Case) =>
      `import ${m(key, (s) => s.import).toFixed(2)} ms + first lookup ${m(key, (s) => s.first).toFixed(2)} ms`
    const loadOperation = "cold load: import + first lookup (wall)"
    const cpuOperation = "cold load: import + first lookup (CPU)"
    return [
      row(loadOperation, ours, m("oursData", (s) => s.import) + m("ours", (s) => s.first), {
        target: "< 10 ms",
        note: `data module import ${m("oursData", (s) => s.import).toFixed(2)} ms + first forCountry("USA") ${
          m("ours", (s) => s.first).toFixed(2)
        } ms (an empty module's import alone: ${m("empty", wall).toFixed(2)} ms)`
      }),
      row(loadOperation, peer1, m("iso3166", wall), { note: `2.js and 1-a3-to-1-a2.js: ${split("iso3166")}` }),
      row(loadOperation, peer2, m("iso31662", wall), { note: `iso3166.min.js: ${split("iso31662")}` }),
      row(cpuOperation, ours, m("oursData", (s) => s.importCpu) + m("ours", (s) => s.firstCpu), {
        target: "< 10 ms",
        note: `an empty module's import alone: ${m("empty", cpu).toFixed(2)} ms CPU`
      }),
      row(cpuOperation, peer1, m("iso3166", cpu)),
      row(cpuOperation, peer2, m("iso31662", cpu)),
      row("first lookup of all 249 countries (wall)", ours, m("oursAll", (s) => s.first), {
        note: "every country parsed: the most the lazy load can add"
      }),
      row("import of the whole module, effect included (wall)", ours, m("ours", (s) => s.import), {
        note: "mostly effect's own load, shared with the rest of the library"
      })
    ]
  } finally {
    await Fs.rm(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Per call, in this process
// ---------------------------------------------------------------------------------------------------------------

// Results go here so the optimiser cannot drop the calls.
const sink: { value: unknown } = { value: undefined }

// Iterations for about 40 ms a round.
const calibrate = (fn: (i: number) => unknown): number => {
  for (let i = 0; i < 20_000; i++) sink.value = fn(i)
  let iterations = 1_000
  for (;;) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) sink.value = fn(i)
    const elapsed = Number(process.hrtime.bigint() - start)
    if (elapsed > 40_000_000 || iterations >= 100_000_000) return iterations
    iterations *= elapsed < 4_000_000 ? 10 : 2
  }
}

/**
 * ns per call of each function, measured in alternating rounds (so a busy moment of the machine hits every library
 * alike), median of 9 rounds each.
 */
const nsPerOp = (fns: ReadonlyArray<(i: number) => unknown>): ReadonlyArray<number> => {
  const iterations = fns.map(calibrate)
  const rounds: Array<Array<number>> = fns.map(() => [])
  for (let r = 0; r < 9; r++) {
    fns.forEach((fn, f) => {
      const n = iterations[f]!
      const start = process.hrtime.bigint()
      for (let i = 0; i < n; i++) sink.value = fn(i)
      rounds[f]!.push(Number(process.hrtime.bigint() - start) / n)
    })
  }
  return rounds.map(median)
}

interface Iso31662Entry {
  readonly code: string
  readonly name: string
  readonly parent: string
}
interface Iso31662Module {
  country(code: string): { readonly sub: Record<string, unknown> } | null
  subdivision(code: string, name?: string): { readonly countryCode: string } | null
  readonly codes: Record<string, string>
}

/**
 * Per-call figures, in this process.
 */
export const callRows = async (): Promise<ReadonlyArray<BenchRow>> => {
  const { iso31662 } = (await import("iso-3166")) as { iso31662: ReadonlyArray<Iso31662Entry> }
  const { iso31661Alpha3ToAlpha2 } = (await import("iso-3166")) as {
    iso31661Alpha3ToAlpha2: Readonly<Record<string, string>>
  }
  const peer = createRequire(import.meta.url)("iso-3166-2") as Iso31662Module

  // Rotating inputs (powers of two for a cheap index): several countries and codes, one unknown of each.
  const countries = ["USA", "BRA", "FRA", "DEU", "IND", "GBR", "AZE", "ABW"] as const
  const codes = ["US-CA", "BR-SP", "FR-75C", "DE-BY", "IN-MH", "GB-LND", "AZ-BAB", "US-ZZ"] as const
  const pairs = [
    ["USA", "US-CA"],
    ["BRA", "BR-SP"],
    ["FRA", "FR-75C"],
    ["DEU", "DE-BY"],
    ["IND", "IN-MH"],
    ["GBR", "GB-LND"],
    ["AZE", "AZ-BAB"],
    ["CAN", "US-NY"]
  ] as const
  // iso-3166-2 looks names up exactly (case-insensitive); the same names, as users type them, feed our search.
  const names = [
    ["USA", "New York"],
    ["BRA", "São Paulo"],
    ["FRA", "Paris"],
    ["DEU", "Bayern"],
    ["IND", "Maharashtra"],
    ["GBR", "Kent"],
    ["AZE", "Babək"],
    ["USA", "Nowhere"]
  ] as const
  const mask = 7

  const row = (operation: string, library: string, value: number, extra: Partial<BenchRow> = {}): BenchRow => ({
    suite,
    operation,
    library,
    value,
    unit: "ns/op",
    ...extra
  })

  // Everything parsed before timing (per-call cost, not load), and every library answers the known inputs: a broken
  // lookup must not pass for a fast one.
  for (const c of CountryCode.alpha3Codes) Subdivisions.forCountry(c)
  const answers = [
    Either.isRight(Subdivisions.forCountry("USA")) && Subdivisions.forCountry("USA").pipe(Either.getOrThrow).length,
    Option.isSome(Subdivisions.byCode("US-CA")),
    Subdivisions.isValid("USA", "US-CA").pipe(Either.getOrThrow),
    Subdivisions.search("BRA", "São Paulo").pipe(Either.getOrThrow)[0]?.code === "BR-SP",
    iso31662.some((e) => e.code === "US-CA"),
    peer.country("USA") !== null && peer.subdivision("US-CA") !== null && peer.subdivision("USA", "New York") !== null
  ]
  if (answers.some((a) => a === false || a === 0)) throw new Error(`a library gave a wrong answer: ${answers}`)

  const [forCountryOurs, forCountryPeer1, forCountryPeer2] = nsPerOp([
    (i) => Subdivisions.forCountry(countries[i & mask]!),
    (i) => {
      const prefix = `${iso31661Alpha3ToAlpha2[countries[i & mask]!]}-`
      return iso31662.filter((e) => e.code.startsWith(prefix))
    },
    (i) => peer.country(countries[i & mask]!)
  ])
  const [byCodeOurs, byCodePeer1, byCodePeer2] = nsPerOp([
    (i) => Subdivisions.byCode(codes[i & mask]!),
    (i) => {
      const code = codes[i & mask]!
      return iso31662.find((e) => e.code === code)
    },
    (i) => peer.subdivision(codes[i & mask]!)
  ])
  const [isValidOurs, isValidPeer1, isValidPeer2] = nsPerOp([
    (i) => {
      const [c, code] = pairs[i & mask]!
      return Subdivisions.isValid(c, code)
    },
    (i) => {
      const [c, code] = pairs[i & mask]!
      return code.startsWith(`${iso31661Alpha3ToAlpha2[c]}-`) && iso31662.some((e) => e.code === code)
    },
    (i) => {
      const [c, code] = pairs[i & mask]!
      const found = peer.subdivision(code)
      return found !== null && found.countryCode === peer.codes[c]
    }
  ])
  const [searchOurs, searchPeer2] = nsPerOp([
    (i) => {
      const [c, n] = names[i & mask]!
      return Subdivisions.search(c, n)
    },
    (i) => {
      const [c, n] = names[i & mask]!
      return peer.subdivision(c, n)
    }
  ])
  return [
    row("forCountry", ours, forCountryOurs!, { target: "< 200 ns" }),
    row("forCountry", peer1, forCountryPeer1!, { note: "filter of the 5,000-entry list" }),
    row("forCountry", peer2, forCountryPeer2!),
    row("byCode", ours, byCodeOurs!, { target: "< 200 ns" }),
    row("byCode", peer1, byCodePeer1!, { note: "find in the list" }),
    row("byCode", peer2, byCodePeer2!),
    row("isValid", ours, isValidOurs!, { target: "< 200 ns" }),
    row("isValid", peer1, isValidPeer1!),
    row("isValid", peer2, isValidPeer2!),
    row("search (name)", ours, searchOurs!, { note: "ranked; case, diacritics and punctuation folded" }),
    row("search (name)", peer2, searchPeer2!, { note: "exact name, case-insensitive only" })
  ]
}

/**
 * Runs the whole benchmark; `coldRuns` fresh processes per library for the cold load (median).
 */
export const runSubdivisionsBench = async (options: { readonly coldRuns?: number } = {}): Promise<
  ReadonlyArray<BenchRow>
> => {
  // Per call first, then the cold-load children one at a time: nothing of ours competes with a timing loop.
  const calls = await callRows()
  const cold = await coldRows(options.coldRuns ?? 7)
  return [...cold, ...calls]
}

// ---------------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------------

const format = (row: BenchRow | undefined): string =>
  row === undefined
    ? "—"
    : row.unit === "ms"
    ? `${row.value.toFixed(2)} ms`
    : `${row.value >= 10_000 ? Math.round(row.value).toLocaleString("en-US") : row.value.toFixed(0)} ns`

/**
 * The rows as a markdown table: one line per operation, one column per library, then the target and whether
 * effect-fin meets it and beats every peer that offers the operation.
 */
export const toMarkdownTable = (rows: ReadonlyArray<BenchRow>): string => {
  const operations = [...new Set(rows.map((r) => r.operation))]
  const lines = [
    `| operation | ${ours} | ${peer1} | ${peer2} | target | met |`,
    "|---|---:|---:|---:|---|---|"
  ]
  for (const operation of operations) {
    const of = (library: string) => rows.find((r) => r.operation === operation && r.library === library)
    const mine = of(ours)
    const peers = [of(peer1), of(peer2)].filter((r): r is BenchRow => r !== undefined)
    let met = ""
    if (mine !== undefined && (mine.target !== undefined || peers.length > 0)) {
      const limit = mine.target === undefined ? Infinity : Number(mine.target.replace(/[^\d.]/g, ""))
      const ok = mine.value < limit && peers.every((p) => mine.value < p.value)
      met = ok ? "yes" : "no"
    }
    lines.push(
      `| ${operation} | ${format(mine)} | ${format(of(peer1))} | ${format(of(peer2))} | ${mine?.target ?? ""} | ${met} |`
    )
  }
  return lines.join("\n")
}

const main = async () => {
  const loadAverage = Os.loadavg()
  const rows = await runSubdivisionsBench()
  const table = toMarkdownTable(rows)
  const notes = rows.filter((r) => r.note !== undefined).map((r) => `- ${r.operation}, ${r.library}: ${r.note}`)
  const section = [
    "## Subdivisions",
    "",
    ...(await machineLines("npm run bench:subdivisions", loadAverage)),
    "",
    table,
    "",
    "Cold load: fresh `node` processes on esbuild bundles, median of 7, interleaved across libraries; wall-clock",
    "time, and CPU time of the process (which a busy machine does not stretch). Per call: after warm-up and after",
    "every country was parsed, rotating over 8 inputs (one unknown), median of 9 rounds of about 40 ms, the",
    "libraries' rounds alternating. `iso-3166` has no index and no name search; `iso-3166-2` looks names up exactly,",
    "ignoring only case. \"met\": under the target and faster than every peer that offers the operation.",
    "",
    ...notes,
    ""
  ].join("\n")
  process.stdout.write(`${table}\n\n${notes.join("\n")}\n`)
  const out = Path.join(root, "bench/results/subdivisions.md")
  await writeReport(out, section)
  process.stdout.write(`\nWrote ${Path.relative(root, out)}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
    process.exitCode = 1
  })
}
