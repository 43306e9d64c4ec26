/**
 * Case generator of the webhook signature fuzz (test/security/webhooks-fuzz.test.ts).
 *
 * Every case is built from facts: which key signed which bytes under which algorithm, what reached the verifier and in
 * which form. Its label (`genuine`) says whether the verifier must accept it: the bytes given to it are exactly the
 * bytes signed, the key is one of the configured (non-empty) secrets, the algorithm is on the allow-list and announced
 * as such, and the signature headers carry that signature once. Benign variations (header name case, hex case,
 * surrounding blanks, the spelling of an allowed algorithm's name, the container of the headers, a string or a view
 * for the body, the form of the secrets) keep a case genuine; one hostile change makes it not genuine.
 */
import * as PlatformHeaders from "@effect/platform/Headers"
import * as FastCheck from "effect/FastCheck"
import * as Redacted from "effect/Redacted"
import { createHmac } from "node:crypto"
import * as Webhooks from "../../src/Webhooks.js"

const fc = FastCheck

const utf8 = new TextEncoder()
// `ignoreBOM`: a decoder that drops a leading byte order mark would never give a body starting with one as text.
const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

export const allowed: ReadonlyArray<string> = Webhooks.algorithms

/** HMAC algorithms node:crypto signs with that are not on the allow-list: a real HMAC under one must be refused. */
const refusedAlgorithms = ["sha1", "md5", "sha224", "sha3-256", "sha512-256"] as const

type SigningAlgorithm = Webhooks.Algorithm | typeof refusedAlgorithms[number]

export const hmac = (algorithm: string, key: string | Uint8Array, bytes: Uint8Array): Uint8Array =>
  new Uint8Array(createHmac(algorithm, typeof key === "string" ? Buffer.from(key, "utf8") : key).update(bytes).digest())

export const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b))

// --- Bodies ----------------------------------------------------------------------------------------------------------

/** A valid envelope with its event id (decoding must give back that id). */
interface ValidBody {
  readonly id: string
  readonly text: string
}

// Strings are drawn as arrays of characters: fast-check's string arbitraries spend most of their time on shrinking
// hints, which a 10,000-case run cannot afford.
const textOf = (chars: ReadonlyArray<string>, minLength: number, maxLength: number) =>
  fc.array(fc.constantFrom(...chars), { minLength, maxLength }).map((cs) => cs.join(""))

const textChars = [
  ..."abcxyzABCXYZ0189 _-.:/\\\"'{}[]<>%+&=?#@\n\t",
  ..."éßЖ密",
  "🔑",
  "\u0301",
  "\u200b",
  "\ufeff"
]

const text = (minLength: number, maxLength: number) => textOf(textChars, minLength, maxLength)

// Ids and types without the control characters of `textChars`, which make an envelope malformed.
const idText = (minLength: number, maxLength: number) =>
  textOf(textChars.filter((c) => c !== "\n" && c !== "\t"), minLength, maxLength)

const id = fc.oneof(fc.uuid(), idText(1, 24))

/** A JSON value of a few levels. */
const jsonValue: FastCheck.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    text(0, 12),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.array(fc.tuple(text(0, 6), tie("value")), { maxLength: 3 }).map((entries) => Object.fromEntries(entries))
  )
})).value

const createdAt = fc.tuple(
  fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 11, 31) }),
  fc.constantFrom("Z", "+00:00", "-05:30", "+0200"),
  fc.constantFrom("", ".1", ".843132", ".123456789")
).map(([ms, zone, fraction]) => new Date(ms).toISOString().slice(0, 19) + fraction + zone)

const beneficiaryData = fc.record({
  beneficiary_id: fc.uuid(),
  customer_id: fc.uuid(),
  type: fc.constantFrom("INDIVIDUAL", "BUSINESS"),
  active: fc.boolean(),
  status: fc.option(fc.constantFrom("PROCESSING", "ACTIVE", "INACTIVE", "REJECTED", "SUSPENDED"), { nil: undefined })
})

