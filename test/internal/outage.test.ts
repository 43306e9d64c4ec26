import { describe, expect, it } from "@effect/vitest"
import * as Outage from "../../src/internal/outage.js"

describe("Outage", () => {
  it("begins with a first failure; the failures after it begin nothing", () => {
    const outage = Outage.make()
    expect(outage.down()).toBe(false)
    expect(outage.failed("claim", 0)).toBe(true)
    expect(outage.down()).toBe(true)
    expect([outage.failed("claim", 1), outage.failed("complete", 2)]).toEqual([false, false])
  })

  it("ends with an answer to the operation that failed first, at once", () => {
    const outage = Outage.make()
    outage.failed("get", 0)
    outage.failed("set", 10)
    expect(outage.answered("set", 20)).toBe(false)
    expect(outage.answered("get", 20)).toBe(true)
    expect(outage.down()).toBe(false)
    // Over: nothing more to end, and the next failure begins a new one.
    expect(outage.answered("get", 30)).toBe(false)
    expect(outage.failed("set", 40)).toBe(true)
  })

  it("ends with any answer once a minute has passed with no failure, the last failure counted", () => {
    const outage = Outage.make()
    outage.failed("clear", 0)
    outage.failed("lock", 30_000)
    expect(outage.answered("get", 30_000 + Outage.quietMillis - 1)).toBe(false)
    expect(outage.down()).toBe(true)
    expect(outage.answered("get", 30_000 + Outage.quietMillis)).toBe(true)
    expect(outage.down()).toBe(false)
  })

  it("with no outage going on, an answer ends nothing", () => {
    const outage = Outage.make()
    expect(outage.answered("get", Outage.quietMillis * 2)).toBe(false)
    expect(outage.down()).toBe(false)
  })
})
