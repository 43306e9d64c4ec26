/**
 * UndiciHttpClient against a local node:http server on port 0, in real time (short timeouts): a success with its
 * status, headers, cookies and body; an error status; abort on interruption (before the headers and while reading the
 * body: the server sees the connection closed); a transport failure. Then the whole client suite against the emulator.
 */
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as UrlParams from "@effect/platform/UrlParams"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Undici from "@effect/platform-node/Undici"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as ConfigError from "effect/ConfigError"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { systemCode } from "../src/internal/transportCause.js"
import { UndiciHttpClient } from "../src/node/index.js"
import { clientSuite } from "./emulator/clientSuite.js"
import { closedPort, eventually, startConnectProxy } from "./support.js"

// 4 MiB of a repeating pattern, so that a lost, repeated or reordered chunk shows.
const largeBody = Buffer.from(Uint8Array.from({ length: 4 * 1024 * 1024 }, (_, i) => (i * 7) % 251))

let server: Http.Server
let base = ""
/** Connections the server saw closed before it answered (or before it finished the body). */
let closedEarly = 0
let closedEarlyWaiters: Array<() => void> = []
const onClosedEarly = () => {
  closedEarly++
  for (const wake of closedEarlyWaiters) wake()
  closedEarlyWaiters = []
}
/** Requests to /stall the server has received: only one it has can be seen closed. */
let stallsReceived = 0
const closedEarlyAtLeast = (n: number) =>
  Effect.async<void>((resume) => {
    const check = () => (closedEarly >= n ? resume(Effect.void) : closedEarlyWaiters.push(check))
    check()
  })

