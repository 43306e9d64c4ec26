/**
 * File names and default paths of the snapshot, shared by the command line and the pipeline (kept in a module of
 * their own so that parsing the command line loads nothing heavy).
 */

import { realpathSync } from "node:fs"
import { resolve } from "node:path"

/** File names inside `--out` and inside an iso-codes source. */
export const files = {
  data: "subdivisions.json",
  meta: "subdivisions.meta.json",
  module: "subdivisionsData.ts",
  iso31661: "iso_3166-1.json",
  iso31662: "iso_3166-2.json"
} as const

/** Where the library reads the snapshot from (see `src/Subdivisions.ts`). */
export const defaultModulePath = "src/internal/subdivisionsData.ts"

/** Exit codes, as `diff(1)`: 0 nothing to report or written, 1 differences under `--check`, 2 trouble. */
export const ExitCode = { ok: 0, differences: 1, trouble: 2 } as const

/** Where `--cross-check` writes its JSON report unless `--report` says otherwise (relative to the working folder). */
export const defaultReportPath = "cross-check-report.json"

/** Whether two paths name one folder, through symlinks (`node_modules/effect-fin` often is one). */
export const sameFolder = (a: string, b: string): boolean => {
  const real = (path: string) => {
    try {
      return realpathSync(path)
    } catch {
      return resolve(path)
    }
  }
  return real(a) === real(b)
}
