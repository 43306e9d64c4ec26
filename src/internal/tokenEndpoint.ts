/**
 * One token request and what it makes of the answer: the issue (client credentials) and the refresh (the refresh
 * token, then an issue if it fails), each sent with its retries, span and metrics, its answer made a pair of tokens
 * timed on this machine's clock; the last refresh token refused; and the outcome a failed request is counted by
 * (`failedBy`), which the provider logs a failed fetch by too. The rules of what a failure holds are `KeptAnswer`'s.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as FinConfig from "../FinConfig.js"
import type { FinError } from "../FinError.js"
import * as Http from "./http.js"
import * as KeptAnswer from "./keptAnswer.js"
import * as KnownTokens from "./knownTokens.js"
import { durationBoundaries, retriesOf } from "./metrics.js"
import * as Monotonic from "./monotonic.js"
import * as Retry from "./retry.js"
import * as RetryAfter from "./retryAfter.js"
import * as RetryWaits from "./retryWaits.js"
import * as Spans from "./spans.js"
import * as TokenResponses from "./tokenResponse.js"

/** An access token and its times (epoch milliseconds, on this machine's clock). */
export interface Access {
  readonly token: Redacted.Redacted<string>
  /** From here a refresh is due; if it fails, callers still get this token until `usableUntil`. */
  readonly refreshAt: number
  readonly usableUntil: number
}

/** A refresh token and the last moment it may be sent. */
export interface Refresh {
  readonly token: Redacted.Redacted<string>
  readonly usableUntil: number
}

/** What a fetch yields: an access token, and the refresh token that came with it, if any. */
export interface Pair {
  readonly access: Access
  readonly refresh: Option.Option<Refresh>
}

// What an issue refused for its credentials adds for the operator: the service's own words do not say what to check.
// (The command line and `FinClient.layerFromEnv` read them as FIN_CLIENT_ID and FIN_CLIENT_SECRET.)
const CREDENTIALS_REFUSED = "(the service refused the client credentials: check clientId and clientSecret, " +
  "FIN_CLIENT_ID and FIN_CLIENT_SECRET where read from configuration)"

// Whether the issue route's answer refused the credentials themselves: a 401, or the OAuth error `invalid_client`
// (which servers also answer with 400, some with 403) as its code, or in its message when it has no code of its own
// (a code of its own, `invalid_request` say, is what it is about, whatever its description mentions; the service's
// `{status, message}` and `{error: {code, message}}` bodies repeat the answer's status as their code, which says
// nothing more). Another 400 or 403 (a gateway's, an address not allowed) is held as a refusal too, but is not said
// to be about the credentials.
const INVALID_CLIENT = /\binvalid_client\b/
const credentialsRefused = (error: FinError): boolean =>
  error._tag === "AuthenticationError" ||
  (error._tag === "ApiError" && (error.status === 400 || error.status === 403) &&
    (error.code === undefined || error.code === error.status
      ? INVALID_CLIENT.test(error.message)
      : error.code === "invalid_client"))

// What the issue that followed a failed refresh adds to its error, when it failed too: the caller waited through the
// refresh's attempts as well (with a stalled token route, three times `tokenTimeout` more than the issue's own error
// tells). Not when the refresh token was refused: that is routine, and no wait. The refresh's kind, and its status or
// system code (not a 2xx status, a decode error's, which would read as a success).
const refreshFailedToo = (refresh: FinError): string => {
  const detail = refresh._tag === "TransportError"
    ? refresh.code
    : "status" in refresh && refresh.status !== undefined && refresh.status >= 400
    ? refresh.status
    : undefined
  const attempts = "attempts" in refresh ? refresh.attempts : undefined
  return `(the token refresh before it failed too: ${refresh._tag}${detail === undefined ? "" : ` ${detail}`}${
    attempts === undefined ? "" : ` after ${attempts} attempt${attempts === 1 ? "" : "s"}`
  })`
}

const tokenRequests = Metric.counter("effect_fin_token_requests_total", {
  description: "Token issue and refresh calls made by effect-fin",
  incremental: true
})
// A slow token route holds every call that needs a token: its own duration, as a call's is measured.
const tokenLatency = Metric.histogram(
  "effect_fin_token_request_duration_ms",
  durationBoundaries,
  "Duration of token calls (retries included) in milliseconds, by grant and outcome"
)

