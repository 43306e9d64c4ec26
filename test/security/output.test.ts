import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const src = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "src")

// The library says everything through Effect's logger (README, "Logs"), so a program's own logger, and the secrets
// check of the chaos run that captures it, sees every line: a write of its own to the console or the process's streams
// would pass both (one straight to a file descriptor, `writeSync(2, ...)`, passes even the run's capture of them).
// Only the command line prints, being a program.
describe("output", () => {
  it("no module but the command line's writes to the console or the process's streams itself", () => {
    const direct = /\bconsole\.\w+\s*\(|\bprocess\.(stdout|stderr)\b|\bwriteSync\s*\(|\b_rawDebug\b/
    const files = readdirSync(src, { recursive: true, encoding: "utf8" })
      .map((file) => file.replaceAll("\\", "/"))
      .filter((file) => file.endsWith(".ts") && !file.startsWith("cli/"))
    expect(files.length).toBeGreaterThan(40)
    const writing = files.filter((file) =>
      readFileSync(join(src, file), "utf8").split("\n").some((line) =>
        !/^\s*(\/\/|\*)/.test(line) && direct.test(line)
      )
    )
    expect(writing).toEqual([])
  })
})
