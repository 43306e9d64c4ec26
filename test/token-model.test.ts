/**
 * A model-based property test of the token provider (README: "Behaviour you can rely on", Tokens; "Rotating
 * credentials"; the error table).
 *
 * Each case is a random script of what the two token routes answer (successes of random lifetimes, with or without a
 * refresh token, some late; 401; another 4xx; 408/429/5xx with or without Retry-After; resets; stalls; malformed
 * bodies), what the API answers (200, or 401: the token is revoked from then on), random client options
 * (`refreshMargin`, `tokenTimeout`, `maxRetries`, `maxRetryAfter`) and a random program of steps: callers arriving
 * (several at once), waits, clock jumps into the refresh margin, into its last half or past expiry (computed from the
 * last token issued), and interruptions of running callers. It runs on `FinTest.layerClient` (in memory) under the
 * `TestClock`, moved exactly to the next due timer (the driver of retry-model.test.ts). A small model of what the
 * provider knows (each token's expiry, refresh time and usable time as the README defines them) is built from the
 * answers as they are given, and the README's invariants are checked against the recorded traffic and outcomes.
 */
import { describe } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as FinError from "../src/FinError.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as TokenProvider from "../src/TokenProvider.js"
import { modelProperty, settle } from "./support.js"

// A whole second of 1970, as in retry-model.test.ts: the TestClock's readings are exact there.
const BASE = 0

const ISSUE = "/v1/oauth/token"
const REFRESH = "/v1/oauth/refresh-token"
const API = "/v1/ping"

// ---------------------------------------------------------------------------------------------------------------------
// Scenarios

type TokenAnswer =
  | {
    readonly kind: "ok"
    readonly lifetimeS: number
    readonly refreshS: number | undefined
    readonly delayMs: number
    readonly envelope: "top" | "data"
  }
  | { readonly kind: "unauthorized"; readonly retryAfterS: number | undefined }
  | { readonly kind: "refusal"; readonly status: 400 | 403 }
  | { readonly kind: "transient"; readonly status: number; readonly retryAfterS: number | undefined }
  | { readonly kind: "reset" }
  | { readonly kind: "stall" }
  | { readonly kind: "malformed"; readonly body: string }

type Jump = "margin" | "lastHalf" | "expiry" | "refreshExpiry"

type Step =
  | { readonly kind: "arrive"; readonly callers: number }
  | { readonly kind: "wait"; readonly ms: number }
  | { readonly kind: "jump"; readonly to: Jump }
  | { readonly kind: "interrupt"; readonly which: number }

interface Case {
  readonly refreshMarginMs: number
  readonly tokenTimeoutMs: number
  readonly maxRetries: number
  readonly maxRetryAfterMs: number
  readonly issue: ReadonlyArray<TokenAnswer>
  readonly refresh: ReadonlyArray<TokenAnswer>
  /** true: the API answers 401 (and revokes the token); after the script, 200. */
  readonly api: ReadonlyArray<boolean>
  readonly steps: ReadonlyArray<Step>
}

const okArb: FastCheck.Arbitrary<TokenAnswer> = FastCheck.record({
  lifetimeS: FastCheck.constantFrom(2, 10, 60, 600, 3600),
  refreshS: FastCheck.option(FastCheck.constantFrom(1, 5, 60, 3600, 604_800), { nil: undefined, freq: 4 }),
  // Late answers, always within the smallest tokenTimeout.
  delayMs: FastCheck.constantFrom(0, 0, 0, 100, 900),
  envelope: FastCheck.constantFrom("top" as const, "data" as const)
}).map((r): TokenAnswer => ({ kind: "ok", ...r }))

