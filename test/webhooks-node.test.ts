/**
 * The webhook handler on a real Node server (NodeHttpServer, loopback) when the client gives up mid-handler, as the
 * service does when a handler outlasts its own timeout: the platform then interrupts the request and closes its scope.
 * Also what only a real connection shows: a body that stops arriving (408 after bodyTimeout), a delivery refused before
 * its body is read, one arriving as the server shuts down (503), a protocol upgrade, a body a parser read first.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Headers from "@effect/platform/Headers"
import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Webhooks from "../src/Webhooks.js"
import {
  captureLogs,
  countedDeliveries,
  deliveriesCountedSince,
  documentedWebhookBody,
  eventually,
  recordingTracer
} from "./support.js"

const secret = "whsec_node_abort_test"
const body = documentedWebhookBody


const pause = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

/** A status handler that acquires a resource, says it started, and finishes once released; `seen` shows each step. */
const heldHandler = Effect.gen(function*() {
  const seen: Array<string> = []
  const started = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  const handlers = {
    "beneficiary.status": () =>
      Effect.acquireRelease(Effect.sync(() => seen.push("acquired")), () => Effect.sync(() => seen.push("released")))
        .pipe(
          Effect.zipRight(Deferred.succeed(started, undefined)),
          Effect.zipRight(Deferred.await(release)),
          Effect.zipRight(Effect.sync(() => seen.push("done")))
        )
  }
  return { seen, handlers, started: Deferred.await(started), release: Deferred.succeed(release, undefined) }
})

/**
 * `heldHandler` behind `server` as the README wires it: the server inside the handler's scope, so it closes first.
 * Built into `scope`, to close when the test says; the port it listens on.
 */
const servedInScope = (server: Http.Server, store?: Webhooks.WebhookDedupeStoreService) =>
  Effect.gen(function*() {
    const held = yield* heldHandler
    const WebhookServer = Layer.unwrapScoped(
      Effect.map(
        Webhooks.makeHandler({ secrets: secret, store, handlers: held.handlers }),
        (app) =>
          HttpServer.serve(app).pipe(Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" })))
      )
    )
    const scope = yield* Scope.make()
    yield* Layer.buildWithScope(WebhookServer, scope)
    const address = server.address()
    return { ...held, scope, port: typeof address === "object" && address !== null ? address.port : 0 }
  })

/** Delivers the documented event to `port`, and gives up once the handler has `started`. */
const abandonedDelivery = (port: number, started: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const headers = yield* Webhooks.sign(body, secret)
    const client = new AbortController()
    const sent = fetch(`http://127.0.0.1:${port}/`, { method: "POST", body, headers, signal: client.signal })
      .catch((error: unknown) => String(error))
    yield* started
    client.abort()
    yield* Effect.promise(() => sent)
  })

const eventId = "40061557-f125-4b39-97d6-c16a0f1230c1"

