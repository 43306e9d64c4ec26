/**
 * Writes the CommonJS declarations beside the ESM ones `tsc -p tsconfig.build.json` emitted into dist/types: each
 * `x.d.ts` gets an `x.d.cts` twin whose relative imports name `.cjs` files, so that under `require` every
 * declaration is read as CommonJS, as the code it describes is.
 *
 * The declarations are one file per module, as tsc writes them, not bundled: a consumer that emits declarations
 * itself (a library, project references) must be able to name every effect-fin type in its own `.d.ts` through the
 * package's entries, which bundled chunks with hashed names prevent (TS2742).
 *
 *   npx tsx scripts/dts.ts      (run by `npm run build`, after tsc)
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** `text` (an ESM declaration file) with its relative `.js` imports made `.cjs`. */
export const toCommonJs = (text: string): string =>
  text.replace(/(\bfrom\s+|\bimport\s*\(\s*)(["'])(\.{1,2}\/[^"']*)\.js\2/g, "$1$2$3.cjs$2")

const declarations = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? declarations(path) : entry.name.endsWith(".d.ts") ? [path] : []
  })

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..", "dist", "types")
  const files = declarations(root)
  for (const file of files) {
    Fs.writeFileSync(file.replace(/\.d\.ts$/, ".d.cts"), toCommonJs(Fs.readFileSync(file, "utf8")))
  }
  process.stdout.write(`dts: ${files.length} declaration files, each with its CommonJS twin\n`)
}
