/**
 * The chaos run: many fee calculations and subdivision lookups through the real `FinClient.layer` against the
 * emulator, with faults injected on a share of requests and tokens revoked and expired while calls are in flight.
 * `npm run chaos` runs the full size; `test/chaos.test.ts` a reduced one. Both use this harness.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import * as Supervisor from "effect/Supervisor"
import * as Tracer from "effect/Tracer"
import * as CountryCode from "../../src/CountryCode.js"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as FinClient from "../../src/FinClient.js"
import * as FinError from "../../src/FinError.js"
import { monitorEventLoopDelay } from "node:perf_hooks"

/** How big a run is and how the client is configured. */
export interface ChaosOptions {
  readonly fees: number
  readonly subdivisions: number
  readonly concurrency: number
  /** Share of API requests that get a fault, 0..1. */
  readonly faultRate: number
  readonly timeout: Duration.DurationInput
  readonly deadline: Duration.DurationInput
  readonly maxRetries: number
  /** How often tokens are revoked or expired on the emulator while the run goes on. */
  readonly tokenTroubleEvery: Duration.DurationInput
  /** Keep every log line, span attribute and error text, for the secrets check (costly on big runs). */
  readonly capture: boolean
  readonly seed: number
}

/** The full run of the issue. */
export const fullRun: ChaosOptions = {
  fees: 10_000,
  subdivisions: 2_000,
  concurrency: 64,
  faultRate: 0.3,
  timeout: "300 millis",
  deadline: "3 seconds",
  maxRetries: 2,
  tokenTroubleEvery: "700 millis",
  capture: false,
  seed: 42
}

/** What a run measured. */
export interface ChaosReport {
  readonly options: ChaosOptions
  readonly calls: number
  readonly successes: number
  readonly failuresByTag: Readonly<Record<string, number>>
  readonly defects: number
  readonly interruptions: number
  readonly unhandledRejections: number
  readonly maxAttempts: number
  readonly attemptsHistogram: Readonly<Record<number, number>>
  readonly maxCallMillis: number
  /** Calls that took longer than the deadline plus the worst event-loop stall of the run (timers cannot fire sooner). */
  readonly callsOverDeadline: number
  readonly maxEventLoopDelayMillis: number
  readonly tokenRequests: number
  readonly tokenTroubleEvents: number
  readonly emulatorRequests: Readonly<Record<string, number>>
  readonly faultsInjected: Readonly<Record<string, number>>
  readonly liveFibersAfter: number
  readonly socketsBefore: number
  readonly socketsAfter: number
  readonly heapSamplesMiB: ReadonlyArray<number>
  readonly wallMillis: number
  /** Every log line, error text, span attribute and metric key of the run (only with `capture`). */
  readonly captured: ReadonlyArray<string>
  readonly secret: string
}

const sockets = (): number =>
  process.getActiveResourcesInfo().filter((kind) => kind === "TCPSocketWrap" || kind === "TCPServerWrap").length

const heapMiB = (): number => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) gc()
  return Math.round(process.memoryUsage().heapUsed / 1024 / 1024 * 10) / 10
}

// Nine kinds, each at the same per-rule rate, so that together they hit `faultRate` of requests.
const faultRules = (rate: number): ReadonlyArray<Emulator.FaultRule> => {
  const each = 1 - Math.pow(1 - rate, 1 / 9)
  const api = ["POST /v1/fee-calculation", "GET /v1/countries/{country_code}/subdivisions"] as const
  return api.flatMap((route): ReadonlyArray<Emulator.FaultRule> => [
    { kind: "status", status: 500, rate: each, route },
    { kind: "status", status: 502, rate: each, route },
    { kind: "status", status: 503, rate: each, route },
    { kind: "status", status: 429, retryAfterMs: 20, rate: each, route },
    { kind: "reset", rate: each, route },
    { kind: "stall", rate: each, route },
    { kind: "stallBody", rate: each, route },
    { kind: "truncated", rate: each, route },
    { kind: "malformed", rate: each, route }
  ])
}

const currencies = ["CAD", "EUR", "GBP", "AUD"] as const

