/**
 * Profiles one client of the client benchmark and prints where its CPU time goes.
 *
 *   npx tsx bench/profile.ts [client] [concurrency] [calls]      e.g.  npx tsx bench/profile.ts full-undici 16 20000
 *
 * Bundles bench/lib/profileTarget.ts with esbuild (effect-fin's code in one readable file with real function names;
 * the packages stay in node_modules, as they ship), runs it (the V8 profiler on for the measured calls only, 100 µs
 * sampling), and summarises the profile with bench/lib/cpuprofile.ts. The bundle and the profiles stay in
 * bench/.profile/ (ignored by git); open a profile in Chrome DevTools for the full picture.
 * Clients: raw-undici, bare-undici, full-undici, raw-fetch, bare-fetch, full-fetch, bare-lean, full-lean.
 */
import { build } from "esbuild"
import { execFile } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { summarize } from "./lib/cpuprofile.js"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const dir = Path.join(root, "bench/.profile")

const main = async () => {
  const [client = "full-undici", concurrency = "16", calls = "20000", top = "45"] = process.argv.slice(2)
  await Fs.mkdir(dir, { recursive: true })
  await Fs.writeFile(Path.join(dir, ".gitignore"), "*\n")
  const target = Path.join(dir, "target.mjs")
  await build({
    entryPoints: [Path.join(root, "bench/lib/profileTarget.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    packages: "external",
    outfile: target,
    logLevel: "warning"
  })
  const out = Path.join(dir, `${client}-${concurrency}-${Date.now()}.cpuprofile`)
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [target, client, concurrency, calls, out],
      { maxBuffer: 1 << 24 },
      (error, text, err) => (error !== null ? reject(new Error(`${error.message}\n${err}`)) : resolve(text))
    )
  )
  process.stdout.write(stdout)
  process.stdout.write(`${Path.relative(root, out)}\n`)
  process.stdout.write(`${summarize(JSON.parse(await Fs.readFile(out, "utf8")), Number(top)).join("\n")}\n`)
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
  process.exitCode = 1
})
