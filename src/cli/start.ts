/**
 * Runs the command line on Node; loaded by `bin.ts` once the optional peers are known to be installed.
 *
 * @internal
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { run } from "./main.js"

NodeRuntime.runMain(Effect.provide(run(process.argv), NodeContext.layer), { disableErrorReporting: true })
