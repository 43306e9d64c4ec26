/**
 * The logic of `scripts/snapshot-subdivisions.ts`, importable by tests and later tools: read and validate a source,
 * build the normalised snapshot, serialise it deterministically, diff it against the committed one, write atomically.
 *
 * Pure parts return `Either`; everything that touches files or the network is an `Effect` failing with
 * `SnapshotError`. Nothing here is part of the library: the library only sees the generated files.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { writeFile as writeFd } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import * as CountryCode from "../../src/CountryCode.js"
import { fromParseIssue, told } from "../../src/internal/issues.js"
import * as Loopback from "../../src/internal/loopback.js"
import * as Timestamp from "../../src/internal/timestamp.js"
import {
  codeOrder,
  compareEntries,
  encodeRows,
  type EntriesDiff,
  isEmptyDiff,
  SnapshotSubdivision,
  type Subdivision,
  typeTable
} from "../../src/internal/subdivisions.js"
import { ExitCode, files } from "./files.js"

export { crossCheck, crossCheckCountry } from "../../src/internal/subdivisions.js"
export { defaultModulePath, ExitCode, files } from "./files.js"

/** Why the script stopped: always names the file (or URL), and for invalid data the path and what was expected. */
export class SnapshotError extends Data.TaggedError("SnapshotError")<{ readonly message: string }> {}

/** Country (alpha-3) -> its subdivisions. A full snapshot has all 249 countries, sorted, entries sorted by code. */
export type Snapshot = Readonly<Record<string, ReadonlyArray<SnapshotSubdivision>>>

const generator = "scripts/snapshot-subdivisions.ts"

// ---------------------------------------------------------------------------------------------------------------
// Validation of inputs
// ---------------------------------------------------------------------------------------------------------------

const Alpha2 = Schema.String.pipe(Schema.pattern(/^[A-Z]{2}$/, { title: "an ISO 3166-1 alpha-2 code" }))
const Alpha3 = Schema.String.pipe(Schema.pattern(/^[A-Z]{3}$/, { title: "an ISO 3166-1 alpha-3 code" }))

/** `iso_3166-1.json` of Debian iso-codes: only the fields the snapshot needs; others are ignored. */
export const IsoCodes31661 = Schema.Struct({
  "3166-1": Schema.Array(
    Schema.Struct({ alpha_2: Alpha2, alpha_3: Alpha3 }).annotations({ title: "a country {alpha_2, alpha_3, ...}" })
  ).annotations({ title: "an array of countries" })
}).annotations({ title: "an iso-codes ISO 3166-1 file {\"3166-1\": [...]}" })

/** `iso_3166-2.json` of Debian iso-codes. */
export const IsoCodes31662 = Schema.Struct({
  "3166-2": Schema.Array(SnapshotSubdivision).annotations({ title: "an array of subdivisions" })
}).annotations({ title: "an iso-codes ISO 3166-2 file {\"3166-2\": [...]}" })

/** The committed snapshot file, read leniently (any country keys) so that it can be diffed even when incomplete. */
export const SnapshotFile = Schema.Record({ key: Schema.String, value: Schema.Array(SnapshotSubdivision) })
  .annotations({ title: "a snapshot {ALPHA3: [subdivision, ...]}" })

/** `subdivisions.meta.json`. */
export const SnapshotMeta = Schema.Struct({
  source: Schema.String,
  sourceLocation: Schema.String,
  sourceVersion: Schema.String,
  sourceFiles: Schema.Record({ key: Schema.String, value: Schema.String }),
  generatedAt: Schema.String,
  generator: Schema.String,
  dataFile: Schema.String,
  sha256: Schema.String,
  countries: Schema.Number,
  subdivisions: Schema.Number,
  countriesWithout: Schema.Number,
  counts: Schema.Record({ key: Schema.String, value: Schema.Number })
})

/** @see SnapshotMeta */
export type SnapshotMeta = typeof SnapshotMeta.Type

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** JSON text -> value, or an error naming the file. */
export const parseJsonText = (text: string, label: string): Either.Either<unknown, SnapshotError> => {
  try {
    return Either.right(JSON.parse(text) as unknown)
  } catch (e) {
    return Either.left(new SnapshotError({ message: `${label}: not valid JSON (${errorText(e)})` }))
  }
}

/** Decodes with `schema`, reporting every failing path of `label` with what was expected there. */
export const decodeWith = <A, I>(
  schema: Schema.Schema<A, I>,
  value: unknown,
  label: string
): Either.Either<A, SnapshotError> =>
  Schema.decodeUnknownEither(schema, { errors: "all" })(value).pipe(
    Either.mapLeft((error) =>
      new SnapshotError({ message: `${label}: invalid data: ${told(fromParseIssue(error.issue)).summary}` })
    )
  )

// ---------------------------------------------------------------------------------------------------------------
// Building the snapshot
// ---------------------------------------------------------------------------------------------------------------

/** The normalised result of a source, whatever it was. */
export interface SourceData {
  readonly snapshot: Snapshot
  /** Codes dropped because their country is not one of the 249 of the interface. */
  readonly skipped: ReadonlyArray<string>
  /** SHA-256 of each input file (file name -> hex), for the meta file. */
  readonly inputs: Readonly<Record<string, string>>
}

// Fixed key order, `parent` only when present: the bytes of the output must not depend on the source's key order.
// Names in NFC, so one name is always the same bytes (a source may spell an accent as a separate combining mark).
const normaliseEntry = (entry: SnapshotSubdivision): SnapshotSubdivision => {
  const name = entry.name.normalize("NFC")
  return entry.parent === undefined
    ? { code: entry.code, name, type: entry.type }
    : { code: entry.code, name, type: entry.type, parent: entry.parent }
}

