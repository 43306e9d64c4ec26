import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { redisServerInstalled } from "./test/redis/server.js"

// The Redis suite needs a real redis-server (CI installs it). Without one, say so and run everything else.
const redis = redisServerInstalled()
if (!redis) {
  console.warn(
    "effect-fin: the Redis suite (test/redis) did not run: redis-server is not installed. " +
      "Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) and run npm test again."
  )
}

// The examples import the package by name, as users do; here that name is the source (tsconfig.json's paths).
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const packageAliases = [
  { find: /^effect-fin$/, replacement: source("./src/index.ts") },
  { find: /^effect-fin\/test$/, replacement: source("./src/FinTest.ts") },
  { find: /^effect-fin\/node$/, replacement: source("./src/node/index.ts") },
  { find: /^effect-fin\/redis$/, replacement: source("./src/redis/index.ts") },
  { find: /^effect-fin\/emulator$/, replacement: source("./src/emulator/index.ts") }
]

export default defineConfig({
  resolve: { alias: packageAliases },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    exclude: redis ? [] : ["test/redis/**"],
    globalSetup: redis ? ["test/redis/globalSetup.ts"] : [],
    // Two files at a time even on 2 CPUs (vitest's default there is one): much of the suite waits on child processes,
    // servers and timers, not on the CPU, and the whole ran in 7.7 minutes so, against 12.9 one file at a time.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    minWorkers: 1,
    // Drops a stack vitest would spin on (test/stackGuard.ts says why).
    setupFiles: ["test/stackGuard.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The JSON report gives .ci/run the totals it prints as `N passed, N failed`.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" }
  }
})
