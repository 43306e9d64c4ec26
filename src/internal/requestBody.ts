/**
 * A call's JSON body, checked before anything is sent: encoded by its schema when it has one, then written as JSON
 * only when JSON holds it as it is.
 *
 * @internal
 */
import * as Either from "effect/Either"
import * as Equal from "effect/Equal"
import * as Inspectable from "effect/Inspectable"
import * as Redacted from "effect/Redacted"
import type * as Schema from "effect/Schema"
import { Issue, RequestValidationError } from "../FinError.js"
import * as Codecs from "./codecs.js"
import * as Issues from "./issues.js"

// What JSON would write as another value than the one given (see `changedInJson`); `this[key]` is the value before
// its `toJSON`.
function sameInJson(this: unknown, key: string, value: unknown) {
  if (changedInJson((this as Record<string, unknown>)[key], value, Array.isArray(this))) {
    throw new TypeError("changed in JSON")
  }
  return value
}

// A plain object or list, of this realm or another (a `vm` context's): its prototype is none or an `Object.prototype`
// (which has its own `hasOwnProperty`; another object without a prototype would hand down properties JSON leaves out).
const isPlain = (value: object): boolean => {
  const prototype = Object.getPrototypeOf(value)
  return prototype === null || Array.isArray(value) || isObjectPrototype(prototype)
}

// An `Object.prototype`, of this realm or another: the end of a chain (its own accessor, `__proto__`, is no field).
const isObjectPrototype = (prototype: object): boolean =>
  Object.getPrototypeOf(prototype) === null && Object.prototype.hasOwnProperty.call(prototype, "hasOwnProperty")

// Whether a class instance shows a field through a getter of its class (`get amount()` over a private `#cents`): JSON
// sees only own fields, and would leave that one out without a word. A getter derived from own fields looks the same
// from outside: such an instance is refused too (a plain object, or the class as `bodySchema`, says what to send).
const hidesFields = (value: object): boolean => {
  for (let prototype = Object.getPrototypeOf(value); prototype !== null; prototype = Object.getPrototypeOf(prototype)) {
    if (isObjectPrototype(prototype)) return false
    for (const key of Object.getOwnPropertyNames(prototype)) {
      if (Object.getOwnPropertyDescriptor(prototype, key)!.get !== undefined && !Object.hasOwn(value, key)) return true
    }
  }
  return false
}

// The built-in kind of a value, whatever its realm: `Date`, `Error`...
const kindOf = (value: unknown): string => Object.prototype.toString.call(value).slice(8, -1)

// Objects whose state JSON cannot see (`{}`), by kind.
const opaqueKinds: ReadonlySet<string> = new Set(["Map", "Set", "WeakMap", "WeakSet", "ArrayBuffer", "Error"])

// Whether JSON writes `original` (as its `toJSON` left it: `value`) as another value: a number that is not finite or an
// invalid date (null: in an amount!); nothing in a list (null there, though left out of an object, as an optional
// field); a Redacted (its placeholder); an Effect data type (Option, BigDecimal, Duration...: its inspection form,
// `_id` and all); a Map, a Set, an Error, any other object whose state JSON cannot see (`{}`; an Effect data class
// with no fields is one's own `{}`); binary data (its bytes as keys, or a Buffer's `{ type, data }`); a value whose
// `toJSON` gives nothing (left out); a function (left out of an object: an amount not called, `order.total` for
// `order.total()`, would go missing without a word, as a symbol would).
const changedInJson = (original: unknown, value: unknown, inList: boolean): boolean => {
  switch (typeof value) {
    case "number":
      return !Number.isFinite(value)
    case "undefined":
      return inList || (original !== undefined && typeof original !== "function")
    case "function":
    case "symbol":
      return true
    case "string":
      return Redacted.isRedacted(original)
    case "object": {
      if (value === null) return kindOf(original) === "Date"
      // Told by kind, not `instanceof`: a Map or an ArrayBuffer of another realm (under Jest, say) is one too.
      const kind = kindOf(value)
      if (
        Redacted.isRedacted(value) || opaqueKinds.has(kind) || ArrayBuffer.isView(value) || ArrayBuffer.isView(original)
      ) return true
      if (kind === "Number") return !Number.isFinite(Number(value))
      if (kind === "String" || kind === "Boolean") return false
      if (original !== value) {
        // What a `toJSON` gave: Effect's inspection form, or an object with a `toJSON` JSON will not call.
        if (
          typeof original === "object" && original !== null && Inspectable.NodeInspectSymbol in original &&
          typeof (value as { readonly _id?: unknown })._id === "string"
        ) return true
        if (typeof (value as { readonly toJSON?: unknown }).toJSON === "function") return true
      }
      // An object of no own fields whose state JSON cannot see, or a class instance with a getter (Effect's data
      // classes too: a `Data.Class` may hold a `#private` field behind one).
      return !isPlain(value) && ((!Equal.isEqual(value) && Object.keys(value).length === 0) || hidesFields(value))
    }
    default:
      return false
  }
}

/**
 * Serialised before anything is sent (and once, not per attempt): a body JSON cannot hold (a BigInt, a cycle, a
 * function) or would change (see `sameInJson`) is the caller's mistake, a typed error, never a defect. The reason is
 * not kept: it may quote a value.
 */
export const jsonBody = (body: unknown): Either.Either<string | undefined, RequestValidationError> => {
  if (body === undefined) return Either.right(undefined)
  let text: string | undefined
  try {
    text = JSON.stringify(body, sameInJson)
  } catch {
    text = undefined
  }
  return text === undefined
    ? Either.left(
      Issues.refusal(
        "body",
        "The request body cannot be sent as JSON",
        "a value JSON holds as it is: numbers finite, dates valid, nothing missing in a list; no Redacted (unwrap " +
          "it), Option, BigDecimal or other Effect data type (encode it, or give a bodySchema); no Map, Set, Error " +
          "or binary data; no class instance showing a field through a getter (give a plain object); no function " +
          "(call it: `order.total()`)"
      )
    )
    : Either.right(text)
}

/** A body as its schema sends it; the issues keep the path and what was expected, never the value (as a decode's). */
export const encodedBody = <B, J>(
  schema: Schema.Schema<B, J, never>,
  body: unknown
): Either.Either<J, RequestValidationError> =>
  Either.mapLeft(
    Codecs.encoderFor(schema)(body),
    (error) => {
      const { issues, summary } = Issues.told(Issues.fromParseIssue(error.issue).map(({ expected, path }) =>
        new Issue({ path: path === "" || path.startsWith("[") ? `body${path}` : `body.${path}`, expected })
      ))
      return new RequestValidationError({ message: `Invalid request body: ${summary}`, issues })
    }
  )