/**
 * Builds the snapshot from the two decoded-as-unknown iso-codes files. Checks beyond the shape: every country of the
 * interface is in ISO 3166-1 with the alpha-2 `CountryCode` knows, no code twice, every code's prefix is a country,
 * every parent exists and belongs to the same country.
 */
export const buildFromIsoCodes = (input: {
  readonly iso31661: unknown
  readonly iso31662: unknown
  readonly label31661: string
  readonly label31662: string
}): Either.Either<Omit<SourceData, "inputs">, SnapshotError> =>
  Either.gen(function*() {
    const countries = yield* decodeWith(IsoCodes31661, input.iso31661, input.label31661)
    const subdivisions = yield* decodeWith(IsoCodes31662, input.iso31662, input.label31662)
    const invalid = (label: string, message: string) =>
      Either.left(new SnapshotError({ message: `${label}: invalid data: ${message}` }))

    // Each code once: a repeated alpha-2 would give its subdivisions to whichever country was listed last.
    const alpha2To3 = new Map<string, string>()
    const alpha3Seen = new Set<string>()
    for (const [i, country] of countries["3166-1"].entries()) {
      for (const [field, code, seen] of [
        ["alpha_2", country.alpha_2, alpha2To3.has(country.alpha_2)],
        ["alpha_3", country.alpha_3, alpha3Seen.has(country.alpha_3)]
      ] as const) {
        if (seen) return yield* invalid(input.label31661, `3166-1[${i}].${field}: expected a code not used before ("${code}")`)
      }
      alpha2To3.set(country.alpha_2, country.alpha_3)
      alpha3Seen.add(country.alpha_3)
    }
    const listed = new Map<string, string>(countries["3166-1"].map((c) => [c.alpha_3, c.alpha_2]))
    for (const code of CountryCode.alpha3Codes) {
      const alpha2 = listed.get(code)
      if (alpha2 === undefined) {
        return yield* invalid(input.label31661, `no entry with alpha_3 "${code}" (a country of the interface)`)
      }
      if (alpha2 !== CountryCode.toAlpha2(code)) {
        const expected = CountryCode.toAlpha2(code)
        return yield* invalid(input.label31661, `alpha_3 "${code}" has alpha_2 "${alpha2}", expected "${expected}"`)
      }
    }

    const entries = subdivisions["3166-2"]
    const firstIndex = new Map<string, number>()
    for (let i = 0; i < entries.length; i++) {
      const code = entries[i]!.code
      const previous = firstIndex.get(code)
      if (previous !== undefined) {
        return yield* invalid(
          input.label31662,
          `3166-2[${i}].code: expected a code not used before (duplicate of 3166-2[${previous}])`
        )
      }
      firstIndex.set(code, i)
    }

    const snapshot: Record<string, Array<SnapshotSubdivision>> = {}
    for (const code of [...CountryCode.alpha3Codes].sort()) snapshot[code] = []
    const skipped: Array<string> = []
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!
      const prefix = entry.code.slice(0, 2)
      const alpha3 = alpha2To3.get(prefix)
      if (alpha3 === undefined) {
        return yield* invalid(
          input.label31662,
          `3166-2[${i}].code: expected a code starting with an alpha-2 code of ${input.label31661}`
        )
      }
      if (entry.parent !== undefined) {
        if (
          entry.parent === entry.code || !firstIndex.has(entry.parent) || !entry.parent.startsWith(`${prefix}-`)
        ) {
          return yield* invalid(
            input.label31662,
            `3166-2[${i}].parent: expected the code of another subdivision of the same country`
          )
        }
        // Up the chain of parents, which must end: a cycle would send anything that walks it round for ever.
        // (A parent that does not exist ends the walk: its own entry reports it.)
        const visited = new Set([entry.code])
        for (let up: string | undefined = entry.parent; up !== undefined;) {
          if (visited.has(up)) {
            return yield* invalid(
              input.label31662,
              `3166-2[${i}].parent: expected a chain of parents that ends (${up} comes back)`
            )
          }
          visited.add(up)
          const at = firstIndex.get(up)
          up = at === undefined ? undefined : entries[at]!.parent
        }
      }
      const list = snapshot[alpha3]
      if (list === undefined) skipped.push(entry.code)
      else list.push(normaliseEntry(entry))
    }
    for (const list of Object.values(snapshot)) list.sort(codeOrder)
    return { snapshot, skipped }
  })

// ---------------------------------------------------------------------------------------------------------------
// Serialisation
// ---------------------------------------------------------------------------------------------------------------

/**
 * The bytes of `subdivisions.json`: countries sorted by alpha-3, entries sorted by code, one entry per line (readable
 * diffs in review), keys in the order code, name, type, parent, UTF-8 without escapes, trailing newline.
 */
export const serializeSnapshot = (snapshot: Snapshot): string => {
  const countries = Object.keys(snapshot).sort()
  const lines: Array<string> = ["{"]
  countries.forEach((country, i) => {
    const comma = i < countries.length - 1 ? "," : ""
    const entries = [...snapshot[country]!].sort(codeOrder).map(normaliseEntry)
    if (entries.length === 0) {
      lines.push(`  ${JSON.stringify(country)}: []${comma}`)
      return
    }
    lines.push(`  ${JSON.stringify(country)}: [`)
    entries.forEach((entry, j) => lines.push(`    ${JSON.stringify(entry)}${j < entries.length - 1 ? "," : ""}`))
    lines.push(`  ]${comma}`)
  })
  lines.push("}")
  return `${lines.join("\n")}\n`
}

