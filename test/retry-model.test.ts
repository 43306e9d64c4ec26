/**
 * A model-based property test of the retry policy (README: "Retries", the error table, "Behaviour you can rely on").
 *
 * Each case is a random script of what the service answers to successive attempts of ONE call (the last answer
 * repeats), random per-call options (`maxRetries`, `timeout`, `deadline` through `HttpTransport.withOptions`), a
 * random client `maxRetryAfter` and a jitter draw, for a fee quote (`POST /v1/fee-calculation`, safe) or a subdivision
 * lookup (`GET /v1/countries/USA/subdivisions`, online mode). The call runs on `FinTest.layerClient` (in memory, no
 * network) under the `TestClock`, which is moved exactly to the next due timer until the call ends. A small model of
 * the documented policy predicts the outcome, the attempts sent and when each is sent; the run is compared with it,
 * and the README's invariants are also checked one by one.
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
import * as TestClock from "effect/TestClock"
import * as FeeService from "../src/FeeService.js"
import * as FinError from "../src/FinError.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as SubdivisionService from "../src/SubdivisionService.js"
import { modelProperty, quoteBody, quoteRequest, settle } from "./support.js"

// The TestClock's start (1970, a whole second: HTTP dates are whole seconds, so a date `k` seconds ahead is a wait
// the model can compute). Not a present-day time: there the TestClock's readings (its nanoseconds, a float past 2^53)
// are a microsecond or so off, and a timer set for the deadline may end that much past it, which the model's exact
// checks would count. (The tie this test found there is tested in HttpTransport.test.ts.)
const BASE = Number(process.env.FIN_MODEL_BASE ?? 0)

const FEE_PATH = "/v1/fee-calculation"
const SUB_PATH = "/v1/countries/USA/subdivisions"
const subdivisionsBody = {
  data: { subdivisions: [{ code: "US-CA", name: "California" }, { code: "US-NY", name: "New York" }] }
}

// ---------------------------------------------------------------------------------------------------------------------
// Scripts

type RetryAfter =
  | { readonly form: "seconds"; readonly text: string; readonly ms: number }
  | { readonly form: "ms"; readonly text: string; readonly ms: number }
  | { readonly form: "date"; readonly seconds: number }
  | { readonly form: "both"; readonly seconds: number; readonly ms: number }
  // The header sent twice, joined with ", " as a client gives it: "counts with the longer wait"
  | { readonly form: "twice"; readonly seconds: readonly [number, number] }

type Step =
  | { readonly kind: "ok" }
  // 408, 429, 500, 502, 503, 504: the retried statuses
  | { readonly kind: "transient"; readonly status: number; readonly retryAfter: RetryAfter | undefined }
  // 400/403/404/409/422 with documented bodies, and 501: never retried
  | { readonly kind: "refusal"; readonly status: number }
  | { readonly kind: "unauthorized" }
  | { readonly kind: "fail"; readonly code: "ECONNRESET" | "ECONNREFUSED" | "CERT_HAS_EXPIRED" }
  // The head arrived (with its Retry-After, if any), then the connection was lost during the body
  | { readonly kind: "failBody"; readonly status: number; readonly retryAfter: RetryAfter | undefined }
  | { readonly kind: "stall" }
  | { readonly kind: "stallBody" }
  | { readonly kind: "malformed"; readonly status: number; readonly body: string }

const retryAfterArb: FastCheck.Arbitrary<RetryAfter> = FastCheck.oneof(
  FastCheck.constantFrom(0, 1, 2, 4, 5, 30, 60, 120)
    .map((s): RetryAfter => ({ form: "seconds", text: String(s), ms: s * 1000 })),
  FastCheck.constant<RetryAfter>({ form: "seconds", text: "99999999999", ms: 99999999999 * 1000 }),
  FastCheck.constantFrom(0, 1, 250, 1500, 3000, 700_000)
    .map((ms): RetryAfter => ({ form: "ms", text: String(ms), ms })),
  FastCheck.constant<RetryAfter>({ form: "ms", text: "0.5", ms: 0 }),
  FastCheck.constantFrom(-30, 0, 1, 3, 100).map((seconds): RetryAfter => ({ form: "date", seconds })),
  FastCheck.record({ seconds: FastCheck.constantFrom(1, 2, 5), ms: FastCheck.constantFrom(0, 1200, 2500, 9000) })
    .map(({ ms, seconds }): RetryAfter => ({ form: "both", seconds, ms })),
  FastCheck.tuple(FastCheck.constantFrom(0, 1, 3), FastCheck.constantFrom(2, 30))
    .map((seconds): RetryAfter => ({ form: "twice", seconds }))
)

const stepArb: FastCheck.Arbitrary<Step> = FastCheck.oneof(
  { weight: 4, arbitrary: FastCheck.constant<Step>({ kind: "ok" }) },
  {
    weight: 6,
    arbitrary: FastCheck.record({
      status: FastCheck.constantFrom(408, 429, 500, 502, 503, 504),
      retryAfter: FastCheck.option(retryAfterArb, { nil: undefined, freq: 2 })
    }).map(({ retryAfter, status }): Step => ({ kind: "transient", status, retryAfter }))
  },
  {
    weight: 2,
    arbitrary: FastCheck.constantFrom(400, 403, 404, 409, 422, 501).map((status): Step => ({ kind: "refusal", status }))
  },
  { weight: 1, arbitrary: FastCheck.constant<Step>({ kind: "unauthorized" }) },
  {
    weight: 2,
    arbitrary: FastCheck.constantFrom<Array<"ECONNRESET" | "ECONNREFUSED" | "CERT_HAS_EXPIRED">>(
      "ECONNRESET",
      "ECONNRESET",
      "ECONNREFUSED",
      "CERT_HAS_EXPIRED"
    )
      .map((code): Step => ({ kind: "fail", code }))
  },
  {
    weight: 2,
    arbitrary: FastCheck.record({
      status: FastCheck.constantFrom(200, 429, 503, 404),
      retryAfter: FastCheck.option(retryAfterArb, { nil: undefined, freq: 2 })
    }).map(({ retryAfter, status }): Step => ({ kind: "failBody", status, retryAfter }))
  },
  { weight: 1, arbitrary: FastCheck.constant<Step>({ kind: "stall" }) },
  { weight: 1, arbitrary: FastCheck.constant<Step>({ kind: "stallBody" }) },
  {
    weight: 1,
    arbitrary: FastCheck.constantFrom(`{"data":{"source_currency":"US`, "<html>502 Bad Gateway</html>", "{}", "")
      .map((body): Step => ({ kind: "malformed", status: body === "" ? 204 : 200, body }))
  }
)

interface Case {
  readonly route: "fee" | "subdivisions"
  readonly script: ReadonlyArray<Step>
  readonly maxRetries: number
  readonly timeoutMs: number
  readonly deadlineMs: number
  readonly maxRetryAfterMs: number
  readonly jitter: number
}

const caseArb: FastCheck.Arbitrary<Case> = FastCheck.record({
  route: FastCheck.constantFrom("fee" as const, "subdivisions" as const),
  script: FastCheck.array(stepArb, { minLength: 1, maxLength: 6 }),
  // Up to 6: the fifth retry's backoff is the first at the 8 s cap.
  maxRetries: FastCheck.integer({ min: 0, max: 6 }),
  timeoutMs: FastCheck.constantFrom(1000, 2000, 5000, 30_000),
  deadlineMs: FastCheck.constantFrom(1500, 3000, 8000, 20_000, 60_000),
  maxRetryAfterMs: FastCheck.constantFrom(0, 1000, 5000, 60_000),
  // Factors 0.8, 0.9, 1, 1.1 and 1.16: both sides of the jitter.
  jitter: FastCheck.constantFrom(0, 0.25, 0.5, 0.75, 0.9)
})

const stepAt = (script: ReadonlyArray<Step>, i: number): Step => script[Math.min(i, script.length - 1)]!

// The headers of a Retry-After, at wall time `now` (epoch ms).
const retryAfterHeaders = (ra: RetryAfter, now: number): Record<string, string> => {
  switch (ra.form) {
    case "seconds":
      return { "retry-after": ra.text }
    case "ms":
      return { "retry-after-ms": ra.text }
    case "date":
      return { "retry-after": new Date(now + ra.seconds * 1000).toUTCString() }
    case "both":
      return { "retry-after": String(ra.seconds), "retry-after-ms": String(ra.ms) }
    case "twice":
      return { "retry-after": ra.seconds.join(", ") }
  }
}

const documentedBody = (status: number): unknown => {
  switch (status) {
    case 400:
      return { status: 400, message: "Bad request", data: { source_amount: "must be positive" } }
    case 403:
    case 409:
      return { error: { code: "conflict", message: "Already exists" } }
    case 422:
      return { message: "Validation failed", errors: [{ source_amount: "too small" }] }
    default:
      return { message: `status ${status}` }
  }
}

const replyOf = (route: Case["route"], step: Step, now: number): FinTest.Reply => {
  switch (step.kind) {
    case "ok":
      return FinTest.json(200, route === "fee" ? quoteBody : subdivisionsBody)
    case "transient":
      return FinTest.json(
        step.status,
        { message: `status ${step.status}` },
        step.retryAfter === undefined ? {} : retryAfterHeaders(step.retryAfter, now)
      )
    case "refusal":
      return FinTest.json(step.status, documentedBody(step.status))
    case "unauthorized":
      return FinTest.json(401, { message: "Unauthenticated." })
    case "fail":
      return FinTest.fail(step.code)
    case "failBody":
      // `FinTest.failBody` sends no headers: the same reply written out, with the Retry-After in its head.
      return {
        _tag: "Respond",
        status: step.status,
        body: "",
        headers: step.retryAfter === undefined ? {} : retryAfterHeaders(step.retryAfter, now),
        stallBody: false,
        failBody: "ECONNRESET"
      }
    case "stall":
      return FinTest.stall
    case "stallBody":
      return FinTest.stallBody(200)
    case "malformed":
      return FinTest.text(step.status, step.body, step.body === "" ? {} : { "content-type": "application/json" })
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The model: what the README says one call does with a script.

interface Failure {
  readonly _tag: FinError.FinError["_tag"]
  readonly status?: number | undefined
  readonly kind?: "attempt" | "deadline" | undefined
  readonly retryAfterMs?: number | undefined
  readonly attempts: number
}

type Expected = { readonly _tag: "Success" } | Failure

interface Prediction {
  readonly outcome: Expected
  /** Virtual time (ms from the call's start) of each request sent. */
  readonly sentAt: ReadonlyArray<number>
  readonly end: number
}