const eventOf = fc.oneof(
  fc.record({ type: fc.constant("beneficiary.status"), data: beneficiaryData as FastCheck.Arbitrary<unknown> }),
  fc.record({
    type: fc.oneof(fc.constantFrom(...Webhooks.documentedEventTypes), idText(1, 20)),
    data: jsonValue
  }).filter(({ type }) => type !== "beneficiary.status")
)

export const validBody: FastCheck.Arbitrary<ValidBody> = fc.record({
  id,
  reference: id,
  createdAt,
  sandbox: fc.option(fc.boolean(), { nil: undefined }),
  event: eventOf,
  layout: fc.constantFrom("compact", "pretty", "trailing newline")
}).map(({ createdAt, event, id, layout, reference, sandbox }) => {
  const value = {
    event: {
      id,
      event_reference_id: reference,
      type: event.type,
      created_at: createdAt,
      ...(sandbox === undefined ? {} : { sandbox_mode: sandbox })
    },
    data: event.data
  }
  const text = layout === "pretty"
    ? JSON.stringify(value, null, 2)
    : JSON.stringify(value) + (layout === "trailing newline" ? "\n" : "")
  return { id, text }
})

/** Anything at all as a body: random bytes (often not UTF-8), random text, random JSON, nothing. */
const randomBody: FastCheck.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 512 }),
  fc.array(fc.integer({ min: 0, max: 0x10ffff }), { maxLength: 128 }).map((points) =>
    utf8.encode(points.map((p) => String.fromCodePoint(p)).join(""))
  ),
  jsonValue.map((value) => utf8.encode(JSON.stringify(value))),
  fc.constant(new Uint8Array(0))
)

// --- Secrets ---------------------------------------------------------------------------------------------------------

// Secrets of printable characters, never NUL: HMAC pads short keys with zero bytes, so "k" and "k\0" are one key (a
// property of HMAC, not of this library), and a lone surrogate encodes like U+FFFD; neither is generated.
const randomSecret = text(1, 90).filter((s) => s.trim() !== "")

/**
 * The secrets a verifier may be configured with: a fixed pool, so that each is a key the crypto layers prepare once
 * (random current secrets would measure key import, not verification). Short, typical, non-ASCII, with blanks inside
 * (blanks around one are refused: see "no usable secret"), and longer than the block sizes of SHA-256 (64 bytes) and
 * SHA-384/512 (128 bytes), where HMAC hashes the key first.
 */
export const secretPool: ReadonlyArray<string> = [
  "whsec_3f9a0c5d7e1b4a2c8d6f0e9b7a5c3d1f",
  "k",
  "Zürich-Straße-密钥-🔑",
  "correct horse battery staple",
  "whsec inner\tblanks kept",
  "whsec_ABCdef_rotation_2026",
  "whsec_" + "0123456789abcdef".repeat(5),
  "whsec_" + "ЖжЯя".repeat(40)
]

/** Secrets that were current once and are not any more. */
const retiredSecret = fc.oneof(
  fc.constantFrom("whsec_retired_2025_q4", "whsec_3f9a0c5d7e1b4a2c8d6f0e9b7a5c3d1e", "whsec_abcDEF_rotation_2026"),
  randomSecret
)

/** One character different, a prefix, a suffix added, case changed, blanks added: keys that are not the secret. */
const nearMissChange = fc.oneof(
  fc.record({ kind: fc.constant("one character" as const), at: fc.nat(), c: fc.constantFrom(..."aAzZ09_-.~ éЖ") }),
  fc.record({ kind: fc.constant("prefix of it" as const), n: fc.nat() }),
  fc.record({ kind: fc.constant("suffix added" as const), s: fc.constantFrom("x", "=", " ", "\n", "1", "é") }),
  fc.record({ kind: fc.constant("prefix added" as const), s: fc.constantFrom("x", " ", "whsec_") }),
  fc.constant({ kind: "case changed" as const }),
  fc.constant({ kind: "blanks around" as const }),
  fc.constant({ kind: "trimmed" as const })
)

type NearMissChange = typeof nearMissChange extends FastCheck.Arbitrary<infer A> ? A : never