/** Reads a snapshot file's text back (validated). */
export const parseSnapshot = (text: string, label: string): Either.Either<Snapshot, SnapshotError> =>
  Either.flatMap(parseJsonText(text, label), (value) => decodeWith(SnapshotFile, value, label))

/** Hex SHA-256 of a UTF-8 string. */
export const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

/** The meta record of a data file. */
export const makeMeta = (options: {
  readonly source: string
  readonly sourceLocation: string
  readonly sourceVersion: string
  readonly inputs: Readonly<Record<string, string>>
  readonly generatedAt: string
  readonly snapshot: Snapshot
  readonly dataText: string
}): SnapshotMeta => {
  const countries = Object.keys(options.snapshot).sort()
  const counts: Record<string, number> = {}
  let subdivisions = 0
  let without = 0
  for (const country of countries) {
    const n = options.snapshot[country]!.length
    counts[country] = n
    subdivisions += n
    if (n === 0) without++
  }
  const inputs: Record<string, string> = {}
  for (const name of Object.keys(options.inputs).sort()) inputs[name] = options.inputs[name]!
  return {
    source: options.source,
    sourceLocation: options.sourceLocation,
    sourceVersion: options.sourceVersion,
    sourceFiles: inputs,
    generatedAt: options.generatedAt,
    generator,
    dataFile: files.data,
    sha256: sha256(options.dataText),
    countries: countries.length,
    subdivisions,
    countriesWithout: without,
    counts
  }
}

/** The bytes of `subdivisions.meta.json`. */
export const serializeMeta = (meta: SnapshotMeta): string => `${JSON.stringify(meta, null, 2)}\n`

/**
 * The fields of two metas that must agree for the snapshot to count as unchanged: all but `generatedAt` (time of the
 * run) and `sourceLocation` (the same files may sit at another path or URL).
 */
export const metaDifferences = (committed: SnapshotMeta, fresh: SnapshotMeta): ReadonlyArray<string> => {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)
  return Object.keys(SnapshotMeta.fields)
    .filter((key): key is keyof SnapshotMeta => key !== "generatedAt" && key !== "sourceLocation")
    .filter((key) => !same(committed[key], fresh[key]))
}

// Non-ASCII as \uXXXX: the generated module stays plain ASCII whatever encoding a tool assumes.
const toAsciiLiteral = (text: string): string =>
  JSON.stringify(text).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/**
 * The generated module `src/internal/subdivisionsData.ts`, made from the text of `subdivisions.json` (so it can only
 * say what the data file says, and where it came from: `origin`, as the meta file records it): a table of the types,
 * then one string per country, in the data file's order, holding the JSON of its rows (see `Row` in
 * src/internal/subdivisions.ts).
 *
 * Chosen by measuring bundled variants in fresh processes (2-CPU Xeon, Node 20, medians): the data file as one string
 * (326 kB bundled) imports in about 6 ms and parses in 6 more; one string of entry objects per country imports in
 * about 6 ms and the first lookup parses one country (0.2 ms); these compact rows (137 kB) import in about 3.5 ms,
 * first lookup 0.3 ms. bench/subdivisions.ts measures the result.
 */
export const generatedModule = (
  dataText: string,
  origin: { readonly source: string; readonly version: string }
): string => {
  const snapshot = JSON.parse(dataText) as Record<string, ReadonlyArray<SnapshotSubdivision>>
  const countries = Object.keys(snapshot)
  const types = typeTable(snapshot)
  const prefix = (country: string) => `${CountryCode.isCountryCode(country) ? CountryCode.toAlpha2(country) : "??"}-`
  return [
    "/**",
    ` * The offline ISO 3166-2 snapshot: the entries of data/${files.data}, one string of compact rows per country.`,
    ` * Generated by ${generator} from the data file with sha256`,
    ` * ${sha256(dataText)}; do not edit.`,
    " *",
    " * Strings rather than object literals or a JSON import: the module loads fast (only the literals are scanned),",
    " * each country is JSON.parse'd on its first lookup, and bundlers inline it into ESM and CommonJS alike (no fs).",
    " *",
    " * @internal",
    " */",
    "",
    // A legal comment: bundlers keep it (esbuild at the end of the file holding this data), so built code and apps
    // that bundle it carry the data's attribution.
    "/*! ISO 3166-2 subdivisions from Debian iso-codes (LGPL-2.1-or-later; source and version in effect-fin's",
    "    data/subdivisions.meta.json, licence and notice in its data/ folder). */",
    "",
    "/** @internal */",
    "export const provenance: { readonly source: string; readonly version: string; readonly sha256: string } =",
    "  Object.freeze({",
    `    source: ${toAsciiLiteral(origin.source)},`,
    `    version: ${toAsciiLiteral(origin.version)},`,
    `    sha256: ${toAsciiLiteral(sha256(dataText))}`,
    "  })",
    "",
    "/** @internal */",
    "export const types: ReadonlyArray<string> = [",
    ...types.map((type, i) => `  ${toAsciiLiteral(type)}${i < types.length - 1 ? "," : ""}`),
    "]",
    "",
    "/** @internal */",
    "export const subdivisionsData: { readonly [alpha3: string]: string } = {",
    ...countries.map((country, i) =>
      `  ${country}: ${toAsciiLiteral(encodeRows(snapshot[country]!, prefix(country), types))}${
        i < countries.length - 1 ? "," : ""
      }`
    ),
    "}",
    ""
  ].join("\n")
}

// ---------------------------------------------------------------------------------------------------------------
// Diff
// ---------------------------------------------------------------------------------------------------------------

