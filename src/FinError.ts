/**
 * The closed set of errors of effect-fin.
 *
 * Every error is a `Schema.TaggedError`, so users can `Effect.catchTag` on it and serialise it. None of them holds a
 * request object, a header set, a token, a secret, or a value taken from a failed decode: only what is safe to log.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Inspect from "./internal/inspect.js"

/**
 * Where a value failed its schema, and what was expected there; never the value itself.
 *
 * @since 0.1.0
 * @category models
 */
export class Issue extends Schema.Class<Issue>("effect-fin.Issue")({
  /** Dotted path from the root, e.g. `data.fee.total` or `source_amount`; empty for the root. */
  path: Schema.String,
  /** What the schema expected there, e.g. `number` or `a currency code (three upper-case letters)`. */
  expected: Schema.String
}) {}

// A whole number, as a status or a count is: one JSON cannot write (NaN, Infinity) would reach another process as
// `null`, and the error sent would not decode there.
const Whole = Schema.Int

// Fields that say which call failed and how far it got; shared by the errors of API calls.
const callFields = {
  /** HTTP method and path of the call, e.g. `POST /v1/fee-calculation`. */
  operation: Schema.optional(Schema.String),
  /** Attempts made before giving up (the 401 refresh-retry included). */
  attempts: Schema.optional(Whole),
  /** The service's request id, when the response carried one. */
  requestId: Schema.optional(Schema.String)
}

/**
 * The input was rejected before any request was sent.
 *
 * @since 0.1.0
 * @category errors
 */
export class RequestValidationError extends Schema.TaggedError<RequestValidationError>(
  "effect-fin.RequestValidationError"
)("RequestValidationError", {
  /** What was refused and what was expected there (the first 20 issues, and how many more), on one line. */
  message: Schema.String,
  /** Each place refused (the first 20), by path, with what was expected there. */
  issues: Schema.Array(Issue)
}) {}

/**
 * The service refused the credentials (a 401 from the token call, at once) or the token (a 401 again after the single
 * refresh-and-retry).
 *
 * @since 0.1.0
 * @category errors
 */
export class AuthenticationError extends Schema.TaggedError<AuthenticationError>("effect-fin.AuthenticationError")(
  "AuthenticationError",
  {
    /** The operation and the service's own message, if any: one line, credentials redacted, controls escaped. */
    message: Schema.String,
    /** The status of the refusing answer (401). */
    status: Schema.optional(Whole),
    /**
     * The wait its `Retry-After` (or `retry-after-ms`) asked for: on the token route, no token request is sent before
     * it has passed (`maxRetryAfter` at most), a service locking out credentials after failed attempts not asked again.
     */
    retryAfter: Schema.optional(Schema.Duration),
    ...callFields
  }
) {}

/**
 * A field-level message from an error body (`errors[]` of a 422, `data` of a 400, `error.details[]`).
 *
 * @since 0.1.0
 * @category models
 */
export class FieldError extends Schema.Class<FieldError>("effect-fin.FieldError")({
  /**
   * The field the service named, as it sent it (credentials redacted, cut after 1024 characters, control characters
   * and bidirectional overrides written as `\uXXXX`).
   */
  field: Schema.String,
  /** The service's message for that field, as `field` is kept, but with its line breaks and tabs. */
  message: Schema.String
}) {}

// What an error answer's body and headers said; shared by `ApiError` and `RateLimitError`.
const answerFields = {
  /**
   * The service's own code: `error.code` of bodies that carry one (`"conflict"`, `"forbidden"`), else a numeric
   * `status` field (on a 429 it tells a quota from a throttle), else an OAuth error's `error` (`"invalid_client"`); a
   * text one kept as `FieldError.field` is.
   */
  code: Schema.optional(Schema.Union(Schema.String, Schema.Finite)),
  /** The fields the service named (`errors[]` of a 422, `data` of a 400, `error.details[]`). */
  fieldErrors: Schema.optional(Schema.Array(FieldError)),
  /**
   * The start of the raw body (at most 1024 characters, credentials redacted), when the fields above do not hold all
   * of it: an unknown body, or one with more in it (a 409's existing `beneficiary_id`, an error `type`, a quota's reset
   * time).
   */
  body: Schema.optional(Schema.String),
  /** The wait the service asked for (`Retry-After` / `retry-after-ms`), e.g. on a 503 or a 429. */
  retryAfter: Schema.optional(Schema.Duration)
}

/**
 * The service answered with an error status that is not retried (or was retried until the policy ran out).
 *
 * @since 0.1.0
 * @category errors
 */
export class ApiError extends Schema.TaggedError<ApiError>("effect-fin.ApiError")("ApiError", {
  /** The HTTP status of the (last) answer. */
  status: Whole,
  /**
   * The status, the operation and what the service said (its message and field errors, shortened): one line,
   * credentials redacted, control characters escaped.
   */
  message: Schema.String,
  ...answerFields,
  ...callFields
}) {}

