/**
 * Token reads per second from `RedisTokenStore` (plain and AES-GCM encrypted) beside the in-memory store: what a
 * process pays each time its own cached token is due and it looks at the shared pair.
 *
 *   npm run bench:redis          (needs redis-server; one is started on a free loopback port)
 *
 * Each case: warm-up, then 5 rounds of 1 second, one read at a time and 64 in flight (64 fibers each awaiting one
 * `get` after another); the figure is the median round. `runRedisBench()` returns the rows, for `npm run bench`.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { RedisTokenStore } from "../src/redis/index.js"
import * as TokenStore from "../src/TokenStore.js"
import { redisServerInstalled, startRedis } from "../test/redis/server.js"

/** One figure: `library` read the pair `value` times a second with `concurrency` reads in flight. */
export interface BenchRow {
  readonly suite: "token store"
  readonly operation: string
  readonly library: string
  readonly concurrency: number
  readonly value: number
  readonly unit: "reads/s"
}

const rounds = 5
const roundLength = Duration.seconds(1)

const measure = (store: TokenStore.Service, key: string, concurrency: number) =>
  Effect.gen(function*() {
    const read = store.get(key).pipe(Effect.orDie)
    const round = Effect.gen(function*() {
      let reads = 0
      const until = performance.now() + Duration.toMillis(roundLength)
      const worker = Effect.gen(function*() {
        while (performance.now() < until) {
          yield* read
          reads += 1
        }
      })
      const started = performance.now()
      yield* Effect.all(Array.from({ length: concurrency }, () => worker), { concurrency: "unbounded", discard: true })
      return reads / ((performance.now() - started) / 1000)
    })
    yield* round
    const rates: Array<number> = []
    for (let i = 0; i < rounds; i++) rates.push(yield* round)
    return rates.sort((a, b) => a - b)[Math.floor(rates.length / 2)]!
  })

/** Runs every case; undefined when redis-server is not installed. */
export const runRedisBench = async (): Promise<ReadonlyArray<BenchRow> | undefined> => {
  if (!redisServerInstalled()) return undefined
  const server = await startRedis()
  try {
    return await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const key = yield* TokenStore.keyFor("https://api.example", "bench-client", Redacted.make("bench-secret"))
      const tokens: TokenStore.Tokens = {
        accessToken: Redacted.make("a".repeat(64)),
        refreshAt: Date.now() + 3_600_000,
        refreshToken: Redacted.make("r".repeat(64)),
        refreshUsableUntil: Date.now() + 86_400_000
      }
      const stores: ReadonlyArray<readonly [string, TokenStore.Service]> = [
        ["in memory (TokenStore.layerMemory)", TokenStore.makeMemory()],
        ["RedisTokenStore", yield* RedisTokenStore.make({ url: server.url, prefix: "bench-plain" })],
        [
          "RedisTokenStore, AES-GCM at rest",
          yield* RedisTokenStore.make({
            url: server.url,
            prefix: "bench-encrypted",
            encryptionKey: Redacted.make(new Uint8Array(32).fill(1))
          })
        ]
      ]
      const rows: Array<BenchRow> = []
      for (const [library, store] of stores) {
        const lock = yield* Effect.orDie(store.lock(key))
        yield* Effect.orDie(store.set(key, tokens, lock.owner))
        yield* Effect.orDie(store.unlock(key, lock.owner))
        for (const concurrency of [1, 64]) {
          rows.push({
            suite: "token store",
            operation: "read the stored token pair (TokenStore.get)",
            library,
            concurrency,
            value: yield* measure(store, key, concurrency),
            unit: "reads/s"
          })
        }
      }
      return rows
    })))
  } finally {
    await server.stop()
  }
}

/** The rows as a Markdown table. */
export const redisTable = (rows: ReadonlyArray<BenchRow>): string =>
  [
    "| Store | In flight | Reads/s |",
    "|---|---:|---:|",
    ...rows.map((r) => `| ${r.library} | ${r.concurrency} | ${Math.round(r.value).toLocaleString("en-US")} |`)
  ].join("\n")

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href) {
  runRedisBench().then((rows) => {
    if (rows === undefined) {
      console.log("redis-server is not installed: nothing to measure (Debian: apt-get install redis-server)")
    } else {
      console.log(redisTable(rows))
    }
  })
}
