/**
 * Benchmark of webhook signature verification: verifications per second for a 1 KiB body, raw node:crypto (HMAC +
 * `timingSafeEqual`, as in Fin's verification guide) beside `Webhooks.verifySignature` on both `WebhookCrypto` layers,
 * one at a time and 64 in flight, in the same run.
 *
 *   npm run bench:webhooks
 *
 * Each case is warmed up and calibrated to about 100 ms per round, then measured over 15 rounds; every round runs
 * every case, in a rotating order. A figure is the median over the rounds, and a ratio to raw node:crypto is the
 * median of the per-round ratios, so a machine shared with other work (load changing from one second to the next)
 * skews it as little as possible. "64 in flight" means 64 concurrent workers that each await one verification after
 * another (async functions for the raw cases, fibers for the layers). Prints a table and writes bench/results/webhooks.md.
 * `runWebhooksBench()` returns the rows, for a combined `npm run bench`.
 */
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import { execFile } from "node:child_process"
import { createHmac, timingSafeEqual } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { NodeWebhookCrypto } from "../src/node/index.js"
import * as Webhooks from "../src/Webhooks.js"

/**
 * One figure of a benchmark: `library` did `operation` at `value` `unit`. Same fields as the subdivisions bench's
 * rows; the unit here is a rate.
 */
export interface BenchRow {
  readonly suite: string
  readonly operation: string
  readonly library: string
  readonly value: number
  readonly unit: "ops/s"
  /** The goal, e.g. `>= 0.8x raw`. */
  readonly target?: string
  /** Median over the rounds of this case's rate divided by raw node:crypto's rate in the same round and mode. */
  readonly relative?: number
  readonly note?: string
}

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const suite = "webhooks"
const concurrency = 64

// ---------------------------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------------------------

const secretValue = "whsec_bench_3d9f1c7a5b2e4d6f8a0c1e3f5a7b9c1d"
const secret = Redacted.make(secretValue)

// A documented beneficiary.status envelope padded to exactly 1 KiB (the padding is an extra field the schema drops).
const makeBody = (): Uint8Array<ArrayBuffer> => {
  const envelope = (padding: string) =>
    JSON.stringify({
      event: {
        id: "40061557-f125-4b39-97d6-c16a0f1230c1",
        event_reference_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
        type: "beneficiary.status",
        created_at: "2026-04-04T17:38:26.843132Z",
        sandbox_mode: true
      },
      data: {
        type: "INDIVIDUAL",
        active: false,
        status: "PROCESSING",
        customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
        beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
        note: padding
      }
    })
  const text = envelope("x".repeat(1024 - envelope("").length))
  const bytes = new TextEncoder().encode(text)
  if (bytes.length !== 1024) throw new Error(`body is ${bytes.length} bytes`)
  return bytes
}

// An ArrayBuffer-backed view, as WebCrypto's typings want.
const body: Uint8Array<ArrayBuffer> = makeBody()
const signatureHex = createHmac("sha256", secretValue).update(body).digest("hex")
const headers = { "x-fin-signature": signatureHex, "x-fin-signature-algorithm": "sha256" }

// ---------------------------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------------------------

interface Case {
  readonly operation: string
  readonly library: string
  /** Runs `n` verifications; rejects if one fails. */
  readonly run: (n: number) => Promise<void>
  readonly target?: string
  readonly note?: string
}

// The verification guide's Node code: HMAC as hex, constant-time comparison of the two hex strings.
const rawNode = (): boolean => {
  const expected = createHmac("sha256", secretValue).update(body).digest("hex")
  return expected.length === signatureHex.length &&
    timingSafeEqual(Buffer.from(expected), Buffer.from(signatureHex))
}

const rawSequential = (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) if (!rawNode()) return Promise.reject(new Error("raw verification failed"))
  return Promise.resolve()
}

// `workers` async loops share `n` tasks; each awaits its task before taking the next.
const inFlight = async (n: number, workers: number, task: () => Promise<void>): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < n) {
      next++
      await task()
    }
  }
  await Promise.all(Array.from({ length: workers }, worker))
}