/** Per-country changes between two snapshots, only countries that changed, sorted; plus totals. */
export interface SnapshotDiff {
  readonly countries: ReadonlyArray<EntriesDiff<SnapshotSubdivision> & { readonly country: string }>
  readonly totals: {
    readonly countries: number
    readonly added: number
    readonly removed: number
    readonly renamed: number
    readonly changed: number
  }
}

/** Compares two snapshots country by country; a country absent on one side counts as empty there. */
export const diffSnapshots = (before: Snapshot, after: Snapshot): SnapshotDiff => {
  const countries = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()
  const changed: Array<EntriesDiff<SnapshotSubdivision> & { readonly country: string }> = []
  const totals = { countries: 0, added: 0, removed: 0, renamed: 0, changed: 0 }
  for (const country of countries) {
    const diff = compareEntries(before[country] ?? [], after[country] ?? [])
    if (isEmptyDiff(diff)) continue
    changed.push({ country, ...diff })
    totals.countries++
    totals.added += diff.added.length
    totals.removed += diff.removed.length
    totals.renamed += diff.renamed.length
    totals.changed += diff.changed.length
  }
  return { countries: changed, totals }
}

const describeEntry = (e: SnapshotSubdivision): string =>
  `${e.name} (${e.type || "no type"}${e.parent === undefined ? "" : `, in ${e.parent}`})`

/** The diff as text: one block per country (`+` added, `-` removed, `~` renamed, `*` type or parent changed). */
export const formatDiff = (diff: SnapshotDiff, options: { readonly listEntries?: boolean } = {}): string => {
  const lines: Array<string> = []
  const list = options.listEntries ?? true
  for (const c of diff.countries) {
    lines.push(
      `${c.country}  +${c.added.length} -${c.removed.length} ~${c.renamed.length}${
        c.changed.length > 0 ? ` *${c.changed.length}` : ""
      }`
    )
    if (!list) continue
    for (const e of c.added) lines.push(`  + ${e.code.padEnd(7)} ${describeEntry(e)}`)
    for (const e of c.removed) lines.push(`  - ${e.code.padEnd(7)} ${describeEntry(e)}`)
    for (const r of c.renamed) lines.push(`  ~ ${r.code.padEnd(7)} ${r.from} -> ${r.to}`)
    for (const ch of c.changed) {
      lines.push(`  * ${ch.code.padEnd(7)} ${describeEntry(ch.before)} -> ${describeEntry(ch.after)}`)
    }
  }
  const t = diff.totals
  const countries = `${t.countries} ${t.countries === 1 ? "country" : "countries"}`
  lines.push(
    `Total: ${countries} changed; ${t.added} added, ${t.removed} removed, ${t.renamed} renamed, ` +
      `${t.changed} with another type or parent`
  )
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------------------------

/**
 * Where a snapshot comes from. Every source yields the same normalised `SourceData`, so the rest of the pipeline
 * (diff, meta, write) does not care: iso-codes files (`fromIsoCodes`) or the live API (`fromApi`).
 */
export interface SnapshotSource<R = never> {
  /** Recorded as `source` in the meta, e.g. `"iso-codes"` or `"api"`. */
  readonly source: string
  /** Recorded as `sourceLocation`: the folder, base URL or API environment. */
  readonly location: string
  /** Recorded as `sourceVersion`. */
  readonly version: string
  readonly load: Effect.Effect<SourceData, SnapshotError, R>
}

const isUrl = (location: string): boolean => /^https?:\/\//i.test(location)

/**
 * Limits of a source read over http(s): what it reads becomes the data every lookup falls back on, and a run in CI
 * must end. Defaults: 60 seconds for each file, whole, and 64 MiB (iso_3166-2.json is about 0.5 MB).
 */
export interface DownloadLimits {
  readonly timeout?: Duration.DurationInput | undefined
  readonly maxBytes?: number | undefined
}

// The body, up to `maxBytes`: a larger one fails as it arrives, never buffered whole.
const boundedText = async (response: Response, maxBytes: number): Promise<string> => {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN)
  if (declared > maxBytes) throw new Error(`larger than ${maxBytes} bytes`)
  const chunks: Array<Uint8Array> = []
  let size = 0
  const reader = response.body?.getReader()
  for (let read = await reader?.read(); read !== undefined && !read.done; read = await reader?.read()) {
    size += read.value.byteLength
    if (size > maxBytes) {
      await reader?.cancel()
      throw new Error(`larger than ${maxBytes} bytes`)
    }
    chunks.push(read.value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

/** Reads one file of a folder or an http(s) base URL as text. */
export const readSourceFile = (
  location: string,
  file: string,
  limits: DownloadLimits = {}
): Effect.Effect<string, SnapshotError> => {
  if (isUrl(location)) {
    const url = new URL(file, location.endsWith("/") ? location : `${location}/`)
    // Over a network only with TLS: a file changed on the way would become the offline data.
    if (!Loopback.isSecureOrLocal(url)) {
      return Effect.fail(new SnapshotError({ message: `${url}: plain http is read only on loopback; use https` }))
    }
    const timeout = limits.timeout ?? "60 seconds"
    const maxBytes = limits.maxBytes ?? 64 * 1024 * 1024
    // NaN would pass every size check below: the cap would be off.
    if (!(maxBytes >= 0)) {
      return Effect.fail(new SnapshotError({ message: `${url}: maxBytes must be a number of bytes, got ${maxBytes}` }))
    }
    return Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(url, { signal })
        // A redirect is followed: where it ended must meet the same rule (an https source moved to plain http).
        const final = new URL(response.url)
        if (!Loopback.isSecureOrLocal(final)) {
          await response.body?.cancel()
          throw new Error(`redirected to ${final.origin}: plain http is read only on loopback`)
        }
        if (!response.ok) throw new Error(`HTTP ${response.status}`)
        return await boundedText(response, maxBytes)
      },
      catch: (e) => new SnapshotError({ message: `${url}: cannot fetch (${errorText(e)})` })
    }).pipe(Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => new SnapshotError({ message: `${url}: not read within ${Duration.format(timeout)}` })
    }))
  }
  const path = Path.join(location, file)
  return Effect.tryPromise({
    try: () => Fs.readFile(path, "utf8"),
    catch: (e) =>
      new SnapshotError({
        message: `${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? errorText(e)})`
      })
  })
}

