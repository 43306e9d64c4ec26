/**
 * Every constant a public entry exports is frozen, all the way down: the client's checks read them on every call (the
 * base URL a client secret is sent to, the allowed signature algorithms, the country list), and a program (or a
 * dependency of it) writing to one from JavaScript, past the `readonly` types, would change them for every client in
 * the process.
 */
import { describe, expect, it } from "@effect/vitest"

describe("exported constants", () => {
  it("are frozen, nested values too, in every entry", async () => {
    const entries = await Promise.all([
      import("../../src/index.js"),
      import("../../src/node/index.js"),
      import("../../src/emulator/index.js"),
      import("../../src/redis/index.js"),
      import("../../src/FinTest.js").then((FinTest) => ({ FinTest }))
    ])
    const unfrozen: Array<string> = []
    const walk = (value: unknown, path: string): void => {
      if (typeof value !== "object" || value === null) return
      if (!Array.isArray(value) && Object.getPrototypeOf(value) !== Object.prototype) return
      if (!Object.isFrozen(value)) unfrozen.push(path)
      for (const [key, inner] of Object.entries(value)) walk(inner, `${path}.${key}`)
    }
    for (const entry of entries) {
      for (const [module, exports] of Object.entries(entry)) {
        for (const [name, value] of Object.entries(exports as object)) walk(value, `${module}.${name}`)
      }
    }
    expect(unfrozen).toEqual([])
  })
})
