/**
 * Redaction of credentials from the text of a service's answer (its message, its field errors, its body kept in an
 * error): a credential is found however it was echoed.
 *
 * @internal
 */

const utf8 = new TextEncoder()

// A string of one character per byte of `text` in UTF-8 (a lone surrogate as U+FFFD, as a client would send it).
const bytesOf = (text: string): string => {
  let out = ""
  for (const byte of utf8.encode(text)) out += String.fromCharCode(byte)
  return out
}

/** A text decoded, with where each of its units came from. */
export interface View {
  /** One character per byte. */
  readonly bytes: string
  /** For each byte, the span of the text it came from. */
  readonly from: ReadonlyArray<number>
  readonly to: ReadonlyArray<number>
}

/** A text decoded, and (made on first use: most texts hold no credential) where each of its units came from. */
export interface Decoded {
  readonly bytes: string
  readonly view: () => View
}

// Where the `units` units a match of `text` (`length` characters at `at`) decoded to came from: `unit(from, to)` called
// for each, in order.
type Origins = (
  text: string,
  at: number,
  length: number,
  units: number,
  unit: (from: number, to: number) => void
) => void

// Every unit of a match from the whole match (an escape, a reference).
const fromMatch: Origins = (_, at, length, units, unit) => {
  for (let k = 0; k < units; k++) unit(at, at + length)
}

// A text decoded by `replaced` (the engine's own replace, noting in `changed` the offset, length and decoded length of
// each match it changed: building the spans for each character of a page cost more than searching it), and the view
// of it: a unit outside every match changed from itself, those of a match by `origins`.
const decodedBy = (text: string, replaced: (changed: Array<number>) => string, origins: Origins): Decoded => {
  const changed: Array<number> = []
  const bytes = replaced(changed)
  let view: View | undefined
  return {
    bytes,
    view: () => {
      if (view !== undefined) return view
      const from: Array<number> = []
      const to: Array<number> = []
      const unit = (start: number, stop: number) => {
        from.push(start)
        to.push(stop)
      }
      let copied = 0
      const copy = (until: number) => {
        for (let k = copied; k < until; k++) unit(k, k + 1)
      }
      for (let i = 0; i < changed.length; i += 3) {
        const [at, length, units] = [changed[i]!, changed[i + 1]!, changed[i + 2]!]
        copy(at)
        origins(text, at, length, units, unit)
        copied = at + length
      }
      copy(text.length)
      return view = { bytes, from, to }
    }
  }
}

// The span of the text a view was made of that its units `start` to `stop` came from.
const spanOf = (view: View, start: number, stop: number): readonly [number, number] =>
  [view.from[start]!, view.to[stop - 1]!]

const ESCAPES = {
  text: /%[0-9A-Fa-f]{2}|[^\x00-\x7f]+/g,
  textPlus: /%[0-9A-Fa-f]{2}|\+|[^\x00-\x7f]+/g,
  bytes: /%[0-9A-Fa-f]{2}/g,
  bytesPlus: /%[0-9A-Fa-f]{2}|\+/g
}

// An escape from itself; a run of characters outside ASCII (as their UTF-8 bytes) each character's bytes from that
// character (a lone surrogate as U+FFFD's, as a client would send it).
const urlOrigins: Origins = (text, at, length, units, unit) => {
  if (text[at] === "%") return fromMatch(text, at, length, units, unit)
  for (let i = at; i < at + length;) {
    const width = text.codePointAt(i)! > 0xffff ? 2 : 1
    const bytes = bytesOf(text.slice(i, i + width)).length
    for (let k = 0; k < bytes; k++) unit(i, i + width)
    i += width
  }
}

const decodeUrl = (m: string): string =>
  m[0] === "%" ? String.fromCharCode(Number.parseInt(m.slice(1), 16)) : m === "+" ? " " : bytesOf(m)

/**
 * `text` as the bytes it stands for when URL-decoded (`%XX` in either case as its byte, `+` as a space or as itself,
 * a character outside ASCII as its UTF-8 bytes), one character per byte: an echo URL-encoded by any encoder
 * (everything escaped, or `/` kept as Python's `quote` does, or only some characters) reads here as the credential's
 * own bytes. `text` is one of bytes already (a view decoded again) when `isBytes`.
 */