const nearMiss = (value: string, m: NearMissChange): string => {
  const chars = [...value]
  switch (m.kind) {
    case "one character": {
      const i = m.at % chars.length
      chars[i] = chars[i] === m.c ? (m.c === "a" ? "b" : "a") : m.c
      return chars.join("")
    }
    case "prefix of it":
      return chars.slice(0, m.n % chars.length).join("")
    case "suffix added":
      return value + m.s
    case "prefix added":
      return m.s + value
    case "case changed":
      return value.toUpperCase() === value ? value.toLowerCase() : value.toUpperCase()
    case "blanks around":
      return ` ${value} `
    case "trimmed":
      return value.trim()
  }
}

// --- Signature encodings and algorithm headers ------------------------------------------------------------------------

const hexChars = "0123456789abcdef"

const mixCase = (hex: string, mask: number) =>
  [...hex].map((c, i) => ((mask >> (i % 31)) & 1) === 1 ? c.toUpperCase() : c).join("")

/** Ways of writing the right signature that keep its value (hex is case-insensitive; blanks around are trimmed). */
const benignEncoding = fc.record({
  caseStyle: fc.constantFrom("lower", "upper", "mixed"),
  mask: fc.integer({ min: 0, max: 0x7fffffff }),
  pad: fc.constantFrom("", "", "", " ", "\t", "  ")
})

const encodeBenign = (mac: Uint8Array, e: typeof benignEncoding extends FastCheck.Arbitrary<infer A> ? A : never) => {
  const hex = toHex(mac)
  const cased = e.caseStyle === "lower" ? hex : e.caseStyle === "upper" ? hex.toUpperCase() : mixCase(hex, e.mask)
  return e.pad + cased + e.pad
}

const lookAlikes: Readonly<Record<string, ReadonlyArray<string>>> = {
  "0": ["O", "o", "\u0660", "\uff10"],
  "1": ["l", "I", "\uff11"],
  a: ["\u0430", "\uff41"],
  c: ["\u0441"],
  e: ["\u0435"],
  b: ["\u042c"]
}

/** Ways of changing the signature's value (each gives something that is not the right hex digest). */
const hostileEncoding = fc.oneof(
  fc.record({
    kind: fc.constant("change digit" as const),
    at: fc.nat(),
    delta: fc.integer({ min: 1, max: 15 }),
    mask: fc.integer({ min: 0, max: 0x7fffffff })
  }),
  fc.record({ kind: fc.constant("truncate end" as const), n: fc.integer({ min: 1, max: 200 }) }),
  fc.record({ kind: fc.constant("truncate start" as const), n: fc.integer({ min: 1, max: 200 }) }),
  fc.record({ kind: fc.constant("extend" as const), extra: textOf([...hexChars], 1, 64) }),
  fc.record({
    kind: fc.constant("random hex, same length" as const),
    seed: fc.uint8Array({ minLength: 64, maxLength: 64 })
  }),
  fc.record({ kind: fc.constant("random hex, any length" as const), hex: textOf([...hexChars, ..."ABCDEF"], 1, 160) }),
  fc.record({ kind: fc.constant("look-alike" as const), at: fc.nat(), pick: fc.nat() }),
  fc.record({ kind: fc.constant("prefix" as const), prefix: fc.constantFrom("sha256=", "0x", "v1=", "t=1,v1=", "hmac ") }),
  fc.record({ kind: fc.constant("base64" as const), url: fc.boolean() }),
  fc.record({
    kind: fc.constant("inner blank" as const),
    at: fc.nat(),
    blank: fc.constantFrom(" ", "\t", "\n", "\r\n", "\0", "\u200b")
  }),
  fc.constant({ kind: "reversed bytes" as const }),
  fc.constant({ kind: "all zeros" as const }),
  fc.constant({ kind: "empty" as const }),
  fc.constant({ kind: "missing" as const })
)

type HostileEncoding = typeof hostileEncoding extends FastCheck.Arbitrary<infer A> ? A : never