beforeAll(async () => {
  server = Http.createServer((req, res) => {
    if (req.url === "/too-large") {
      // Answers at once, without reading what is being sent.
      res.writeHead(413, { connection: "close" })
      res.end("too large")
      return
    }
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      if (req.url === "/echo") {
        res.writeHead(201, {
          "content-type": "application/json",
          "x-reply": "yes",
          "set-cookie": ["a=1; Path=/", "b=2; Path=/"]
        })
        res.end(JSON.stringify({ method: req.method, test: req.headers["x-test"], connection: req.headers.connection, body }))
      } else if (req.url === "/form") {
        // Answers what it received, in the content type it received it in.
        res.writeHead(200, { "content-type": req.headers["content-type"] ?? "", "x-test": req.headers["x-test"] ?? "" })
        res.end(body)
      } else if (req.url === "/text") {
        res.writeHead(200, { "content-type": "text/plain" })
        res.write("hello, ")
        setTimeout(() => res.end("world"), 5)
      } else if (req.url === "/unavailable") {
        res.writeHead(503, { "content-type": "application/json", "retry-after": "1" })
        res.end(`{"message":"try later"}`)
      } else if (req.url === "/reset-after-headers") {
        res.writeHead(200, { "content-type": "application/json" })
        res.flushHeaders()
        setTimeout(() => res.socket?.destroy(), 10)
      } else if (req.url === "/large") {
        res.writeHead(200, { "content-type": "application/octet-stream" })
        res.end(largeBody)
      } else if (req.url === "/stall") {
        stallsReceived++
        res.on("close", () => {
          if (!res.writableEnded) onClosedEarly()
        })
      } else if (req.url === "/stall-body") {
        res.writeHead(200, { "content-type": "application/json", "content-length": "100" })
        res.write(`{"partial":`)
        res.on("close", () => {
          if (!res.writableEnded) onClosedEarly()
        })
      } else if (req.url?.startsWith("/url")) {
        // Answers the request's target as the server received it.
        res.writeHead(200, { "content-type": "text/plain" })
        res.end(req.url)
      } else {
        res.writeHead(404)
        res.end()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

const withClient = <A, E>(f: (client: HttpClient.HttpClient) => Effect.Effect<A, E>) =>
  Effect.flatMap(HttpClient.HttpClient, f).pipe(Effect.provide(UndiciHttpClient.layer))

describe("UndiciHttpClient", () => {
  it.live("sends method, headers and body; reads status, headers, cookies and body", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const response = yield* client.execute(
          HttpClientRequest.post(`${base}/echo`).pipe(
            HttpClientRequest.setHeader("x-test", "42"),
            HttpClientRequest.bodyUnsafeJson({ hello: "world" })
          )
        )
        expect(response.status).toBe(201)
        expect(response.headers["x-reply"]).toBe("yes")
        expect(response.headers["content-type"]).toBe("application/json")
        expect(response.cookies.cookies["a"]?.value).toBe("1")
        expect(response.cookies.cookies["b"]?.value).toBe("2")
        // A header sent more than once: its values joined, as Headers.fromInput (and NodeHttpClient) give it.
        expect(response.headers["set-cookie"]).toBe("a=1; Path=/, b=2; Path=/")
        const json = yield* response.json
        expect(json).toEqual({ method: "POST", test: "42", connection: "keep-alive", body: `{"hello":"world"}` })
        // The body is read once: reading it again gives the same text.
        expect(yield* response.text).toBe(JSON.stringify(json))
      })
    ))

  it.live("sends a FormData body as multipart/form-data with its boundary, and reads a form answered", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const form = new FormData()
        form.append("note", "fee report")
        form.append("file", new Blob(["a,b\n1,2\n"], { type: "text/csv" }), "report.csv")
        const response = yield* client.execute(HttpClientRequest.post(`${base}/form`, { body: HttpBody.formData(form) }))
        expect(response.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=.+$/)
        const echoed = yield* response.formData
        expect(echoed.get("note")).toBe("fee report")
        const file = echoed.get("file") as File
        expect([file.name, file.type]).toEqual(["report.csv", "text/csv"])
        expect(yield* Effect.promise(() => file.text())).toBe("a,b\n1,2\n")
      })
    ))

  it.live("a form request keeps its other headers; a form answered reads again, and after its bytes", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const form = new FormData()
        form.append("note", "fee report")
        const response = yield* client.execute(
          HttpClientRequest.post(`${base}/form`, { body: HttpBody.formData(form) }).pipe(
            HttpClientRequest.setHeader("x-test", "42")
          )
        )
        expect(response.headers["x-test"]).toBe("42")
        const bytes = yield* response.arrayBuffer
        expect(bytes.byteLength).toBeGreaterThan(0)
        expect(yield* response.arrayBuffer).toBe(bytes)
        expect((yield* response.formData).get("note")).toBe("fee report")
        expect((yield* response.formData).get("note")).toBe("fee report")
      })
    ))

  // undici throws (an assertion) rather than rejects when a body read one way is read another: a decode error, as on
  // NodeHttpClient.layerUndici, not a defect.
  it.live("a body read as text, then as bytes, fails as a decode error", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const response = yield* client.execute(HttpClientRequest.post(`${base}/echo`))
        yield* response.text
        const error = yield* Effect.flip(response.arrayBuffer)
        expect([error._tag, error.reason]).toEqual(["ResponseError", "Decode"])
      })
    ))

  it.live("reads a URL-encoded form answered, as a form or as URL params; a body that is no form fails to decode", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const request = HttpClientRequest.post(`${base}/form`, {
          body: HttpBody.urlParams(UrlParams.fromInput({ a: "1", b: "x y" }))
        })
        const fields = yield* Effect.flatMap(client.execute(request), (response) => response.formData)
        expect([fields.get("a"), fields.get("b")]).toEqual(["1", "x y"])
        expect(yield* Effect.flatMap(client.execute(request), (response) => response.urlParamsBody))
          .toEqual([["a", "1"], ["b", "x y"]])
        const json = yield* client.execute(HttpClientRequest.post(`${base}/form`).pipe(HttpClientRequest.bodyUnsafeJson({})))
        const error = yield* Effect.flip(json.formData)
        expect([error._tag, error.reason]).toEqual(["ResponseError", "Decode"])
      })
    ))

  it.live("sends the URL's path and query string, not its fragment", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const response = yield* client.execute(HttpClientRequest.get(`${base}/url/a%20b?x=1&y=two%26three#fragment`))
        expect([response.status, yield* response.text]).toEqual([200, "/url/a%20b?x=1&y=two%26three"])
        const params = yield* client.execute(
          HttpClientRequest.get(`${base}/url`).pipe(HttpClientRequest.setUrlParam("q", "a b"))
        )
        expect(yield* params.text).toBe("/url?q=a+b")
      })
    ))

  it.live("an empty body read as JSON is null, as the platform's clients read it", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const response = yield* client.execute(HttpClientRequest.get(`${base}/nowhere`))
        expect([response.status, yield* response.json]).toEqual([404, null])
      })
    ))

  it.live("sends a streamed body; one the server does not read is stopped once the answer comes, its finalizers run", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const parts = Stream.make("a", "b", "c").pipe(Stream.map((text) => new TextEncoder().encode(text)))
      const echoed = yield* client.execute(HttpClientRequest.post(`${base}/echo`).pipe(HttpClientRequest.bodyStream(parts)))
      expect((yield* echoed.json) as { body: string }).toMatchObject({ body: "abc" })

      // A source that never ends (a pipe, a socket): the answer comes first, and the source must not be left open.
      const stopped = yield* Deferred.make<void>()
      const endless = Stream.make(new TextEncoder().encode("x")).pipe(
        Stream.concat(Stream.never),
        Stream.ensuring(Deferred.succeed(stopped, undefined))
      )
      const refused = yield* client.execute(HttpClientRequest.post(`${base}/too-large`).pipe(HttpClientRequest.bodyStream(endless)))
      expect(refused.status).toBe(413)
      yield* Deferred.await(stopped).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => "the source was left open" }))
    }).pipe(Effect.provide(UndiciHttpClient.layer)))

  it.live("applies the NodeHttpClient.UndiciRequestOptions in context, as NodeHttpClient does", () =>
    Effect.gen(function*() {
      // The client in context: this test's, or one a layer below provides.
      const connection = Effect.flatMap(HttpClient.HttpClient, (client) =>
        Effect.flatMap(client.post(`${base}/echo`), (r) => r.json).pipe(
          Effect.map((json) => (json as { connection: string }).connection)
        ))
      expect(yield* connection).toBe("keep-alive")
      // The platform types the options as whole requests; only the fields given are used.
      const reset = { reset: true } as unknown as Context.Tag.Service<typeof NodeHttpClient.UndiciRequestOptions>
      expect(yield* Effect.provideService(connection, NodeHttpClient.UndiciRequestOptions, reset)).toBe("close")
      // Provided to the layer, as NodeHttpClient's layers merge it into every request's context; a request's own wins.
      const keepAlive = { reset: false } as unknown as Context.Tag.Service<typeof NodeHttpClient.UndiciRequestOptions>
      for (const layer of [UndiciHttpClient.layer, NodeHttpClient.layerUndici]) {
        const withReset = Layer.provide(layer, Layer.succeed(NodeHttpClient.UndiciRequestOptions, reset))
        const seen = yield* Effect.all([
          connection,
          Effect.provideService(connection, NodeHttpClient.UndiciRequestOptions, keepAlive)
        ]).pipe(Effect.provide(withReset))
        expect(seen).toEqual(["close", "keep-alive"])
      }
    }).pipe(Effect.provide(UndiciHttpClient.layer)))

  it.live("reads a body sent in parts, as text and as a stream", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const text = yield* Effect.flatMap(client.get(`${base}/text`), (r) => r.text)
        expect(text).toBe("hello, world")
        const streamed = yield* Effect.flatMap(client.get(`${base}/text`), (r) => Stream.runCollect(r.stream))
        expect(Buffer.concat(Chunk.toArray(streamed)).toString("utf8")).toBe("hello, world")
      })
    ))

  it.live("an error status is a response like any other, with its headers and body", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const response = yield* client.get(`${base}/unavailable`)
        expect(response.status).toBe(503)
        expect(response.headers["retry-after"]).toBe("1")
        expect(yield* response.json).toEqual({ message: "try later" })
        // filterStatusOk turns it into the platform's ResponseError.
        const error = yield* Effect.flip(HttpClient.filterStatusOk(client).get(`${base}/unavailable`))
        expect(error._tag).toBe("ResponseError")
        expect(error.reason).toBe("StatusCode")
      })
    ))

  it.live("closing the layer closes its agent: no connection it kept alive is left open on the server", () =>
    Effect.gen(function*() {
      const openConnections = Effect.async<number>((resume) => {
        server.getConnections((error, count) => resume(error ? Effect.die(error) : Effect.succeed(count)))
      })
      const whileOpen = yield* withClient((client) =>
        Effect.zipRight(Effect.flatMap(client.get(`${base}/text`), (r) => r.text), openConnections)
      )
      expect(whileOpen).toBeGreaterThanOrEqual(1)
      // The server hears of the close a moment later: waited for (undici would keep the socket 4 s otherwise).
      yield* openConnections.pipe(
        Effect.repeat({ until: (count) => count === 0, schedule: Schedule.spaced("10 millis") }),
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("a connection was left open") })
      )
    }))

  it.scopedLive("layerWithoutDispatcher sends through the Dispatcher in context and leaves it open when its layer closes", () =>
    Effect.gen(function*() {
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => new Undici.Agent()),
        (agent) => Effect.promise(() => agent.destroy())
      )
      let dispatched = 0
      const counting = agent.compose((dispatch) => (options, handler) => (dispatched++, dispatch(options, handler)))
      const onShared = Layer.provide(
        UndiciHttpClient.layerWithoutDispatcher,
        Layer.succeed(NodeHttpClient.Dispatcher, counting)
      )
      const text = Effect.flatMap(HttpClient.HttpClient, (client) =>
        Effect.flatMap(client.get(`${base}/text`), (r) => r.text)).pipe(Effect.provide(onShared))
      expect(yield* text).toBe("hello, world")
      expect(dispatched).toBe(1)
      // The shared agent outlives the client's layer: the next client sends through it too.
      expect(agent.closed).toBe(false)
      expect(yield* text).toBe("hello, world")
      expect(dispatched).toBe(2)
    }))

  // The proxy variables, emptied for a test and put back after it.
  const proxyEnv = (env: Record<string, string>) => {
    const names = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"]
    return Effect.acquireRelease(
      Effect.sync(() => {
        const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]))
        for (const name of names) delete process.env[name]
        Object.assign(process.env, env)
        return saved
      }),
      (saved) =>
        Effect.sync(() => {
          for (const [name, value] of Object.entries(saved)) {
            if (value === undefined) delete process.env[name]
            else process.env[name] = value
          }
        })
    )
  }
  // A CONNECT proxy on loopback (see `startConnectProxy`), closed with the test's scope.
  const connectProxy = (...args: Parameters<typeof startConnectProxy>) =>
    Effect.acquireRelease(Effect.promise(() => startConnectProxy(...args)), (proxy) => Effect.promise(proxy.close))
  const proxyDispatcher = Effect.map(
    Layer.build(UndiciHttpClient.layerDispatcherFromEnvProxy),
    (context) => context.unsafeMap.get(NodeHttpClient.Dispatcher.key) as Undici.EnvHttpProxyAgent
  )

  it.scopedLive("layerDispatcherFromEnvProxy: HTTP_PROXY, NO_PROXY, a bad variable, a proxy closing on CONNECT", () =>
    Effect.gen(function*() {
      const proxy = yield* connectProxy()
      yield* proxyEnv({})
      const host = new URL(base).host
      const clients = [UndiciHttpClient.layerWithoutDispatcher, NodeHttpClient.layerUndiciWithoutDispatcher]
      // The variables are read when the layer is built.
      const text = (client: Layer.Layer<HttpClient.HttpClient, never, NodeHttpClient.Dispatcher>) =>
        Effect.flatMap(HttpClient.HttpClient, (c) => Effect.flatMap(c.get(`${base}/text`), (r) => r.text)).pipe(
          Effect.provide(Layer.provide(client, UndiciHttpClient.layerDispatcherFromEnvProxy))
        )
      process.env.HTTP_PROXY = proxy.url
      delete process.env.NO_PROXY
      for (const client of clients) expect(yield* text(client)).toBe("hello, world")
      expect(proxy.tunnels()).toEqual([host, host])
      process.env.NO_PROXY = "127.0.0.1"
      for (const client of clients) expect(yield* text(client)).toBe("hello, world")
      delete process.env.HTTP_PROXY
      delete process.env.NO_PROXY
      for (const client of clients) expect(yield* text(client)).toBe("hello, world")
      expect(proxy.tunnels()).toEqual([host, host])
      // A variable that holds no proxy URL: a ConfigError naming it, never its value (it may hold credentials).
      for (const value of ["proxy.internal:3128", "http://user:hunter2@[::1", "ftp://user:hunter2@proxy"]) {
        process.env.HTTPS_PROXY = value
        const error = yield* Effect.flip(Layer.build(UndiciHttpClient.layerDispatcherFromEnvProxy))
        expect(ConfigError.isConfigError(error) && String(error)).toBe(
          "(Invalid data at HTTPS_PROXY: \"is not a proxy URL: give http://host:port or https://host:port " +
            "(http://user:pass@host:port with credentials)\")"
        )
      }
      delete process.env.HTTPS_PROXY
      // A proxy closing the connection before it answers CONNECT: the request fails, once, its code saying so (undici
      // alone asks again at once, for ever, and the request never ends).
      const closing = yield* connectProxy("close")
      process.env.HTTP_PROXY = closing.url
      for (const client of clients) {
        const error = yield* Effect.flip(text(client))
        expect(error._tag === "RequestError" && systemCode(error.cause)).toBe("PROXY_TUNNEL_CLOSED")
      }
      expect(closing.tunnels()).toEqual([host, host])
    }))

  // undici's rule, which the README states: an empty https_proxy is "not set", so https URLs take the http proxy.
  it.scopedLive("layerDispatcherFromEnvProxy: an empty https_proxy sends https URLs through the http proxy", () =>
    Effect.gen(function*() {
      const proxy = yield* connectProxy()
      yield* proxyEnv({ https_proxy: "", HTTP_PROXY: proxy.url })
      const dispatcher = yield* proxyDispatcher
      const port = yield* closedPort
      yield* Effect.promise(() =>
        Undici.request(`https://127.0.0.1:${port}/`, { dispatcher }).then(() => undefined, () => undefined)
      )
      expect(proxy.tunnels()).toEqual([`127.0.0.1:${port}`])
    }))

  it.scopedLive("layerDispatcherFromEnvProxy is closed with its layer, its connections to the proxy with it", () =>
    Effect.gen(function*() {
      const proxy = yield* connectProxy()
      const scope = yield* Scope.make()
      const dispatcher = yield* Scope.extend(
        Effect.zipRight(proxyEnv({ HTTP_PROXY: proxy.url }), proxyDispatcher),
        scope
      )
      expect(yield* Effect.promise(() =>
        Undici.request(`${base}/text`, { dispatcher }).then((response) => response.body.text())
      )).toBe("hello, world")
      expect(proxy.open()).toBeGreaterThan(0)
      yield* Scope.close(scope, Exit.void)
      expect((dispatcher as unknown as { readonly destroyed: boolean }).destroyed).toBe(true)
      yield* eventually(Effect.sync(() => proxy.open() === 0), "the proxy's sockets closed")
    }))

  it.live("interrupting a request before its headers aborts it: the server sees the connection closed", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const before = closedEarly
        const received = stallsReceived
        const request = yield* Effect.fork(client.get(`${base}/stall`))
        // Interrupted once the server has the request: a fixed timeout could end it, on a loaded machine, before it
        // was sent, and there would be no connection for the server to see closed.
        yield* Effect.sleep("5 millis").pipe(
          Effect.repeat({ until: () => stallsReceived > received }),
          Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the request was never received") })
        )
        expect(Exit.isInterrupted(yield* Fiber.interrupt(request))).toBe(true)
        yield* Effect.timeout(closedEarlyAtLeast(before + 1), Duration.seconds(20))
      })
    ))

  it.live("interrupting the read of a body, as text or as a stream, aborts it too", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const readers = [
          (r: HttpClientResponse.HttpClientResponse) => r.text,
          (r: HttpClientResponse.HttpClientResponse) => Stream.runDrain(r.stream)
        ]
        for (const read of readers) {
          const before = closedEarly
          const response = yield* client.get(`${base}/stall-body`)
          expect(response.status).toBe(200)
          const exit = yield* Effect.exit(Effect.timeout(read(response), Duration.millis(100)))
          expect(Exit.isFailure(exit)).toBe(true)
          yield* Effect.timeout(closedEarlyAtLeast(before + 1), Duration.seconds(20))
        }
      })
    ))

  it.live("a stream read after its body failed fails at once; one read after its end ends at once", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const broken = yield* client.get(`${base}/reset-after-headers`)
        // The connection is gone before anybody reads the body.
        yield* Effect.sleep(Duration.millis(100))
        const error = yield* Effect.flip(Effect.timeout(Stream.runDrain(broken.stream), Duration.seconds(5)))
        expect(error._tag).toBe("ResponseError")
        const done = yield* client.get(`${base}/text`)
        expect(Buffer.concat(Chunk.toArray(yield* Stream.runCollect(done.stream))).toString("utf8")).toBe("hello, world")
        const again = yield* Effect.timeout(Stream.runCollect(done.stream), Duration.seconds(5))
        expect(Chunk.size(again)).toBe(0)
        // A body whose stream was stopped early (closed, with no error): a second read fails, it does not wait.
        const large = yield* client.get(`${base}/large`)
        expect(Option.isSome(yield* Stream.runHead(large.stream))).toBe(true)
        const stopped = yield* Effect.flip(Effect.timeout(Stream.runDrain(large.stream), Duration.seconds(5)))
        expect(stopped._tag).toBe("ResponseError")
      })
    ))

  // effect-fin reads a body of unknown length as a stream, and names the failure by its cause's code (UND_ERR_SOCKET).
  it.live("a stream whose body failed fails with the body's own error as its cause", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const broken = yield* client.get(`${base}/reset-after-headers`)
        const error = yield* Effect.flip(Effect.timeout(Stream.runDrain(broken.stream), Duration.seconds(5)))
        expect(error._tag).toBe("ResponseError")
        const code = expect.stringMatching(/^(UND_ERR_SOCKET|ECONNRESET)$/)
        expect((error as { cause?: unknown }).cause).toMatchObject({ code })
      })
    ))

  it.live("under HttpClient.withScope (no abort of the platform's), a stream stopped early closes its body", () =>
    withClient((client) =>
      Effect.scoped(Effect.gen(function*() {
        const before = closedEarly
        const response = yield* HttpClient.withScope(client).get(`${base}/stall-body`)
        const exit = yield* Effect.exit(Effect.timeout(Stream.runDrain(response.stream), Duration.millis(100)))
        expect(Exit.isFailure(exit)).toBe(true)
        // Before the scope closes: the body itself was closed.
        yield* Effect.timeout(closedEarlyAtLeast(before + 1), Duration.seconds(20))
      }))
    ))

  it.live("sends a raw body", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const response = yield* client.execute(
          HttpClientRequest.post(`${base}/echo`).pipe(HttpClientRequest.setBody(HttpBody.raw("raw text")))
        )
        expect(((yield* response.json) as { body: string }).body).toBe("raw text")
      })
    ))

  it.live("leaves timeouts to Effect: undici's headers timeout an hour and no body timeout, as NodeHttpClient's", () =>
    Effect.gen(function*() {
      const seen: Array<{ readonly headersTimeout?: number | null; readonly bodyTimeout?: number | null }> = []
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => new Undici.Agent()),
        (agent) => Effect.promise(() => agent.destroy())
      )
      const recording = agent.compose((dispatch) => (options, handler) => {
        seen.push(options)
        return dispatch(options, handler)
      })
      const text = Effect.flatMap(UndiciHttpClient.make(recording).get(`${base}/text`), (r) => r.text)
      expect(yield* text).toBe("hello, world")
      expect(seen.map((o) => [o.headersTimeout, o.bodyTimeout])).toEqual([[60 * 60 * 1000, 0]])
    }).pipe(Effect.scoped))

  it.live("closing the layer does not wait for a body nobody reads", () =>
    Effect.gen(function*() {
      const response = yield* withClient((client) => client.get(`${base}/stall-body`)).pipe(
        Effect.timeoutFail({ duration: "3 seconds", onTimeout: () => new Error("the layer waited for the body") })
      )
      expect(response.status).toBe(200)
    }))

  it.live("a large body streamed through a slow reader arrives whole and in order", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const response = yield* client.get(`${base}/large`)
        const bytes = yield* Stream.runFold(
          Stream.tap(response.stream, () => Effect.yieldNow()),
          [] as Array<Uint8Array>,
          (all, chunk) => [...all, chunk]
        )
        const body = Buffer.concat(bytes)
        expect(body.length).toBe(largeBody.length)
        expect(body.equals(largeBody)).toBe(true)
      })
    ))

  it.live("a transport failure is a RequestError with reason Transport", () =>
    withClient((client) =>
      Effect.gen(function*() {
        const port = yield* closedPort
        const error = yield* Effect.flip(client.get(`http://127.0.0.1:${port}/`))
        expect(error._tag).toBe("RequestError")
        if (error._tag === "RequestError") expect(error.reason).toBe("Transport")
      })
    ))
})

clientSuite("UndiciHttpClient.layer", UndiciHttpClient.layer)
