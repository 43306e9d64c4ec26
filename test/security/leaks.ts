/**
 * Looks for credentials in captured output in every form a leak takes, not only verbatim: any run of 16 characters
 * of a token's claims or signature (12 of a client secret), in any case, URL-encoded (once or twice), JSON-escaped,
 * base64 or base64url at each of the three alignments (inside a longer encoded text, a Basic header, too).
 */
// Runs of `size` characters (whole code points) of the credential, or the credential whole when it is shorter.
const windows = (text: string, size: number): Array<string> => {
  const chars = Array.from(text)
  return chars.length <= size
    ? [text]
    : Array.from({ length: chars.length - size + 1 }, (_, i) => chars.slice(i, i + size).join(""))
}

// A run's base64 and base64url at each of the three alignments, only the characters its own bytes decide (those that
// also encode a byte before or after it, which depend on the text around it, are left out).
const base64Cores = (run: string): Array<string> => {
  const bytes = Buffer.from(run, "utf8")
  return [0, 1, 2].flatMap((pad) => {
    const padded = Buffer.concat([Buffer.alloc(pad, 0x78), bytes])
    return (["base64", "base64url"] as const).map((encoding) =>
      padded.toString(encoding).slice(Math.ceil((8 * pad) / 6), Math.floor((8 * (pad + bytes.length)) / 6))
    )
  })
}

// Each run of the credential in each form: the run is taken before it is encoded, so that a needle always stands for
// `size` characters of the credential (12 characters of an encoded form may hold only 2 of it: `%25C3%25A9%25` is
// "é" URL-encoded twice; 12 of base64 only 9 bytes, as many as `emulator-` shares with `emulator-client`).
const forms = (run: string): Array<string> => [
  run,
  encodeURIComponent(run),
  encodeURIComponent(encodeURIComponent(run)),
  JSON.stringify(run).slice(1, -1),
  ...base64Cores(run)
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
    for (const run of windows(credential, size)) {
      if (run.length < Math.min(size, 8)) continue
      for (const form of forms(run)) {
        const needle = form.toLowerCase()
        const bySize = needles.get(needle.length) ?? new Map<string, string>()
        bySize.set(needle, credential)
        needles.set(needle.length, bySize)
      }
    }
  }
  add(credentials.secret, 12)
  // A JWT's header is public (the same for all); its claims and its signature are not. Any other token is secret whole.
  for (const token of credentials.tokens) {
    const [header, ...parts] = token.split(".")
    for (const part of parts.length === 0 ? [header!] : parts) add(part, 16)
  }
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
