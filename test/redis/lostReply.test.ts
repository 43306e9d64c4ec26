// A command whose answer is lost with its connection: ioredis sends it again once it has reconnected, and the script
// run a second time must answer as the first run did.
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import * as Net from "node:net"
import { RedisTokenStore, RedisWebhookDedupeStore } from "../../src/redis/index.js"
import { redisUrl, uniquePrefix } from "./support.js"

// The URL of a proxy to the test's Redis that cuts the connection instead of passing on the first reply matching
// `losing` (then passes everything on), for the scope's life.
const replyLosingProxy = (losing: (reply: string) => boolean) =>
  Effect.gen(function*() {
    let dropped = false
    const port = Number(new URL(redisUrl).port)
    const proxy = Net.createServer((downstream) => {
      const upstream = Net.connect(port, "127.0.0.1")
      for (const socket of [downstream, upstream]) {
        socket.on("error", () => undefined)
        socket.on("close", () => {
          downstream.destroy()
          upstream.destroy()
        })
      }
      downstream.pipe(upstream)
      upstream.on("data", (chunk: Buffer) => {
        if (!dropped && losing(chunk.toString())) {
          dropped = true
          downstream.destroy()
          upstream.destroy()
          return
        }
        downstream.write(chunk)
      })
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", () => resolve()))),
      () => Effect.sync(() => proxy.close())
    )
    return `redis://127.0.0.1:${(proxy.address() as Net.AddressInfo).port}`
  })

// A client of the test's own (a store's borrowed one), ready, reconnecting `retryMillis` after a lost connection.
const borrowedClient = (url: string, retryMillis: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Redis(url, { retryStrategy: () => retryMillis })
      await new Promise((resolve) => client.once("ready", resolve))
      return client
    }),
    (client) => Effect.sync(() => client.disconnect())
  )

describe("RedisWebhookDedupeStore, a claim's answer lost with its connection", () => {
  for (const via of ["url", "client"] as const) {
    it.scopedLive(`the claim sent again after the reconnection is still this delivery's (${via})`, () =>
      Effect.gen(function*() {
        const url = yield* replyLosingProxy((reply) => reply.includes("claimed"))
        const prefix = uniquePrefix("lost-reply")
        const store = via === "url"
          ? yield* RedisWebhookDedupeStore.make({ url, prefix, timeout: "3 seconds" })
          : yield* RedisWebhookDedupeStore.make({
            client: yield* borrowedClient(url, 10),
            prefix,
            timeout: "3 seconds"
          })
        // Else InProgress, and a claim no delivery holds keeps the event and its reference for 30 s.
        const claim = yield* store.claim("event-1", "ref-1", Duration.seconds(30))
        if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${claim._tag}`)
        expect((yield* store.claim("event-1", "ref-1", Duration.seconds(30)))._tag).toBe("InProgress")
        yield* store.release("event-1", "ref-1", claim.token)
        expect((yield* store.claim("event-2", "ref-1", Duration.seconds(30)))._tag).toBe("Claimed")
        expect((yield* store.claim("event-1", "ref-2", Duration.seconds(30)))._tag).toBe("Claimed")
      }))
  }
})

describe("RedisTokenStore, a lock's answer lost with its connection", () => {
  it.scopedLive("the lock sent again after the reconnection is taken by its sender, not held by no one for lockTtl", () =>
    Effect.gen(function*() {
      const url = yield* replyLosingProxy((reply) => reply.startsWith("*2\r\n:1\r\n"))
      const store = yield* RedisTokenStore.make({ url, prefix: uniquePrefix("lock"), timeout: "3 seconds" })
      const lock = yield* store.lock("k")
      if (lock._tag !== "Acquired") return yield* Effect.dieMessage(`not acquired: ${lock._tag}`)
      yield* store.unlock("k", lock.owner)
      expect((yield* store.lock("k"))._tag).toBe("Acquired")
    }))

  // The first run took the lock when it was sent; its sender hears of it only after the reconnection, and renews it a
  // third of lockTtl after that: the run sent again gives the lock its whole lockTtl, as a lock just taken has.
  it.scopedLive("the lock sent again after a slow reconnection lives lockTtl from its answer, so its first renewal finds it", () =>
    Effect.gen(function*() {
      const url = yield* replyLosingProxy((reply) => reply.startsWith("*2\r\n:1\r\n"))
      const store = yield* RedisTokenStore.make({
        client: yield* borrowedClient(url, 1_500),
        prefix: uniquePrefix("lock-ttl"),
        timeout: "3 seconds",
        lockTtl: "2 seconds"
      })
      const lock = yield* store.lock("k")
      if (lock._tag !== "Acquired") return yield* Effect.dieMessage(`not acquired: ${lock._tag}`)
      // Renewed 2.5 s after it was first taken: gone by then unless its lockTtl began again with the answer.
      yield* Effect.sleep("1 second")
      expect(yield* store.renew("k", lock.owner)).toBe(true)
    }))
})
