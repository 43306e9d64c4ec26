import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Emulator from "../src/emulator/Emulator.js"

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

  // README: "With FIN_CLIENT_ID, FIN_CLIENT_SECRET (and FIN_ENVIRONMENT / FIN_BASE_URL) set, it runs the same against
  // the sandbox, without the webhook step". Here the service the variables name is an emulator over loopback.
  it("with FIN_* set runs the same steps against the service they name, without the webhook step", () =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const emulator = yield* Emulator.make({ port: 0 })
      const { code, stdout } = yield* Effect.promise(() =>
        demo({
          FIN_CLIENT_ID: emulator.credentials.clientId,
          FIN_CLIENT_SECRET: emulator.credentials.clientSecret,
          FIN_BASE_URL: emulator.url
        })
      )
      expect(code).toBe(0)
      expect(stdout).toContain("effect-fin demo against the service named by FIN_* (webhook step skipped)")
      expect(stdout).not.toContain("local emulator was started")
      expect(stdout).toContain("access token issued and cached")
      expect(stdout).toMatch(/100 USD -> [\d.]+ CAD at 1\.45/)
      expect(stdout).toContain("RequestValidationError: Invalid fee calculation request")
      expect(stdout).toMatch(/57 subdivisions from the API/)
      expect(stdout).not.toContain("Webhook:")
      expect(stdout).toContain("CAN: 13 subdivisions from the offline snapshot")
      expect(stdout).toContain("Done.")
      expect(stdout).not.toContain(emulator.credentials.clientSecret)
      const counters = yield* emulator.counters
      expect([counters.requests["POST /v1/fee-calculation"], counters.webhooksSent]).toEqual([2, 0])
    }))), 60_000)

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