// A folder inside the working directory is recorded relative to it, with `/`, so the meta does not depend on where
// the repository was checked out.
const recordedLocation = (location: string): string => {
  if (isUrl(location)) return location
  const relative = Path.relative(process.cwd(), Path.resolve(location))
  return relative !== "" && !relative.startsWith("..") && !Path.isAbsolute(relative)
    ? relative.split(Path.sep).join("/")
    : location
}

/**
 * The SHA-256 of the published iso-codes files, by release: a copy given as one of these releases must be it. Without
 * this, an edited copy (or another release) rebuilt under the release's name would record its own hashes as the
 * release's, and `--check` would then pass on it.
 */
export const publishedInputs: { readonly [version: string]: { readonly [file: string]: string } } = {
  "4.20": {
    [files.iso31661]: "f01b812b57fba9f31ff621bf33e7c7570a01964dbeb5be2167e94decf538c89f",
    [files.iso31662]: "78c90ef7fc25b5c2631aac5f089bc9ff6ec22c025c05b6ddbc087a1f1be2e46a"
  }
}

// A file given as a published release's that is not that release's file (an edited copy, another release).
const notPublished = (
  version: string,
  label: string,
  file: string,
  text: string
): Either.Either<void, SnapshotError> => {
  const published = publishedInputs[version]?.[file]
  const actual = sha256(text)
  return published === undefined || published === actual ? Either.void : Either.left(
    new SnapshotError({
      message: `${label} is not iso-codes ${version}'s ${file} (SHA-256 ${actual}, published ${published}): an ` +
        `edited copy, or another release (give that release's --source-version), or line endings changed on checkout`
    })
  )
}

/**
 * Debian iso-codes' `iso_3166-1.json` and `iso_3166-2.json` in a folder or under an http(s) base URL (read within
 * `limits`). Files given as a release listed in `publishedInputs` must be that release's.
 */
export const fromIsoCodes = (location: string, version: string, limits?: DownloadLimits): SnapshotSource => ({
  source: "iso-codes",
  location: recordedLocation(location),
  version,
  load: Effect.gen(function*() {
    // One after the other: with both missing, the error always names the first.
    const text1 = yield* readSourceFile(location, files.iso31661, limits)
    const text2 = yield* readSourceFile(location, files.iso31662, limits)
    const label = (file: string) =>
      isUrl(location) ? new URL(file, `${location.replace(/\/$/, "")}/`).toString() : Path.join(location, file)
    yield* notPublished(version, label(files.iso31661), files.iso31661, text1)
    yield* notPublished(version, label(files.iso31662), files.iso31662, text2)
    const iso31661 = yield* parseJsonText(text1, label(files.iso31661))
    const iso31662 = yield* parseJsonText(text2, label(files.iso31662))
    const built = yield* buildFromIsoCodes({
      iso31661,
      iso31662,
      label31661: label(files.iso31661),
      label31662: label(files.iso31662)
    })
    return { ...built, inputs: { [files.iso31661]: sha256(text1), [files.iso31662]: sha256(text2) } }
  })
})

/**
 * A snapshot from the live service, given a way to list one country (in the script, `SubdivisionService.list` in mode
 * `"online"`, see `api.ts`). The API returns only `code` and `name`, so `type` and `parent` are taken from the API when
 * present, else from `previous` (the committed snapshot) for the same code (a parent only if the API still lists it),
 * else `type` is empty and `parent` absent. Entries are validated like any other source: codes of the country's own
 * alpha-2 prefix, none twice, parents of the same country. Countries are asked `concurrency` at a time (default 1);
 * the first failure interrupts the others and fails the load, so a partial snapshot never reaches the writer.
 */
export const fromApi = <E, R>(options: {
  readonly location: string
  readonly version: string
  readonly list: (country: CountryCode.CountryCode) => Effect.Effect<ReadonlyArray<Subdivision>, E, R>
  readonly previous?: Snapshot
  readonly describeError?: (error: E) => string
  readonly concurrency?: number
  /** Called after each country, with how many are done out of how many. */
  readonly onProgress?: (done: number, total: number) => void
}): SnapshotSource<R> => ({
  source: "api",
  location: options.location,
  version: options.version,
  load: Effect.gen(function*() {
    const countries = [...CountryCode.alpha3Codes].sort()
    let done = 0
    const lists = yield* Effect.forEach(
      countries,
      (country) =>
        Effect.gen(function*() {
          const label = `${options.location} ${country}`
          const listed = yield* options.list(country).pipe(
            Effect.mapError((e) =>
              new SnapshotError({
                message: `${label}: ${options.describeError ? options.describeError(e) : String(e)}`
              })
            )
          )
          const entries = yield* mergeApiEntries(country, listed, options.previous?.[country] ?? [], label)
          done++
          options.onProgress?.(done, countries.length)
          return [country, entries] as const
        }),
      { concurrency: options.concurrency ?? 1 }
    )
    const snapshot: Record<string, ReadonlyArray<SnapshotSubdivision>> = {}
    for (const [country, entries] of lists) snapshot[country] = entries
    return { snapshot, skipped: [], inputs: {} }
  })
})

