import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The JSON report gives .ci/run the totals it prints as `N passed, N failed`.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" }
  }
})