/** Runs one chaos scenario; the emulator and the client live only for the run. */
export const run = (options: ChaosOptions): Effect.Effect<ChaosReport, unknown> =>
  Effect.gen(function*() {
    let unhandledRejections = 0
    const onRejection = () => {
      unhandledRejections += 1
    }
    process.on("unhandledRejection", onRejection)
    const socketsBefore = sockets()
    const captured: Array<string> = []
    const attemptsHistogram: Record<number, number> = {}
    let maxAttempts = 0

    // Spans: every `effect-fin.*` call records its attempts; with `capture`, every attribute is kept.
    const native = yield* Effect.tracer
    const tracer = Tracer.make({
      span: (name, parent, context, links, startTime, kind, spanOptions) => {
        const span = native.span(name, parent, context, links, startTime, kind, spanOptions)
        const end = span.end.bind(span)
        span.end = (endTime, exit) => {
          end(endTime, exit)
          const attempts = span.attributes.get("effect_fin.attempts")
          if (typeof attempts === "number") {
            attemptsHistogram[attempts] = (attemptsHistogram[attempts] ?? 0) + 1
            maxAttempts = Math.max(maxAttempts, attempts)
          }
          if (options.capture) captured.push(`${name} ${Inspectable.format(Object.fromEntries(span.attributes))}`)
        }
        return span
      },
      context: (f) => f()
    })
    const logger = Logger.make(({ annotations, message }) => {
      if (options.capture) captured.push(Inspectable.format({ message, annotations: [...annotations] }))
    })

    const supervisor = yield* Supervisor.track
    const started = Date.now()
    const loop = monitorEventLoopDelay({ resolution: 10 })
    loop.enable()
    const durations: Array<number> = []
    const heapSamplesMiB: Array<number> = [heapMiB()]
    const deadlineMillis = Duration.toMillis(options.deadline)

    const body = Effect.scoped(Effect.gen(function*() {
      const emulator = yield* Emulator.make({ seed: options.seed, accessTokenLifetime: "2 seconds" })
      yield* emulator.setFaults(faultRules(options.faultRate))
      const client = yield* FinClient.make({
        ...emulator.credentials,
        baseUrl: emulator.url,
        timeout: options.timeout,
        deadline: options.deadline,
        maxRetries: options.maxRetries,
        maxRetryAfter: "1 second",
        subdivisionMode: "online",
        // Every lookup goes to the API, so the faults reach it.
        subdivisionCacheTtl: 0
      })

      let tokenTroubleEvents = 0
      const trouble = yield* Effect.fork(
        Effect.repeat(
          Effect.suspend(() => {
            tokenTroubleEvents += 1
            return tokenTroubleEvents % 2 === 0 ? emulator.revokeTokens : emulator.expireTokens()
          }),
          Schedule.spaced(options.tokenTroubleEvery)
        )
      )

      const total = options.fees + options.subdivisions
      let successes = 0
      let defects = 0
      let interruptions = 0
      let maxCallMillis = 0
      let done = 0
      const failuresByTag: Record<string, number> = {}
      // Lookups spread evenly among the fee calculations.
      const stride = Math.max(1, Math.floor(total / Math.max(1, options.subdivisions)))
      const isLookup = (i: number) => options.subdivisions > 0 && i % stride === 0 && i / stride < options.subdivisions
      const call = (i: number) => {
        const effect: Effect.Effect<unknown, FinError.FinError> = isLookup(i)
          ? client.subdivisions.list(CountryCode.alpha3Codes[i % CountryCode.alpha3Codes.length]!)
          : client.fees.calculate(
            i % 2 === 0
              ? { source_currency: "USD", source_amount: 100 + (i % 50), destination_currency: currencies[i % 4]! }
              : { source_currency: "USD", destination_amount: 100 + (i % 50), destination_currency: currencies[i % 4]! }
          )
        let t0 = 0
        return Effect.exit(Effect.zipRight(Effect.sync(() => {
          t0 = Date.now()
        }), effect)).pipe(Effect.map((exit) => {
          const took = Date.now() - t0
          maxCallMillis = Math.max(maxCallMillis, took)
          durations.push(took)
          if (Exit.isSuccess(exit)) successes += 1
          else {
            const failure = Cause.failureOption(exit.cause)
            if (failure._tag === "Some" && FinError.isFinError(failure.value)) {
              failuresByTag[failure.value._tag] = (failuresByTag[failure.value._tag] ?? 0) + 1
              if (options.capture) {
                captured.push(failure.value.message, String(failure.value), JSON.stringify(failure.value))
              }
            } else if (Cause.isInterruptedOnly(exit.cause)) interruptions += 1
            else defects += 1
          }
          done += 1
          if (done % Math.ceil(total / 10) === 0) heapSamplesMiB.push(heapMiB())
        }))
      }
      yield* Effect.forEach(Array.from({ length: total }, (_, i) => i), call, {
        concurrency: options.concurrency,
        discard: true
      })
      yield* Fiber.interrupt(trouble)
      const counters = yield* emulator.counters
      if (options.capture) {
        captured.push(Inspectable.format(Metric.unsafeSnapshot().map((m) => [m.metricKey.name, m.metricKey.tags])))
      }
      return {
        calls: total,
        successes,
        failuresByTag,
        defects,
        interruptions,
        maxCallMillis,
        tokenRequests: counters.tokensIssued + counters.tokensRefreshed,
        tokenTroubleEvents,
        emulatorRequests: counters.requests,
        faultsInjected: counters.faults,
        secret: emulator.credentials.clientSecret
      }
    }))

    const result = yield* body.pipe(
      Effect.provide(Layer.mergeAll(NodeHttpClient.layerUndici, Layer.setTracer(tracer))),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Logger.withMinimumLogLevel(options.capture ? LogLevel.All : LogLevel.None),
      Effect.supervised(supervisor)
    )
    // Let closed sockets finish closing before they are counted.
    yield* Effect.sleep("200 millis")
    heapSamplesMiB.push(heapMiB())
    const liveFibersAfter = (yield* supervisor.value).length
    process.off("unhandledRejection", onRejection)
    loop.disable()
    const maxEventLoopDelayMillis = Math.round(loop.max / 1e6)
    return {
      ...result,
      options,
      unhandledRejections,
      maxAttempts,
      attemptsHistogram,
      liveFibersAfter,
      maxEventLoopDelayMillis,
      callsOverDeadline: durations.filter((took) => took > deadlineMillis + 50 + maxEventLoopDelayMillis).length,
      socketsBefore,
      socketsAfter: sockets(),
      heapSamplesMiB,
      wallMillis: Date.now() - started,
      captured
    }
  })

