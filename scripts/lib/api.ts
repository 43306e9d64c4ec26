/**
 * The online parts of `scripts/snapshot-subdivisions.ts`: the client (credentials from `FIN_*`, subdivisions always
 * online), progress output, and the cross-check of the API against the committed snapshot with its table and report.
 *
 * Nothing here opens a connection by itself: the platform `HttpClient` is a parameter (undici in the script, an
 * in-memory client in tests).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { table } from "../../src/cli/render.js"
import * as CountryCode from "../../src/CountryCode.js"
import * as FinClient from "../../src/FinClient.js"
import type { FinError } from "../../src/FinError.js"
import * as FinConfig from "../../src/FinConfig.js"
import * as HttpTransport from "../../src/HttpTransport.js"
import * as Printable from "../../src/internal/printable.js"
import {
  pageIssues,
  SentSubdivisionsResponse,
  Subdivision,
  type Subdivision as SubdivisionType
} from "../../src/internal/subdivisions.js"
import * as SubdivisionService from "../../src/SubdivisionService.js"
import { ExitCode, files } from "./files.js"
import {
  crossCheck,
  decodeWith,
  parseJsonText,
  parseSnapshot,
  readSourceFile,
  realPathOf,
  type Snapshot,
  SnapshotError,
  SnapshotMeta,
  sha256,
  writeFilesAtomically
} from "./snapshot.js"

// ---------------------------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------------------------

/** What the script needs to reach the API: the client's options and the base URL they resolve to (no secrets). */
export interface ClientSettings {
  readonly options: FinConfig.Options
  /** The resolved base URL, as recorded in the meta and the report. */
  readonly baseUrl: string
}

/**
 * The client options of the `FIN_*` variables in `env` (as `FinClient.layerFromEnv` reads them), with
 * `subdivisionMode` forced to `"online"` (a snapshot built from the snapshot would prove nothing) and `baseUrl`
 * replaced by `--base-url` when given. Validated at once, so a bad variable or URL fails before any request.
 */
export const clientSettings = (
  env: Readonly<Record<string, string | undefined>>,
  baseUrl: string | undefined
): Effect.Effect<ClientSettings, ConfigError.ConfigError> =>
  Effect.gen(function*() {
    // Every problem of the variables at once, each named by its variable, as the rest of the command line says them.
    const fromEnv = yield* FinConfig.optionsFromEnv
    const options: FinConfig.Options = {
      ...fromEnv,
      subdivisionMode: "online",
      ...(baseUrl === undefined ? {} : { baseUrl })
    }
    const resolved = yield* FinConfig.resolve(options)
    return { options, baseUrl: resolved.baseUrl }
  }).pipe(
    // Not the variables the script replaces: they are not held against it.
    Effect.withConfigProvider(providerOf({
      ...env,
      FIN_SUBDIVISION_MODE: undefined,
      ...(baseUrl === undefined ? {} : { FIN_BASE_URL: undefined })
    }))
  )

const providerOf = (env: Readonly<Record<string, string | undefined>>): ConfigProvider.ConfigProvider => {
  const map = new Map<string, string>()
  for (const [key, value] of Object.entries(env)) if (value !== undefined) map.set(key, value)
  return ConfigProvider.fromMap(map)
}

/** `SubdivisionService` (online) of `settings` on the given platform client, and the transport it uses. */
export const serviceLayer = (
  settings: ClientSettings,
  httpClient: Layer.Layer<HttpClient.HttpClient, ConfigError.ConfigError>
): Layer.Layer<SubdivisionService.SubdivisionService | HttpTransport.HttpTransport, ConfigError.ConfigError> =>
  FinClient.layer(settings.options).pipe(Layer.provide(httpClient))

/**
 * One country from the API. Online mode never answers from the snapshot; should it ever, the run stops rather than
 * record the snapshot as if the API had said it.
 */
export const listOnline = (
  country: CountryCode.CountryCode
): Effect.Effect<ReadonlyArray<SubdivisionType>, FinError, SubdivisionService.SubdivisionService> =>
  Effect.flatMap(SubdivisionService.list(country), (result) =>
    result.source === "api"
      ? Effect.succeed(result.subdivisions)
      : Effect.dieMessage(`${country}: the service answered from the offline snapshot in online mode`))

