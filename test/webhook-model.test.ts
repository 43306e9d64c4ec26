/**
 * A model-based property test of the webhook handler (README: "Webhooks", its table of answers, the order of status
 * events, "Events of one resource [...] are handled one at a time", "Delivery is effectively once").
 *
 * Each case is a small pool of events (a few resources, ids and types, `created_at`s drawn so that ties, microsecond
 * differences and reorderings happen, and per event a schedule of which runs of the user's handler fail) and a script
 * of rounds of deliveries: redeliveries of the same signed body, tampered, unsigned or wrongly signed ones, malformed
 * ones (signed). The deliveries of a round are concurrent: they are sent one after another while the user's handler
 * holds every delivery that reaches it on a `Deferred`, so a second delivery of an event finds the first in its
 * handler, and a second event of a resource waits for the first (or, in a round that stalls, for longer than
 * `referenceWait`). Then the held ones are let go in the order they came, and the waiting ones are woken one by one.
 * Options vary: `deliverStale`, `referenceWait` (0, short, the default) and a bounded memory store (`maxEntries`).
 *
 * The handler runs end to end as a web handler (as in Webhooks.test.ts) under the `TestClock`, with node:crypto's
 * verifier (synchronous). A small model of the documented rules predicts every answer and the calls of the user's
 * handler (event and `delivery.stale`, in order); the README's invariants are also checked one by one.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import { describe } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { NodeWebhookCrypto } from "../src/node/index.js"
import * as Webhooks from "../src/Webhooks.js"
import { modelProperty } from "./support.js"


const secret = Redacted.make("whsec_model_5d0c2b7e9a41")
const url = "http://localhost/webhooks/fin"

// ---------------------------------------------------------------------------------------------------------------------
// Scripts

// Handled: two status types of their own, a status type in two versions (one order: "the type without a `.v2`-style
// suffix"), and a news event. Not handled: a status type, "acknowledged without a handler", which "never makes another
// stale".
const TYPES = [
  "beneficiary.status",
  "transaction.status",
  "virtual_account.status",
  "virtual_account.status.v2",
  "customer.created",
  "customer.status"
] as const
type EventType = typeof TYPES[number]
const HANDLED: ReadonlySet<string> = new Set<EventType>(TYPES.filter((t) => t !== "customer.status"))
const REFERENCES = ["ref-a", "ref-b", "ref-c"] as const

// Microseconds past a whole second: equal draws tie; 0 and 1 fall in one millisecond (the stale check uses the
// microseconds the service sends).
const MICROS = [0, 1, 999, 1000, 500_000] as const

interface EventSpec {
  readonly type: EventType
  readonly ref: number
  readonly micros: number
  /** `fails[k]`: the k-th run of the user's handler for this event fails (the runs past the list succeed). */
  readonly fails: ReadonlyArray<boolean>
}

type Signing = "ok" | "tampered" | "wrongSecret" | "unsigned" | "badHex"
type Malformed = "notJson" | "noCreatedAt" | "noZone" | "longId" | "noCustomerId"

type DeliverySpec =
  // `at`: where the tampered byte, or the flipped digit of the signature, goes.
  | { readonly kind: "event"; readonly event: number; readonly signing: Signing; readonly at: number }
  | { readonly kind: "malformed"; readonly body: Malformed }

interface Round {
  readonly deliveries: ReadonlyArray<DeliverySpec>
  /** The held deliveries are let go only after `referenceWait` has passed for those waiting. */
  readonly stall: boolean
}

interface Case {
  readonly events: ReadonlyArray<EventSpec>
  readonly rounds: ReadonlyArray<Round>
  readonly deliverStale: boolean
  /** undefined: the default (5 seconds). */
  readonly referenceWaitMs: 0 | 300 | undefined
  /** undefined: no `store` option (the handler's own memory, 10,000 entries). */
  readonly maxEntries: 2 | 3 | undefined
}

