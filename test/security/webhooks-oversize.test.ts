/**
 * Issue 6: oversized webhook deliveries through the real handler on a real Node server (NodeHttpServer on an ephemeral
 * loopback port), sent by a raw TCP client so nothing in between buffers or fixes the framing.
 *
 * "Not buffered whole" is measured, not assumed: the server's own socket counts the bytes it read from the
 * connection (until the connection closed), and the client counts the body bytes the kernel accepted from it before
 * the answer came. Both stay a small multiple of the limit while the body is 50 MiB. No timing is asserted.
 *
 * The 413 is read where it is written (the status of the server's response). A client that waits for it receives it;
 * a client still sending when the server closes usually gets a reset instead (see `refusedWhileSending`).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Http from "node:http"
import * as Net from "node:net"
import { setImmediate as nextTurn } from "node:timers/promises"
import * as Webhooks from "../../src/Webhooks.js"

const secret = "whsec_oversize_test"
const MiB = 1024 * 1024
const hugeBody = 50 * MiB
const chunk = Buffer.alloc(64 * 1024, 0x20)

/** What the server saw of one connection. */
interface Connection {
  /** Status of the response the server wrote (the handler's answer). */
  status?: number
  /** Bytes the server read from the socket before its response finished. */
  readAtResponse?: number
  /** Bytes the server read from the socket in all, once it closed. */
  readInAll?: number
  readonly closed: Promise<void>
}

/** The handler on a NodeHttpServer at 127.0.0.1:0, the server's sockets watched. */
const serve = (options: { readonly maxBodySize?: number } = {}) =>
  Effect.gen(function*() {
    const connections: Array<Connection> = []
    const handled: Array<string> = []
    const server = Http.createServer()
    server.on("connection", (socket: Net.Socket) => {
      let closed!: () => void
      const connection: Connection = { closed: new Promise((resolve) => (closed = resolve)) }
      connections.push(connection)
      socket.once("close", () => {
        connection.readInAll = socket.bytesRead
        closed()
      })
    })
    server.on("request", (request: Http.IncomingMessage, response: Http.ServerResponse) => {
      const connection = connections[connections.length - 1]!
      response.once("finish", () => {
        connection.status ??= response.statusCode
        connection.readAtResponse ??= request.socket.bytesRead
      })
    })
    const httpServer = yield* NodeHttpServer.make(() => server, { port: 0, host: "127.0.0.1" })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        server.closeAllConnections()
      })
    )
    yield* HttpServer.serveEffect(
      Webhooks.handler({
        secrets: secret,
        maxBodySize: options.maxBodySize,
        handlers: { "beneficiary.status": (event) => Effect.sync(() => handled.push(event.id)) }
      })
    ).pipe(Effect.provideService(HttpServer.HttpServer, httpServer))
    const address = httpServer.address
    const port = address._tag === "TcpAddress" ? address.port : 0
    return { port, connections, handled }
  })

interface Exchange {
  /** Status lines received, in order (a server may answer, then refuse what follows). */
  readonly statuses: ReadonlyArray<number>
  /** Body bytes the client handed to the kernel before it stopped (answer received, or connection gone). */
  readonly bodyBytesSent: number
  /** Whether the whole body went out. */
  readonly sentAll: boolean
  /** The error that ended the connection on the client's side (EPIPE, ECONNRESET), if any. */
  readonly error: string | undefined
}

/**
 * Sends `head`, then up to `total` body bytes in 64 KiB pieces (chunked framing when asked), one piece per turn of
 * the event loop and only once the previous one was accepted, stopping as soon as an answer arrives or the
 * connection fails.
 */
const deliver = (port: number, head: string, total: number, options: { readonly chunked: boolean }) =>
  Effect.promise(async (): Promise<Exchange> => {
    const socket = Net.connect(port, "127.0.0.1")
    let received = ""
    let gone = false
    let error: string | undefined
    const statuses = () => [...received.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((match) => Number(match[1]))
    const ended = new Promise<void>((resolve) => {
      socket.on("data", (data: Buffer) => {
        received += data.toString("latin1")
      })
      socket.on("error", (cause: NodeJS.ErrnoException) => {
        error ??= cause.code ?? cause.message
        gone = true
      })
      socket.on("close", () => {
        gone = true
        resolve()
      })
    })
    const write = (data: Buffer | string) =>
      new Promise<boolean>((resolve) => {
        if (gone || socket.destroyed) return resolve(false)
        socket.write(data, (error) => resolve(error === undefined || error === null))
      })
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()))
    await write(head)
    let sent = 0
    while (sent < total && statuses().length === 0 && !gone) {
      const piece = chunk.subarray(0, Math.min(chunk.length, total - sent))
      const framed = options.chunked
        ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")])
        : piece
      const ok = await write(framed)
      if (!ok) break
      sent += piece.length
      await nextTurn()
    }
    const sentAll = sent >= total
    if (sentAll && options.chunked && !gone) await write("0\r\n\r\n")
    // The answer, then the server closes (413 says `connection: close`); a client that got its answer may go too.
    if (statuses().length === 0 && !gone) await Promise.race([ended, new Promise((r) => socket.once("data", r))])
    socket.end()
    socket.destroy()
    await ended
    return { statuses: statuses(), bodyBytesSent: sent, sentAll, error }
  })

const signatureOf = (body: string) => Effect.map(Webhooks.sign(body, secret), (headers) => headers["x-fin-signature"])

const requestHead = (headers: Record<string, string>) =>
  `POST /webhooks/fin HTTP/1.1\r\nhost: 127.0.0.1\r\n${
    Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("")
  }\r\n`

/**
 * The client's view of a refusal while it was still sending. The server answers 413 with `connection: close` and
 * closes at once; Node does no lingering close, so a client still transmitting usually meets a reset (EPIPE or
 * ECONNRESET) before it reads the 413, which the closing server's kernel may even have dropped. Either way the client
 * could not send the body.
 */