// "Retry-After (seconds, or an HTTP date counted from [...] this machine's clock [...]) and retry-after-ms (whole
// milliseconds) replace the backoff [...] both headers, with retry-after-ms when they agree to within a second, else
// with the longer"
const waitOf = (ra: RetryAfter, t: number): number => {
  switch (ra.form) {
    case "seconds":
    case "ms":
      return ra.ms
    case "date": {
      const now = BASE + t
      return Math.max(0, Math.floor((now + ra.seconds * 1000) / 1000) * 1000 - now)
    }
    case "both": {
      const s = ra.seconds * 1000
      return Math.abs(ra.ms - s) < 1000 ? ra.ms : Math.max(ra.ms, s)
    }
    case "twice":
      return Math.max(...ra.seconds) * 1000
  }
}

// "exponential from 500 ms, factor 2, jitter ±20%, capped at 8 s (jittered 6.4-8 s there [...])" (under
// `Random.fixed([j])` the factor is 0.8 + 0.4 j; at the cap, 0.8-1.2 maps onto 0.8-1.0 of it).
const backoffMs = (retry: number, jitter: number): number => {
  const d = 500 * 2 ** (retry - 1)
  const factor = 0.8 + 0.4 * jitter
  return d < 8000 ? d * factor : 8000 * (0.8 + (factor - 0.8) / 2)
}

