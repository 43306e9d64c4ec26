// docs/clients.md, Behind an egress proxy (its block below the imports, verbatim; test/readme.test.ts checks it).
import { NodeHttpClient } from "@effect/platform-node"
import { Layer } from "effect"
import { FinClient } from "effect-fin"
import { UndiciHttpClient } from "effect-fin/node"

const Live = FinClient.layerFromEnv().pipe(
  Layer.provide(NodeHttpClient.layerUndiciWithoutDispatcher), // or UndiciHttpClient.layerWithoutDispatcher
  Layer.provide(UndiciHttpClient.layerDispatcherFromEnvProxy)
)

export { Live }
