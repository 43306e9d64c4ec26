/**
 * Text from outside made safe to show: what would act on a terminal or reorder what is shown around it, written as
 * `\uXXXX` escapes.
 *
 * @internal
 */

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

// Past the C0 controls: DEL and the C1 controls, the line and paragraph separators, the bidirectional overrides and
// isolates. Each pattern below is built on it, so that every function escapes the same characters.
const beyondC0 = "\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069"
const colourCodeSource = "\\x1b\\[[0-9;]*m"
// One character `printable` escapes other than a line feed or a tab.
const linesUnsafeSource = `[\\x00-\\x08\\x0b-\\x1f${beyondC0}]|\\p{Cs}`
const unprintable = new RegExp(`[\\x00-\\x1f${beyondC0}]|\\p{Cs}`, "gu")
// What JSON.stringify leaves raw in strings of what `printable` escapes.
const rawInJson = new RegExp(`[${beyondC0}]`, "g")

/**
 * `text` with every control character (an escape sequence's start, a line break, U+2028 and U+2029 too),
 * bidirectional override or isolate and lone surrogate half written as `\uXXXX`: what the service or a file said
 * reaches the terminal as text, in the order it was written, never as a command to it.
 */
export const printable = (text: string): string => text.replace(unprintable, escape)

/**
 * `value` as JSON (`JSON.stringify`'s arguments), with what it leaves raw in strings and `printable` escapes (DEL and
 * the C1 controls, line and paragraph separators, bidirectional overrides) written as `\uXXXX` too: the same
 * document, safe to print.
 */
export const json = (value: unknown, space?: number): string =>
  // `undefined` (or a function) has no JSON: `null` stands for it, as in an array.
  jsonText(JSON.stringify(value, null, space) ?? "null")

/**
 * JSON text (valid JSON: parsed already) with the white space between its tokens taken out, and escaped as `json`
 * escapes it: the same document, on one line, safe to print, its numbers and strings as written (where `JSON.parse`
 * and `json` would make a number past 2^53 another one, and one past 1e308 `null`).
 */
export const compactJson = (text: string): string => {
  let out = ""
  let from = 0
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i++)
    if (c === 0x22) {
      // A string, to its closing quote: past each backslash's escaped character.
      for (let d = text.charCodeAt(i); i < text.length && d !== 0x22; d = text.charCodeAt(i)) i += d === 0x5c ? 2 : 1
      i++
    } else if (isJsonSpace(c)) {
      out += text.slice(from, i - 1)
      while (i < text.length && isJsonSpace(text.charCodeAt(i))) i++
      from = i
    }
  }
  return jsonText(out + text.slice(from))
}

const isJsonSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

// In valid JSON what `printable` escapes beyond the C0 controls can only be in a string, where its escape is the same
// text.
const jsonText = (text: string): string => text.replace(rawInJson, escape)

// A colour code (an SGR sequence) as a whole, or one character `printable` escapes other than a line feed or a tab.
const screenUnsafe = new RegExp(`${colourCodeSource}|${linesUnsafeSource}`, "gu")

/**
 * A screen of text (a command line's help, its usage errors, which quote the arguments as given) escaped as
 * `printable` escapes it, with its line feeds and tabs kept, and its colour codes kept where `colour` is on, else
 * taken out.
 */
export const screen = (text: string, colour: boolean): string =>
  // Only a colour code is longer than one code unit: a lone surrogate half is one.
  text.replace(screenUnsafe, (c) => c.length > 1 ? (colour ? c : "") : escape(c))

const colourCode = new RegExp(colourCodeSource, "y")

/**
 * `text` for `screen`, with each of `quoted` (text from outside it may quote as given: a command line's arguments)
 * that holds an escape character written as `printable` writes it: `screen` lets colour codes through, and could not
 * tell one of the argument's own from the text's. Where a colour code and an argument start at one place, the longer
 * wins: an argument that is an escape character alone leaves the text's colour codes to `screen`. On a tie (an
 * argument that is a colour code exactly) the argument wins: the text's own code is then shown escaped, rather than
 * an argument let act on the terminal (hiding what follows, say). Arguments without
 * one are left to `screen`: one that is a line feed alone would otherwise turn every line break into an escape.
 */
export const quoting = (text: string, quoted: ReadonlyArray<string>): string => {
  const escaping = quoted.filter((raw) => raw.includes("\x1b")).sort((a, b) => b.length - a.length)
  if (escaping.length === 0) return text
  let out = ""
  let i = 0
  while (i < text.length) {
    colourCode.lastIndex = i
    const code = colourCode.exec(text)?.[0] ?? ""
    const raw = escaping.find((arg) => arg.length >= code.length && text.startsWith(arg, i))
    const taken = raw ?? (code === "" ? text[i]! : code)
    out += raw === undefined ? taken : printable(raw)
    i += taken.length
  }
  return out
}

const linesUnsafe = new RegExp(linesUnsafeSource, "gu")

/** `printable`, with line feeds and tabs kept: text shown as a block (a field error's message), not on one line. */
export const block = (text: string): string => text.replace(linesUnsafe, escape)

/**
 * Lines of text as `printable` escapes them, with their line feeds and tabs kept, and a carriage return that starts
 * the text (a progress line redrawn in place): for a tool that prints no colour.
 */
export const lines = (text: string): string => text.startsWith("\r") ? `\r${block(text.slice(1))}` : block(text)
