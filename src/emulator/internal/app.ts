/**
 * The emulator's HTTP app: the documented API routes (behind the fault rules and the counters) and the admin routes
 * under `/__emulator/`.
 *
 * @internal
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { IncomingMessage, STATUS_CODES } from "node:http"
import * as Os from "node:os"
import * as Amounts from "../../internal/amount.js"
import * as Bytes from "../../internal/bytes.js"
import * as Issues from "../../internal/issues.js"
import * as Loopback from "../../internal/loopback.js"
import * as Quote from "../../internal/quote.js"
import * as Subdivisions from "../../Subdivisions.js"
import type { EmulatorError } from "./error.js"
import type { Counters, FaultRule, RouteName, WebhookRequest } from "./model.js"
import { ExpireTokensBody, NoInputBody, SetFaultsBody, WebhookAdminBody } from "./model.js"
import type { InjectedFault, State } from "./state.js"
import type { Delivery } from "./webhook.js"
import { shown } from "./webhook.js"

/** What the admin routes need besides the state. */
export interface Admin {
  readonly info: Effect.Effect<unknown>
  readonly sendWebhook: (request: WebhookRequest) => Effect.Effect<Delivery, EmulatorError>
}

type Response = HttpServerResponse.HttpServerResponse

/** Whether a client address is this machine's loopback (IPv4, IPv6, or IPv4 mapped into IPv6). */
export const isLoopback = (address: string): boolean =>
  /^(::ffff:)?127(\.\d{1,3}){3}$/i.test(address) || address === "::1"

const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  HttpServerResponse.unsafeJson(body, { status, headers })

// A host name that names this machine (as a local client may type it): localhost and its subdomains, 127.x.x.x,
// 0.0.0.0, [::1], [::], IPv4 loopback mapped into IPv6, or the machine's own name. A page whose DNS name an attacker
// rebound to 127.0.0.1 carries that name instead.
const isLocalHostname = (hostname: string): boolean => {
  const name = hostname.toLowerCase().replace(/\.$/, "")
  return Loopback.isLoopback(name) || name.endsWith(".localhost") || name === "0.0.0.0" || name === "[::]" ||
    name === Os.hostname().toLowerCase()
}

// Whether `url` (an Origin, or http:// and a Host header) names this machine; the URL parser normalises IPv6 forms.
const isLocalUrl = (url: string): boolean => {
  try {
    return isLocalHostname(new URL(url).hostname)
  } catch {
    return false
  }
}

/**
 * `route`, for loopback clients only. The admin routes change what the emulator does (faults, revocations, webhooks
 * sent to any URL), so they answer 403 to any other client, even when the emulator listens on another address. A
 * request with no socket (an app run in-process) has no remote address and is let through; one the Node server read
 * whose socket has no address is not: Node reads the address when first asked, and a socket already closed (a client
 * that reset the connection right after sending its request) has none to give. A browser on this machine
 * is a loopback client too: a page of another site (its `Origin`), or one reaching the emulator through a DNS name
 * rebound to 127.0.0.1 (its `Host`), is refused as well.
 */
export const loopbackOnly = <E, R>(
  route: Effect.Effect<Response, E, R>
): Effect.Effect<Response, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const { host, origin } = request.headers
    const remote = request.remoteAddress
    const inProcess = remote._tag === "None" && !(request.source instanceof IncomingMessage)
    return (inProcess || (remote._tag === "Some" && isLoopback(remote.value))) &&
        (origin === undefined || isLocalUrl(origin)) && (host === undefined || isLocalUrl(`http://${host}`))
      ? route
      : Effect.succeed(json({ message: "The emulator's admin routes answer loopback clients only" }, 403))
  })

// The documented error bodies (service-facts 5); `malformedRequest` is the customer routes' (the token and fee routes
// document no answer to a body that is not JSON).
const unauthorized = json({ message: "Authentication failed" }, 401)
const notFound = json({ message: "Resource not found" }, 404)
const invalid = (errors: ReadonlyArray<Record<string, string>>, message = "Validation failed") =>
  json({ message, errors }, 422)