// Mostly one status type on two resources, so that statuses of one order key meet often.
const eventArb: FastCheck.Arbitrary<EventSpec> = FastCheck.record({
  type: FastCheck.oneof(
    { weight: 5, arbitrary: FastCheck.constant<EventType>("beneficiary.status") },
    { weight: 4, arbitrary: FastCheck.constantFrom(...TYPES) }
  ),
  ref: FastCheck.oneof(
    { weight: 5, arbitrary: FastCheck.nat(1) },
    { weight: 1, arbitrary: FastCheck.constant(2) }
  ),
  micros: FastCheck.constantFrom(...MICROS),
  fails: FastCheck.array(FastCheck.boolean(), { maxLength: 3 })
})

const deliveryArb = (events: number): FastCheck.Arbitrary<DeliverySpec> =>
  FastCheck.oneof(
    {
      weight: 12,
      arbitrary: FastCheck.record({ event: FastCheck.nat(events - 1), at: FastCheck.nat(10_000) })
        .map(({ at, event }): DeliverySpec => ({ kind: "event", event, signing: "ok", at }))
    },
    {
      weight: 2,
      arbitrary: FastCheck.record({
        event: FastCheck.nat(events - 1),
        signing: FastCheck.constantFrom<Array<Signing>>("tampered", "wrongSecret", "unsigned", "badHex"),
        at: FastCheck.nat(10_000)
      }).map((r): DeliverySpec => ({ kind: "event", ...r }))
    },
    {
      weight: 1,
      arbitrary: FastCheck.constantFrom<Array<Malformed>>("notJson", "noCreatedAt", "noZone", "longId", "noCustomerId")
        .map((body): DeliverySpec => ({ kind: "malformed", body }))
    }
  )

const caseArb: FastCheck.Arbitrary<Case> = FastCheck.integer({ min: 3, max: 6 }).chain((n) =>
  FastCheck.record({
    events: FastCheck.array(eventArb, { minLength: n, maxLength: n }),
    rounds: FastCheck.array(
      FastCheck.record({
        deliveries: FastCheck.array(deliveryArb(n), { minLength: 1, maxLength: 4 }),
        // Rare: each stalled round steps the clock through every poll of `referenceWait`.
        stall: FastCheck.constantFrom(false, false, false, false, true)
      }),
      { minLength: 2, maxLength: 6 }
    ),
    deliverStale: FastCheck.boolean(),
    referenceWaitMs: FastCheck.constantFrom<Array<0 | 300 | undefined>>(0, 300, undefined),
    maxEntries: FastCheck.constantFrom<Array<2 | 3 | undefined>>(undefined, undefined, 2, 3)
  })
)

const idOf = (i: number) => `evt-${i}`
const createdAtOf = (micros: number) => `2026-04-04T17:38:26.${String(micros).padStart(6, "0")}Z`

const dataOf = (e: EventSpec, withCustomer = true) =>
  e.type === "beneficiary.status"
    ? {
      beneficiary_id: REFERENCES[e.ref],
      ...(withCustomer ? { customer_id: "cust-1" } : {}),
      type: "INDIVIDUAL",
      active: true,
      status: "ACTIVE"
    }
    : { reference: REFERENCES[e.ref] }

const bodyOf = (i: number, e: EventSpec): string =>
  JSON.stringify({
    event: {
      id: idOf(i),
      event_reference_id: REFERENCES[e.ref],
      type: e.type,
      created_at: createdAtOf(e.micros),
      sandbox_mode: true
    },
    data: dataOf(e)
  })

const malformedEvent: EventSpec = { type: "beneficiary.status", ref: 0, micros: 0, fails: [] }

