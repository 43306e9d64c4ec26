/**
 * The command line of `scripts/snapshot-subdivisions.ts`: usage text and argument parsing, kept pure so tests can
 * check every case without starting a process.
 */
import * as Either from "effect/Either"
import * as Path from "node:path"
import { parseArgs } from "node:util"
import * as Timestamp from "../../src/internal/timestamp.js"
import { defaultModulePath, defaultReportPath, files } from "./files.js"

// 9999-12-31T23:59:59Z, in seconds since 1970.
const LAST_SECOND = 253_402_300_799

/** How the tool is started in the effect-fin repository. */
export const repositoryProgram = "npm run snapshot --"

/**
 * Shown on `--help` and after every usage error; `program` is how the tool was started (`effect-fin snapshot` when
 * installed, where `installed` says so: the defaults are then the bundled snapshot's, not the repository's paths).
 */
export const usage = (program: string = repositoryProgram, installed = false) => {
  const compared = installed
    ? "the bundled snapshot (or the one in --out DIR)"
    : `the committed snapshot in --out (default data/${files.data})`
  const out = installed
    ? `folder of ${files.data} and ${files.meta} (required by every snapshot run,
                             --check and --dry-run too: the bundled snapshot is not rewritten; --from-api then keeps
                             type and parent from the bundled snapshot when DIR has none yet)`
    : `folder of ${files.data} and ${files.meta} (default: data)`
  // The snapshot a run compares with: the repository's committed one, or the one in --out of the installed command.
  const current = installed ? "the snapshot in --out" : "the committed snapshot"
  const module = installed ? `DIR/${files.module}` : `${defaultModulePath}, or DIR/${files.module} with --out`
  const kept = installed ? "the bundled" : "the committed"
  const crossCheck = installed ? "effect-fin cross-check" : `${program} --cross-check`
  return `Usage: ${program} --from-iso-codes DIR|URL --source-version VERSION [options]
       ${program} --from-api [--base-url URL] [--concurrency N] [options]
       ${crossCheck} [--countries USA,CAN,...] [--base-url URL] [--report FILE]

Source (exactly one, no default: a system's iso-codes may be older than ${installed ? "the bundled" : "the committed"} one):
  --from-iso-codes DIR|URL   folder or http(s) base URL holding iso_3166-1.json and iso_3166-2.json (Debian iso-codes)
  --source-version VERSION   version of that source, recorded in the meta file (required with --from-iso-codes;
                             with --from-api default: v1, the API's path version)
  --from-api                 the live API, through SubdivisionService in online mode (never the offline snapshot),
                             all 249 countries; credentials from FIN_CLIENT_ID, FIN_CLIENT_SECRET (and the other
                             FIN_* variables); the API has no type or parent, so those are kept from the snapshot in
                             --out (${kept} one while --out has none) for codes it already has (empty type
                             otherwise). Any country still failing after the client's retries stops the run: nothing
                             is written

Cross-check (writes only the report):
  --cross-check              compare the API with ${compared};
                             exit 1 on any disagreement (codes missing from the snapshot, extra in it, or renamed,
                             or API entries it could not compare: malformed, another country's, unnamed,
                             unprintable, repeated)
  --countries A,B,...        only these alpha-3 codes (default: all 249); an unknown code is a usage error
  --report FILE              JSON report of the comparison (default: ${defaultReportPath} in the current folder)

Options:
  --out DIR                  ${out}
  --module FILE              generated module (default: ${module})
  --check                    write nothing; exit 1 if the ${installed ? "files in --out" : "committed files"} differ from what the source gives
  --dry-run                  print the diff, write nothing
  --allow-emptied            write even if the source lists no subdivisions for a country the snapshot has some
                             for (refused by default: a source that lost data)
  --generated-at ISO8601     time recorded in the meta or report (default: SOURCE_DATE_EPOCH if set, else now)
  --base-url URL             with --from-api / --cross-check: the API to ask instead of FIN_BASE_URL or
                             FIN_ENVIRONMENT (https, or http on loopback, e.g. the emulator at http://127.0.0.1:4010)
  --concurrency N            with --from-api / --cross-check: countries asked at once, 1-64 (default: 8)
  -h, --help                 this text

The diff against ${current} is always printed before anything is written. Progress goes to stderr.
Exit codes: 0 done or up to date (cross-check: all agree), 1 differences found (--check, --cross-check),
2 usage or configuration error, unusable source, or an API call that failed.`
}