const malformedRequest = json({ status: 400, message: "Malformed request body" }, 400)

/** The body a status fault sends when the rule gives none: the documented shape where there is one. */
const defaultErrorBody = (status: number): unknown => {
  switch (status) {
    case 400:
      return { status: 400, message: "Malformed request body" }
    case 401:
      return { message: "Authentication failed" }
    case 404:
      return { message: "Resource not found" }
    case 422:
      return { message: "Validation failed", errors: [{ request: "rejected by an injected fault" }] }
    case 423:
      return { status: 423, message: "Locked" }
    case 500:
      return { status: 500, message: "Internal server error" }
    default:
      return { message: STATUS_CODES[status] ?? `Error ${status}` }
  }
}

const encoder = new TextEncoder()

/** The response of a terminal fault; `stall` and `reset` never produce one. */
const injectFault = (rule: Exclude<FaultRule, { readonly kind: "latency" }>): Effect.Effect<
  Response,
  never,
  HttpServerRequest.HttpServerRequest
> => {
  switch (rule.kind) {
    case "status": {
      const headers: Record<string, string> = {}
      if (rule.retryAfter !== undefined) headers["retry-after"] = String(rule.retryAfter)
      if (rule.retryAfterMs !== undefined) headers["retry-after-ms"] = String(rule.retryAfterMs)
      const body = rule.body === undefined ? defaultErrorBody(rule.status) : rule.body
      return Effect.succeed(json(body, rule.status, headers))
    }
    case "malformed":
      return Effect.succeed(
        HttpServerResponse.text("{\"data\": {\"source_currency\": \"USD\", <html>", {
          status: 200,
          contentType: "application/json"
        })
      )
    case "stall":
      // No status line, no headers, until the client gives up (its abort interrupts this fiber) or shutdown.
      return Effect.never
    case "stallBody":
      // Headers and a first chunk go out (the platform flushes them with it); the rest never comes.
      return Effect.succeed(
        HttpServerResponse.stream(Stream.concat(Stream.make(encoder.encode("{\"data\":")), Stream.never), {
          status: 200,
          contentType: "application/json"
        })
      )
    case "reset":
      return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
        // A TCP RST where the platform supports it (ECONNRESET on the client), else a plain close.
        if (typeof socket.resetAndDestroy === "function") socket.resetAndDestroy()
        else socket.destroy()
        return Effect.never
      })
    case "truncated":
      return Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
        const partial = encoder.encode("{\"data\": {\"source_currency\": \"USD\", \"destination_")
        // Content-Length promises more than is sent; after the partial body the connection ends.
        const close = Stream.execute(Effect.async<void>((resume) => {
          socket.end(() => {
            socket.destroy()
            resume(Effect.void)
          })
        }))
        return HttpServerResponse.stream(Stream.concat(Stream.make(partial), close), {
          status: 200,
          contentType: "application/json",
          contentLength: partial.length + 512
        })
      })
  }
}

type Parsed = { readonly _tag: "Json"; readonly value: unknown } | { readonly _tag: "Empty" } | {
  readonly _tag: "Invalid"
}

// What reading a request's body needs: the request, and its scope (see Bytes.readAtMost).
type RequestContext = HttpServerRequest.HttpServerRequest | Scope.Scope

// Larger bodies are refused, not buffered: read whole, a big enough one would end the process. The connection is
// closed with the refusal, rather than Node's server reading (and dropping) the rest to keep it alive.
const MAX_BODY_BYTES = 1024 * 1024
const tooLarge = json({ message: "Request body too large" }, 413, { connection: "close" })
const utf8 = new TextDecoder()