const tokenAnswerArb: FastCheck.Arbitrary<TokenAnswer> = FastCheck.oneof(
  { weight: 6, arbitrary: okArb },
  {
    weight: 2,
    // A service locking the credentials out may say for how long.
    arbitrary: FastCheck.option(FastCheck.constantFrom(0, 2, 120), { nil: undefined, freq: 3 })
      .map((retryAfterS): TokenAnswer => ({ kind: "unauthorized", retryAfterS }))
  },
  {
    weight: 1,
    arbitrary: FastCheck.constantFrom(400 as const, 403 as const).map((status): TokenAnswer => ({
      kind: "refusal",
      status
    }))
  },
  {
    weight: 3,
    arbitrary: FastCheck.record({
      status: FastCheck.constantFrom(408, 429, 500, 503),
      retryAfterS: FastCheck.option(FastCheck.constantFrom(0, 1, 2, 5, 120), { nil: undefined, freq: 2 })
    }).map((r): TokenAnswer => ({ kind: "transient", ...r }))
  },
  { weight: 1, arbitrary: FastCheck.constant<TokenAnswer>({ kind: "reset" }) },
  { weight: 1, arbitrary: FastCheck.constant<TokenAnswer>({ kind: "stall" }) },
  {
    weight: 1,
    arbitrary: FastCheck.constantFrom("{}", "<html>502</html>", `{"access_token":"a b","access_token_ttl":"x"}`)
      .map((body): TokenAnswer => ({ kind: "malformed", body }))
  }
)

const stepArb: FastCheck.Arbitrary<Step> = FastCheck.oneof(
  {
    weight: 5,
    arbitrary: FastCheck.integer({ min: 1, max: 4 }).map((callers): Step => ({ kind: "arrive", callers }))
  },
  {
    weight: 3,
    arbitrary: FastCheck.constantFrom(0, 1, 300, 1000, 1500, 5000, 30_000).map((ms): Step => ({ kind: "wait", ms }))
  },
  {
    weight: 3,
    arbitrary: FastCheck.constantFrom<Array<Jump>>("margin", "lastHalf", "expiry", "refreshExpiry")
      .map((to): Step => ({ kind: "jump", to }))
  },
  { weight: 1, arbitrary: FastCheck.nat(7).map((which): Step => ({ kind: "interrupt", which })) }
)

const caseArb: FastCheck.Arbitrary<Case> = FastCheck.record({
  refreshMarginMs: FastCheck.constantFrom(1000, 5000, 60_000),
  tokenTimeoutMs: FastCheck.constantFrom(1000, 3000, 10_000),
  maxRetries: FastCheck.integer({ min: 0, max: 3 }),
  maxRetryAfterMs: FastCheck.constantFrom(0, 500, 1000, 5000, 60_000),
  issue: FastCheck.array(tokenAnswerArb, { minLength: 0, maxLength: 8 }),
  refresh: FastCheck.array(tokenAnswerArb, { minLength: 0, maxLength: 5 }),
  api: FastCheck.array(FastCheck.boolean(), { minLength: 0, maxLength: 6 }),
  steps: FastCheck.array(stepArb, { minLength: 1, maxLength: 12 })
})

// ---------------------------------------------------------------------------------------------------------------------
// What the provider knows of each token (README, Tokens and Configuration)

interface Issued {
  readonly access: string
  /** `refreshMargin`, or 10% of the token's lifetime if that is shorter. */
  readonly margin: number
  readonly refreshAt: number
  /** "they go on with the current token [...] until half the margin is left" */
  readonly usableUntil: number
  readonly expiresAt: number
  readonly refresh: { readonly token: string; readonly usableUntil: number } | undefined
}

interface TokenRequest {
  readonly route: typeof ISSUE | typeof REFRESH
  readonly at: number
  /** The refresh token sent, on the refresh route. */
  readonly sent: string | undefined
  readonly answer: TokenAnswer
  /** When the answer came (a late success later); undefined for a stall. */
  answeredAt: number | undefined
  issued: Issued | undefined
}

interface ApiRequest {
  readonly caller: number
  readonly token: string
  readonly at: number
  readonly refused: boolean
}

interface Caller {
  readonly id: number
  readonly arrivedAt: number
  readonly fiber: Fiber.RuntimeFiber<unknown, FinError.FinError>
  interrupted: boolean
}

// The timestamps the token route sends are whole seconds (`formatServiceTimestamp`), as the provider reads them.
const seconds = (ms: number) => TokenProvider.parseTimestamp(FinTest.formatServiceTimestamp(ms))!

