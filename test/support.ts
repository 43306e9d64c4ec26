import { expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import type * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Supervisor from "effect/Supervisor"
import * as TestClock from "effect/TestClock"
import type * as TestServices from "effect/TestServices"
import * as Tracer from "effect/Tracer"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import type * as TokenStore from "../src/TokenStore.js"
import type * as FinConfig from "../src/FinConfig.js"

/** Jitter factor exactly 1 (0.8 * 0.5 + 1.2 * 0.5), so scheduled delays are the nominal ones. */
export const fixedRandom = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withRandom(self, Random.fixed([0.5]))

/** A fresh client on the in-memory HTTP client for one test. */
export const provideClient = (routes: FinTest.Routes, options: Partial<FinConfig.Options> = {}) =>
<A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(Effect.provide(FinTest.layerClient(routes, options)), fixedRandom)

/** The quote of the documented current example. */
export const quoteBody = {
  data: {
    source_currency: "USD",
    destination_currency: "CAD",
    source_amount: 3508679,
    exchange_rate: 1.45,
    destination_amount: 508679,
    valid_till: "2026-01-19T09:59:29Z",
    fee: { fixed: 25, percentage: 4, total: 29, is_fee_applied: true }
  }
}

/** The older documented example, without `valid_till`. */
export const olderQuoteBody = {
  data: {
    source_currency: "USD",
    destination_currency: "AUD",
    source_amount: 350,
    exchange_rate: 145,
    destination_amount: 465,
    fee: { fixed: 25, percentage: 4, total: 29, is_fee_applied: true }
  }
}

export const quoteRequest = { source_currency: "USD", source_amount: 3508679, destination_currency: "CAD" } as const

/** Advances the TestClock in steps, letting forked fibers run between them. */
export const advance = (millis: number) => TestClock.adjust(`${millis} millis`)

/**
 * Forks `effect` and waits, in real time, until it sleeps on the TestClock: it has got to its first wait. The TestClock
 * moves once every fiber is suspended, one waiting on a promise too (a socket, a WebCrypto job): moved before the call
 * sleeps, it would leave the call's waits after the times the test expects them done.
 */
export const forkSleeping = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const before = Chunk.size(yield* TestClock.sleeps())
    const fiber = yield* Effect.fork(effect)
    yield* untilSleepsMoreThan(before, fiber)
    return fiber
  })

/**
 * Runs `effect` and interrupts it right as it forks its first fiber: the moment an interruption can reach a fiber
 * that yields (every 2,048 steps) after a fork, which tests cannot otherwise hit on purpose.
 */
export const interruptedAtFirstFork = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  let done = false
  const supervisor = new (class extends Supervisor.AbstractSupervisor<void> {
    get value() {
      return Effect.void
    }
    override onStart<A1, E1, R1>(
      _context: unknown,
      _effect: Effect.Effect<A1, E1, R1>,
      parent: Option.Option<Fiber.RuntimeFiber<unknown, unknown>>
    ) {
      if (done || Option.isNone(parent)) return
      done = true
      parent.value.unsafeInterruptAsFork(FiberId.none)
    }
  })()
  return Effect.supervised(effect, supervisor)
}

/**
 * Waits, in real time, until the TestClock holds more than `count` sleeps (it keeps each until its time, an
 * interrupted one too), or `fiber` has ended: one that ends (fails, say) before any wait says why at its join, not as
 * a test timeout.
 */
export const untilSleepsMoreThan = (count: number, fiber: Fiber.RuntimeFiber<unknown, unknown>): Effect.Effect<void> =>
  Effect.gen(function*() {
    while (Chunk.size(yield* TestClock.sleeps()) <= count && fiber.unsafePoll() === null) {
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1)))
    }
  })

/** A tracer that records every span (on top of the native one) so tests can read their attributes. */
export const recordingTracer = Effect.gen(function*() {
  const spans = yield* Ref.make<ReadonlyArray<Tracer.Span>>([])
  const native = yield* Effect.tracer
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = native.span(name, parent, context, links, startTime, kind, options)
      Effect.runSync(Ref.update(spans, (all) => [...all, span]))
      return span
    },
    context: (f) => f()
  })
  return { spans: Ref.get(spans), layer: Layer.setTracer(tracer) }
})

