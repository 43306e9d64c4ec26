import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as FinError from "../../src/FinError.js"
import * as Retry from "../../src/internal/retry.js"
import * as SystemCodes from "../../src/internal/systemCodes.js"
import { systemCode } from "../../src/internal/transportCause.js"

const call = { operation: "POST /v1/fee-calculation", attempts: 1 }
const api = (status: number) => new FinError.ApiError({ status, message: `${status}`, ...call })
const cut = (status?: number, code?: string) =>
  new FinError.TransportError({
    message: "lost",
    reason: status === undefined ? "RequestFailed" : "BodyReadFailed",
    ...(status === undefined ? {} : { status }),
    ...(code === undefined ? {} : { code }),
    ...call
  })

const maintenance = new FinError.RateLimitError({
  message: "maintenance",
  status: 503,
  retryAfter: Duration.hours(1),
  ...call
})
const late = new FinError.TimeoutError({ message: "late", kind: "deadline", timeout: Duration.seconds(1), ...call })

describe("Retry.isOutage and worthALaterTry", () => {
  it("an unreachable, timing-out or failing service is an outage; a refusal is not, even with its body lost", () => {
    const cases: ReadonlyArray<readonly [FinError.FinError, boolean, boolean]> = [
      [cut(), true, true],
      [cut(200), true, true],
      [cut(503), true, true],
      [cut(408), true, true],
      // The head of a refusal arrived: the lost page does not make it an outage.
      [cut(422), false, false],
      // Asked to slow down: no outage, but a later try may well succeed.
      [cut(429), false, true],
      [new FinError.RateLimitError({ message: "slow down", status: 429, ...call }), false, true],
      [maintenance, true, true],
      [late, true, true],
      [api(408), true, true],
      [api(500), true, true],
      [api(501), true, true],
      [api(400), false, false],
      [api(404), false, false],
      [new FinError.AuthenticationError({ message: "refused", status: 401, ...call }), false, false],
      [new FinError.ResponseDecodeError({ message: "not JSON", issues: [], status: 200, ...call }), false, false]
    ]
    for (const [error, outage, later] of cases) {
      expect([Retry.isOutage(error), Retry.worthALaterTry(error)], error.message).toEqual([outage, later])
    }
  })
})

describe("Retry.isSetupRefusal", () => {
  it("a refused certificate or protocol, a proxy's 4xx, a closed client: not retried, not worth a later try", () => {
    const refusals = [
      "CERT_HAS_EXPIRED",
      "CERT_NOT_YET_VALID",
      "DEPTH_ZERO_SELF_SIGNED_CERT",
      "SELF_SIGNED_CERT_IN_CHAIN",
      "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
      "ERR_TLS_CERT_ALTNAME_INVALID",
      "HOSTNAME_MISMATCH",
      "ERR_SSL_WRONG_VERSION_NUMBER",
      "ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION",
      "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
      "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED",
      "UNSPECIFIED",
      // OpenSSL 3.2 and later (Node 22 and later) word alerts so.
      "ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE",
      "ERR_SSL_SSL/TLS_ALERT_PROTOCOL_VERSION",
      "PROXY_TUNNEL_407",
      "PROXY_TUNNEL_403",
      // fetch's refusal of a port on the Fetch standard's blocked list (6000, 10080...): no connection is ever made.
      "ERR_FETCH_BAD_PORT",
      // Not the connection's: the platform client closed with its layer's scope (undici's dispatcher destroyed).
      "UND_ERR_DESTROYED",
      "UND_ERR_CLOSED"
    ]
    const verdicts = (error: FinError.TransportError | FinError.ApiError) =>
      [Retry.isSetupRefusal(error), Retry.isRetryable(error), Retry.worthALaterTry(error), Retry.isOutage(error)]
    // The snapshot still stands in for a service that cannot be had (SubdivisionService's fallback): an outage.
    for (const code of refusals) expect(verdicts(cut(undefined, code)), code).toEqual([true, false, false, true])
    // A connection lost or refused, a handshake that took too long, an unknown code or none: waiting may mend it.
    const waitable = [
      "ECONNREFUSED",
      "ECONNRESET",
      "ENOTFOUND",
      "UND_ERR_SOCKET",
      "ERR_TLS_HANDSHAKE_TIMEOUT",
      // A server's internal_error alert, a record corrupted on the way; node:http's EPROTO without OpenSSL's reason.
      "ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR",
      "ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC",
      "EPROTO",
      // A proxy that closed the connection before answering CONNECT (README: retried), could not reach the service,
      // or timed out, or asks to slow down.
      "PROXY_TUNNEL_CLOSED",
      "PROXY_TUNNEL_502",
      "PROXY_TUNNEL_408",
      "PROXY_TUNNEL_429"
    ]
    for (const code of [...waitable, undefined]) {
      expect(verdicts(cut(undefined, code)), code).toEqual([false, true, true, true])
    }
    // Only a TransportError's code counts.
    const gateway = new FinError.ApiError({ status: 502, message: "bad gateway", code: "CERT_HAS_EXPIRED", ...call })
    expect(verdicts(gateway)).toEqual([false, true, true, true])
  })
})

