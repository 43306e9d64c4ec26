/**
 * What effect-fin adds to a minified esbuild bundle, Effect and the platform left external (the figures README's
 * Install section gives): the fee path alone, as a serverless function that only quotes fees would make it, and
 * `FinClient` with every service, the offline subdivisions snapshot among them.
 *
 *   npm run bench:bundles
 */
import * as esbuild from "esbuild"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const SNAPSHOT = "src/internal/subdivisionsData.ts"

/** One bundle: its minified size, and how much of it is the offline snapshot. */
export interface BundleRow {
  readonly bundle: string
  readonly bytes: number
  readonly snapshotBytes: number
}

const module = (name: string) => JSON.stringify(Path.join(root, "src", name))

// Each program as a user writes it, importing the modules it uses (each is an entry of the package).
const programs: ReadonlyArray<readonly [string, string]> = [
  [
    "the fee path alone (FeeService, HttpTransport, TokenProvider, FinConfig)",
    `import { Layer } from "effect"
import * as FeeService from ${module("FeeService.ts")}
import * as FinConfig from ${module("FinConfig.ts")}
import * as HttpTransport from ${module("HttpTransport.ts")}
import * as TokenProvider from ${module("TokenProvider.ts")}
export const Fees = FeeService.layer.pipe(Layer.provide(HttpTransport.layer), Layer.provide(TokenProvider.layer),
  Layer.provide(FinConfig.layer({ clientId: "id", clientSecret: "secret" })))
export const quote = FeeService.calculate`
  ],
  [
    "FinClient, every service (a program that only quotes fees)",
    `import * as FeeService from ${module("FeeService.ts")}
import * as FinClient from ${module("FinClient.ts")}
export const Client = FinClient.layer({ clientId: "id", clientSecret: "secret" })
export const quote = FeeService.calculate`
  ]
]

/** Bundles each program (in memory, nothing written) and measures it. */
export const runBundlesBench = async (): Promise<ReadonlyArray<BundleRow>> => {
  const rows: Array<BundleRow> = []
  for (const [bundle, contents] of programs) {
    const result = await esbuild.build({
      stdin: { contents, resolveDir: root, loader: "ts", sourcefile: "program.ts" },
      bundle: true,
      minify: true,
      format: "esm",
      platform: "node",
      external: ["effect", "@effect/*"],
      write: false,
      metafile: true,
      logLevel: "silent"
    })
    const [output] = Object.values(result.metafile.outputs)
    rows.push({
      bundle,
      bytes: result.outputFiles[0]!.contents.byteLength,
      snapshotBytes: output?.inputs[SNAPSHOT]?.bytesInOutput ?? 0
    })
  }
  return rows
}

const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`

/** The rows as a Markdown table. */
export const bundlesTable = (rows: ReadonlyArray<BundleRow>): string =>
  [
    "| bundle | minified | of which the subdivisions snapshot |",
    "|---|---:|---:|",
    ...rows.map((row) => `| ${row.bundle} | ${kb(row.bytes)} | ${kb(row.snapshotBytes)} |`)
  ].join("\n")

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href) {
  runBundlesBench().then(
    (rows) => process.stdout.write(`${bundlesTable(rows)}\n`),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
      process.exitCode = 1
    }
  )
}
