/**
 * Amounts as decimals: the places an amount may have (the request schema, the command line and the emulator), and
 * the check of a quote's amounts (exact, in `BigDecimal`).
 *
 * @internal
 */
import * as BigDecimal from "effect/BigDecimal"

/**
 * Eight covers every currency's minor unit (ISO 4217 has at most 4; a satoshi is the 8th). One operation's float
 * artefact (`0.1 + 0.2` is 0.30000000000000004) has about 16 significant digits, so below 10^7 it always shows past
 * them; the drift of a long running total may not (`0.01` added 258,481 times is 2584.81000001).
 */
export const MAX_DECIMALS = 8

/** What an amount must be, as a refusal says it (the request schema's, and the command line's for a negative one). */
export const EXPECTED = `a number greater than 0 and at most ${Number.MAX_SAFE_INTEGER}`

/** The decimal places of the shortest decimal that reads back as `n` (what JSON sends): 1.5e-9 has 10. */
export const decimalPlaces = (n: number): number => {
  const [mantissa = "", exponent = "0"] = String(n).split("e")
  const point = mantissa.indexOf(".")
  return Math.max(0, (point === -1 ? 0 : mantissa.length - point - 1) - Number(exponent))
}

const ALWAYS_HELD = 2 ** 52 / 10 ** MAX_DECIMALS

/**
 * Whether the number `n` (above 0) tells the amounts next to it at its decimal places apart: a whole number always
 * does (up to `Number.MAX_SAFE_INTEGER`, checked apart); one with decimals when neither of those amounts reads back as
 * `n`. Where one does, the amount written may not be the one sent: 123456789.12345677 is read as 123456789.12345678,
 * 100000000000000.01 as 100000000000000.02 (near 10^14 a number's step is 1/64).
 */
export const heldAtPlaces = (n: number): boolean => {
  // Below this a number's step is under 10^-8: every amount of up to 8 places is told apart (every usual amount).
  if (n < ALWAYS_HELD) return true
  // The exact decimal of `n` as written (the shortest text that reads back as it).
  const { scale, value } = BigDecimal.unsafeFromNumber(n)
  if (scale <= 0) return true
  const at = (units: bigint) => BigDecimal.unsafeToNumber(BigDecimal.make(units, scale))
  return at(value - 1n) !== n && at(value + 1n) !== n
}

/**
 * Whether `given` is `amount` as a service may give it back: as it is, or rounded either way to fewer places (its
 * currency's unit, say), so less than one unit of `given`'s last place off. Exact, in decimal; `given` is first
 * `trimmed`, so a float artefact's digits (3.3000000000000003 for 3.3) do not count.
 */
export const roundsTo = (amount: number, given: number): boolean => {
  // Only digits past the amount asked's own places can be an artefact of working it out: one within them is the
  // service's (12345678.12345683 for 12345678.12345678 is another amount).
  const b = BigDecimal.unsafeFromNumber(decimalPlaces(given) > decimalPlaces(amount) ? trimmed(given) : given)
  const off = BigDecimal.abs(BigDecimal.subtract(BigDecimal.unsafeFromNumber(amount), b))
  // One unit of `given`'s last place (of its units at least: 1e21 is written with no place).
  return BigDecimal.lessThan(off, BigDecimal.make(1n, Math.max(0, b.scale)))
}

/**
 * `n` without a float artefact's digits: those past the 15th significant one, the most a double always holds
 * (3.3000000000000003 is 3.3; 191478486.95000002, 191478486.95 worked out in cents, is 191478486.95, whose artefact
 * is within 8 places).
 */
export const trimmed = (n: number): number => {
  const short = Number(n.toPrecision(15))
  return decimalPlaces(short) < decimalPlaces(n) ? short : n
}
