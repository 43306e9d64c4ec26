#!/usr/bin/env node
/**
 * The `effect-fin` executable. The command line needs two optional peers; when one is missing, one line says which
 * package to install instead of a stack trace.
 *
 * @internal
 */
const peers = ["@effect/cli", "@effect/platform-node"] as const

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
  console.error(`effect-fin: the command line needs ${missing.join(" and ")}: npm install ${missing.join(" ")}`)
  process.exitCode = 1
} else {
  await import("./start.js")
}
