/**
 * The errors made of an answer: of a status outside 2xx (`ApiError`, `AuthenticationError`, `RateLimitError`) with
 * their messages, and of an answer that does not decode (`ResponseDecodeError`); and what any error keeps of an
 * answer (its request id), never a credential the service echoed back.
 *
 * @internal
 */
import {
  ApiError,
  AuthenticationError,
  FieldError,
  Issue,
  RateLimitError,
  ResponseDecodeError
} from "../FinError.js"
import { NOT_JSON, parseJson, readErrorBody } from "./errorBody.js"
import type { AttemptError, AttemptInfo } from "./http.js"
import * as Issues from "./issues.js"
import * as Printable from "./printable.js"
import * as Redact from "./redact.js"
import { parseRetryAfter } from "./retryAfter.js"
import * as Short from "./short.js"

const MAX_BODY_IN_ERROR = 1024

/**
 * The service's id of a request, kept in errors for its support: an id has a plain form (at most 128 printable
 * characters, no blank). Anything else (a page, a header a gateway echoed, with a credential in it) is not kept.
 */
export const requestIdOf = (
  headers: Readonly<Record<string, string>>,
  redact: (text: string) => string
): string | undefined => {
  const id = headers["x-request-id"] ?? headers["request-id"] ?? headers["x-correlation-id"]
  return id !== undefined && /^[\x21-\x7e]{1,128}$/.test(id) && redact(id) === id ? id : undefined
}

/**
 * The errors of an attempt are built here of their schema's types, their fields in its order: not validated again by
 * their constructor, which was most of an error's cost (some 60 µs an ApiError, on every failed call of an outage).
 */
export const TRUSTED = true

// The service's words about a refused call are kept, but never a credential it echoed back: each field is redacted
// after parsing (whatever escapes the JSON used: `\/`, `\u0041`), and a kept raw body first normalised when it is
// JSON (see `Redact.redactor` for the forms a credential is found in).
// Made on a list's first error and kept while the list is (a client passes one list to its calls until a token
// changes: `KnownTokens.listWith`): making a redactor costs more than using it, and a 503 storm makes many errors.
const redactors = new WeakMap<ReadonlyArray<string>, Partial<Record<"plain" | "line" | "path", Redactor>>>()

type Redactor = (text: string) => string

/**
 * The credentials' redactor: as they are, or also in the form a message's line (`oneLine`) or a decode error's path
 * (`Printable.printable`) writes them.
 */
export const redactor = (credentials: ReadonlyArray<string>, form: "plain" | "line" | "path" = "plain"): Redactor => {
  let made = redactors.get(credentials)
  if (made === undefined) redactors.set(credentials, made = {})
  return made[form] ??= Redact.redactor(
    form === "plain"
      ? credentials
      : [...credentials, ...credentials.map(form === "line" ? oneLine : Printable.printable)],
    MAX_BODY_IN_ERROR
  )
}

// A raw body as kept in an error: JSON re-serialised with the standard escapes (so the redaction sees the credential),
// from the parse already made.
const normalisedBody = (text: string, json: unknown): string => {
  if (json === NOT_JSON) return text
  try {
    return JSON.stringify(json)
  } catch {
    // Nested deeper than the stack allows to write back (it could be read): kept as it came.
    return text
  }
}

// A message no longer than an error should carry (a page of text in a `message` field, say).
const short = (text: string, max = MAX_BODY_IN_ERROR): string => Short.short(text, max)

// Text on one line (a log line, `Cause.pretty`): every run of blanks, line breaks included, one space.
const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

