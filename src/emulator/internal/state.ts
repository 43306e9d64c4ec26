/**
 * The emulator's mutable state: tokens, fault rules, counters, the webhook target. Every change happens inside one
 * `Effect.sync` block, so it is atomic (JavaScript runs one block at a time); times come from `Clock`, random
 * choices from a `Random` (seeded when the options give a seed).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import type * as Quote from "../../internal/quote.js"
import * as Timestamps from "../../internal/timestamp.js"
import type * as Webhooks from "../../Webhooks.js"
import type { Counters, FaultKind, FaultRule, RouteName } from "./model.js"
import { faultKinds, routeNames } from "./model.js"

/** The options, validated and with their defaults. */
export interface Settings {
  readonly host: string
  readonly port: number
  readonly clientId: string
  readonly clientSecret: string
  readonly accessLifetime: number
  readonly refreshLifetime: number
  readonly tokenEnvelope: "top" | "data"
  readonly revokeOnIssue: boolean
  readonly rates: Readonly<Record<string, number>>
  readonly fee: Quote.FeeRule
  readonly quoteLifetime: number
  readonly validTill: boolean
  readonly beneficiaries: Readonly<
    Record<string, { readonly currency: string; readonly developerFee?: Quote.FeeRule | undefined }>
  >
  readonly defaultSourceCurrency: string
  /** Lists served instead of the snapshot's, by country. */
  readonly subdivisions: Readonly<Record<string, ReadonlyArray<{ readonly code: string; readonly name: string }>>>
  readonly faults: ReadonlyArray<FaultRule>
  readonly seed: number | undefined
  readonly webhookSecret: string
  readonly webhookUrl: string | undefined
  readonly webhookAlgorithm: Webhooks.Algorithm
  readonly webhookTimeout: number
  readonly sandboxMode: boolean
  /** A token bucket of `requests` API requests, one growing back every `perMillis / requests`, if set. */
  readonly rateLimit: { readonly requests: number; readonly perMillis: number } | undefined
}

/** The fields of a token response (before the envelope). */
export interface TokenFields {
  readonly access_token: string
  readonly access_token_ttl: string
  readonly refresh_token: string
  readonly refresh_token_ttl: string
  readonly current_time: string
}

/** What the fault rules decided for one request. */
export interface FaultDecision {
  /** Added latency, in milliseconds (the sum of the latency rules that fired). */
  readonly latency: number
  /** The first non-latency rule that fired, if any. */
  readonly terminal: FaultRule | undefined
}

/** A fault rule and how often it fired. */
export interface InjectedFault {
  readonly rule: FaultRule
  readonly injected: number
}

interface Rule extends InjectedFault {
  injected: number
}

type Unmatched = RouteName | "unmatched"

const zeroRequests = (): Record<Unmatched, number> => {
  const out = { unmatched: 0 } as Record<Unmatched, number>
  for (const route of routeNames) out[route] = 0
  return out
}

const zeroFaults = (): Record<FaultKind, number> => {
  const out = {} as Record<FaultKind, number>
  for (const kind of faultKinds) out[kind] = 0
  return out
}

// Expired tokens are forgotten in sweeps, so a long benchmark does not grow the maps without bound.
const SWEEP_EVERY = 1024
// The token log keeps the newest entries only: a long chaos run issues many tokens.
const TOKEN_LOG_SIZE = 1000

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0")

/** How many issued tokens `issuedTokens` keeps: the latest. */
const ISSUED_KEPT = 10_000

const base64url = (text: string): string => Buffer.from(text).toString("base64url")

/** The JOSE header of the emulator's tokens: `{"alg":"HS256","typ":"JWT"}`, as the documented example begins. */
const JOSE = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }))

// Emulators made in this process so far: a token names its emulator, so that two started with the same seed (which
// draw the same bytes) never hand out the same token, each accepting the other's.
let emulatorsMade = 0

