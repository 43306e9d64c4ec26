/**
 * The one place that executes HTTP. One attempt = send the request and read the body once as text (up to a limit),
 * under one timeout, then decode it (synchronously); every outcome is mapped to a typed error that holds no request,
 * header, token or value.
 *
 * Only this module imports the platform's HTTP client modules, so a port to another HTTP layer touches one file.
 *
 * @internal
 */
import type * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Tracer from "effect/Tracer"
import { type FinError, Issue, type RequestValidationError, TimeoutError, TransportError } from "../FinError.js"
import { decodeError, redactor, requestIdOf, statusError, TRUSTED } from "./answerErrors.js"
import * as Bytes from "./bytes.js"
import type * as Closing from "./closing.js"
import type { Decoder } from "./codecs.js"
import * as Issues from "./issues.js"
import { parseRetryAfter } from "./retryAfter.js"
import * as SystemCodes from "./systemCodes.js"
import { timeoutFail } from "./timeLimits.js"
import { FETCH_BAD_PORT, notHttp, systemCode } from "./transportCause.js"

/** The platform client a user provides. */
export type Client = HttpClient.HttpClient

/** The tag of the platform client, so layers outside this module can require it without importing the platform. */
export const Client = HttpClient.HttpClient

/** What an error of an attempt is told of it. */
export type AttemptInfo = Pick<Attempt<unknown>, "operation" | "attempt" | "kind" | "credentials">

/** What one attempt sends and how it reads the answer. */
export interface Attempt<A> {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  /** Absolute URL. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The body as JSON text (serialised once per call, before the first attempt). */
  readonly body?: string | undefined
  readonly decode: Decoder<A>
  /** Issues of a decoded answer (and its headers) with what was asked; any makes it a `ResponseDecodeError`. */
  readonly check?:
    | ((
      value: A,
      headers: Readonly<Record<string, string>>
    ) => ReadonlyArray<{ readonly path: string; readonly expected: string }>)
    | undefined
  readonly timeout: Duration.Duration
  /**
   * An API call's attempt, or a token call's: the `kind` of its `TimeoutError`; a token call's body holds a credential
   * (printed as its length only, see `opaque`) and the start of its unexplained error body is never kept in
   * `ApiError.body`.
   */
  readonly kind: "attempt" | "token"
  /**
   * What is left of the call's deadline when the attempt starts: if no more than `timeout`, the attempt is cut then,
   * with `error()` (one timer for both limits: a second one would cost a fiber per call). The deadline's error wins a
   * tie, as it did when it had a timer of its own, started first.
   */
  readonly deadline?: { readonly left: Duration.Duration; readonly error: () => TimeoutError } | undefined
  /** `METHOD /path`, for errors. */
  readonly operation: string
  /** 1-based number of this attempt, recorded in errors. */
  readonly attempt: number
  /**
   * The credentials this attempt sends (bearer token, client secret, refresh token). The service's words about a
   * refused call are kept in the error, but never a credential it echoed back.
   */
  readonly credentials: ReadonlyArray<string>
  /** Told the status of the answer as soon as it has come, before it is decoded (which may throw). */
  readonly onStatus?: ((status: number) => void) | undefined
  /** The client's closing: the attempt ends then, as an interruption (see `timeoutFail`). */
  readonly closing?: Closing.Closing | undefined
  /** Told of the attempt's fiber when it is left to end on its own (it ignored interruption): it is still in flight. */
  readonly onLeft?: ((fiber: Fiber.RuntimeFiber<unknown>) => void) | undefined
}

/** A decoded answer. */
export interface Success<A> {
  readonly value: A
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
}

/** Every way one attempt can fail. */
export type AttemptError = Exclude<FinError, RequestValidationError>

// The TransportError of a platform client's failure, read on the `Clock` (a `Retry-After` date is read against it).
const transportFailure = (
  error: HttpClientError.HttpClientError,
  spec: AttemptInfo
): Effect.Effect<never, TransportError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(transportError(error, spec, now)))