/** The error of an answer whose status is outside 2xx, of what its body and headers say. */
export const statusError = (
  spec: AttemptInfo,
  status: number,
  headers: Readonly<Record<string, string>>,
  text: string,
  nowMillis: number
): AttemptError => {
  const redact = redactor(spec.credentials)
  // What a message says, on one line: its blanks collapsed before the credentials are redacted, in their own form
  // and with their blanks collapsed too, so that an echo with other blanks is never joined into the credential.
  const redactLine = redactor(spec.credentials, "line")
  // Its control characters and bidirectional overrides escaped too (as an issue's path is): a message is logged, and
  // an escape sequence of the service's (cursor up, erase line) would act on the terminal, or forge a log line. Cut
  // first, so that the limit is the service's characters and no escape is cut in two.
  const said = (text: string) => Printable.printable(short(redactLine(oneLine(text))))
  const requestId = requestIdOf(headers, redact)
  const common = { operation: spec.operation, attempts: spec.attempt, ...(requestId ? { requestId } : {}) }
  const json = parseJson(text)
  const parsed = readErrorBody(json)
  const message = parsed.message === undefined ? undefined : said(parsed.message)
  const retryAfter = parseRetryAfter(headers, nowMillis)
  if (status === 401) {
    return new AuthenticationError({
      message: `Authentication failed (401) on ${spec.operation}${message ? `: ${message}` : ""}`,
      status,
      ...(retryAfter ? { retryAfter } : {}),
      ...common
    }, TRUSTED)
  }
  // The code and field errors escaped as the message is (a field error's message keeps its line breaks and tabs): an
  // error is logged whole (its JSON leaves a bidirectional override or a C1 control as it is), and a field error is
  // often shown to a person as it stands.
  const code = parsed.code === undefined
    ? {}
    : { code: typeof parsed.code === "string" ? Printable.printable(short(redact(parsed.code))) : parsed.code }
  const body = !parsed.understood && spec.kind === "attempt" && text !== ""
    ? { body: Short.upTo(redact(normalisedBody(text, json)), MAX_BODY_IN_ERROR) }
    : {}
  const fields = parsed.fieldErrors?.map((f) =>
    new FieldError({
      field: Printable.printable(short(redact(f.field))),
      message: Printable.block(short(redact(f.message)))
    }, TRUSTED)
  )
  const fieldErrors = fields === undefined ? {} : { fieldErrors: fields }
  // What both errors carry after their status and message, in the order their fields were always written.
  const rest = { ...code, ...fieldErrors, ...body, ...(retryAfter ? { retryAfter } : {}), ...common }
  if (status === 429) {
    return new RateLimitError({
      message: `Rate limited (429) on ${spec.operation}${message ? `: ${message}` : ""}`,
      status,
      ...rest
    }, TRUSTED)
  }
  return new ApiError({
    status,
    message: apiErrorMessage(
      status,
      spec.operation,
      message,
      parsed.fieldErrors?.map((f) => ({
        field: redactLine(oneLine(f.field)),
        message: redactLine(oneLine(f.message))
      }))
    ),
    ...rest
  }, TRUSTED)
}

/**
 * The start of every `ApiError`'s message: the whole of it when the body said nothing. A status of 0 is no HTTP
 * status: a browser's fetch gives it for what it hides from the page.
 */
export const defaultMessage = (status: number, operation: string): string =>
  status === 0
    ? `The service answered with no status (0) on ${operation}: fetch in a browser gives that for a redirect it did ` +
      `not follow (redirect: "manual") and for the answer to a "no-cors" request`
    : `The service answered ${status} on ${operation}`

// A field error's parts as a message names them: enough to say what to change (whole in `fieldErrors`).
const FIELD_IN_MESSAGE = 64
const FIELD_MESSAGE_IN_MESSAGE = 200

/**
 * An `ApiError`'s message, on one line (a log line, `Cause.pretty`): the status and operation, the service's message,
 * its field errors (each cut at 200 characters), e.g. `The service answered 422 on POST /v1/fee-calculation:
 * Validation failed (source_amount: ...)`. Give it redacted text.
 */
export const apiErrorMessage = (
  status: number,
  operation: string,
  message: string | undefined,
  fieldErrors: ReadonlyArray<{ readonly field: string; readonly message: string }> | undefined
): string => {
  const start = defaultMessage(status, operation)
  const text = message === undefined ? "" : oneLine(message)
  // A service (or a proxy) that already says it in these words is not repeated.
  const own = text.startsWith(start) ? text.slice(start.length).replace(/^:\s*/, "") : text
  const fields = (fieldErrors ?? []).flatMap(({ field, message }) => {
    // Cut, then escaped (see `said`): no escape is cut in two.
    const [name, said] = [
      Printable.printable(short(oneLine(field), FIELD_IN_MESSAGE)),
      Printable.printable(short(oneLine(message), FIELD_MESSAGE_IN_MESSAGE))
    ]
    return name === "" && said === "" ? [] : [`${name}: ${said}`]
  })
  return `${start}${own === "" ? "" : `: ${own}`}${fields.length === 0 ? "" : ` (${fields.join("; ")})`}`
}

/** The `ResponseDecodeError` of an answer, of the issues `found` with it. */
export const decodeError = (
  spec: AttemptInfo,
  status: number,
  headers: Readonly<Record<string, string>>,
  found: ReadonlyArray<Issue>
) => {
  const requestId = requestIdOf(headers, redactor(spec.credentials))
  // A path may hold the answer's own keys (a record's): a credential the service echoed there is not kept either, in
  // the form a path writes it too (its control characters escaped: `\u0009`, which JSON writes `\t`, DEL). The
  // redactor keeps only a text's start: a longer path is cut with `...` (by `told`), never shortened into another
  // key's path.
  const redactPath = redactor(spec.credentials, "path")
  const { issues, summary } = Issues.told(
    found.map((issue) => {
      const path = redactPath(issue.path)
      return path === issue.path ? issue : new Issue({ path, expected: issue.expected })
    })
  )
  return new ResponseDecodeError({
    message: `Unexpected response from ${spec.operation}: ${summary}`,
    status,
    issues,
    operation: spec.operation,
    attempts: spec.attempt,
    ...(requestId ? { requestId } : {})
  })
}