/**
 * One country's list as the API sent it, entries `SubdivisionService.list` would refuse included (another country's
 * code, a malformed one, no name, a repeat): the cross-check reports those as `invalid`.
 */
export const listAsSent = (
  country: CountryCode.CountryCode
): Effect.Effect<ReadonlyArray<SubdivisionType>, FinError, HttpTransport.HttpTransport> =>
  Effect.map(
    HttpTransport.request({
      method: "GET",
      path: `/v1/countries/${country}/subdivisions`,
      response: SentSubdivisionsResponse,
      name: "subdivisions",
      check: pageIssues
    }),
    (response) => response.data.subdivisions
  )

/**
 * One line: the tag, the first line of the message, the attempts made, e.g. `ApiError: The service answered 503 on
 * GET /v1/countries/DEU/subdivisions: Service Unavailable (3 attempts)`.
 */
export const describeFinError = (error: FinError): string => {
  const attempts = "attempts" in error && error.attempts !== undefined
    ? ` (${error.attempts} attempt${error.attempts === 1 ? "" : "s"})`
    : ""
  return `${error._tag}: ${error.message.split("\n")[0]}${attempts}`
}

// ---------------------------------------------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------------------------------------------

/** Reports `done` of `total` countries; `finish` ends a bar left unfinished by a failure. */
export interface Progress {
  readonly update: (done: number, total: number) => void
  readonly finish: () => void
}

/**
 * On a terminal, one bar redrawn in place (`\r`); otherwise a plain line every `every` countries and at the end, so
 * a CI log stays short and readable.
 */