describe("SystemCodes.neverSent", () => {
  it("only a connection never made, or whose setup was refused, proves the request never reached the service", () => {
    const neverSent = [
      "ECONNREFUSED",
      "ENOTFOUND",
      "EAI_AGAIN",
      "UND_ERR_CONNECT_TIMEOUT",
      "ERR_TLS_HANDSHAKE_TIMEOUT",
      "CERT_HAS_EXPIRED",
      "ERR_SSL_WRONG_VERSION_NUMBER",
      // An egress proxy that opened no tunnel, whatever its reason.
      "PROXY_TUNNEL_407",
      "PROXY_TUNNEL_502",
      "ERR_FETCH_BAD_PORT",
      // No socket could be made (this process's descriptors, or the system's, all open), or no local port was free.
      "EMFILE",
      "ENFILE",
      "EADDRNOTAVAIL"
    ]
    for (const code of neverSent) expect(SystemCodes.neverSent(code), code).toBe(true)
    // Reported on an open connection too (a pooled keep-alive socket the server closed, a peer gone mid-request).
    const maybeReceived = ["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "ETIMEDOUT", "EHOSTUNREACH", "EPROTO", "ESOMETHING"]
    for (const code of maybeReceived) expect(SystemCodes.neverSent(code), code).toBe(false)
  })
})

describe("TransportCause.systemCode", () => {
  // node:http's write EPROTO, as Node 20 gives it for an OpenSSL failure in the handshake.
  const eproto = (reason: string) =>
    Object.assign(
      new Error(`write EPROTO 80ECC6:error:0A000438:SSL routines:ssl3_read_bytes:${reason}:../deps/x.c:1605:`),
      { code: "EPROTO" }
    )

  it("names node:http's EPROTO by OpenSSL's reason, a refused tunnel by its status, a proxy's TLS by its cause", () => {
    expect(systemCode(eproto("tlsv1 alert internal error"))).toBe("ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR")
    expect(systemCode(eproto("wrong version number"))).toBe("ERR_SSL_WRONG_VERSION_NUMBER")
    expect(systemCode(eproto("ssl/tls alert bad certificate"))).toBe("ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE")
    expect(systemCode(Object.assign(new Error("write EPROTO"), { code: "EPROTO" }))).toBe("EPROTO")
    const aborted = (message: string) => Object.assign(new Error(message), { code: "UND_ERR_ABORTED" })
    expect(systemCode(aborted("Proxy response (407) !== 200 when HTTP Tunneling"))).toBe("PROXY_TUNNEL_407")
    expect(systemCode(aborted("Request aborted"))).toBe("UND_ERR_ABORTED")
    // An https proxy's certificate for another host: undici's UND_ERR_PRX_TLS, named by its cause.
    const altName = Object.assign(new Error("Hostname/IP does not match"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" })
    const proxyTls = (cause: unknown) =>
      Object.assign(new Error("Secure Proxy Connection failed", { cause }), { code: "UND_ERR_PRX_TLS" })
    expect([systemCode(proxyTls(altName)), systemCode(proxyTls(undefined))])
      .toEqual(["ERR_TLS_CERT_ALTNAME_INVALID", "UND_ERR_PRX_TLS"])
    const reset = Object.assign(new Error("x"), { code: "ECONNRESET" })
    expect(systemCode(new TypeError("fetch failed", { cause: reset }))).toBe("ECONNRESET")
    // Found up to four deep along the chain (a wrapper of the user's around fetch's TypeError).
    const fetchFailed = new TypeError("fetch failed", { cause: reset })
    const wrapped = new Error("outer", { cause: new Error("middle", { cause: fetchFailed }) })
    expect(systemCode(wrapped)).toBe("ECONNRESET")
    // A "code" that is no code-like word (a message, a host in it, a number) is not kept: the chain is read on.
    const worded = Object.assign(new Error("x"), { code: "connect to pay.example.com failed" })
    expect(systemCode(worded)).toBeUndefined()
    expect(systemCode(Object.assign(new Error("x"), { code: "econnreset", cause: reset }))).toBe("ECONNRESET")
  })
})

describe("Retry.isRetryable", () => {
  // The transport's policy would also refuse it for want of time left; the rule stands on its own (a caller of the
  // policy with no timeLeft, or one whose reading is a hair early, must not retry a call past its deadline).
  it("a call's own deadline is final; an attempt's or a token fetch's timeout is retried", () => {
    const timeout = (kind: "deadline" | "attempt" | "token") =>
      new FinError.TimeoutError({ message: kind, kind, timeout: Duration.seconds(1), ...call })
    expect([timeout("deadline"), timeout("attempt"), timeout("token")].map(Retry.isRetryable))
      .toEqual([false, true, true])
  })

  // A body lost after the head: retried as its status read whole (not a 3xx, a 4xx but 408 and 429, a 501 or 505).
  it("a lost body is retried as its status read whole is", () => {
    const statuses = [200, 201, 302, 400, 404, 408, 422, 429, 500, 501, 502, 503, 504, 505]
    expect(statuses.map((status) => [status, Retry.isRetryable(cut(status))])).toEqual(
      statuses.map((status) => [status, [200, 201, 408, 429, 500, 502, 503, 504].includes(status)])
    )
  })
})

describe("Retry.retry", () => {
  // The transport reads what is left through Monotonic.left, a microsecond short, so only a caller reading it exactly
  // (TokenProvider's refresh-token window, on whole milliseconds) meets the tie: the next attempt would start as the
  // time runs out.
  it.effect("a backoff that ends exactly when timeLeft does ends the retries, with the error retried", () =>
    Effect.gen(function*() {
      let attempts = 0
      const failing = Effect.suspend(() => {
        attempts += 1
        return Effect.fail(api(503))
      })
      const error = yield* Effect.flip(Retry.retry(failing, {
        maxRetries: 3,
        operation: "GET /v1/probe",
        waitCap: Duration.seconds(60),
        timeLeft: Effect.succeed(Duration.millis(500)),
        onRetry: () => Effect.void
      }))
      expect([error._tag, attempts]).toEqual(["ApiError", 1])
      // 0.5 puts the jitter at x1: the first backoff is 500 ms, exactly what is left.
    }).pipe(Effect.withRandom(Random.fixed([0.5]))))
})