describe("Webhooks.handler on a Node server, the client gone mid-handler", () => {
  it.live("the handler runs to its end with its scoped resources, and a store failure after it is logged", () =>
    Effect.scoped(Effect.gen(function*() {
      const { handlers, release, seen, started } = yield* heldHandler
      const memory = Webhooks.makeMemoryDedupeStore()
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        complete: () => Effect.fail(new Webhooks.WebhookDedupeStoreError({ operation: "complete", message: "down" }))
      }
      const logs = captureLogs()
      const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { port: 0, host: "127.0.0.1" })
      yield* HttpServer.serveEffect(Webhooks.handler({ secrets: secret, store, handlers })).pipe(
        Effect.provideService(HttpServer.HttpServer, httpServer),
        Effect.provide(logs.layer)
      )
      const port = httpServer.address._tag === "TcpAddress" ? httpServer.address.port : 0

      yield* abandonedDelivery(port, started)
      yield* pause(50)
      // The request is gone; the handler and what it acquired are not.
      expect(seen).toEqual(["acquired"])
      yield* release
      yield* eventually(
        Effect.sync(() => logs.lines.some((line) => line.includes("de-duplication store unavailable"))),
        "the store failure's log line"
      )
      expect(seen).toEqual(["acquired", "done", "released"])
      // Not marked handled, and the claim freed: a redelivery runs the handler again.
      const again = yield* memory.claim(eventId, "another", Duration.minutes(1))
      expect(again._tag).toBe("Claimed")
    })), 20_000)

  // Fin's own timeout shorter than the handler: the delivery gets no answer, yet it was handled, and is counted so (the
  // platform runs the app uninterruptibly, so the request's fiber reaches its answer after the client has gone).
  it.live("a delivery whose client left while its handler ran is counted in effect_fin_webhook_deliveries_total", () =>
    Effect.scoped(Effect.gen(function*() {
      const { handlers, release, seen, started } = yield* heldHandler
      const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { port: 0, host: "127.0.0.1" })
      yield* HttpServer.serveEffect(Webhooks.handler({ secrets: secret, handlers })).pipe(
        Effect.provideService(HttpServer.HttpServer, httpServer)
      )
      const port = httpServer.address._tag === "TcpAddress" ? httpServer.address.port : 0
      const before = yield* countedDeliveries
      yield* abandonedDelivery(port, started)
      yield* release
      yield* eventually(Effect.sync(() => seen.includes("released")), "the handler's end")
      yield* eventually(
        Effect.map(deliveriesCountedSince(before), (added) => added.length > 0),
        "the delivery counted",
        100
      )
      expect(yield* deliveriesCountedSince(before)).toEqual(["outcome=handled: 1"])
    })), 20_000)

  it.live("makeHandler in the server's layer: shutting the layer down lets the running handler finish first", () =>
    Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore()
      const server = Http.createServer()
      const { port, release, scope, seen, started } = yield* servedInScope(server, store)

      // The client gives up mid-handler: the server has no request left to wait for when it closes.
      yield* abandonedDelivery(port, started)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      // The server stops listening first: waited for, as a fixed pause would race the closing on a loaded machine.
      yield* eventually(Effect.sync(() => !server.listening), "the server to stop listening", 250)
      yield* pause(50)
      // The shutdown waits for the handler, which is held until released.
      expect(Option.isNone(yield* Fiber.poll(closing))).toBe(true)
      expect(seen).toEqual(["acquired"])
      yield* release
      yield* Fiber.join(closing)
      expect(seen).toEqual(["acquired", "done", "released"])
      expect(server.listening).toBe(false)
      // Marked handled: a redelivery to the next process is a duplicate.
      const again = yield* store.claim(eventId, "another", Duration.minutes(1))
      expect(again._tag).toBe("Done")
    }), 20_000)

  it.live("a body that stops arriving gets 408 after bodyTimeout and its connection closed, at once", () =>
    Effect.gen(function*() {
      const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { port: 0, host: "127.0.0.1" })
      yield* HttpServer.serveEffect(Webhooks.handler({ secrets: secret, handlers: {}, bodyTimeout: "200 millis" })).pipe(
        Effect.provideService(HttpServer.HttpServer, httpServer)
      )
      const port = httpServer.address._tag === "TcpAddress" ? httpServer.address.port : 0
      const headers = yield* Webhooks.sign(body, secret)
      // Signed headers and the start of a chunked body, then nothing: the socket stays open on the client's side.
      const exchange = yield* Effect.async<{ readonly answer: string; readonly closed: boolean }>((resume) => {
        let answer = ""
        const socket = Net.connect(port, "127.0.0.1", () => {
          socket.write(
            `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
              `x-fin-signature: ${headers["x-fin-signature"]}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"dat\r\n`
          )
        })
        socket.on("data", (data) => void (answer += data))
        socket.on("close", () => resume(Effect.succeed({ answer, closed: true })))
        return Effect.sync(() => socket.destroy())
      }).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no answer within 10 s") }))
      expect(exchange.answer.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout")
      expect(exchange.closed).toBe(true)
    }).pipe(Effect.scoped), 20_000)

  // Refused before its body is read: the server closes the connection rather than read (and discard) a body that may
  // never end, until Node's own request timeout.
  it.live("a delivery refused before its body is read gets its answer and its connection closed, at once", () =>
    Effect.gen(function*() {
      const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { port: 0, host: "127.0.0.1" })
      yield* HttpServer.serveEffect(Webhooks.handler({ secrets: secret, handlers: {} })).pipe(
        Effect.provideService(HttpServer.HttpServer, httpServer)
      )
      const port = httpServer.address._tag === "TcpAddress" ? httpServer.address.port : 0
      const headers = yield* Webhooks.sign(body, secret)
      const refusals = [
        ["POST", "", "HTTP/1.1 401 Unauthorized"],
        ["POST", `x-fin-signature: ${headers["x-fin-signature"]}\r\nx-fin-signature-algorithm: md5\r\n`, "HTTP/1.1 401 Unauthorized"],
        ["PUT", `x-fin-signature: ${headers["x-fin-signature"]}\r\n`, "HTTP/1.1 405 Method Not Allowed"],
        // A transfer coding Node's server does not undo: the body would arrive compressed, refused as a bad signature.
        [
          "POST",
          `x-fin-signature: ${headers["x-fin-signature"]}\r\nTransfer-Encoding: gzip\r\n`,
          "HTTP/1.1 400 Bad Request"
        ]
      ] as const
      for (const [method, signature, status] of refusals) {
        // The start of a chunked body, then nothing: the socket stays open on the client's side.
        const exchange = yield* Effect.async<{ readonly answer: string; readonly closed: boolean }>((resume) => {
          let answer = ""
          const socket = Net.connect(port, "127.0.0.1", () => {
            socket.write(
              `${method} / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${signature}` +
                `Transfer-Encoding: chunked\r\n\r\n5\r\n{"dat\r\n`
            )
          })
          socket.on("data", (data) => void (answer += data))
          socket.on("close", () => resume(Effect.succeed({ answer, closed: true })))
          return Effect.sync(() => socket.destroy())
        }).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`${status}: not closed within 10 s`) }))
        const [statusLine, ...headerLines] = exchange.answer.split("\r\n\r\n")[0]!.split("\r\n")
        expect(statusLine).toBe(status)
        // Said in the answer, so the client knows not to send its next request on it.
        expect(headerLines.map((line) => line.toLowerCase())).toContain("connection: close")
        expect(exchange.closed).toBe(true)
      }
    }).pipe(Effect.scoped), 40_000)

  // The platform removes its request listener before it closes the server: a delivery whose headers complete in
  // between reaches no app, and on a bare createServer is never answered, the shutdown waiting for its client to give
  // up (this test would hang). The README's server factory (`refusingWhenClosed`) answers it 503.
  it.live("makeHandler: a delivery whose headers arrive while the server shuts down gets 503 from the README's server", () =>
    Effect.gen(function*() {
      const server = Http.createServer()
      server.on("request", (_request, response) => {
        if (server.listenerCount("request") === 1) response.writeHead(503, { connection: "close" }).end()
        response.on("finish", () => { if (!server.listening) setImmediate(() => server.closeIdleConnections()) })
      })
      // A keep-alive longer than the test may take: a connection held for it would fail the test, not slow it down.
      server.keepAliveTimeout = 600_000
      const { port, release, scope, started } = yield* servedInScope(server)
      const headers = yield* Webhooks.sign(body, secret)
      // Kept alive, as a sender's connections are: answered during the shutdown, it must not hold the closing server
      // for its keepAliveTimeout.
      const agent = new Http.Agent({ keepAlive: true })
      yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
      const first = new Promise<number | undefined>((resolve) =>
        Http.request({ host: "127.0.0.1", port, method: "POST", headers, agent }, (response) => {
          response.resume()
          resolve(response.statusCode)
        }).end(body)
      )
      yield* started
      // A second delivery: its request line sent before the shutdown, the rest of it after.
      let answer = ""
      const socket = Net.connect(port, "127.0.0.1", () => socket.write("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
      socket.on("data", (data) => void (answer += data))
      socket.on("error", () => {})
      // Waited for rather than paused for, as a fixed pause races a loaded machine: the server has accepted the second
      // connection (the first's and this one) before the shutdown begins...
      const connections = Effect.async<number>((resume) =>
        void server.getConnections((_error, count) => resume(Effect.succeed(count)))
      )
      yield* eventually(Effect.map(connections, (count) => count >= 2), "the second connection to be accepted")
      yield* pause(50)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      // ...and the platform has removed its request listener (the shutdown has begun) before the headers complete.
      yield* eventually(Effect.sync(() => server.listenerCount("request") === 1), "the platform's listener removed")
      socket.write(`x-fin-signature: ${headers["x-fin-signature"]}\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
      yield* eventually(Effect.sync(() => answer.includes("\r\n\r\n")), "the second delivery's answer")
      yield* release
      expect(yield* Effect.promise(() => first)).toBe(200)
      socket.destroy()
      // Closes: without each answer ending its idle connection, it would wait out the keep-alive set above (the test's
      // own timeout first).
      yield* Fiber.join(closing)
      expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 503 Service Unavailable")
    }).pipe(Effect.scoped), 20_000)

  it.live("a delivery offering a protocol upgrade (Upgrade: h2c) is refused as such, not as a bad signature", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      // HttpServer.serve listens for Node's "upgrade" too: such a request reaches the handler with its body left on the
      // socket.
      const server = Http.createServer()
      const loopback = { port: 0, host: "127.0.0.1" }
      yield* Layer.buildWithScope(
        Layer.unwrapScoped(Effect.map(
          Webhooks.makeHandler({ secrets: secret, handlers: {} }),
          (app) => HttpServer.serve(app).pipe(Layer.provide(NodeHttpServer.layer(() => server, loopback)))
        )).pipe(Layer.provide(logs.layer)),
        yield* Effect.scope
      )
      const port = (server.address() as Net.AddressInfo).port
      const headers = yield* Webhooks.sign(body, secret)
      const request = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `x-fin-signature: ${headers["x-fin-signature"]}\r\nx-fin-signature-algorithm: sha256\r\n` +
        "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      const answer = yield* Effect.async<string>((resume) => {
        let received = ""
        const socket = Net.connect(port, "127.0.0.1", () => socket.write(request))
        socket.on("data", (chunk) => {
          received += chunk.toString("utf8")
        })
        socket.on("close", () => resume(Effect.succeed(received)))
        socket.on("error", () => resume(Effect.succeed(received)))
      })
      expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request")
      expect(answer.endsWith(`{"error":"malformed_body"}`)).toBe(true)
      expect(logs.lines.join("\n")).toContain("the delivery asked for a protocol upgrade")
      expect(logs.lines.join("\n")).not.toContain("bad_signature")
    }).pipe(Effect.scoped), 20_000)

  // A body parser (express.json()) that ran first leaves an ended stream: the handler reads no bytes, and without a
  // look at the request said "the signature matches none of the webhook secrets", sending the operator to the secret.
  it.live("a body read by a parser first (express.json()) is refused as such, not as a bad signature", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const seen: Array<string> = []
      const handlers = {
        "beneficiary.status": (event: Webhooks.BeneficiaryStatusEvent) => Effect.sync(() => seen.push(event.id))
      }
      const handle = yield* NodeHttpServer.makeHandler(Webhooks.handler({ secrets: secret, handlers }))
        .pipe(Effect.provide(logs.layer))
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          JSON.parse(Buffer.concat(chunks).toString("utf8"))
          handle(request, response)
        })
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const port = (server.address() as Net.AddressInfo).port
      const headers = yield* Webhooks.sign(body, secret)
      const answer = yield* Effect.promise(async () => {
        const response = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body, headers })
        return [response.status, await response.text()]
      })
      expect(answer).toEqual([400, `{"error":"malformed_body"}`])
      expect(seen).toEqual([])
      expect(logs.lines.join("\n")).toContain("the body was read before the handler")
    }).pipe(Effect.scoped), 20_000)

  // README, Mounting it in an HttpRouter: the platform's http.server span records x-fin-signature unless the server's
  // layer adds it to Headers.currentRedactedNames, as the README shows.
  it.live("the README's Layer.locallyWith keeps x-fin-signature out of the http.server span", () =>
    Effect.gen(function*() {
      const headers = yield* Webhooks.sign(body, secret)
      const recorded = []
      for (const redacted of [false, true]) {
        const { layer: tracing, spans } = yield* recordingTracer
        const server = Http.createServer()
        const served = HttpServer.serve(Webhooks.handler({ secrets: secret, handlers: {} }))
        const WebhookServer = (redacted
          ? served.pipe(Layer.locallyWith(Headers.currentRedactedNames, (names) => [...names, "x-fin-signature"]))
          : served).pipe(Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" })))
        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(WebhookServer.pipe(Layer.provide(tracing)), scope)
        const { port } = server.address() as Net.AddressInfo
        const status = yield* Effect.promise(() =>
          fetch(`http://127.0.0.1:${port}/`, { method: "POST", body, headers }).then((response) => response.status)
        )
        yield* Scope.close(scope, Exit.void)
        const span = (yield* spans).find((span) => span.name.startsWith("http.server"))
        recorded.push([status, span?.attributes.get("http.request.header.x-fin-signature")])
      }
      expect(recorded).toEqual([[200, headers["x-fin-signature"]], [200, "<redacted>"]])
    }))
})