export const makeProgress = (options: {
  readonly isTTY: boolean
  readonly write: (text: string) => void
  readonly label?: string
  readonly every?: number
  readonly width?: number
}): Progress => {
  const label = options.label ?? "Countries"
  const every = options.every ?? 25
  const width = options.width ?? 30
  let open = false
  return {
    update: (done, total) => {
      if (options.isTTY) {
        const filled = total === 0 ? width : Math.round((done / total) * width)
        options.write(`\r${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}`)
        open = done < total
        if (!open) options.write("\n")
      } else if (done % every === 0 || done === total) {
        options.write(`${label}: ${done}/${total}\n`)
      }
    },
    finish: () => {
      if (open) options.write("\n")
      open = false
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------------------------

/**
 * The codes of `--countries`, each one of the 249 (upper-case alpha-3, as `CountryCode.validate` wants them), in the
 * order given; `Left` names every code that is not.
 */
export const parseCountries = (
  codes: ReadonlyArray<string>
): Either.Either<ReadonlyArray<CountryCode.CountryCode>, string> => {
  const invalid = codes.filter((code) => !CountryCode.isCountryCode(code))
  return invalid.length > 0
    ? Either.left(
      `--countries: not ${invalid.length === 1 ? "a country code" : "country codes"} of the service: ${
        invalid.map((code) => Printable.json(code)).join(", ")
      } (expected upper-case ISO 3166-1 alpha-3 codes, e.g. USA,CAN)`
    )
    : Either.right(codes.filter(CountryCode.isCountryCode))
}

/**
 * The snapshot in `dir` to take `type` and `parent` from (the API has neither), or an empty one when there is none. One
 * that cannot be read stops the run: taken as empty, it would be replaced by one with every type blank and no parent.
 */
export const readPrevious = (dir: string): Effect.Effect<Snapshot, SnapshotError> => {
  const path = Path.join(dir, files.data)
  return Effect.tryPromise({
    try: () =>
      Fs.readFile(path, "utf8").catch((e: NodeJS.ErrnoException) => e.code === "ENOENT" ? undefined : Promise.reject(e)),
    catch: (e) =>
      new SnapshotError({ message: `${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})` })
  }).pipe(Effect.flatMap((text) => text === undefined ? Effect.succeed({}) : parseSnapshot(text, path)))
}

// ---------------------------------------------------------------------------------------------------------------
// Cross-check
// ---------------------------------------------------------------------------------------------------------------

const ApiEntry = Schema.Struct({ code: Schema.String, name: Schema.String })

/** One country that disagrees, as written in the report. */
export const CrossCheckCountryReport = Schema.Struct({
  country: Schema.String,
  /** Listed by the API, absent from the snapshot. */
  missing: Schema.Array(ApiEntry),
  /** In the snapshot, not listed by the API (with the snapshot's type and parent). */
  extra: Schema.Array(Subdivision),
  /** Same code, another name. */
  renamed: Schema.Array(Schema.Struct({ code: Schema.String, snapshotName: Schema.String, apiName: Schema.String })),
  /**
   * Listed by the API but not comparable: a malformed code, another country's code, no name, a name with a control
   * character, or listed twice.
   */
  invalid: Schema.Array(Schema.Struct({
    code: Schema.String,
    name: Schema.String,
    reason: Schema.Literal("malformed_code", "other_country", "empty_name", "unprintable_name", "duplicate")
  }))
})

/** The JSON report of `--cross-check` (`--report FILE`). */
export const CrossCheckReport = Schema.Struct({
  generatedAt: Schema.String,
  /** The API asked (never credentials). */
  baseUrl: Schema.String,
  /** The snapshot file compared, and the SHA-256 of its bytes. */
  snapshot: Schema.String,
  snapshotSha256: Schema.String,
  /** Every country asked, sorted. */
  checked: Schema.Array(Schema.String),
  agree: Schema.Boolean,
  totals: Schema.Struct({
    countries: Schema.Number,
    missing: Schema.Number,
    extra: Schema.Number,
    renamed: Schema.Number,
    invalid: Schema.Number
  }),
  /** Only the countries that disagree, sorted. */
  countries: Schema.Array(CrossCheckCountryReport)
})

/** @see CrossCheckReport */
export type CrossCheckReport = typeof CrossCheckReport.Type

/** What `runCrossCheck` needs. */
export interface CrossCheckOptions<E, R> {
  readonly countries: ReadonlyArray<CountryCode.CountryCode>
  /** Folder of the snapshot (`subdivisions.json`) compared with the API. */
  readonly snapshotDir: string
  readonly reportPath: string
  /** Recorded in the report. */
  readonly baseUrl: string
  readonly generatedAt: string
  readonly concurrency: number
  readonly list: (country: CountryCode.CountryCode) => Effect.Effect<ReadonlyArray<SubdivisionType>, E, R>
  readonly describeError: (error: E) => string
  readonly onProgress?: (done: number, total: number) => void
  readonly log: (text: string) => void
}

const firstCodes = (prefix: string, codes: ReadonlyArray<string>, shown = 3): ReadonlyArray<string> =>
  codes.length === 0
    ? []
    : [
      ...codes.slice(0, shown).map((code) => `${prefix}${code}`),
      ...(codes.length > shown ? [`(${prefix}${codes.length - shown} more)`] : [])
    ]

/** The disagreements as a table: counts per country and its first codes of each kind. */
export const formatCrossCheck = (report: CrossCheckReport): string => {
  const rows = report.countries.map((c) => [
    c.country,
    String(c.missing.length),
    String(c.extra.length),
    String(c.renamed.length),
    String(c.invalid.length),
    [
      ...firstCodes("+", c.missing.map((e) => e.code)),
      ...firstCodes("-", c.extra.map((e) => e.code)),
      ...firstCodes("~", c.renamed.map((e) => e.code)),
      ...firstCodes("!", c.invalid.map((e) => Printable.json(e.code)))
    ].join(" ")
  ])
  const n = report.checked.length
  const all = `${n} ${n === 1 ? "country" : "countries"}`
  if (report.agree) return `${n === 1 ? "The country checked agrees" : `All ${all} agree`} with ${report.snapshot}.`
  const t = report.totals
  return [
    table(["country", "missing", "extra", "renamed", "invalid", "first codes"], rows),
    "(+ listed by the API, not in the snapshot; - only in the snapshot; ~ named otherwise by the API; " +
    "! an API entry not compared: malformed, another country's, unnamed, unprintable or repeated)",
    `${t.countries} of ${all} disagree with ${report.snapshot}: ${t.missing} missing, ${t.extra} extra, ${t.renamed} renamed, ` +
    `${t.invalid} invalid.`
  ].join("\n")
}

/**
 * Asks the API for every country of `countries` (`concurrency` at a time), compares each with the snapshot in
 * `snapshotDir` (codes and names only: the API has no type or parent), prints the table, writes the JSON report, and
 * returns 0 when all agree, 1 otherwise. An unreadable snapshot, one its meta file does not describe (edited or half
 * written) or a failed call is a `SnapshotError` (no report).
 */
export const runCrossCheck = <E, R>(options: CrossCheckOptions<E, R>): Effect.Effect<number, SnapshotError, R> =>
  Effect.gen(function*() {
    const snapshotPath = Path.join(options.snapshotDir, files.data)
    // The report replaces its file: naming the snapshot or its meta would destroy what the run compares with.
    const reportFile = yield* realPathOf(options.reportPath)
    for (const file of [files.data, files.meta]) {
      if (reportFile === (yield* realPathOf(Path.join(options.snapshotDir, file)))) {
        return yield* new SnapshotError({
          message:
            `--report ${options.reportPath} is the snapshot's ${file}: the report would replace it; name another file`
        })
      }
    }
    const text = yield* readSourceFile(options.snapshotDir, files.data)
    // The data file must be the one its meta describes: an edited or half-written copy would agree (or not) with the
    // API for no reason the report could show.
    const metaPath = Path.join(options.snapshotDir, files.meta)
    const meta = yield* Either.flatMap(
      parseJsonText(yield* readSourceFile(options.snapshotDir, files.meta), metaPath),
      (value) => decodeWith(SnapshotMeta, value, metaPath)
    )
    if (meta.sha256 !== sha256(text)) {
      return yield* new SnapshotError({
        message: `${snapshotPath} is not the file ${metaPath} describes (another SHA-256): edited, or written in part. ` +
          "Rebuild both with the snapshot script (--from-iso-codes or --from-api)."
      })
    }
    const snapshot = yield* parseSnapshot(text, snapshotPath)
    const countries = [...new Set(options.countries)].sort()
    let done = 0
    const lists = yield* Effect.forEach(
      countries,
      (country) =>
        options.list(country).pipe(
          Effect.mapError((e) =>
            new SnapshotError({ message: `${options.baseUrl} ${country}: ${options.describeError(e)}` })
          ),
          Effect.map((list) => {
            done++
            options.onProgress?.(done, countries.length)
            return [country, list] as const
          })
        ),
      { concurrency: options.concurrency }
    )
    const api: Record<string, ReadonlyArray<SubdivisionType>> = {}
    for (const [country, list] of lists) api[country] = list.map((e) => ({ code: e.code, name: e.name }))

    const alpha2Of = (country: string) => CountryCode.isCountryCode(country) ? CountryCode.toAlpha2(country) : undefined
    const disagreeing = crossCheck(snapshot, api, alpha2Of).filter((c) =>
      c.missing.length > 0 || c.extra.length > 0 || c.renamed.length > 0 || c.invalid.length > 0
    )
    const report: CrossCheckReport = {
      generatedAt: options.generatedAt,
      baseUrl: options.baseUrl,
      snapshot: snapshotPath.split(Path.sep).join("/"),
      snapshotSha256: sha256(text),
      checked: countries,
      agree: disagreeing.length === 0,
      totals: {
        countries: disagreeing.length,
        missing: disagreeing.reduce((n, c) => n + c.missing.length, 0),
        extra: disagreeing.reduce((n, c) => n + c.extra.length, 0),
        renamed: disagreeing.reduce((n, c) => n + c.renamed.length, 0),
        invalid: disagreeing.reduce((n, c) => n + c.invalid.length, 0)
      },
      countries: disagreeing.map((c) => ({
        country: c.country,
        missing: c.missing.map((e) => ({ code: e.code, name: e.name })),
        extra: c.extra,
        renamed: c.renamed,
        invalid: c.invalid
      }))
    }
    options.log(formatCrossCheck(report))
    yield* writeFilesAtomically(
      [{ path: options.reportPath, content: `${JSON.stringify(report, null, 2)}\n` }],
      "the report"
    )
    options.log(`Report: ${options.reportPath}`)
    return report.agree ? ExitCode.ok : ExitCode.differences
  })
