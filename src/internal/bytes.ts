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
export const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
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
 * `stream` read whole, or `None` as soon as it has given more than `limit` bytes (the rest is never read, nor held).
 * The stream is pulled in the caller's scope: on Node the platform then closes a request's body only after the
 * response is written, where ending it earlier would reset the connection before a 413 is sent.
 */
export const readAtMost = <E>(
  stream: Stream.Stream<Uint8Array, E>,
  limit: number
): Effect.Effect<Option.Option<Uint8Array>, E, Scope.Scope> =>
  Effect.flatMap(Stream.toPull(stream), (pull) =>
    Effect.gen(function*() {
      const chunks: Array<Uint8Array> = []
      let size = 0
      while (true) {
        const next = yield* Effect.either(pull)
        if (Either.isLeft(next)) {
          if (Option.isSome(next.left)) return yield* Effect.fail(next.left.value)
          break
        }
        for (const chunk of next.right) {
          size += chunk.length
          if (size > limit) return Option.none()
          chunks.push(chunk)
        }
      }
      return Option.some(concat(chunks, size))
    }))
