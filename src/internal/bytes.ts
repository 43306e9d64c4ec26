/**
 * Byte helpers shared by the body readers (API responses, webhook deliveries).
 *
 * @internal
 */

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
