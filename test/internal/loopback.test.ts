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

describe("Loopback.isEveryInterface", () => {
  it("is true of the addresses of every interface, however IPv6 writes it, and of nothing else", () => {
    // As the system reads them: "0" and "0.0" are 0.0.0.0, a zone id does not narrow `::`, nor does IPv4 mapping.
    for (const host of ["0.0.0.0", "::", "::0", "0:0:0:0:0:0:0:0", "0", "0.0", "::%lo", "::ffff:0.0.0.0"]) {
      expect(Loopback.isEveryInterface(host), host).toBe(true)
    }
    for (const host of [undefined, "127.0.0.1", "::1", "localhost", "192.0.2.2", "fe80::1%eth0", "0.0.0.1", ":::"]) {
      expect(Loopback.isEveryInterface(host), host).toBe(false)
    }
  })
})
