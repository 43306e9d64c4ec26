/**
 * Large batches: 5,000 fee quotes started at once through one client (`FinClient.make` on
 * `NodeHttpClient.layerUndici`, `timeout: "3 seconds"` per attempt, every other option at its default) against the
 * emulator in its own process, three ways: no bound at all (`Effect.forEach(..., { concurrency: "unbounded" })`), the
 * client's bound (`maxConcurrentRequests: 64`, the batch still unbounded), and the batch's own bound
 * (`{ concurrency: 64 }`). What the README's "Large batches" says, measured.
 *
 *   npm run bench:batches
 *
 * First an untimed warm-up (a bounded batch of 1,000), so that the first case does not pay for the JIT alone. Each
 * case: a fresh emulator and client (cold token), then the batch, timed until every call has ended. Reported: that
 * time, how the calls ended (successes, failures by tag), the fee requests the emulator got (retries included), the
 * sockets the client opened (`net.client.socket`), and the process's heap (the client, the batch's fibers and their
 * results) in two ways: the peak of V8's used heap, garbage not yet collected included (sampled every 10 ms, when the
 * busy event loop lets the sampler run), and, in a second run of the batch with a fresh client and emulator, the peak
 * of the heap held (sampled after a full collection every 200 ms, which slows that run down: it is not timed). Each
 * less the heap before the batch. One run of each case, in the order above. `runBatchesBench()` returns the rows,
 * for `npm run bench`.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { spawn } from "node:child_process"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import * as FinClient from "../src/FinClient.js"
import type * as FinConfig from "../src/FinConfig.js"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

/** How one batch went. */
export interface BatchRow {
  readonly suite: "batches"
  /** How the batch was bounded. */
  readonly bound: string
  readonly calls: number
  readonly seconds: number
  readonly successes: number
  /** Failed calls by error tag. */
  readonly failures: Readonly<Record<string, number>>
  /** Fee requests the emulator got (attempts, retries included; not one its client gave up on before it was read). */
  readonly requests: number
  readonly socketsOpened: number
  /** Peak of the used heap during the batch, garbage included, less the heap before it, in MB (10^6 bytes). */
  readonly heapPeakMB: number
  /** Peak of the heap held (sampled after a full collection) during a second run of the batch, less before it, MB. */
  readonly heldPeakMB: number
}

const calls = 5_000
const bound = 64

interface Case {
  readonly bound: string
  readonly options: Partial<FinConfig.Options>
  readonly concurrency: number | "unbounded"
}

const cases: ReadonlyArray<Case> = [
  { bound: "none (concurrency \"unbounded\")", options: {}, concurrency: "unbounded" },
  {
    bound: `maxConcurrentRequests: ${bound} (batch unbounded)`,
    options: { maxConcurrentRequests: bound },
    concurrency: "unbounded"
  },
  { bound: `the batch's own ({ concurrency: ${bound} })`, options: {}, concurrency: bound }
]

// V8's collector, for a level start to each case (the bench does not run with --expose-gc).
V8.setFlagsFromString("--expose-gc")
const gc = Vm.runInNewContext("gc") as () => void

/** The emulator in a child process (the CLI's `emulator` command on a free port), until `stop`. */
const startEmulator = (): Promise<{ readonly url: string; readonly stop: () => Promise<void> }> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "./bench/lib/register.mjs", "src/cli/bin.ts", "emulator", "--port", "0"],
      { cwd: root, stdio: ["ignore", "pipe", "inherit"] }
    )
    let out = ""
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (text: string) => {
      out += text
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]
      if (url !== undefined) {
        child.stdout.removeAllListeners("data")
        child.stdout.resume()
        resolve({
          url,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done()
              child.once("exit", () => done())
              child.kill("SIGTERM")
            })
        })
      }
    })
    child.once("exit", (code) => reject(new Error(`the emulator exited (${code}) before listening:\n${out}`)))
  })

const admin = async (url: string, path: string): Promise<unknown> => {
  const response = await fetch(`${url}/__emulator/${path}`)
  if (!response.ok) throw new Error(`GET /__emulator/${path}: ${response.status}`)
  return response.json()
}

const currencies = ["CAD", "EUR", "GBP", "AUD"] as const

const quotes = (client: FinClient.Client, concurrency: number | "unbounded", count = calls) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) =>
      Effect.exit(client.fees.calculate({
        source_currency: "USD",
        source_amount: 100 + (i % 50),
        destination_currency: currencies[i % currencies.length]!
      })),
    { concurrency }
  )

// A client as every pass makes it: a 3 s limit per attempt, the case's options, every other option at its default.
const makeClient = (url: string, credentials: FinConfig.Options, options: Partial<FinConfig.Options>) =>
  FinClient.make({ ...credentials, baseUrl: url, timeout: "3 seconds", ...options })

