/**
 * Mends the declarations tsup bundles (rollup-plugin-dts 6.1): inside an `export * as Ns` namespace, a name that a
 * module exports both as a type and as a value (`FinError.FinError`, `CountryCode.CountryCode`,
 * `Subdivisions.Subdivision`, `Webhooks.WebhookEvent`, ...) keeps only one of its meanings, so users could not write
 * the type, or could not pass the schema. The namespace is written as `type Ns_Name = Name;` and/or
 * `declare const Ns_Name: typeof Name;` plus `export { [type ]Ns_Name as Name }`; this adds the missing line and
 * drops the `type` modifier. The pairs are read from src/, per module, so a new one is mended without editing this
 * file.
 *
 *   npx tsx scripts/fix-dts.ts      (run by `npm run build`, after tsup)
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith(".ts") ? [path] : []
  })

/** Per module (file name without `.ts`), the names it exports both as a type (or interface) and as a value. */
export const typeAndValueNames = (
  sources: ReadonlyArray<{ readonly module: string; readonly text: string }>
): ReadonlyMap<string, ReadonlySet<string>> => {
  const byModule = new Map<string, Set<string>>()
  for (const { module, text } of sources) {
    const types = new Set([...text.matchAll(/^export (?:type|interface) (\w+)/gm)].map((m) => m[1]!))
    for (const m of text.matchAll(/^export (?:declare )?(?:const|function|class) (\w+)/gm)) {
      if (!types.has(m[1]!)) continue
      const names = byModule.get(module) ?? new Set<string>()
      byModule.set(module, names.add(m[1]!))
    }
  }
  return byModule
}

const escape = (text: string) => text.replace(/[$]/g, "\\$")

/**
 * `text` (one bundled declaration file) with both meanings of every member of `export * as Module` namespaces that
 * its module exports as a type and a value. The namespace's aliases are `Module_Name` (or `Module$1_Name`).
 */
export const mend = (text: string, byModule: ReadonlyMap<string, ReadonlySet<string>>): string => {
  let out = text
  for (const [module, names] of byModule) {
    for (const name of names) {
      const pattern = new RegExp(`\\b(${module}(?:\\$\\d+)?_${name}) as ${name}\\b`, "g")
      for (const alias of new Set([...out.matchAll(pattern)].map((m) => m[1]!))) {
        const a = escape(alias)
        const hasType = new RegExp(`^type ${a} = ${name};$`, "m").test(out)
        const hasValue = new RegExp(`^declare const ${a}: typeof ${name};$`, "m").test(out)
        if (hasType && !hasValue) {
          out = out.replace(new RegExp(`^type ${a} = ${name};$`, "m"), `$&\ndeclare const ${alias}: typeof ${name};`)
        } else if (hasValue && !hasType) {
          out = out.replace(new RegExp(`^declare const ${a}: typeof ${name};$`, "m"), `type ${alias} = ${name};\n$&`)
        }
        out = out.replace(new RegExp(`\\btype ${a} as ${name}\\b`, "g"), `${alias} as ${name}`)
      }
    }
  }
  return out
}

const main = () => {
  const byModule = typeAndValueNames(
    sourceFiles(Path.join(root, "src")).map((f) => ({ module: Path.basename(f, ".ts"), text: Fs.readFileSync(f, "utf8") }))
  )
  const dist = Path.join(root, "dist")
  let mended = 0
  for (const file of Fs.readdirSync(dist, { recursive: true, encoding: "utf8" })) {
    if (!/\.d\.c?ts$/.test(file)) continue
    const path = Path.join(dist, file)
    const text = Fs.readFileSync(path, "utf8")
    const fixed = mend(text, byModule)
    if (fixed !== text) {
      Fs.writeFileSync(path, fixed)
      mended++
    }
  }
  const count = [...byModule.values()].reduce((n, names) => n + names.size, 0)
  process.stdout.write(`fix-dts: ${count} type-and-value names, ${mended} declaration files mended\n`)
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