/** One country of the API, completed from `known` (the previous snapshot's entries) and validated; sorted by code. */
export const mergeApiEntries = (
  country: CountryCode.CountryCode,
  listed: ReadonlyArray<Subdivision>,
  known: ReadonlyArray<SnapshotSubdivision>,
  label: string
): Either.Either<ReadonlyArray<SnapshotSubdivision>, SnapshotError> =>
  Either.gen(function*() {
    const codes = new Set(listed.map((e) => e.code))
    const previous = new Map(known.map((e) => [e.code, e]))
    const merged = listed.map((e) => {
      const kept = previous.get(e.code)?.parent
      const parent = e.parent ?? (kept !== undefined && codes.has(kept) ? kept : undefined)
      const type = e.type ?? previous.get(e.code)?.type ?? ""
      return parent === undefined
        ? { code: e.code, name: e.name, type }
        : { code: e.code, name: e.name, type, parent }
    })
    const entries = yield* decodeWith(Schema.Array(SnapshotSubdivision), merged, label)
    const prefix = `${CountryCode.toAlpha2(country)}-`
    const seen = new Set<string>()
    for (const [i, entry] of entries.entries()) {
      const invalid = (field: string, expected: string) =>
        Either.left(new SnapshotError({ message: `${label}: invalid data: [${i}].${field}: expected ${expected}` }))
      if (!entry.code.startsWith(prefix)) return yield* invalid("code", `a code starting with ${prefix}`)
      if (seen.has(entry.code)) return yield* invalid("code", "a code not used before")
      seen.add(entry.code)
      if (entry.parent !== undefined && (!codes.has(entry.parent) || entry.parent === entry.code)) {
        return yield* invalid("parent", "the code of another subdivision of the same country")
      }
    }
    return [...entries].sort(codeOrder)
  })

// ---------------------------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------------------------

/** What the CLI asks for. */
export interface RunOptions<R = never> {
  readonly source: SnapshotSource<R>
  /** Folder of `subdivisions.json` and `subdivisions.meta.json`. */
  readonly outDir: string
  /** Path of the generated module. */
  readonly modulePath: string
  /** ISO 8601 time recorded in the meta. */
  readonly generatedAt: string
  /** Write nothing; exit 1 on any difference. */
  readonly check: boolean
  /** Write nothing; print the diff. */
  readonly dryRun: boolean
  /** Where the report goes (one call per block of text). */
  readonly log: (text: string) => void
  /** Write even when the source lists no subdivisions for a country the snapshot has some for. */
  readonly allowEmptied?: boolean | undefined
  /**
   * The snapshot a source that lists no subdivisions is measured against when `outDir` holds none (the bundled one an
   * installed `--from-api` takes types and parents from).
   */
  readonly baseline?: Snapshot | undefined
  /** What the refusal calls `baseline`. Default: the bundled snapshot. */
  readonly baselineName?: string | undefined
  /**
   * Under `check`, a module missing at `modulePath` is no difference: the installed command's `--out` may be the
   * package's data/, which ships without one (its modules are built). Default: false.
   */
  readonly moduleOptional?: boolean | undefined
}

// The entries per country of a snapshot file that does not decode (an entry a newer rule refuses, say): any JSON
// object of arrays; undefined when it is not even that.
const leniently = (text: string): Record<string, number> | undefined => {
  const value = Either.getOrUndefined(parseJsonText(text, ""))
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined
  const counts: Record<string, number> = {}
  for (const [country, list] of Object.entries(value)) if (Array.isArray(list)) counts[country] = list.length
  return counts
}

/**
 * What the diff cannot show of a committed snapshot that decodes: a code listed twice in a country (the diff keys by
 * code, so the repeat vanishes or reads as a rename) or under a country whose alpha-2 it does not start with. One line
 * each, in country order.
 */
export const snapshotProblems = (snapshot: Snapshot): ReadonlyArray<string> => {
  const problems: Array<string> = []
  for (const country of Object.keys(snapshot).sort()) {
    const prefix = CountryCode.isCountryCode(country) ? `${CountryCode.toAlpha2(country)}-` : undefined
    const times = new Map<string, number>()
    for (const entry of snapshot[country]!) {
      times.set(entry.code, (times.get(entry.code) ?? 0) + 1)
      if (prefix !== undefined && !entry.code.startsWith(prefix)) {
        problems.push(`${country} lists ${entry.code}, a code of another country (expected ${prefix}...)`)
      }
    }
    for (const [code, n] of times) if (n > 1) problems.push(`${country} lists ${code} ${n} times`)
  }
  return problems
}

const entriesPer = (snapshot: Snapshot): Readonly<Record<string, number>> =>
  Object.fromEntries(Object.entries(snapshot).map(([country, list]) => [country, list.length]))

// The per-country counts of a meta file that decodes; undefined otherwise.
const metaCounts = (text: string | undefined, label: string): Record<string, number> | undefined =>
  text === undefined
    ? undefined
    : Either.getOrUndefined(
      Either.flatMap(parseJsonText(text, label), (value) => decodeWith(SnapshotMeta, value, label))
    )?.counts

const readOptional = (path: string): Effect.Effect<string | undefined, SnapshotError> =>
  Effect.tryPromise({
    try: () => Fs.readFile(path, "utf8"),
    catch: (e) => e as NodeJS.ErrnoException
  }).pipe(
    Effect.catchAll((e) =>
      e.code === "ENOENT"
        ? Effect.succeed(undefined)
        : Effect.fail(new SnapshotError({ message: `${path}: cannot read (${e.code ?? e.message})` }))
    )
  )