/** The header value (or `undefined`: no header) of a hostile encoding of `mac`. */
const encodeHostile = (mac: Uint8Array, e: HostileEncoding): string | undefined => {
  const hex = toHex(mac)
  switch (e.kind) {
    case "change digit": {
      const i = e.at % hex.length
      const digit = hexChars[(parseInt(hex[i]!, 16) + e.delta) % 16]!
      return mixCase(hex.slice(0, i) + digit + hex.slice(i + 1), e.mask)
    }
    case "truncate end":
      return hex.slice(0, Math.max(1, hex.length - e.n))
    case "truncate start":
      return hex.slice(Math.min(hex.length - 1, e.n))
    case "extend":
      return hex + e.extra
    case "random hex, same length": {
      const random = toHex(e.seed).slice(0, hex.length)
      return random === hex ? hex.replace(/^./, (c) => (c === "0" ? "1" : "0")) : random
    }
    case "random hex, any length":
      return e.hex.toLowerCase() === hex ? e.hex + "0" : e.hex
    case "look-alike": {
      const positions = [...hex].flatMap((c, i) => (c in lookAlikes ? [i] : []))
      if (positions.length === 0) return hex.slice(1) + "O"
      const i = positions[e.at % positions.length]!
      const options = lookAlikes[hex[i]!]!
      return hex.slice(0, i) + options[e.pick % options.length]! + hex.slice(i + 1)
    }
    case "prefix":
      return e.prefix + hex
    case "base64":
      return Buffer.from(mac).toString(e.url ? "base64url" : "base64")
    case "inner blank": {
      const i = 1 + (e.at % (hex.length - 1))
      return hex.slice(0, i) + e.blank + hex.slice(i)
    }
    case "reversed bytes": {
      const reversed = toHex(mac.slice().reverse())
      return reversed === hex ? "0".repeat(hex.length - 1) + "1" : reversed
    }
    case "all zeros":
      return hex === "0".repeat(hex.length) ? "1".repeat(hex.length) : "0".repeat(hex.length)
    case "empty":
      return ""
    case "missing":
      return undefined
  }
}

/** How an allowed algorithm may be announced: absent (sha256 only), canonical, any case, with blanks, empty (sha256). */
const announce = (algorithm: string, pick: number): string | undefined => {
  const spellings = [
    algorithm,
    algorithm.toUpperCase(),
    algorithm[0]!.toUpperCase() + algorithm.slice(1),
    algorithm + " ",
    `\t${algorithm} `,
    ...(algorithm === "sha256" ? [undefined, undefined, "", "  "] : [])
  ]
  return spellings[pick % spellings.length]
}

/** Names that are not an allowed algorithm (spellings of sha256 included): always refused. */
const weirdAlgorithmNames = [
  "sha-256", "SHA-256", "hmac-sha256", "HMAC-SHA256", "sha 256", "sha2", "sha256\0", "sha256,sha256", "sha256;",
  "\uff53\uff48\uff41\uff12\uff15\uff16", "\u0455ha256", "sh\u0430256", "sha256\u200b", "none", "null", "*", "sha", "256",
  "sha1", "md5", "sha224", "sha3-256", "sha512-256", "SHA1", "MD5", "RS256", "HS256"
] as const

// --- Header containers ----------------------------------------------------------------------------------------------

const nameCase = (name: string, mask: number, style: number) =>
  style === 0
    ? name
    : style === 1
    ? name.toUpperCase()
    : style === 2
    ? name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())
    : mixCase(name, mask)

const headerForm = fc.record({
  container: fc.constantFrom("record", "record", "platform Headers", "web Headers"),
  mask: fc.integer({ min: 0, max: 0x7fffffff }),
  signatureStyle: fc.integer({ min: 0, max: 3 }),
  algorithmStyle: fc.integer({ min: 0, max: 3 })
})

type HeaderForm = typeof headerForm extends FastCheck.Arbitrary<infer A> ? A : never

type Values = ReadonlyArray<readonly [string, string | ReadonlyArray<string>]>

/** Builds the headers in the chosen container; web Headers refuse some bytes, then a record is used. */
const buildHeaders = (entries: Values, form: HeaderForm): Webhooks.HeadersInput => {
  const record: Record<string, string | ReadonlyArray<string>> = {}
  for (const [name, value] of entries) record[name] = value
  if (form.container === "platform Headers") {
    return PlatformHeaders.fromInput(record as Record<string, string | ReadonlyArray<string>>)
  }
  if (form.container === "web Headers") {
    try {
      const headers = new Headers()
      for (const [name, value] of entries) {
        for (const one of typeof value === "string" ? [value] : value) headers.append(name, one)
      }
      return headers
    } catch {
      return record
    }
  }
  return record
}