const rawAsync = async (): Promise<void> => {
  if (!rawNode()) throw new Error("raw verification failed")
}

// WebCrypto with the key imported once and the signature decoded once.
const makeRawWeb = async (): Promise<() => Promise<void>> => {
  const subtle = globalThis.crypto.subtle
  const signatureBytes = Uint8Array.from(Buffer.from(signatureHex, "hex"))
  const key = await subtle.importKey("raw", new TextEncoder().encode(secretValue), {
    name: "HMAC",
    hash: "SHA-256"
  }, false, ["verify"])
  return async () => {
    if (!(await subtle.verify("HMAC", key, signatureBytes, body))) throw new Error("WebCrypto verification failed")
  }
}

// Built per call, as a server builds it per delivery.
const verifyOnce = () => Webhooks.verifySignature(body, headers, secret)

// `workers` fibers share `n` runs of `effect()`, each fiber one run after another. `whileLoop` is the cheapest Effect
// loop, so the harness adds as little as the raw cases' plain loops do.
const inFibers = (effect: () => Effect.Effect<unknown, unknown>, workers: number) => (n: number) =>
  Effect.suspend(() => {
    let next = 0
    const worker = Effect.whileLoop({
      while: () => next < n,
      body: () => {
        next++
        return effect()
      },
      step: () => undefined
    })
    return workers === 1 ? worker : Effect.all(Array.from({ length: workers }, () => worker), {
      concurrency: workers,
      discard: true
    })
  })

const sequentialEffect = (effect: () => Effect.Effect<unknown, unknown>) => inFibers(effect, 1)
const concurrentEffect = (effect: () => Effect.Effect<unknown, unknown>) => inFibers(effect, concurrency)

const layerCases = (
  library: string,
  runtime: ManagedRuntime.ManagedRuntime<Webhooks.WebhookCrypto, never>,
  targets: { readonly sequential?: string; readonly concurrent?: string }
): ReadonlyArray<Case> => [
  {
    operation: "verify signature, 1 at a time",
    library,
    run: (n) => runtime.runPromise(sequentialEffect(verifyOnce)(n)),
    ...(targets.sequential === undefined ? {} : { target: targets.sequential })
  },
  {
    operation: `verify signature, ${concurrency} in flight`,
    library,
    run: (n) => runtime.runPromise(concurrentEffect(verifyOnce)(n)),
    ...(targets.concurrent === undefined ? {} : { target: targets.concurrent })
  }
]

const rawNodeLibrary = "raw node:crypto"

// ---------------------------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------------------------

const roundMs = 100
const rounds = 15

// Smallest n (doubling) whose run takes at least `ms`, after a warm-up.
const calibrate = async (run: (n: number) => Promise<void>, ms: number): Promise<number> => {
  let n = 64
  for (;;) {
    const start = performance.now()
    await run(n)
    const elapsed = performance.now() - start
    if (elapsed >= ms) return n
    n = Math.ceil(n * Math.min(16, Math.max(2, (ms * 1.1) / Math.max(elapsed, 0.01))))
  }
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

// libuv's thread pool, where Node runs WebCrypto's HMAC jobs, has 4 threads unless UV_THREADPOOL_SIZE says otherwise
// before the pool starts: hence a process of its own for the in-flight cases with one thread.
const poolChildFlag = "--one-pool-thread"
/** The name of a case run with one pool thread. */
export const poolLibrary = (library: string) => `${library}, UV_THREADPOOL_SIZE=1`
const poolNote = "libuv's thread pool (WebCrypto's HMAC jobs run there) with 1 thread instead of 4, in a process of " +
  "its own: on this machine's 2 CPUs the hand-off to 4 threads costs more than the HMAC. A process setting (the " +
  "pool also serves fs and dns), the deployment's to choose; measured for scale, no target"

const onePoolThread = (): Promise<ReadonlyArray<BenchRow>> =>
  new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), poolChildFlag],
      { env: { ...process.env, UV_THREADPOOL_SIZE: "1" }, maxBuffer: 1 << 20 },
      (error, stdout) => {
        if (error !== null) return reject(error)
        const rows = JSON.parse(stdout) as ReadonlyArray<BenchRow>
        resolve(rows.map(({ target: _, ...row }, i) => ({
          ...row,
          library: poolLibrary(row.library),
          ...(i === 0 ? { note: poolNote } : {})
        })))
      }
    )
  )

