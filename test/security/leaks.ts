/**
 * Looks for credentials in captured output in every form a leak takes, not only verbatim: any run of 16 characters
 * of a token's claims or signature (12 of a client secret), in any case, URL-encoded (once or twice), JSON-escaped,
 * base64 or base64url at each of the three alignments (inside a longer encoded text, a Basic header, too).
 */
const windows = (text: string, size: number): Array<string> =>
  text.length <= size ? [text] : Array.from({ length: text.length - size + 1 }, (_, i) => text.slice(i, i + size))

// The encoded characters that depend on what comes before or after the credential are left out: 1 on each side.
const base64Cores = (credential: string): Array<string> =>
  ["", "x", "xx"].flatMap((pad) => {
    const bytes = Buffer.from(pad + credential, "utf8")
    return (["base64", "base64url"] as const).map((encoding) => {
      const text = bytes.toString(encoding).replace(/=+$/, "")
      const skip = Math.ceil((pad.length * 4) / 3) + (pad.length > 0 ? 1 : 0)
      return text.slice(skip, text.length - 2)
    })
  })

const forms = (credential: string): Array<string> => [
  credential,
  encodeURIComponent(credential),
  encodeURIComponent(encodeURIComponent(credential)),
  JSON.stringify(credential).slice(1, -1),
  ...base64Cores(credential)
]

/** A credential found: which one, the text that matched, and the start of the captured line it was in. */
export interface Leak {
  readonly credential: string
  readonly found: string
  readonly at: string
}

/** Every captured line holding a credential in any of those forms (up to 5 lines: one is enough to fail). */
export const findLeaks = (
  captured: ReadonlyArray<string>,
  credentials: { readonly secret: string; readonly tokens: ReadonlyArray<string> }
): Array<Leak> => {
  const needles = new Map<number, Map<string, string>>()
  const add = (credential: string, size: number) => {
    for (const form of forms(credential)) {
      for (const window of windows(form, size)) {
        if (window.length < Math.min(size, 8)) continue
        const bySize = needles.get(window.length) ?? new Map<string, string>()
        bySize.set(window.toLowerCase(), credential)
        needles.set(window.length, bySize)
      }
    }
  }
  add(credentials.secret, 12)
  // A token's header is public (the same for all); its claims and its signature are not.
  for (const token of credentials.tokens) for (const part of token.split(".").slice(1)) add(part, 16)
  const leaks: Array<Leak> = []
  for (const line of captured) {
    const text = line.toLowerCase()
    for (const [size, bySize] of needles) {
      for (let i = 0; i + size <= text.length; i++) {
        const credential = bySize.get(text.slice(i, i + size))
        if (credential !== undefined) {
          leaks.push({ credential, found: line.slice(i, i + size), at: line.slice(0, 200) })
          break
        }
      }
    }
    if (leaks.length >= 5) break
  }
  return leaks
}
