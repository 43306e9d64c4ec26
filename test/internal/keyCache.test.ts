import { describe, expect, it } from "@effect/vitest"
import * as Redacted from "effect/Redacted"
import * as KeyCache from "../../src/internal/keyCache.js"

// A cache whose keys say which `prepare` call made them, and a count of the calls.
const counted = () => {
  const made: Array<string> = []
  const cache = KeyCache.make((algorithm, secret) => {
    made.push(`${algorithm}:${secret}`)
    return `${algorithm}:${secret}#${made.length}`
  })
  return { cache, made }
}

describe("KeyCache", () => {
  it("prepares a key once per algorithm and secret, whichever Redacted holds it", () => {
    const { cache, made } = counted()
    const first = cache.get("sha256", Redacted.make("s"))
    expect(cache.get("sha256", Redacted.make("s"))).toBe(first)
    expect(cache.get("sha512", Redacted.make("s"))).toBe("sha512:s#2")
    expect(made).toEqual(["sha256:s", "sha512:s"])
  })

  it("keeps at most 64 keys per algorithm, dropping the oldest one first", () => {
    const { cache, made } = counted()
    for (let i = 0; i < 65; i++) cache.get("sha256", Redacted.make(`s${i}`))
    expect(made).toHaveLength(65)
    // The 64 newest are kept (s1 to s64): none is prepared again.
    for (let i = 1; i < 65; i++) cache.get("sha256", Redacted.make(`s${i}`))
    expect(made).toHaveLength(65)
    // The oldest (s0) was dropped: prepared again.
    cache.get("sha256", Redacted.make("s0"))
    expect(made).toHaveLength(66)
  })

  it("drops the least recently used key: one in use outlives 64 others made after it", () => {
    const { cache, made } = counted()
    cache.get("sha256", Redacted.make("hot"))
    for (let i = 0; i < 100; i++) {
      cache.get("sha256", Redacted.make(`once${i}`))
      cache.get("sha256", Redacted.make("hot"))
    }
    expect(made.filter((m) => m === "sha256:hot")).toHaveLength(1)
  })

  it("set replaces only an entry it holds; forget drops one, so the next get prepares it again", () => {
    const { cache, made } = counted()
    cache.set("sha256", "absent", "stray")
    expect(cache.get("sha256", Redacted.make("absent"))).toBe("sha256:absent#1")
    cache.set("sha256", "absent", "replaced")
    expect(cache.get("sha256", Redacted.make("absent"))).toBe("replaced")
    cache.forget("sha256", "absent")
    expect(cache.get("sha256", Redacted.make("absent"))).toBe("sha256:absent#2")
    expect(made).toEqual(["sha256:absent", "sha256:absent"])
  })
})