// Runs `self` beside a sampler of V8's used heap (every `every` ms, after a full collection when `collect`); returns
// its value and the peak less the heap's level before it (after a collection), in MB.
const sampled = <A, E, R>(self: Effect.Effect<A, E, R>, every: number, collect: boolean) =>
  Effect.gen(function*() {
    gc()
    const before = V8.getHeapStatistics().used_heap_size
    let peak = before
    const sample = () => {
      if (collect) gc()
      peak = Math.max(peak, V8.getHeapStatistics().used_heap_size)
    }
    const sampler = setInterval(sample, every)
    const value = yield* Effect.ensuring(self, Effect.sync(() => clearInterval(sampler)))
    if (!collect) sample()
    return [value, (peak - before) / 1e6] as const
  })

// The timed pass: how the calls ended, the sockets they opened, the used heap's peak (garbage included).
const timed = (url: string, credentials: FinConfig.Options, c: Case) =>
  Effect.scoped(Effect.gen(function*() {
    const client = yield* makeClient(url, credentials, c.options)
    const sockets = new Set<unknown>()
    const onSocket = (message: unknown) => void sockets.add((message as { readonly socket: unknown }).socket)
    DiagnosticsChannel.subscribe("net.client.socket", onSocket)
    yield* Effect.addFinalizer(() => Effect.sync(() => DiagnosticsChannel.unsubscribe("net.client.socket", onSocket)))
    const started = performance.now()
    const [exits, heapPeakMB] = yield* sampled(quotes(client, c.concurrency), 10, false)
    const seconds = (performance.now() - started) / 1000
    const failures: Record<string, number> = {}
    let successes = 0
    for (const exit of exits) {
      if (Exit.isSuccess(exit)) {
        successes += 1
      } else {
        const tag = exit.cause._tag === "Fail" ? exit.cause.error._tag : `defect or interruption (${exit.cause._tag})`
        failures[tag] = (failures[tag] ?? 0) + 1
      }
    }
    return { seconds, successes, failures, socketsOpened: sockets.size, heapPeakMB }
  }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

// The memory pass, apart (its collections slow the calls down): the heap held, sampled after a full collection.
const held = (url: string, credentials: FinConfig.Options, c: Case) =>
  Effect.scoped(Effect.gen(function*() {
    const client = yield* makeClient(url, credentials, c.options)
    return (yield* sampled(quotes(client, c.concurrency), 200, true))[1]
  }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

// Runs `f` against an emulator of its own, stopped afterwards.
const withEmulator = async <A>(f: (url: string, credentials: FinConfig.Options) => Promise<A>): Promise<A> => {
  const emulator = await startEmulator()
  try {
    const info = await admin(emulator.url, "") as { readonly credentials: FinConfig.Options }
    return await f(emulator.url, info.credentials)
  } finally {
    await emulator.stop()
  }
}

/**
 * Runs the warm-up, then every case and its heap pass, each against an emulator of its own (none still busy with
 * requests an earlier pass abandoned).
 */
export const runBatchesBench = async (): Promise<ReadonlyArray<BatchRow>> => {
  await withEmulator((url, credentials) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const client = yield* makeClient(url, credentials, {})
      yield* quotes(client, bound, 1_000)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))))
  )
  const rows: Array<BatchRow> = []
  for (const c of cases) {
    const { counters, result } = await withEmulator(async (url, credentials) => ({
      result: await Effect.runPromise(timed(url, credentials, c)),
      counters: await admin(url, "counters") as { readonly requests: Record<string, number> }
    }))
    const heldPeakMB = await withEmulator((url, credentials) => Effect.runPromise(held(url, credentials, c)))
    rows.push({
      suite: "batches",
      bound: c.bound,
      calls,
      ...result,
      heldPeakMB,
      requests: counters.requests["POST /v1/fee-calculation"] ?? 0
    })
  }
  return rows
}

const outcome = (r: BatchRow): string => {
  const failed = Object.entries(r.failures).sort(([, a], [, b]) => b - a)
  return [
    `${r.successes.toLocaleString("en-US")} succeeded`,
    ...failed.map(([tag, n]) => `${n.toLocaleString("en-US")} ${tag}`)
  ].join(", ")
}

/** One line of the combined table per batch. */
export const describeRow = (r: BatchRow): string =>
  `${r.seconds.toFixed(1)} s; ${outcome(r)}; ${r.requests.toLocaleString("en-US")} requests, ${
    r.socketsOpened.toLocaleString("en-US")
  } sockets; used heap peak +${r.heapPeakMB.toFixed(0)} MB, held +${r.heldPeakMB.toFixed(0)} MB`

/** The rows as a Markdown table. */
export const batchesTable = (rows: ReadonlyArray<BatchRow>): string =>
  [
    "| bound | calls | until all ended | how they ended | fee requests the emulator got | sockets opened | " +
    "used heap peak | heap held, peak |",
    "|---|---:|---:|---|---:|---:|---:|---:|",
    ...rows.map((r) =>
      `| ${r.bound} | ${r.calls.toLocaleString("en-US")} | ${r.seconds.toFixed(1)} s | ${outcome(r)} | ${
        r.requests.toLocaleString("en-US")
      } | ${r.socketsOpened.toLocaleString("en-US")} | +${r.heapPeakMB.toFixed(0)} MB | +${
        r.heldPeakMB.toFixed(0)
      } MB |`
    )
  ].join("\n")

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href) {
  runBatchesBench().then(
    (rows) => console.log(batchesTable(rows)),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
      process.exitCode = 1
    }
  )
}
