/**
 * Several clients in one program (two accounts, sandbox and production): in one layer graph or one LayerMap, where
 * Effect shares a layer by reference within a build, each FinClient.layer is a client of its own; their metrics and
 * log lines told apart by the user's tags.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as LayerMap from "effect/LayerMap"
import * as Logger from "effect/Logger"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import { Emulator } from "../src/emulator/index.js"
import * as FeeService from "../src/FeeService.js"
import * as FinClient from "../src/FinClient.js"
import * as FinTest from "../src/FinTest.js"
import * as TokenProvider from "../src/TokenProvider.js"

const usdToCad = { source_currency: "USD", source_amount: 100, destination_currency: "CAD" } as const
const optionsOf = (e: Emulator.Service) => ({ ...e.credentials, baseUrl: e.url, timeout: "2 seconds" } as const)
const rate = Effect.map(FeeService.calculate(usdToCad), (quote) => quote.exchange_rate)

const quoteOf = (rate: number) => ({
  data: {
    source_currency: "USD", destination_currency: "CAD", source_amount: 100, exchange_rate: rate,
    destination_amount: 98.01 * rate, fee: { fixed: 1, percentage: 0.99, total: 1.99, is_fee_applied: true }
  }
})

class PartA extends Context.Tag("PartA")<PartA, Effect.Effect<number, unknown>>() {}
class PartB extends Context.Tag("PartB")<PartB, Effect.Effect<number, unknown>>() {}
// A part of the application that keeps the FeeService it was built with, and quotes with it.
const quoting = Effect.map(FeeService.FeeService, (fees) => Effect.provideService(rate, FeeService.FeeService, fees))
const partA = Layer.effect(PartA, quoting)
const partB = Layer.effect(PartB, quoting)
const both = Effect.flatMap(Effect.all([PartA, PartB]), ([a, b]) => Effect.all([a, b]))

describe("several clients in one program", () => {
  it.live("two clients provided to two parts: each part's calls go to its own service, with its own token", () =>
    Effect.scoped(Effect.gen(function*() {
      const a = yield* Emulator.make({ clientId: "merchant-a", clientSecret: "secret-a" })
      const b = yield* Emulator.make({ clientId: "merchant-b", clientSecret: "secret-b", rates: { "USD/CAD": 2 } })
      const app = Layer.merge(
        Layer.provide(partA, FinClient.layer(optionsOf(a))),
        Layer.provide(partB, FinClient.layer(optionsOf(b)))
      ).pipe(Layer.provide(NodeHttpClient.layerUndici))
      expect(yield* Effect.provide(both, app)).toEqual([1.45, 2])
      const [ca, cb] = [yield* a.counters, yield* b.counters]
      expect([ca.requests["POST /v1/fee-calculation"], cb.requests["POST /v1/fee-calculation"]]).toEqual([1, 1])
      expect([ca.tokensIssued, cb.tokensIssued]).toEqual([1, 1])
    })))

  // Made anew for each client, its parts are still one client: the token provider in its context is the one its calls
  // use (one token; a fresh layer used twice inside it, as provideMerge does, had made two providers).
  it.effect("a client's token provider, taken from its context, is the one its calls use", () =>
    Effect.gen(function*() {
      yield* (yield* TokenProvider.TokenProvider).get
      yield* FeeService.calculate(usdToCad)
      expect(yield* Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("POST /v1/oauth/token"))).toBe(1)
    }).pipe(Effect.provide(FinTest.layerClient({ "POST /v1/fee-calculation": () => FinTest.json(200, quoteOf(1.45)) }))))

  it.live("the same client layer value in two parts is still built once (one token)", () =>
    Effect.scoped(Effect.gen(function*() {
      const a = yield* Emulator.make()
      const client = FinClient.layer(optionsOf(a))
      const app = Layer.merge(Layer.provide(partA, client), Layer.provide(partB, client)).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      expect(yield* Effect.provide(both, app)).toEqual([1.45, 1.45])
      expect((yield* a.counters).tokensIssued).toBe(1)
    })))

  it.live("a LayerMap of clients, one per merchant, made in the application's layers", () =>
    Effect.scoped(Effect.gen(function*() {
      const a = yield* Emulator.make({ clientId: "merchant-a", clientSecret: "secret-a" })
      const b = yield* Emulator.make({ clientId: "merchant-b", clientSecret: "secret-b", rates: { "USD/CAD": 2 } })
      const emulators: Record<string, Emulator.Service> = { a, b }
      // Made in a layer, as an application does: its clients are built with the application's memo map.
      class Clients extends Context.Tag("Clients")<Clients, LayerMap.LayerMap<string, FinClient.Services, unknown>>() {}
      const ClientsLive = Layer.scoped(
        Clients,
        LayerMap.make((merchant: string) =>
          FinClient.layer(optionsOf(emulators[merchant]!)).pipe(Layer.provide(NodeHttpClient.layerUndici))
        )
      )
      const rates = yield* Effect.gen(function*() {
        const clients = yield* Clients
        return [yield* Effect.provide(rate, clients.get("a")), yield* Effect.provide(rate, clients.get("b"))]
      }).pipe(Effect.provide(ClientsLive))
      expect(rates).toEqual([1.45, 2])
      expect([(yield* a.counters).tokensIssued, (yield* b.counters).tokensIssued]).toEqual([1, 1])
    })))

  // README "Rotating credentials": keyed by account and secret version, the old version's key invalidated. (On one
  // key kept across the rotation, Effect 3.22's RcMap never closes the old entry: Effect-TS/effect#7515.)
  it.live("rotating credentials as the README says: the old client closes once its last call ends", () =>
    Effect.gen(function*() {
      const secrets: Record<string, string> = { "1": "old-secret", "2": "new-secret" }
      let version = "1"
      const closed: Array<string> = []
      const release = yield* Deferred.make<void>()
      let quotes = 0
      const routes: FinTest.Routes = {
        "POST /v1/oauth/token": FinTest.tokenHandler(),
        "POST /v1/fee-calculation": () =>
          Effect.as(quotes++ === 0 ? Deferred.await(release) : Effect.void, FinTest.json(200, quoteOf(1.4)))
      }
      type Map = LayerMap.LayerMap<string, FinClient.Services, unknown>
      class Clients extends Context.Tag("RotatedClients")<Clients, Map>() {}
      const ClientsLive = Layer.scoped(
        Clients,
        LayerMap.make((key: string) => {
          const secret = secrets[key.split("#")[1]!]!
          return Layer.merge(
            FinClient.layer({ clientId: "a", clientSecret: secret, baseUrl: "https://fin.test" }),
            Layer.scopedDiscard(Effect.addFinalizer(() => Effect.sync(() => void closed.push(secret))))
          ).pipe(Layer.provide(FinTest.layerHttpClient(routes)))
        }, { idleTimeToLive: "1 hour" })
      )
      const quote = Effect.flatMap(Clients, (clients) => Effect.provide(rate, clients.get(`a#${version}`)))
      yield* Effect.gen(function*() {
        const first = yield* Effect.fork(quote)
        while (quotes === 0) yield* Effect.sleep("1 millis")
        version = "2"
        yield* Effect.flatMap(Clients, (clients) => clients.invalidate("a#1"))
        expect(yield* quote).toBe(1.4)
        expect(closed).toEqual([])
        yield* Deferred.succeed(release, undefined)
        expect(yield* Fiber.join(first)).toBe(1.4)
        expect(closed).toEqual(["old-secret"])
      }).pipe(Effect.provide(ClientsLive))
      expect(closed).toEqual(["old-secret", "new-secret"])
    }))

  it.effect("FinTest.layerClient twice in one graph: each part answered by its own routes", () =>
    Effect.gen(function*() {
      const quote = (rate: number) => () => FinTest.json(200, quoteOf(rate))
      const app = Layer.merge(
        Layer.provide(partA, FinTest.layerClient({ "POST /v1/fee-calculation": quote(1.45) })),
        Layer.provide(partB, FinTest.layerClient({ "POST /v1/fee-calculation": quote(2) }))
      )
      expect(yield* Effect.provide(both, app)).toEqual([1.45, 2])
    }))

  it.live("two ManagedRuntimes sharing one memo map (and one HttpClient); disposing one mid-call of the other", () =>
    Effect.scoped(Effect.gen(function*() {
      const a = yield* Emulator.make({ clientId: "merchant-a", clientSecret: "secret-a" })
      const b = yield* Emulator.make({ clientId: "merchant-b", clientSecret: "secret-b", rates: { "USD/CAD": 2 } })
      yield* b.setFaults([{ kind: "latency", millis: 300, route: "POST /v1/fee-calculation", times: 1 }])
      const memoMap = yield* Layer.makeMemoMap
      const rtA = ManagedRuntime.make(Layer.provide(FinClient.layer(optionsOf(a)), NodeHttpClient.layerUndici), memoMap)
      const rtB = ManagedRuntime.make(Layer.provide(FinClient.layer(optionsOf(b)), NodeHttpClient.layerUndici), memoMap)
      const ra = yield* Effect.promise(() => rtA.runPromise(rate))
      yield* Effect.addFinalizer(() => Effect.promise(() => rtB.dispose()))
      const pending = rtB.runPromiseExit(rate)
      // Mid-call: once B's quote has reached its emulator (held there 300 ms), not after a fixed wait.
      while ((yield* b.counters).requests["POST /v1/fee-calculation"] === 0) yield* Effect.sleep("5 millis")
      yield* Effect.promise(() => rtA.dispose())
      const rb = yield* Effect.promise(() => pending)
      expect(ra).toBe(1.45)
      expect(rb).toEqual(Exit.succeed(2))
      expect(yield* Effect.promise(() => rtB.runPromise(rate))).toBe(2)
    })))

  // Metrics and log lines name no client: tagged around each client's calls (the README's recipe), effect-fin's own
  // carry the label, the token fetch a call started and the cool-down line included.
  it.live("tagMetrics and annotateLogs around each client's calls label effect-fin's metrics and lines", () => {
    const lines: Array<{ readonly message: string; readonly client: unknown }> = []
    const logger = Logger.make(({ annotations, message }) => {
      lines.push({ message: String(message), client: Option.getOrUndefined(HashMap.get(annotations, "client")) })
    })
    const as = (name: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
      self.pipe(Effect.tagMetrics("client", name), Effect.annotateLogs("client", name))
    return Effect.scoped(Effect.gen(function*() {
      const [a, b] = [yield* Emulator.make(), yield* Emulator.make()]
      yield* b.setFaults([{ kind: "status", status: 503, route: "GET /v1/countries/{country_code}/subdivisions" }])
      const sandbox = yield* FinClient.make({ ...optionsOf(a), maxRetries: 0 })
      const production = yield* FinClient.make({ ...optionsOf(b), maxRetries: 0 })
      yield* sandbox.fees.calculate(usdToCad).pipe(as("obs-sandbox"))
      yield* production.fees.calculate(usdToCad).pipe(as("obs-production"))
      expect((yield* production.subdivisions.list("USA").pipe(as("obs-production"))).source).toBe("snapshot")
      const counted = (yield* Metric.snapshot).flatMap((pair) => {
        const tags = Object.fromEntries(pair.metricKey.tags.map((tag) => [tag.key, tag.value]))
        return String(tags.client).startsWith("obs-")
          ? [`${pair.metricKey.name} ${tags.client} ${tags.operation ?? tags.grant}`]
          : []
      })
      expect(counted).toEqual(expect.arrayContaining([
        "effect_fin_token_requests_total obs-sandbox client_credentials",
        "effect_fin_token_requests_total obs-production client_credentials",
        "effect_fin_requests_total obs-sandbox fee-calculation",
        "effect_fin_requests_total obs-production fee-calculation",
        "effect_fin_requests_total obs-production subdivisions"
      ]))
      const coolDown = lines.find((line) => line.message.includes("lookups use the offline snapshot for the next"))
      expect(coolDown?.client).toBe("obs-production")
    }).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.provide(Logger.replace(Logger.defaultLogger, logger))))
  })
})