/**
 * What a failed token request is counted as (its metrics' `outcome`), and a failed fetch logged as: its error's tag,
 * else "interrupted" or "defect".
 */
export const failedBy = (cause: Cause.Cause<FinError>): string =>
  Option.match(Cause.failureOption(cause), {
    onNone: () => Cause.isInterruptedOnly(cause) ? "interrupted" : "defect",
    onSome: (error) => error._tag
  })

const expired = (at: string) => [
  { path: `${at}access_token_ttl`, expected: "a time after current_time (without it, the answer's Date, or now)" }
]
// The service documents `current_time`; without it, the answer's `Date` stands for the server's time (lifetimes
// are measured on the server's clock): this machine's clock may be off by more than a token lives.
const withServerTime = (
  fields: typeof TokenResponses.TokenResponse.Type,
  answered: Readonly<Record<string, string>>,
  clock: Clock.Clock
): typeof TokenResponses.TokenResponse.Type => {
  if (fields.current_time !== undefined) return fields
  const date = RetryAfter.dateOf(answered, clock.unsafeCurrentTimeMillis())
  // Not a Date that has the token expired already: that is no clock of the service's (a proxy's days fast, say),
  // and trusted it would refuse every token; this machine's clock decides then, as without a Date.
  return date === undefined || date >= fields.access_token_ttl ? fields : { ...fields, current_time: date }
}

/** What a provider's token requests need: its options, its HTTP client, its known tokens and its announced waits. */
export interface Deps {
  readonly config: FinConfig.Resolved
  readonly client: Http.Client
  readonly known: KnownTokens.Known
  readonly waits: RetryWaits.Waits
}

/** A provider's token requests. */
export interface Endpoint {
  /** An issue with the client credentials, with `maxRetries` retries. */
  readonly issue: Effect.Effect<Pair, FinError>
  /** A refresh with `refresh`'s token; an issue when it fails. */
  readonly refresh: (refresh: Refresh) => Effect.Effect<Pair, FinError>
  /**
   * The last refresh token the service refused: when the issue that followed failed too, the state (or the shared
   * store) still holds it, and the next fetch must not spend a call on it again.
   */
  readonly refusedRefresh: () => string | undefined
}