// What a request that got no answer did, as far as the failure tells: "could not send" only when nothing reached the
// service (no connection, or the request never built), as the message is what an on-call reader goes by before
// resending a payment.
const requestFailure = (
  reason: HttpClientError.RequestError["reason"],
  code: string | undefined,
  detail: string | undefined,
  cause: unknown
): string => {
  const why = detail === undefined ? "" : ` (${detail})`
  if (notHttp(code, cause)) {
    // Without a code, the request error's reason ("Transport") would say nothing more.
    return `an answer that is not HTTP${code === undefined ? "" : why}: is the base URL the service's (its ` +
      "scheme, host and port)? The service may have got the request"
  }
  if (code !== undefined && SystemCodes.isClientClosed(code)) {
    return `the platform HTTP client is closed${why}: its layer's scope has ended (as a layer provided only around ` +
      "FinClient.make does once the client is made: provide it where the client is used); a request under way when " +
      "it closed may have reached the service"
  }
  if (code === FETCH_BAD_PORT) {
    return `could not send the request${why}: fetch refuses the base URL's port (on the Fetch standard's list of ` +
      "blocked ports): serve the service on another"
  }
  return (code === undefined ? reason !== "Transport" : SystemCodes.neverSent(code))
    ? `could not send the request${why}`
    : `no answer${why}; the service may have got the request`
}

const transportError = (
  error: HttpClientError.HttpClientError,
  spec: AttemptInfo,
  nowMillis: number
): TransportError => {
  const code = systemCode(error.cause)
  // Without a code, a request error still says what failed (Transport, Encode, InvalidUrl); a body error's word
  // ("Decode") would only suggest a ResponseDecodeError.
  const detail = code ?? (error._tag === "RequestError" ? error.reason : undefined)
  if (error._tag === "RequestError") {
    return new TransportError({
      message: `${spec.operation}: ${requestFailure(error.reason, code, detail, error.cause)}`,
      reason: "RequestFailed",
      ...(code === undefined ? {} : { code }),
      operation: spec.operation,
      attempts: spec.attempt
    }, TRUSTED)
  }
  // The answer's head had arrived: its status and request id say what the lost body was (a 503's page, say).
  const { status } = error.response
  const requestId = requestIdOf(error.response.headers, redactor(spec.credentials))
  // The head said how long to wait (a 503 in maintenance, a 429): the lost body changes nothing about that.
  const retryAfter = parseRetryAfter(error.response.headers, nowMillis)
  // A 2xx head says the service did the call: said where an on-call engineer reads first, before sending a write again.
  return new TransportError({
    message: `${spec.operation}: could not read the body of the ${status} response${
      detail === undefined ? "" : ` (${detail})`
    }${status >= 200 && status <= 299 ? "; the service did the call" : ""}`,
    reason: "BodyReadFailed",
    ...(code === undefined ? {} : { code }),
    status,
    ...(retryAfter ? { retryAfter } : {}),
    operation: spec.operation,
    attempts: spec.attempt,
    ...(requestId ? { requestId } : {})
  }, TRUSTED)
}

/**
 * The most of a response body read: 4 MiB. The service's answers are a few KiB; a misbehaving service or proxy must
 * not fill the memory (a larger answer is cut off there, and its request aborted).
 */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024

interface Body {
  readonly text: string
  /** Longer than the limit: `text` is its start. */
  readonly cut: boolean
}

// A body whose declared length is within the limit is read whole (the usual case, and the cheapest), unless it is
// compressed: the length is then the compressed one, and a client that decompresses (fetch) would read more. Any other
// is read chunk by chunk up to the limit; stopping there ends the platform's stream, which aborts the request.
const readBody = (
  response: HttpClientResponse.HttpClientResponse,
  headers: Readonly<Record<string, string>>,
  limit: number
): Effect.Effect<Body, HttpClientError.ResponseError> => {
  // No content: the platform's fetch response has no stream to read (an "EmptyBody" error), which is not a failure.
  if (response.status === 204 || response.status === 205 || response.status === 304) return Effect.succeed(noBody)
  const length = headers["content-length"]
  const encoding = headers["content-encoding"]
  if (
    length !== undefined && /^\d+$/.test(length) && Number(length) <= limit &&
    (encoding === undefined || encoding === "identity")
  ) {
    // node:http's text keeps a leading byte order mark, which every other path (TextDecoder, fetch) drops: the
    // same answer must read the same whatever the client, or a BOM is "no JSON document" on one of them only.
    return Effect.map(response.text, (text) => ({ text: withoutBom(text), cut: false }))
  }
  // Pulled by hand (Bytes.readUpTo): a stream run (a sink, its fold) costs more than the rest of a small answer's
  // read. A fetch response with no body at all (a 200 or 202 with nothing in it) has no stream: the platform fails it
  // as "EmptyBody", where there is only nothing to read.
  return Effect.scoped(Bytes.readUpTo(response.stream, limit)).pipe(
    Effect.map(({ bytes, cut }) => ({ text: utf8.decode(bytes), cut })),
    Effect.catchIf((error) => error.reason === "EmptyBody", () => Effect.succeed(noBody))
  )
}

