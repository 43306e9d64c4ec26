import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { cuts } from "../bench/lib/ablation.js"

// `npm run bench` sizes each piece of a call by cutting it out of a copy of src/; a cut whose text no longer matches
// the source stops the whole run (after minutes of it). Said here instead, when the source changes.
describe("bench/lib/ablation.ts", () => {
  it("every cut still matches the source it edits", () => {
    const edits = Object.entries(cuts).flatMap(([cut, list]) => list.map((edit) => [cut, ...edit] as const))
    expect(edits.length).toBeGreaterThan(5)
    for (const [cut, file, from] of edits) {
      const text = readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8")
      expect(typeof from === "string" ? text.includes(from) : from.test(text), `${cut}: src/${file}`).toBe(true)
    }
  })
})