const refusedWhileSending = (exchange: Exchange) =>
  !exchange.sentAll &&
  (exchange.statuses[0] === 413 || (exchange.statuses.length === 0 && exchange.error !== undefined))

// Live tests keep Effect's default logger; the handler's warnings about refused deliveries are expected here.
const quiet = Effect.provide(Logger.remove(Logger.defaultLogger))

const eventId = "0b6f3a52-6f8e-4c61-9a8e-3c1f0c7d2e11"

const eventBody = JSON.stringify({
  event: {
    id: eventId,
    event_reference_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
    type: "beneficiary.status",
    created_at: "2026-04-04T17:38:26.843132Z"
  },
  data: {
    beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
    customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
    type: "INDIVIDUAL",
    active: true
  }
})

describe("Webhooks.handler on NodeHttpServer: oversized bodies", () => {
  it.scopedLive("a 50 MiB chunked body, no Content-Length: 413 after reading about the limit, never the whole body", () =>
    Effect.gen(function*() {
      const { connections, handled, port } = yield* serve()
      const signature = yield* signatureOf("{}")
      const exchange = yield* deliver(
        port,
        requestHead({ "transfer-encoding": "chunked", "content-type": "application/json", "x-fin-signature": signature }),
        hugeBody,
        { chunked: true }
      )
      yield* Effect.promise(() => connections[0]!.closed)
      const connection = connections[0]!
      // The handler answered 413 once it had read past the limit (1 MiB by default), not after 50 MiB.
      expect(connection.status).toBe(413)
      expect(connection.readAtResponse).toBeGreaterThan(Webhooks.defaultMaxBodySize)
      expect(connection.readAtResponse).toBeLessThan(Webhooks.defaultMaxBodySize + 2 * MiB)
      // Then the connection closed: nothing more was read, and the client could not send the rest.
      expect(connection.readInAll).toBeLessThan(Webhooks.defaultMaxBodySize + 4 * MiB)
      expect(exchange.bodyBytesSent).toBeLessThan(16 * MiB)
      expect(refusedWhileSending(exchange)).toBe(true)
      expect(handled).toEqual([])
    }).pipe(quiet))

  it.scopedLive("a Content-Length over the limit is refused with 413 before any body byte is read", () =>
    Effect.gen(function*() {
      const { connections, handled, port } = yield* serve()
      const signature = yield* signatureOf("{}")
      const head = requestHead({ "content-length": String(hugeBody), "x-fin-signature": signature })
      // Headers only: the 413 arrives without the server waiting for a body, having read the headers alone.
      const headersOnly = yield* deliver(port, head, 0, { chunked: false })
      yield* Effect.promise(() => connections[0]!.closed)
      expect(headersOnly.statuses).toEqual([413])
      expect(connections[0]!.status).toBe(413)
      expect(connections[0]!.readAtResponse).toBe(Buffer.byteLength(head))
      // Headers, then the body streaming: the same 413, and the connection closes rather than reading 50 MiB.
      const streaming = yield* deliver(port, head, hugeBody, { chunked: false })
      yield* Effect.promise(() => connections[1]!.closed)
      expect(connections[1]!.status).toBe(413)
      expect(connections[1]!.readInAll).toBeLessThan(4 * MiB)
      expect(refusedWhileSending(streaming)).toBe(true)
      // A limit of 1 KiB: one byte over is refused from the header alone.
      const small = yield* serve({ maxBodySize: 1024 })
      const justOver = requestHead({ "content-length": "1025", "x-fin-signature": signature })
      expect((yield* deliver(small.port, justOver, 0, { chunked: false })).statuses).toEqual([413])
      expect(handled).toEqual([])
      expect(small.handled).toEqual([])
    }).pipe(quiet))

  it.scopedLive("a Content-Length smaller than what follows: the rest is never body, and reading stops", () =>
    Effect.gen(function*() {
      const { connections, handled, port } = yield* serve()
      const signature = yield* signatureOf(eventBody)
      // The declared bytes are a signed event; 50 MiB of blanks follow them on the same connection.
      const head = requestHead({ "content-length": String(Buffer.byteLength(eventBody)), "x-fin-signature": signature }) +
        eventBody
      const exchange = yield* deliver(port, head, hugeBody, { chunked: false })
      yield* Effect.promise(() => connections[0]!.closed)
      // What follows the declared bytes is no request: Node refuses it and closes after a bounded read. The event
      // may or may not have been handled before that (a race between the handler and the parser), but nothing else
      // was, and no answer but the event's own came from the handler.
      expect(handled.every((id) => id === eventId)).toBe(true)
      expect([undefined, 200]).toContain(connections[0]!.status)
      expect(exchange.sentAll).toBe(false)
      expect(connections[0]!.readInAll).toBeLessThan(4 * MiB)
      // Content-Length and chunked together (a request smuggling shape) are refused by Node before the handler runs.
      const both = yield* deliver(
        port,
        requestHead({ "content-length": "2", "transfer-encoding": "chunked", "x-fin-signature": signature }),
        hugeBody,
        { chunked: true }
      )
      yield* Effect.promise(() => connections[1]!.closed)
      expect(connections[1]!.status).toBeUndefined()
      // Node answers 400 and resets the connection; the client, still writing, mostly meets the reset before it can
      // read that answer. Whatever it did read was no other answer.
      expect(both.statuses.filter((status) => status !== 400)).toEqual([])
      expect(both.sentAll).toBe(false)
      expect(connections[1]!.readInAll).toBeLessThan(4 * MiB)
      expect(handled.every((id) => id === eventId)).toBe(true)
    }).pipe(quiet))
})