// One attempt's answer as the model sees it: its outcome, and whether the policy may retry it.
type Answer = { readonly _tag: "Success" } | (Failure & { readonly retryable: boolean })

const model = (c: Case): Prediction => {
  const D = c.deadlineMs
  const sentAt: Array<number> = []
  let t = 0
  let served = 0
  let refreshed = false
  const send = (): Answer => {
    if (t >= D) return { _tag: "TimeoutError", kind: "deadline", retryable: false, attempts: sentAt.length }
    sentAt.push(t)
    const attempts = sentAt.length
    const step = stepAt(c.script, served++)
    switch (step.kind) {
      case "ok":
        return { _tag: "Success" }
      case "transient": {
        const retryAfterMs = step.retryAfter === undefined ? undefined : waitOf(step.retryAfter, t)
        return {
          _tag: step.status === 429 ? "RateLimitError" : "ApiError",
          status: step.status,
          retryAfterMs,
          retryable: true,
          attempts
        }
      }
      case "refusal":
        return { _tag: "ApiError", status: step.status, retryable: false, attempts }
      case "unauthorized":
        return { _tag: "AuthenticationError", status: 401, retryable: false, attempts }
      case "fail":
        // "not a connection refused for its setup [...] CERT_HAS_EXPIRED"
        return { _tag: "TransportError", retryable: step.code !== "CERT_HAS_EXPIRED", attempts }
      case "failBody": {
        // "a retry waits for it; one longer than allowed, or than the deadline leaves, ends the retries, the error
        // staying this `TransportError`, never a `RateLimitError`"
        const retryAfterMs = step.retryAfter === undefined ? undefined : waitOf(step.retryAfter, t)
        // "Other 4xx are never retried": a 404 whose page was lost is still a refusal (its head said so)
        const retryable = step.status === 200 || step.status === 429 || step.status === 503
        return { _tag: "TransportError", status: step.status, retryAfterMs, retryable, attempts }
      }
      case "malformed":
        return { _tag: "ResponseDecodeError", status: step.status, retryable: false, attempts }
      case "stall":
      case "stallBody": {
        // "an attempt whose timeout would end with the deadline or after it ends as a deadline one"
        const left = D - t
        const kind = left <= c.timeoutMs ? "deadline" : "attempt"
        t += Math.min(left, c.timeoutMs)
        return { _tag: "TimeoutError", kind, retryable: kind === "attempt", attempts }
      }
    }
  }
  // "a 401 refreshes the token and retries once"
  const attempt = (): Answer => {
    const answer = send()
    if (answer._tag === "AuthenticationError" && !refreshed) {
      refreshed = true
      return send()
    }
    return answer
  }
  let retries = 0
  for (;;) {
    const answer = attempt()
    if (answer._tag === "Success") return { outcome: answer, sentAt, end: t }
    const left = D - t
    const wait = answer.retryAfterMs
    const waitTooLong = wait !== undefined && (wait > c.maxRetryAfterMs || wait >= left)
    const delay = wait === undefined || wait === 0 ? backoffMs(retries + 1, c.jitter) : wait
    if (answer.retryable && retries < c.maxRetries && !waitTooLong && delay < left) {
      t += delay
      retries += 1
      continue
    }
    // "a 5xx whose Retry-After is longer than allowed or than the call's deadline leaves" is a RateLimitError on a
    // call that is retried.
    const slowDown = c.maxRetries > 0 && answer._tag === "ApiError" && answer.status !== undefined &&
      answer.status >= 500 && answer.retryable && waitTooLong
    const { retryable: _, ...rest } = answer
    return { outcome: slowDown ? { ...rest, _tag: "RateLimitError" } : rest, sentAt, end: t }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Running a case

interface Run {
  readonly exit: Exit.Exit<unknown, unknown>
  /** Virtual time (ms from the start) of each request the route got. */
  readonly sentAt: ReadonlyArray<number>
  readonly elapsed: number
}

// Runs `effect`, moving the TestClock exactly to the next due timer whenever the fiber is waiting, until it ends.
const drive = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    for (let moves = 0; moves < 200; moves++) {
      yield* settle
      const done = fiber.unsafePoll()
      if (done !== null) return done
      const sleeps = yield* TestClock.sleeps()
      const now = yield* Clock.currentTimeMillis
      if (Chunk.isEmpty(sleeps)) continue
      // Set, not adjusted by the difference: a timer at a fractional time (4683.3333330000005) is otherwise missed.
      const next = Math.min(...Chunk.toReadonlyArray(sleeps))
      if (next > now) yield* TestClock.setTime(next)
    }
    yield* Fiber.interrupt(fiber)
    return yield* Effect.dieMessage("the call was still running after 200 moves of the TestClock")
  })