/** The token requests of a provider built with `deps`. */
export const make = ({ client: platformClient, config, known, waits }: Deps): Endpoint => {
  const client = Http.configure(platformClient, config.tracePropagation)
  // A gateway's prefix (`https://gw.example.com/payments`) is part of the path a span names (its url.path).
  const basePath = Spans.basePathOf(config.baseUrl)
  const server = Spans.serverAttributesOf(config.baseUrl)
  const headers = { accept: "application/json", "user-agent": config.userAgent }
  const credentialsOf = KnownTokens.listWith(known.all)

  // `credential` is the one secret the body carries (the client secret, the refresh token): the service's words are
  // redacted of it and of the client secret, which a refresh does not send but a debugging page may dump all the same
  // (API calls redact it too; a refresh's error can reach callers); not of the client id, which is no secret (and,
  // short, would hide the service's own words).
  // `usableUntil`: the last moment (on the Clock) `credential` may be sent, a refresh token's; a retry whose wait
  // would not end before it is not made (the service would refuse it as expired).
  const call = (
    path: string,
    body: Readonly<Record<string, string>>,
    credential: string,
    maxRetries: number,
    usableUntil?: number
  ) => {
    const operation = `POST ${path}`
    // Which call, for the metric: a refused refresh token is routine (a fresh token is issued instead), refused
    // credentials are not.
    const grant = path === "/v1/oauth/token" ? "client_credentials" : "refresh_token"
    const secret = Redacted.value(config.clientSecret)
    let attempt = 0
    // The status of the last answer (0: none yet), for the span.
    let status = 0
    const lastStatus = () => (status === 0 ? undefined : status)
    return Effect.clockWith((clock) => {
      attempt += 1
      waits.waiting = undefined
      return Effect.map(
        Http.execute(client, {
          method: "POST",
          url: config.baseUrl + path,
          headers,
          body: JSON.stringify(body),
          decode: TokenResponses.decodeTokenResponse,
          // An answer already expired is refused as it comes, so its error says the attempts and request id.
          check: ({ at, fields }, answered) => {
            const { current_time = clock.unsafeCurrentTimeMillis() } = withServerTime(fields, answered, clock)
            return fields.access_token_ttl > current_time ? [] : expired(at)
          },
          timeout: config.tokenTimeout,
          kind: "token",
          operation,
          attempt,
          credentials: credentialsOf(credential, secret),
          // The status of the last answer, for the span when the fetch then ends without one (a timeout, a reset).
          onStatus: (answered) => {
            status = answered
          }
        }),
        (success) => {
          status = success.status
          return withServerTime(success.value.fields, success.headers, clock)
        }
      )
    }).pipe(
      (self) => Retry.retry(self, {
        maxRetries,
        operation,
        waitCap: config.maxRetryAfter,
        ...(usableUntil === undefined ? {} : {
          timeLeft: Effect.map(Clock.currentTimeMillis, (now) => Duration.millis(Math.max(0, usableUntil - now))),
          timeLeftOf: "the refresh token's usable time"
        }),
        onRetry: (error, retry, until) =>
          Effect.logDebug(`effect-fin: retrying ${operation} after ${error._tag} (retry ${retry})`).pipe(
            Effect.annotateLogs({ operation, error: error._tag, retry }),
            Effect.zipRight(Metric.increment(retriesOf("token"))),
            Effect.zipRight(Spans.annotateRetry(error, retry, until)),
            Effect.zipRight(RetryWaits.announceWait(waits, error, until))
          )
      }),
      // Counted once per token call, after its retries (which `effect_fin_retries_total` counts), as
      // `effect_fin_requests_total` counts calls: a fetch that succeeded on its third attempt is one success, not
      // two failures and a success; one that died or was interrupted (in a retry wait, say, its attempts sent) is
      // counted too, as "defect" or "interrupted". Timed as a call is, on monotonic time, from its first attempt.
      (self) =>
        Effect.flatMap(Monotonic.millis, (started) =>
          Effect.onExit(self, (exit) => {
            const labels = [
              MetricLabel.make("grant", grant),
              MetricLabel.make("outcome", Exit.isSuccess(exit) ? "success" : failedBy(exit.cause))
            ]
            return Effect.all([
              Metric.increment(Metric.taggedWithLabels(tokenRequests, labels)),
              Effect.flatMap(Monotonic.millis, (ended) =>
                Metric.update(Metric.taggedWithLabels(tokenLatency, labels), ended - started)),
              Exit.isSuccess(exit)
                ? Spans.annotateOutcome(attempt, "success", status)
                : Option.match(Cause.failureOption(exit.cause), {
                  // A fetch that died (a platform client that threw) or was interrupted (the client closing) says
                  // so on its span, as a call's span does.
                  onNone: () =>
                    Spans.annotateOutcome(
                      attempt,
                      Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect",
                      lastStatus()
                    ),
                  onSome: (error) => Spans.annotateOutcome(attempt, error._tag, Spans.statusOf(error) ?? lastStatus())
                })
            ], { discard: true })
          })),
      // No code.stacktrace: it would point here, never at the user's code (and costs a stack trace per fetch).
      Effect.withSpan("effect-fin.token", {
        kind: "client",
        captureStackTrace: false,
        attributes: {
          "http.request.method": "POST",
          "url.path": basePath + path,
          "url.full": config.baseUrl + path,
          ...server
        }
      })
    )
  }

  const toState = Effect.fn(function*(response: typeof TokenResponses.TokenResponse.Type) {
    KnownTokens.knowPair(known, response.access_token, response.refresh_token)
    const now = yield* Clock.currentTimeMillis
    // Lifetimes are measured on the server's clock (`current_time`, or the answer's `Date`) and applied to ours: this
    // corrects skew.
    const serverNow = response.current_time ?? now
    // Positive: `call` refused an answer already expired; without `current_time`, the time since cannot make it 0.
    const lifetime = Math.max(response.access_token_ttl - serverNow, 1)
    const margin = Math.min(Duration.toMillis(config.refreshMargin), lifetime * 0.1)
    const expiresAt = now + lifetime
    const access: Access = {
      token: response.access_token,
      refreshAt: expiresAt - margin,
      usableUntil: expiresAt - margin / 2
    }
    // A refresh token is sent for as long as an access token would be (until half the margin is left), not only
    // until the margin: the documented token response gives both tokens the same expiry, and a refresh due at the
    // margin would then never use the refresh token. One sent without its expiry is taken to last as long as the
    // access token (at worst a 401, then an issue): dropped, the next refresh would send the client secret, or,
    // after a refresh, the token it replaced (which a service rotating them has revoked).
    const refresh = response.refresh_token === undefined ? Option.none() : Option.some<Refresh>({
      token: response.refresh_token,
      usableUntil: response.refresh_token_ttl === undefined
        ? access.usableUntil
        : now + (response.refresh_token_ttl - serverNow) - margin / 2
    })
    yield* Effect.logDebug(`effect-fin: access token ready (valid ${Duration.format(Duration.millis(lifetime))})`)
    return { access, refresh }
  })

  const issueWith = (maxRetries: number) =>
    Effect.gen(function*() {
      yield* Effect.logDebug("effect-fin: issuing an access token")
      const secret = Redacted.value(config.clientSecret)
      const body = { client_id: config.clientId, client_secret: secret }
      return yield* toState(yield* call("/v1/oauth/token", body, secret, maxRetries))
    }).pipe(
      Effect.mapError((error) =>
        credentialsRefused(error) ? Retry.withMessage(error, `${error.message} ${CREDENTIALS_REFUSED}`) : error
      )
    )
  const issue = issueWith(config.maxRetries)

  // Whether a fetch whose refresh failed with `e` and whose issue then failed with `f` fails with `e`: the refresh
  // asked a wait and the issue none, and, when the issue refused the credentials, a wait (as it is held) not
  // shorter than the refusal's hold. Never a refused refresh token (a 401 with `Retry-After`): it says nothing of the
  // issue route, whose own failure (an outage, refused credentials and their hint) is the fetch's.
  const keepsRefreshWait = (e: FinError, f: FinError): boolean => {
    const held = KeptAnswer.heldWait(e, config.maxRetryAfter)
    return held !== undefined && !KeptAnswer.isRefusal(e) && Retry.retryAfterOf(f) === undefined &&
      (!KeptAnswer.isRefusal(f) || Duration.greaterThanOrEqualTo(held, KeptAnswer.REFUSED_CREDENTIALS_HOLD))
  }

  // The last refresh token the service refused (see `Endpoint`), set by `refresh`.
  let refusedRefresh: string | undefined
  const refresh = ({ token, usableUntil }: Refresh) =>
    Effect.gen(function*() {
      yield* Effect.logDebug("effect-fin: refreshing the access token")
      const refreshToken = Redacted.value(token)
      const response = yield* call(
        "/v1/oauth/refresh-token",
        { refresh_token: refreshToken },
        refreshToken,
        config.maxRetries,
        usableUntil
      )
      const pair = yield* toState(response)
      // Kept in force, it is known again as the newest (never dropped from the tokens redacted as the session's).
      if (Option.isNone(pair.refresh)) known.add(refreshToken)
      // A refresh answer without a new refresh token leaves the one just used in force (RFC 6749 section 6): it is
      // kept, rather than the client secret sent again at the next refresh.
      return Option.isNone(pair.refresh) ? { ...pair, refresh: Option.some<Refresh>({ token, usableUntil }) } : pair
    }).pipe(
      // A refused refresh token (401, another 4xx but 408 and 429) means: issue anew. A refresh route that still
      // fails after its retries (5xx, 408, 429, timeout, unreachable, an answer that does not decode) gets one issue
      // attempt, without retries: the issue route may well work, and the refresh token would otherwise be tried
      // again, and fail, on every fetch until it expires (days); but when the whole service is down, that costs one
      // attempt, not a second series. When the refresh's answer asked for a wait (`quiet`) and the issue's failure
      // asks none, the fetch fails with the refresh's answer: its wait is kept, rather than a refresh (and an issue)
      // going every 5 s; but refused credentials, held for their second with their hint, win over a refresh's wait
      // held for less.
      Effect.catchAll((e) => {
        const refused = KeptAnswer.isRefusal(e)
        if (refused) refusedRefresh = Redacted.value(token)
        return Effect.logDebug(`effect-fin: the refresh failed (${e._tag}); issuing a new token`).pipe(
          Effect.zipRight(refused ? issue : issueWith(0)),
          Effect.mapError((f) =>
            keepsRefreshWait(e, f)
              ? e
              : refused
              ? f
              : Retry.withMessage(f, `${f.message} ${refreshFailedToo(e)}`)
          )
        )
      })
    )

  return { issue, refresh, refusedRefresh: () => refusedRefresh }
}