// Signed bodies the handler must refuse: not JSON, no `created_at`, one without a zone, an id over 256 characters, a
// `beneficiary.status` (handled) whose data lacks a documented field.
const malformedBody = (kind: Malformed): string => {
  const event = {
    id: "evt-malformed",
    event_reference_id: REFERENCES[0],
    type: "beneficiary.status",
    created_at: createdAtOf(0),
    sandbox_mode: true
  }
  const data = dataOf(malformedEvent)
  switch (kind) {
    case "notJson":
      return `{"event":{"id":"evt-malformed"`
    case "noCreatedAt": {
      const { created_at: _, ...rest } = event
      return JSON.stringify({ event: rest, data })
    }
    case "noZone":
      return JSON.stringify({ event: { ...event, created_at: "2026-04-04T17:38:26.000000" }, data })
    case "longId":
      return JSON.stringify({ event: { ...event, id: "e".repeat(257) }, data })
    case "noCustomerId":
      return JSON.stringify({ event, data: dataOf(malformedEvent, false) })
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The model: what the README says the handler answers, and which calls of the user's handler it makes.

interface Expected {
  readonly status: number
  /** The `outcome` of a 200 or 409, the `error` of a 400; undefined for a 401 (empty) or a 500. */
  readonly says?: string | undefined
}

interface Call {
  readonly id: string
  readonly stale: boolean
}

// A store bounded by `maxEntries`: "the oldest go first" (an entry written again counts as new).
class Bounded<V> {
  readonly map = new Map<string, V>()
  constructor(readonly cap: number) {}
  get(key: string) {
    return this.map.get(key)
  }
  set(key: string, value: V) {
    this.map.delete(key)
    this.map.set(key, value)
    for (const [oldest] of this.map) {
      if (this.map.size <= this.cap) break
      this.map.delete(oldest)
    }
  }
}

// "Order is kept per status and resource (`Webhooks.orderKey`: the type without a `.v2`-style suffix, and the
// `event_reference_id`)"
const orderKeyOf = (e: EventSpec) => `${e.type.replace(/\.v\d+$/, "")}:${REFERENCES[e.ref]}`
// "Only status events [...] are kept in order"; "Only events one of your handlers takes count".
const isOrdered = (e: EventSpec) => /\.status(\.v\d+)?$/.test(e.type) && HANDLED.has(e.type)

const model = (c: Case) => {
  const cap = c.maxEntries ?? 10_000
  const done = new Bounded<true>(cap)
  const order = new Bounded<number>(cap)
  const runs = new Map<string, number>()
  const answers: Array<Array<Expected>> = []
  const calls: Array<Call> = []
  for (const round of c.rounds) {
    const answered: Array<Expected | undefined> = round.deliveries.map(() => undefined)
    const eventClaims = new Set<string>()
    const referenceClaims = new Set<number>()
    const held: Array<{ readonly index: number; readonly event: number; readonly stale: boolean }> = []
    const waiting: Array<number> = []
    // "500 | your handler failed; the event is not marked handled, so a redelivery runs it again"
    const finish = (i: number, stale: boolean): Expected => {
      const e = c.events[i]!
      const run = runs.get(idOf(i)) ?? 0
      runs.set(idOf(i), run + 1)
      if (e.fails[run] === true) return { status: 500 }
      done.set(idOf(i), true)
      const last = order.get(orderKeyOf(e))
      if (isOrdered(e) && (last === undefined || last < e.micros)) order.set(orderKeyOf(e), e.micros)
      return { status: 200, says: stale ? "stale" : "handled" }
    }
    const claim = (d: DeliverySpec & { readonly kind: "event" }, index: number, open: boolean) => {
      const e = c.events[d.event]!
      const id = idOf(d.event)
      if (done.get(id) !== undefined) return { status: 200, says: "duplicate" }
      if (eventClaims.has(id)) return { status: 409, says: "in_progress" }
      if (referenceClaims.has(e.ref)) {
        return c.referenceWaitMs === 0 ? { status: 409, says: "reference_busy" } : "waiting" as const
      }
      const last = order.get(orderKeyOf(e))
      // "a status event older than one already handled": a tie is not older.
      const stale = isOrdered(e) && last !== undefined && last > e.micros
      if (stale && !c.deliverStale) {
        done.set(id, true)
        return { status: 200, says: "stale" }
      }
      // "events without one are acknowledged"
      if (!HANDLED.has(e.type)) {
        done.set(id, true)
        return { status: 200, says: "handled" }
      }
      calls.push({ id, stale })
      if (open) return finish(d.event, stale)
      eventClaims.add(id)
      referenceClaims.add(e.ref)
      held.push({ index, event: d.event, stale })
      return "held" as const
    }
    round.deliveries.forEach((d, index) => {
      if (d.kind === "malformed") answered[index] = { status: 400, says: "malformed_body" }
      else if (d.signing !== "ok") answered[index] = { status: 401 }
      else {
        const answer = claim(d, index, false)
        if (answer === "waiting") waiting.push(index)
        else if (answer !== "held") answered[index] = answer
      }
    })
    // "409 reference_busy | another event of the same `event_reference_id` was still being handled after
    // `referenceWait`"
    if (round.stall) for (const index of waiting.splice(0)) answered[index] = { status: 409, says: "reference_busy" }
    for (const h of held) {
      eventClaims.delete(idOf(h.event))
      referenceClaims.delete(c.events[h.event]!.ref)
      answered[h.index] = finish(h.event, h.stale)
    }
    // "waits for it (up to `referenceWait`), then takes the stale check against what that one left"
    for (const index of waiting) {
      const answer = claim(round.deliveries[index] as DeliverySpec & { readonly kind: "event" }, index, true)
      if (typeof answer === "string") throw new Error(`the model left delivery ${index} ${answer}`)
      answered[index] = answer
    }
    answers.push(answered.map((a) => a!))
  }
  return { answers, calls }
}

// ---------------------------------------------------------------------------------------------------------------------
// Running a case

interface Answer {
  readonly status: number
  readonly body: string
}

interface ActualCall extends Call {
  readonly fails: boolean
}

interface Run {
  readonly answers: ReadonlyArray<ReadonlyArray<Answer>>
  readonly calls: ReadonlyArray<ActualCall>
  /** Found while it ran: two handlers of one resource or event at once. */
  readonly online: ReadonlyArray<string>
}

const nodeCrypto = NodeWebhookCrypto.make()

// As Webhooks.test.ts: the app on the test's runtime (its TestClock and logger), verifying with node:crypto, which is
// synchronous where WebCrypto's thread pool runs in real time, past what the TestClock waits for.
const webHandler = <E>(app: HttpApp.Default<E, Scope.Scope>) =>
  Effect.map(Effect.runtime<never>(), (runtime) =>
    HttpApp.toWebHandlerRuntime(runtime)(Effect.provideService(app, Webhooks.WebhookCrypto, nodeCrypto)))

const send = (handle: (request: Request) => Promise<Response>, request: Request) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await handle(request)
    return { status: response.status, body: await response.text() }
  })

