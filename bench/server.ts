/**
 * The minimal loopback server of the client benchmarks: a plain `node:http` server meant to run in its own process,
 * so that its work never counts in the client's `process.cpuUsage`. It answers
 *
 * - `POST /v1/oauth/token` with a long-lived token in the service's format (`access_token_ttl` like
 *   `2025-12-28 10:34:45+00`, `current_time` beside it), counting every call;
 * - `POST /v1/fee-calculation` with the documented example response (fixed bytes);
 * - anything else with 404.
 *
 * Request bodies are read to the end before answering (as a real server must), never parsed. Connections are kept
 * alive. Started with `fork()` it reports `{ port }` over IPC and answers `"stats"` and `"reset"` messages with
 * `{ stats: { tokenRequests, feeRequests } }`; started directly (`npx tsx bench/server.ts [port]`) it prints the port.
 *
 * `startServer()` forks it and returns a handle.
 */
import { fork } from "node:child_process"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/** The documented example of a fee-calculation response, byte for byte what the server sends. */
export const feeResponseBody = JSON.stringify({
  data: {
    source_currency: "USD",
    destination_currency: "CAD",
    source_amount: 3508679,
    exchange_rate: 1.45,
    destination_amount: 508679,
    valid_till: "2026-01-19T09:59:29Z",
    fee: { fixed: 25, percentage: 4, total: 29, is_fee_applied: true }
  }
})

/** `2025-12-28 10:34:45+00`, the service's timestamp format. */
const serviceTime = (millis: number): string => `${new Date(millis).toISOString().slice(0, 19).replace("T", " ")}+00`

const tokenBody = (): string => {
  const now = Date.now()
  return JSON.stringify({
    access_token: "bench-access-token-0123456789abcdef0123456789abcdef",
    access_token_ttl: serviceTime(now + 24 * 3600_000),
    refresh_token: "bench-refresh-token-0123456789abcdef0123456789abcdef",
    refresh_token_ttl: serviceTime(now + 30 * 24 * 3600_000),
    current_time: serviceTime(now)
  })
}

/** What the server counted since the last reset. */
export interface Stats {
  readonly tokenRequests: number
  readonly feeRequests: number
}

const serve = (port: number): Promise<{ readonly port: number; readonly stats: () => Stats; readonly reset: () => void }> => {
  let tokenRequests = 0
  let feeRequests = 0
  const feeBytes = Buffer.from(feeResponseBody)
  const feeHeaders = { "content-type": "application/json", "content-length": String(feeBytes.length) }
  const server = Http.createServer((req, res) => {
    const url = req.url ?? ""
    req.on("data", noop)
    req.on("end", () => {
      if (req.method === "POST" && url === "/v1/fee-calculation") {
        feeRequests++
        res.writeHead(200, feeHeaders)
        res.end(feeBytes)
      } else if (req.method === "POST" && url === "/v1/oauth/token") {
        tokenRequests++
        const body = Buffer.from(tokenBody())
        res.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) })
        res.end(body)
      } else {
        res.writeHead(404, { "content-type": "application/json", "content-length": "21" })
        res.end(`{"message":"unknown"}`)
      }
    })
  })
  server.keepAliveTimeout = 120_000
  server.headersTimeout = 130_000
  server.requestTimeout = 0
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        stats: () => ({ tokenRequests, feeRequests }),
        reset: () => {
          tokenRequests = 0
          feeRequests = 0
        }
      })
    })
  })
}

const noop = () => {}

/** A server running in a child process. */
export interface ServerHandle {
  readonly port: number
  readonly baseUrl: string
  readonly pid: number
  readonly stats: () => Promise<Stats>
  /** Zeroes the counters and returns what they were. */
  readonly reset: () => Promise<Stats>
  readonly close: () => Promise<void>
}

/** Forks this module as the server process (same Node, same loader flags) and waits for its port. */
export const startServer = (): Promise<ServerHandle> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ["--child"], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      // Same loader flags (bench/lib/register.mjs, or tsx), but never a profiler flag of the client's.
      execArgv: process.execArgv.filter((a) => !a.startsWith("--cpu-prof") && !a.startsWith("--prof"))
    })
    const waiting: Array<(stats: Stats) => void> = []
    child.on("message", (message: { port?: number; stats?: Stats }) => {
      if (message.port !== undefined) {
        const ask = (what: "stats" | "reset") =>
          new Promise<Stats>((res) => {
            waiting.push(res)
            child.send(what)
          })
        resolve({
          port: message.port,
          baseUrl: `http://127.0.0.1:${message.port}`,
          pid: child.pid!,
          stats: () => ask("stats"),
          reset: () => ask("reset"),
          close: () =>
            new Promise<void>((res) => {
              if (child.exitCode !== null) return res()
              child.once("exit", () => res())
              child.kill("SIGTERM")
            })
        })
      } else if (message.stats !== undefined) {
        waiting.shift()?.(message.stats)
      }
    })
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`bench server exited early (${code})`)))
  })

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href
if (isMain && process.argv[2] === "--child" && process.send !== undefined) {
  const send = process.send.bind(process)
  void serve(0).then((server) => {
    process.on("message", (message) => {
      const stats = server.stats()
      if (message === "reset") server.reset()
      send({ stats })
    })
    process.on("disconnect", () => process.exit(0))
    send({ port: server.port })
  })
} else if (isMain && /^server\.[cm]?[jt]s$/.test(Path.basename(process.argv[1]!))) {
  // (Bundled into another program, this module is that program's main too: it serves only when run as itself.)
  void serve(Number(process.argv[2] ?? 0)).then((server) => {
    process.stdout.write(`bench server listening on http://127.0.0.1:${server.port}\n`)
  })
}