// --- Cases -----------------------------------------------------------------------------------------------------------

export interface Case {
  /** What was done, for the report of a failing case. */
  readonly kind: string
  readonly body: Uint8Array | string
  readonly headers: Webhooks.HeadersInput
  readonly secrets: Webhooks.Secrets
  /** The raw current secrets, for the independent check of every acceptance. */
  readonly current: ReadonlyArray<string>
  /** Must be accepted: the signature is right for exactly these bytes under a current secret and an allowed algorithm. */
  readonly genuine: boolean
  /** Whether the body decodes as an envelope: known by construction, or `undefined` for random bodies. */
  readonly envelope: boolean | undefined
  /** The event id a genuine valid envelope decodes to. */
  readonly eventId?: string | undefined
}

/** How the verifier is given its secrets; `extraEmpty` adds an empty secret, which must never match anything. */
const secretsForm = fc.record({
  redacted: fc.boolean(),
  single: fc.boolean(),
  extraEmpty: fc.boolean(),
  reversed: fc.boolean()
})

type SecretsForm = typeof secretsForm extends FastCheck.Arbitrary<infer A> ? A : never

const configure = (current: ReadonlyArray<string>, form: SecretsForm): Webhooks.Secrets => {
  const ordered = form.reversed ? [...current].reverse() : [...current]
  const list: Array<string> = form.extraEmpty ? ["", ...ordered] : ordered
  const wrapped = list.map((s) => (form.redacted ? Redacted.make(s) : s))
  return form.single && wrapped.length === 1 ? wrapped[0]! : wrapped
}

/** The body as handed to `verify`: a string when it is UTF-8, else bytes; or a view into a larger buffer. */
const bodyForm = fc.constantFrom("bytes", "string", "view", "buffer")

const present = (bytes: Uint8Array, form: string): Uint8Array | string => {
  switch (form) {
    case "string": {
      try {
        const text = fatal.decode(bytes)
        if (sameBytes(utf8.encode(text), bytes)) return text
      } catch {
        // not UTF-8: bytes it is
      }
      return bytes
    }
    case "view": {
      const backing = new Uint8Array(bytes.length + 48).fill(0x7b)
      backing.set(bytes, 24)
      return backing.subarray(24, 24 + bytes.length)
    }
    case "buffer":
      return Buffer.from(bytes)
    default:
      return bytes.slice()
  }
}

