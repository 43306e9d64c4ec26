import { describe, expect, it } from "@effect/vitest"
import { findLeaks } from "./leaks.js"

// The secret of the chaos run's secrets check: its URL, JSON, base64 and upper-case forms all differ from it.
const chaosSecret = "Qx7+v/9Lk&z\u00e9=Rm2pW8sT"

// The finder the secrets checks rely on: a needle always stands for 12 characters of the secret (16 of a token), in
// whatever form, so it finds a real leak and flags no text that only shares a few bytes with one.
describe("findLeaks", () => {
  it("the public client id, base64-encoded, is no leak of the secret (9 shared bytes are not 12 characters)", () => {
    const line = `debug ${Buffer.from("emulator-client").toString("base64")}`
    expect(findLeaks([line], { secret: "emulator-secret", tokens: [] })).toEqual([])
  })
  it("2 characters of the secret, URL-encoded twice, are not 12 of it", () => {
    // "é=" twice URL-encoded is 12 characters long: any text with a doubly-encoded é then = or & reads as a leak.
    const line = `GET /search?q=caf%25C3%25A9%253Dx`
    expect(findLeaks([line], { secret: chaosSecret, tokens: [] })).toEqual([])
  })
  it("12 characters of the secret are found in every form (the fix keeps what it promises)", () => {
    const part = chaosSecret.slice(3, 15)
    for (const form of [
      part,
      part.toUpperCase(),
      encodeURIComponent(part),
      encodeURIComponent(encodeURIComponent(part)),
      JSON.stringify(part).slice(1, -1),
      Buffer.from(`ab${part}cd`).toString("base64"),
      Buffer.from(`a${part}cd`).toString("base64url"),
      Buffer.from(`${part}cd`).toString("base64"),
      Buffer.from(`id:${chaosSecret}`).toString("base64")
    ]) expect(findLeaks([`x ${form} y`], { secret: chaosSecret, tokens: [] }), form).not.toEqual([])
    expect(findLeaks([`x ${chaosSecret.slice(3, 14)} y`], { secret: chaosSecret, tokens: [] })).toEqual([])
  })
  it("a token is found by 16 of its characters: a JWT's claims or signature, any other token anywhere", () => {
    const opaque = "rt_77c1e44b0d9aa0f3_9e8d7c6b5a4f3e2d"
    const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjbGllbnQtNDIifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    const found = (line: string) => findLeaks([line], { secret: chaosSecret, tokens: [opaque, jwt] }).length
    const [header, claims, signature] = jwt.split(".") as [string, string, string]
    expect([opaque, opaque.slice(-16), claims, signature.slice(0, 16)].map(found)).toEqual([1, 1, 1, 1])
    // A JWT's header is the same on every token: no leak.
    expect([opaque.slice(-15), header].map(found)).toEqual([0, 0])
  })
})
