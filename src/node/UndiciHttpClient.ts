/**
 * A lean platform `HttpClient` on `undici`'s `Dispatcher.request`, for Node: the same interface and behaviour as
 * `NodeHttpClient.layerUndici` (built with `HttpClient.make`, so spans, trace headers and abort on interruption are
 * the platform's own; `NodeHttpClient.UndiciRequestOptions` apply, provided to the layer or around a request; a
 * streamed body goes as a Node `Readable`; only a URL's fragment is not sent, as it never belongs on the wire; and
 * forms work both ways, sent and read, where undici 7 on Node 20 fails on them under `layerUndici`), with
 * less work per request: the request is sent with undici's callback API (no promise, no extra fiber), the response
 * headers are converted once, and the body is read once without a cached effect being run per response. Nor is the
 * layer's context merged into each request's (`layerUndici` does, per request): of what is provided to the layer only
 * `UndiciRequestOptions` is read; anything else the platform's client reads from the context (a
 * `HttpClient.SpanNameGenerator`, say) is to be provided around the requests.
 *
 * ```ts
 * program.pipe(Effect.provide(FinClient.layer(options)), Effect.provide(UndiciHttpClient.layer))
 * ```
 *
 * undici comes from `@effect/platform-node` (loaded when a layer is built), so importing `effect-fin/node` does not
 * require it.
 *
 * @since 0.1.0
 */
import * as Cookies from "@effect/platform/Cookies"
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as IncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as UrlParams from "@effect/platform/UrlParams"
import type * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type * as Undici from "@effect/platform-node/Undici"
import * as Chunk from "effect/Chunk"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Stream from "effect/Stream"
import * as EgressProxy from "../internal/egressProxy.js"
import { Readable } from "node:stream"
import type { ReadableStream as WebReadableStream } from "node:stream/web"

// `NodeHttpClient.Dispatcher`, by its key: a value import would make `effect-fin/node` require the platform package.
const Dispatcher = Context.GenericTag<NodeHttpClient.Dispatcher, Undici.Dispatcher>(
  "@effect/platform-node/NodeHttpClient/Dispatcher"
)

// `NodeHttpClient.UndiciRequestOptions`, by its key: options a program provides for the requests in an effect (say
// `{ reset: true }`) apply here too, as with NodeHttpClient.
const undiciOptionsKey = "@effect/platform-node/NodeHttpClient/undiciOptions"
const noOptions: Partial<Undici.Dispatcher.RequestOptions> = {}
const layerOptions = Effect.map(
  Effect.context<never>(),
  (context): Partial<Undici.Dispatcher.RequestOptions> => context.unsafeMap.get(undiciOptionsKey) ?? noOptions
)

// Timeouts are left to Effect (`Effect.timeout`, effect-fin's per-attempt timeout), as NodeHttpClient does.
const HEADERS_TIMEOUT = 60 * 60 * 1000

type RequestBody = Exclude<Undici.Dispatcher.DispatchOptions["body"], undefined>

const send = (
  dispatcher: Undici.Dispatcher,
  request: HttpClientRequest.HttpClientRequest,
  url: URL,
  signal: AbortSignal,
  options: Partial<Undici.Dispatcher.RequestOptions>,
  body: RequestBody,
  headers: Exclude<Undici.Dispatcher.DispatchOptions["headers"], undefined>
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError> =>
  Effect.async((resume) => {
    dispatcher.request(
      {
        ...options,
        method: request.method,
        origin: url.origin,
        path: url.pathname + url.search,
        headers,
        body,
        signal,
        headersTimeout: HEADERS_TIMEOUT,
        bodyTimeout: 0
      },
      (cause, data) => {
        resume(
          cause === null || cause === undefined
            ? Effect.succeed(new UndiciResponse(request, data))
            : Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause }))
        )
      }
    )
  })

// Loaded on the first streamed body, as undici is on the first layer built: importing `effect-fin/node` requires
// neither.
let nodeStream: Promise<typeof import("@effect/platform-node/NodeStream")> | undefined

