/**
 * Runs the command line on Node; loaded by `bin.ts` once the optional peers are known to be installed.
 *
 * @internal
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { run } from "./main.js"

// The package's own data/, found through its exports (a self-reference), wherever the bundler put this module.
const dataDir = (() => {
  try {
    return Path.dirname(createRequire(import.meta.url).resolve("effect-fin/data/subdivisions.json"))
  } catch {
    return undefined
  }
})()

NodeRuntime.runMain(Effect.provide(run(process.argv, { dataDir }), NodeContext.layer), {
  disableErrorReporting: true,
  // `run` logs to stderr; the runtime's own pretty logger would write to stdout.
  disablePrettyLogger: true
})
