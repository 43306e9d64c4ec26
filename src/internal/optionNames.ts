/**
 * The check of an options object's keys: one that is none of its options (misspelt, from a config file, where
 * TypeScript checks no excess keys) would otherwise leave that option's default in force without a word.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Printable from "./printable.js"

/**
 * The keys of `options` that are not own keys of `names`, each as it can be shown: escaped as JSON writes it (a key
 * from outside may hold control characters or bidi overrides) and cut to 64 characters, between characters.
 */
export const unknown = (options: object, names: object): Array<string> =>
  Object.keys(options).filter((key) => !Object.hasOwn(names, key)).map((key) =>
    Printable.json(Array.from(key).slice(0, 64).join("")).slice(1, -1)
  )

/**
 * What `options` is when it is no options object (null, an array, text: from untyped code or a config file), said in
 * a few words; undefined for an object. Checked before `unknown`, which would take text's indexes for keys.
 */
export const notAnObject = (options: unknown): string | undefined =>
  options === null || options === undefined
    ? String(options)
    : Array.isArray(options)
    ? "an array"
    : typeof options === "object"
    ? undefined
    : `a ${typeof options}`

/**
 * A refused option value as a message can show it: a number or boolean as written, a bigint as written in code (`10n`:
 * "not 10" would read as a number refused for no reason), text as JSON (escaped, cut to 64 characters), anything else
 * by its kind (a symbol cannot be made text; an object without a prototype neither).
 */
export const shown = (value: unknown): string =>
  typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : typeof value === "bigint"
    ? `${value}n`
    : typeof value === "string"
    ? Printable.json(Array.from(value).slice(0, 64).join(""))
    : notAnObject(value) ?? "an object"

/**
 * Throws `IllegalArgumentException` when `options` is no options object, or has a key that is none of `names`: a
 * constructor's check of options given in code (a misspelt `encryptionkey` would leave tokens stored in plain text).
 * Said as `effect-fin: <where>: ...`, the options named as `said` gives them: `object` after "takes an options object"
 * (`({ lockTtl })`), `option` after "is no option" (`(lockTtl)`, `of RedisTokenStore.Options`).
 */
export const checkOrThrow = (
  where: string,
  options: unknown,
  names: object,
  said: { readonly object?: string; readonly option: string }
): void => {
  const given = notAnObject(options)
  if (given !== undefined) {
    const shape = said.object === undefined ? "" : ` ${said.object}`
    throw new Cause.IllegalArgumentException(`effect-fin: ${where}: takes an options object${shape}, not ${given}`)
  }
  const [name] = unknown(options as object, names)
  if (name !== undefined) {
    throw new Cause.IllegalArgumentException(`effect-fin: ${where}: "${name}" is no option ${said.option}`)
  }
}
