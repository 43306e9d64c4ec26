import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Redacted from "effect/Redacted"
import * as Http from "node:http"
import * as NodeCrypto from "node:crypto"
import { createHmac } from "node:crypto"
import { NodeWebhookCrypto } from "../src/node/index.js"
import * as Webhooks from "../src/Webhooks.js"
import { documentedWebhookBody } from "./support.js"

// `timingSafeEqual` watched (and still called): whether a comparison is constant-time cannot be seen in its result.
vi.mock("node:crypto", async (original) => {
  const crypto = await original<typeof import("node:crypto")>()
  return { ...crypto, timingSafeEqual: vi.fn(crypto.timingSafeEqual) }
})

const secret = Redacted.make("whsec_node_test")
const body = documentedWebhookBody

describe("NodeWebhookCrypto", () => {
  it.effect("signs like node:crypto's createHmac and agrees with the WebCrypto layer", () =>
    Effect.gen(function*() {
      const crypto = NodeWebhookCrypto.make()
      const web = Webhooks.makeWebCrypto()
      const bytes = new TextEncoder().encode(body)
      for (const algorithm of Webhooks.algorithms) {
        const mac = yield* crypto.sign(algorithm, secret, bytes)
        expect(Buffer.from(mac).toString("hex")).toBe(
          createHmac(algorithm, Redacted.value(secret)).update(body).digest("hex")
        )
        expect(yield* web.sign(algorithm, secret, bytes)).toEqual(mac)
        expect(yield* crypto.verify(algorithm, secret, bytes, mac)).toBe(true)
        expect(yield* web.verify(algorithm, secret, bytes, mac)).toBe(true)
        // A digest of another length is a mismatch, not a thrown timingSafeEqual error.
        expect(yield* crypto.verify(algorithm, secret, bytes, mac.subarray(1))).toBe(false)
      }
    }))

  it("compares digests with timingSafeEqual, never byte by byte: a signature is not found out one byte at a time", () => {
    const crypto = NodeWebhookCrypto.make()
    const bytes = new TextEncoder().encode(body)
    const compare = vi.mocked(NodeCrypto.timingSafeEqual)
    for (const algorithm of Webhooks.algorithms) {
      const mac = createHmac(algorithm, Redacted.value(secret)).update(body).digest()
      const wrong = Uint8Array.from(mac, (byte, i) => i === 0 ? byte ^ 1 : byte)
      compare.mockClear()
      expect([crypto.verifySync!(algorithm, secret, bytes, mac), crypto.verifySync!(algorithm, secret, bytes, wrong)])
        .toEqual([true, false])
      expect(compare, algorithm).toHaveBeenCalledTimes(2)
    }
  })

  it("is the WebhookCrypto the core uses once provided (it verifies synchronously, WebCrypto cannot)", () => {
    const headers = { "x-fin-signature": createHmac("sha256", Redacted.value(secret)).update(body).digest("hex") }
    const verified = Effect.runSync(
      Webhooks.verify(body, headers, secret).pipe(Effect.provide(NodeWebhookCrypto.layer))
    )
    expect(verified.type).toBe("beneficiary.status")
    expect(() => Effect.runSync(Webhooks.verify(body, headers, secret))).toThrow()
  })

  it.effect("keeps verifying correctly when more secrets are used than it caches", () =>
    Effect.gen(function*() {
      const crypto = NodeWebhookCrypto.make()
      const bytes = new TextEncoder().encode(body)
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 100; i++) {
          const key = Redacted.make(`secret-${i}`)
          const mac = createHmac("sha256", `secret-${i}`).update(bytes).digest()
          expect(yield* crypto.verify("sha256", key, bytes, mac)).toBe(true)
          expect(yield* crypto.verify("sha256", Redacted.make(`secret-${i + 1}`), bytes, mac)).toBe(false)
        }
      }
    }))
})

// --- The handler on a real Node server (port 0) ----------------------------------------------------------------------

interface Reply {
  readonly status: number
  readonly body: string
}

// Sends `chunks` pieces of `chunk` with node:http (chunked unless `contentLength` is given), respecting backpressure;
// resolves with the response as soon as it arrives. Write errors after the server answered (it closes the
// connection on 413) are expected and ignored.
const request = (
  port: number,
  options: {
    readonly headers: Readonly<Record<string, string>>
    readonly chunk: Uint8Array
    readonly chunks: number
    readonly contentLength?: number
  }
) =>
  Effect.async<Reply, Error>((resume) => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.contentLength !== undefined) headers["content-length"] = String(options.contentLength)
    const req = Http.request({ port, host: "127.0.0.1", method: "POST", path: "/webhooks/fin", headers }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (data: string) => (text += data))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body: text })))
    })
    let answered = false
    req.on("response", () => (answered = true))
    req.on("error", (error) => {
      if (!answered) resume(Effect.fail(error))
    })
    let sent = 0
    const write = () => {
      while (!answered && sent < options.chunks) {
        sent++
        if (!req.write(options.chunk)) return void req.once("drain", write)
      }
      if (!answered) req.end()
    }
    write()
  })

