/**
 * What a transport failure's cause says, read along its chain: the system's code (refined where the code alone says
 * little), and whether what answered spoke HTTP at all. Only code-like words and fixed phrases are kept, never a
 * message, which can hold a host or a URL.
 *
 * @internal
 */

// Three codes say less than their message or cause, which are read for a fixed phrase or a code (never a host):
// node:http reports any OpenSSL failure in the handshake as a write's EPROTO (the server's alert refusing our
// certificate or version, a version mismatch, but also a server's internal_error alert or a record corrupted on the
// way, which a retry can mend), named by OpenSSL's reason as undici names it (ERR_SSL_<REASON>; OpenSSL 3.2 and later
// word alerts `ssl/tls alert ...`, kept as Node keeps them: ERR_SSL_SSL/TLS_ALERT_...); an egress proxy that refused
// to open its tunnel (a 407 for its credentials, a 403 by its policy, a 502 when it could not reach the service) is
// only undici's UND_ERR_ABORTED: PROXY_TUNNEL_<status>; and an https proxy whose certificate names another host is
// UND_ERR_PRX_TLS, its cause's code (ERR_TLS_CERT_ALTNAME_INVALID) saying why.
const SSL_REASON = /SSL routines:[a-z0-9_]*:([a-z0-9 /]{1,60}):/
const PROXY_REFUSAL = /^Proxy response \((\d{3})\) !== 200 when HTTP Tunneling$/
const CODE = /^[A-Z][A-Z0-9_/]{1,63}$/

/** Whether `text` has the form of a system error code (`ECONNRESET`, `ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE`...). */
export const isSystemCode = (text: string): boolean => CODE.test(text)

const refined = (error: object, code: string): string => {
  const { message, cause } = error as { readonly message?: unknown; readonly cause?: unknown }
  if (code === "UND_ERR_PRX_TLS") {
    const why = (cause as { readonly code?: unknown } | null | undefined)?.code
    return typeof why === "string" && CODE.test(why) ? why : code
  }
  if (code === "EPROTO") {
    const reason = SSL_REASON.exec(String(message))
    return reason === null ? code : `ERR_SSL_${reason[1]!.toUpperCase().replaceAll(" ", "_")}`
  }
  const status = code === "UND_ERR_ABORTED" ? PROXY_REFUSAL.exec(String(message)) : null
  return status === null ? code : `PROXY_TUNNEL_${status[1]}`
}

/**
 * Our name for fetch's refusal of a port on the Fetch standard's blocked list (6000, 6665-6669, 10080...): its error
 * has no code, only the message "bad port".
 */
export const FETCH_BAD_PORT = "ERR_FETCH_BAD_PORT"

/**
 * The system's code for why the connection failed (ECONNREFUSED, ENOTFOUND, ECONNRESET, CERT_HAS_EXPIRED), found
 * along the cause chain (fetch wraps it in a TypeError). Only a code-like word is kept, never a message, which can
 * hold a host or a URL (node:http's EPROTO and an egress proxy's refusal are named from their message, an https
 * proxy's TLS failure from its cause: see `refined`).
 */
export const systemCode = (cause: unknown): string | undefined => {
  let error = cause
  for (let depth = 0; depth < 4 && typeof error === "object" && error !== null; depth++) {
    const { code, message } = error as { readonly code?: unknown; readonly message?: unknown }
    if (typeof code === "string" && CODE.test(code)) return refined(error, code)
    // fetch refuses a blocked port before connecting: undici's cause has that message and no code.
    if (message === "bad port") return FETCH_BAD_PORT
    error = (error as { readonly cause?: unknown }).cause
  }
  return undefined
}

// Something answered, not in HTTP (a base URL whose port serves something else, TLS spoken to an `http:` one):
// node:http's parser error has a code (`HPE_INVALID_CONSTANT`), undici's none (it looks its code up by number in a
// table keyed by name), only its name and llhttp's reason in its message. Only the codes, or reasons, of a status
// line that is not HTTP's: an answer in HTTP that broke a limit or a rule (`HPE_HEADER_OVERFLOW`, headers past 16 KiB;
// `HPE_INVALID_TRANSFER_ENCODING`; undici's "Invalid header token", "Missing expected CR after response line") is the
// service's, its base URL right.
const NOT_HTTP = new Set(["HPE_INVALID_CONSTANT", "HPE_INVALID_VERSION", "HPE_INVALID_STATUS"])
// undici's message: "Response does not match the HTTP/1.1 protocol (<llhttp's reason>)", a fixed phrase (no host).
const PARSER_REASON = /^Response does not match the HTTP\/1\.1 protocol \((.{1,80})\)$/
const STATUS_LINE_REASON = new RegExp(
  "^(?:Expected HTTP/|Expected dot|Invalid (?:major |minor |HTTP )?version|Expected space after version|" +
    "Invalid status code|Invalid response status)"
)
/** Whether something answered that does not speak HTTP (see `NOT_HTTP`): its base URL is likely wrong. */
export const notHttp = (code: string | undefined, cause: unknown): boolean => {
  if (code !== undefined) return NOT_HTTP.has(code)
  let error = cause
  for (let depth = 0; depth < 4 && typeof error === "object" && error !== null; depth++) {
    const { message, name } = error as { readonly message?: unknown; readonly name?: unknown }
    if (name === "HTTPParserError") {
      const reason = typeof message === "string" ? PARSER_REASON.exec(message)?.[1] : undefined
      return reason === undefined || STATUS_LINE_REASON.test(reason)
    }
    error = (error as { readonly cause?: unknown }).cause
  }
  return false
}