const utf8 = new TextDecoder()

const withoutBom = (text: string): string => text.charCodeAt(0) === 0xfeff ? text.slice(1) : text

// Whether the client followed a redirect to get this answer: fetch does (the platform's fetch response, under the
// wrapper that aborts on interruption (`original`), keeps the web `Response` as `source`, whose `redirected` says so);
// undici's request does not, and answers with the 3xx itself, an ApiError like any other status outside 2xx.
const followedRedirect = (response: HttpClientResponse.HttpClientResponse): boolean => {
  let current: unknown = response
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const { original, source } = current as { readonly original?: unknown; readonly source?: unknown }
    if (typeof source === "object" && source !== null) {
      return (source as { readonly redirected?: unknown }).redirected === true
    }
    current = original
  }
  return false
}

const noBody: Body = { text: "", cut: false }

// What a request's check returned, as issues; undefined when it is no list of `{ path, expected }` texts (from untyped
// code: `true` for "fine", say).
const checkedIssues = (returned: unknown): ReadonlyArray<Issue> | undefined => {
  if (!Array.isArray(returned)) return undefined
  const issues: Array<Issue> = []
  for (const item of returned as ReadonlyArray<unknown>) {
    if (item instanceof Issue) {
      issues.push(item)
      continue
    }
    const { expected, path } = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>
    if (typeof path !== "string" || typeof expected !== "string") return undefined
    issues.push(new Issue({ path, expected }))
  }
  return issues
}

/**
 * Has `body` printed as its length only. The platform prints a JSON body as text wherever a request is printed (a
 * request hook of the user's client that logs it, a `RequestError`'s request), and a token call's holds the client
 * secret or the refresh token; as sent, it is unchanged (its type, bytes and content type).
 */
const opaque = (body: HttpBody.HttpBody): void => {
  if (body._tag !== "Uint8Array") return
  const { contentLength, contentType } = body
  Object.defineProperty(body, "toJSON", {
    value: () => ({
      _id: "@effect/platform/HttpBody",
      _tag: "Uint8Array",
      body: `Uint8Array(${contentLength})`,
      contentType,
      contentLength
    })
  })
}