const requestOf = (c: Case, d: DeliverySpec) =>
  Effect.gen(function*() {
    if (d.kind === "malformed") {
      const body = malformedBody(d.body)
      return new Request(url, { method: "POST", body, headers: { ...(yield* Webhooks.sign(body, secret)) } })
    }
    const body = bodyOf(d.event, c.events[d.event]!)
    const headers: Record<string, string> = { ...(yield* Webhooks.sign(body, secret)) }
    switch (d.signing) {
      case "ok":
        return new Request(url, { method: "POST", body, headers })
      case "tampered": {
        const at = d.at % body.length
        const sent = body.slice(0, at) + (body[at] === "x" ? "y" : "x") + body.slice(at + 1)
        return new Request(url, { method: "POST", body: sent, headers })
      }
      case "wrongSecret":
        return new Request(url, {
          method: "POST",
          body,
          headers: { ...(yield* Webhooks.sign(body, "whsec_not_ours_31b7")) }
        })
      case "unsigned":
        return new Request(url, { method: "POST", body, headers: { "content-type": "application/json" } })
      case "badHex": {
        const hex = headers["x-fin-signature"]!
        const at = d.at % hex.length
        const flipped = hex.slice(0, at) + (hex[at] === "0" ? "1" : "0") + hex.slice(at + 1)
        return new Request(url, { method: "POST", body, headers: { ...headers, "x-fin-signature": flipped } })
      }
    }
  })

