import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Bytes from "../../src/internal/bytes.js"

// A stream pulled one chunk at a time: each array its own pull.
const chunked = (...arrays: ReadonlyArray<ReadonlyArray<number>>) =>
  Stream.fromChunks(...arrays.map((a) => Chunk.of(new Uint8Array(a))))
const readUpTo = <E>(stream: Stream.Stream<Uint8Array, E>, limit: number) =>
  Effect.map(Effect.scoped(Bytes.readUpTo(stream, limit)), ({ bytes, cut }) => [Array.from(bytes), cut])
const readAtMost = <E>(stream: Stream.Stream<Uint8Array, E>, limit: number) =>
  Effect.map(Effect.scoped(Bytes.readAtMost(stream, limit)), Option.map((bytes) => Array.from(bytes)))

describe("internal/bytes", () => {
  it.effect("an empty stream is no bytes, not cut", () =>
    Effect.gen(function*() {
      expect(yield* readUpTo(Stream.empty, 10)).toEqual([[], false])
      expect(yield* readAtMost(Stream.empty, 0)).toEqual(Option.some([]))
    }))

  it.effect("chunks are joined in order, to exactly their size", () =>
    Effect.gen(function*() {
      expect(yield* readUpTo(chunked([1, 2], [3], [4, 5]), 10)).toEqual([[1, 2, 3, 4, 5], false])
    }))

  it.effect("exactly `limit` bytes are whole; one more is cut to `limit`, however the chunks fall", () =>
    Effect.gen(function*() {
      expect(yield* readUpTo(chunked([1, 2], [3, 4]), 4)).toEqual([[1, 2, 3, 4], false])
      expect(yield* readAtMost(chunked([1, 2], [3, 4]), 4)).toEqual(Option.some([1, 2, 3, 4]))
      // A chunk ends exactly at the limit and more follows.
      expect(yield* readUpTo(chunked([1, 2], [3, 4], [5]), 4)).toEqual([[1, 2, 3, 4], true])
      expect(yield* readAtMost(chunked([1, 2], [3, 4], [5]), 4)).toEqual(Option.none())
      expect(yield* readUpTo(chunked([1, 2, 3, 4, 5, 6]), 4)).toEqual([[1, 2, 3, 4], true])
    }))

  it.effect("a failure before the limit is the stream's; the rest past the limit is never read", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(readUpTo(Stream.concat(chunked([1]), Stream.fail("boom")), 10))).toBe("boom")
      expect(yield* readUpTo(Stream.concat(chunked([1, 2, 3, 4, 5]), Stream.fail("never")), 4))
        .toEqual([[1, 2, 3, 4], true])
    }))
})

describe("Encoding.encodeHex (the signatures' and store keys' hex)", () => {
  // Every byte value, as Node writes it: a wrong digit would otherwise show only as signatures that never match.
  it("writes every byte as two lower-case hex digits", () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i)
    expect(Encoding.encodeHex(bytes)).toBe(Buffer.from(bytes).toString("hex"))
    expect(Encoding.encodeHex(new Uint8Array(0))).toBe("")
  })
})