/** Runs one attempt with `client`. */
export const execute = <A>(client: Client, spec: Attempt<A>): Effect.Effect<Success<A>, AttemptError> => {
  // Only the uncompressed body is read: node:http and undici do not decode a compressed one (fetch does), and with no
  // Accept-Encoding at all any coding is acceptable (RFC 9110 12.5.3), so a proxy may gzip the answer.
  let request = HttpClientRequest.make(spec.method)(spec.url).pipe(
    HttpClientRequest.setHeaders({ "accept-encoding": "identity", ...spec.headers })
  )
  if (spec.body !== undefined) {
    request = HttpClientRequest.bodyText(request, spec.body, "application/json")
    if (spec.kind === "token") opaque(request.body)
  }
  return client.execute(request).pipe(
    // A client of the user's that fails on a status (`HttpClient.filterStatusOk`, a common app-wide wrapper) still
    // holds the answer, its body unread: it is that answer (an ApiError, a 429, a 401 to refresh on), not a transport
    // failure.
    Effect.catchIf(
      (error): error is HttpClientError.ResponseError => error._tag === "ResponseError" && error.reason === "StatusCode",
      (error) => Effect.succeed(error.response)
    ),
    // The same failure made a defect (`Effect.orDie` after `filterStatusOk` in a user's wrapper): still that answer,
    // its body unread, not a body lost (a 401 read as a TransportError would never refresh the token).
    Effect.catchSomeDefect((defect) =>
      HttpClientError.isHttpClientError(defect) && defect._tag === "ResponseError" && defect.reason === "StatusCode"
        ? Option.some(Effect.succeed(defect.response))
        : Option.none()
    ),
    Effect.flatMap((response) => {
      // Read once: some platform clients convert the headers again on every access.
      const headers = response.headers
      return Effect.map(readBody(response, headers, MAX_RESPONSE_BYTES), ({ cut, text }) => ({
        status: response.status,
        headers,
        text,
        cut,
        redirected: followedRedirect(response)
      }))
    }),
    // A 401 whose body was lost is still the service refusing the token (its head says so, and its body is not
    // needed): an AuthenticationError, so that the token is refreshed and the call resent once, as for one read whole.
    // Not one from an address the client was redirected to (fetch): that is no refusal of the service's (read whole,
    // it is a ResponseDecodeError, never resent), and the service may have done the call before redirecting.
    Effect.catchAll((error) =>
      error._tag === "ResponseError" && error.response.status === 401 && !followedRedirect(error.response)
        ? Effect.flatMap(
          Clock.currentTimeMillis,
          (now) => Effect.fail(statusError(spec, 401, error.response.headers, "", now))
        )
        : transportFailure(error, spec)
    ),
    // A client that turns its failures into defects (`Effect.orDie` in a user's wrapper) would end the call in a
    // defect holding the request, secret body and all: it is the transport failure it was.
    Effect.catchAllDefect((defect) =>
      HttpClientError.isHttpClientError(defect) ? transportFailure(defect, spec) : Effect.die(defect)
    ),
    (response) =>
      spec.deadline !== undefined && Duration.lessThanOrEqualTo(spec.deadline.left, spec.timeout)
        ? timeoutFail(response, spec.deadline.left, spec.deadline.error, spec.closing, spec.onLeft)
        : timeoutFail(response, spec.timeout, () =>
          new TimeoutError({
            message: `${spec.operation}: no complete response within ${Duration.format(spec.timeout)}`,
            kind: spec.kind,
            timeout: spec.timeout,
            operation: spec.operation,
            attempts: spec.attempt
          }), spec.closing, spec.onLeft),
    Effect.flatMap(({ cut, headers, redirected, status, text }): Effect.Effect<Success<A>, AttemptError> => {
      spec.onStatus?.(status)
      // Whatever it says, it is another address's answer (not retried: the service would redirect again).
      if (redirected) {
        const expected = "the service's own answer, not one from an address it redirected to"
        return Effect.fail(decodeError(spec, status, headers, [new Issue({ path: "", expected })]))
      }
      // An error status keeps its meaning (and whether it is retried) however long its page; an answer cannot be cut.
      if (status < 200 || status > 299) {
        return Effect.flatMap(
          Clock.currentTimeMillis,
          (now) => Effect.fail(statusError(spec, status, headers, text, now))
        )
      }
      if (cut) {
        const expected = `a body of at most ${MAX_RESPONSE_BYTES} bytes`
        return Effect.fail(decodeError(spec, status, headers, [new Issue({ path: "", expected })]))
      }
      // An empty answer is no JSON document, but nothing: a schema that takes no body (`Schema.Void`) accepts it.
      let json: unknown
      try {
        json = text.trim() === "" ? undefined : parseAnswer(text)
      } catch {
        // The parser's own message quotes the body (possibly a token), so it is not kept.
        return Effect.fail(decodeError(spec, status, headers, [new Issue({ path: "", expected: "a JSON document" })]))
      }
      const decoded = spec.decode(json)
      if (Either.isLeft(decoded)) {
        return asynchronous(decoded.left.issue)
          ? Effect.dieMessage(
            `effect-fin: the response schema of ${spec.operation} does not decode synchronously (an async ` +
              "transformation or filter): HttpTransport decodes answers as they come, and the service's was read"
          )
          : Effect.fail(decodeError(spec, status, headers, Issues.fromParseIssue(decoded.left.issue)))
      }
      const mismatches = spec.check === undefined ? [] : checkedIssues(spec.check(decoded.right, headers))
      return mismatches === undefined
        ? Effect.dieMessage("effect-fin: a request's check must return a list of issues, each { path, expected } as text")
        : mismatches.length === 0
        ? Effect.succeed({ value: decoded.right, status, headers })
        : Effect.fail(decodeError(spec, status, headers, mismatches))
    })
  )
}