// The raw body: JSON, empty, or not JSON. A body that is too large, or cannot be read at all, fails with the response
// to send.
const readBody: Effect.Effect<Parsed, Response, RequestContext> = Effect.flatMap(
  HttpServerRequest.HttpServerRequest,
  (request) => {
    const declared = request.headers["content-length"]
    if (declared !== undefined && Number(declared) > MAX_BODY_BYTES) return Effect.fail(tooLarge)
    const text = Effect.flatMap(
      Effect.mapError(Bytes.readAtMost(request.stream, MAX_BODY_BYTES), () => malformedRequest),
      Option.match({ onNone: () => Effect.fail(tooLarge), onSome: (bytes) => Effect.succeed(utf8.decode(bytes)) })
    )
    return Effect.map(text, (text): Parsed => {
      if (text.trim() === "") return { _tag: "Empty" }
      try {
        return { _tag: "Json", value: JSON.parse(text) }
      } catch {
        return { _tag: "Invalid" }
      }
    })
  }
)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

// The body of an API POST as an object, or the 400, 413 or 422 to answer.
const readObject: Effect.Effect<Record<string, unknown>, Response, RequestContext> = Effect.flatMap(
  readBody,
  (parsed) =>
    parsed._tag === "Json" && isRecord(parsed.value)
      ? Effect.succeed(parsed.value)
      : parsed._tag === "Invalid"
      ? Effect.fail(malformedRequest)
      : Effect.fail(invalid([{ body: "must be a JSON object" }], "The request body is not a JSON object"))
)

const CURRENCY = /^[A-Z]{3}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

interface FeeRequest {
  readonly source_currency: string | undefined
  readonly destination_currency: string | undefined
  readonly source_amount: number | undefined
  readonly destination_amount: number | undefined
  readonly beneficiary_id: string | undefined
}

/** The rules of the endpoint (as `FeeService.validate` states them), as `{field: message}` items. */
const validateFee = (
  body: Record<string, unknown>
): Either.Either<FeeRequest, Array<Record<string, string>>> => {
  const errors: Array<Record<string, string>> = []
  const amount = (field: string): number | undefined => {
    const value = body[field]
    if (value === undefined) return undefined
    // Past MAX_SAFE_INTEGER (as FeeService.validate refuses it) the cent rounding can reach Infinity, sent as null.
    if (typeof value !== "number" || !(value > 0 && value <= Number.MAX_SAFE_INTEGER)) {
      errors.push({ [field]: `The ${field} must be a number greater than 0 and at most ${Number.MAX_SAFE_INTEGER}.` })
    } else if (Amounts.decimalPlaces(value) > Amounts.MAX_DECIMALS) {
      errors.push({ [field]: `The ${field} must have at most ${Amounts.MAX_DECIMALS} decimal places.` })
    } else if (!Amounts.heldAtPlaces(value)) {
      errors.push({ [field]: `The ${field} must have no more decimal places than its size leaves a number.` })
    }
    return typeof value === "number" ? value : undefined
  }
  const text = (field: string, pattern: RegExp, what: string): string | undefined => {
    const value = body[field]
    if (value === undefined) return undefined
    if (typeof value !== "string" || !pattern.test(value)) {
      errors.push({ [field]: `The ${field} must be ${what}.` })
      return undefined
    }
    return value
  }
  const source_amount = amount("source_amount")
  const destination_amount = amount("destination_amount")
  const source_currency = text("source_currency", CURRENCY, "a currency code of three upper-case letters")
  const destination_currency = text("destination_currency", CURRENCY, "a currency code of three upper-case letters")
  const beneficiary_id = text("beneficiary_id", UUID, "a valid UUID")
  const hasSource = body["source_amount"] !== undefined
  const hasDestination = body["destination_amount"] !== undefined
  if (hasSource && hasDestination) {
    errors.push({ destination_amount: "Send either source_amount or destination_amount, not both." })
  } else if (!hasSource && !hasDestination) {
    errors.push({ source_amount: "The source_amount or destination_amount field is required." })
  }
  if (body["destination_currency"] === undefined && body["beneficiary_id"] === undefined) {
    errors.push({ destination_currency: "The destination_currency or beneficiary_id field is required." })
  }
  if (body["source_currency"] === undefined && body["beneficiary_id"] === undefined) {
    errors.push({ source_currency: "The source_currency field is required unless beneficiary_id is given." })
  }
  return errors.length > 0
    ? Either.left(errors)
    : Either.right({ source_currency, destination_currency, source_amount, destination_amount, beneficiary_id })
}