/** Changes to the bytes after signing; each changes them. */
const bodyMutation = fc.oneof(
  fc.record({ kind: fc.constant("flip byte" as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant("flip bit" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant("insert byte" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("remove byte" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("append" as const), tail: fc.constantFrom("\n", " ", "\r\n", "\0", "{}", "\u00a0") }),
  fc.record({ kind: fc.constant("prepend" as const), head: fc.constantFrom(" ", "\ufeff", "\n") }),
  fc.record({ kind: fc.constant("truncate" as const), keep: fc.nat() }),
  fc.constant({ kind: "emptied" as const }),
  fc.constant({ kind: "reformatted" as const }),
  fc.record({
    kind: fc.constant("non-UTF-8 byte" as const),
    at: fc.nat(),
    // A stray byte, an overlong NUL, an encoded surrogate, a five-byte form, a lone continuation byte.
    bytes: fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80])
  })
)

type BodyMutation = typeof bodyMutation extends FastCheck.Arbitrary<infer A> ? A : never

const mutate = (bytes: Uint8Array, m: BodyMutation): Uint8Array => {
  const n = bytes.length
  switch (m.kind) {
    case "flip byte": {
      if (n === 0) return new Uint8Array([m.mask])
      const out = bytes.slice()
      out[m.at % n] = out[m.at % n]! ^ m.mask
      return out
    }
    case "flip bit": {
      if (n === 0) return new Uint8Array([1 << m.bit])
      const out = bytes.slice()
      out[m.at % n] = out[m.at % n]! ^ (1 << m.bit)
      return out
    }
    case "insert byte": {
      const at = m.at % (n + 1)
      return new Uint8Array([...bytes.subarray(0, at), m.byte, ...bytes.subarray(at)])
    }
    case "remove byte": {
      if (n === 0) return new Uint8Array([0x20])
      const at = m.at % n
      return new Uint8Array([...bytes.subarray(0, at), ...bytes.subarray(at + 1)])
    }
    case "append":
      return new Uint8Array([...bytes, ...utf8.encode(m.tail)])
    case "prepend":
      return new Uint8Array([...utf8.encode(m.head), ...bytes])
    case "truncate":
      return n === 0 ? new Uint8Array([0x7b]) : bytes.slice(0, m.keep % n)
    case "emptied":
      return n === 0 ? new Uint8Array([0x7b, 0x7d]) : new Uint8Array(0)
    case "reformatted": {
      // The same JSON value written differently: the signature covers bytes, not values.
      try {
        const value: unknown = JSON.parse(fatal.decode(bytes))
        const candidates = [JSON.stringify(value, null, 1), JSON.stringify(value), JSON.stringify(value, null, "\t")]
        for (const candidate of candidates) {
          const out = utf8.encode(candidate)
          if (!sameBytes(out, bytes)) return out
        }
      } catch {
        // not JSON
      }
      return new Uint8Array([...bytes, 0x20])
    }
    case "non-UTF-8 byte": {
      const at = m.at % (n + 1)
      return new Uint8Array([...bytes.subarray(0, at), ...m.bytes, ...bytes.subarray(at)])
    }
  }
}

/** Who signed: a current secret (genuine) or a key that must not verify. */
const signer = fc.oneof(
  { weight: 10, arbitrary: fc.record({ kind: fc.constant("current" as const), index: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("retired" as const) }) },
  // A secret of the pool that is not current in this case: one a verifier of this process was configured with
  // before (in earlier cases), and whose key it may still hold prepared. Rotated out, it must no longer verify.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("rotated out" as const), index: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("near miss" as const), index: fc.nat(), change: nearMissChange }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("empty key" as const) }) }
)

/** One hostile change, or none. */
const change = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: "none" as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("body" as const), mutation: bodyMutation }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("signature" as const), encoding: hostileEncoding }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("algorithm" as const),
      how: fc.oneof(
        // A valid HMAC under a refused algorithm, announced by its own name.
        fc.record({ kind: fc.constant("refused algorithm" as const), algorithm: fc.constantFrom(...refusedAlgorithms) }),
        // The right signature announced as another allowed algorithm.
        fc.record({ kind: fc.constant("announced as another" as const), pick: fc.nat() }),
        // A longer digest cut to the announced algorithm's length.
        fc.record({ kind: fc.constant("longer digest cut" as const) }),
        // The right signature with a name that is not on the list.
        fc.record({ kind: fc.constant("weird name" as const), name: fc.constantFrom(...weirdAlgorithmNames) })
      )
    })
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("duplicate" as const),
      header: fc.constantFrom("signature", "algorithm"),
      other: fc.constantFrom("same", "same", "wrong first", "wrong second"),
      // One name given a list, or (in a record) the two values under two spellings of the name.
      spelled: fc.constantFrom("one name" as const, "two names" as const)
    })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("no usable secret" as const),
      // None at all, only empty ones, or beside the current ones one padded by mistake (a file's newline).
      form: fc.constantFrom("none" as const, "empty" as const, "padded" as const)
    })
  }
)

/** A delivery of a valid envelope, or of random bytes, with at most one hostile change. */
export const caseArbitrary: FastCheck.Arbitrary<Case> = fc.record({
  current: fc.shuffledSubarray([...secretPool], { minLength: 1, maxLength: 3 }),
  retired: retiredSecret,
  body: fc.oneof({ weight: 4, arbitrary: validBody }, { weight: 1, arbitrary: randomBody }),
  algorithm: fc.constantFrom<Webhooks.Algorithm>("sha256", "sha256", "sha384", "sha512"),
  announced: fc.nat(),
  signer,
  change,
  encoding: benignEncoding,
  headerForm,
  secretsForm,
  bodyForm
}).map((drawn) => build(drawn))