const runCase = (c: Case) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(BASE)
    const path = c.route === "fee" ? FEE_PATH : SUB_PATH
    let served = 0
    const handler: FinTest.Handler = (request) => replyOf(c.route, stepAt(c.script, served++), request.at)
    const routes: FinTest.Routes = c.route === "fee"
      ? { "POST /v1/fee-calculation": handler }
      : { "GET /v1/countries/USA/subdivisions": handler }
    type Services = FeeService.FeeService | SubdivisionService.SubdivisionService
    const target: Effect.Effect<unknown, FinError.FinError, Services> =
      c.route === "fee" ? FeeService.calculate(quoteRequest) : SubdivisionService.list("USA")
    const call = target.pipe(
      HttpTransport.withOptions({
        maxRetries: c.maxRetries,
        timeout: Duration.millis(c.timeoutMs),
        deadline: Duration.millis(c.deadlineMs)
      })
    )
    return yield* Effect.gen(function*() {
      // The token fetch inside the call is answered in memory at once: the clock starts with the first attempt.
      const start = yield* Clock.currentTimeMillis
      const exit = yield* drive(call)
      const elapsed = (yield* Clock.currentTimeMillis) - start
      const http = yield* FinTest.InMemoryHttp
      const sentAt = (yield* http.requests).filter((r) => r.path === path).map((r) => r.at - start)
      return { exit, sentAt, elapsed } satisfies Run
    }).pipe(
      Effect.provide(FinTest.layerClient(routes, {
        maxRetryAfter: Duration.millis(c.maxRetryAfterMs),
        subdivisionMode: "online"
      })),
      Effect.withRandom(Random.fixed([c.jitter]))
    )
  })

