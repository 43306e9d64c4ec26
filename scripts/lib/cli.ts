/**
 * The command line of `scripts/snapshot-subdivisions.ts`: usage text and argument parsing, kept pure so tests can
 * check every case without starting a process.
 */
import * as Either from "effect/Either"
import * as Path from "node:path"
import { parseArgs } from "node:util"
import { defaultModulePath, files } from "./files.js"

/** Shown on `--help` and after every usage error. */
export const usage = `Usage: npm run snapshot -- --from-iso-codes DIR|URL --source-version VERSION [options]
       npm run snapshot -- --from-api            (not available yet)

Source (exactly one, no default: a system's iso-codes may be older than the committed one):
  --from-iso-codes DIR|URL   folder or http(s) base URL holding iso_3166-1.json and iso_3166-2.json (Debian iso-codes)
  --source-version VERSION   version of that source, recorded in the meta file (required with --from-iso-codes)
  --from-api                 the live API (needs SubdivisionService; not available yet)

Options:
  --out DIR                  folder of ${files.data} and ${files.meta} (default: data)
  --module FILE              generated module (default: ${defaultModulePath}, or DIR/${files.module} with --out)
  --check                    write nothing; exit 1 if the committed files differ from what the source gives
  --dry-run                  print the diff, write nothing
  --generated-at ISO8601     time recorded in the meta (default: SOURCE_DATE_EPOCH if set, else now)
  --cross-check              compare the API with the snapshot (not available yet)
  -h, --help                 this text

The diff against the committed snapshot is always printed before anything is written.
Exit codes: 0 done or up to date, 1 differences found (--check), 2 usage error or unusable source.`

/** What the command line asks for. */
export type Command =
  | { readonly _tag: "Help" }
  | {
    readonly _tag: "FromIsoCodes"
    readonly location: string
    readonly version: string
    readonly outDir: string
    readonly modulePath: string
    readonly generatedAt: string
    readonly check: boolean
    readonly dryRun: boolean
  }

const notYet = (flag: string) =>
  `${flag} is not available yet: it needs SubdivisionService (the online client), which is being written.`

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
        out: { type: "string" },
        module: { type: "string" },
        check: { type: "boolean", default: false },
        "dry-run": { type: "boolean", default: false },
        "generated-at": { type: "string" },
        help: { type: "boolean", short: "h", default: false }
      }
    }).values
  } catch (e) {
    return Either.left(e instanceof Error ? e.message : String(e))
  }
  if (values.help) return Either.right({ _tag: "Help" })
  if (values["cross-check"]) return Either.left(notYet("--cross-check"))
  if (values["from-api"]) return Either.left(notYet("--from-api"))
  const location = values["from-iso-codes"]
  if (location === undefined || location === "") {
    return Either.left("No source: pass --from-iso-codes DIR|URL with --source-version VERSION.")
  }
  const version = values["source-version"]
  if (version === undefined || version.trim() === "") {
    return Either.left("--source-version is required with --from-iso-codes.")
  }
  if (values.check && values["dry-run"]) return Either.left("--check and --dry-run exclude each other.")

  let generatedAt = env.now.toISOString()
  const flag = values["generated-at"]
  if (flag !== undefined) {
    const time = Date.parse(flag)
    if (Number.isNaN(time)) return Either.left(`--generated-at: expected an ISO 8601 time, got "${flag}"`)
    generatedAt = new Date(time).toISOString()
  } else if (env.sourceDateEpoch !== undefined && env.sourceDateEpoch !== "") {
    if (!/^\d+$/.test(env.sourceDateEpoch)) {
      return Either.left(`SOURCE_DATE_EPOCH: expected whole seconds since 1970, got "${env.sourceDateEpoch}"`)
    }
    generatedAt = new Date(Number(env.sourceDateEpoch) * 1000).toISOString()
  }

  const outDir = values.out ?? "data"
  return Either.right({
    _tag: "FromIsoCodes",
    location,
    version,
    outDir,
    // With --out the module goes next to the data, so a run into a temporary folder never touches src/.
    modulePath: values.module ?? (values.out === undefined ? defaultModulePath : Path.join(values.out, files.module)),
    generatedAt,
    check: values.check,
    dryRun: values["dry-run"]
  })
}