/** Stores `tokens` in a token store as a fetcher would: under its lock. */
export const seedTokens = (store: TokenStore.Service, key: string, tokens: TokenStore.Tokens) =>
  Effect.gen(function*() {
    const lock = yield* store.lock(key)
    if (lock._tag !== "Acquired") return yield* Effect.dieMessage("the lock is held")
    const stored = yield* store.set(key, tokens, lock.owner)
    yield* store.unlock(key, lock.owner)
    if (!stored) return yield* Effect.dieMessage("the pair was not stored")
  })

/**
 * Counts the listeners a client's closing has registered and not yet removed: its `onClose` is wrapped in place, so
 * whatever reads it afterwards (a transport, `TimeLimits.cutAt`) is counted.
 */
export const countListeners = <C extends { onClose: (f: () => void) => () => void }>(
  closing: C
): C & { listeners: number } => {
  const onClose = closing.onClose
  const counted = Object.assign(closing, { listeners: 0 })
  counted.onClose = (f) => {
    counted.listeners += 1
    const stop = onClose(f)
    return () => {
      counted.listeners -= 1
      stop()
    }
  }
  return counted
}

/**
 * A logger that keeps every line as `LEVEL "message" {annotations}`, the annotations by name (a HashMap's own order
 * follows the hashes); provide `layer` (with the minimum level the test needs) and read `lines`.
 */
export const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    const byName = Object.fromEntries([...annotations].sort(([a], [b]) => a < b ? -1 : 1))
    lines.push(`${logLevel.label} ${JSON.stringify(message)} ${JSON.stringify(byName)}`)
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/** The current documented `beneficiary.status` example (service-facts §7), byte for byte as one line. */
export const documentedWebhookBody =
  `{"event":{"id":"40061557-f125-4b39-97d6-c16a0f1230c1","event_reference_id":"e8fccaeb-fb9d-4fae-846e-ea7c97c70b31","type":"beneficiary.status","created_at":"2026-04-04T17:38:26.843132Z","sandbox_mode":true},` +
  `"data":{"type":"INDIVIDUAL","active":false,"status":"PROCESSING","customer_id":"ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f","beneficiary_id":"e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"}}`

