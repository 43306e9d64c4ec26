import { describe, expect, it } from "@effect/vitest"
import * as KnownTokens from "../../src/internal/knownTokens.js"

describe("KnownTokens", () => {
  it("keeps the last 8 tokens, a token seen again the newest again, none empty", () => {
    const known = KnownTokens.make()
    for (const t of ["a", "b", "c", "d", "e", "f", "g", "h"]) known.add(t)
    expect(known.all()).toEqual(["a", "b", "c", "d", "e", "f", "g", "h"])
    known.add("")
    expect(known.all()).toHaveLength(8)
    // "a" seen again: "b" is the oldest now, dropped for "i".
    known.add("a")
    known.add("i")
    expect(known.all()).toEqual(["c", "d", "e", "f", "g", "h", "a", "i"])
  })

  it("gives one list while nothing changes, a new one when the token sent, the secret or a known token does", () => {
    const known = KnownTokens.make()
    known.add("rt")
    const listOf = KnownTokens.listWith(known.all)
    const first = listOf("at", "secret")
    expect(first).toEqual(["at", "secret", "rt"])
    expect(listOf("at", "secret")).toBe(first)
    expect(listOf("at2", "secret")).toEqual(["at2", "secret", "rt"])
    expect(listOf("at2", "secret2")).toEqual(["at2", "secret2", "rt"])
    known.add("rt2")
    expect(listOf("at2", "secret2")).toEqual(["at2", "secret2", "rt", "rt2"])
  })
})
