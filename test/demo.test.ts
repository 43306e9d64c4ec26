import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

const demo = (variables: NodeJS.ProcessEnv = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(
      join(root, "node_modules", ".bin", "tsx"),
      ["scripts/demo.ts"],
      { cwd: root, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...variables }, encoding: "utf8" },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
    )
  )

describe("npm start (the main job)", () => {
  it("runs every step against the in-process emulator with no credentials", async () => {
    const { code, stdout } = await demo()
    expect(code).toBe(0)
    expect(stdout).toMatch(/local emulator was started at http:\/\/127\.0\.0\.1:\d+/)
    expect(stdout).toContain("access token issued and cached")
    expect(stdout).toMatch(/100 USD -> [\d.]+ CAD at 1\.45/)
    expect(stdout).toMatch(/[\d.]+ USD -> 100 CAD at 1\.45/)
    expect(stdout).toContain("RequestValidationError: Invalid fee calculation request")
    expect(stdout).toMatch(/57 subdivisions from the API/)
    expect(stdout).toContain(`search "new y": US-NY New York`)
    expect(stdout).toContain("BR-SP São Paulo")
    expect(stdout).toContain("receiver answered 200; signature verified")
    expect(stdout).toMatch(/is ACTIVE \(active: true, sandbox: true\)/)
    expect(stdout).toContain("CAN: 13 subdivisions from the offline snapshot")
    expect(stdout).toContain("MEX: 32 subdivisions from the offline snapshot, without a request")
    expect(stdout).toContain("Done.")
    expect(stdout).not.toContain("emulator-secret")
  }, 60_000)

  it("names the variable to change when FIN_* is misconfigured, before sending anything", async () => {
    const { code, stderr } = await demo({
      FIN_CLIENT_ID: "my-client",
      FIN_CLIENT_SECRET: "",
      FIN_BASE_URL: "http://127.0.0.1:9"
    })
    expect(code).toBe(1)
    expect(stderr).toContain("FIN_CLIENT_SECRET must be a non-empty string")
  }, 60_000)
})