// `2026-01-19T09:59:29Z`: the documented `valid_till`, ISO 8601 in whole seconds.
const isoSeconds = (millis: number) => new Date(millis).toISOString().slice(0, 19) + "Z"

const formatIssues = (error: ParseResult.ParseError) =>
  Issues.allIssues(
    error,
    (path) => path.map((key) => typeof key === "number" ? `[${key}]` : `.${String(key)}`).join("").replace(/^\./, "")
  )

/** Decodes an admin body, or answers 400 naming every problem. */
const adminBody = <A, I>(schema: Schema.Schema<A, I>, operation: string, emptyAs?: unknown) =>
  Effect.flatMap(Effect.either(readBody), (parsed): Effect.Effect<A, Response> => {
    if (Either.isLeft(parsed)) return Effect.fail(parsed.left)
    const body = parsed.right
    if (body._tag === "Invalid") {
      return Effect.fail(json({ message: `Invalid body for ${operation}: not valid JSON` }, 400))
    }
    const value = body._tag === "Empty" ? emptyAs : body.value
    return Either.match(Schema.decodeUnknownEither(schema)(value, { errors: "all", onExcessProperty: "error" }), {
      onLeft: (error) => {
        // The first `MAX_ISSUES`, and how many more: a 1 MiB body of 80,000 bad rules would otherwise be answered with
        // 24 MB, twice over (message and errors).
        const { first: errors, more } = Issues.firstOf(formatIssues(error))
        const detail = errors.map((e) => (e.path === "" ? e.message : `${e.path}: ${e.message}`)).join("; ") + more
        return Effect.fail(json({ message: `Invalid body for ${operation}: ${detail}`, errors }, 400))
      },
      onRight: Effect.succeed
    })
  })

const respond = <R>(effect: Effect.Effect<Response, Response, R>): Effect.Effect<Response, never, R> =>
  Effect.merge(effect)

// The routes `rateLimit` leaves alone: a client must be able to get the token its calls are limited by.
const tokenRoutes: ReadonlySet<RouteName> = new Set(["POST /v1/oauth/token", "POST /v1/oauth/refresh-token"])

// The counters' generation when the request being answered was counted (`State.countRequest`), for its tokens.
const requestGeneration = FiberRef.unsafeMake(0)

