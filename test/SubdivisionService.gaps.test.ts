import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as CountryCode from "../src/CountryCode.js"
import type * as FinConfig from "../src/FinConfig.js"
import * as FinTest from "../src/FinTest.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as Subdivisions from "../src/Subdivisions.js"
import * as SubdivisionService from "../src/SubdivisionService.js"
import { advance, provideClient } from "./support.js"

const ROUTE = "GET /v1/countries/*/subdivisions"
const apiBody = (subdivisions: ReadonlyArray<{ code: string; name: string }>) => FinTest.json(200, { data: { subdivisions } })
const usa = apiBody([{ code: "US-CA", name: "California" }, { code: "US-NY", name: "New York" }])
const calls = Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(ROUTE))
export const allRequests = Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests)
const list = SubdivisionService.list
// Most fallback cases need only one attempt to show the decision.
const noRetries = HttpTransport.withOptions({ maxRetries: 0 })
export const snapshotUsa = Either.getOrThrow(Subdivisions.forCountry("USA"))

// `usa` given for another country becomes that country's answer: the same two entries under its own code (a list of
// another country's codes is refused).
const asAsked = (handler: FinTest.Handler): FinTest.Handler => (request) => {
  const reply = handler(request)
  const country = request.path.split("/")[3]!
  const own = (r: FinTest.Reply) =>
    r === usa && country !== "USA"
      ? apiBody([
        { code: `${CountryCode.toAlpha2(country as CountryCode.CountryCode)}-CA`, name: "California" },
        { code: `${CountryCode.toAlpha2(country as CountryCode.CountryCode)}-NY`, name: "New York" }
      ])
      : r
  return Effect.isEffect(reply) ? Effect.map(reply, own) : own(reply)
}

const withMode = (mode: FinConfig.SubdivisionMode, routes: FinTest.Routes, options: Partial<FinConfig.Options> = {}) =>
  provideClient(
    { ...routes, ...(routes[ROUTE] === undefined ? {} : { [ROUTE]: asAsked(routes[ROUTE]) }) },
    { subdivisionMode: mode, ...options }
  )

describe("SubdivisionService: gaps found by mutation testing", () => {
  it.effect("fallback: the snapshot on a plain 500, which starts a cool-down", () =>
    Effect.gen(function*() {
      expect((yield* list("USA").pipe(noRetries)).source).toBe("snapshot")
      expect((yield* list("CAN")).source).toBe("snapshot")
      expect(yield* calls).toBe(1)
    }).pipe(withMode("fallback", { [ROUTE]: FinTest.sequence(FinTest.json(500, { message: "boom" }), usa) })))

  it.effect("the client's own deadline starts a cool-down (no per-call deadline)", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(list("USA"))
      yield* advance(2000)
      expect((yield* Fiber.join(fiber)).source).toBe("snapshot")
      expect((yield* list("CAN")).source).toBe("snapshot")
      expect(yield* calls).toBe(1)
    }).pipe(withMode("fallback", { [ROUTE]: FinTest.sequence(FinTest.stall, usa) }, { deadline: "2 seconds", maxRetries: 0 })))

  it.effect("a cool-down of 0: after a failure, concurrent lookups of a country share one call, none gets the snapshot", () =>
    Effect.gen(function*() {
      expect((yield* list("USA").pipe(noRetries)).source).toBe("snapshot")
      const first = yield* Effect.fork(list("USA"))
      yield* advance(10)
      const second = yield* Effect.fork(list("USA"))
      yield* advance(1000)
      expect((yield* Fiber.join(first)).source).toBe("api")
      expect((yield* Fiber.join(second)).source).toBe("api")
      expect(yield* calls).toBe(2)
    }).pipe(withMode("fallback", {
      [ROUTE]: (() => {
        let n = 0
        return (request) => (++n === 1 ? FinTest.fail("ECONNREFUSED") : FinTest.delayed("1 second", () => usa)(request))
      })()
    }, { subdivisionFallbackCooldown: 0 })))
})
