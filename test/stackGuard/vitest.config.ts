import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// The suite's setup file on a test that fails on purpose (test/stackGuard.test.ts runs it).
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  test: {
    include: ["*.fixture.ts"],
    setupFiles: ["../stackGuard.ts"],
    reporters: ["default", "json"],
    outputFile: { json: process.env.STACK_GUARD_REPORT ?? "report.json" }
  }
})