export const urlDecoded = (text: string, plusIsSpace: boolean, isBytes = false): Decoded =>
  decodedBy(
    text,
    (changed) =>
      text.replace(
        isBytes ? plusIsSpace ? ESCAPES.bytesPlus : ESCAPES.bytes : plusIsSpace ? ESCAPES.textPlus : ESCAPES.text,
        (m: string, at: number) => {
          const decoded = decodeUrl(m)
          // A `+` read as a space is one unit from itself, as a copied character is: not noted (a form has many).
          if (m !== "+") changed.push(at, m.length, decoded.length)
          return decoded
        }
      ),
    urlOrigins
  )

// A credential cut short where it was echoed (a gateway that shortens long values in its error page) still gives most
// of it away: a run of its first characters is redacted too, from 16 of them (half of a shorter credential, at least
// 8), and so is a run of its last characters as long (an echo cut at its start: a page that keeps a value's end); one
// of 8 characters or fewer only whole.
const headLength = (needle: string): number =>
  needle.length <= 8 ? needle.length : Math.max(8, Math.min(16, Math.ceil(needle.length / 2)))

type Runs = (haystack: string, found: (start: number, end: number) => void) => void

// Z-algorithm table of `needle`: z[i], how far needle[i..] agrees with needle's start.
const zTable = (needle: string): Int32Array => {
  const m = needle.length
  const z = new Int32Array(m)
  z[0] = m
  for (let i = 1, l = 0, r = 0; i < m; i++) {
    let k = i < r ? Math.min(r - i, z[i - l]!) : 0
    while (i + k < m && needle[k] === needle[i + k]) k++
    z[i] = k
    if (i + k > r) {
      l = i
      r = i + k
    }
  }
  return z
}

// Calls `found(start, end)` for each stretch of `haystack` covered by runs of `needle`'s start at least `least` long;
// `backwards`: the haystack read from its end (`needle` then being the credential reversed), the stretches given as
// spans of the haystack as it is.
const headRuns = (
  needle: string,
  z: Int32Array,
  least: number,
  haystack: string,
  backwards: boolean,
  found: (start: number, end: number) => void
) => {
  const m = needle.length
  const n = haystack.length
  const last = n - 1
  const told = backwards ? (start: number, stop: number) => found(n - stop, n - start) : found
  let start = -1
  let stop = -1
  // haystack[l..r) agrees with the needle's start.
  for (let i = 0, l = 0, r = 0; i < n; i++) {
    let k = i < r ? Math.min(r - i, z[i - l]!) : 0
    while (k < m && i + k < n && (backwards ? haystack[last - i - k] : haystack[i + k]) === needle[k]) k++
    if (i + k > r) {
      l = i
      r = i + k
    }
    if (k < least) continue
    if (i <= stop) {
      stop = Math.max(stop, i + k)
    } else {
      if (start !== -1) told(start, stop)
      start = i
      stop = i + k
    }
  }
  if (start !== -1) told(start, stop)
}

// For `needle`, a function calling `found(start, end)` for each stretch of a haystack covered by copies of it (all,
// overlapping ones too), by runs of its start at least `headLength` long (an echo cut at its end), or by runs of its
// end as long (an echo cut at its start: a page or a mask that keeps a value's end). At each place, the longest start
// (or end) of the needle found there is known from the Z-algorithm (the needle's own tables made once): linear in the
// haystack, however the credential repeats itself.
const runsOf = (needle: string): Runs => {
  const least = headLength(needle)
  const z = zTable(needle)
  const backwards = Array.from({ length: needle.length }, (_, i) => needle[needle.length - 1 - i]).join("")
  const zBack = zTable(backwards)
  return (haystack, found) => {
    headRuns(needle, z, least, haystack, false, found)
    headRuns(backwards, zBack, least, haystack, true, found)
  }
}

// Every run `runsOf` looks for is 8 characters or more (`headLength`) long, unless its needle is shorter: so it holds
// the needle's first 8 characters (a run of its start) or its last 8 (a run of its end). A text is read once for
// those (a rolling hash of each 8 characters, looked up in a table of the needles' first and last 8), and only the
// needles found so are searched for their runs: a text that echoes no credential costs one pass, not two per form of
// each credential (a few hundred, with the known tokens). A hash that only collides costs a search, never a run.
const GRAM = 8
const BASE = 31
// BASE ** (GRAM - 1), modulo 2^32: what the character leaving a window weighs in its hash.
const LEAVING = Array.from({ length: GRAM - 1 }).reduce<number>((power) => Math.imul(power, BASE), 1)
// One bit per hash's low 16 bits: most windows are told apart by it, without a Map lookup.
const FILTER_MASK = 0xffff

