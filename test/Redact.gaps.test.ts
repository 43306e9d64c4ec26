import { describe, expect, it } from "@effect/vitest"
import { redactor } from "../src/internal/redact.js"

describe("redactor: gaps found by mutation testing", () => {
  it("with no credential (or only empty ones), still returns only the kept start and one more character", () => {
    expect(redactor([], 5)("0123456789")).toBe("012345")
    expect(redactor([""], 5)("0123456789")).toBe("012345")
  })

  it("a JWT's later part of exactly 16 characters counts as a credential of its own", () => {
    const claims = "eyJzdWIiOiJ4In0x"
    expect(claims).toHaveLength(16)
    const token = `eyJhbGciOiJIUzI1NiJ9.${claims}.c2lnbmF0dXJlLXNpZ25hdHVyZQ`
    expect(redactor([token], 1024)(`claims ${claims} echoed`)).toBe("claims <redacted> echoed")
  })
})
