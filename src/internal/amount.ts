/**
 * The decimal places an amount may have, shared by the request schema, the command line and the emulator.
 *
 * @internal
 */

/**
 * Eight covers every currency's minor unit (ISO 4217 has at most 4; a satoshi is the 8th). A float's artefact
 * (`0.1 + 0.2` is 0.30000000000000004) has about 16 significant digits, so below 10^7 it always shows past them.
 */
export const MAX_DECIMALS = 8

/** The decimal places of the shortest decimal that reads back as `n` (what JSON sends): 1.5e-9 has 10. */
export const decimalPlaces = (n: number): number => {
  const [mantissa = "", exponent = "0"] = String(n).split("e")
  const point = mantissa.indexOf(".")
  return Math.max(0, (point === -1 ? 0 : mantissa.length - point - 1) - Number(exponent))
}
