import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as NodeCrypto from "node:crypto"
import * as Digest from "../../src/internal/digest.js"

const bytes = (length: number, seed: number) => Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 255)

describe("internal/digest", () => {
  // The WebCrypto one serves runtimes without node:crypto: both give the same bytes (store keys and fingerprints are
  // shared between processes, which may run on different runtimes).
  it.effect("node:crypto and WebCrypto give the same SHA-256 and HMAC-SHA-256", () =>
    Effect.gen(function*() {
      const node = Digest.make(NodeCrypto)
      const web = Digest.make(undefined)
      for (const length of [0, 1, 55, 56, 64, 65, 300]) {
        const data = bytes(length, length)
        expect(yield* node.sha256(data), `${length}`).toEqual(yield* web.sha256(data))
        // An empty key too (WebCrypto refuses one: a TokenStore.keyFor called with an empty secret).
        for (const keyLength of [0, 1, 32, 64, 65, 200]) {
          const key = bytes(keyLength, 7)
          expect(yield* node.hmacSha256(key, data), `${length} ${keyLength}`).toEqual(yield* web.hmacSha256(key, data))
        }
      }
      expect(Buffer.from(yield* Digest.sha256(new TextEncoder().encode("abc"))).toString("hex"))
        .toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }))

  // WebCrypto's digests are promises settled on a thread pool in real time, which the TestClock does not wait for.
  it("on Node, both are synchronous", () => {
    const data = new TextEncoder().encode("client")
    expect(Effect.runSync(Digest.sha256(data))).toHaveLength(32)
    expect(Effect.runSync(Digest.hmacSha256(data, data))).toHaveLength(32)
  })
})