/** A loopback port nothing listens on: one the system just gave out and that was closed again. */
export const closedPort: Effect.Effect<number> = Effect.async<number>((resume) => {
  const probe = Net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as Net.AddressInfo
    probe.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * Two loopback servers whose TLS handshake a client must refuse: `selfSigned` (https with test/tls's certificate,
 * for 127.0.0.1 and localhost, signed by no authority) and `plain` (plain HTTP, given as an https URL).
 * `connections` counts the connections each has had: one per attempt.
 */
export interface RefusedTls {
  readonly selfSigned: string
  readonly plain: string
  readonly connections: () => { readonly selfSigned: number; readonly plain: number }
  readonly close: () => Promise<void>
}

/** Starts the servers of `RefusedTls`. */
export const startRefusedTls = async (): Promise<RefusedTls> => {
  const file = (name: string) => Fs.readFileSync(new URL(`./tls/${name}`, import.meta.url))
  const answer: Http.RequestListener = (_request, response) => response.end("{}")
  const servers = {
    selfSigned: Https.createServer({ key: file("key.pem"), cert: file("cert.pem") }, answer),
    plain: Http.createServer(answer)
  }
  const counts = { selfSigned: 0, plain: 0 }
  const urls = { selfSigned: "", plain: "" }
  for (const name of ["selfSigned", "plain"] as const) {
    servers[name].on("connection", () => counts[name]++)
    await new Promise<void>((resolve) => servers[name].listen(0, "127.0.0.1", resolve))
    urls[name] = `https://127.0.0.1:${(servers[name].address() as Net.AddressInfo).port}`
  }
  const close = (server: Http.Server) =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return {
    ...urls,
    connections: () => ({ ...counts }),
    close: () => Promise.all([close(servers.selfSigned), close(servers.plain)]).then(() => undefined)
  }
}

/** `RefusedTls` for the scope. */
export const refusedTls = Effect.acquireRelease(Effect.promise(startRefusedTls), (tls) => Effect.promise(tls.close))

/**
 * An egress proxy on loopback: it tunnels each `CONNECT` to its target (or, by `refuse`, answers it with a status such
 * as 407, closes the connection without an answer, or never answers) and keeps the targets asked for (`host:port`)
 * and the `Proxy-Authorization` each came with, in order; `open` counts its sockets still open. Any other request is
 * refused with a 405.
 */
export interface ConnectProxy {
  readonly url: string
  readonly tunnels: () => ReadonlyArray<string>
  readonly authorizations: () => ReadonlyArray<string | undefined>
  readonly open: () => number
  readonly close: () => Promise<void>
}

/** Starts a `ConnectProxy`. */
export const startConnectProxy = async (refuse?: number | "close" | "silent"): Promise<ConnectProxy> => {
  const tunnels: Array<string> = []
  const authorizations: Array<string | undefined> = []
  const sockets = new Set<Net.Socket>()
  const server = Http.createServer((_request, response) => response.writeHead(405).end())
  server.on("connect", (request: Http.IncomingMessage, client: Net.Socket, head: Buffer) => {
    const target = request.url ?? ""
    tunnels.push(target)
    authorizations.push(request.headers["proxy-authorization"])
    const track = (socket: Net.Socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
    }
    if (refuse === "close") return void client.destroy()
    // The HTTP server keeps a socket half open when the client ends its side: closed then, as a proxy would.
    if (refuse === "silent") {
      return void track(client.on("error", () => undefined).on("end", () => client.destroy()).resume())
    }
    if (refuse !== undefined) return void client.end(`HTTP/1.1 ${refuse} Refused\r\nProxy-Authenticate: Basic\r\n\r\n`)
    const url = new URL(`http://${target}`)
    const upstream = Net.connect(Number(url.port), url.hostname.replace(/^\[|\]$/g, ""), () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
      upstream.write(head)
      upstream.pipe(client).pipe(upstream)
    })
    for (const socket of [client, upstream]) {
      track(socket)
      socket.on("error", () => {
        client.destroy()
        upstream.destroy()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`,
    tunnels: () => [...tunnels],
    authorizations: () => [...authorizations],
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}

/** Checks `check` every 20 ms of real time until it holds, or dies naming `what` after `attempts` tries. */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, what: string, attempts = 1000) =>
  Effect.gen(function*() {
    for (let i = 0; i < attempts; i++) {
      if (yield* check) return
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}`)
  })

/** A POST answered with no body (a 204, or a 202 with nothing in it), marked safe: one that must be sent once. */
export const acceptPayment = HttpTransport.request({
  method: "POST",
  path: "/v1/payments",
  body: { amount: 1 },
  response: Schema.Void,
  safe: true
})

/**
 * Runs `self` with the wall clock (`Date.now`, the live `Clock`'s `currentTimeMillis`) able to be set back by `setBack`
 * (an NTP step, a virtual machine resumed); monotonic time and timers go on as they were.
 */
export const withWallClockSetBack = <A, E, R>(
  self: (setBack: (millis: number) => void) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const wallClock = Date.now
      let shift = 0
      Date.now = () => wallClock() - shift
      return { wallClock, setBack: (millis: number) => void (shift = millis) }
    }),
    ({ setBack }) => self(setBack),
    ({ wallClock }) => Effect.sync(() => void (Date.now = wallClock))
  )

/**
 * `self` under the `TestClock` with its wall time (`currentTimeMillis`) set back by what `setBack` was last given (an
 * NTP step): its monotonic time (`unsafeCurrentTimeNanos`), sleeps and `TestClock.adjust` are the TestClock's own.
 */
export const withTestWallClockSetBack = <A, E, R>(
  self: (setBack: (millis: number) => void) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.clock, (base) => {
    let shift = 0
    const wall = () => base.unsafeCurrentTimeMillis() - shift
    const shifted = new Proxy(base, {
      get: (target, key) => {
        if (key === "unsafeCurrentTimeMillis") return wall
        if (key === "currentTimeMillis") return Effect.sync(wall)
        const value = Reflect.get(target, key, target)
        return typeof value === "function" ? value.bind(target) : value
      }
    })
    return Effect.withClock(self((millis) => void (shift = millis)), shifted)
  })

/**
 * The defect `self` (an effect, or a layer's build) dies with at once, its options refused before it does anything:
 * run synchronously, so only for refused options (valid ones would go on to connect).
 */
export const defectOf = (self: Effect.Effect<unknown, unknown, any> | Layer.Layer<any, any, any>): unknown => {
  const effect = Layer.isLayer(self) ? Effect.scoped(Layer.build(self)) : self
  const exit = Effect.runSyncExit(Effect.scoped(effect) as Effect.Effect<unknown, unknown>)
  if (exit._tag === "Success" || !Cause.isDie(exit.cause)) throw new Error("expected a defect at once")
  return Cause.squash(exit.cause)
}

/** The count of the counter `name` with every tag of `tags` (0 before its first update), summed over its others. */
export const counterValue = (name: string, tags: Readonly<Record<string, string>>): Effect.Effect<number> =>
  Effect.sync(() =>
    Metric.unsafeSnapshot()
      .filter((p) =>
        p.metricKey.name === name &&
        Object.entries(tags).every(([key, value]) => p.metricKey.tags.some((t) => t.key === key && t.value === value))
      )
      .reduce((sum, p) => sum + (p.metricState as MetricState.MetricState.Counter<number>).count, 0)
  )

/**
 * Matches an `IllegalArgumentException` with this message. `toEqual(new Cause.IllegalArgumentException(message))` (and
 * `toThrow` of one) would pass whatever the message: Effect's equality compares an error's enumerable fields, and an
 * `Error`'s message is not one. (An asymmetric matcher, typed as the `Error` that `toThrow` takes.)
 */
export const illegalArgument = (message: string): Error =>
  expect.objectContaining({ _tag: "IllegalArgumentException", message }) as unknown as Error

/**
 * What `Arbitrary.make(schema)` draws (200 values, a fixed seed), each beside what it is once encoded and decoded
 * again. Encoding throws, failing the test, on a value the schema's own Arbitrary made but cannot write.
 */
export const roundTrips = <A, I>(schema: Schema.Schema<A, I>): ReadonlyArray<readonly [A, A]> =>
  FastCheck.sample(Arbitrary.make(schema), { numRuns: 200, seed: 7 }).map((value) =>
    [value, Schema.decodeUnknownSync(schema)(Schema.encodeSync(schema)(value))] as const
  )

/**
 * A few scheduler ticks and event-loop turns, for a test that drives the TestClock itself: what a call awaits off the
 * clock (an in-memory response's stream) settles before the clock is moved.
 */
export const settle = Effect.gen(function*() {
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
    yield* Effect.promise(() => new Promise<void>((resume) => setImmediate(resume)))
  }
})

/**
 * A model-based property test (the `*-model.test.ts` files): each generated case is run, and `problemsOf` says in words
 * where the run broke the model; the test fails with those words and the case. `FIN_<env>_SEED` and `FIN_<env>_RUNS`
 * replace the seed and the number of cases, to replay a failure or to run longer.
 */
export const modelProperty = <C, A, E>(title: string, options: {
  readonly env: string
  readonly seed: number
  readonly runs: number
  /** The time limit per case: a guard against a hang only (two minutes at least in all). */
  readonly msPerRun: number
  readonly cases: FastCheck.Arbitrary<C>
  readonly run: (c: C) => Effect.Effect<A, E, TestServices.TestServices>
  readonly problemsOf: (c: C, run: A) => ReadonlyArray<string>
}): void => {
  const seed = Number(process.env[`FIN_${options.env}_SEED`] ?? options.seed)
  const numRuns = Number(process.env[`FIN_${options.env}_RUNS`] ?? options.runs)
  it.effect.prop(
    title,
    { c: options.cases },
    ({ c }) =>
      Effect.map(options.run(c), (run) => {
        const problems = options.problemsOf(c, run)
        expect(problems.length, `${problems.join("\n")}\ncase: ${JSON.stringify(c)}`).toBe(0)
      }),
    { timeout: Math.max(120_000, numRuns * options.msPerRun), fastCheck: { numRuns, seed } }
  )
}

// effect_fin_webhook_deliveries_total: the count of each label set (`outcome=handled`, `outcome=rejected,reason=...`).
export const countedDeliveries = Effect.sync(() =>
  new Map(Metric.unsafeSnapshot().flatMap((pair) => {
    if (pair.metricKey.name !== "effect_fin_webhook_deliveries_total") return []
    const label = pair.metricKey.tags.map((tag) => `${tag.key}=${tag.value}`).sort().join(",")
    return [[label, (pair.metricState as MetricState.MetricState.Counter<number>).count] as const]
  }))
)
// What was counted since `before`, as `label: added`, sorted.
export const deliveriesCountedSince = (before: ReadonlyMap<string, number>) =>
  Effect.map(countedDeliveries, (after) =>
    [...after].flatMap(([label, count]) => {
      const more = count - (before.get(label) ?? 0)
      return more === 0 ? [] : [`${label}: ${more}`]
    }).sort())
