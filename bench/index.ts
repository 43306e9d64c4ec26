/**
 * Every benchmark of effect-fin in one run, one table, one report:
 *
 *   npm run bench          (bench/index.ts under bench/lib/loader.mjs; about 5 to 6 minutes on 2 cores)
 *
 * 1. Client cost per fee quote (bench/clients.ts): raw undici and fetch, the bare platform clients, effect-fin's full
 *    stack on each, the lean UndiciHttpClient, and the full stack as it was before the optimisations, at concurrency
 *    1, 16 and 64, against the loopback server in its own process.
 * 2. Where the bare platform client's cost goes: the steps from raw undici to NodeHttpClient.layerUndici (c = 16).
 * 3. Building blocks of a call measured alone, before and after (bench/lib/blocks.ts), and what each piece of a
 *    call costs: the full stack beside copies of it with one piece cut out (bench/lib/ablation.ts, c = 16).
 * 4. Token single flight: 1,000 concurrent TokenProvider.get on a cold cache.
 * 5. The subdivision lookups (bench/subdivisions.ts) and webhook verification (bench/webhooks.ts).
 * 6. Token reads from RedisTokenStore beside the in-memory store (bench/redis.ts; needs redis-server).
 * 7. What effect-fin adds to a minified bundle (bench/bundles.ts): the fee path alone, and FinClient.
 * 8. Large batches (bench/batches.ts): 5,000 quotes at once against the emulator, unbounded and bounded.
 *
 * Prints one table of everything and writes BENCHMARKS.md (machine, package versions, every table, the targets and
 * whether each is met, before/after, how to reproduce).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import {
  type ClientRow,
  clientTable,
  runClientBench,
  runTokenBench,
  type TokenCase,
  type TokenRow,
  tokenTable
} from "./clients.js"
import { cutName, cuts, loadCuts } from "./lib/ablation.js"
import { baselineRef, loadBaseline } from "./lib/baseline.js"
import { type BlockRow, runBlocks } from "./lib/blocks.js"
import { baselineClients, breakdownClients, fullStack, names, steps } from "./lib/clients.js"
import { machineLines, writeReport } from "./lib/report.js"
import * as BatchesBench from "./batches.js"
import * as BundlesBench from "./bundles.js"
import * as RedisBench from "./redis.js"
import * as SubdivisionsBench from "./subdivisions.js"
import * as WebhooksBench from "./webhooks.js"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const log = (line: string) => process.stderr.write(`${line}\n`)

const OVERHEAD_TARGET = 1.3
const RAW_TARGET = 3
const BARE_LIMIT = 2

// ---------------------------------------------------------------------------------------------------------------
// The one table
// ---------------------------------------------------------------------------------------------------------------

interface Line {
  readonly suite: string
  readonly operation: string
  readonly implementation: string
  readonly result: string
  readonly relative: string
  readonly target: string
  readonly met: string
}

const int = (n: number) => Math.round(n).toLocaleString("en-US")
const x = (n: number) => `${n.toFixed(2)}x`
const yesNo = (ok: boolean) => (ok ? "yes" : "no")

const clientLine = (r: ClientRow): Line => {
  const current = r.library.startsWith("effect-fin on")
  const targets: Array<string> = []
  const met: Array<string> = []
  if (current && r.vsBase !== undefined) {
    targets.push(`<= ${OVERHEAD_TARGET}x its bare client`)
    met.push(yesNo(r.vsBase <= OVERHEAD_TARGET))
  }
  if (r.library === names.fullUndici) {
    targets.push(`<= ${RAW_TARGET}x raw undici`)
    met.push(yesNo(r.vsRawUndici <= RAW_TARGET))
  }
  if (r.library === names.bareUndici || r.library === names.bareLean) {
    targets.push(`<= ${BARE_LIMIT}x raw undici`)
    met.push(yesNo(r.vsRawUndici <= BARE_LIMIT))
  }
  return {
    suite: "client",
    operation: r.operation,
    implementation: r.library,
    result: `${r.value.toFixed(1)} µs CPU/call; ${int(r.throughput)} calls/s; p50 ${r.p50.toFixed(2)} ms, p99 ${
      r.p99.toFixed(2)
    } ms`,
    relative: `${x(r.vsRawUndici)} raw undici${r.vsBase === undefined ? "" : `; ${x(r.vsBase)} its bare client`}`,
    target: targets.join("; "),
    met: met.join("; ")
  }
}

const tokenLine = (r: TokenRow): Line => ({
  suite: "token",
  operation: r.operation,
  implementation: r.library,
  result: `${r.value.toFixed(1)} ms until all done; token requests per run: ${r.tokenRequests.join(", ")}`,
  relative: "",
  target: "exactly 1 token request",
  met: yesNo(r.tokenRequests.every((c) => c === 1))
})

const subdivisionLine = (r: SubdivisionsBench.BenchRow): Line => {
  const limit = r.target === undefined ? undefined : Number(/[\d.]+/.exec(r.target)?.[0])
  return {
    suite: "subdivisions",
    operation: r.operation,
    implementation: r.library,
    result: r.unit === "ms" ? `${r.value.toFixed(2)} ms` : `${int(r.value)} ns/op`,
    relative: "",
    target: r.target ?? "",
    met: limit === undefined ? "" : yesNo(r.value < limit)
  }
}

const webhookLine = (r: WebhooksBench.BenchRow): Line => {
  const wanted = r.target === undefined ? undefined : Number(/[\d.]+/.exec(r.target)?.[0])
  return {
    suite: "webhooks",
    operation: r.operation,
    implementation: r.library,
    result: `${int(r.value)} verifications/s`,
    relative: r.relative === undefined ? "" : `${x(r.relative)} raw node:crypto`,
    target: r.target ?? "",
    met: wanted === undefined || r.relative === undefined ? "" : yesNo(r.relative >= wanted)
  }
}

const redisLine = (r: RedisBench.BenchRow): Line => ({
  suite: r.suite,
  operation: `${r.operation}, ${r.concurrency} in flight`,
  implementation: r.library,
  result: `${int(r.value)} reads/s`,
  relative: "",
  target: "",
  met: ""
})

const bundleLine = (r: BundlesBench.BundleRow): Line => ({
  suite: "bundle",
  operation: "minified esbuild bundle, Effect external",
  implementation: r.bundle,
  result: `${(r.bytes / 1000).toFixed(1)} KB`,
  relative: "",
  target: "",
  met: ""
})

const batchLine = (r: BatchesBench.BatchRow): Line => ({
  suite: "batches",
  operation: `${r.calls.toLocaleString("en-US")} fee quotes at once, timeout 3 s`,
  implementation: `effect-fin on NodeHttpClient.layerUndici, bound: ${r.bound}`,
  result: BatchesBench.describeRow(r),
  relative: "",
  target: "",
  met: ""
})

const lineTable = (lines: ReadonlyArray<Line>): string =>
  [
    "| suite | operation | implementation | result | relative | target | met |",
    "|---|---|---|---|---|---|---|",
    ...lines.map((l) =>
      `| ${l.suite} | ${l.operation} | ${l.implementation} | ${l.result} | ${l.relative} | ${l.target} | ${l.met} |`
    )
  ].join("\n")

/** The same lines as plain text columns, for the terminal. */
const textTable = (lines: ReadonlyArray<Line>): string => {
  const rows = [["suite", "operation", "implementation", "result", "relative", "target", "met"], ...lines.map((l) => [
    l.suite,
    l.operation,
    l.implementation,
    l.result,
    l.relative,
    l.target,
    l.met
  ])]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n")
}