/** The summary table printed by `npm run chaos`. */
export const summary = (report: ChaosReport): string => {
  const policy = report.options.maxRetries + 2
  const rows: ReadonlyArray<readonly [string, string, string]> = [
    ["calls", `${report.calls} (${report.options.fees} fees, ${report.options.subdivisions} subdivisions)`, ""],
    ["concurrency / fault rate", `${report.options.concurrency} / ${report.options.faultRate * 100}%`, ""],
    ["successes", String(report.successes), ""],
    ["typed failures", Object.entries(report.failuresByTag).map(([k, v]) => `${k} ${v}`).join(", ") || "none", ""],
    ["defects", String(report.defects), report.defects === 0 ? "ok" : "FAIL"],
    ["interruptions", String(report.interruptions), report.interruptions === 0 ? "ok" : "FAIL"],
    ["unhandled rejections", String(report.unhandledRejections), report.unhandledRejections === 0 ? "ok" : "FAIL"],
    [
      "max attempts per call",
      `${report.maxAttempts} (policy: ${report.options.maxRetries + 1} + one 401 refresh = ${policy})`,
      report.maxAttempts <= policy ? "ok" : "FAIL"
    ],
    ["attempts histogram", Object.entries(report.attemptsHistogram).map(([k, v]) => `${k}: ${v}`).join(", "), ""],
    [
      "slowest call",
      `${report.maxCallMillis} ms (deadline ${Duration.format(Duration.decode(report.options.deadline))}, ` +
      `worst event-loop stall ${report.maxEventLoopDelayMillis} ms)`,
      report.callsOverDeadline === 0 ? "ok" : `FAIL (${report.callsOverDeadline} over)`
    ],
    [
      "token requests",
      `${report.tokenRequests} for ${report.tokenTroubleEvents} revoke/expire events`,
      report.tokenRequests <= 3 * (report.tokenTroubleEvents + 1) ? "ok" : "FAIL"
    ],
    ["faults injected", Object.entries(report.faultsInjected).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(", "), ""],
    ["fibers left", String(report.liveFibersAfter), report.liveFibersAfter === 0 ? "ok" : "FAIL"],
    ["sockets before / after", `${report.socketsBefore} / ${report.socketsAfter}`, report.socketsAfter <= report.socketsBefore ? "ok" : "FAIL"],
    ["heap samples (MiB)", report.heapSamplesMiB.join(", "), heapFlat(report.heapSamplesMiB) ? "flat" : "GROWING"],
    ["wall time", `${(report.wallMillis / 1000).toFixed(1)} s`, ""]
  ]
  const w0 = Math.max(...rows.map((r) => r[0].length))
  const w1 = Math.max(...rows.map((r) => r[1].length))
  return rows.map(([a, b, c]) => `${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`.trimEnd()).join("\n")
}

/** Flat: the last samples are within 50% (and 20 MiB) of the early ones, after the first warm-up sample. */
export const heapFlat = (samples: ReadonlyArray<number>): boolean => {
  if (samples.length < 4) return true
  const early = Math.max(...samples.slice(1, 3))
  const late = samples[samples.length - 1]!
  return late <= Math.max(early * 1.5, early + 20)
}