const replyOf = (
  c: Case,
  answer: TokenAnswer,
  request: TokenRequest,
  serial: number,
  issued: Map<string, Issued>
): Effect.Effect<FinTest.Reply> => {
  switch (answer.kind) {
    case "ok":
      return Effect.delay(
        Effect.map(Clock.currentTimeMillis, (now) => {
          const current = seconds(now)
          const ttl = seconds(now + answer.lifetimeS * 1000)
          const lifetime = Math.max(ttl - current, 1)
          const margin = Math.min(c.refreshMarginMs, lifetime * 0.1)
          const expiresAt = now + lifetime
          const rttl = answer.refreshS === undefined ? undefined : seconds(now + answer.refreshS * 1000)
          const info: Issued = {
            access: `tok-${serial}`,
            margin,
            refreshAt: expiresAt - margin,
            usableUntil: expiresAt - margin / 2,
            expiresAt,
            refresh: rttl === undefined
              ? undefined
              : { token: `ref-${serial}`, usableUntil: now + (rttl - current) - margin / 2 }
          }
          issued.set(info.access, info)
          request.issued = info
          request.answeredAt = now
          const fields = {
            access_token: info.access,
            access_token_ttl: FinTest.formatServiceTimestamp(now + answer.lifetimeS * 1000),
            current_time: FinTest.formatServiceTimestamp(now),
            ...(rttl === undefined
              ? {}
              : { refresh_token: `ref-${serial}`, refresh_token_ttl: FinTest.formatServiceTimestamp(rttl) })
          }
          return FinTest.json(200, answer.envelope === "data" ? { data: fields } : fields)
        }),
        Duration.millis(answer.delayMs)
      )
    case "unauthorized":
      return Effect.succeed(FinTest.json(
        401,
        { message: "Unauthenticated." },
        answer.retryAfterS === undefined ? {} : { "retry-after": String(answer.retryAfterS) }
      ))
    case "refusal":
      return Effect.succeed(FinTest.json(answer.status, { message: "invalid_client" }))
    case "transient":
      return Effect.succeed(FinTest.json(
        answer.status,
        { message: `status ${answer.status}` },
        answer.retryAfterS === undefined ? {} : { "retry-after": String(answer.retryAfterS) }
      ))
    case "reset":
      return Effect.succeed(FinTest.fail("ECONNRESET"))
    case "stall":
      return Effect.never
    case "malformed":
      return Effect.succeed(FinTest.text(200, answer.body, { "content-type": "application/json" }))
  }
}

const success: TokenAnswer = { kind: "ok", lifetimeS: 3600, refreshS: 604_800, delayMs: 0, envelope: "top" }

// ---------------------------------------------------------------------------------------------------------------------
// The TestClock driver (as in retry-model.test.ts)

const nextSleep = Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  const due = Chunk.toReadonlyArray(yield* TestClock.sleeps()).filter((t) => t > now)
  return due.length === 0 ? undefined : Math.min(...due)
})

// Moves the clock to `target`, stopping exactly at each timer due before it.
const advanceTo = (target: number) =>
  Effect.gen(function*() {
    for (let moves = 0; moves < 500; moves++) {
      yield* settle
      const next = yield* nextSleep
      if (next !== undefined && next <= target) {
        yield* TestClock.setTime(next)
        continue
      }
      if ((yield* Clock.currentTimeMillis) < target) yield* TestClock.setTime(target)
      yield* settle
      return
    }
  })

// ---------------------------------------------------------------------------------------------------------------------
// Running a case

interface Run {
  readonly tokens: ReadonlyArray<TokenRequest>
  readonly api: ReadonlyArray<ApiRequest>
  readonly callers: ReadonlyArray<{ readonly caller: Caller; readonly exit: Exit.Exit<unknown, FinError.FinError> }>
  readonly online: ReadonlyArray<string>
}

