import * as HttpApp from "@effect/platform/HttpApp"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { createHmac } from "node:crypto"
import type { WebhookVerificationError } from "../src/FinError.js"
import { NodeWebhookCrypto } from "../src/node/index.js"
import * as Webhooks from "../src/Webhooks.js"
import { documentedWebhookBody } from "./support.js"

// --- Fixtures -------------------------------------------------------------------------------------------------------

const secretValue = "whsec_test_8c1f0b6e2a9d4c7f"
const secret = Redacted.make(secretValue)

const currentBody = documentedWebhookBody

// The older page snapshot: no `status`. Its ids are cut short in the copy ("4d715f20-…"), so they are completed here;
// the event fields around it are not shown there and are filled in the current envelope's shape.
export const olderBody = JSON.stringify({
  event: {
    id: "7b3c9a10-2f4e-4d1a-9c55-1e2f3a4b5c6d",
    event_reference_id: "4d715f20-0000-4000-8000-000000000001",
    type: "beneficiary.status",
    created_at: "2025-12-10T10:36:19.055159Z",
    sandbox_mode: true
  },
  data: {
    active: true,
    beneficiary_id: "4d715f20-0000-4000-8000-000000000001",
    customer_id: "efb54adf-0000-4000-8000-000000000002",
    type: "INDIVIDUAL"
  }
})

interface EventSpec {
  readonly id?: string
  readonly type?: string
  readonly referenceId?: string
  readonly createdAt?: string
  readonly sandbox?: boolean | undefined
  readonly data?: unknown
}

const beneficiaryData = (status: string) => ({
  beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
  customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
  type: "INDIVIDUAL",
  active: status === "ACTIVE",
  status
})

const makeBody = (spec: EventSpec = {}): string =>
  JSON.stringify({
    event: {
      id: spec.id ?? "40061557-f125-4b39-97d6-c16a0f1230c1",
      event_reference_id: spec.referenceId ?? "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
      type: spec.type ?? "beneficiary.status",
      created_at: spec.createdAt ?? "2026-04-04T17:38:26.843132Z",
      ...("sandbox" in spec ? spec.sandbox === undefined ? {} : { sandbox_mode: spec.sandbox } : { sandbox_mode: true })
    },
    data: "data" in spec ? spec.data : beneficiaryData("ACTIVE")
  })

export const nodeHmacHex = (algorithm: string, key: string, body: string) =>
  createHmac(algorithm, key).update(body, "utf8").digest("hex")

export const cryptoLayers = [
  ["WebCrypto", Webhooks.layerWebCrypto],
  ["node:crypto", NodeWebhookCrypto.layer]
] as const

const reasonOf = <A>(effect: Effect.Effect<A, WebhookVerificationError>) =>
  Effect.map(Effect.flip(effect), (error) => error.reason)

// --- The HttpApp handler ---------------------------------------------------------------------------------------------

const url = "http://localhost/webhooks/fin"

interface Answer {
  readonly status: number
  readonly body: string
  readonly headers: globalThis.Headers
}

// Runs the app on the test's runtime, so its TestClock and logger apply.
const webHandler = <E>(app: HttpApp.Default<E, Scope.Scope>) =>
  Effect.map(Effect.runtime<never>(), (runtime) => HttpApp.toWebHandlerRuntime(runtime)(app))

const send = (handle: (request: Request) => Promise<Response>, request: Request) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await handle(request)
    return { status: response.status, body: await response.text(), headers: response.headers }
  })

const post = (body: string, headers: Record<string, string>) =>
  new Request(url, { method: "POST", body, headers })

const signedPost = (body: string, algorithm?: Webhooks.Algorithm) =>
  Effect.map(Webhooks.sign(body, secret, algorithm), (headers) => post(body, { ...headers }))

// Handlers that record what they saw.
const recorder = Effect.gen(function*() {
  const seen = yield* Ref.make(Chunk.empty<string>())
  const record = (line: string) => Ref.update(seen, Chunk.append(line))
  return { seen: Effect.map(Ref.get(seen), Chunk.toReadonlyArray), record }
})

// What a status handler records: the status, and whether the delivery was stale.
export const statusLine = (event: Webhooks.WebhookEventOf<"beneficiary.status">, delivery: Webhooks.Delivery) =>
  `${Option.getOrElse(event.data.status, () => "none")}${delivery.stale ? " stale" : ""}`