// ---------------------------------------------------------------------------------------------------------------
// Report sections
// ---------------------------------------------------------------------------------------------------------------

const versionOf = async (pkg: string): Promise<string> => {
  try {
    const json = JSON.parse(await Fs.readFile(Path.join(root, "node_modules", pkg, "package.json"), "utf8"))
    return String(json.version)
  } catch {
    return "not installed"
  }
}

const find = (rows: ReadonlyArray<ClientRow>, library: string, concurrency: number) =>
  rows.find((r) => r.library === library && r.concurrency === concurrency)

const targetsSection = (rows: ReadonlyArray<ClientRow>, tokens: ReadonlyArray<TokenRow>, concurrencies: ReadonlyArray<number>) => {
  const lines: Array<string> = [
    "| target | concurrency | figure | met |",
    "|---|---:|---|---|"
  ]
  for (const [library, base] of [
    [names.fullUndici, names.bareUndici],
    [names.fullFetch, names.bareFetch],
    [names.fullLean, names.bareLean]
  ] as const) {
    for (const c of concurrencies) {
      const r = find(rows, library, c)
      if (r?.vsBase === undefined) continue
      lines.push(
        `| effect-fin's own cost <= 30% on top of ${base.replace(" (bare)", "")} | ${c} | ${r.value.toFixed(1)} vs ${
          find(rows, base, c)!.value.toFixed(1)
        } µs CPU/call = ${x(r.vsBase)} | ${yesNo(r.vsBase <= OVERHEAD_TARGET)} |`
      )
    }
  }
  for (const c of concurrencies) {
    const r = find(rows, names.fullUndici, c)
    if (r === undefined) continue
    lines.push(
      `| full stack on NodeHttpClient.layerUndici <= 3x raw undici | ${c} | ${r.value.toFixed(1)} vs ${
        find(rows, names.rawUndici, c)!.value.toFixed(1)
      } µs CPU/call = ${x(r.vsRawUndici)} | ${yesNo(r.vsRawUndici <= RAW_TARGET)} |`
    )
  }
  for (const library of [names.bareUndici, names.bareLean]) {
    for (const c of concurrencies) {
      const r = find(rows, library, c)
      if (r === undefined) continue
      lines.push(
        `| ${library.replace(" (bare)", "")} bare <= 2x raw undici (else: find out where, offer a lean client) | ${c} | ${
          x(r.vsRawUndici)
        } | ${yesNo(r.vsRawUndici <= BARE_LIMIT)} |`
      )
    }
  }
  for (const t of tokens) {
    lines.push(
      `| 1,000 concurrent TokenProvider.get, cold cache: exactly 1 token request (${t.library}) | 1,000 | ${
        t.tokenRequests.join(", ")
      } per run; ${t.value.toFixed(1)} ms | ${yesNo(t.tokenRequests.every((n) => n === 1))} |`
    )
  }
  return lines.join("\n")
}

