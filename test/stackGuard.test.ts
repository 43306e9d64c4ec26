import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { expect, it } from "vitest"

const root = fileURLToPath(new URL("..", import.meta.url))

it("a test failing with a plain object of many entries is reported failed, vitest not held by its stack", async () => {
  const dir = mkdtempSync(join(tmpdir(), "stack-guard-"))
  try {
    const report = join(dir, "report.json")
    // Without the setup file this vitest spins at full CPU parsing the stack: killed at 100 s, it leaves no report.
    const code = await new Promise<number | null>((resolve) => {
      const child = execFile(
        process.execPath,
        [join(root, "node_modules/vitest/vitest.mjs"), "run", "--config", "test/stackGuard/vitest.config.ts"],
        { cwd: root, env: { ...process.env, STACK_GUARD_REPORT: report }, timeout: 100_000, killSignal: "SIGKILL" }
      )
      child.on("exit", (code) => resolve(code))
    })
    expect(code).toBe(1)
    const result = JSON.parse(readFileSync(report, "utf8"))
    expect([result.numPassedTests, result.numFailedTests]).toEqual([0, 1])
    const [failure] = result.testResults[0].assertionResults[0].failureMessages
    expect(failure).toContain('{"code":"US-199","name":"\\"State\\" 199","type":"state"}')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 120_000)
