/**
 * A client's base URL, read once for `FinConfig` (which refuses what cannot be one) and for `TokenStore.keyFor` (which
 * names a client's stored pair by the URL as the client reads it).
 *
 * @internal
 */
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Loopback from "./loopback.js"
import * as Padded from "./padded.js"

const invalid = (message: string) => ConfigError.InvalidData(["baseUrl"], message)

/**
 * The base URL as a client sends to it (origin, then the path without its trailing slashes), or why it cannot be one.
 */
export const parse = (input: string): Either.Either<string, ConfigError.ConfigError> => {
  // `new URL` drops C0 controls and spaces around the text (a file's newline), not a no-break space or a zero-width
  // one (a copy from a web page): after a path it would be kept in it, percent-encoded, and every call sent there.
  // (Not a string: from JavaScript, left to `new URL`'s refusal.)
  const inner = typeof input === "string" ? input.replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, "") : undefined
  if (inner !== undefined && Padded.isPadded(inner)) {
    return Either.left(invalid("baseUrl must not start or end with a no-break, zero-width or other invisible space"))
  }
  // Nor a tab or a line break inside it, which `new URL` removes without a word: "https://api.fin.com\n.evil.example"
  // would send every call, and the client secret, to api.fin.com.evil.example.
  if (inner !== undefined && /[\t\n\r]/.test(inner)) {
    return Either.left(invalid("baseUrl must not hold a tab or a line break"))
  }
  let url: URL
  try {
    url = new URL(input)
  } catch {
    return Either.left(invalid("baseUrl is not a valid absolute URL"))
  }
  if (url.username !== "" || url.password !== "") {
    return Either.left(invalid("baseUrl must not carry credentials"))
  }
  if (url.search !== "" || url.hash !== "") {
    return Either.left(invalid("baseUrl must not have a query or fragment"))
  }
  if (!Loopback.isSecureOrLocal(url)) {
    return Either.left(invalid(`baseUrl must use https (plain http is allowed only on loopback)`))
  }
  // Port 0 is no port a service listens on (a template's placeholder, a free-port "0" copied as is): every request
  // would be refused, told only at the first call as a TransportError, retried as if the service were down.
  if (url.port === "0") {
    return Either.left(invalid("baseUrl must not have port 0 (give the port the service listens on, or none)"))
  }
  const path = url.pathname.replace(/\/+$/, "")
  // The routes are appended with their version ("/v1/oauth/token"): the service's address copied with the version on
  // it would send "/v1/v1/...", and its 404 would name the token route as if that were missing. Only the version
  // alone: a gateway's own prefix may end so ("/payments/v1", mapped onto the service's root).
  if (path.toLowerCase() === "/v1") {
    return Either.left(invalid(
      `baseUrl must not have /v1 as its path: the routes add it (give ${url.origin})`
    ))
  }
  return Either.right(url.origin + path)
}
