/**
 * Whether a secret has whitespace around it: the one rule of `Webhooks` (which refuses such a secret), of the CLI
 * (which says so of `FIN_WEBHOOK_SECRET` before reading a body) and of `FinConfig`'s `clientId` and `clientSecret`.
 *
 * @internal
 */

// What `String.prototype.trim` removes, every other C0 control, DEL and the C1 controls (NEL among them), and the
// invisible characters a copy from a web page brings along unseen besides: a soft hyphen, the Arabic letter mark, the
// Mongolian vowel separator, the zero-width ones and direction marks (U+200B-U+200F), the bidirectional embeddings and
// overrides (U+202A-U+202E) and isolates (U+2066-U+2069), the word joiner and invisible operators (U+2060-U+2064).
// Printable ASCII, a secret's usual first and last character, is answered first.
const isSpace = (c: number): boolean =>
  c < 0x7f ? c <= 32 : c <= 0xa0 || c === 0xad || c === 0x61c || c === 0x1680 || c === 0x180e ||
    (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) || (c >= 0x205f && c <= 0x2064) ||
    (c >= 0x2066 && c <= 0x2069) || c === 0x3000 || c === 0xfeff

/**
 * How the messages that refuse such a secret say the rule (a control character is refused too, so "whitespace" alone
 * would send a user looking for a space that is not there).
 */
export const rule =
  "must not start or end with whitespace, a control character or an invisible formatting one (a trailing newline, say)"

/** Two character codes, not a trim: this is on every verification. */
export const isPadded = (value: string): boolean =>
  value !== "" && (isSpace(value.charCodeAt(0)) || isSpace(value.charCodeAt(value.length - 1)))