/** A handler under `secret` (with `options`) whose user handlers, made from `record`, write down what they saw. */
export const recordingHandler = (
  handlers: (record: (line: string) => Effect.Effect<void>) => {
    readonly [T in Webhooks.EventType]?: (
      event: Webhooks.WebhookEventOf<T>,
      delivery: Webhooks.Delivery
    ) => Effect.Effect<unknown, unknown>
  },
  options: Omit<Webhooks.HandlerOptions<Webhooks.Handlers>, "secrets" | "handlers"> = {}
) =>
  Effect.gen(function*() {
    const { record, seen } = yield* recorder
    const handle = yield* webHandler(Webhooks.handler({ secrets: secret, ...options, handlers: handlers(record) }))
    return { handle, seen }
  })

// Turns of the event loop, for fibers of the app (run by the web handler) to run, until `done` holds of the TestClock's
// pending sleeps (their wake-up times) for several turns in a row; each turn is a `setTimeout(0)`, which also lets
// fibers that Effect's scheduler put off to a timer of their own run first. Dies after 2,000 turns, so a test never
// hangs on it. Fixed real-time pauses would race a loaded machine.
const settleUntil = (done: (sleeps: ReadonlyArray<number>, now: number) => boolean) =>
  Effect.gen(function*() {
    const turn = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 0)))
    let last = ""
    let same = 0
    for (let turns = 0; turns < 2_000; turns++) {
      yield* turn
      const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps())
      const now = yield* Clock.currentTimeMillis
      const key = sleeps.join(",")
      same = key === last && done(sleeps, now) ? same + 1 : 0
      last = key
      if (same >= 5) return
    }
    return yield* Effect.dieMessage("settle: the app's fibers did not settle within 2,000 turns of the event loop")
  })

// Until the app's fibers are parked: the pending sleeps stay the same (a sleep interrupted stays listed until its time,
// so a fiber that ends without a new sleep is not seen; wait for what such a fiber does explicitly).
const settle = settleUntil(() => true)

// A user handler that says when it starts, then waits to be let go; counts its runs.
const gate = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  let runs = 0
  return {
    run: Effect.gen(function*() {
      runs++
      yield* Deferred.succeed(started, undefined)
      yield* Deferred.await(release)
    }),
    started: Deferred.await(started),
    open: Deferred.succeed(release, undefined),
    runs: () => runs
  }
})

/**
 * A memory store whose `claim` pauses `before` or `after` taking the claim, as a remote store's round trip may:
 * `paused` once it got there, `resume` to let it go on.
 */
export const pausedClaims = (at: "before" | "after") =>
  Effect.gen(function*() {
    const memory = Webhooks.makeMemoryDedupeStore()
    const reached = yield* Deferred.make<void>()
    const go = yield* Deferred.make<void>()
    const pause = Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(go))
    const store: Webhooks.WebhookDedupeStoreService = {
      ...memory,
      claim: (eventId, referenceId, ttl) =>
        at === "before"
          ? Effect.zipRight(pause, memory.claim(eventId, referenceId, ttl))
          : Effect.tap(memory.claim(eventId, referenceId, ttl), () => pause)
    }
    return { memory, store, paused: Deferred.await(reached), resume: Deferred.succeed(go, undefined) }
  })

/** A handler whose user handler waits at the gate, with `options` beside the secret. */
const gatedHandler = (options: Omit<Webhooks.HandlerOptions<Webhooks.Handlers>, "secrets" | "handlers"> = {}) =>
  Effect.gen(function*() {
    const handler = yield* gate
    const handle = yield* webHandler(Webhooks.handler({
      secrets: secret,
      ...options,
      handlers: { "beneficiary.status": () => handler.run }
    }))
    return { handler, handle }
  })

// --- gaps found by mutation testing

// A memory store that records the TTLs the handler passes to it.
const ttlSpy = () => {
  const memory = Webhooks.makeMemoryDedupeStore()
  const ttls: Record<string, number> = {}
  const store: Webhooks.WebhookDedupeStoreService = {
    ...memory,
    claim: (eventId, referenceId, ttl) => {
      ttls.claim = Duration.toMillis(ttl)
      return memory.claim(eventId, referenceId, ttl)
    },
    complete: (eventId, token, handled, ttl) => {
      ttls.dedupe = Duration.toMillis(ttl)
      if (handled.order !== undefined) ttls.order = Duration.toMillis(handled.order.ttl)
      return memory.complete(eventId, token, handled, ttl)
    }
  }
  return { store, ttls }
}

