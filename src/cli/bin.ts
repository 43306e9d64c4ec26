#!/usr/bin/env node
/**
 * The `effect-fin` executable. The command line needs two optional peers; when one (or a package one of them needs)
 * is missing, one line says which package to install instead of a stack trace.
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

// The package a failed import could not find; undefined for another failure, a file missing inside an installed
// package included (a path, relative or absolute: the installation is broken, which its stack trace tells).
const notFound = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown }).code
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return undefined
  const name = /Cannot find (?:package|module) '((?:@[\w.-]+\/)?[\w.-]+)(?:\/[^']*)?'/.exec(String((error as Error).message))
  return name === null || name[1]!.startsWith(".") ? undefined : name[1]
}

// The range the installed `peer` asks of `dependency`, from its package.json (above its entry module).
const rangeOf = (peer: string, dependency: string): string | undefined => {
  try {
    let dir = new URL(".", import.meta.resolve(peer))
    for (let depth = 0; depth < 6; depth++, dir = new URL("..", dir)) {
      try {
        const manifest = JSON.parse(readFileSync(new URL("package.json", dir), "utf8"))
        if (manifest.name === peer) return manifest.peerDependencies?.[dependency] ?? manifest.dependencies?.[dependency]
      } catch {
        // No manifest at this level: one further up.
      }
    }
  } catch {
    // Not resolvable: no range to give.
  }
  return undefined
}

// What is missing, as said and as installed: a peer, or a package a peer needs that was left out (its own peer, which
// `npm install --legacy-peer-deps` does not install): naming the peer would send the user round in a circle.
const needs: Array<string> = []
const installs: Array<string> = []
for (const peer of peers) {
  try {
    await import(peer)
  } catch (error) {
    const name = notFound(error)
    if (name === undefined) throw error
    if (name === peer) {
      needs.push(peer)
      installs.push(supported(peer))
    } else if (!needs.some((need) => need.startsWith(`${name} `))) {
      // Quoted for every shell (a range's `^` is cmd.exe's escape); one the two peers share is named once.
      const range = rangeOf(peer, name)
      needs.push(`${name} (for ${peer})`)
      installs.push(range === undefined ? name : `"${name}@${range}"`)
    }
  }
}

if (needs.length > 0) {
  console.error(`effect-fin: the command line needs ${needs.join(" and ")}: npm install ${installs.join(" ")}`)
  process.exitCode = 1
} else {
  await import("./start.js")
}
