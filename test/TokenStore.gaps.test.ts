/**
 * Issue 7: `TokenProvider` keeps its pair in the `TokenStore` in context, reads what another fetcher stored, clears a
 * refused token only while it is still stored, and goes on without a store that fails.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as FeeService from "../src/FeeService.js"
import * as FinTest from "../src/FinTest.js"
import * as TokenStore from "../src/TokenStore.js"
import { advance, captureLogs, fixedRandom, quoteBody, quoteRequest, seedTokens as seed } from "./support.js"

const fee = () => FinTest.json(200, quoteBody)
const count = (route: FinTest.Route) => Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(route))
const bearers = Effect.map(
  Effect.flatMap(FinTest.InMemoryHttp, (http) => http.requests),
  (all) => all.filter((r) => r.path === "/v1/fee-calculation").map((r) => r.headers.authorization)
)
export const storedAccess = (store: TokenStore.Service, key: string) =>
  Effect.map(store.get(key), Option.map((t) => Redacted.value(t.accessToken)))

/** A client on the in-memory HTTP client whose provider uses `store`. */
const withStore = (store: TokenStore.Service, routes: FinTest.Routes = { "POST /v1/fee-calculation": fee }) =>
<A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.provide(FinTest.layerClient(routes).pipe(Layer.provide(Layer.succeed(TokenStore.TokenStore, store)))),
    fixedRandom
  )

const key = TokenStore.keyFor("http://127.0.0.1:4010", "test-client")

// A pair in `store` due for a refresh an hour in and usable for 30 s more, the clock moved 10 s past its refresh time;
// the routes of a service whose token routes answer with `token`.
export const dueStoredPair = (store: TokenStore.Service, token: FinTest.Handler) =>
  Effect.gen(function*() {
    yield* seed(store, yield* key, {
      accessToken: Redacted.make("stored-token"),
      refreshAt: Duration.toMillis("1 hour"),
      accessUsableUntil: Duration.toMillis("1 hour") + 30_000,
      refreshToken: Redacted.make("stored-refresh"),
      refreshUsableUntil: Duration.toMillis("1 hour") + 30_000
    })
    yield* advance(Duration.toMillis("1 hour") + 10_000)
    const routes: FinTest.Routes = {
      "POST /v1/oauth/token": token,
      "POST /v1/oauth/refresh-token": token,
      "POST /v1/fee-calculation": fee
    }
    return routes
  })
describe("TokenStore: gaps found by mutation testing", () => {
  // As the existing loop, with the operations it leaves out.
  for (const name of ["hang", "die"] as const) {
    for (const op of ["set", "failure"] as const) {
      it.effect(`a store whose ${op} operations ${name} is worked around: the call succeeds, fetching unshared`, () =>
        Effect.gen(function*() {
          let stopped = 0
          const broken = name === "hang"
            ? Effect.onInterrupt(Effect.never, () => Effect.sync(() => void stopped++))
            : Effect.dieMessage("Unexpected token 'o' in JSON")
          const memory = TokenStore.makeMemory()
          const store: TokenStore.Service = { ...memory, [op]: () => broken }
          const { layer: logger, lines } = captureLogs()
          const fiber = yield* Effect.fork(
            FeeService.calculate(quoteRequest).pipe(
              Effect.zipRight(count("POST /v1/oauth/token")),
              withStore(store),
              Effect.provide(logger)
            )
          )
          for (let i = 0; i < 25; i++) yield* advance(1000)
          expect(fiber.unsafePoll()).not.toBeNull()
          expect(yield* Fiber.join(fiber)).toBe(1)
          const warnings = lines.filter((line) => line.startsWith("WARN"))
          expect(warnings.length).toBeGreaterThan(0)
          expect(warnings.join("\n")).not.toContain("Unexpected token")
          if (name === "hang") expect(stopped).toBeGreaterThan(0)
        }))
    }

    it.effect(`a store whose clear ${name}s does not hold up or break the call after a 401`, () =>
      Effect.gen(function*() {
        const memory = TokenStore.makeMemory()
        const store: TokenStore.Service = {
          ...memory,
          clear: () => name === "hang" ? Effect.never : Effect.dieMessage("Unexpected token 'o' in JSON")
        }
        yield* seed(store, yield* key, { accessToken: Redacted.make("revoked"), refreshAt: Duration.toMillis("1 hour") })
        const routes: FinTest.Routes = {
          "POST /v1/fee-calculation": (request) =>
            request.headers.authorization === "Bearer revoked"
              ? FinTest.json(401, { message: "Authentication failed" })
              : fee()
        }
        const fiber = yield* Effect.fork(Effect.exit(FeeService.calculate(quoteRequest).pipe(withStore(store, routes))))
        for (let i = 0; i < 25; i++) yield* advance(1000)
        const exit = fiber.unsafePoll()
        expect(exit !== null && Exit.isSuccess(exit) && Exit.isSuccess(exit.value)).toBe(true)
      }))
  }

  // Another process stores a pair between this one's look at the store and its lock: the pair is used, not fetched
  // again (a second token request, which a service that revokes on issue answers by revoking the other's token).
  it.effect("a pair stored by another process between the read and the lock is used: no token request", () =>
    Effect.gen(function*() {
      const memory = TokenStore.makeMemory()
      const k = yield* key
      let first = true
      const store: TokenStore.Service = {
        ...memory,
        lock: (lockKey) =>
          Effect.suspend(() => {
            if (!first) return memory.lock(lockKey)
            first = false
            const other = { accessToken: Redacted.make("other-process"), refreshAt: Duration.toMillis("1 hour") }
            return Effect.zipRight(seed(memory, k, other), memory.lock(lockKey))
          })
      }
      const [tokenRequests, sent] = yield* FeeService.calculate(quoteRequest).pipe(
        Effect.zipRight(Effect.all([count("POST /v1/oauth/token"), bearers])),
        withStore(store)
      )
      expect(tokenRequests).toBe(0)
      expect(sent).toEqual(["Bearer other-process"])
    }))
})