// Settles until `fiber` is done (the app's answer travels through a promise), or dies.
const answered = <A>(fiber: Fiber.Fiber<A>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 20; i++) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return yield* Fiber.join(fiber)
      yield* settle
    }
    return yield* Effect.dieMessage("not answered")
  })

describe("Webhooks.handler: gaps found by mutation testing", () => {
  it.effect("passes the documented TTLs to the store: claimTtl 30 s, dedupeTtl 24 h, orderTtl 30 days", () =>
    Effect.gen(function*() {
      const { store, ttls } = ttlSpy()
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, store, handlers: { "beneficiary.status": () => Effect.void } }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect(ttls).toEqual({ claim: 30_000, dedupe: 24 * 3_600_000, order: 30 * 24 * 3_600_000 })
    }))

  it.effect("claimTtl is at least 1 second, and orderTtl at least dedupeTtl", () =>
    Effect.gen(function*() {
      const { store, ttls } = ttlSpy()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        claimTtl: "100 millis",
        dedupeTtl: "2 hours",
        orderTtl: "1 hour",
        handlers: { "beneficiary.status": () => Effect.void }
      }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect(ttls).toEqual({ claim: 1_000, dedupe: 2 * 3_600_000, order: 2 * 3_600_000 })
    }))

  it.effect("handlerTimeout is 1 minute by default", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never) }
      }))
      const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* Deferred.await(started)
      yield* settleUntil((sleeps, now) => sleeps.some((wakeUp) => wakeUp >= now + 60_000))
      yield* TestClock.adjust("61 seconds")
      const answer = yield* answered(first)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([500, { outcome: "failed" }])
    }))

  it.effect("referenceWait is 5 seconds by default", () =>
    Effect.gen(function*() {
      const { handle, handler } = yield* gatedHandler()
      const active = makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z" })
      const processing = makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("PROCESSING") })
      const newer = yield* Effect.fork(send(handle, yield* signedPost(active)))
      yield* handler.started
      const older = yield* Effect.fork(send(handle, yield* signedPost(processing)))
      yield* settle
      for (let step = 0; step < 19; step++) yield* Effect.zipRight(TestClock.adjust("250 millis"), settle)
      // 4.75 s: still waiting for the resource.
      expect(Option.isNone(yield* Fiber.poll(older))).toBe(true)
      for (let step = 0; step < 3; step++) yield* Effect.zipRight(TestClock.adjust("250 millis"), settle)
      const busy = yield* answered(older)
      expect([busy.status, JSON.parse(busy.body)]).toEqual([409, { outcome: "reference_busy" }])
      yield* handler.open
      expect((yield* Fiber.join(newer)).status).toBe(200)
    }))

  it.effect("a chunked body one byte over maxBodySize gets 413", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode(currentBody)
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {}, maxBodySize: bytes.length - 1 }))
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes)
          controller.close()
        }
      })
      const headers = yield* Webhooks.sign(currentBody, secret)
      const init: RequestInit & { readonly duplex: "half" } = { method: "POST", body, headers: { ...headers }, duplex: "half" }
      const request = new Request(url, init)
      expect(request.headers.get("content-length")).toBeNull()
      expect((yield* send(handle, request)).status).toBe(413)
    }))

  it.effect("verify: a created_at without a zone is malformed, as the Timestamp schema says", () =>
    Effect.gen(function*() {
      expect(Either.isLeft(Schema.decodeUnknownEither(Webhooks.Timestamp)("2026-04-04T17:38:26.843132"))).toBe(true)
      const body = makeBody({ createdAt: "2026-04-04T17:38:26.843132" })
      const headers = yield* Webhooks.sign(body, secret)
      expect(yield* reasonOf(Webhooks.verify(body, headers, secret))).toBe("malformed_body")
    }))

  it.effect("verify: a signed body that is not valid UTF-8 is malformed, not decoded with replacement characters", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode(currentBody)
      const at = currentBody.indexOf("INDIVIDUAL")
      expect(at).toBeGreaterThan(0)
      bytes[at] = 0xff
      const headers = yield* Webhooks.sign(bytes, secret)
      expect(yield* reasonOf(Webhooks.verify(bytes, headers, secret))).toBe("malformed_body")
    }))
})