const runCase = (c: Case) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(BASE)
    const online: Array<string> = []
    const tokens: Array<TokenRequest> = []
    const api: Array<ApiRequest> = []
    const issued = new Map<string, Issued>()
    const revoked = new Set<string>()
    const turns = { [ISSUE]: 0, [REFRESH]: 0 }
    let inFlight = 0
    let serial = 0
    let apiTurn = 0

    const tokenRoute = (route: typeof ISSUE | typeof REFRESH): FinTest.Handler => (request) =>
      Effect.suspend(() => {
        // README: "one request in flight however many fibers wait"; "One fetch at a time".
        if (inFlight > 0) online.push(`single flight: ${route} sent at ${request.at} with ${inFlight} in flight`)
        inFlight += 1
        const script = route === ISSUE ? c.issue : c.refresh
        const answer = script[turns[route]++] ?? success
        const body = request.body as Record<string, unknown> | undefined
        const entry: TokenRequest = {
          route,
          at: request.at,
          sent: route === REFRESH ? String(body?.refresh_token) : undefined,
          answer,
          answeredAt: answer.kind === "stall" || answer.kind === "ok" ? undefined : request.at,
          issued: undefined
        }
        tokens.push(entry)
        return replyOf(c, answer, entry, ++serial, issued).pipe(Effect.ensuring(Effect.sync(() => inFlight -= 1)))
      })

    const apiRoute: FinTest.Handler = (request) => {
      const caller = Number(new URL(request.url).searchParams.get("caller"))
      const token = (request.headers.authorization ?? "").replace(/^Bearer /, "")
      const refused = revoked.has(token) || c.api[apiTurn++] === true
      if (refused) revoked.add(token)
      api.push({ caller, token, at: request.at, refused })
      return refused ? FinTest.json(401, { message: "Unauthenticated." }) : FinTest.json(200, { ok: true })
    }

    const call = (id: number) =>
      HttpTransport.request({ method: "GET", path: API, query: { caller: String(id) }, response: Schema.Unknown })

    return yield* Effect.gen(function*() {
      const callers: Array<Caller> = []
      const latest = () => [...tokens].reverse().find((t) => t.issued !== undefined)?.issued
      for (const step of c.steps) {
        const now = yield* Clock.currentTimeMillis
        switch (step.kind) {
          case "arrive":
            for (let i = 0; i < step.callers; i++) {
              const id = callers.length
              callers.push({ id, arrivedAt: now, fiber: yield* Effect.fork(call(id)), interrupted: false })
            }
            yield* settle
            break
          case "wait":
            yield* advanceTo(now + step.ms)
            break
          case "jump": {
            const last = latest()
            if (last === undefined) break
            const target = step.to === "margin"
              ? last.refreshAt + last.margin / 4
              : step.to === "lastHalf"
              ? last.usableUntil + last.margin / 4
              : step.to === "expiry"
              ? last.expiresAt + 1000
              : last.refresh === undefined
              ? undefined
              : last.refresh.usableUntil + 1
            if (target !== undefined && target > now) yield* advanceTo(target)
            break
          }
          case "interrupt": {
            const running = callers.filter((k) => k.fiber.unsafePoll() === null)
            if (running.length === 0) break
            const victim = running[step.which % running.length]!
            victim.interrupted = true
            yield* Fiber.interruptFork(victim.fiber)
            yield* settle
            break
          }
        }
      }
      // Every caller to its end; the clock moved to each timer in turn.
      // Polling timers (the token store's wait for a lock) need many moves: bounded by time rather than by moves.
      const drainStart = yield* Clock.currentTimeMillis
      for (let moves = 0; moves < 20_000 && (yield* Clock.currentTimeMillis) < drainStart + 3_600_000; moves++) {
        yield* settle
        if (callers.every((k) => k.fiber.unsafePoll() !== null)) break
        const next = yield* nextSleep
        if (next === undefined) {
          online.push("a caller is still running with no timer due (a hang)")
          break
        }
        yield* TestClock.setTime(next)
      }
      const ended = []
      for (const caller of callers) {
        const exit = caller.fiber.unsafePoll()
        if (exit === null) {
          online.push(`caller ${caller.id} still running an hour of TestClock time after the last step`)
          yield* Fiber.interrupt(caller.fiber)
          continue
        }
        ended.push({ caller, exit })
      }
      return { tokens, api, callers: ended, online } satisfies Run
    }).pipe(
      Effect.provide(FinTest.layerClient({
        "POST /v1/oauth/token": tokenRoute(ISSUE),
        "POST /v1/oauth/refresh-token": tokenRoute(REFRESH),
        "GET /v1/ping": apiRoute
      }, {
        refreshMargin: Duration.millis(c.refreshMarginMs),
        tokenTimeout: Duration.millis(c.tokenTimeoutMs),
        maxRetries: c.maxRetries,
        maxRetryAfter: Duration.millis(c.maxRetryAfterMs)
      })),
      Effect.withRandom(Random.fixed([0.5]))
    )
  })

// ---------------------------------------------------------------------------------------------------------------------
// Checks

const EPS = 1e-6
const isRefusal = (a: TokenAnswer) => a.kind === "unauthorized" || a.kind === "refusal"
const TOKEN_TAGS = new Set(["AuthenticationError", "ApiError", "RateLimitError", "TransportError", "TimeoutError",
  "ResponseDecodeError"])

