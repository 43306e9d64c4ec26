/**
 * The module loader the benchmarks run under (`node --import ./bench/lib/register.mjs bench/<file>.ts`): TypeScript
 * compiled by esbuild as tsup compiles the published package, without `keepNames`. tsx, which the other scripts run
 * under, compiles with `keepNames`: each function made at run time then goes through a `__name` call that defines its
 * `name`, 6-8% more CPU per fee quote for the full stack in one process beside the same source built as it ships.
 * Not bundled as tsup bundles (one module per file): the full stack so loaded was within 2% of its esbuild bundle.
 * JavaScript, as it is what loads the TypeScript.
 */
import { transform } from "esbuild"
import { existsSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"

// The project's compiler options, as tsup passes them to esbuild (class fields, decorators...): a change to
// tsconfig.json then changes the benchmarks' code as it changes the package's.
const tsconfigRaw = JSON.parse(await readFile(new URL("../../tsconfig.json", import.meta.url), "utf8"))

const isOwn = (url) => url.startsWith("file:") && !url.includes("/node_modules/")

// The sources import each other as `./x.js` (NodeNext): the file on disk is `./x.ts`.
export const resolve = (specifier, context, next) => {
  if (specifier.endsWith(".js") && context.parentURL !== undefined && isOwn(context.parentURL)) {
    const url = new URL(specifier, context.parentURL)
    const ts = new URL(url.href.replace(/\.js$/, ".ts"))
    if (url.protocol === "file:" && !existsSync(url) && existsSync(ts)) return next(ts.href, context)
  }
  return next(specifier, context)
}

export const load = async (url, context, next) => {
  if (!isOwn(url) || !new URL(url).pathname.endsWith(".ts")) return next(url, context)
  const path = fileURLToPath(url)
  const { code } = await transform(await readFile(path, "utf8"), {
    loader: "ts",
    format: "esm",
    target: "es2022",
    tsconfigRaw: { compilerOptions: tsconfigRaw.compilerOptions },
    sourcefile: path
  })
  return { format: "module", source: code, shortCircuit: true }
}