/** The state of one emulator. */
export interface State {
  readonly settings: Settings
  /** Counts a request; returns the counters' generation, for `countStatus`. */
  readonly countRequest: (route: Unmatched) => Effect.Effect<number>
  /** Counts a response, unless a reset came since its request was counted (`generation` from `countRequest`). */
  readonly countStatus: (status: number, generation: number) => Effect.Effect<void>
  readonly decideFaults: (route: RouteName) => Effect.Effect<FaultDecision>
  /**
   * Takes a place under the rate limit for an API request: undefined when it may go on (or there is no limit), else
   * the milliseconds until one would be let through (the request refused, counted in `rateLimited`).
   */
  readonly rateLimit: Effect.Effect<number | undefined>
  /**
   * Issues a token pair for a request counted in `generation` (from `countRequest`): after a reset since, the pair is
   * handed out as dead as the reset left every other token, and not counted.
   */
  readonly issueTokens: (kind: "issue" | "refresh", generation: number) => Effect.Effect<TokenFields>
  readonly checkAccess: (token: string) => Effect.Effect<boolean>
  readonly checkRefresh: (token: string) => Effect.Effect<boolean>
  readonly revokeTokens: Effect.Effect<number>
  /** Every token issued or refreshed, oldest first (the last `ISSUED_KEPT`). */
  readonly issuedTokens: Effect.Effect<ReadonlyArray<string>>
  readonly expireTokens: (refresh: boolean) => Effect.Effect<number>
  /** The fault rules, each with how often it fired since it was set. */
  readonly faults: Effect.Effect<ReadonlyArray<InjectedFault>>
  readonly setFaults: (rules: ReadonlyArray<FaultRule>, append: boolean) => Effect.Effect<ReadonlyArray<InjectedFault>>
  readonly counters: Effect.Effect<Counters>
  readonly reset: Effect.Effect<void>
  readonly webhookUrl: Effect.Effect<string | undefined>
  readonly setWebhookUrl: (url: string) => Effect.Effect<void>
  readonly countWebhook: (delivered: boolean) => Effect.Effect<void>
  readonly uuid: Effect.Effect<string>
  /** A new event's `created_at`, as the service writes it (`2026-04-04T17:38:26.843132Z`: with microseconds). */
  readonly eventTime: Effect.Effect<string>
}

