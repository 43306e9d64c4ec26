/**
 * Mends the declarations tsup bundles (rollup-plugin-dts 6.1): inside an `export * as Ns` namespace, a name that a
 * module exports both as a type and as a value (`FinError.FinError`, `CountryCode.CountryCode`,
 * `Subdivisions.Subdivision`, `Webhooks.WebhookEvent`, ...) keeps only one of its meanings, so users could not write
 * the type, or could not pass the schema. The namespace is written as `type Ns_Name = Name;` and/or
 * `declare const Ns_Name: typeof Name;` plus `export { [type ]Ns_Name as Name }`; this adds the missing line and
 * drops the `type` modifier. The pairs are read from src/, so a new one is mended without editing this file.
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

/** Names exported by one source module both as a type (or interface) and as a value. */
export const typeAndValueNames = (sources: ReadonlyArray<string>): ReadonlySet<string> => {
  const names = new Set<string>()
  for (const text of sources) {
    const types = new Set([...text.matchAll(/^export (?:type|interface) (\w+)/gm)].map((m) => m[1]!))
    for (const m of text.matchAll(/^export (?:declare )?(?:const|function|class) (\w+)/gm)) {
      if (types.has(m[1]!)) names.add(m[1]!)
    }
  }
  return names
}

const escape = (text: string) => text.replace(/[$]/g, "\\$")

/** `text` (one bundled declaration file) with both meanings of every namespace member in `names`. */
export const mend = (text: string, names: ReadonlySet<string>): string => {
  let out = text
  for (const name of names) {
    // Every namespace alias of `name` in this file: `Ns_Name` (the namespace part may hold `$1`).
    const aliases = new Set(
      [...out.matchAll(new RegExp(`\\b([\\w$]+_${name}) as ${name}\\b`, "g"))].map((m) => m[1]!)
    )
    for (const alias of aliases) {
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
  return out
}

const main = () => {
  const names = typeAndValueNames(sourceFiles(Path.join(root, "src")).map((f) => Fs.readFileSync(f, "utf8")))
  const dist = Path.join(root, "dist")
  let mended = 0
  for (const file of Fs.readdirSync(dist, { recursive: true, encoding: "utf8" })) {
    if (!/\.d\.c?ts$/.test(file)) continue
    const path = Path.join(dist, file)
    const text = Fs.readFileSync(path, "utf8")
    const fixed = mend(text, names)
    if (fixed !== text) {
      Fs.writeFileSync(path, fixed)
      mended++
    }
  }
  process.stdout.write(`fix-dts: ${names.size} type-and-value names, ${mended} declaration files mended\n`)
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