// The optional peer is not installed: a defect (the app is set up wrong) that says what to install, rather than the
// loader's bare "Cannot find package". Any other failure to load it (a runner refusing the import) is said as it is.
const peerMissing = (cause: unknown): never => {
  const code = Predicate.hasProperty(cause, "code") ? cause.code : undefined
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") throw cause
  throw new Error(
    "effect-fin/node: UndiciHttpClient needs @effect/platform-node: npm install @effect/platform-node@0.108",
    { cause }
  )
}

/**
 * A platform `HttpClient` sending through `dispatcher` (an undici `Agent`, `Pool`, ...).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (dispatcher: Undici.Dispatcher): HttpClient.HttpClient => makeWith(dispatcher, noOptions)

// `layerOptions`: those provided to the client's layer, which NodeHttpClient's layers merge into every request's
// context; a request's own replace them, as there. Read here once rather than merging contexts per request.
const makeWith = (
  dispatcher: Undici.Dispatcher,
  layerOptions: Partial<Undici.Dispatcher.RequestOptions>
): HttpClient.HttpClient =>
  HttpClient.make((request, url, signal, fiber) => {
    const options: Partial<Undici.Dispatcher.RequestOptions> =
      fiber.getFiberRef(FiberRef.currentContext).unsafeMap.get(undiciOptionsKey) ?? layerOptions
    const body = request.body
    switch (body._tag) {
      case "Empty":
        return send(dispatcher, request, url, signal, options, null, request.headers)
      case "Uint8Array":
      case "Raw":
        return send(dispatcher, request, url, signal, options, body.body as RequestBody, request.headers)
      case "FormData": {
        // undici 7 cannot read Node's own FormData (undici 6's: "action is not a function"). Node's own Response
        // encodes it instead, as NodeHttpClient's node:http driver does, and its content type carries the boundary.
        const encoded = new Response(body.formData)
        return send(dispatcher, request, url, signal, options, Readable.fromWeb(encoded.body as WebReadableStream), {
          ...request.headers,
          "content-type": encoded.headers.get("content-type") ?? "multipart/form-data"
        })
      }
      case "Stream":
        // A Node Readable, as NodeHttpClient sends: when undici stops reading it (the server answered early, the
        // request was aborted) it is destroyed, which interrupts the stream and runs its finalizers. A web stream
        // would wait for its pending read first, for ever from a source that produces nothing more.
        return Effect.flatMap(
          Effect.promise(() => (nodeStream ??= import("@effect/platform-node/NodeStream").catch(peerMissing))),
          (NodeStream) =>
            Effect.flatMap(
              NodeStream.toReadable(body.stream),
              (readable) => send(dispatcher, request, url, signal, options, readable as RequestBody, request.headers)
            )
        )
    }
  })

const noop = () => {}

class UndiciResponse extends Inspectable.Class implements HttpClientResponse.HttpClientResponse {
  readonly [IncomingMessage.TypeId]: IncomingMessage.TypeId
  readonly [HttpClientResponse.TypeId]: HttpClientResponse.TypeId
  private cachedHeaders: Headers.Headers | undefined
  private cachedCookies: Cookies.Cookies | undefined
  private textPromise: Promise<string> | undefined
  private textEffect: Effect.Effect<string, HttpClientError.ResponseError> | undefined
  private arrayBufferPromise: Promise<ArrayBuffer> | undefined

  constructor(
    readonly request: HttpClientRequest.HttpClientRequest,
    readonly source: Undici.Dispatcher.ResponseData
  ) {
    super()
    this[IncomingMessage.TypeId] = IncomingMessage.TypeId
    this[HttpClientResponse.TypeId] = HttpClientResponse.TypeId
    // A body that fails with nobody reading it (aborted after the headers) must not become an uncaught error.
    source.body.on("error", noop)
  }

  get status(): number {
    return this.source.statusCode
  }

  get headers(): Headers.Headers {
    return this.cachedHeaders ??= Headers.fromInput(this.source.headers as Headers.Input)
  }

  get cookies(): Cookies.Cookies {
    if (this.cachedCookies !== undefined) return this.cachedCookies
    const header = this.source.headers["set-cookie"]
    return this.cachedCookies = header === undefined
      ? Cookies.empty
      : Cookies.fromSetCookie(Array.isArray(header) ? header : [header])
  }

  get remoteAddress(): Option.Option<string> {
    return Option.none()
  }

  private decodeError(cause: unknown): HttpClientError.ResponseError {
    return new HttpClientError.ResponseError({ request: this.request, response: this, reason: "Decode", cause })
  }

  private fromPromise<A>(promise: () => Promise<A>): Effect.Effect<A, HttpClientError.ResponseError> {
    return Effect.async((resume) => {
      let started: Promise<A>
      try {
        started = promise()
      } catch (cause) {
        // undici throws (an assertion) rather than rejects when a body already read one way is read another way:
        // a decode error, as NodeHttpClient's is, not a defect.
        return resume(Effect.fail(this.decodeError(cause)))
      }
      started.then(
        (value) => resume(Effect.succeed(value)),
        (cause) => resume(Effect.fail(this.decodeError(cause)))
      )
    })
  }

  /** The body as text, read once: every run of the effect shares the one read. */
  get text(): Effect.Effect<string, HttpClientError.ResponseError> {
    return this.textEffect ??= this.fromPromise(() => this.textPromise ??= this.source.body.text())
  }

  get json(): Effect.Effect<unknown, HttpClientError.ResponseError> {
    return Effect.flatMap(this.text, (text) => {
      try {
        return Effect.succeed(text === "" ? null : JSON.parse(text) as unknown)
      } catch (cause) {
        return Effect.fail(this.decodeError(cause))
      }
    })
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpClientError.ResponseError> {
    return Effect.flatMap(this.text, (text) => {
      try {
        return Effect.succeed(UrlParams.fromInput(new URLSearchParams(text)))
      } catch (cause) {
        return Effect.fail(this.decodeError(cause))
      }
    })
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpClientError.ResponseError> {
    return this.fromPromise(() => this.arrayBufferPromise ??= this.source.body.arrayBuffer())
  }

  get formData(): Effect.Effect<FormData, HttpClientError.ResponseError> {
    // undici 7's body does not parse forms (NotSupportedError, on NodeHttpClient.layerUndici too): Node's own Response
    // does, multipart or URL-encoded, from the bytes and the content type.
    return this.fromPromise(() =>
      (this.arrayBufferPromise ??= this.source.body.arrayBuffer()).then((bytes) =>
        new Response(bytes, { headers: { "content-type": this.headers["content-type"] ?? "" } }).formData()
      )
    )
  }

  // Pulled with `read()` (the body stays paused between pulls: backpressure without a buffer of our own), one chunk per
  // pull with no fiber or queue per chunk. Not `Stream.fromAsyncIterable`: its finalizer awaits the iterator's
  // `return`, which waits for the pending read, so a reader interrupted (a timeout) on a body that stalls would never
  // finish; here the body is destroyed at once. A body that failed, or was consumed, before the stream was read ends
  // the stream too, rather than leaving it waiting for events that came earlier.
  get stream(): Stream.Stream<Uint8Array, HttpClientError.ResponseError> {
    const body = this.source.body
    const pull = Effect.async<Chunk.Chunk<Uint8Array>, Option.Option<HttpClientError.ResponseError>>((resume) => {
      const settle = (): boolean => {
        if (body.errored !== null) {
          resume(Effect.fail(Option.some(this.decodeError(body.errored))))
          return true
        }
        const chunk = body.read() as Uint8Array | null
        if (chunk !== null) {
          resume(Effect.succeed(Chunk.of(chunk)))
          return true
        }
        if (body.readableEnded) {
          resume(Effect.fail(Option.none()))
          return true
        }
        if (body.destroyed) {
          resume(Effect.fail(Option.some(this.decodeError(new Error("the body was closed before its end")))))
          return true
        }
        return false
      }
      if (settle()) return
      const retry = () => {
        if (settle()) stop()
      }
      const stop = () => {
        body.off("readable", retry)
        body.off("end", retry)
        body.off("close", retry)
        body.off("error", retry)
      }
      body.on("readable", retry)
      body.on("end", retry)
      body.on("close", retry)
      body.on("error", retry)
      return Effect.sync(stop)
    })
    return Stream.repeatEffectChunkOption(pull).pipe(
      Stream.ensuring(Effect.sync(() => {
        if (!body.readableEnded) body.destroy()
      }))
    )
  }

  toJSON(): unknown {
    return IncomingMessage.inspect(this, {
      _id: "@effect/platform/HttpClientResponse",
      request: this.request.toJSON(),
      status: this.status
    })
  }
}

/**
 * The client on the `NodeHttpClient.Dispatcher` in context (e.g. `NodeHttpClient.dispatcherLayer`), to share one
 * undici `Agent` with other clients.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithoutDispatcher: Layer.Layer<HttpClient.HttpClient, never, NodeHttpClient.Dispatcher> = Layer
  .effect(HttpClient.HttpClient, Effect.flatMap(Dispatcher, (dispatcher) => Effect.map(layerOptions, (o) => makeWith(dispatcher, o))))

// A dispatcher of undici's (loaded then), destroyed when the scope closes.
const ownDispatcher = <E>(make: (undici: typeof Undici) => Effect.Effect<Undici.Dispatcher, E>) =>
  Effect.acquireRelease(
    Effect.promise(() => import("@effect/platform-node/Undici").catch(peerMissing)).pipe(Effect.flatMap(make)),
    (dispatcher) => Effect.promise(() => dispatcher.destroy())
  )

// As long as undici gives a connection to be made (its connect timeout): a proxy that has not answered CONNECT by then
// will not.
const PROXY_ANSWER_TIMEOUT = 10_000

/**
 * The client on its own undici `Agent`, closed with the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<HttpClient.HttpClient> = Layer.scoped(
  HttpClient.HttpClient,
  Effect.flatMap(
    ownDispatcher((undici) => Effect.sync(() => new undici.Agent())),
    (agent) => Effect.map(layerOptions, (o) => makeWith(agent, o))
  )
)

/**
 * A `NodeHttpClient.Dispatcher` that sends through the egress proxy the environment names, by the rules of undici's
 * `EnvHttpProxyAgent` (close to curl's): `https_proxy` or `HTTPS_PROXY` for https URLs (else the http one),
 * `http_proxy` or `HTTP_PROXY` for http ones, the lower-case name first, read when the layer is built; not to the
 * hosts `no_proxy` or `NO_PROXY` lists (read on each request); directly when none is set. It tunnels with `CONNECT`
 * (to an https URL, the proxy sees its host and port, never the request), fails an attempt whose proxy closed the
 * connection before answering as `PROXY_TUNNEL_CLOSED` and gives up on a CONNECT unanswered after 10 s (undici alone
 * asks again for ever, or waits 300 s), and is closed with the layer. A proxy URL's credentials
 * (`http://user:pass@proxy:3128`, percent-encoded: `%` as `%25`) are sent to it as `Proxy-Authorization`. A variable
 * read that holds no http or https proxy URL (`proxy:3128`, `ftp://...`, `socks5://...`, one with a path, query or
 * fragment), or credentials with a bare `%`, fails the layer with a `ConfigError` naming it, never its value. For
 * either client:
 *
 * ```ts
 * UndiciHttpClient.layerWithoutDispatcher.pipe(Layer.provide(UndiciHttpClient.layerDispatcherFromEnvProxy))
 * NodeHttpClient.layerUndiciWithoutDispatcher.pipe(Layer.provide(UndiciHttpClient.layerDispatcherFromEnvProxy))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDispatcherFromEnvProxy: Layer.Layer<NodeHttpClient.Dispatcher, ConfigError.ConfigError> =
  Layer.scoped(
    Dispatcher,
    ownDispatcher((undici) =>
      Effect.map(
        Effect.suspend(() => EgressProxy.fromEnv(process.env)),
        (proxies) =>
          new undici.EnvHttpProxyAgent({ ...proxies, clientFactory: EgressProxy.pool(undici, PROXY_ANSWER_TIMEOUT) })
      )
    )
  )
