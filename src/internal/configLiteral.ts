/**
 * A variable that must be one of a few words, refused as the other `FIN_*` variables are.
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as OptionNames from "./optionNames.js"

/**
 * `Config.literal(...literals)(name)`, but a refused value quoted escaped and cut to 64 characters, as every other
 * refusal quotes one: `Config.literal` quotes it raw and whole (a control character, a bidi mark, a secret pasted into
 * the wrong variable).
 */
export const literal = <const L extends ReadonlyArray<string>>(
  name: string,
  ...literals: L
): Config.Config<L[number]> =>
  Config.nested(
    Config.mapOrFail(Config.string(), (text) =>
      literals.includes(text)
        ? Either.right(text as L[number])
        : Either.left(ConfigError.InvalidData(
          [],
          `Expected one of (${literals.join(", ")}) but received ${OptionNames.shown(text)}`
        ))),
    name
  )