/**
 * The service asked us to slow down: it answered 429 (until the retries were spent, on a call that is retried), or,
 * on a call that is retried, it asked (429, or 500/502/503/504 with `Retry-After`) to wait longer than `maxRetryAfter`
 * or what is left of the deadline. A call that is not retried gets such a 5xx as an `ApiError` with `retryAfter`, as
 * does any other 5xx (a 501); an answer whose body was cut stays a `TransportError` (`BodyReadFailed`) with
 * `retryAfter`.
 *
 * @since 0.1.0
 * @category errors
 */
export class RateLimitError extends Schema.TaggedError<RateLimitError>("effect-fin.RateLimitError")(
  "RateLimitError",
  {
    /** The status, the operation (and the wait asked for) and the service's own message, on one line, redacted. */
    message: Schema.String,
    /** The status of the last answer: 429, or the 5xx that asked for too long a wait. */
    status: Schema.optional(Whole),
    ...answerFields,
    ...callFields
  }
) {}

/**
 * The request could not be sent or the response body could not be read (refused, reset, DNS, aborted body).
 * Retried (on a call that is), except a connection refused for its setup, which waiting cannot mend: a TLS handshake
 * refused on its certificate or for want of a common protocol, or an egress proxy's 4xx but 408 and 429 (its `code`:
 * `CERT_HAS_EXPIRED`, `ERR_SSL_WRONG_VERSION_NUMBER`, `PROXY_TUNNEL_407`...), nor a port fetch refuses to connect to
 * (`ERR_FETCH_BAD_PORT`), nor a platform client closed with its layer's scope (`UND_ERR_DESTROYED`, `UND_ERR_CLOSED`),
 * nor a body lost after a status that is not retried when read whole (a `BodyReadFailed` whose `status` is a 4xx but
 * 408 and 429, a 3xx or a 5xx but 500 and 502-504: its head already refused).
 *
 * @since 0.1.0
 * @category errors
 */
export class TransportError extends Schema.TaggedError<TransportError>("effect-fin.TransportError")(
  "TransportError",
  {
    /**
     * The operation and what failed, with the system's error code when there was one; `could not send the request`
     * only when the request cannot have reached the service (no connection made, its setup refused).
     */
    message: Schema.String,
    /** `RequestFailed`: no answer came (refused, reset, DNS); `BodyReadFailed`: an answer came, its body was lost. */
    reason: Schema.Literal("RequestFailed", "BodyReadFailed"),
    /**
     * The system's error code, when there was one: `ECONNREFUSED`, `ENOTFOUND`, `ECONNRESET`, `CERT_HAS_EXPIRED`...;
     * `PROXY_TUNNEL_<status>` when an egress proxy refused the tunnel, `ERR_FETCH_BAD_PORT` when fetch refused the
     * port (two names of effect-fin's own: those errors have no code).
     */
    code: Schema.optional(Schema.String),
    /** For `BodyReadFailed`: the status of the response whose body was lost. */
    status: Schema.optional(Whole),
    /** For `BodyReadFailed`: the wait its `Retry-After` (or `retry-after-ms`) asked for; retries honour it. */
    retryAfter: Schema.optional(Schema.Duration),
    ...callFields
  }
) {}

/**
 * An attempt outlived `timeout` (or the token call `tokenTimeout`), or the whole call outlived `deadline`.
 *
 * @since 0.1.0
 * @category errors
 */
export class TimeoutError extends Schema.TaggedError<TimeoutError>("effect-fin.TimeoutError")("TimeoutError", {
  /** The operation and the limit it outlived. */
  message: Schema.String,
  /** Which limit: `attempt` (`timeout`), `token` (`tokenTimeout`, an attempt of a token call) or `deadline`. */
  kind: Schema.Literal("attempt", "deadline", "token"),
  /** The limit that was outlived, as in effect for the call. */
  timeout: Schema.Duration,
  ...callFields
}) {}

/**
 * A response did not match its schema (malformed JSON, a missing field, a wrong type), or is not the answer to what
 * was asked (a quote in other currencies, a request's `check`). Names the paths and what was expected, never the
 * values received.
 *
 * @since 0.1.0
 * @category errors
 */
export class ResponseDecodeError extends Schema.TaggedError<ResponseDecodeError>("effect-fin.ResponseDecodeError")(
  "ResponseDecodeError",
  {
    /** The operation and what was expected where (the first 20 issues), never the value received. */
    message: Schema.String,
    /** The HTTP status of the answer that was refused. */
    status: Whole,
    /** Each place the answer did not match (the first 20), by path, with what was expected there. */
    issues: Schema.Array(Issue),
    ...callFields
  }
) {}