/** Builds the state; without a seed, random choices use the ambient `Random`. */
export const make = (settings: Settings): Effect.Effect<State> =>
  Effect.gen(function*() {
    const ambient = yield* Effect.random
    const emulator = ++emulatorsMade
    // Seeded streams apart: the fault rolls are not moved by the tokens and ids drawn meanwhile (a token request more
    // or fewer, as timed revocations bring, would otherwise change every fault decision after it).
    const newRandom = (stream: string) =>
      settings.seed === undefined
        ? ambient
        : Random.make(stream === "" ? settings.seed : `${settings.seed}:${stream}`)
    let random = newRandom("")
    // Event ids: a stream of their own, never restarted by a reset and apart for each emulator of the process (as
    // tokens are), so that a default event id is always new: a receiver de-duplicating by id would otherwise drop the
    // first event after a reset (or from a second emulator with the same seed) as a duplicate of one it handled.
    const eventRandom = settings.seed === undefined ? ambient : Random.make(`${settings.seed}:events:${emulator}`)
    // One fault stream per route: a route's rolls are not moved by requests to the others either (under a `*` rule,
    // token requests, whose number timed revocations change, would otherwise move every fee decision after them).
    const newFaultRandoms = () => new Map(routeNames.map((route) => [route, newRandom(`faults:${route}`)] as const))
    let faultRandoms = newFaultRandoms()
    let rules: Array<Rule> = settings.faults.map((rule) => ({ rule, injected: 0 }))
    let requests = zeroRequests()
    let statuses: Record<string, number> = {}
    let faultCounts = zeroFaults()
    let tokensIssued = 0
    let tokensRefreshed = 0
    let tokenLog: Array<{ readonly at: number; readonly kind: "issue" | "refresh" }> = []
    let webhooksSent = 0
    let webhooksFailed = 0
    let webhookUrl = settings.webhookUrl
    // Bumped by every reset: a response to a request counted before the reset is not counted after it, so the
    // statuses never outnumber the requests.
    let generation = 0
    // Token -> expiry (epoch ms). Revoking deletes; expiring sets the expiry to now.
    const access = new Map<string, number>()
    const refresh = new Map<string, number>()
    // Never reset: with `emulator`, a token string is never handed out twice in one process.
    let serial = 0
    // For tests that check no token leaks: never reset either (a leak may outlive a reset).
    const issued: Array<string> = []

    const sweep = (now: number) => {
      for (const [token, expiry] of access) if (expiry <= now) access.delete(token)
      for (const [token, expiry] of refresh) if (expiry <= now) refresh.delete(token)
    }

    const activeAt = (now: number) => {
      let n = 0
      for (const expiry of access.values()) if (now < expiry) n += 1
      return n
    }

    // Shaped as the service's tokens are documented (`eyJhbGciOiJIUzI1NiIs...`, bearerFormat JWT): a header, claims
    // (which token, its serial, when it was issued and ends) and 32 random bytes for a signature, so that a program
    // that scrubs, stores or measures tokens meets the real shape here. Nothing checks the signature: the emulator
    // knows its tokens by their whole text.
    const tokenString = (typ: "access" | "refresh", now: number, expiry: number) =>
      Effect.map(
        Effect.all(Array.from({ length: 32 }, () => random.nextIntBetween(0, 256))),
        (bytes) => {
          const claims = {
            iss: "effect-fin-emulator",
            typ,
            emulator,
            n: serial,
            iat: Math.floor(now / 1000),
            exp: Math.floor(expiry / 1000)
          }
          return `${JOSE}.${base64url(JSON.stringify(claims))}.${Buffer.from(bytes).toString("base64url")}`
        }
      )

    const matching = (route: RouteName) =>
      rules.filter(({ injected, rule }) =>
        (rule.route === undefined || rule.route === "*" || rule.route === route) &&
        (rule.times === undefined || injected < rule.times) &&
        rule.rate !== 0
      )

    const decideFaults = (route: RouteName): Effect.Effect<FaultDecision> =>
      Effect.gen(function*() {
        const candidates = matching(route)
        if (candidates.length === 0) return { latency: 0, terminal: undefined }
        // Rolled first, one per rule with a fractional rate, so a seeded run makes the same choices for the same
        // sequence of requests; then decided in one synchronous block.
        const faultRandom = faultRandoms.get(route)!
        const rolls: Array<number> = []
        for (const { rule } of candidates) {
          rolls.push(rule.rate === undefined || rule.rate >= 1 ? 0 : yield* faultRandom.next)
        }
        return yield* Effect.sync(() => {
          let latency = 0
          let terminal: FaultRule | undefined
          for (let i = 0; i < candidates.length; i++) {
            const candidate = candidates[i]!
            const { rule } = candidate
            // Once the answer is decided, only latency rules are still tried: every one that fires adds its delay,
            // wherever it is in the list.
            if (terminal !== undefined && rule.kind !== "latency") continue
            if (rule.times !== undefined && candidate.injected >= rule.times) continue
            if (rule.rate !== undefined && rule.rate < 1 && rolls[i]! >= rule.rate) continue
            candidate.injected += 1
            faultCounts[rule.kind] += 1
            if (rule.kind === "latency") latency += rule.millis
            else terminal = rule
          }
          return { latency, terminal }
        })
      })

    const issueTokens = (kind: "issue" | "refresh", counted: number) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        serial += 1
        const accessToken = yield* tokenString("access", now, now + settings.accessLifetime)
        const refreshToken = yield* tokenString("refresh", now, now + settings.refreshLifetime)
        return yield* Effect.sync((): TokenFields => {
          const accessExpiry = now + settings.accessLifetime
          const refreshExpiry = now + settings.refreshLifetime
          // Handed out all the same, so kept for `issuedTokens` (a test looks for every token in its logs).
          issued.push(accessToken, refreshToken)
          if (issued.length > ISSUED_KEPT) issued.splice(0, issued.length - ISSUED_KEPT)
          if (counted === generation) {
            if (settings.revokeOnIssue) {
              access.clear()
              refresh.clear()
            } else if (serial % SWEEP_EVERY === 0) {
              sweep(now)
            }
            access.set(accessToken, accessExpiry)
            refresh.set(refreshToken, refreshExpiry)
            if (kind === "issue") tokensIssued += 1
            else tokensRefreshed += 1
            tokenLog.push({ at: now, kind })
            if (tokenLog.length > TOKEN_LOG_SIZE) tokenLog.shift()
          }
          return {
            access_token: accessToken,
            access_token_ttl: Timestamps.formatService(accessExpiry),
            refresh_token: refreshToken,
            refresh_token_ttl: Timestamps.formatService(refreshExpiry),
            current_time: Timestamps.formatService(now)
          }
        })
      })

    const valid = (map: Map<string, number>) => (token: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const expiry = map.get(token)
        return expiry !== undefined && now < expiry
      })

    const reset = Effect.sync(() => {
      generation += 1
      random = newRandom("")
      faultRandoms = newFaultRandoms()
      rules = settings.faults.map((rule) => ({ rule, injected: 0 }))
      requests = zeroRequests()
      statuses = {}
      faultCounts = zeroFaults()
      tokensIssued = 0
      tokensRefreshed = 0
      tokenLog = []
      webhooksSent = 0
      webhooksFailed = 0
      rateLimited = 0
      credit = capacity
      creditAt = undefined
      webhookUrl = settings.webhookUrl
      access.clear()
      refresh.clear()
    })

    const uuid = Effect.gen(function*() {
      const words: Array<number> = []
      for (let i = 0; i < 8; i++) words.push(yield* eventRandom.nextIntBetween(0, 0x10000))
      const [a, b, c, d, e, f, g, h] = words as [number, number, number, number, number, number, number, number]
      // Version 4, RFC 4122 variant.
      return `${hex(a, 4)}${hex(b, 4)}-${hex(c, 4)}-${hex((d & 0x0fff) | 0x4000, 4)}-${
        hex((e & 0x3fff) | 0x8000, 4)
      }-${hex(f, 4)}${hex(g, 4)}${hex(h, 4)}`
    })

    // The wall clock's time (a receiver's `maxAge` reads an event's age on its own wall clock; the live clock's
    // nanoseconds are monotonic, off the wall clock by every NTP step or suspension since the process started), with
    // the microseconds of the high-resolution clock: kept after the last event's within a millisecond, so that events
    // sent back to back keep their order (the two clocks do not turn a millisecond together).
    // The nanoseconds through `unsafeCurrentTimeNanos`, which the TestClock floors (its `currentTimeNanos` is a
    // RangeError at a fractional millisecond near the epoch, as a jittered retry's wake-up can be).
    let lastEventMicros = 0
    const nanosNow = Effect.clockWith((clock) => Effect.sync(() => clock.unsafeCurrentTimeNanos()))
    const eventTime = Effect.map(Effect.all([Clock.currentTimeMillis, nanosNow]), ([millis, nanos]) => {
      const micros = Math.floor(millis) * 1000 + Number((nanos / 1_000n) % 1_000n)
      lastEventMicros = micros <= lastEventMicros && lastEventMicros - micros < 1000 ? lastEventMicros + 1 : micros
      const fraction = (lastEventMicros % 1_000_000).toString().padStart(6, "0")
      return `${new Date(Math.floor(lastEventMicros / 1000)).toISOString().slice(0, 19)}.${fraction}Z`
    })

    // The rate limit, a token bucket, in exact integers (floating point made 1 - 1e-16 of a request out of a whole
    // one, refusing a client that waited the Retry-After it was given): `credit` is in nanoseconds × requests, a
    // request costs `perNanos`, it grows back by `requests` a nanosecond up to `requests × perNanos`, from `creditAt`
    // (undefined: full, not yet drawn on). On the monotonic clock (`unsafeCurrentTimeNanos`; the TestClock's time under
    // one, floored: its `currentTimeNanos` is `BigInt(millis * 1e6)`, a RangeError at an instant such as 0.3 ms).
    const requestsBig = BigInt(settings.rateLimit?.requests ?? 0)
    const perNanos = BigInt(Math.round((settings.rateLimit?.perMillis ?? 0) * 1_000_000))
    const capacity = requestsBig * perNanos
    let credit = capacity
    let creditAt: bigint | undefined
    let rateLimited = 0
    const rateLimit = settings.rateLimit === undefined
      ? Effect.succeed(undefined)
      : Effect.clockWith((clock) =>
        Effect.sync(() => {
          const now = clock.unsafeCurrentTimeNanos()
          // Time is credited once: a clock set back (a TestClock's setTime) grows nothing until it passes the
          // latest time already credited.
          if (creditAt === undefined || now > creditAt) {
            if (creditAt !== undefined) {
              const grown = credit + (now - creditAt) * requestsBig
              credit = grown < capacity ? grown : capacity
            }
            creditAt = now
          }
          if (credit >= perNanos) {
            credit -= perNanos
            return undefined
          }
          rateLimited += 1
          // Whole milliseconds, rounded up: never shorter than the real wait.
          const unit = requestsBig * 1_000_000n
          return Number((perNanos - credit + unit - 1n) / unit)
        }))

    // Copies: the counts go on changing.
    const copyRules = () => rules.map(({ injected, rule }): InjectedFault => ({ rule, injected }))

    const state: State = {
      settings,
      countRequest: (route) =>
        Effect.sync(() => {
          requests[route] += 1
          return generation
        }),
      countStatus: (status, counted) =>
        Effect.sync(() => {
          if (counted === generation) statuses[String(status)] = (statuses[String(status)] ?? 0) + 1
        }),
      decideFaults,
      rateLimit,
      issueTokens,
      checkAccess: valid(access),
      checkRefresh: valid(refresh),
      issuedTokens: Effect.sync(() => [...issued]),
      revokeTokens: Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          const n = activeAt(now)
          access.clear()
          refresh.clear()
          return n
        })),
      expireTokens: (alsoRefresh) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            const n = activeAt(now)
            for (const [token, expiry] of access) if (now < expiry) access.set(token, now)
            if (alsoRefresh) for (const [token, expiry] of refresh) if (now < expiry) refresh.set(token, now)
            return n
          })),
      faults: Effect.sync(copyRules),
      setFaults: (next, append) =>
        Effect.sync(() => {
          const fresh = next.map((rule) => ({ rule, injected: 0 }))
          rules = append ? [...rules, ...fresh] : fresh
          return copyRules()
        }),
      counters: Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync((): Counters => ({
          requests: { ...requests },
          statuses: { ...statuses },
          faults: { ...faultCounts },
          tokensIssued,
          tokensRefreshed,
          tokenLog: [...tokenLog],
          activeTokens: activeAt(now),
          webhooksSent,
          webhooksFailed,
          rateLimited
        }))),
      reset,
      webhookUrl: Effect.sync(() => webhookUrl),
      setWebhookUrl: (url) => Effect.sync(() => void (webhookUrl = url)),
      countWebhook: (delivered) =>
        Effect.sync(() => {
          if (delivered) webhooksSent += 1
          else webhooksFailed += 1
        }),
      uuid,
      eventTime
    }
    return state
  })
