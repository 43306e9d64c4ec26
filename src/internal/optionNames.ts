/**
 * The check of an options object's keys: one that is none of its options (misspelt, from a config file, where
 * TypeScript checks no excess keys) would otherwise leave that option's default in force without a word.
 *
 * @internal
 */
import * as Printable from "./printable.js"

/**
 * The keys of `options` that are not own keys of `names`, each as it can be shown: escaped as JSON writes it (a key
 * from outside may hold control characters or bidi overrides) and cut to 64 characters, between characters.
 */
export const unknown = (options: object, names: object): Array<string> =>
  Object.keys(options).filter((key) => !Object.hasOwn(names, key)).map((key) =>
    Printable.json(Array.from(key).slice(0, 64).join("")).slice(1, -1)
  )
