/**
 * Type-level checks of literal arguments: a literal is refused at compile time when it cannot pass the run-time check,
 * while any type that is not a literal (`string`, a branded string, a template such as `${string}A`) is left to it.
 */

/** Whether `S` is one known value (or a union of them): `string`, brands and templates are keys of any record. */
export type IsLiteral<S extends string> = {} extends Record<S, 0> ? false : true

type Letter =
  | "A" | "B" | "C" | "D" | "E" | "F" | "G" | "H" | "I" | "J" | "K" | "L" | "M"
  | "N" | "O" | "P" | "Q" | "R" | "S" | "T" | "U" | "V" | "W" | "X" | "Y" | "Z"

// Letter by letter: a template of three `Letter`s would be a union of 17,576 literals for the compiler to build.
type ThreeLetters<S extends string> = S extends `${infer A}${infer B}${infer C}`
  ? [A, B, C] extends [Letter, Letter, Letter] ? true : false
  : false

/** `true` when `S` is a literal that is not three upper-case ASCII letters (what `CurrencyCode` refuses). */
export type BadCurrency<S> = S extends string
  ? IsLiteral<S> extends true ? ThreeLetters<S> extends true ? never : true : never
  : never
