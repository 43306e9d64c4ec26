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

// What is missing, by name: the peer that needs it (none for a peer itself) and how to install it. A package a peer
// needs that was left out (its own peer, which `npm install --legacy-peer-deps` does not install) is named itself:
// naming the peer would send the user round in a circle.
const missing = new Map<string, { readonly peer?: string; readonly install: string; readonly ranged: boolean }>()
for (const peer of peers) {
  try {
    await import(peer)
  } catch (error) {
    const name = notFound(error)
    if (name === undefined) throw error
    if (name === peer) {
      missing.set(peer, { install: supported(peer), ranged: true })
      continue
    }
    // Quoted for every shell (a range's `^` is cmd.exe's escape). One both peers lack is named once, with a range if
    // either gives one (it may be another package's peer, which the first peer does not list).
    const range = rangeOf(peer, name)
    if (missing.get(name)?.ranged === true) continue
    missing.set(name, { peer, install: range === undefined ? name : `"${name}@${range}"`, ranged: range !== undefined })
  }
}
const needs = [...missing].map(([name, { peer }]) => peer === undefined ? name : `${name} (for ${peer})`)
const installs = [...missing.values()].map(({ install }) => install)

if (needs.length > 0) {
  console.error(`effect-fin: the command line needs ${needs.join(" and ")}: npm install ${installs.join(" ")}`)
  process.exitCode = 1
} else {
  await import("./start.js")
}
