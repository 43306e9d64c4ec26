/**
 * The webhook handler's checks of a delivery's body before it is read: a body a parser read first, one left on the
 * socket by a protocol upgrade, a `Content-Encoding` other than `identity` or a `Transfer-Encoding` other than
 * `chunked` and `identity`, the refusal of one larger than `maxBodySize`, and the messages that say so.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import { fail } from "./webhookVerify.js"

/**
 * A body parser that ran before the handler (express.json() on Node, `await request.json()` on a web `Request`) left
 * nothing to read: said so, rather than a signature that matches no secret (the empty rest of a Node stream) or a
 * defect answered 500 without a word (a web `Request`'s used body stream is locked).
 */
export const bodyReadBefore = (source: unknown): boolean =>
  (Predicate.hasProperty(source, "bodyUsed") && source.bodyUsed === true) ||
  (Predicate.hasProperty(source, "readableEnded") && source.readableEnded === true)

/**
 * A request with `Connection: Upgrade` (`Upgrade: h2c`, offered by some HTTP/1.1 clients with a POST) reaches the app
 * through Node's 'upgrade' event when the server has a listener for it (`HttpServer.serve` adds one): its body is then
 * left on the socket, and the request's stream ends empty. Said so, rather than as a signature that matches no secret.
 */
export const takenAsUpgrade = (source: unknown): boolean =>
  Predicate.hasProperty(source, "upgrade") && source.upgrade === true &&
  !(Predicate.hasProperty(source, "method") && source.method === "CONNECT")

/** The message of a delivery taken as a protocol upgrade (`takenAsUpgrade`): its body cannot be read. */
export const upgradeMessage = "the delivery asked for a protocol upgrade (an Upgrade header) and the server took " +
  "it as one: its body is not readable by the handler; whatever adds the Upgrade header on the way must leave " +
  "deliveries as they are"

/** The message of a delivery whose body was read before the handler (`bodyReadBefore`): where to mount it instead. */
export const readBeforeMessage = "the body was read before the handler (a body parser, or request.json()): " +
  "mount the handler where nothing reads the body first (see \"Do not parse the body before the handler\" in " +
  "the README)"

// The codings a header lists but the `harmless` ones (none: undefined), for a message. A body sent compressed (by a
// proxy on the way, say) would fail as a bad signature or as not JSON, pointing at the secret or at the sender: the
// coding is named instead (its first 64 characters, quoted: the sender's text). A header sent twice is one list (Node
// joins them with a comma).
const codingsBut = (header: string | undefined, harmless: ReadonlyArray<string>): string | undefined => {
  const value = header?.trim().toLowerCase()
  if (value === undefined) return undefined
  const harmful = value.split(",").some((coding) => coding.trim() !== "" && !harmless.includes(coding.trim()))
  return harmful ? value : undefined
}

/**
 * The codings a `Content-Encoding` header lists, when any is other than `identity` (its value, trimmed and
 * lower-cased, for `encodedMessage`); undefined when the body came as it was sent.
 */
export const encodingOf = (header: string | undefined) => codingsBut(header, ["identity"])

/**
 * Node's server undoes `chunked` only: a body sent with another transfer coding (`gzip, chunked`, from a proxy that
 * compresses hop by hop) reaches the handler compressed. `identity` (of HTTP/1.1's first version) changes nothing.
 */
export const transferCodingOf = (header: string | undefined) => codingsBut(header, ["chunked", "identity"])

/**
 * The message of a delivery refused for a body that came coded (`Content-Encoding`, or the `header` given): the coding
 * named, its first 64 characters quoted, and what must change.
 */
export const encodedMessage = (encoding: string, header = "Content-Encoding") =>
  `the body came with ${header} ${JSON.stringify(encoding.slice(0, 64))}: Fin documents no compression of ` +
  "deliveries, so whatever compressed it on the way (a proxy) must leave webhook deliveries as they are"

/**
 * The `body_too_large` rejection (a 413) of a body larger than `limit` bytes (`maxBodySize`), by its `Content-Length`
 * or as it is read.
 */
export const tooLarge = (limit: number) => fail("body_too_large", `the body is larger than ${limit} bytes`)