// ---------------------------------------------------------------------------------------------------------------------
// Checks

const statusOf = (e: FinError.FinError): number | undefined =>
  "status" in e && typeof e.status === "number" ? e.status : undefined

const problemsOf = (c: Case, run: Run): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const predicted = model(c)
  const sent = run.sentAt.length
  const steps = run.sentAt.map((_, i) => stepAt(c.script, i))
  const unauthorizedSeen = steps.some((s) => s.kind === "unauthorized")

  // README (Errors): "Every API call fails with `FinError`, a union of seven `Schema.TaggedError`s."
  // README (intro): "Failures you can match on: a closed set of `Schema.TaggedError`s"
  let error: FinError.FinError | undefined
  if (Exit.isFailure(run.exit)) {
    const failure = Cause.failureOption(run.exit.cause)
    if (failure._tag === "None" || !FinError.isFinError(failure.value)) {
      return [`ended with no FinError: ${Cause.pretty(run.exit.cause)}`]
    }
    error = failure.value
  }

  // README (Configuration): "`maxRetries` | ... | 0 to 10; 0 disables; the 401 refresh-retry is extra"
  const allowed = c.maxRetries + 1 + (unauthorizedSeen ? 1 : 0)
  if (sent > allowed) problems.push(`${sent} attempts sent, at most ${allowed} allowed`)

  // README (Errors): "`attempts` [...] Attempts made before giving up (the 401 refresh-retry included)"
  if (error !== undefined && error._tag !== "RequestValidationError" && error.attempts !== sent) {
    problems.push(`error.attempts is ${error.attempts}, but ${sent} attempts were sent`)
  }

  // README (error table): "ApiError | any other non-2xx | 408/500/502/503/504 yes; other 4xx never";
  // "ResponseDecodeError | ... | no"; "AuthenticationError | [...] 401 again after one refresh-and-retry | no";
  // Retries: "not a connection refused for its setup [...] CERT_HAS_EXPIRED".
  let firstUnauthorized = true
  steps.forEach((step, i) => {
    if (i === sent - 1) return
    const retryable = step.kind === "transient" || (step.kind === "failBody" && step.status !== 404) ||
      (step.kind === "fail" && step.code !== "CERT_HAS_EXPIRED") || step.kind === "stall" ||
      step.kind === "stallBody" ||
      (step.kind === "unauthorized" && firstUnauthorized)
    if (step.kind === "unauthorized") firstUnauthorized = false
    if (!retryable) problems.push(`attempt ${i + 1} answered ${JSON.stringify(step)}, not retryable, yet was retried`)
  })

  // README (Configuration): "`deadline` | ... | whole call, retries and waits included"
  if (run.elapsed > c.deadlineMs) problems.push(`the call took ${run.elapsed} ms of a ${c.deadlineMs} ms deadline`)

  // README (Retries): "`Retry-After` [...] and `retry-after-ms` [...] replace the backoff up to `maxRetryAfter`";
  // (Deadline): "A wait that would not end before what is left of `deadline` [...] is not started; the call ends at
  // once with the error of its last attempt (a 5xx's `Retry-After` that does not fit: `RateLimitError`; a 408's stays
  // an `ApiError` with `retryAfter` [...])".
  // (TransportError's retryAfter): "one longer than allowed, or than the deadline leaves, ends the retries, the error
  // staying this `TransportError`, never a `RateLimitError`".
  const last = sent === 0 ? undefined : steps[sent - 1]
  if (
    error !== undefined && last !== undefined && (last.kind === "transient" || last.kind === "failBody") &&
    last.retryAfter !== undefined
  ) {
    const lastAt = run.sentAt[sent - 1]!
    const wait = waitOf(last.retryAfter, lastAt)
    const tooLong = wait > c.maxRetryAfterMs || wait >= c.deadlineMs - lastAt
    if (tooLong) {
      const tag = last.kind === "failBody"
        ? "TransportError"
        : last.status === 429 || (last.status >= 500 && c.maxRetries > 0)
        ? "RateLimitError"
        : "ApiError"
      if (error._tag !== tag || statusOf(error) !== last.status) {
        problems.push(
          `a Retry-After of ${wait} ms that does not fit ended as ${error._tag} ${statusOf(error)}, not ${tag}`
        )
      }
    }
    // The wait asked is kept on the error ("`retryAfter?`" on ApiError, RateLimitError and TransportError).
    const kept = "retryAfter" in error && error.retryAfter !== undefined
      ? Duration.toMillis(error.retryAfter)
      : undefined
    if (kept !== wait) problems.push(`the error's retryAfter is ${kept} ms, the last answer asked ${wait} ms`)
  }

  // "the error of its last attempt": the final error's status is the last answer's.
  if (error !== undefined && last !== undefined && "status" in last && error._tag !== "TimeoutError") {
    const lastStatus = last.kind === "failBody" || last.kind === "transient" || last.kind === "refusal"
      ? last.status
      : undefined
    if (lastStatus !== undefined && statusOf(error) !== lastStatus) {
      problems.push(`the final error's status ${statusOf(error)} is not the last answer's ${lastStatus}`)
    }
  }

  // README (Other endpoints): "gives the decoded 2xx body" -- a success after failures returns the decoded value.
  if (Exit.isSuccess(run.exit)) {
    if (last?.kind !== "ok") problems.push(`succeeded though the last answer was ${JSON.stringify(last)}`)
    const value = run.exit.value as Record<string, unknown>
    if (c.route === "fee") {
      const quote = value as unknown as FeeService.FeeQuote
      if (quote.destination_amount !== quoteBody.data.destination_amount || quote.source_currency !== "USD") {
        problems.push(`the quote is not the decoded answer: ${JSON.stringify(value)}`)
      }
    } else {
      const list = value as unknown as SubdivisionService.SubdivisionList
      if (list.source !== "api" || list.subdivisions.map((s) => s.code).join() !== "US-CA,US-NY") {
        problems.push(`the list is not the decoded answer: ${JSON.stringify(value)}`)
      }
    }
  }

  // The model: outcome, attempts and when each was sent.
  const actual: Expected = error === undefined
    ? { _tag: "Success" }
    : {
      _tag: error._tag,
      ...(statusOf(error) === undefined ? {} : { status: statusOf(error) }),
      ...(error._tag === "TimeoutError" ? { kind: error.kind as "attempt" | "deadline" } : {}),
      attempts: error._tag === "RequestValidationError" ? -1 : error.attempts ?? -1
    }
  const { retryAfterMs: _, ...expected } = predicted.outcome as Expected & { retryAfterMs?: number }
  const clean = (e: object) => JSON.stringify(Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined)))
  if (clean(actual) !== clean(expected)) problems.push(`outcome ${clean(actual)}, model ${clean(expected)}`)
  // To the microsecond: the model's jittered waits are floating-point sums (580.0000000000001 for 500 x 1.16).
  const micros = (times: ReadonlyArray<number>) => times.map((t) => Math.round(t * 1000) / 1000).join(", ")
  if (micros(run.sentAt) !== micros(predicted.sentAt)) {
    problems.push(`attempts sent at [${micros(run.sentAt)}] ms, model [${micros(predicted.sentAt)}] ms`)
  }
  return problems
}

describe("retry policy, model-based", () => {
  // The time limit: about 11 s idle in all; three times that on a loaded machine.
  modelProperty("every script ends as the documented policy says", {
    env: "MODEL",
    seed: 20_260_101,
    runs: 400,
    msPerRun: 300,
    cases: caseArb,
    run: runCase,
    problemsOf
  })
})
