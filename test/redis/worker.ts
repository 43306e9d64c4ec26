/**
 * A child process of the Redis suite (run with `node --import tsx`, talking over IPC): a service instance that quotes
 * fees or receives webhooks with the Redis stores, as one of several pods would.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { Redis } from "ioredis"
import * as Http from "node:http"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import type * as FinConfig from "../../src/FinConfig.js"
import { RedisTokenStore, RedisWebhookDedupeStore } from "../../src/redis/index.js"
import * as Webhooks from "../../src/Webhooks.js"

export type Job =
  /**
   * Once told `{ until }` (epoch ms), rounds of `concurrency` quotes until then; reports the outcomes, the failures of
   * calls that took longer than `slowAfter` ms apart.
   */
  | {
    readonly mode: "quotes"
    readonly redisUrl: string
    readonly prefix: string
    readonly emulatorUrl: string
    readonly credentials: { readonly clientId: string; readonly clientSecret: string }
    readonly concurrency: number
    readonly slowAfter: number
  }
  /** One quote, whose token fetch the test stalls and then kills this process in the middle of. */
  | {
    readonly mode: "hold"
    readonly redisUrl: string
    readonly prefix: string
    readonly emulatorUrl: string
    readonly credentials: { readonly clientId: string; readonly clientSecret: string }
    readonly lockTtl: number
  }
  /**
   * A webhook receiver; the first attempt at each event of `failIds` (across all processes) fails. Handled events are
   * appended to `<prefix>:test-order:<event_reference_id>` in Redis.
   */
  | {
    readonly mode: "webhooks"
    readonly redisUrl: string
    readonly prefix: string
    readonly secret: string
    readonly failIds: ReadonlyArray<string>
    /** Events whose handler says `started` and then never ends (the test kills the process). */
    readonly hangIds?: ReadonlyArray<string>
    readonly claimTtl?: string
  }

export type Message =
  | { readonly type: "ready"; readonly port?: number }
  | { readonly type: "started"; readonly id: string }
  | {
    readonly type: "quotes"
    readonly succeeded: number
    readonly failed: Readonly<Record<string, number>>
    readonly failedSlow: Readonly<Record<string, number>>
  }
  /** `busy`: how many claims found the event's resource held by another event. */
  | { readonly type: "handled"; readonly ids: ReadonlyArray<string>; readonly busy: number }

const receive = <A>() => Effect.async<A>((resume) => void process.once("message", (message: A) => resume(Effect.succeed(message))))

const send = (message: Message) => Effect.async<void>((resume) => void process.send!(message, () => resume(Effect.void)))

const client = (job: Extract<Job, { readonly emulatorUrl: string }>, lockTtl?: number) =>
  FinClient.layer({ ...job.credentials, baseUrl: job.emulatorUrl, timeout: "5 seconds" }).pipe(
    Layer.provide(RedisTokenStore.layer({
      url: job.redisUrl,
      prefix: job.prefix,
      timeout: "5 seconds",
      ...(lockTtl === undefined ? {} : { lockTtl: Duration.millis(lockTtl) })
    })),
    Layer.provide(FetchHttpClient.layer)
  )

const quote = FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })

const quotes = (job: Extract<Job, { readonly mode: "quotes" }>) =>
  Effect.gen(function*() {
    yield* send({ type: "ready" })
    const { until } = yield* receive<{ readonly until: number }>()
    let succeeded = 0
    const failed: Record<string, number> = {}
    const failedSlow: Record<string, number> = {}
    while (Date.now() < until) {
      const results = yield* Effect.all(Array.from({ length: job.concurrency }, () => Effect.timed(Effect.either(quote))), {
        concurrency: "unbounded"
      })
      for (const [took, result] of results) {
        if (Either.isRight(result)) succeeded += 1
        else {
          const counts = Duration.toMillis(took) > job.slowAfter ? failedSlow : failed
          counts[result.left._tag] = (counts[result.left._tag] ?? 0) + 1
        }
      }
    }
    yield* send({ type: "quotes", succeeded, failed, failedSlow })
  }).pipe(Effect.provide(client(job)))

const hold = (job: Extract<Job, { readonly mode: "hold" }>) =>
  Effect.zipRight(send({ type: "ready" }), quote).pipe(Effect.provide(client(job, job.lockTtl)))

const webhooks = (job: Extract<Job, { readonly mode: "webhooks" }>) =>
  Effect.gen(function*() {
    const redis = yield* Effect.acquireRelease(Effect.sync(() => new Redis(job.redisUrl)), (r) => Effect.promise(() => r.quit()))
    const failIds = new Set(job.failIds)
    const hangIds = new Set(job.hangIds)
    const handled: Array<string> = []
    let busy = 0
    const redisStore = yield* RedisWebhookDedupeStore.make({ url: job.redisUrl, prefix: job.prefix, timeout: "5 seconds" })
    const store: Webhooks.WebhookDedupeStoreService = {
      ...redisStore,
      claim: (eventId, referenceId, ttl) =>
        Effect.tap(redisStore.claim(eventId, referenceId, ttl), (claim) => {
          if (claim._tag === "ReferenceBusy") busy++
        })
    }
    const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { port: 0, host: "127.0.0.1" })
    yield* HttpServer.serveEffect(
      Webhooks.handler({
        secrets: job.secret,
        store,
        ...(job.claimTtl === undefined ? {} : { claimTtl: job.claimTtl as FinConfig.DurationOption }),
        handlers: {
          "beneficiary.status": (event) =>
            Effect.gen(function*() {
              if (hangIds.has(event.id)) {
                yield* send({ type: "started", id: event.id })
                return yield* Effect.never
              }
              if (failIds.has(event.id)) {
                const attempt = yield* Effect.promise(() => redis.incr(`${job.prefix}:test-attempt:${event.id}`))
                if (attempt === 1) return yield* Effect.fail("the first attempt at this event fails")
              }
              // The order in which each resource's events were applied, across all processes.
              yield* Effect.promise(() => redis.rpush(`${job.prefix}:test-order:${event.event_reference_id}`, event.id))
              handled.push(event.id)
            })
        }
      })
    ).pipe(Effect.provideService(HttpServer.HttpServer, httpServer))
    const address = httpServer.address
    yield* send({ type: "ready", port: address._tag === "TcpAddress" ? address.port : 0 })
    yield* receive<unknown>()
    yield* send({ type: "handled", ids: handled, busy })
  }).pipe(Effect.scoped)

const job = JSON.parse(process.argv[2]!) as Job
const program: Effect.Effect<unknown, unknown> = job.mode === "quotes"
  ? quotes(job)
  : job.mode === "hold"
  ? hold(job)
  : webhooks(job)
// The handlers' expected failures would be logged by every worker; what the test checks comes over IPC.
Effect.runPromise(Logger.withMinimumLogLevel(program, LogLevel.None)).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