const problemsOf = (c: Case, run: Run): ReadonlyArray<string> => {
  const problems: Array<string> = [...run.online]
  const issuedBy = new Map<string, Issued>()
  for (const t of run.tokens) if (t.issued !== undefined) issuedBy.set(t.issued.access, t.issued)

  // README: "a token is never used past its expiry" (Tokens: "they go on with the current token [...] until half the
  // margin is left, and only then fail with the fetch's error").
  for (const r of run.api) {
    const info = issuedBy.get(r.token)
    if (info === undefined) problems.push(`API request at ${r.at} sent a token never issued: ${r.token}`)
    else if (r.at >= info.expiresAt) problems.push(`${r.token} sent at ${r.at}, past its expiry ${info.expiresAt}`)
    else if (r.at > info.usableUntil + EPS) {
      problems.push(`${r.token} sent at ${r.at}, past its usable time ${info.usableUntil} (half the margin left)`)
    }
  }

  // README: "On a 401 the transport clears exactly that token (compare-and-clear), gets a fresh one and retries once;
  // this process never hands a refused token out again".
  for (const { caller } of run.callers) {
    const mine = run.api.filter((r) => r.caller === caller.id)
    if (mine.length > 2) problems.push(`caller ${caller.id} sent ${mine.length} API requests (one retry after a 401)`)
    mine.forEach((r, i) => {
      if (mine.slice(0, i).some((p) => p.refused && p.token === r.token)) {
        problems.push(`caller ${caller.id} sent ${r.token} again after the service refused it with 401`)
      }
    })
  }
  // A call's final 401 (the one after its refresh-and-retry) leaves its token for the next call's first 401 to clear
  // (README): only a refusal that was the first 401 of its call is checked.
  const firstRefusal = (p: ApiRequest) =>
    p.refused && !run.api.some((q) => q.caller === p.caller && q !== p && q.refused && run.api.indexOf(q) <
      run.api.indexOf(p))
  for (const r of run.api) {
    const refusedBefore = run.api.find((p) => firstRefusal(p) && p.token === r.token && p.at < r.at)
    const caller = run.callers.find((k) => k.caller.id === r.caller)?.caller
    if (refusedBefore !== undefined && caller !== undefined && caller.arrivedAt > refusedBefore.at) {
      problems.push(`caller ${r.caller} (arrived ${caller.arrivedAt}) got ${r.token}, refused at ${refusedBefore.at}`)
    }
  }

  // README: "one second after the service refused the client's credentials, a 401 or another 4xx but 408 and 429 on
  // `POST /v1/oauth/token`, whatever `maxRetryAfter` [...] longer when the refusal asked a longer `Retry-After`, a
  // 401's too: until it has passed, no token request is sent".
  // And "for the wait its last answer asked for (its `Retry-After` [...] `maxRetryAfter` at most [...])": an issue
  // answer asking more than `maxRetryAfter` ends its fetch, and its wait is kept for `maxRetryAfter`.
  run.tokens.forEach((t, i) => {
    const answeredAt = t.answeredAt
    if (t.route !== ISSUE || answeredAt === undefined) return
    const asked = t.answer.kind === "unauthorized" ? (t.answer.retryAfterS ?? 0) * 1000 : 0
    const hold = isRefusal(t.answer)
      ? Math.max(1000, Math.min(asked, c.maxRetryAfterMs))
      : t.answer.kind === "transient" && t.answer.retryAfterS !== undefined && c.maxRetryAfterMs > 0 &&
          t.answer.retryAfterS * 1000 > c.maxRetryAfterMs
      ? c.maxRetryAfterMs
      : 0
    const early = run.tokens.slice(i + 1).find((u) => u.at < answeredAt + hold - EPS)
    if (early !== undefined) {
      problems.push(
        `issue answered ${JSON.stringify(t.answer)} at ${answeredAt}: ${early.route} sent at ${early.at}, ` +
          `within the ${hold} ms hold`
      )
    }
  })

  // README: "`POST /v1/oauth/refresh-token` while the refresh token is valid (until half the margin before its
  // expiry [...]), issuing anew when it is refused (401, a 4xx but 408)".
  const refusedRefresh = new Set<string>()
  const failedRefresh = new Set<string>()
  let current: Issued | undefined
  run.tokens.forEach((t, i) => {
    if (t.route === REFRESH) {
      const owner = [...issuedBy.values()].find((x) => x.refresh?.token === t.sent)
      if (owner === undefined) problems.push(`refresh at ${t.at} sent an unknown refresh token ${t.sent}`)
      else if (t.at >= owner.refresh!.usableUntil + EPS) {
        problems.push(`refresh token ${t.sent} sent at ${t.at}, past its usable time ${owner.refresh!.usableUntil}`)
      }
      if (refusedRefresh.has(t.sent!)) problems.push(`refresh token ${t.sent} sent at ${t.at} after it was refused`)
      if (isRefusal(t.answer)) {
        refusedRefresh.add(t.sent!)
        const next = run.tokens[i + 1]
        if (next !== undefined && (next.route !== ISSUE || next.at !== t.at)) {
          problems.push(`refresh refused at ${t.at}, then ${next.route} at ${next.at} rather than an issue at once`)
        }
      }
      if (t.answer.kind !== "ok") failedRefresh.add(t.sent!)
    } else if (current?.refresh !== undefined) {
      // An issue while the refresh token in hand is usable and never failed: it should have been refreshed.
      const r = current.refresh
      if (t.at < r.usableUntil - EPS && !failedRefresh.has(r.token)) {
        problems.push(`issue at ${t.at} though refresh token ${r.token} was usable until ${r.usableUntil}`)
      }
    }
    if (t.issued !== undefined) current = t.issued
  })

  // README: "Every API call fails with `FinError`"; "interrupting the caller who started it fails nobody else".
  for (const { caller, exit } of run.callers) {
    if (Exit.isSuccess(exit)) continue
    const failure = Cause.failureOption(exit.cause)
    if (failure._tag === "None") {
      if (!(caller.interrupted && Cause.isInterruptedOnly(exit.cause))) {
        problems.push(`caller ${caller.id} ended with no FinError: ${Cause.pretty(exit.cause)}`)
      }
      continue
    }
    const error = failure.value
    if (!FinError.isFinError(error)) {
      problems.push(`caller ${caller.id} failed with no FinError: ${String(error)}`)
      continue
    }
    const operation = "operation" in error ? error.operation : undefined
    const attempts = "attempts" in error ? error.attempts : undefined
    const mine = run.api.filter((r) => r.caller === caller.id)
    const where = `caller ${caller.id}: ${error._tag} ${JSON.stringify({ operation, attempts })}`
    if (operation === `POST ${ISSUE}` || operation === `POST ${REFRESH}`) {
      // README (Errors): "A call whose token could not be had fails with the token call's error, whose `operation` is
      // the token route's"; (Configuration) `maxRetries`.
      if (!TOKEN_TAGS.has(error._tag)) problems.push(`${where}: not a token call's error`)
      if (attempts === undefined || attempts < 1 || attempts > c.maxRetries + 1) {
        problems.push(`${where}: attempts not within 1..${c.maxRetries + 1}`)
      }
      // README: "The `AuthenticationError` of a refused issue says to check `clientId` and `clientSecret`."
      const refusedIssue = error._tag === "AuthenticationError" && operation === `POST ${ISSUE}`
      if (refusedIssue && !/clientSecret/.test(error.message)) {
        problems.push(`${where}: a refused issue's error does not say to check the credentials`)
      }
    } else if (operation === `GET ${API}`) {
      // README (error table): "AuthenticationError | [...] 401 again after one refresh-and-retry"; `attempts`.
      if (attempts !== mine.length) problems.push(`${where}: but ${mine.length} API requests were sent`)
      const deadline = error._tag === "TimeoutError" && error.kind === "deadline"
      const twice401 = error._tag === "AuthenticationError" && mine.length === 2 && mine.every((r) => r.refused)
      if (!deadline && !twice401) problems.push(`${where}: unexpected for answers ${JSON.stringify(mine)}`)
    } else {
      problems.push(`${where}: no operation of this call`)
    }
  }
  return problems
}

describe("token provider, model-based", () => {
  modelProperty("every scenario keeps the README's token invariants", {
    env: "TOKEN_MODEL",
    seed: 20_260_102,
    runs: 120,
    msPerRun: 1000,
    cases: caseArb,
    run: runCase,
    problemsOf
  })
})