// Event-loop turns until nothing visible moves for three looks in a row: the deliveries answered, the calls made and
// the pending sleeps. A turn is a `setImmediate` while things move, then a `setTimeout(0)`, which also runs the fibers
// Effect's scheduler put off to a timer of their own (a whole millisecond each: only to confirm). Dies after 2,000
// turns, so a run never hangs.
const quiesce = (look: () => string) =>
  Effect.gen(function*() {
    const soon = Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
    const timer = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 0)))
    let last = ""
    let same = 0
    for (let turns = 0; turns < 2_000; turns++) {
      yield* (same === 0 ? soon : timer)
      const key = `${look()}|${Chunk.toReadonlyArray(yield* TestClock.sleeps()).join(",")}`
      same = key === last ? same + 1 : 0
      last = key
      if (same >= 2) return
    }
    return yield* Effect.dieMessage("the deliveries did not settle within 2,000 turns of the event loop")
  })

const runCase = (c: Case) =>
  Effect.gen(function*() {
    const online: Array<string> = []
    const calls: Array<ActualCall> = []
    const runs = new Map<string, number>()
    const inHandler = new Map<string, number>()
    let gates: Array<Deferred.Deferred<void>> = []
    let open = false
    const eventIndex = (id: string) => Number(id.slice("evt-".length))
    const enter = (key: string) => {
      const n = (inHandler.get(key) ?? 0) + 1
      inHandler.set(key, n)
      if (n > 1) online.push(`two handlers of ${key} ran at once`)
    }
    const user = (event: { readonly id: string }, delivery: Webhooks.Delivery): Effect.Effect<void, string> =>
      Effect.gen(function*() {
        const i = eventIndex(event.id)
        const run = runs.get(event.id) ?? 0
        runs.set(event.id, run + 1)
        const fails = c.events[i]?.fails[run] === true
        calls.push({ id: event.id, stale: delivery.stale, fails })
        const keys = [`event ${event.id}`, `resource ${REFERENCES[c.events[i]!.ref]}`]
        keys.forEach(enter)
        yield* Effect.gen(function*() {
          if (!open) {
            const gate = yield* Deferred.make<void>()
            gates.push(gate)
            yield* Deferred.await(gate)
          }
          if (fails) return yield* Effect.fail(`the script fails run ${run} of ${event.id}`)
        }).pipe(Effect.ensuring(Effect.sync(() => keys.forEach((k) => inHandler.set(k, inHandler.get(k)! - 1)))))
      })
    const handle = yield* webHandler(Webhooks.handler({
      secrets: secret,
      deliverStale: c.deliverStale,
      ...(c.referenceWaitMs === undefined ? {} : { referenceWait: Duration.millis(c.referenceWaitMs) }),
      ...(c.maxEntries === undefined ? {} : { store: Webhooks.makeMemoryDedupeStore({ maxEntries: c.maxEntries }) }),
      handlers: {
        "beneficiary.status": user,
        "transaction.status": user,
        "virtual_account.status": user,
        "virtual_account.status.v2": user,
        "customer.created": user
      }
    }))
    const answers: Array<ReadonlyArray<Answer>> = []
    for (const round of c.rounds) {
      open = false
      gates = []
      const fibers: Array<Fiber.RuntimeFiber<Answer>> = []
      const look = () => `${fibers.filter((f) => f.unsafePoll() !== null).length}:${calls.length}`
      // One millisecond apart: the deliveries that wait for their resource poll at times of their own, so they are
      // woken one at a time, in the order they came.
      for (const d of round.deliveries) {
        yield* TestClock.adjust(Duration.millis(1))
        fibers.push(yield* Effect.fork(send(handle, yield* requestOf(c, d))))
        yield* quiesce(look)
      }
      const start = yield* Clock.currentTimeMillis
      const next = Effect.map(
        Effect.zip(TestClock.sleeps(), Clock.currentTimeMillis),
        ([sleeps, now]) => Chunk.toReadonlyArray(sleeps).filter((t) => t > now).sort((a, b) => a - b)[0]
      )
      if (round.stall) {
        // Past `referenceWait` for every delivery waiting, each woken at its own polls.
        const until = start + (c.referenceWaitMs ?? 5000) + 500
        for (let moves = 0; moves < 500; moves++) {
          const at = yield* next
          if (at === undefined || at > until) break
          yield* TestClock.setTime(at)
          yield* quiesce(look)
        }
      }
      open = true
      for (const gate of gates) {
        yield* Deferred.succeed(gate, undefined)
        yield* quiesce(look)
      }
      for (let moves = 0; moves < 500 && fibers.some((f) => f.unsafePoll() === null); moves++) {
        const at = yield* next
        if (at === undefined) break
        yield* TestClock.setTime(at)
        yield* quiesce(look)
      }
      const answered: Array<Answer> = []
      for (const fiber of fibers) {
        if (fiber.unsafePoll() === null) {
          online.push(`round ${answers.length}: a delivery was still unanswered with nothing left to wake it`)
          yield* Fiber.interrupt(fiber)
          answered.push({ status: -1, body: "" })
        } else answered.push(yield* Fiber.join(fiber))
      }
      answers.push(answered)
    }
    return { answers, calls, online } satisfies Run
  }).pipe(
    // Failing handlers and rejections log at Error and Warning: expected here, and not worth the console.
    Logger.withMinimumLogLevel(LogLevel.None),
    Effect.provideService(Webhooks.WebhookCrypto, nodeCrypto)
  )

