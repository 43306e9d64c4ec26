import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as FinTest from "../src/FinTest.js"
import * as TokenProvider from "../src/TokenProvider.js"
import * as TokenStore from "../src/TokenStore.js"
import { advance, provideClient } from "./support.js"

const HOUR = 3_600_000
const MIN = 60_000

const getToken = Effect.flatMap(TokenProvider.TokenProvider, (p) => p.get)
const tokenValue = Effect.map(getToken, Redacted.value)
const count = (route: FinTest.Route) => Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count(route))
const bothTokenRoutes = (handler: FinTest.Handler): FinTest.Routes => ({
  "POST /v1/oauth/token": handler,
  "POST /v1/oauth/refresh-token": handler
})

describe("TokenProvider: gaps found by mutation testing", () => {
  it.effect("after an invalidation (store cleared), a refresh token past its usable time is not sent: a token is issued", () =>
    Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      const first = yield* provider.get
      yield* advance(45 * MIN)
      yield* provider.invalidate(first)
      expect(yield* tokenValue).toBe("token-2")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(0)
    }).pipe(provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "1 hour", refreshLifetime: "30 minutes" })))))

  it.effect("after an invalidation (store cleared), a refused refresh token is not tried again when the issue after it failed too", () =>
    Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      yield* provider.invalidate(yield* provider.get)
      const failed = yield* Effect.fork(Effect.flip(tokenValue))
      for (let i = 0; i < 10; i++) yield* advance(1000)
      expect((yield* Fiber.join(failed))._tag).toBe("ApiError")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(1)
      expect(yield* tokenValue).toBe("token-2")
      expect(yield* count("POST /v1/oauth/refresh-token")).toBe(1)
    }).pipe(provideClient({
      "POST /v1/oauth/token": (() => {
        const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
        let calls = 0
        return (request) => (++calls >= 2 && calls <= 4 ? FinTest.json(503, { message: "down" }) : tokens(request))
      })(),
      "POST /v1/oauth/refresh-token": () => FinTest.json(401, { message: "Authentication failed" })
    })))

  it.effect("the pause after a failed refresh never hands the token out past its usable time", () =>
    Effect.gen(function*() {
      expect(yield* tokenValue).toBe("token-1")
      // refreshAt is 4 s before expiry, the token usable until 2 s before it; the refresh fails at once.
      yield* advance(HOUR - 4_000)
      expect(yield* tokenValue).toBe("token-1")
      yield* advance(3_000)
      // 1 s before expiry: no longer usable, so a fetch is made (and fails), rather than token-1 handed out.
      expect((yield* Effect.flip(tokenValue))._tag).toBe("ApiError")
    }).pipe(provideClient(bothTokenRoutes((() => {
      const tokens = FinTest.tokenHandler({ lifetime: "1 hour" })
      let calls = 0
      return (request) => (++calls === 1 ? tokens(request) : FinTest.json(503, { message: "down" }))
    })()), { refreshMargin: "4 seconds", maxRetries: 0 })))

  // With a store that cannot be read, the provider's own cache is all there is: a late 401 for an older token must not
  // drop the current one (a second token request, which a service that revokes on issue answers by revoking it).
  it.effect("invalidating an older token leaves the current one cached (compare-and-clear)", () =>
    Effect.gen(function*() {
      const provider = yield* TokenProvider.TokenProvider
      const first = yield* provider.get
      yield* advance(HOUR - MIN)
      expect(yield* tokenValue).toBe("token-2")
      yield* provider.invalidate(first)
      expect(yield* tokenValue).toBe("token-2")
      expect(yield* count("POST /v1/oauth/*")).toBe(2)
    }).pipe(
      provideClient(bothTokenRoutes(FinTest.tokenHandler({ lifetime: "1 hour" }))),
      Effect.provide(Layer.succeed(TokenStore.TokenStore, {
        ...TokenStore.makeMemory(),
        get: () => Effect.fail(new TokenStore.TokenStoreError({ operation: "get", message: "down" }))
      }))
    ))
})
