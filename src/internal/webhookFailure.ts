/**
 * A failed user handler's cause, as the webhook handler logs it without a webhook secret: its rendering (or, for one
 * that cannot be rendered, its error's name), whether anything a logger may print of it holds a secret, and how much
 * of its text is logged once redacted.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Predicate from "effect/Predicate"

/** A cause as Effect's loggers render it, or undefined where that throws (an error whose causes make a cycle). */
export const renderedOrUndefined = (cause: Cause.Cause<unknown>): string | undefined => {
  try {
    return Cause.pretty(cause, { renderErrorCause: true })
  } catch {
    return undefined
  }
}

/** What a failure's error is called (its name and message), for a cause that cannot be rendered whole. */
export const squashedName = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`
    return Predicate.isObject(error) ? "an object" : String(error)
  } catch {
    return "an error that cannot be shown"
  }
}

/**
 * Whether anything in the cause a logger may print (by inspecting it, serialising it, or calling `toJSON`) holds text
 * `redact` changes: every text reached through own data fields, enumerable or not (an `Error`'s message and stack, an
 * error nested in a field), enumerable getters (read as JSON reads them), a boxed string, a Map's or Set's entries, and
 * what a `toJSON` gives; bytes are not read (no logger shows them as text). A cycle is walked once. Past MAX_WALKED
 * objects, or where a field cannot be read, nothing can be told: held.
 */
export const holdsSecret = (cause: Cause.Cause<unknown>, redact: (text: string) => string): boolean => {
  const seen = new Set<object>()
  const texts: Array<string> = []
  const pending: Array<unknown> = [cause]
  try {
    while (pending.length > 0) {
      const value = pending.pop()
      if (typeof value === "string") {
        texts.push(value)
        continue
      }
      if (typeof value !== "object" || value === null || seen.has(value)) continue
      if (seen.size >= MAX_WALKED) return true
      seen.add(value)
      if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) continue
      // A boxed string's text is its value, which JSON writes (its own fields are its characters, one each).
      if (value instanceof String) texts.push(String.prototype.valueOf.call(value))
      if (value instanceof Map) for (const [key, entry] of value) pending.push(key, entry)
      if (value instanceof Set) for (const entry of value) pending.push(entry)
      for (const key of Reflect.ownKeys(value)) {
        if (typeof key === "string") texts.push(key)
        const field = Reflect.getOwnPropertyDescriptor(value, key)
        if (field === undefined) continue
        // An enumerable getter's value is what JSON writes (an object literal's `get key()`): read, as JSON would.
        if ("value" in field) pending.push(field.value)
        else if (field.enumerable === true && field.get !== undefined) pending.push(Reflect.get(value, key))
      }
      const toJSON: unknown = (value as { readonly toJSON?: unknown }).toJSON
      if (typeof toJSON === "function") pending.push(toJSON.call(value))
    }
  } catch {
    return true
  }
  const structure = texts.join("\n")
  return redact(structure) !== structure
}
const MAX_WALKED = 10_000

/** The most of a failed handler's text logged once it had to be redacted: its cause and stack, not a page. */
export const MAX_FAILURE_TEXT = 16 * 1024