const gramHash = (text: string, start: number): number => {
  let hash = 0
  for (let k = start; k < start + GRAM; k++) hash = (Math.imul(hash, BASE) + text.charCodeAt(k)) | 0
  return hash
}

// A search for the runs of all `needles` (see `runsOf`), reading the haystack once to find which needles to search.
const searchOf = (needles: ReadonlyArray<string>): Runs => {
  const runs = needles.map(runsOf)
  const always: Array<number> = []
  const byGram = new Map<number, Array<number>>()
  const filter = new Int32Array((FILTER_MASK + 1) >>> 5)
  needles.forEach((needle, index) => {
    if (needle.length < GRAM) return always.push(index)
    for (const hash of new Set([gramHash(needle, 0), gramHash(needle, needle.length - GRAM)])) {
      const low = hash & FILTER_MASK
      filter[low >>> 5]! |= 1 << (low & 31)
      byGram.set(hash, [...(byGram.get(hash) ?? []), index])
    }
  })
  return (haystack, found) => {
    const wanted = new Set(always)
    const n = haystack.length
    if (byGram.size > 0 && n >= GRAM) {
      let hash = gramHash(haystack, 0)
      for (let i = 0; ; i++) {
        const low = hash & FILTER_MASK
        if ((filter[low >>> 5]! & (1 << (low & 31))) !== 0) {
          for (const index of byGram.get(hash) ?? []) wanted.add(index)
        }
        if (i + GRAM >= n) break
        const kept = (hash - Math.imul(haystack.charCodeAt(i), LEAVING)) | 0
        hash = (Math.imul(kept, BASE) + haystack.charCodeAt(i + GRAM)) | 0
      }
    }
    for (const index of wanted) runs[index]!(haystack, found)
  }
}

// The spans of `text` that are the needles of `search` (or their starts) URL-encoded, or partly so, once or twice (a
// value encoded again as a parameter of another URL: `%252F`).
const encodedSpans = (text: string, search: Runs): Array<readonly [number, number]> => {
  const spans: Array<readonly [number, number]> = []
  for (const plusIsSpace of [false, true]) {
    // With no `+`, reading one as a space changes nothing: the same view, searched already.
    if (plusIsSpace && !text.includes("+")) break
    const once = urlDecoded(text, plusIsSpace)
    search(once.bytes, (start, end) => spans.push(spanOf(once.view(), start, end)))
    if (!once.bytes.includes("%") && !once.bytes.includes("+")) continue
    // The inner encoding may be a form's (a space as `+`, `%2B` once encoded again) whatever the outer one was.
    for (const innerPlusIsSpace of [false, true]) {
      if (innerPlusIsSpace && !once.bytes.includes("+")) break
      const twice = urlDecoded(once.bytes, innerPlusIsSpace, true)
      // Nothing decoded (a decoded escape shortens the bytes, a `+` read as a space changes them): the once view's
      // own bytes and spans, searched already.
      if (twice.bytes === once.bytes) continue
      search(twice.bytes, (start, end) => spans.push(spanOf(once.view(), ...spanOf(twice.view(), start, end))))
    }
  }
  return spans
}

// The spans of `text` that are the needles of `search` (or their starts) as they are.
const literalSpans = (text: string, search: Runs): Array<readonly [number, number]> => {
  const spans: Array<readonly [number, number]> = []
  search(text, (start, end) => spans.push([start, end]))
  return spans
}

// `\uXXXX` for what `pattern` matches, in the hex case asked for.
const unicodeEscaped = (text: string, pattern: RegExp, upper: boolean): string =>
  text.replace(pattern, (c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, "0")
    return `\\u${upper ? hex.toUpperCase() : hex}`
  })

