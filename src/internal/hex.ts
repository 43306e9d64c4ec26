/**
 * Bytes as lower-case hex, for the digests and MACs the package writes (store keys, fingerprints, signatures).
 *
 * @internal
 */

const hexDigits = "0123456789abcdef"

/** `bytes` as lower-case hex, two digits a byte. */
export const fromBytes = (bytes: Uint8Array): string => {
  let out = ""
  for (const byte of bytes) out += hexDigits[byte >> 4]! + hexDigits[byte & 15]!
  return out
}
