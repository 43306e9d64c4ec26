import { describe, expect, it } from "@effect/vitest"
import * as Loopback from "../../src/internal/loopback.js"

describe("Loopback.urlIsLoopback", () => {
  it("is true of loopback URLs, false of others, and false (not thrown) for one URL cannot parse", () => {
    const loopback = ["http://127.0.0.1:4010", "http://localhost:4010", "http://[::1]:4010", "http://[::ffff:7f00:1]"]
    for (const url of loopback) {
      expect(Loopback.urlIsLoopback(url), url).toBe(true)
    }
    // A scoped IPv6 address (the emulator listens on one it is told to): no URL the client could be given.
    for (const url of ["http://192.0.2.2:4010", "http://[fe80::1]:4010", "http://[fe80::1%eth0]:4010", "not a url"]) {
      expect(Loopback.urlIsLoopback(url), url).toBe(false)
    }
  })
})
