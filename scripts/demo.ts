/**
 * The main job, `npm start`: one walk through everything effect-fin does, printed step by step.
 *
 * Without `FIN_CLIENT_ID` it starts the local emulator in-process on a free port and runs against it (no credentials,
 * no network beyond loopback). With `FIN_*` set it runs the same against the sandbox, without the webhook step (the
 * sandbox cannot be asked to send one here).
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { createServer } from "node:http"
import * as Emulator from "../src/emulator/Emulator.js"
import * as FeeService from "../src/FeeService.js"
import * as FinClient from "../src/FinClient.js"
import * as FinConfig from "../src/FinConfig.js"
import * as Subdivisions from "../src/Subdivisions.js"
import * as Webhooks from "../src/Webhooks.js"

let steps = 0
const step = (title: string) => Console.log(`\n${++steps}. ${title}`)
const say = (line: string) => Console.log(`   ${line}`)

const describeQuote = (quote: FeeService.FeeQuote) =>
  `${quote.source_amount} ${quote.source_currency} -> ${quote.destination_amount} ${quote.destination_currency} ` +
  `at ${quote.exchange_rate}, fee ${quote.fee.total} (valid till ${
    Option.match(quote.valid_till, { onNone: () => "not given", onSome: DateTime.formatIso })
  })`

// A receiver like a user's: the library's own handler on a real HTTP server, answering the emulator's delivery.
const webhookStep = (emulator: Emulator.Service) =>
  Effect.scoped(Effect.gen(function*() {
    yield* step("Webhook: the emulator sends a signed beneficiary.status event to a local receiver")
    const received = yield* Deferred.make<Webhooks.WebhookEventOf<"beneficiary.status">>()
    const server = yield* NodeHttpServer.make(() => createServer(), { port: 0, host: "127.0.0.1" })
    const port = server.address._tag === "TcpAddress" ? server.address.port : 0
    yield* HttpServer.serveEffect(Webhooks.handler({
      secrets: emulator.webhookSecret,
      handlers: { "beneficiary.status": (event) => Deferred.succeed(received, event) }
    })).pipe(Effect.provideService(HttpServer.HttpServer, server))
    yield* emulator.registerWebhook(`http://127.0.0.1:${port}/webhooks/fin`)
    const delivery = yield* emulator.sendWebhook({ status: "ACTIVE", active: true })
    const event = yield* Deferred.await(received).pipe(Effect.timeout("5 seconds"))
    yield* say(`receiver answered ${delivery.status}; signature verified with the shared secret (HMAC-SHA256)`)
    yield* say(
      `event ${event.id}: beneficiary ${event.data.beneficiary_id} is ${Option.getOrElse(event.data.status, () => "?")}` +
        ` (active: ${event.data.active}, sandbox: ${Option.getOrElse(event.sandbox_mode, () => "?")})`
    )
  }))

const millis = (duration: Duration.Duration) => `${Math.round(Duration.toMillis(duration))} ms`

const program = Effect.gen(function*() {
  const live = process.env.FIN_CLIENT_ID !== undefined && process.env.FIN_CLIENT_ID !== ""
  const emulatorScope = yield* Scope.make()
  let emulator: Emulator.Service | undefined
  let options: FinConfig.Options
  if (live) {
    options = yield* FinConfig.optionsFromEnv
    yield* Console.log("effect-fin demo against the service named by FIN_* (webhook step skipped)")
  } else {
    emulator = yield* Emulator.make({ port: 0 }).pipe(Scope.extend(emulatorScope))
    // Short timeouts: the fallback step below should not wait long for a stopped emulator.
    options = { ...emulator.credentials, baseUrl: emulator.url, timeout: "2 seconds", maxRetries: 1 }
    yield* Console.log(`effect-fin demo: no FIN_CLIENT_ID, so the local emulator was started at ${emulator.url}`)
  }
  const client = yield* FinClient.make(options)

  yield* step("Token: client-credential flow (POST /v1/oauth/token)")
  yield* client.tokens.get
  yield* say("access token issued and cached (never printed: tokens are secrets); refreshed before it expires")

  yield* step("Fee quote, sending an amount: 100 USD to CAD")
  yield* say(describeQuote(
    yield* client.fees.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
  ))

  yield* step("Fee quote, receiving an amount: 100 CAD from USD")
  yield* say(describeQuote(
    yield* client.fees.calculate({ source_currency: "USD", destination_amount: 100, destination_currency: "CAD" })
  ))

  yield* step("A bad request never leaves the process")
  // As a form would give it (written as literals, "usd" would not even compile).
  const form: { readonly currency: string; readonly amount: number } = { currency: "usd", amount: -5 }
  const bad = yield* Effect.flip(
    client.fees.calculate({ source_currency: form.currency, source_amount: form.amount, destination_currency: "CAD" })
  )
  yield* say(`${bad._tag}: ${bad.message}`)

  yield* step("Subdivisions of USA (GET /v1/countries/USA/subdivisions)")
  const usa = yield* client.subdivisions.list("USA")
  yield* say(`${usa.subdivisions.length} subdivisions from the ${usa.source === "api" ? "API" : "offline snapshot"}, e.g. ${
    usa.subdivisions.slice(0, 3).map((s) => `${s.code} ${s.name}`).join(", ")
  }`)
  const found = Either.getOrElse(Subdivisions.search("USA", "new y"), () => [])
  yield* say(`search "new y": ${found.map((s) => `${s.code} ${s.name}`).join(", ")}`)
  const brazil = Either.getOrElse(Subdivisions.search("BRA", "sao paulo"), () => [])
  yield* say(`search "sao paulo" in BRA: ${brazil.map((s) => `${s.code} ${s.name}`).join(", ")}`)

  if (emulator !== undefined) yield* webhookStep(emulator)

  yield* step("Offline fallback: the service becomes unreachable")
  let fallbackClient = client
  if (emulator !== undefined) {
    yield* Scope.close(emulatorScope, Exit.void)
    yield* say("emulator stopped")
  } else {
    // The sandbox cannot be switched off from here; a client pointed at a closed local port shows the same path.
    fallbackClient = yield* FinClient.make({ ...options, baseUrl: "http://127.0.0.1:9", maxRetries: 1, timeout: "2 seconds" })
  }
  const canada = yield* fallbackClient.subdivisions.list("CAN").pipe(Effect.timed)
  yield* say(`CAN: ${canada[1].subdivisions.length} subdivisions from the ${
    canada[1].source === "snapshot" ? "offline snapshot (the API could not be reached)" : "API"
  }, in ${millis(canada[0])}`)
  // The snapshot now stands in at once for subdivisionFallbackCooldown (30 s), without asking the API.
  const mexico = yield* fallbackClient.subdivisions.list("MEX").pipe(Effect.timed)
  yield* say(`MEX: ${mexico[1].subdivisions.length} subdivisions from the ${
    mexico[1].source === "snapshot" ? "offline snapshot, without a request (the API is left alone for 30 s)" : "API"
  }, in ${millis(mexico[0])}`)

  yield* Console.log("\nDone.")
}).pipe(
  Effect.scoped,
  Effect.provide(NodeHttpClient.layerUndici),
  // The fallback step logs a warning by design; the demo says it in its own words instead.
  Logger.withMinimumLogLevel(LogLevel.Error),
  Effect.tapErrorCause((cause) => Console.error(`demo failed: ${Cause.pretty(cause).split("\n")[0]}`))
)

NodeRuntime.runMain(program, { disableErrorReporting: true })