// What JSON encoders write as `\uXXXX` beyond JSON.stringify's escapes, alone or together: every character outside
// ASCII (Python's ensure_ascii, PHP's default), `&<>'` (Go's HTML-safe escapes, PHP's JSON_HEX_* flags), both.
const escapable = [/[^\x00-\x7f]/g, /[&<>']/g, /[^\x00-\x7f]|[&<>']/g]

// What .NET's System.Text.Json writes as `\uXXXX` by default: its HTML-safe set, `+` and the backtick too (a base64
// secret's `+`), and every character outside ASCII; a `"` as `\u0022`, not `\"`.
const dotNetEscapable = /[^\x00-\x7f]|[&<>'+`]/g

// The forms a credential is echoed in as text (see `redactor`): JSON.stringify's, with `/` as `\/` or not (PHP), each
// with or without the escapes above, in either hex case; .NET's.
const echoesOf = (credential: string): ReadonlyArray<string> => {
  const escaped = JSON.stringify(credential).slice(1, -1)
  const forms = [credential]
  for (const base of [escaped, escaped.replaceAll("/", "\\/")]) {
    forms.push(base)
    for (const pattern of escapable) forms.push(unicodeEscaped(base, pattern, false), unicodeEscaped(base, pattern, true))
  }
  // Every `\"` of JSON.stringify's is an escaped quote (a backslash of the text is itself escaped, `\\`).
  forms.push(unicodeEscaped(escaped.replaceAll('\\"', "\\u0022"), dotNetEscapable, true))
  return forms
}

// `text` with each HTML character reference decoded (the named ones of &<>"', `&apos;`, and any decimal or hex one in
// either case, zero-padded or not), the units of a reference from the whole reference: an echo escaped by any HTML
// escaper, or by one that mixes the styles (Go's `&amp;` with `&#34;`, PHP's `&#039;`), or that escapes more than
// &<>"' (Go's html/template `+` as `&#43;`, .NET's HtmlEncoder `+` and non-ASCII as `&#x2B;`, `&#xE9;`), reads here
// as the credential itself.
const HTML_REFERENCES = /&(?:(amp|lt|gt|quot|apos)|#0*(\d{1,7})|#[xX]0*([0-9a-fA-F]{1,6}));/g
type Maybe = string | undefined
const HTML_NAMED: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" }
/** `text` with its HTML character references decoded (see above). */
export const htmlDecoded = (text: string): Decoded =>
  decodedBy(
    text,
    (changed) =>
      text.replace(HTML_REFERENCES, (m: string, named: Maybe, decimal: Maybe, hex: Maybe, at: number) => {
        const code = named !== undefined ? 0 : Number.parseInt(decimal ?? hex!, decimal !== undefined ? 10 : 16)
        // A reference to no character (past U+10FFFF, or a surrogate) is left as it is.
        if (named === undefined && (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))) return m
        const decoded = named !== undefined ? HTML_NAMED[named]! : String.fromCodePoint(code)
        changed.push(at, m.length, decoded.length)
        return decoded
      }),
    fromMatch
  )

// A JWT in its compact form: a JSON header (`{"` in base64url is `eyJ`), claims and a signature, in base64url.
const JWT = /^eyJ[\w-]*\.[\w-]+\.[\w-]+$/

// The most characters one UTF-16 unit of a credential takes in an echo: 3 bytes in UTF-8 (a character from U+0800 to
// U+FFFF), each URL-encoded twice (`%25XX`, 5 characters); a 4-byte character is two units.
const MAX_WIDTH = 15

// The base64 (and base64url) characters that depend on `credential` alone, at each of the three alignments it may
// have in a longer encoded text (after 0, 1 or 2 other bytes): a credential base64-encoded inside anything else
// (`client_id:client_secret` of a Basic header) holds one of them. Only cores of 16 characters or more.
const base64Cores = (credential: string): ReadonlyArray<string> => {
  const bytes = utf8.encode(credential)
  const cores: Array<string> = []
  for (const pad of [0, 1, 2]) {
    const all = new Uint8Array(pad + bytes.length)
    all.set(bytes, pad)
    let binary = ""
    for (const byte of all) binary += String.fromCharCode(byte)
    // `btoa`, not node:buffer: this module runs wherever the webhooks do.
    const encoded = btoa(binary)
    const core = encoded.slice(pad === 0 ? 0 : pad + 1, Math.floor(all.length / 3) * 4)
    if (core.length >= 16) cores.push(core, core.replaceAll("+", "-").replaceAll("/", "_"))
  }
  return cores
}

/**
 * A function that replaces each of `credentials` in a text with `<redacted>`: as sent, JSON-escaped, and URL- or
 * form-encoded by any encoder (wholly or partly, `%XX` in either case, a space as `+`, once or twice), as JSON encoders
 * escape it (`\/`, `\uXXXX`), case-folded (one of 8 characters or more), base64-encoded (see `base64Cores`), and cut
 * short at either end (see `headLength`). No regular expression is built
 * from a credential, so none is too long or too odd (a lone surrogate) to be searched.
 *
 * Only the start of a text that its reader keeps is returned: its first `keep` characters and one more (so that the
 * reader can tell it was longer), a credential that begins there redacted whole however it is encoded (`MAX_WIDTH`
 * characters at most per character of it). Every match is found in the text as it came
 * and replaced at once, so two credentials that overlap leave nothing of either, and nothing past the searched part
 * of the text is ever moved into what is returned. A 4 MiB page costs no more than its start.
 */
export const redactor = (credentials: ReadonlyArray<string>, keep: number): (text: string) => string => {
  // A JWT gives itself away without its header, the same public text on every token: each later part of 16
  // characters or more (its claims, its signature) counts as a credential of its own. Only a JWT's: the parts of
  // another credential with dots ("prod.2024.payments-key") are words the service's own text may hold.
  const partsOf = (credential: string) =>
    JWT.test(credential) ? credential.split(".").slice(1).filter((part) => part.length >= 16) : []
  const present = [
    ...new Set(
      credentials.flatMap((credential) => [
        credential,
        ...partsOf(credential),
        // Echoed case-folded (a gateway that lower- or upper-cases what it quotes) or base64-encoded (a Basic
        // header, a body quoted as base64): the credential is as good as given away in either.
        ...(credential.length >= 8 ? [credential.toLowerCase(), credential.toUpperCase()] : []),
        ...base64Cores(credential)
      ])
    )
  ].filter((credential) => credential !== "")
  const end = keep + 1
  if (present.length === 0) return (text) => text.slice(0, end)
  // As sent, and as JSON encoders write it (a body cut short is no JSON to unescape), each maybe URL-encoded too.
  const forms = [...new Set(present.flatMap(echoesOf))]
  const literal = searchOf(forms)
  const encoded = searchOf([...new Set(forms.map(bytesOf))])
  const longest = present.reduce((most, c) => Math.max(most, c.length), 0)
  return (whole) => {
    const text = whole.slice(0, end + MAX_WIDTH * longest)
    const spans = literalSpans(text, literal)
    // Only a text with an ampersand can hold an HTML-escaped credential: every form of every credential (a JSON body
    // shown in an HTML page: `\&quot;`) is looked for in it with its character references decoded, as escapers differ
    // in what they escape (`+`, non-ASCII) and any character may be written as a numeric reference.
    // Escaped twice too (`&amp;quot;`: a page escaping text an escaper already wrote); not more, which no echo was
    // seen to be.
    // A view's spans are made on its first match only (see `decodedBy`); a text that decoded to itself (a decoded
    // reference shortens the text) was searched already.
    const once = text.includes("&") ? htmlDecoded(text) : undefined
    if (once !== undefined && once.bytes !== text) {
      literal(once.bytes, (start, stop) => spans.push(spanOf(once.view(), start, stop)))
      const twice = once.bytes.includes("&") ? htmlDecoded(once.bytes) : undefined
      if (twice !== undefined && twice.bytes !== once.bytes) {
        literal(twice.bytes, (start, stop) => spans.push(spanOf(once.view(), ...spanOf(twice.view(), start, stop))))
      }
    }
    // Only a text with an escape or a plus can hold an encoded credential.
    if (text.includes("%") || text.includes("+")) spans.push(...encodedSpans(text, encoded))
    spans.sort((a, b) => a[0] - b[0])
    let out = ""
    let at = 0
    for (const [start, stop] of spans) {
      if (start >= end) break
      if (start >= at) out += `${text.slice(at, start)}<redacted>`
      at = Math.max(at, stop)
    }
    return at < end ? out + text.slice(at, end) : out
  }
}
