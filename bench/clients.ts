/**
 * Client cost per fee quote, and the token single flight, against the minimal loopback server (bench/server.ts, in
 * its own process so that only the client's work shows in `process.cpuUsage`).
 *
 *   npm run bench:clients          (part of `npm run bench`)
 *
 * Clients (bench/lib/clients.ts): raw `undici.request` + `JSON.parse`; bare `NodeHttpClient.layerUndici` (execute +
 * json); effect-fin's full stack (`FinClient.layer` + `FeeService.calculate`) on it; the same three on `fetch`; the
 * bare and full stack on effect-fin/node's `UndiciHttpClient`. Each case (client x concurrency 1, 16, 64) is warmed
 * up, then calibrated to about `roundMs` (200 ms) per round, 11 rounds; every round runs every case once, in a
 * rotating order, so a busy moment of a shared machine does not fall on one client only.
 * CPU per call is `process.cpuUsage()` (user + system, every thread of this process: JIT and GC included, the server
 * excluded) over the round divided by its calls; a figure is the median over the rounds, a ratio the median of the
 * per-round ratios. Latency percentiles are over every measured call of the case.
 */
import * as Effect from "effect/Effect"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import * as UndiciHttpClient from "../src/node/UndiciHttpClient.js"
import type { Modules } from "./lib/baseline.js"
import { type BenchClient, freshTokenProvider, makeClients, names } from "./lib/clients.js"
import { startServer } from "./server.js"

/** One figure of the client benchmark. */
export interface ClientRow {
  readonly suite: "clients"
  readonly operation: string
  readonly library: string
  readonly concurrency: number
  /** Client CPU microseconds per call (median over rounds). */
  readonly value: number
  readonly unit: "µs CPU/call"
  /** Calls per second (median over rounds). */
  readonly throughput: number
  readonly p50: number
  readonly p99: number
  /** Median per-round ratio of CPU per call to raw undici's. */
  readonly vsRawUndici: number
  /** For effect-fin: median per-round ratio of CPU per call to the bare platform client it runs on. */
  readonly vsBase?: number
  readonly base?: string
  readonly calls: number
}

/** One figure of the single-flight benchmark. */
export interface TokenRow {
  readonly suite: "token"
  readonly operation: string
  readonly library: string
  /** Milliseconds until all callers had their token (median over runs). */
  readonly value: number
  readonly unit: "ms"
  /** Token requests the server counted, per run. */
  readonly tokenRequests: ReadonlyArray<number>
  readonly runs: ReadonlyArray<number>
}

export interface ClientBenchOptions {
  readonly concurrencies?: ReadonlyArray<number>
  readonly rounds?: number
  readonly roundMs?: number
  /** Extra clients (e.g. another platform layer), shown after the default ones. */
  readonly extraClients?: (baseUrl: string) => ReadonlyArray<BenchClient>
  /** Keeps only the default clients whose name passes (raw undici, the baseline of the ratios, always stays). */
  readonly only?: (name: string) => boolean
  readonly log?: (line: string) => void
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const percentile = (sorted: Float64Array, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!

const cpuMicros = (): number => {
  const u = process.cpuUsage()
  return u.user + u.system
}

interface Case {
  readonly client: BenchClient
  readonly concurrency: number
  n: number
  readonly cpu: Array<number>
  readonly rate: Array<number>
  latencies: Float64Array
  filled: number
}

/** Runs the client comparison and returns one row per client and concurrency. */
export const runClientBench = async (options: ClientBenchOptions = {}): Promise<ReadonlyArray<ClientRow>> => {
  const concurrencies = options.concurrencies ?? [1, 16, 64]
  const rounds = options.rounds ?? 11
  const roundMs = options.roundMs ?? 200
  const log = options.log ?? (() => {})
  const server = await startServer()
  const clients = [
    ...makeClients(server.baseUrl).filter((c) => c.name === names.rawUndici || (options.only?.(c.name) ?? true)),
    ...(options.extraClients?.(server.baseUrl) ?? [])
  ]
  try {
    const cases: Array<Case> = []
    for (const concurrency of concurrencies) {
      for (const client of clients) {
        cases.push({ client, concurrency, n: 0, cpu: [], rate: [], latencies: new Float64Array(0), filled: 0 })
      }
    }
    // Warm-up: JIT, connection pools, the token; then calibration to about `roundMs` per round.
    const scratch = new Float64Array(1 << 16)
    for (const c of cases) await c.client.run(Math.max(400, c.concurrency * 20), c.concurrency, scratch)
    for (const c of cases) {
      let n = Math.max(50, c.concurrency * 4)
      for (;;) {
        const start = performance.now()
        await c.client.run(n, c.concurrency, scratch)
        const elapsed = performance.now() - start
        if (elapsed >= roundMs / 2 || n >= scratch.length / 2) {
          c.n = Math.min(scratch.length, Math.max(c.concurrency * 4, Math.round((n * roundMs) / elapsed)))
          break
        }
        n *= 2
      }
      c.latencies = new Float64Array(c.n * rounds)
      log(`  calibrated ${c.client.name} @${c.concurrency}: ${c.n} calls per round`)
    }
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < cases.length; k++) {
        const c = cases[(k + round) % cases.length]!
        const latencies = c.latencies.subarray(c.filled, c.filled + c.n)
        const cpu0 = cpuMicros()
        const t0 = performance.now()
        await c.client.run(c.n, c.concurrency, latencies)
        const elapsed = performance.now() - t0
        const cpu = cpuMicros() - cpu0
        c.filled += c.n
        c.cpu.push(cpu / c.n)
        c.rate.push(c.n / (elapsed / 1000))
      }
      log(`  round ${round + 1} of ${rounds} done`)
    }
    const find = (name: string, concurrency: number) =>
      cases.find((c) => c.client.name === name && c.concurrency === concurrency)
    return cases.map((c): ClientRow => {
      const raw = find(names.rawUndici, c.concurrency)!
      const base = c.client.base === undefined ? undefined : find(c.client.base, c.concurrency)
      const sorted = Float64Array.from(c.latencies).sort()
      return {
        suite: "clients",
        operation: `fee quote, concurrency ${c.concurrency}`,
        library: c.client.name,
        concurrency: c.concurrency,
        value: median(c.cpu),
        unit: "µs CPU/call",
        throughput: median(c.rate),
        p50: percentile(sorted, 0.5),
        p99: percentile(sorted, 0.99),
        vsRawUndici: median(c.cpu.map((v, r) => v / raw.cpu[r]!)),
        ...(base === undefined ? {} : { vsBase: median(c.cpu.map((v, r) => v / base.cpu[r]!)), base: base.client.name }),
        calls: c.n * rounds
      }
    })
  } finally {
    for (const client of clients) await client.dispose()
    await server.close()
  }
}