type Drawn = {
  readonly current: ReadonlyArray<string>
  readonly retired: string
  readonly body: ValidBody | Uint8Array
  readonly algorithm: Webhooks.Algorithm
  readonly signer: typeof signer extends FastCheck.Arbitrary<infer A> ? A : never
  readonly change: typeof change extends FastCheck.Arbitrary<infer A> ? A : never
  readonly encoding: typeof benignEncoding extends FastCheck.Arbitrary<infer A> ? A : never
  readonly headerForm: HeaderForm
  readonly secretsForm: typeof secretsForm extends FastCheck.Arbitrary<infer A> ? A : never
  readonly bodyForm: string
  readonly announced: number
}

const build = (c: Drawn): Case => {
  const currentBytes = c.current.map((s) => utf8.encode(s))
  const isCurrentKey = (key: string) => key !== "" && currentBytes.some((k) => sameBytes(k, utf8.encode(key)))
  const signed = c.body instanceof Uint8Array ? c.body : utf8.encode(c.body.text)
  const envelopeKnown = c.body instanceof Uint8Array ? undefined : true
  const kinds: Array<string> = []

  // Who signs.
  let key: string
  switch (c.signer.kind) {
    case "current":
      key = c.current[c.signer.index % c.current.length]!
      break
    case "retired":
      key = c.retired
      kinds.push("retired secret")
      break
    case "rotated out": {
      const others = secretPool.filter((s) => !c.current.includes(s))
      key = others[c.signer.index % others.length]!
      kinds.push("rotated-out secret")
      break
    }
    case "near miss":
      key = nearMiss(c.current[c.signer.index % c.current.length]!, c.signer.change)
      kinds.push(`near-miss secret (${c.signer.change.kind})`)
      break
    case "empty key":
      key = ""
      kinds.push("empty key")
      break
  }
  let genuine = isCurrentKey(key)

  // What the sender signs with, what it announces, what reaches the verifier.
  let signingAlgorithm: SigningAlgorithm = c.algorithm
  let announced: string | undefined = announce(c.algorithm, c.announced)
  let sent = signed
  let envelope: boolean | undefined = envelopeKnown
  let encodeSignature = (mac: Uint8Array): string | undefined => encodeBenign(mac, c.encoding)
  let secrets: Webhooks.Secrets = configure(c.current, c.secretsForm)
  let duplicate: { readonly header: string; readonly other: string; readonly spelled: string } | undefined

  switch (c.change.kind) {
    case "none":
      break
    case "body":
      sent = mutate(signed, c.change.mutation)
      envelope = undefined
      genuine = genuine && sameBytes(sent, signed)
      kinds.push(`body: ${c.change.mutation.kind}`)
      break
    case "signature": {
      const encoding = c.change.encoding
      encodeSignature = (mac) => encodeHostile(mac, encoding)
      genuine = false
      kinds.push(`signature: ${encoding.kind}`)
      break
    }
    case "algorithm": {
      const how = c.change.how
      kinds.push(`algorithm: ${how.kind}`)
      genuine = false
      switch (how.kind) {
        case "refused algorithm":
          signingAlgorithm = how.algorithm
          announced = how.algorithm
          break
        case "announced as another": {
          const others = allowed.filter((a) => a !== c.algorithm)
          announced = others[how.pick % others.length]
          break
        }
        case "longer digest cut": {
          // A sha512 digest cut to the length of the announced sha256 or sha384.
          const announcedAlgorithm = c.algorithm === "sha512" ? "sha384" : c.algorithm
          signingAlgorithm = "sha512"
          announced = announcedAlgorithm
          const length = Webhooks.digestLength[announcedAlgorithm]
          const base = encodeSignature
          encodeSignature = (mac) => base(mac.slice(0, length))
          break
        }
        case "weird name":
          announced = how.name
          // Where the name is a real algorithm, the signature is a real HMAC under it.
          signingAlgorithm = refusedAlgorithms.find((a) => a === how.name.toLowerCase()) ?? signingAlgorithm
          break
      }
      break
    }
    case "duplicate":
      duplicate = c.change
      genuine = false
      kinds.push(`duplicate ${c.change.header} header (${c.change.other}, ${c.change.spelled})`)
      break
    case "no usable secret":
      secrets = c.change.form === "none"
        ? []
        : c.change.form === "empty"
        ? ["", Redacted.make("")]
        : [...c.current, `${c.current[0]!}\n`]
      genuine = false
      kinds.push(`no usable secret configured (${c.change.form})`)
      break
  }

  const mac = hmac(signingAlgorithm, key, signed)
  const signature = encodeSignature(mac)
  const wrong = encodeBenign(hmac(signingAlgorithm, key + "!", signed), c.encoding)
  const entries: Array<readonly [string, string | ReadonlyArray<string>]> = []
  const signatureName = nameCase(Webhooks.signatureHeader, c.headerForm.mask, c.headerForm.signatureStyle)
  const algorithmName = nameCase(Webhooks.algorithmHeader, c.headerForm.mask >> 3, c.headerForm.algorithmStyle)
  const twice = (value: string, wrongValue: string, other: string): ReadonlyArray<string> =>
    other === "same" ? [value, value] : other === "wrong first" ? [wrongValue, value] : [value, wrongValue]
  // Two spellings of one name only in a record: the other containers keep one entry per name.
  const otherSpelling = (name: string) => name === name.toUpperCase() ? name.toLowerCase() : name.toUpperCase()
  const pushTwice = (name: string, values: ReadonlyArray<string>) => {
    if (duplicate?.spelled === "two names" && c.headerForm.container === "record") {
      entries.push([name, values[0]!], [otherSpelling(name), values[1]!])
    } else {
      entries.push([name, values])
    }
  }
  if (signature !== undefined) {
    if (duplicate?.header === "signature") pushTwice(signatureName, twice(signature, wrong, duplicate.other))
    else entries.push([signatureName, signature])
  }
  if (duplicate?.header === "algorithm") {
    const value = announced ?? signingAlgorithm
    pushTwice(algorithmName, twice(value, value === "sha256" ? "sha512" : "sha256", duplicate.other))
  } else if (announced !== undefined) {
    entries.push([algorithmName, announced])
  }
  // Unrelated headers around them.
  entries.push(["content-type", "application/json"], ["x-fin-signature-version", "1"])

  const announcedAs = signature === undefined ? "" : ` as ${JSON.stringify(announced ?? null)}`
  const bodyKind = c.body instanceof Uint8Array ? "random body" : "envelope"
  kinds.unshift(`${bodyKind}, ${signingAlgorithm}${announcedAs}, ${c.headerForm.container}, ${c.bodyForm}`)
  return {
    kind: kinds.join("; "),
    body: present(sent, c.bodyForm),
    headers: buildHeaders(entries, c.headerForm),
    secrets,
    current: c.current,
    genuine,
    envelope,
    eventId: c.body instanceof Uint8Array ? undefined : c.body.id
  }
}

/**
 * The independent check of an acceptance: some current secret and some allowed algorithm give exactly the hex the
 * signature header carries (case and surrounding blanks aside) for exactly these bytes.
 */
export const signedByCurrent = (
  body: Uint8Array | string,
  headers: Webhooks.HeadersInput,
  current: ReadonlyArray<string>
): boolean => {
  const bytes = typeof body === "string" ? utf8.encode(body) : body
  const values: Array<string> = []
  if (headers instanceof Headers) {
    const value = headers.get(Webhooks.signatureHeader)
    if (value !== null) values.push(value)
  } else {
    for (const [name, value] of Object.entries(headers)) {
      if (name.toLowerCase() !== Webhooks.signatureHeader || value === undefined) continue
      for (const one of typeof value === "string" ? [value] : value) values.push(one)
    }
  }
  return values.some((value) => {
    const hex = value.trim().toLowerCase()
    return current.some((s) => s !== "" && allowed.some((algorithm) => toHex(hmac(algorithm, s, bytes)) === hex))
  })
}
