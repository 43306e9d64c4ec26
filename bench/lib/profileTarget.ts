/**
 * The program bench/profile.ts bundles and runs: the loopback server in its own process, then a warm-up and `calls`
 * fee quotes at `concurrency` with one client of bench/lib/clients.ts, only these under the V8 profiler (started and
 * stopped through node:inspector, so start-up and warm-up stay out of the profile), written to `out`.
 *
 *   node bench/.profile/target.mjs <client> <concurrency> <calls> <out.cpuprofile>
 */
import * as Fs from "node:fs/promises"
import { Session } from "node:inspector/promises"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { startServer } from "../server.js"
import { allClients, shortNames } from "./clients.js"

const main = async () => {
  const [which = "full-undici", conc = "16", count = "20000", out = "profile.cpuprofile"] = process.argv.slice(2)
  const server = await startServer()
  const clients = allClients(server.baseUrl)
  const name = shortNames[which] ?? which
  const client = clients.find((c) => c.name === name)
  try {
    if (client === undefined) throw new Error(`unknown client ${which}; one of ${Object.keys(shortNames).join(", ")}`)
    const concurrency = Number(conc)
    const calls = Number(count)
    const latencies = new Float64Array(calls)
    await client.run(Math.min(calls, 3000), concurrency, latencies)
    const session = new Session()
    session.connect()
    await session.post("Profiler.enable")
    await session.post("Profiler.setSamplingInterval", { interval: 100 })
    await session.post("Profiler.start")
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    await client.run(calls, concurrency, latencies)
    const elapsed = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    const { profile } = await session.post("Profiler.stop")
    session.disconnect()
    await Fs.writeFile(out, JSON.stringify(profile))
    process.stdout.write(
      `${client.name} @${concurrency}: ${calls} calls in ${elapsed.toFixed(0)} ms, ${
        ((cpu.user + cpu.system) / calls).toFixed(1)
      } µs CPU/call (under the profiler)\n`
    )
  } finally {
    for (const c of clients) await c.dispose()
    await server.close()
  }
}

// In the bundle the server's module is this file too: its child (`--child`) must not run the profile.
if (
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(Path.resolve(process.argv[1])).href &&
  process.argv[2] !== "--child"
) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
    process.exitCode = 1
  })
}
