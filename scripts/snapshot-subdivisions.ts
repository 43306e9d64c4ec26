/**
 * Regenerates the offline ISO 3166-2 snapshot (data/subdivisions.json, its meta file and the generated module the
 * library loads) from an explicit source, printing the diff against the committed snapshot first; or cross-checks
 * the committed snapshot against the live API.
 *
 *   npm run snapshot -- --from-iso-codes data/iso-codes-4.20 --source-version 4.20 [--check | --dry-run]
 *   npm run snapshot -- --from-api [--base-url URL] [--concurrency N] [--check | --dry-run]
 *   npm run snapshot -- --cross-check [--countries USA,CAN] [--base-url URL] [--report FILE]
 *
 * The logic lives in scripts/lib/ (`main` in scripts/lib/main.ts is the entry as a function); this file only runs it.
 */
import { fileURLToPath } from "node:url"
import { main } from "./lib/main.js"

// The committed snapshot: what `--from-api` into a folder with none yet keeps types and parents from, and measures an
// emptied country against (the installed command uses the bundled one).
const committed = fileURLToPath(new URL("../data", import.meta.url))

main(process.argv.slice(2), { baselineDir: committed }).then((code) => {
  process.exitCode = code
})