/** Options shared by the commands that ask the API. */
export interface ApiOptions {
  /** `--base-url`, overriding `FIN_BASE_URL` / `FIN_ENVIRONMENT`. */
  readonly baseUrl: string | undefined
  /** Countries asked at once. */
  readonly concurrency: number
}

/** Options shared by the commands that write a snapshot: what `Snapshot.run` is given of them. */
export interface WriteOptions {
  readonly outDir: string
  readonly modulePath: string
  /** Whether `--module` named `modulePath` (rather than it being the default next to the data). */
  readonly moduleNamed: boolean
  readonly generatedAt: string
  readonly check: boolean
  readonly dryRun: boolean
  readonly allowEmptied: boolean
}

/** What the command line asks for. */
export type Command =
  | { readonly _tag: "Help" }
  | WriteOptions & {
    readonly _tag: "FromIsoCodes"
    readonly location: string
    readonly version: string
  }
  | ApiOptions & WriteOptions & { readonly _tag: "FromApi"; readonly version: string }
  | ApiOptions & {
    readonly _tag: "CrossCheck"
    /** Folder of the snapshot compared with the API. */
    readonly outDir: string
    /** The codes as given (checked against the 249 by the caller), or `undefined` for all. */
    readonly countries: ReadonlyArray<string> | undefined
    readonly reportPath: string
    readonly generatedAt: string
  }

/** The API's path version, recorded as the source version of a snapshot taken from it unless told otherwise. */
export const defaultApiVersion = "v1"

/** Default of `--concurrency`. */
export const defaultConcurrency = 8

/**
 * Parses the arguments (without `node` and the script path). `Left` is a usage error message; `now` and
 * `sourceDateEpoch` give the default generation time.
 */