const beforeAfterSection = (rows: ReadonlyArray<ClientRow>, concurrencies: ReadonlyArray<number>) => {
  const lines = [
    "| concurrency | bare NodeHttpClient | effect-fin before | effect-fin after | CPU per call saved | effect-fin's own cost before -> after | vs bare before -> after |",
    "|---:|---:|---:|---:|---:|---:|---:|"
  ]
  for (const c of concurrencies) {
    const bare = find(rows, names.bareUndici, c)
    const before = find(rows, names.beforeUndici, c)
    const after = find(rows, names.fullUndici, c)
    if (bare === undefined || before === undefined || after === undefined) continue
    lines.push(
      `| ${c} | ${bare.value.toFixed(1)} µs | ${before.value.toFixed(1)} µs | ${after.value.toFixed(1)} µs | ${
        (100 * (1 - after.value / before.value)).toFixed(0)
      }% | ${(before.value - bare.value).toFixed(0)} -> ${(after.value - bare.value).toFixed(0)} µs | ${
        x(before.vsBase!)
      } -> ${x(after.vsBase!)} |`
    )
  }
  return lines.join("\n")
}

/** What each piece of a call costs: the cuts of bench/lib/ablation.ts beside the full stack, in the same rounds. */
interface Piece {
  readonly cut: string
  readonly row: ClientRow
  /** The full stack's ratio to its bare client less the cut's (medians of per-round ratios). */
  readonly worth: number
}

// What a piece of a call is worth below this is not told apart from the run's noise (two copies of the same code
// differ by about this much within one run).
const NOISE = 0.1

const piecesOf = (rows: ReadonlyArray<ClientRow>): ReadonlyArray<Piece> => {
  const full = find(rows, names.fullUndici, 16)
  if (full?.vsBase === undefined) return []
  return Object.keys(cuts).flatMap((cut) => {
    const row = find(rows, cutName(cut), 16)
    return row?.vsBase === undefined ? [] : [{ cut, row, worth: full.vsBase! - row.vsBase }]
  })
}

const ablationTable = (rows: ReadonlyArray<ClientRow>) => {
  const full = find(rows, names.fullUndici, 16)
  const bare = find(rows, names.bareUndici, 16)
  if (full?.vsBase === undefined || bare === undefined) return "(not measured)"
  return [
    "| effect-fin on NodeHttpClient.layerUndici, concurrency 16 | CPU µs/call | vs its bare client | the piece is worth |",
    "|---|---:|---:|---:|",
    `| bare NodeHttpClient.layerUndici | ${bare.value.toFixed(1)} | 1.00x | |`,
    `| the full stack | ${full.value.toFixed(1)} | ${x(full.vsBase)} | |`,
    ...piecesOf(rows).map((p) =>
      `| without ${p.cut} | ${p.row.value.toFixed(1)} | ${x(p.row.vsBase!)} | ${x(p.worth)} of the ratio |`
    )
  ].join("\n")
}