// ---------------------------------------------------------------------------------------------------------------------
// Checks

const saysOf = (a: Answer): string | undefined => {
  if (a.body === "") return undefined
  try {
    const json = JSON.parse(a.body) as { outcome?: string; error?: string }
    return json.outcome ?? json.error
  } catch {
    return `not JSON: ${a.body}`
  }
}

const problemsOf = (c: Case, run: Run): ReadonlyArray<string> => {
  const problems: Array<string> = run.online.map((p) => `[one at a time] ${p}`)
  const predicted = model(c)
  const all = c.rounds.flatMap((round, r) =>
    round.deliveries.map((d, i) => ({ r, i, d, answer: run.answers[r]![i]! }))
  )
  const where = (x: { readonly r: number; readonly i: number }) => `round ${x.r} delivery ${x.i}`
  const byEvent = (id: string) =>
    all.filter((x) => x.d.kind === "event" && x.d.signing === "ok" && idOf(x.d.event) === id)
  const eventOf = (id: string) => c.events[Number(id.slice(4))]!

  // README: "| 401, empty body | missing or wrong signature, or an algorithm outside the allow-list |"
  for (const x of all) {
    if (x.d.kind === "event" && x.d.signing !== "ok" && (x.answer.status !== 401 || x.answer.body !== "")) {
      problems.push(`[401 no detail] ${where(x)} (${x.d.signing}) answered ${x.answer.status} ${x.answer.body}`)
    }
  }
  // README: "| 400 `{"error": reason}` | `malformed_body` (an id, reference id or type over 256 characters too [...])"
  for (const x of all) {
    if (x.d.kind === "malformed" && (x.answer.status !== 400 || saysOf(x.answer) !== "malformed_body")) {
      problems.push(`[400 malformed] ${where(x)} (${x.d.body}) answered ${x.answer.status} ${x.answer.body}`)
    }
  }
  // README: "| 200 `{"outcome":"duplicate"}` | this `event.id` was handled before |" -- never for an event no delivery
  // of which was answered 200 handled or stale.
  for (const x of all) {
    if (saysOf(x.answer) !== "duplicate" || x.d.kind !== "event") continue
    const id = idOf(x.d.event)
    const handled = byEvent(id).some((y) => y.answer.status === 200 && y !== x && saysOf(y.answer) !== "duplicate")
    if (!handled) problems.push(`[duplicate only once handled] ${where(x)}: ${id} answered duplicate, never handled`)
  }
  // README: "| 500 | your handler failed; the event is not marked handled, so a redelivery runs it again |": each 500
  // is a failed run of the user's handler, and each failed run a 500.
  for (const id of c.events.map((_, i) => idOf(i))) {
    const failedRuns = run.calls.filter((k) => k.id === id && k.fails).length
    const answered500 = byEvent(id).filter((y) => y.answer.status === 500).length
    if (failedRuns !== answered500) {
      problems.push(`[500 when the handler fails] ${id}: ${failedRuns} failed runs, ${answered500} answers 500`)
    }
  }
  // README: "your handler is not called unless `deliverStale: true`"; "Every other event [...] is never stale".
  for (const k of run.calls) {
    if (k.stale && !c.deliverStale) problems.push(`[stale not delivered] ${k.id} was passed on stale`)
    if (k.stale && !isOrdered(eventOf(k.id))) problems.push(`[news never stale] ${k.id} (${eventOf(k.id).type}) stale`)
  }
  // README: "(with `delivery.stale`)" under `deliverStale`: each 200 stale then follows a run passed on as stale.
  if (c.deliverStale) {
    for (const id of c.events.map((_, i) => idOf(i))) {
      const staleRuns = run.calls.filter((k) => k.id === id && k.stale && !k.fails).length
      const staleAnswers = byEvent(id).filter((y) => saysOf(y.answer) === "stale").length
      if (staleAnswers !== staleRuns) {
        problems.push(`[deliverStale] ${id}: answered stale ${staleAnswers} times, passed on stale ${staleRuns}`)
      }
    }
  }
  for (const x of all) {
    if (x.d.kind === "event" && saysOf(x.answer) === "stale" && !isOrdered(c.events[x.d.event]!)) {
      problems.push(`[news never stale] ${where(x)}: ${c.events[x.d.event]!.type} answered stale`)
    }
  }
  // README: "a status event older than one already handled for the same `event_reference_id`" is stale; "each carries
  // the whole current status of its resource, so one older than a status already handled would undo it". Per order
  // key, the statuses applied (runs that succeeded, not stale) never go back in time, and a run is stale exactly when
  // a newer one was applied before it. (A bounded store may forget the newest: "an older status pass as new".)
  if (c.maxEntries === undefined) {
    const newest = new Map<string, number>()
    for (const k of run.calls) {
      const e = eventOf(k.id)
      if (!isOrdered(e)) continue
      const last = newest.get(orderKeyOf(e))
      const older = last !== undefined && e.micros < last
      if (k.stale !== older) {
        problems.push(`[stale is older] ${k.id} at ${e.micros} us passed stale=${k.stale}, newest applied ${last}`)
      }
      if (!k.fails && !k.stale && (last === undefined || e.micros > last)) newest.set(orderKeyOf(e), e.micros)
    }
  }

  // The model: every answer, and the calls of the user's handler in order.
  all.forEach((x) => {
    const expected = predicted.answers[x.r]![x.i]!
    const says = x.answer.status === 500 || x.answer.status === 401 ? undefined : saysOf(x.answer)
    if (x.answer.status !== expected.status || says !== expected.says) {
      problems.push(
        `[model] ${where(x)} ${JSON.stringify(x.d)}: answered ${x.answer.status} ${x.answer.body}, model ` +
          `${expected.status} ${expected.says ?? ""}`
      )
    }
  })
  const shown = (calls: ReadonlyArray<Call>) => calls.map((k) => `${k.id}${k.stale ? " stale" : ""}`).join(", ")
  if (shown(run.calls) !== shown(predicted.calls)) {
    problems.push(`[model] handler calls [${shown(run.calls)}], model [${shown(predicted.calls)}]`)
  }
  return problems
}

describe("webhook handler, model-based", () => {
  modelProperty("every script of deliveries is answered as the README says", {
    env: "WEBHOOK_MODEL",
    seed: 20_260_103,
    runs: 100,
    msPerRun: 1000,
    cases: caseArb,
    run: runCase,
    problemsOf
  })
})
