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

type Digit = "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9"

// One to three upper-case letters or digits, character by character (as `ThreeLetters`).
type CodeChar = Letter | Digit

type OneToThree<S extends string> = S extends `${infer A}${infer Rest}`
  ? A extends CodeChar ? Rest extends "" ? true
    : Rest extends `${infer B}${infer Last}` ? B extends CodeChar ? Last extends "" | CodeChar ? true : false
      : false
    : false
  : false
  : false

// `XX-Y` to `XX-YYY`: the first placeholder takes one character, the second the rest up to the first hyphen.
type SubdivisionShape<S extends string> = S extends `${infer A}${infer B}-${infer Rest}`
  ? [A, B] extends [Letter, Letter] ? OneToThree<Rest> : false
  : false

/** `true` when `S` is a literal that is no ISO 3166-2 code (what `Subdivisions.SubdivisionCode` refuses). */
export type BadSubdivisionCode<S> = S extends string
  ? IsLiteral<S> extends true ? SubdivisionShape<S> extends true ? never : true : never
  : never

/** `true` when `S` is a literal that is not three upper-case ASCII letters (what `CurrencyCode` refuses). */
export type BadCurrency<S> = S extends string
  ? IsLiteral<S> extends true ? ThreeLetters<S> extends true ? never : true : never
  : never

type HexChar = Digit | "a" | "b" | "c" | "d" | "e" | "f" | "A" | "B" | "C" | "D" | "E" | "F"

// How many hex digits `S` is made of, character by character; -1 when another character is among them.
type HexLength<S extends string, Counted extends ReadonlyArray<0> = []> = S extends `${infer C}${infer Rest}`
  ? C extends HexChar ? HexLength<Rest, [...Counted, 0]> : -1
  : Counted["length"]

// Five runs of hex digits between hyphens, of 8, 4, 4, 4 and 12 (a hyphen more ends in the last run, which fails).
type UuidShape<S extends string> = S extends `${infer A}-${infer B}-${infer C}-${infer D}-${infer E}`
  ? [HexLength<A>, HexLength<B>, HexLength<C>, HexLength<D>, HexLength<E>] extends [8, 4, 4, 4, 12] ? true : false
  : false

/** `true` when `S` is a literal that is no UUID in its hyphenated hex form (what `Schema.UUID` refuses). */
export type BadUuid<S> = S extends string ? IsLiteral<S> extends true ? UuidShape<S> extends true ? never : true : never
  : never

// Nine characters or more: a placeholder followed by another infers one character, the last one the rest.
type NineOrMore<S extends string> = S extends
  `${infer _1}${infer _2}${infer _3}${infer _4}${infer _5}${infer _6}${infer _7}${infer _8}${infer _9}${infer _Rest}`
  ? true
  : false

// Seventeen digits or more (eight, then nine or more): at least 10^16, past Number.MAX_SAFE_INTEGER (about 9.007e15).
type SeventeenOrMore<S extends string> = S extends
  `${infer _1}${infer _2}${infer _3}${infer _4}${infer _5}${infer _6}${infer _7}${infer _8}${infer Rest}`
  ? NineOrMore<Rest>
  : false

/**
 * `true` when `N` is a number literal that no amount is (what `FeeService.Amount` refuses): zero, a negative one, one
 * written with more than 8 decimal places (`0.123456789`, or in exponent form `1.5e-8`, which is 0.000000015), or one
 * of 10^16 or more (`1e300`, written by TypeScript as `1e+300` from 10^21; `1e400`, as `Infinity`): past
 * `Number.MAX_SAFE_INTEGER`. Those just above it, of 16 digits, are left to the run-time check.
 */
export type BadAmount<N> = N extends number ? number extends N ? never
  // `Infinity`: a literal past a double's range (`1e400`), as TypeScript writes it.
  : `${N}` extends "0" | `-${string}` | `${string}e+${string}` | "Infinity" ? true
  : `${N}` extends `${string}e-${string}` ? TinyWithinPlaces<`${N}`> extends true ? never : true
  : `${N}` extends `${string}.${infer Places}` ? NineOrMore<Places> extends true ? true : never
  // A number with a fraction is below 2^53 (every double past it is whole): only a whole one can have 17 digits.
  : SeventeenOrMore<`${N}`> extends true ? true
  : never
  : never

// An amount under 1e-6, which is written in exponent form (`1e-7`, `1.5e-8`): its places are the exponent's and the
// fraction's digits together, so at most 8 are `de-7`, `de-8` and `d.de-7`; `1.5e-8` (0.000000015) has 9.
type TinyWithinPlaces<T extends string> = T extends `${string}.${infer F}e-7` ? F extends `${infer _}${infer Rest}`
    ? Rest extends "" ? true : false
  : false
  : T extends `${string}.${string}` ? false
  : T extends `${string}e-7` | `${string}e-8` ? true
  : false