const serve = Effect.gen(function*() {
  let handled = 0
  const app = HttpRouter.empty.pipe(
    HttpRouter.post(
      "/webhooks/fin",
      Webhooks.handler({
        secrets: secret,
        maxBodySize: 64 * 1024,
        handlers: { "beneficiary.status": () => Effect.sync(() => handled++) }
      })
    )
  )
  yield* HttpServer.serveEffect(app)
  const address = yield* HttpServer.addressWith((address) =>
    Effect.succeed(address._tag === "TcpAddress" ? address.port : 0)
  )
  return { port: address, handled: () => handled }
})

// The server lives as long as the test that provides this.
const ServerLive = Layer.mergeAll(
  NodeHttpServer.layer(() => Http.createServer(), { port: 0, host: "127.0.0.1" }),
  NodeWebhookCrypto.layer,
  Logger.remove(Logger.defaultLogger)
)

describe("Webhooks.handler on NodeHttpServer", () => {
  it.live("handles deliveries and answers 413 to oversized bodies, chunked or not, on one server", () =>
    Effect.gen(function*() {
      const { handled, port } = yield* serve
      const signed = yield* Webhooks.sign(body, secret)
      const bytes = new TextEncoder().encode(body)

      const ok = yield* request(port, { headers: signed, chunk: bytes, chunks: 1, contentLength: bytes.length })
      expect(ok).toEqual({ status: 200, body: `{"outcome":"handled"}` })

      // 8 MiB in 16 KiB chunks, no Content-Length: the server stops reading at 64 KiB and answers 413.
      const chunk = new Uint8Array(16 * 1024).fill(0x20)
      const chunked = yield* request(port, { headers: signed, chunk, chunks: 512 })
      expect(chunked.status).toBe(413)

      const declared = yield* request(port, { headers: signed, chunk, chunks: 512, contentLength: 512 * chunk.length })
      expect(declared.status).toBe(413)

      // The server is still fine, and remembers the event.
      const again = yield* request(port, { headers: signed, chunk: bytes, chunks: 1 })
      expect(again).toEqual({ status: 200, body: `{"outcome":"duplicate"}` })
      expect(handled()).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(ServerLive)))

  it.live("answers 401 to an unsigned delivery and 400 to a signed malformed one", () =>
    Effect.gen(function*() {
      const { port } = yield* serve
      const bytes = new TextEncoder().encode(body)
      const unsigned = yield* request(port, { headers: {}, chunk: bytes, chunks: 1 })
      expect(unsigned).toEqual({ status: 401, body: "" })
      const junk = new TextEncoder().encode("{\"event\":{}}")
      const signed = yield* Webhooks.sign(junk, secret)
      const malformed = yield* request(port, { headers: signed, chunk: junk, chunks: 1 })
      expect(malformed).toEqual({ status: 400, body: `{"error":"malformed_body"}` })
    }).pipe(Effect.scoped, Effect.provide(ServerLive)))
})

describe.each([["WebCrypto", Webhooks.layerWebCrypto], ["node:crypto", NodeWebhookCrypto.layer]] as const)(
  "Webhooks.verify with a body that is not bytes nor text (%s)",
  (_name, layer) => {
    it.effect("a body already parsed as JSON dies naming the mistake, not with the crypto's TypeError", () =>
      Effect.gen(function*() {
        const headers = yield* Webhooks.sign(body, secret)
        const parsed: any = JSON.parse(body) // an Express `req.body` after express.json(): `any`, so it compiles
        const exits: ReadonlyArray<Exit.Exit<unknown, unknown>> = [
          yield* Effect.exit(Webhooks.verify(parsed, headers, secret)),
          yield* Effect.exit(Webhooks.verifySignature(parsed, headers, secret))
        ]
        for (const exit of exits) {
          expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
          const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
          expect(Cause.isIllegalArgumentException(defect)).toBe(true)
          expect(String((defect as Error).message)).toMatch(/parsed as JSON/)
        }
      }).pipe(Effect.provide(layer)))

    it.effect("an ArrayBuffer (await request.arrayBuffer()) or a DataView is taken as its bytes", () =>
      Effect.gen(function*() {
        const headers = yield* Webhooks.sign(body, secret)
        const bytes = new TextEncoder().encode(body)
        const event = yield* Webhooks.verify(bytes.buffer as any, headers, secret)
        expect(event.type).toBe("beneficiary.status")
        yield* Webhooks.verify(new DataView(bytes.buffer) as any, headers, secret)
        yield* Webhooks.verifySignature(bytes.buffer as any, headers, secret)
        // A view into a larger buffer (a pooled one) is its own bytes, not the buffer's from the start.
        const pooled = new Uint8Array(bytes.length + 16)
        pooled.set(bytes, 8)
        yield* Webhooks.verify(new DataView(pooled.buffer, 8, bytes.length) as any, headers, secret)
      }).pipe(Effect.provide(layer)))
  }
)