// The file `path` names, through any symlinks: one that does not exist yet is itself; a symlink to nothing yet is the
// file it names (written there, the symlink kept), its own symlinks followed too (at most 40, as the system does).
const realPath = async (path: string, hops = 0): Promise<string> => {
  try {
    return await Fs.realpath(path)
  } catch {
    const resolved = Path.resolve(path)
    if (hops >= 40) return resolved
    const target = await Fs.readlink(resolved).catch(() => undefined)
    return target === undefined
      ? Path.join(await realPath(Path.dirname(resolved), hops + 1), Path.basename(resolved))
      : realPath(Path.resolve(Path.dirname(resolved), target), hops + 1)
  }
}

// The open file descriptor a path names (`/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/1`): written through that
// descriptor, at its offset (appending under `>>`), never reopened (which truncates) nor resolved to the file it is
// open on and renamed over (the shell's redirect target replaced, what the tool printed to it lost).
const descriptorOf = (path: string): number | undefined => {
  const resolved = Path.resolve(path)
  if (resolved === "/dev/stdout") return 1
  if (resolved === "/dev/stderr") return 2
  const fd = /^\/(?:dev\/fd|proc\/self\/fd)\/(\d+)$/.exec(resolved)
  return fd === null ? undefined : Number(fd[1])
}

/** `realPath` as an effect. */
export const realPathOf = (path: string): Effect.Effect<string> => Effect.promise(() => realPath(path))

/**
 * Writes every file to a temporary sibling first and renames only once all are written, so a failure leaves the
 * committed files as they were (each rename is atomic on one file system). A target that is not a regular file is
 * written, never replaced: a symlink's target is the file written (its temporary file beside it), a device or a FIFO
 * (`--report /dev/null`) is written in place (renamed over, as root, /dev/null became a regular file), a descriptor's
 * path (`/dev/stdout`) through that descriptor.
 * `what` names the files in a failure.
 */
export const writeFilesAtomically = (
  targets: ReadonlyArray<{ readonly path: string; readonly content: string }>,
  what: "the snapshot" | "the report" = "the snapshot"
): Effect.Effect<void, SnapshotError> => {
  let temps: ReadonlyArray<{ readonly path: string; readonly content: string; readonly temp: string }> = []
  const cleanup = Effect.promise(() => Promise.all(temps.map((t) => Fs.rm(t.temp, { force: true }))))
  // Two files for one path (`--module` naming the data or meta file) would share a temporary file: the second would
  // replace the first's target, then fail its own rename, after "nothing was written".
  const paths = targets.map((t) => Path.resolve(t.path))
  const twice = paths.find((path, i) => paths.indexOf(path) !== i)
  if (twice !== undefined) {
    return Effect.fail(new SnapshotError({ message: `cannot write ${what}: two of its files would be ${twice}` }))
  }
  return Effect.tryPromise({
    try: async () => {
      const resolved = await Promise.all(targets.map(async (t) => {
        const fd = descriptorOf(t.path)
        if (fd !== undefined) return { ...t, fd, inPlace: true }
        const path = await realPath(t.path)
        const stat = await Fs.stat(path).catch(() => undefined)
        return { ...t, path, fd, inPlace: stat !== undefined && !stat.isFile() }
      }))
      temps = resolved.filter((t) => !t.inPlace).map((t) => ({
        ...t,
        temp: Path.join(Path.dirname(t.path), `.${Path.basename(t.path)}.${process.pid}.tmp`)
      }))
      for (const t of temps) {
        await Fs.mkdir(Path.dirname(t.path), { recursive: true })
        await Fs.writeFile(t.temp, t.content, "utf8")
      }
      for (const t of temps) await Fs.rename(t.temp, t.path)
      for (const t of resolved) {
        if (t.fd !== undefined) {
          const fd = t.fd
          await new Promise<void>((resolve, reject) =>
            writeFd(fd, t.content, "utf8", (error) => error === null ? resolve() : reject(error))
          )
        } else if (t.inPlace) await Fs.writeFile(t.path, t.content, "utf8")
      }
    },
    catch: (e) => new SnapshotError({ message: `cannot write ${what} (${errorText(e)})` })
  }).pipe(Effect.tapError(() => cleanup))
}

/**
 * Loads the source, prints the diff against the committed snapshot, then writes (unless `check` or `dryRun`).
 * Fails with `SnapshotError` (before writing anything) when the source or the output cannot be used.
 */