/**
 * Runs the whole benchmark and returns one row per case; `relative` notes compare with raw node:crypto in the same
 * mode. `inFlightOnly` keeps the cases with many in flight (the process with one pool thread runs those).
 */
export const runWebhooksBench = async (
  options: { readonly inFlightOnly?: boolean } = {}
): Promise<ReadonlyArray<BenchRow>> => {
  const nodeRuntime = ManagedRuntime.make(NodeWebhookCrypto.layer)
  const webRuntime = ManagedRuntime.make(Webhooks.layerWebCrypto)
  const rawWeb = await makeRawWeb()
  try {
    const all: ReadonlyArray<Case> = [
      { operation: "verify signature, 1 at a time", library: rawNodeLibrary, run: rawSequential },
      {
        operation: `verify signature, ${concurrency} in flight`,
        library: rawNodeLibrary,
        run: (n) => inFlight(n, concurrency, rawAsync)
      },
      ...layerCases("effect-fin NodeWebhookCrypto", nodeRuntime, {
        sequential: ">= 0.8x raw",
        concurrent: ">= 0.8x raw"
      }),
      ...layerCases("effect-fin WebCrypto (default)", webRuntime, { concurrent: ">= 0.5x raw" }),
      {
        operation: "verify signature, 1 at a time",
        library: "raw WebCrypto subtle.verify",
        run: async (n) => {
          for (let i = 0; i < n; i++) await rawWeb()
        },
        note: "key imported once, signature bytes decoded once: the floor of any WebCrypto verifier on this Node"
      },
      {
        operation: `verify signature, ${concurrency} in flight`,
        library: "raw WebCrypto subtle.verify",
        run: (n) => inFlight(n, concurrency, rawWeb)
      },
      {
        operation: "verify + decode event, 1 at a time",
        library: "effect-fin NodeWebhookCrypto",
        run: (n) => nodeRuntime.runPromise(sequentialEffect(() => Webhooks.verify(body, headers, secret))(n)),
        note: "Webhooks.verify: signature, UTF-8 and JSON parse, schema decode (for scale; no target)"
      }
    ]
    const cases = options.inFlightOnly === true
      ? all.filter((c) => c.operation.endsWith("in flight") && !c.library.includes("NodeWebhookCrypto"))
      : all
    const sizes: Array<number> = []
    // Warm-up (JIT, key caches, thread pool), then calibration.
    for (const c of cases) await calibrate(c.run, roundMs)
    for (const c of cases) sizes.push(await calibrate(c.run, roundMs))
    const rates: Array<Array<number>> = cases.map(() => [])
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < cases.length; k++) {
        const i = (k + round) % cases.length
        const n = sizes[i]!
        const start = performance.now()
        await cases[i]!.run(n)
        rates[i]!.push(n / ((performance.now() - start) / 1000))
      }
    }
    const rawIndex = (operation: string) =>
      cases.findIndex((c) => c.library === rawNodeLibrary && c.operation === operation)
    const rows = cases.map((c, i): BenchRow => {
      const raw = rawIndex(c.operation)
      const relative = raw < 0 ? undefined : median(rates[i]!.map((rate, round) => rate / rates[raw]![round]!))
      return {
        suite,
        operation: c.operation,
        library: c.library,
        value: median(rates[i]!),
        unit: "ops/s",
        ...(c.target === undefined ? {} : { target: c.target }),
        ...(relative === undefined ? {} : { relative }),
        ...(c.note === undefined ? {} : { note: c.note })
      }
    })
    // After this process's own rounds, so the two never share the CPUs.
    return options.inFlightOnly === true ? rows : [...rows, ...(await onePoolThread())]
  } finally {
    await Promise.all([nodeRuntime.dispose(), webRuntime.dispose()])
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------------

/**
 * The rows as a markdown table, with each figure relative to raw node:crypto in the same mode and whether the target
 * is met.
 */
export const toMarkdownTable = (rows: ReadonlyArray<BenchRow>): string => {
  const lines = [
    "| operation | implementation | verifications/s | vs raw node:crypto (same mode) | target | met |",
    "|---|---|---:|---:|---|---|"
  ]
  for (const row of rows) {
    const ratio = row.relative
    const wanted = row.target === undefined ? undefined : Number(/[\d.]+/.exec(row.target)?.[0])
    const met = wanted === undefined || ratio === undefined ? "" : ratio >= wanted ? "yes" : "no"
    lines.push(
      `| ${row.operation} | ${row.library} | ${Math.round(row.value).toLocaleString("en-US")} | ` +
        `${ratio === undefined ? "—" : `${ratio.toFixed(2)}x`} | ${row.target ?? ""} | ${met} |`
    )
  }
  return lines.join("\n")
}

const cpuModel = async (): Promise<string> => {
  try {
    const info = await Fs.readFile("/proc/cpuinfo", "utf8")
    return /^model name\s*:\s*(.+)$/m.exec(info)?.[1]?.trim() ?? Os.cpus()[0]?.model ?? "unknown"
  } catch {
    return Os.cpus()[0]?.model ?? "unknown"
  }
}

const main = async () => {
  const loadBefore = Os.loadavg()
  const rows = await runWebhooksBench()
  const table = toMarkdownTable(rows)
  const notes = rows.filter((r) => r.note !== undefined).map((r) => `- ${r.library}, ${r.operation}: ${r.note}`)
  const section = [
    "## Webhooks",
    "",
    `Machine: Node ${process.version}, ${Os.availableParallelism()} CPUs (nproc), ${await cpuModel()}, ` +
      `load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} before the run and ` +
      `${Os.loadavg().map((l) => l.toFixed(2)).join(" ")} after it (the machine may be shared: other work skews the ` +
      "figures, the per-round ratios less so).",
    `Command: \`npm run bench:webhooks\` (${new Date().toISOString().slice(0, 10)}).`,
    "",
    table,
    "",
    "Body: a documented `beneficiary.status` envelope padded to 1 KiB, sha256, one secret. Raw node:crypto is the",
    "verification guide's code (HMAC as hex, `timingSafeEqual` on the hex). The layers run `Webhooks.verifySignature`",
    "(header lookup, algorithm allow-list, hex decode, cached key, HMAC, constant-time compare) inside Effect. Each case",
    `is calibrated to ~${roundMs} ms per round; ${rounds} rounds, each running every case in a rotating order. Figures are`,
    "medians over the rounds; ratios are medians of the per-round ratios to raw node:crypto in the same mode.",
    `"${concurrency} in flight": ${concurrency} concurrent workers (async functions or fibers), each awaiting one`,
    "verification after another.",
    "",
    ...notes,
    ""
  ].join("\n")
  process.stdout.write(`${table}\n\n${notes.join("\n")}\n`)
  const out = Path.join(root, "bench/results/webhooks.md")
  await Fs.mkdir(Path.dirname(out), { recursive: true })
  await Fs.writeFile(`${out}.tmp`, section)
  await Fs.rename(`${out}.tmp`, out)
  process.stdout.write(`\nWrote ${Path.relative(root, out)}\n`)
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href

if (isMain && process.argv[2] === poolChildFlag) {
  runWebhooksBench({ inFlightOnly: true }).then(
    (rows) => process.stdout.write(JSON.stringify(rows)),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
      process.exitCode = 1
    }
  )
} else if (isMain) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
    process.exitCode = 1
  })
}
