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

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: redis ? [] : ["test/redis/**"],
    globalSetup: redis ? ["test/redis/globalSetup.ts"] : [],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The JSON report gives .ci/run the totals it prints as `N passed, N failed`.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" }
  }
})