/** Why the unmet client targets are unmet, with this run's figures (nothing when all are met). */
const unmetNotes = (rows: ReadonlyArray<ClientRow>, ablation: ReadonlyArray<ClientRow>): Array<string> => {
  const at16 = (library: string) => find(rows, library, 16)
  const full = at16(names.fullUndici)
  const bare = at16(names.bareUndici)
  const before = at16(names.beforeUndici)
  const lean = at16(names.fullLean)
  if (full === undefined || bare === undefined) return []
  const current = rows.filter((r) => r.library.startsWith("effect-fin on"))
  const overheadUnmet = current.some((r) => r.vsBase !== undefined && r.vsBase > OVERHEAD_TARGET)
  const rawUnmet = rows.some((r) => r.library === names.fullUndici && r.vsRawUndici > RAW_TARGET)
  const notes: Array<string> = []
  const pieces = [...piecesOf(ablation)].sort((a, b) => b.worth - a.worth)
  const short = (p: Piece) => p.cut.replace(/ \(.*\)$/, "")
  const seen = pieces.filter((p) => p.worth >= NOISE)
  const unseen = pieces.filter((p) => p.worth < NOISE)
  if (overheadUnmet) {
    notes.push(
      `- **effect-fin's own cost <= 30%: not met.** At concurrency 16 effect-fin adds ${
        (full.value - bare.value).toFixed(0)
      } µs of CPU per call to NodeHttpClient.layerUndici (${bare.value.toFixed(0)} µs bare)${
        before === undefined ? "" : `, down from ${(before.value - bare.value).toFixed(0)} µs before the optimisations below`
      }.`,
      "  What is left is what the README's \"Behaviour you can rely on\" promises of every call: request validation",
      "  (schema), the cached token, the retry boundary and the operation's retry budget (`retryBudget`, on by default",
      "  for safe calls such as a quote), one timer (one fiber) for the attempt's timeout and the",
      "  call's deadline, the decode into `FeeQuote` (schema class, `DateTime`), the answer's check, the call's span (in",
      "  place of the platform's `http.client` span, whose end holds the request, credentials included) and two metrics.",
      "  The ablation below (\"What each piece of a call costs\") cuts each piece out in turn, a change of behaviour",
      "  only to size it.",
      ...(pieces.length === 0 ? [] : [
        `  Against the ${x(full.vsBase! - OVERHEAD_TARGET)} between this run's ${x(full.vsBase!)} and ${
          x(OVERHEAD_TARGET)
        }: ${seen.length === 0 ? "no piece stands out" : seen.map((p) => `${short(p)} ${x(p.worth)}`).join(", ")}${
          unseen.length === 0 ? "" : `; ${unseen.map(short).join(", ")} each less than the run's noise (about ${x(NOISE)})`
        }.`
      ]),
      "  Over real sockets a fiber that waits across I/O costs more than on a fake client (a profile of 2026-11-25 on one",
      "  put both timeouts at 11.5 µs, and one timer for the two at 3 µs less): in this benchmark, cutting the call's",
      "  deadline (then a timed fiber of its own) out altogether was worth 0.1x to 0.3x of the ratio (2026-11-26/27, runs",
      "  of 21 to 41 rounds). It has no fiber now (fe328e1: every wait of the call is cut at the deadline instead, the",
      "  tests of the deadline unchanged and passing), which recovered about 0.1x (0.05x to 0.15x over five paired runs).",
      "  The one timer left is the largest piece; every attempt has a time limit (`timeout`, 30 s by default). Of it,",
      "  the `setTimeout` is next to nothing (its own row): the cost is running the attempt in a fiber of its own (a",
      "  daemon since 778e342, so that a client that ignores interruption cannot hold its caller: the timer alone then",
      "  cost about 3 µs more, 1.2x, in a paired micro-benchmark of 41 rounds, 2026-12-05). On",
      "  Effect 3.22 a fork and join costs 14-16 µs of CPU on its own here (16 fibers, each forking `Effect.void` and",
      "  joining it around a `setImmediate` wait, 2026-12-04), a fifth of it garbage collection (the child's",
      "  FiberRefs, its runtime, and since 3.20 a scheduler runner per fiber, kept in a WeakMap so that",
      "  AsyncLocalStorage contexts do not mix; one runner shared by all, as before 3.20, saved 2-3 µs of the 15 in",
      "  a paired run, 2026-12-05, and would mix them again: not done). Joining the child's FiberRefs back into the",
      "  caller's, as",
      "  `Effect.timeout` does, was about a quarter of the timer's cost: it is no longer done (431eb04; nothing an",
      "  attempt sets is the caller's), worth 0.16x to 0.20x of the ratio over two paired runs of 41 rounds (12-04).",
      "  Profiles with and without the timer (2026-12-04; the profiler inflates every figure) put the rest at about",
      "  24 µs of garbage collection, 15 µs for the fork itself (it copies the caller's FiberRefs) and a few µs for",
      "  scheduling the child and waking the caller.",
      "  Without a fiber an attempt could only be cut through the request's",
      "  AbortSignal, which a client that ignores it, or one that sends a request of its own making, would never see:",
      "  no time limit at all. The rest",
      "  is spread over Effect's fiber runtime and garbage collection: no function of effect-fin's own is above about",
      "  1.2% of self time in the profiles (`npx tsx bench/profile.ts full-undici 16`).",
      "  Without I/O the picture is the same (`npm run bench:ladder`, 2026-12-07, alone on the machine: an",
      "  in-process client answering each request on the next `setImmediate`, concurrency 1, CPU per call): the",
      "  bare platform client, tracer off, 38 µs (74 Effect operations); one attempt in effect-fin's frame",
      "  (`Http.execute`: its timer's fiber, the body read and parsed, no schema) 75 µs (83); with the decode into",
      "  `FeeQuote` 122 µs (the decode alone, on a warm loop, 23 µs); the whole transport call (options, token,",
      "  retry boundary, span, metrics) 247 µs (190), 233 µs with the tracer off; `FeeService.calculate` (the",
      "  request and the answer checked) 250 µs (194). The transport's 125 µs over one attempt are spread: in a",
      "  profile no piece of it stands out, and in copies of src/ with one piece cut at a time (made as",
      "  bench/lib/ablation.ts makes its own: the span, the last step, the retry boundary, the spec's checks, the",
      "  token step, the attempt's catches) none was worth more than the run's noise, about 15 µs."
    )
  }
  if (rawUnmet) {
    notes.push(
      `- **Full stack on NodeHttpClient <= 3x raw undici: not met.** The bare NodeHttpClient alone is ${
        x(bare.vsRawUndici)
      } raw undici at concurrency 16 (next section), so nothing on it can be within 3x.${
        lean === undefined ? "" : ` On the lean UndiciHttpClient the full stack is ${x(lean.vsRawUndici)} raw undici.`
      }`
    )
  }
  return notes.length === 0 ? [] : ["Why the unmet ones are unmet:", "", ...notes]
}

/** Why the webhook targets unmet are unmet, with this run's figures (nothing for one met). */
const webhooksNotes = (rows: ReadonlyArray<WebhooksBench.BenchRow>): Array<string> => [
  ...nodeCryptoNote(rows),
  ...webCryptoNote(rows)
]

// The row of `library` verifying one at a time or many in flight.
const webhookRow = (rows: ReadonlyArray<WebhooksBench.BenchRow>, library: string, mode: "1 at a time" | "in flight") =>
  rows.find((r) => r.library === library && r.operation.includes(mode))

const nodeCryptoNote = (rows: ReadonlyArray<WebhooksBench.BenchRow>): Array<string> => {
  const layer = webhookRow(rows, "effect-fin NodeWebhookCrypto", "1 at a time")
  const raw = webhookRow(rows, "raw node:crypto", "1 at a time")
  if (layer?.relative === undefined || raw === undefined || layer.relative >= 0.8) return []
  const micros = (row: WebhooksBench.BenchRow) => (1e6 / row.value).toFixed(2)
  return [
    `- **node:crypto layer >= 0.8x raw, 1 at a time: not met (${x(layer.relative)}).** Raw takes ${micros(raw)} µs`,
    `  per 1 KiB verification, the layer ${micros(layer)} µs; 0.8x leaves a quarter of raw's time for all the layer`,
    "  does besides the HMAC: the Effect step that reads the context, both headers checked, the secrets' list, the",
    "  hex decoded. Over the runs recorded since 2026-11-27 this ratio has been 0.76x to 0.85x, the target met in",
    "  most of them: it sits at the run's noise.",
    "  At 64 in flight it is met.",
    ""
  ]
}

/** Why the WebCrypto target is unmet, with this run's figures (nothing when it is met). */
const webCryptoNote = (rows: ReadonlyArray<WebhooksBench.BenchRow>): Array<string> => {
  const layer = webhookRow(rows, "effect-fin WebCrypto (default)", "in flight")?.relative
  const raw = webhookRow(rows, "raw WebCrypto subtle.verify", "in flight")?.relative
  if (layer === undefined || raw === undefined || layer >= 0.5) return []
  const rawPool = webhookRow(rows, WebhooksBench.poolLibrary("raw WebCrypto subtle.verify"), "in flight")?.relative
  const layerPool = webhookRow(rows, WebhooksBench.poolLibrary("effect-fin WebCrypto (default)"), "in flight")?.relative
  return [
    `- **WebCrypto layer >= 0.5x raw node:crypto at 64 in flight: not met (${x(layer)}).** \`crypto.subtle.verify\``,
    `  alone, with no library code, reaches ${x(raw)} here: on Node 20 each call is a job on libuv's thread pool`,
    `  (4 threads) with its own promise, and on this ${Os.availableParallelism()}-CPU machine those threads compete ` +
    "with the main thread.",
    ...(rawPool === undefined || layerPool === undefined ? [] : [
      `  With one pool thread (\`UV_THREADPOOL_SIZE=1\`, the rows so named) bare \`subtle.verify\` reaches`,
      `  ${x(rawPool)} and the layer ${x(layerPool)}; but the pool is the process's (fs and dns use it too), not a`,
      "  library's to set."
    ]),
    "  Nor is the rest waste: 64 fibers each awaiting `Effect.promise` around bare",
    "  `subtle.verify`, and nothing else, reached about 0.6x of bare `subtle.verify` (2026-11-25, three rounds), and",
    "  the layer (header parsing, hex decoding, the secrets' rotation) about 0.4-0.5x. Of that, a fresh 32-byte",
    "  signature array per delivery (made on V8's heap, moved off it when the crypto reads it) cost a tenth or more:",
    "  the built-in layer now cuts them from a shared block (2026-12-04: 0.14x -> 0.16x here, 0.32x -> 0.37x with",
    "  one pool thread). The node:crypto layer (`effect-fin/node`) is the fast one and the README says so.",
    ""
  ]
}

const blocksTable = (rows: ReadonlyArray<BlockRow>) =>
  [
    "| building block | before | µs CPU/call | after | µs CPU/call |",
    "|---|---|---:|---|---:|",
    ...rows.map((r) =>
      `| ${r.operation} | ${r.before} | ${r.beforeMicros.toFixed(1)} | ${r.after} | ${r.afterMicros.toFixed(1)} |`
    )
  ].join("\n")

const breakdownTable = (rows: ReadonlyArray<ClientRow>) => {
  const lines = [
    "| step (concurrency 16) | CPU µs/call | vs raw undici | added to the step it builds on |",
    "|---|---:|---:|---:|"
  ]
  for (const r of rows) {
    const base = r.base === undefined ? undefined : rows.find((b) => b.library === r.base)
    const added = base === undefined ? "" : r.value - base.value
    lines.push(
      `| ${r.library} | ${r.value.toFixed(1)} | ${x(r.vsRawUndici)} | ${
        typeof added === "number" ? `${added >= 0 ? "+" : ""}${added.toFixed(1)} µs (${x(r.vsBase!)})` : ""
      } |`
    )
  }
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------------

const chaosSection = async (): Promise<ReadonlyArray<string>> => {
  const text = await Fs.readFile(Path.join(root, "bench", "results", "chaos.md"), "utf8").catch(() => undefined)
  return text === undefined ? [] : [text.trim().replace(/^## Chaos run/, "## Chaos run (recorded separately)"), ""]
}

const main = async () => {
  const loadAverage = Os.loadavg()
  const started = performance.now()
  const concurrencies = [1, 16, 64]

  const baseline = await loadBaseline()
  if (baseline.modules === undefined) log(`(no before/after: baseline ${baselineRef} unavailable: ${baseline.reason})`)

  log("1/9 client cost per fee quote ...")
  const clientRows = await runClientBench({
    concurrencies,
    ...(baseline.modules === undefined ? {} : { extraClients: baselineClients(baseline.modules) }),
    log
  })
  log("2/9 where the bare platform client's cost goes ...")
  const breakdownRows = await runClientBench({
    concurrencies: [16],
    rounds: 9,
    only: () => false,
    extraClients: breakdownClients,
    log
  })
  log("3/9 building blocks, and what each piece of a call costs ...")
  const blockRows = await runBlocks()
  const cutModules = await loadCuts()
  const ablationRows = await runClientBench({
    concurrencies: [16],
    rounds: 25,
    only: (name) => name === names.bareUndici || name === names.fullUndici,
    extraClients: (baseUrl) =>
      cutModules.map(([cut, modules]) =>
        fullStack(cutName(cut), names.bareUndici, baseUrl, NodeHttpClient.layerUndici, modules)
      ),
    log
  })
  log("4/9 token single flight ...")
  const tokenCases: Array<TokenCase> = [
    ["NodeHttpClient.layerUndici", NodeHttpClient.layerUndici],
    ["FetchHttpClient.layer", (await import("@effect/platform/FetchHttpClient")).layer],
    ["UndiciHttpClient.layer", (await import("../src/node/UndiciHttpClient.js")).layer]
  ]
  if (baseline.modules !== undefined) {
    tokenCases.push(["NodeHttpClient.layerUndici, before optimisations", NodeHttpClient.layerUndici, baseline.modules])
  }
  const tokenRows = await runTokenBench({ layers: tokenCases })
  log("5/9 subdivisions (bench/subdivisions.ts) ...")
  const subdivisionRows = await SubdivisionsBench.runSubdivisionsBench()
  log("6/9 webhooks (bench/webhooks.ts) ...")
  const webhookRows = await WebhooksBench.runWebhooksBench()
  log("7/9 token store reads (bench/redis.ts) ...")
  const redisRows = await RedisBench.runRedisBench()
  if (redisRows === undefined) log("(no token store rows: redis-server is not installed)")
  log("8/9 bundle sizes (bench/bundles.ts) ...")
  const bundleRows = await BundlesBench.runBundlesBench()
  log("9/9 large batches (bench/batches.ts) ...")
  const batchRows = await BatchesBench.runBatchesBench()
  const seconds = (performance.now() - started) / 1000

  const lines: Array<Line> = [
    ...clientRows.map(clientLine),
    ...tokenRows.map(tokenLine),
    ...subdivisionRows.map(subdivisionLine),
    ...webhookRows.map(webhookLine),
    ...(redisRows ?? []).map(redisLine),
    ...bundleRows.map(bundleLine),
    ...batchRows.map(batchLine)
  ]
  process.stdout.write(`${textTable(lines)}\n`)

  const versions = await Promise.all(
    ["effect", "@effect/platform", "@effect/platform-node", "undici", "esbuild"].map(async (p) =>
      `${p} ${await versionOf(p)}`
    )
  )
  const at = (library: string, c: number) => find(clientRows, library, c)
  const c16 = (library: string) => at(library, 16)
  const bd = (name: string) => breakdownRows.find((r) => r.library === name)
  const report = [
    "# Benchmarks",
    "",
    ...(await machineLines("npm run bench", loadAverage)),
    `Packages: ${versions.join(", ")}; Node's own fetch is undici ${process.versions.undici}.`,
    `Whole run: ${seconds.toFixed(0)} s. The machine may be shared (${Os.availableParallelism()} CPUs, other work ` +
    "may run): absolute figures move",
    "from run to run; the ratios, taken within each round, move much less.",
    "",
    "## Everything",
    "",
    lineTable(lines),
    "",
    "## Targets",
    "",
    targetsSection(clientRows, tokenRows, concurrencies),
    "",
    ...unmetNotes(clientRows, ablationRows),
    "",
    "## Client cost per fee quote",
    "",
    "Every client sends the same fee quote (same JSON body and headers; the bare platform clients add their span's",
    "`traceparent` and `b3`, which effect-fin sends only with `tracePropagation`) to the loopback server (bench/server.ts:",
    "plain node:http in its own process; token and fee-calculation routes with the documented example response; keep-alive)",
    "and reads the answer as JSON. Raw clients: `undici.request` on its own Agent + `body.text()` + `JSON.parse`; global",
    "`fetch` + `response.json()`. Bare platform clients: `HttpClientRequest.post` + `bodyUnsafeJson` + `execute` +",
    "`response.json` (no schema, no retry, no timeout). effect-fin: `FinClient.layer` + `FeeService.calculate` (request",
    "validation, cached token, retry policy and retry budget, per-attempt timeout and deadline, decode into `FeeQuote`,",
    "the answer checked against the currencies and amount asked, span, metrics).",
    "Each case is warmed up, calibrated to about 200 ms per round, and measured over 11 rounds; every round runs every",
    "case in a rotating order. CPU per call: `process.cpuUsage()` of the client process (user + system, all its threads",
    "incl. GC; the server excluded) over the round, median of the rounds; ratios are medians of per-round ratios;",
    "p50/p99 over every measured call. Concurrency N = N workers each awaiting one call after another (async functions",
    "for the raw clients, fibers for the others).",
    "",
    clientTable(clientRows),
    "",
    "Importing undici 7 installs its Agent as the global dispatcher, so in this process (as in any app that loads",
    "@effect/platform-node) Node's built-in `fetch` sends through an undici 7 Agent.",
    "",
    "## Where the bare platform client's cost goes",
    "",
    `NodeHttpClient.layerUndici costs ${x(c16(names.bareUndici)!.vsRawUndici)} raw undici's CPU per call at concurrency 16`,
    `(${x(at(names.bareUndici, 1)!.vsRawUndici)} at 1, ${x(at(names.bareUndici, 64)!.vsRawUndici)} at 64). The steps from one to the other, measured in a`,
    "second, shorter run (its figures differ a little from the table above; each step's ratio is taken within rounds):",
    "",
    breakdownTable(breakdownRows),
    "",
    "Reading the steps (and CPU profiles of `npx tsx bench/profile.ts bare-undici 16 20000`):",
    "",
    `- Effect itself is not the cost: undici's callback API inside \`Effect.async\`, run by fibers, costs about what raw`,
    `  undici costs (${bd(steps.effect)?.value.toFixed(0) ?? "—"} vs ${
      bd(names.rawUndici)?.value.toFixed(0) ?? "—"
    } µs), and an AbortController per request (which undici then listens to) adds a little.`,
    "- `HttpClient.make`, the platform's frame every client is built in, is the first large step even with the tracer",
    "  off: URL parsing, the interruption frame (`uninterruptibleMask` + `matchCauseEffect`), the response wrapped in an",
    "  `InterruptibleResponse` registered with a `FinalizationRegistry`, the body read through an interruptible wrapper.",
    "- Its `http.client` span is the next: about ten attributes per request (URL, method, every request and response",
    "  header, each redacted through `Headers.redact`), the span provided as parent (context copies), trace headers.",
    "  It is on by default; effect-fin switches it off for its own calls (the client runs with Effect's tracer off,",
    "  `Effect.withTracerEnabled(false)`, which the platform checks first, so no `withTracerDisabledWhen` of the " +
    "client's",
    "  turns it back on: its end holds the request, credentials included), its own span of the call standing in " +
    "for it.",
    "- NodeHttpClient's undici driver adds the rest: every request runs through `layerMergedContext` (the layer's whole",
    "  context merged into the request's: a `Context.merge` per request), `Effect.tryPromise` around a promise,",
    "  `response.headers` converted again on every access (the span reads them, then the caller), and the body read",
    "  through `Effect.cached` + `Effect.runSync` (a fiber per response).",
    "",
    "`UndiciHttpClient` (effect-fin/node) keeps `HttpClient.make` (so spans, trace headers, abort on interruption are",
    "the platform's own) and removes the driver's part: undici's callback API in `Effect.async`, no merged context,",
    "headers converted once, the body read once into a shared promise. The span and the frame remain, so the bare lean",
    `client is ${x(c16(names.bareLean)!.vsRawUndici)} raw undici at concurrency 16 (NodeHttpClient: ${x(c16(names.bareUndici)!.vsRawUndici)}).`,
    "",
    "## effect-fin's optimisations: before and after",
    "",
    `The full stack as it was at ${baselineRef} (bench/lib/baseline.ts extracts that commit's src/ and loads it beside`,
    "the current one) ran in the same rounds as everything above, on NodeHttpClient.layerUndici:",
    "",
    clientRows.some((r) => r.library === names.beforeUndici)
      ? beforeAfterSection(clientRows, concurrencies)
      : `(not measured: ${baseline.reason})`,
    "",
    "What profiling found and what changed (commits 527b013, 02e8e95, 5847f22, d8be23f, 2be07be, fe328e1; behaviour",
    "unchanged, tests green):",
    "",
    "1. **Timeouts** were the largest single cost: `Effect.timeoutFail` races the effect in one child fiber against",
    "   `Clock.sleep` in a second, then interrupts and awaits the loser, twice per call (per-attempt timeout and",
    "   deadline). `TimeLimits.timeoutFail` races one fiber against a `setTimeout` on the live clock (what its `sleep`",
    "   is); on any other clock (TestClock) it awaits the attempt's fiber under `Effect.timeoutOption` (3a0dc90:",
    "   not `Effect.timeoutFail`, which joins the attempt's fiber refs into the caller's), with the same outcomes.",
    "2. **Token**: `TokenProvider.get` took the `SynchronizedRef` lock on every call, even for a valid cached token, so",
    "   1,000 concurrent callers queued one after another behind it. A valid token, or a fetch in flight, is now read",
    "   without the lock; everything else goes through it as before.",
    "3. **Per call, only what the call needs**: options without per-call overrides resolved once (no `Effect.gen` over",
    "   them), tagged metrics made once per operation and outcome (`Metric.tagged` builds and hashes a key each time;",
    "   and a metric tagged twice merges its labels into a new array on every update, missing Effect's per-labels",
    "   cache, so the request count, and since 5c4199d the duration, get both labels in one `taggedWithLabels`),",
    "   the retry schedule built and driven only after a first failure (`Effect.retry` then sees that failure first, so",
    "   it decides as before), no stack trace captured for the span (it would only ever point at effect-fin's own line).",
    "4. **One step at the end** of a call for the span's outcome and the metrics (was `tapBoth` + `onExit` + `Effect.all`).",
    "5. **No fiber for the deadline** (fe328e1): the call's deadline was a timed fiber around the whole call; every wait",
    "   of the call is now cut at it instead: an attempt by its own timer (the deadline's when that comes first), the",
    "   token step only when it has to wait (a token at hand needs no timer), the 401's invalidation (and, since, the",
    "   wait for a `maxConcurrentRequests` slot, by a timer and no fiber); the retry policy's waits already ended before",
    "   it. One fiber per call fewer: about 0.1x of the ratio to the bare client (0.05x to 0.15x over five paired runs of",
    "   31 to 41 rounds, 2026-11-27); the limits are measured on monotonic time.",
    "",
    "Schemas and decoders were already built once (`Codecs.decoderFor` caches per schema; the request validator and",
    "the token decoder are module constants); nothing else was rebuilt per call. The building blocks alone",
    "(asynchronous no-op, 16 fibers, CPU per call above the no-op; bench/lib/blocks.ts):",
    "",
    blocksTable(blockRows),
    "",
    "## What each piece of a call costs",
    "",
    "Copies of src/ with one piece of a call cut out (bench/lib/ablation.ts; changes of behaviour, only to size each",
    "piece), run beside the full stack and the bare client in the same rounds (25 rounds, concurrency 16). What a",
    "piece is worth is the full stack's ratio to its bare client less the copy's. Clients in one process disturb each",
    "other (garbage collection, JIT): a figure moves by about 0.1x within a run, so a piece worth less than that (a",
    "negative figure included) is not told apart from noise.",
    "",
    ablationTable(ablationRows),
    "",
    "## Token single flight",
    "",
    "A fresh client each run (cold cache), 1,000 `TokenProvider.get` forked at once (`Effect.all`, unbounded), timed",
    "until all have their token; the server counts token requests. 7 runs after one warm-up run; all callers must get",
    "the same token.",
    "",
    tokenTable(tokenRows),
    "",
    "## Subdivisions (bench/subdivisions.ts)",
    "",
    SubdivisionsBench.toMarkdownTable(subdivisionRows),
    "",
    "\"met\" here: under the target and faster than every peer that offers the operation (the table above, " +
    "\"Everything\",",
    "counts the target alone).",
    "",
    "## Webhooks (bench/webhooks.ts)",
    "",
    WebhooksBench.toMarkdownTable(webhookRows),
    "",
    ...webhooksNotes(webhookRows),
    "## Token store reads (bench/redis.ts)",
    "",
    "`TokenStore.get` of a stored pair: what a process pays when its own cached token is due and it looks at the",
    "shared pair (once per expiry, not per call: calls read the provider's in-process cache). A redis-server on",
    "loopback started for the run; 5 rounds of 1 s after a warm-up, median round; 64 in flight = 64 fibers each",
    "awaiting one read after another (ioredis pipelines them on one connection).",
    "",
    redisRows === undefined ? "Not measured: redis-server is not installed." : RedisBench.redisTable(redisRows),
    "",
    "## Bundle sizes (bench/bundles.ts)",
    "",
    "What effect-fin adds to a minified esbuild bundle (ESM, platform node, `effect` and `@effect/*` external) of a",
    "program that only quotes fees: made from the fee path's modules alone, or with `FinClient`, which gives every",
    "service and so holds the offline subdivisions snapshot (read country by country on first lookup: no start-up",
    "cost).",
    "",
    BundlesBench.bundlesTable(bundleRows),
    "",
    "## Large batches (bench/batches.ts)",
    "",
    "5,000 fee quotes started at once through one client (`FinClient.make` on NodeHttpClient.layerUndici, `timeout:",
    "\"3 seconds\"` per attempt, other options at their defaults) against the emulator in its own process: with no",
    "bound, with the client's (`maxConcurrentRequests`), with the batch's own (`Effect.forEach`'s `concurrency`).",
    "After an untimed warm-up batch (1,000, bounded), each from a fresh client (cold token) and emulator, timed until",
    "every call ended; fee requests as the emulator counted them (retries included); sockets as the client opened",
    "them; heap: V8's used heap, its peak (garbage included, sampled every 10 ms) less its level before the batch, and",
    "the peak of the heap held (sampled after a full collection every 200 ms, in a second, untimed run of the batch,",
    "on a fresh emulator). One run of each, in this order.",
    "",
    BatchesBench.batchesTable(batchRows),
    "",
    // The chaos run is its own command (about a minute of faults); its last recorded result is kept with the rest.
    ...(await chaosSection()),
    "## How to reproduce",
    "",
    "```sh",
    "npm ci",
    "npm run bench                                   # everything: prints one table, writes BENCHMARKS.md",
    "npm run bench:clients                           # the client and token benchmarks alone",
    "npx tsx bench/profile.ts full-undici 16 20000   # a CPU profile of one client (see the file for the names)",
    "npx tsx bench/server.ts 8080                    # the loopback server alone",
    "npm run bench:subdivisions && npm run bench:webhooks && npm run bench:redis && npm run bench:bundles",
    "npm run bench:batches",
    "npm run bench:ladder                            # effect-fin's own cost per call, step by step, without I/O",
    "```",
    "",
    "The `bench` scripts run under bench/lib/loader.mjs, which compiles the TypeScript as tsup builds the package: tsx",
    "compiles with `keepNames` (a `__name` call for each function made at run time), 6-8% more CPU per fee quote for",
    "the full stack than the code that ships, measured in one process (it does not bundle as tsup does: within 2% of",
    "a bundle).",
    "",
    "Run on an otherwise idle machine for steadier absolute figures. `bench/profile.ts` bundles the client with esbuild,",
    "runs it with the V8 profiler on for the measured calls only (node:inspector) and prints self time by package and",
    "by function; the `.cpuprofile` files stay in bench/.profile/ for Chrome DevTools.",
    ""
  ].join("\n")
  const out = Path.join(root, "BENCHMARKS.md")
  await writeReport(out, report)
  log(`Wrote ${Path.relative(root, out)} (${seconds.toFixed(0)} s)`)
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
  process.exitCode = 1
})
