import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { afterEach, describe, expect, it, vi } from "vitest"

// effect-fin bundled into a user's program deployed without node_modules: its own data/ cannot be resolved.
vi.mock("node:module", async (original) => ({
  ...(await original<typeof import("node:module")>()),
  createRequire: () => {
    throw new Error("Cannot find module 'effect-fin/data/subdivisions.json'")
  }
}))

const { run } = await import("../src/cli/main.js")

describe("run where the package's data/ cannot be found", () => {
  afterEach(() => {
    vi.restoreAllMocks()
    process.exitCode = undefined
  })

  const stderrOf = async (argv: ReadonlyArray<string>) => {
    const lines: Array<string> = []
    vi.spyOn(console, "error").mockImplementation((text) => void lines.push(String(text)))
    vi.spyOn(process.stderr, "write").mockImplementation((text) => (lines.push(String(text)), true))
    vi.spyOn(process.stdout, "write").mockImplementation(() => true)
    await Effect.runPromise(Effect.provide(run(["node", "effect-fin", ...argv]), NodeContext.layer))
    return lines.join("")
  }

  it("snapshot without --out is refused, not written into the working folder (data/, src/internal/)", async () => {
    const stderr = await stderrOf(["snapshot", "--from-iso-codes", "/nonexistent-iso-codes", "--source-version", "1"])
    expect(process.exitCode).toBe(2)
    expect(stderr).toMatch(/^effect-fin snapshot: give --out DIR/)
  })

  it("cross-check without --out says where the snapshot is to come from, not data/ of the working folder", async () => {
    const stderr = await stderrOf(["cross-check", "--countries", "USA", "--base-url", "http://127.0.0.1:9"])
    expect(process.exitCode).toBe(2)
    expect(stderr).toMatch(/^effect-fin cross-check: give --out DIR/)
  })
})