/** A platform layer for the single-flight benchmark, and optionally another copy of effect-fin (the baseline). */
export type TokenCase = readonly [string, Layer.Layer<HttpClient.HttpClient>, Modules?]

const defaultTokenCases: ReadonlyArray<TokenCase> = [
  ["NodeHttpClient.layerUndici", NodeHttpClient.layerUndici],
  ["FetchHttpClient.layer", FetchHttpClient.layer],
  ["UndiciHttpClient.layer", UndiciHttpClient.layer]
]

/**
 * Token single flight: `callers` concurrent `TokenProvider.get` on a cold cache (a fresh client each run); the
 * server counts the token requests. Returns one row per platform layer.
 */
export const runTokenBench = async (
  options: {
    readonly callers?: number
    readonly runs?: number
    readonly layers?: ReadonlyArray<TokenCase>
  } = {}
): Promise<ReadonlyArray<TokenRow>> => {
  const callers = options.callers ?? 1000
  const runs = options.runs ?? 7
  const layers = options.layers ?? defaultTokenCases
  const server = await startServer()
  try {
    const rows: Array<TokenRow> = []
    for (const [library, layer, modules] of layers) {
      const times: Array<number> = []
      const counts: Array<number> = []
      for (let run = 0; run < runs + 1; run++) {
        const { runtime, tokens } = await freshTokenProvider(server.baseUrl, layer, modules)
        try {
          await server.reset()
          const t0 = performance.now()
          const all = await runtime.runPromise(
            Effect.all(Array.from({ length: callers }, () => tokens.get), { concurrency: "unbounded" })
          )
          const elapsed = performance.now() - t0
          const stats = await server.reset()
          const first = Redacted.value(all[0]!)
          if (all.length !== callers || all.some((t) => Redacted.value(t) !== first)) {
            throw new Error("single flight: callers got different tokens")
          }
          // Run 0 warms the code paths up (first connection, JIT) and is not reported.
          if (run > 0) {
            times.push(elapsed)
            counts.push(stats.tokenRequests)
          }
        } finally {
          await runtime.dispose()
        }
      }
      rows.push({
        suite: "token",
        operation: `${callers.toLocaleString("en-US")} concurrent TokenProvider.get, cold cache`,
        library,
        value: median(times),
        unit: "ms",
        tokenRequests: counts,
        runs: times
      })
    }
    return rows
  } finally {
    await server.close()
  }
}

const fmt = (v: number, digits = 1) => v.toFixed(digits)

/** The client rows as a markdown table, one line per client and concurrency. */
export const clientTable = (rows: ReadonlyArray<ClientRow>): string => {
  const lines = [
    "| client | conc. | CPU µs/call | vs raw undici | effect-fin vs its bare client | calls/s | p50 ms | p99 ms |",
    "|---|---:|---:|---:|---:|---:|---:|---:|"
  ]
  for (const r of rows) {
    lines.push(
      `| ${r.library} | ${r.concurrency} | ${fmt(r.value)} | ${r.vsRawUndici.toFixed(2)}x | ${
        r.vsBase === undefined ? "" : `${r.vsBase.toFixed(2)}x`
      } | ${Math.round(r.throughput).toLocaleString("en-US")} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} |`
    )
  }
  return lines.join("\n")
}

/** The token rows as a markdown table. */
export const tokenTable = (rows: ReadonlyArray<TokenRow>): string => {
  const lines = [
    "| operation | platform client | time until all done (median) | runs (ms) | token requests per run | exactly 1 |",
    "|---|---|---:|---|---|---|"
  ]
  for (const r of rows) {
    lines.push(
      `| ${r.operation} | ${r.library} | ${r.value.toFixed(1)} ms | ${r.runs.map((t) => t.toFixed(1)).join(", ")} | ${
        r.tokenRequests.join(", ")
      } | ${r.tokenRequests.every((c) => c === 1) ? "yes" : "no"} |`
    )
  }
  return lines.join("\n")
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href) {
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const started = performance.now()
  runClientBench({ log })
    .then(async (rows) => {
      process.stdout.write(`${clientTable(rows)}\n\n`)
      process.stdout.write(`${tokenTable(await runTokenBench())}\n`)
      log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`)
    })
    .catch((e: unknown) => {
      process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
      process.exitCode = 1
    })
}