export const parseCommandLine = (
  args: ReadonlyArray<string>,
  env: { readonly now: Date; readonly sourceDateEpoch?: string | undefined }
): Either.Either<Command, string> => {
  let values
  try {
    values = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        "from-iso-codes": { type: "string" },
        "source-version": { type: "string" },
        "from-api": { type: "boolean", default: false },
        "cross-check": { type: "boolean", default: false },
        countries: { type: "string" },
        report: { type: "string" },
        "base-url": { type: "string" },
        concurrency: { type: "string" },
        out: { type: "string" },
        module: { type: "string" },
        check: { type: "boolean", default: false },
        "dry-run": { type: "boolean", default: false },
        "allow-emptied": { type: "boolean", default: false },
        "generated-at": { type: "string" },
        help: { type: "boolean", short: "h", default: false }
      }
    }).values
  } catch (e) {
    return Either.left(e instanceof Error ? e.message : String(e))
  }
  if (values.help) return Either.right({ _tag: "Help" })

  const location = values["from-iso-codes"]
  const modes = [
    ...(location !== undefined ? ["--from-iso-codes"] : []),
    ...(values["from-api"] ? ["--from-api"] : []),
    ...(values["cross-check"] ? ["--cross-check"] : [])
  ]
  if (modes.length > 1) return Either.left(`${modes.join(" and ")} exclude each other: pass exactly one.`)
  const mode = modes[0]
  if (mode === undefined) {
    return Either.left("No source: pass --from-iso-codes DIR|URL with --source-version VERSION, or --from-api.")
  }
  const onlyWith = (flag: string, allowed: ReadonlyArray<string>) =>
    `${flag} only goes with ${allowed.join(" or ")}.`
  if (mode !== "--cross-check") {
    if (values.countries !== undefined) {
      return Either.left(`${onlyWith("--countries", ["--cross-check"])} A snapshot always has all 249 countries.`)
    }
    if (values.report !== undefined) return Either.left(onlyWith("--report", ["--cross-check"]))
  }
  if (mode === "--from-iso-codes") {
    if (values["base-url"] !== undefined) return Either.left(onlyWith("--base-url", ["--from-api", "--cross-check"]))
    if (values.concurrency !== undefined) {
      return Either.left(onlyWith("--concurrency", ["--from-api", "--cross-check"]))
    }
  }
  if (mode === "--cross-check") {
    if (values.check || values["dry-run"] || values["allow-emptied"]) {
      return Either.left("--check, --dry-run and --allow-emptied do not go with --cross-check (it writes only its report).")
    }
    if (values.module !== undefined) return Either.left(onlyWith("--module", ["--from-iso-codes", "--from-api"]))
    if (values["source-version"] !== undefined) {
      return Either.left(onlyWith("--source-version", ["--from-iso-codes", "--from-api"]))
    }
  }
  if (location === "") return Either.left("--from-iso-codes needs a folder or an http(s) base URL.")
  const version = values["source-version"]
  if (mode === "--from-iso-codes" && (version === undefined || version.trim() === "")) {
    return Either.left("--source-version is required with --from-iso-codes.")
  }
  if (version !== undefined && version.trim() === "") return Either.left("--source-version must not be empty.")
  if (values.check && values["dry-run"]) return Either.left("--check and --dry-run exclude each other.")

  let generatedAt = env.now.toISOString()
  const flag = values["generated-at"]
  if (flag !== undefined) {
    // Strictly ISO 8601 (no `Date.parse` guesses, no rolled-over 30 February), UTC unless it says its offset: the
    // same bytes on every machine, whatever its time zone.
    const time = Timestamp.toMillis(flag)
    // An offset can move a time out of years 0000-9999, which ISO writes with a sign and six digits.
    if (time === undefined || !/^\d{4}-/.test(new Date(time).toISOString())) {
      return Either.left(`--generated-at: expected an ISO 8601 time (UTC unless it gives its offset), got "${flag}"`)
    }
    generatedAt = new Date(time).toISOString()
  } else if (env.sourceDateEpoch !== undefined && env.sourceDateEpoch !== "") {
    // Up to the end of year 9999, past which an ISO time needs more than four digits of year.
    if (!/^\d+$/.test(env.sourceDateEpoch) || Number(env.sourceDateEpoch) > LAST_SECOND) {
      return Either.left(
        `SOURCE_DATE_EPOCH: expected whole seconds since 1970 (up to the end of 9999), got "${env.sourceDateEpoch}"`
      )
    }
    generatedAt = new Date(Number(env.sourceDateEpoch) * 1000).toISOString()
  }

  let concurrency = defaultConcurrency
  if (values.concurrency !== undefined) {
    if (!/^\d+$/.test(values.concurrency) || Number(values.concurrency) < 1 || Number(values.concurrency) > 64) {
      return Either.left(`--concurrency: expected a whole number from 1 to 64, got "${values.concurrency}"`)
    }
    concurrency = Number(values.concurrency)
  }
  const baseUrl = values["base-url"]
  if (baseUrl !== undefined && baseUrl.trim() === "") return Either.left("--base-url must not be empty.")

  const outDir = values.out ?? "data"
  if (mode === "--cross-check") {
    let countries: ReadonlyArray<string> | undefined
    if (values.countries !== undefined) {
      countries = [...new Set(values.countries.split(/[\s,]+/).filter((code) => code !== ""))]
      if (countries.length === 0) return Either.left("--countries: expected alpha-3 codes separated by commas.")
    }
    if (values.report === "") return Either.left("--report needs a file name.")
    return Either.right({
      _tag: "CrossCheck",
      outDir,
      countries,
      reportPath: values.report ?? defaultReportPath,
      generatedAt,
      baseUrl,
      concurrency
    })
  }
  const common = {
    outDir,
    // With --out the module goes next to the data, so a run into a temporary folder never touches src/.
    modulePath: values.module ?? (values.out === undefined ? defaultModulePath : Path.join(values.out, files.module)),
    moduleNamed: values.module !== undefined,
    generatedAt,
    check: values.check,
    dryRun: values["dry-run"],
    allowEmptied: values["allow-emptied"]
  }
  return mode === "--from-api"
    ? Either.right({ _tag: "FromApi", version: version ?? defaultApiVersion, baseUrl, concurrency, ...common })
    : Either.right({ _tag: "FromIsoCodes", location: location!, version: version!, ...common })
}
