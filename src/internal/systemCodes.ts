/**
 * What a transport failure's system code says: whether the connection was refused for its setup (no retry can mend
 * it), and whether the request can have reached the service at all.
 *
 * @internal
 */

// A connection refused for a reason no retry can mend: a TLS handshake refused on the certificate (expired, not yet
// valid, self-signed, of an unknown issuer, for another host: OpenSSL's and Node's names) or for want of a common
// protocol (TLS to a plain HTTP port), or an egress proxy refusing its tunnel on a 4xx (407: its credentials, 403: its
// policy; not a 408 or 429, nor a 5xx: it could not reach the service). A person has to act; retrying would only hide
// the mistake, or make a wrapper that retries on exit 75 loop.
// (OpenSSL 3.2 and later word an alert `ssl/tls alert ...`: ERR_SSL_SSL/TLS_ALERT_... under Node 22 and later.)
const SETUP_REFUSED = new RegExp(
  "^(?:CERT_|CRL_|UNABLE_TO_|ERROR_IN_C|ERR_TLS_CERT_|PROXY_TUNNEL_4(?!08|29)\\d\\d$|" +
    "ERR_SSL_[\\w/]*ALERT_(?:\\w*CERTIFICATE|PROTOCOL_VERSION|HANDSHAKE_FAILURE|UNKNOWN_CA))"
)
const SETUP_REFUSALS: ReadonlySet<string> = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "INVALID_CA",
  "PATH_LENGTH_EXCEEDED",
  "INVALID_PURPOSE",
  "HOSTNAME_MISMATCH",
  // Node's name for a certificate check failing for a reason it has no name for (a SHA-1 signature).
  "UNSPECIFIED",
  // No protocol in common (node:http's EPROTO is named as these are: see `TransportCause.systemCode`).
  "ERR_SSL_WRONG_VERSION_NUMBER",
  "ERR_SSL_UNSUPPORTED_PROTOCOL",
  "ERR_SSL_NO_PROTOCOLS_AVAILABLE",
  // fetch's refusal of a port on the Fetch standard's blocked list: no connection is ever made to it.
  "ERR_FETCH_BAD_PORT"
])

/** Whether `code` is a connection refused for its setup: a mistake to mend, not a failure to wait out. */
export const isSetupRefusal = (code: string): boolean => SETUP_REFUSALS.has(code) || SETUP_REFUSED.test(code)

// Failures before a connection to the service was made: no name (DNS), no listener, no connection in time (undici's
// connect timeout, a TLS handshake not done in time), or an egress proxy that opened no tunnel. A failure on an open connection (a reset, a pooled
// keep-alive socket the server had closed, the first call after a serverless thaw) may come after the service got
// the request; so may one of a code not listed (EHOSTUNREACH, ETIMEDOUT: reported on open connections too).
const NOT_CONNECTED: ReadonlySet<string> = new Set([
  // No socket could be made, or no local port was free for it: this process's limits, before anything was sent (a
  // burst of thousands of calls at once under `ulimit -n 1024`).
  "EMFILE",
  "ENFILE",
  "EADDRNOTAVAIL",
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_FAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "ERR_TLS_HANDSHAKE_TIMEOUT"
])

/**
 * Whether a request that failed with `code` never reached the service: no connection to it was made, or its setup
 * was refused (a TLS handshake, an egress proxy's tunnel). For any other code, or none, it may have.
 */
export const neverSent = (code: string): boolean =>
  NOT_CONNECTED.has(code) || code.startsWith("PROXY_TUNNEL_") || isSetupRefusal(code)

// undici's own: a dispatcher destroyed or closed (its layer's scope ended) sends nothing again, however long one waits.
const CLIENT_CLOSED: ReadonlySet<string> = new Set(["UND_ERR_DESTROYED", "UND_ERR_CLOSED"])

/**
 * Whether `code` says the platform client itself is closed (an undici dispatcher destroyed with its layer's scope):
 * no retry can mend it. A request under way when it closed may have reached the service.
 */
export const isClientClosed = (code: string): boolean => CLIENT_CLOSED.has(code)