/**
 * Why a webhook delivery was refused.
 *
 * @since 0.1.0
 * @category models
 */
export const WebhookFailureReason = Schema.Literal(
  "missing_signature",
  "bad_signature",
  "unsupported_algorithm",
  "no_secret",
  "malformed_body",
  "too_old",
  "from_future",
  "wrong_environment",
  "body_too_large",
  "body_timeout"
)

/**
 * Why a webhook delivery was refused: the `reason` of a `WebhookVerificationError`.
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookFailureReason = typeof WebhookFailureReason.Type

/**
 * A webhook delivery failed verification or decoding.
 *
 * @since 0.1.0
 * @category errors
 */
export class WebhookVerificationError extends Schema.TaggedError<WebhookVerificationError>(
  "effect-fin.WebhookVerificationError"
)("WebhookVerificationError", {
  /** Why the delivery was refused; it sets the status the webhook handler answers (401, 400, 408, 413, or 500). */
  reason: WebhookFailureReason,
  /** What was wrong with the delivery, for a log line. */
  message: Schema.String,
  /** For a `malformed_body` that failed its schema: each place (the first 20), with what was expected there. */
  issues: Schema.optional(Schema.Array(Issue))
}) {}

/**
 * The error channel of every API call.
 *
 * @since 0.1.0
 * @category models
 */
export type FinError =
  | RequestValidationError
  | AuthenticationError
  | ApiError
  | RateLimitError
  | TransportError
  | TimeoutError
  | ResponseDecodeError

/**
 * Schema of `FinError`, for users who persist or send errors. Not as an `HttpApi` endpoint's error: the platform gives
 * a union of classes no status of its own (500); declare each class with its status instead. What they hold is for
 * your logs (the service's routes, request ids, up to 1 KiB of its answers), not for a browser.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FinError: Schema.Union<[
  typeof RequestValidationError,
  typeof AuthenticationError,
  typeof ApiError,
  typeof RateLimitError,
  typeof TransportError,
  typeof TimeoutError,
  typeof ResponseDecodeError
]> = Schema.Union(
  RequestValidationError,
  AuthenticationError,
  ApiError,
  RateLimitError,
  TransportError,
  TimeoutError,
  ResponseDecodeError
)

// A failed expectation on an error a call returned shows a diff, not a stack overflow (see `Inspect.showUnwrapped`).
Inspect.showUnwrapped(...FinError.members, WebhookVerificationError)

/**
 * Whether `u` is one of the seven `FinError`s: an instance of their classes, not any object with one of their tags (an
 * app's own `ApiError` or `TimeoutError` is not one).
 *
 * @since 0.1.0
 * @category guards
 */
export const isFinError: (u: unknown) => u is FinError = Schema.is(FinError)

const isOurs = Schema.is(Schema.Union(FinError, WebhookVerificationError))

/**
 * The error a call run from Promise code failed with. `runPromise` rejects with Effect's `FiberFailure`, which wraps
 * the error: it is no `FinError` itself and has none of its fields (`_tag`, `status`...). Given that rejection (or
 * an error as it is, also as a span hands it on), this is the `FinError` or `WebhookVerificationError` it holds (the
 * first of them, when several failed at once; also when an interruption or a defect came beside it), for a `catch` to
 * match on its `_tag`; `undefined` for anything else: an interruption alone (see `isInterruption`), a defect alone
 * (a call made after `ManagedRuntime.dispose()` is one: "ManagedRuntime disposed"), another error.
 * (`runPromise(Effect.either(call))` gives the error typed, without a rejection.)
 *
 * @example
 * ```ts
 * try {
 *   return await runtime.runPromise(FeeService.calculate(request))
 * } catch (e) {
 *   const error = FinError.fromRejection(e)
 *   if (error?._tag === "RequestValidationError") return badRequest(error.issues)
 *   throw e
 * }
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const fromRejection = (u: unknown): FinError | WebhookVerificationError | undefined => {
  // Under a span the failure is a proxy of the error (carrying the span): the error itself is handed out.
  if (isOurs(u)) return Cause.originalError(u)
  if (!Runtime.isFiberFailure(u)) return undefined
  const failure = Chunk.findFirst(Cause.failures(u[Runtime.FiberFailureCauseId]), isOurs)
  return Option.isSome(failure) ? Cause.originalError(failure.value) : undefined
}

/**
 * Whether a rejection of `runPromise` is an interruption only: the `signal` given to `runPromise` aborted, or the
 * client's scope closed (`ManagedRuntime.dispose()`) while the call ran. Such a call ended without an answer of the
 * service and with no `FinError`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isInterruption = (u: unknown): boolean =>
  Runtime.isFiberFailure(u) && Cause.isInterruptedOnly(u[Runtime.FiberFailureCauseId])