// Whether a decode stopped at an async step of the schema: the program's schema at fault, not the service's answer.
const asynchronous = (issue: ParseResult.ParseIssue): boolean => {
  switch (issue._tag) {
    case "Forbidden":
      return true
    case "Pointer":
    case "Refinement":
    case "Transformation":
      return asynchronous(issue.issue)
    case "Composite":
      return Array.isArray(issue.issues)
        ? issue.issues.some(asynchronous)
        : asynchronous(issue.issues as ParseResult.ParseIssue)
    default:
      return false
  }
}

// An answer's JSON without its `__proto__` keys: JSON.parse makes them own keys, but a schema that builds an object
// by assignment (`Schema.Record`) would make one the decoded object's prototype, its fields then read through it and
// not listed (`data.EUR` a number where the type says a record, absent from `Object.keys` and JSON). A key no answer
// means; looked for only where one can be (written as is, or with an escape in it).
const PROTO_KEY = /__proto__|\\u/
const withoutProto = (key: string, value: unknown): unknown => key === "__proto__" ? undefined : value
const parseAnswer = (text: string): unknown =>
  PROTO_KEY.test(text) ? JSON.parse(text, withoutProto) : JSON.parse(text)

// W3C trace and span ids (lower-case hex, not all zeros); b3's 64-bit trace id too, padded for traceparent.
const TRACE_ID = /^(?!0+$)(?:[0-9a-f]{16}|[0-9a-f]{32})$/
const SPAN_ID = /^(?!0+$)[0-9a-f]{16}$/

// The trace headers of a span, or none when its ids are no trace ids: the platform takes an inbound request's `b3` and
// `x-b3-*` as they are (`HttpTraceContext.fromHeaders`), so a parent span's ids may be any text a caller sent, which
// would go on to the service (a second traceparent after a comma, kilobytes), or make node:http throw (a defect).
const traceHeadersOf = (span: Tracer.Span): Record<string, string> | undefined => {
  const traceId = span.traceId.toLowerCase()
  const spanId = span.spanId.toLowerCase()
  if (!TRACE_ID.test(traceId) || !SPAN_ID.test(spanId)) return undefined
  const parent = span.parent._tag === "Some" ? span.parent.value.spanId.toLowerCase() : undefined
  const sampled = span.sampled ? "1" : "0"
  return {
    b3: `${traceId}-${spanId}-${sampled}${parent !== undefined && SPAN_ID.test(parent) ? `-${parent}` : ""}`,
    traceparent: `00-${traceId.padStart(32, "0")}-${spanId}-0${sampled}`
  }
}

// The trace headers of effect-fin's own span of the call (or of the token call). One made while the tracer was off is
// marked not to propagate: no headers then, as the platform sent none (its own would read "00-noop-noop-00"), and not
// a span of the user's around the call either, which this call does not run in.
const withTraceHeaders = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.match(Effect.currentSpan, {
    onFailure: () => request,
    onSuccess: (span) => {
      const headers = Context.get(span.context, Tracer.DisablePropagation) ? undefined : traceHeadersOf(span)
      return headers === undefined ? request : HttpClientRequest.setHeaders(request, headers)
    }
  })

/**
 * The user's client as effect-fin calls it: without the platform's own `http.client` span, whose end holds the
 * request and the response (so the bearer token, and the client secret of the token call, for any tracer that exports
 * it) and which records every response header (one echoing a credential included); effect-fin's own span of the call
 * stands in for it. The tracer is off for the client's run, the platform's first check, so that no setting of the
 * client's own (`HttpClient.withTracerDisabledWhen`, `withTracerPropagation`) turns the span, or its trace headers,
 * back on. With `tracePropagation`, the trace headers are effect-fin's span's, added before.
 */
export const configure = (client: Client, tracePropagation: boolean): Client => {
  const untraced = HttpClient.transformResponse(client, Effect.withTracerEnabled(false))
  return tracePropagation ? HttpClient.mapRequestEffect(untraced, withTraceHeaders) : untraced
}