/** The whole app. */
export const make = (state: State, admin: Admin): HttpApp.Default<never, never> => {
  const { settings } = state

  // Counts the request, applies the rate limit (to the API's calls) and the fault rules, counts the status sent.
  const guarded = <R>(route: RouteName, handler: Effect.Effect<Response, never, R>) =>
    Effect.gen(function*() {
      const generation = yield* state.countRequest(route)
      const wait = tokenRoutes.has(route) ? undefined : yield* state.rateLimit
      if (wait !== undefined) {
        yield* state.countStatus(429, generation)
        return json(defaultErrorBody(429), 429, { "retry-after": String(Math.max(1, Math.ceil(wait / 1000))) })
      }
      const decision = yield* state.decideFaults(route)
      if (decision.latency > 0) yield* Effect.sleep(Duration.millis(decision.latency))
      const response = decision.terminal === undefined || decision.terminal.kind === "latency"
        ? yield* Effect.locally(handler, requestGeneration, generation)
        : yield* injectFault(decision.terminal)
      yield* state.countStatus(response.status, generation)
      return response
    })

  const authenticated = <R>(handler: Effect.Effect<Response, never, R>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")
      if (match === null || !(yield* state.checkAccess(match[1]!))) return unauthorized
      return yield* handler
    })

  const tokenResponse = (kind: "issue" | "refresh") =>
    FiberRef.get(requestGeneration).pipe(
      Effect.flatMap((generation) => state.issueTokens(kind, generation)),
      Effect.map((fields) => json(settings.tokenEnvelope === "data" ? { data: fields } : fields))
    )

  const issueToken = respond(Effect.gen(function*() {
    const body = yield* readObject
    const errors: Array<Record<string, string>> = []
    for (const field of ["client_id", "client_secret"]) {
      const value = body[field]
      if (typeof value !== "string" || value === "") errors.push({ [field]: `The ${field} field is required.` })
    }
    if (errors.length > 0) return invalid(errors)
    if (body["client_id"] !== settings.clientId || body["client_secret"] !== settings.clientSecret) {
      return unauthorized
    }
    return yield* tokenResponse("issue")
  }))

  const refreshToken = respond(Effect.gen(function*() {
    const body = yield* readObject
    const token = body["refresh_token"]
    if (typeof token !== "string" || token === "") {
      return invalid([{ refresh_token: "The refresh_token field is required." }])
    }
    if (!(yield* state.checkRefresh(token))) return unauthorized
    return yield* tokenResponse("refresh")
  }))

  const feeCalculation = respond(Effect.gen(function*() {
    const body = yield* readObject
    const validated = validateFee(body)
    if (Either.isLeft(validated)) return invalid(validated.left)
    const quoted = Quote.quote(settings, validated.right)
    if (Either.isLeft(quoted)) {
      const problem = quoted.left
      return problem._tag === "UnknownBeneficiary" ? notFound : invalid([{ [problem.field]: problem.detail }], problem.message)
    }
    const figures = quoted.right
    const now = yield* Clock.currentTimeMillis
    // Field order of the documented example.
    return json({
      data: {
        source_currency: figures.source_currency,
        destination_currency: figures.destination_currency,
        source_amount: figures.source_amount,
        exchange_rate: figures.exchange_rate,
        destination_amount: figures.destination_amount,
        // Absent, as in the older documented example, with `validTill: false`.
        ...(settings.validTill ? { valid_till: isoSeconds(now + settings.quoteLifetime) } : {}),
        fee: figures.fee
      }
    })
  }))

  const listed = (entries: ReadonlyArray<{ readonly code: string; readonly name: string }>) =>
    json({ data: { subdivisions: entries.map(({ code, name }) => ({ name, code })) } })
  const subdivisions = Effect.map(HttpRouter.params, (params) => {
    const country = params["country_code"] ?? ""
    const set = Object.hasOwn(settings.subdivisions, country) ? settings.subdivisions[country] : undefined
    return set !== undefined
      ? listed(set)
      : Either.match(Subdivisions.forCountry(country), { onLeft: () => notFound, onRight: listed })
  })

  const counters: Effect.Effect<Counters> = state.counters

  // The rules as they were set, and beside them how often each fired (so a GET's `faults` can be set again as is).
  const faultsJson = (faults: ReadonlyArray<InjectedFault>) =>
    json({ faults: faults.map(({ rule }) => rule), injected: faults.map(({ injected }) => injected) })

  const faultsResponse = Effect.map(state.faults, faultsJson)

  const setFaults = respond(Effect.gen(function*() {
    const body = yield* adminBody(SetFaultsBody, "POST /__emulator/faults")
    return faultsJson(yield* state.setFaults(body.faults, body.append ?? false))
  }))

  const expireTokens = respond(Effect.gen(function*() {
    const body = yield* adminBody(ExpireTokensBody, "POST /__emulator/expire-tokens", {})
    return json({ expired: yield* state.expireTokens(body.refresh ?? false) })
  }))

  // Routes that take no input: an empty body or `{}`; anything else (not JSON, other fields) is a 400 before they act.
  const noInput = <R>(operation: string, route: Effect.Effect<Response, never, R>) =>
    respond(Effect.zipRight(adminBody(NoInputBody, operation, {}), route))

  const webhooks = respond(Effect.gen(function*() {
    const { send, ...request } = yield* adminBody(WebhookAdminBody, "POST /__emulator/webhooks")
    if (send === false) {
      if (request.url === undefined) {
        return json({ message: "Invalid body for POST /__emulator/webhooks: url is required when send is false" }, 400)
      }
      // Only the target is kept: what the event would say or how it would be signed is not, so a field given with
      // it is a mistake (the caller meant to send), not something to drop without a word.
      const ignored = Object.keys(request).filter((key) => key !== "url")
      if (ignored.length > 0) {
        const unused = "not used when send is false (it only registers url)"
        return json({
          message: `Invalid body for POST /__emulator/webhooks: ${ignored.join(", ")}: ${unused}`,
          errors: ignored.map((path) => ({ path, message: unused }))
        }, 400)
      }
      yield* state.setWebhookUrl(request.url)
      return json({ url: shown(request.url) })
    }
    return yield* admin.sendWebhook(request).pipe(
      Effect.map((delivery) =>
        json({ url: shown(delivery.url), status: delivery.status, event: delivery.event, answer: delivery.answer })
      ),
      Effect.catchAll((error) =>
        Effect.succeed(json({ message: error.message }, error.reason === "WebhookDeliveryFailed" ? 502 : 400))
      )
    )
  }))

  const router = HttpRouter.empty.pipe(
    HttpRouter.post("/v1/oauth/token", guarded("POST /v1/oauth/token", issueToken)),
    HttpRouter.post("/v1/oauth/refresh-token", guarded("POST /v1/oauth/refresh-token", refreshToken)),
    HttpRouter.post("/v1/fee-calculation", guarded("POST /v1/fee-calculation", authenticated(feeCalculation))),
    HttpRouter.get(
      "/v1/countries/:country_code/subdivisions",
      guarded("GET /v1/countries/{country_code}/subdivisions", authenticated(subdivisions))
    ),
    HttpRouter.get("/__emulator", loopbackOnly(Effect.map(admin.info, (info) => json(info)))),
    HttpRouter.get("/__emulator/faults", loopbackOnly(faultsResponse)),
    HttpRouter.post("/__emulator/faults", loopbackOnly(setFaults)),
    HttpRouter.del(
      "/__emulator/faults",
      loopbackOnly(noInput("DELETE /__emulator/faults", Effect.map(state.setFaults([], false), faultsJson)))
    ),
    HttpRouter.get("/__emulator/counters", loopbackOnly(Effect.map(counters, (c) => json(c)))),
    HttpRouter.post(
      "/__emulator/reset",
      loopbackOnly(noInput("POST /__emulator/reset", Effect.as(state.reset, json({ reset: true }))))
    ),
    HttpRouter.post(
      "/__emulator/revoke-tokens",
      loopbackOnly(
        noInput("POST /__emulator/revoke-tokens", Effect.map(state.revokeTokens, (revoked) => json({ revoked })))
      )
    ),
    HttpRouter.post("/__emulator/expire-tokens", loopbackOnly(expireTokens)),
    HttpRouter.post("/__emulator/webhooks", loopbackOnly(webhooks))
  )

  // An admin path asked with a method it does not take: 405 naming the ones it does, for a script that used another.
  const adminMethods = (url: string): ReadonlyArray<string> => {
    const path = url.split("?")[0]
    return Chunk.toReadonlyArray(router.routes).filter((route) => route.path === path).map((route) => route.method)
  }

  // Any other path or method: the documented 404, counted apart.
  return Effect.catchTags(router, {
    RouteNotFound: (error) => {
      const { method, url } = error.request
      if (!url.startsWith("/__emulator")) {
        return Effect.as(
          Effect.flatMap(state.countRequest("unmatched"), (generation) => state.countStatus(404, generation)),
          notFound
        )
      }
      const allowed = adminMethods(url)
      return Effect.succeed(
        allowed.length === 0
          ? json({ message: `No admin route ${method} ${url}` }, 404)
          : json({ message: `${method} is not taken by ${url}: use ${allowed.join(" or ")}` }, 405, {
            allow: allowed.join(", ")
          })
      )
    }
  })
}
