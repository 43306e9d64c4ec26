/**
 * The arguments `run` gives the snapshot tool (`effect-fin snapshot`, `effect-fin cross-check`, which it dispatches
 * before @effect/cli's parser sees them), and the package's own data/ they default to.
 *
 * @internal
 */
import * as Either from "effect/Either"
import { createRequire } from "node:module"
import * as Path from "node:path"

/**
 * The package's own data/, found through its exports (a self-reference), wherever the bundler put this module (the
 * CommonJS build is given this module's URL by tsup): `run` defaults to it, whoever calls it (the binary, or a
 * program of the user's through `effect-fin/cli`). Undefined where it cannot be resolved.
 */
export const bundledDataDir = (): string | undefined => {
  try {
    return Path.dirname(createRequire(import.meta.url).resolve("effect-fin/data/subdivisions.json"))
  } catch {
    return undefined
  }
}

/**
 * The tool's defaults are paths in the effect-fin repository. Installed, `cross-check` reads the bundled snapshot,
 * and `snapshot` writes only where `--out` says: the bundled files are never rewritten in place.
 */
export const snapshotArgs = (
  sub: "snapshot" | "cross-check",
  rest: ReadonlyArray<string>,
  dataDir: string | undefined
): Either.Either<ReadonlyArray<string>, string> => {
  const args = sub === "snapshot" ? rest : ["--cross-check", ...rest]
  const given = (flag: string) => args.some((arg) => arg === flag || arg.startsWith(`${flag}=`))
  if (given("--help") || given("-h")) return Either.right(args)
  // A writing run's --out that is `dataDir` itself is refused by the tool, which knows it as its `bundledDir`.
  if (given("--out")) return Either.right(args)
  // Never the repository's paths relative to the working folder, which `snapshot` would write into (a user's own
  // project) and `cross-check` could not read: not even where the package's data/ is not found (effect-fin bundled
  // into a program deployed without its node_modules).
  if (given("--cross-check")) {
    return dataDir === undefined
      ? Either.left(
        "effect-fin cross-check: give --out DIR (the folder of the snapshot to compare): effect-fin's own data/ " +
          "could not be found from where it runs (bundled into a program?)"
      )
      : Either.right(["--out", dataDir, ...args])
  }
  return Either.left(
    "effect-fin snapshot: give --out DIR: the snapshot bundled with effect-fin is not rewritten in place " +
      "(in the effect-fin repository, `npm run snapshot` writes data/ and src/)"
  )
}
