// A claim whose answer is lost with its connection: ioredis sends the command again once it has reconnected.
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Net from "node:net"
import { Redis } from "ioredis"
import { RedisWebhookDedupeStore } from "../../src/redis/index.js"
import { redisUrl, uniquePrefix } from "./support.js"

// A proxy to Redis that cuts the connection instead of passing on the first reply that includes `marker`.
const replyLosingProxy = (port: number, marker: string) => {
  let dropped = false
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
      if (!dropped && chunk.toString().includes(marker)) {
        dropped = true
        downstream.destroy()
        upstream.destroy()
        return
      }
      downstream.write(chunk)
    })
  })
  return proxy
}

describe("RedisWebhookDedupeStore, a claim's answer lost with its connection", () => {
  for (const via of ["url", "client"] as const) {
    it.scopedLive(`the claim sent again after the reconnection is still this delivery's (${via})`, () =>
      Effect.gen(function*() {
        const port = Number(new URL(redisUrl).port)
        const proxy = replyLosingProxy(port, "claimed")
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", () => resolve()))),
          () => Effect.sync(() => proxy.close())
        )
        const url = `redis://127.0.0.1:${(proxy.address() as Net.AddressInfo).port}`
        const prefix = uniquePrefix("lost-reply")
        const store = via === "url"
          ? yield* RedisWebhookDedupeStore.make({ url, prefix, timeout: "3 seconds" })
          : yield* RedisWebhookDedupeStore.make({
            client: yield* Effect.acquireRelease(
              Effect.promise(async () => {
                const client = new Redis(url, { retryStrategy: () => 10 })
                await new Promise((resolve) => client.once("ready", resolve))
                return client
              }),
              (client) => Effect.sync(() => client.disconnect())
            ),
            prefix,
            timeout: "3 seconds"
          })
        // Before the fix: InProgress, and a claim no delivery holds keeps the event and its reference for 30 s.
        const claim = yield* store.claim("event-1", "ref-1", Duration.seconds(30))
        if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${claim._tag}`)
        expect((yield* store.claim("event-1", "ref-1", Duration.seconds(30)))._tag).toBe("InProgress")
        yield* store.release("event-1", "ref-1", claim.token)
        expect((yield* store.claim("event-2", "ref-1", Duration.seconds(30)))._tag).toBe("Claimed")
        expect((yield* store.claim("event-1", "ref-2", Duration.seconds(30)))._tag).toBe("Claimed")
      }))
  }
})
