#!/usr/bin/env node
/**
 * The `effect-fin` executable. The command line needs two optional peers; when one is missing, one line says which
 * package to install instead of a stack trace.
 *
 * @internal
 */
import { readFileSync } from "node:fs"

const peers = ["@effect/cli", "@effect/platform-node"] as const

// The versions this build supports, from its own package.json (dist/cli/bin.js and src/cli/bin.ts are both two levels
// down): a bare `npm install @effect/platform-node` now picks the Effect 4 line, which cannot install beside Effect 3.
const supported = (peer: string): string => {
  try {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
    const range = /^\^?(\d+\.\d+)/.exec(String(manifest.peerDependencies?.[peer] ?? ""))
    return range === null ? peer : `${peer}@${range[1]}`
  } catch {
    return peer
  }
}

const missing: Array<string> = []
for (const peer of peers) {
  try {
    await import(peer)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") missing.push(peer)
    else throw error
  }
}

if (missing.length > 0) {
  console.error(`effect-fin: the command line needs ${missing.join(" and ")}: npm install ${missing.map(supported).join(" ")}`)
  process.exitCode = 1
} else {
  await import("./start.js")
}