export const run = <R>(options: RunOptions<R>): Effect.Effect<number, SnapshotError, R> =>
  Effect.gen(function*() {
    const loaded = yield* options.source.load
    const dataText = serializeSnapshot(loaded.snapshot)
    const meta = makeMeta({
      source: options.source.source,
      sourceLocation: options.source.location,
      sourceVersion: options.source.version,
      inputs: loaded.inputs,
      generatedAt: options.generatedAt,
      snapshot: loaded.snapshot,
      dataText
    })
    const moduleText = generatedModule(dataText, { source: options.source.source, version: options.source.version })

    const dataPath = Path.join(options.outDir, files.data)
    const metaPath = Path.join(options.outDir, files.meta)
    const [committedData, committedMeta, committedModule] = yield* Effect.all([
      readOptional(dataPath),
      readOptional(metaPath),
      readOptional(options.modulePath)
    ])

    const { log } = options
    log(
      `Source: ${meta.source} ${meta.sourceVersion} (${meta.sourceLocation}): ${meta.subdivisions} subdivisions, ${
        meta.countries - meta.countriesWithout
      } of ${meta.countries} countries with subdivisions`
    )
    if (loaded.skipped.length > 0) {
      log(`Skipped ${loaded.skipped.length} subdivisions of countries outside the interface's list`)
    }

    // The diff is against what is committed; a missing or unreadable file is itself a difference.
    let before: Snapshot = {}
    // How many entries each country had: from the snapshot when it is usable, else from what can still be read of
    // it, else from its meta, so that a committed file with one bad entry does not switch off the check below; with
    // no snapshot in `outDir`, from the baseline (the bundled or committed one), so that a first run is checked too.
    let countsBefore = entriesPer(options.baseline ?? {})
    // What the counts are of, for the refusal: with no snapshot at `dataPath`, not a snapshot "there".
    let countedIn = "the snapshot"
    let usable = false
    let dataDiffers = committedData !== dataText
    if (committedData === undefined) {
      log(`No snapshot at ${dataPath}; every entry is new:`)
      countedIn = `${options.baselineName ?? "the bundled snapshot"} (none is in the output directory yet)`
    } else {
      const parsed = parseSnapshot(committedData, dataPath)
      if (Either.isLeft(parsed)) {
        log(`The snapshot at ${dataPath} is unusable (${parsed.left.message}); diffing against an empty one:`)
        countsBefore = leniently(committedData) ?? metaCounts(committedMeta, metaPath) ?? {}
      } else {
        before = parsed.right
        countsBefore = entriesPer(before)
        const problems = snapshotProblems(before)
        usable = problems.length === 0
        for (const problem of problems) log(`${dataPath}: ${problem}`)
        log(`Changes against ${dataPath}:`)
      }
    }
    const diff = diffSnapshots(before, loaded.snapshot)
    log(formatDiff(diff, { listEntries: committedData !== undefined }))
    if (usable && dataDiffers && diff.totals.countries === 0) {
      log(`${dataPath}: same entries, other bytes (formatting)`)
    }
    // A country that had subdivisions and has none in the source: far more likely a source that lost data (an empty
    // file, a bad upstream change, an API answering []) than a country that lost them all.
    const emptied = Object.keys(countsBefore).filter((country) =>
      countsBefore[country]! > 0 && (loaded.snapshot[country]?.length ?? 0) === 0
    ).sort()
    const emptiedRefusal = emptied.length === 0 || options.allowEmptied === true ? undefined : `${dataPath}: ` +
      `the source lists no subdivisions for ${emptied.length === 1 ? "1 country" : `${emptied.length} countries`} (${
        emptied.slice(0, 10).join(", ")
      }${emptied.length > 10 ? ", ..." : ""}) that ${countedIn} has some for: refused as a source that lost data; ` +
      "pass --allow-emptied if they did lose them all"

    let metaDiffers = true
    if (committedMeta !== undefined) {
      const parsedMeta = Either.flatMap(
        parseJsonText(committedMeta, metaPath),
        (value) => decodeWith(SnapshotMeta, value, metaPath)
      )
      if (Either.isLeft(parsedMeta)) log(parsedMeta.left.message)
      else {
        const fields = metaDifferences(parsedMeta.right, meta)
        // The same fields in other bytes (another layout, a key the meta does not have, which decoding drops, a
        // generatedAt that is no time) differ too: `--check` passes only on the file this run would write.
        const { generatedAt, sourceLocation } = parsedMeta.right
        const sameBytes = Timestamp.toMillis(generatedAt) !== undefined &&
          serializeMeta({ ...meta, generatedAt, sourceLocation }) === committedMeta
        metaDiffers = fields.length > 0 || !sameBytes
        if (fields.length > 0) log(`${metaPath}: differs in ${fields.join(", ")}`)
        else if (!sameBytes) {
          log(`${metaPath}: same fields, other bytes (layout, a key of its own, or a generatedAt that is no ISO time)`)
        }
      }
    } else log(`No meta file at ${metaPath}`)
    const unchecked = options.check && options.moduleOptional === true && committedModule === undefined
    const moduleDiffers = committedModule !== moduleText && !unchecked
    if (unchecked) log(`${options.modulePath}: none (a package's data/ ships without one); not checked`)
    if (moduleDiffers) {
      log(`${options.modulePath}: ${committedModule === undefined ? "missing" : "not in sync with the data"}`)
    }

    const differs = dataDiffers || metaDiffers || moduleDiffers
    if (options.check) {
      if (emptiedRefusal !== undefined) log(emptiedRefusal)
      log(`Check: the committed snapshot ${differs ? "differs from the source" : "is up to date"}.`)
      return differs ? ExitCode.differences : ExitCode.ok
    }
    if (!differs) {
      log("Up to date; nothing written.")
      return ExitCode.ok
    }
    // A dry run fails as the run would: a preview in CI must not pass where the real run will not.
    if (emptiedRefusal !== undefined) return yield* new SnapshotError({ message: emptiedRefusal })
    if (options.dryRun) {
      log("Dry run; nothing written.")
      return ExitCode.ok
    }
    // Only what differs: a module brought back in sync does not rewrite the meta (and its generation time).
    const targets = [
      ...(dataDiffers ? [{ path: dataPath, content: dataText }] : []),
      ...(dataDiffers || metaDiffers ? [{ path: metaPath, content: serializeMeta(meta) }] : []),
      ...(moduleDiffers ? [{ path: options.modulePath, content: moduleText }] : [])
    ]
    yield* writeFilesAtomically(targets)
    log(`Wrote ${targets.map((t) => t.path).join(", ")}.`)
    return ExitCode.ok
  })
