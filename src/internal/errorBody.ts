/**
 * The service's error bodies read: its message, its code and its field errors, from any of the documented bodies
 * (service-facts 5), and whether they hold the whole body; and the parse of a body's JSON, made once for both the
 * reading and the body an error keeps.
 *
 * @internal
 */
import { FieldError } from "../FinError.js"

const MAX_FIELD_ERRORS = 20

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const isStringArray = (u: unknown): u is ReadonlyArray<string> =>
  Array.isArray(u) && u.every((item) => typeof item === "string")

// One more than is kept is enough to know there were more (the body is then kept too): a 4 MiB body listing 300,000
// field errors would otherwise build a FieldError for each, a second or more of blocked event loop, to keep 20.
const addField = (out: Array<FieldError>, field: string, message: string): void => {
  if (out.length <= MAX_FIELD_ERRORS) out.push(new FieldError({ field, message }))
}

// `{"field": "msg"}` or `{"field": ["msg", ...]}`, as found in `errors[]` items and in a 400's `data`. Answers whether
// every entry was taken.
const addFieldErrors = (record: Record<string, unknown>, out: Array<FieldError>): boolean => {
  let all = true
  // Not `Object.entries`: a pair made for each of 300,000 keys costs more than the parse that read them.
  for (const field in record) {
    // More than are kept: the body is kept too, and the rest need not be looked at.
    if (out.length > MAX_FIELD_ERRORS) return false
    const value = record[field]
    if (typeof value === "string") addField(out, field, value)
    else if (isStringArray(value)) for (const message of value) addField(out, field, message)
    else all = false
  }
  return all
}

// `{"field": ..., "message": ...}` (or a list of messages), as the items of the crypto orchestration routes'
// `error.details` are, and maybe those of an `errors` list, whose items the docs do not describe: the field's errors.
// Answers undefined for an item not of that form, else whether it held nothing more.
const addFieldItem = (item: Record<string, unknown>, out: Array<FieldError>): boolean | undefined => {
  const { field, message } = item
  const messages = typeof message === "string" ? [message] : isStringArray(message) ? message : undefined
  if (typeof field !== "string" || messages === undefined) return undefined
  for (const text of messages) addField(out, field, text)
  return Object.keys(item).length === 2
}

// The `error.details` list of the crypto orchestration routes' 422 (or `null`).
const addDetails = (details: unknown, out: Array<FieldError>): boolean => {
  if (details === null || details === undefined) return true
  if (!Array.isArray(details)) return false
  let all = true
  for (const item of details) {
    if (out.length > MAX_FIELD_ERRORS) return false
    if (!(isRecord(item) && addFieldItem(item, out))) all = false
  }
  return all
}

// A number JSON cannot write back (`1e999` parses as Infinity) is no code: an error holding it would not survive
// `Schema.parseJson(FinError)` (it encodes as `null`), so the body is kept instead.
const isCode = (u: unknown): u is string | number =>
  typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

interface ParsedErrorBody {
  readonly message: string | undefined
  readonly code: string | number | undefined
  readonly fieldErrors: ReadonlyArray<FieldError> | undefined
  /**
   * Whether the fields above hold the whole body (a message was found, and nothing else is in it); if not, the
   * body is kept in `ApiError.body`, so nothing the service said (a 409's existing `beneficiary_id`, say) is lost.
   */
  readonly understood: boolean
}

/**
 * Maps any documented error body into `ApiError` fields. The documented bodies (service-facts 5) have no single
 * envelope, so each field is read on its own: one of an unexpected type (a `status` as text, `errors` as one object
 * rather than a list of them) does not cost the others.
 */
export const parseErrorBody = (text: string): ParsedErrorBody => readErrorBody(parseJson(text))

/** What `parseJson` answers for a body that is not JSON. */
export const NOT_JSON: unique symbol = Symbol("effect-fin/NotJson")

/** A body's JSON, parsed once (a 4 MiB one of 300,000 keys takes about a fifth of a second), or NOT_JSON. */
export const parseJson = (text: string): unknown => {
  // No JSON starts with `<`: a page (a gateway's 502) is not parsed only to throw, which costs more than reading it.
  if (/^\s*</.test(text)) return NOT_JSON
  try {
    return JSON.parse(text)
  } catch {
    return NOT_JSON
  }
}

/** `parseErrorBody` of a body parsed already (by `parseJson`). */
export const readErrorBody = (body: unknown): ParsedErrorBody => {
  if (!isRecord(body)) return { message: undefined, code: undefined, fieldErrors: undefined, understood: false }
  const fields: Array<FieldError> = []
  let message: string | undefined
  let nestedMessage: string | undefined
  let description: string | undefined
  let oauthCode: string | undefined
  let code: string | number | undefined
  let status: number | undefined
  let explained = true
  for (const [key, value] of Object.entries(body)) {
    if (key === "message" && typeof value === "string") message = nonBlank(value)
    else if (key === "status" && typeof value === "number" && Number.isFinite(value)) status = value
    else if (key === "errors" && (Array.isArray(value) || isRecord(value))) {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (fields.length > MAX_FIELD_ERRORS) break
        // An item with a message but no field (`{code, message}`) is an error of its own, not a map of fields.
        const taken = isRecord(item) &&
          (addFieldItem(item, fields) ?? (!("message" in item) && addFieldErrors(item, fields)))
        explained = taken && explained
      }
    } else if (key === "data" && isRecord(value)) explained = addFieldErrors(value, fields) && explained
    else if (key === "error" && isRecord(value)) {
      for (const [nestedKey, nested] of Object.entries(value)) {
        if (nestedKey === "message" && typeof nested === "string") nestedMessage = nonBlank(nested)
        else if (nestedKey === "code" && isCode(nested)) code = nested
        else if (nestedKey === "details") explained = addDetails(nested, fields) && explained
        else explained = false
      }
    } else if (key === "error" && typeof value === "string") {
      // An OAuth 2.0 error (RFC 6749 5.2): a gateway or token server in front of the service may answer one.
      oauthCode = value
    } else if (key === "error_description" && typeof value === "string") description = nonBlank(value)
    else explained = false
  }
  // Where the body says both, the top-level message and the nested code win; the other is kept in the body.
  const said = message ?? nestedMessage
  if (said !== undefined && [nestedMessage, description].some((other) => other !== undefined && other !== said)) {
    explained = false
  }
  if (code !== undefined && status !== undefined && code !== status) explained = false
  // A numeric `status` beside an `error` of words (`{"status":429,"error":"Too Many Requests"}`, Spring's) is the code:
  // the words are kept in the body.
  const chosen = code ?? status ?? oauthCode
  if (oauthCode !== undefined && chosen !== oauthCode) explained = false
  return {
    message: said ?? description,
    code: chosen,
    // Bounded, as a ResponseDecodeError's issues are: an error is logged, and a body may list a field per row.
    fieldErrors: fields.length > 0 ? fields.slice(0, MAX_FIELD_ERRORS) : undefined,
    understood: (said ?? description) !== undefined && explained && fields.length <= MAX_FIELD_ERRORS
  }
}

// A blank message says nothing: the standard one is used, and the body kept.
const nonBlank = (value: string): string | undefined => value.trim() === "" ? undefined : value
