/**
 * Byte helpers shared by the body readers (API responses, webhook deliveries, the emulator's requests).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/** `chunks` (of `size` bytes in all) as one array; a single chunk is returned as is, not copied. */
const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.length
  }
  return bytes
}

/**
 * `stream` read until it ends or has given more than `limit` bytes, whichever comes first: its first `limit` bytes,
 * and whether there was more (the rest is never read, nor held). The stream is pulled in the caller's scope: on Node
 * the platform then closes a request's body only after the response is written, where ending it earlier would reset
 * the connection before a 413 is sent.
 */
export const readUpTo = <E>(
  stream: Stream.Stream<Uint8Array, E>,
  limit: number
): Effect.Effect<{ readonly bytes: Uint8Array; readonly cut: boolean }, E, Scope.Scope> =>
  Effect.flatMap(Stream.toPull(stream), (pull) =>
    Effect.gen(function*() {
      const chunks: Array<Uint8Array> = []
      let size = 0
      while (size <= limit) {
        const next = yield* Effect.either(pull)
        if (Either.isLeft(next)) {
          if (Option.isSome(next.left)) return yield* Effect.fail(next.left.value)
          break
        }
        for (const chunk of next.right) {
          chunks.push(chunk)
          size += chunk.length
        }
      }
      const bytes = concat(chunks, size)
      return size > limit ? { bytes: bytes.subarray(0, limit), cut: true } : { bytes, cut: false }
    }))

/** `stream` read whole, or `None` once it has given more than `limit` bytes (see `readUpTo`). */
export const readAtMost = <E>(
  stream: Stream.Stream<Uint8Array, E>,
  limit: number
): Effect.Effect<Option.Option<Uint8Array>, E, Scope.Scope> =>
  Effect.map(readUpTo(stream, limit), ({ bytes, cut }) => cut ? Option.none() : Option.some(bytes))
