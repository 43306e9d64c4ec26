/**
 * A 401 that is not read whole, over real loopback servers: one whose body is lost after a redirect (fetch follows it)
 * is another address's answer, never the service refusing the token (the unsafe call is not resent); one a user's
 * client turned into a defect (`filterStatusOk` then `Effect.orDie`) is still the service's 401.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as FinClient from "../src/FinClient.js"
import * as HttpTransport from "../src/HttpTransport.js"

let api: Http.Server
let elsewhere: Http.Server
let apiUrl = ""
const counts = { payments: 0, refused: 0, tokens: 0 }

const listen = (server: Http.Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
  )

beforeAll(async () => {
  // A receipt page elsewhere that refuses, its body cut short.
  elsewhere = Http.createServer((req, res) => {
    req.resume()
    res.writeHead(401, { "content-type": "application/json", "content-length": "100" })
    res.write("{\"mess")
    setTimeout(() => res.socket?.destroy(), 20)
  })
  const elsewhereUrl = await listen(elsewhere)
  api = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      if (req.url === "/v1/oauth/token") {
        counts.tokens++
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ access_token: `token-${counts.tokens}`, access_token_ttl: "2099-01-01T00:00:00Z" }))
      } else if (req.url === "/v1/payments") {
        // The service did the payment, and answers 303 See Other.
        counts.payments++
        res.writeHead(303, { location: `${elsewhereUrl}/receipt` })
        res.end()
      } else {
        counts.refused++
        res.writeHead(401, { "content-type": "application/json" })
        res.end(JSON.stringify({ message: "Authentication failed" }))
      }
    })
  })
  apiUrl = await listen(api)
})

afterAll(async () => {
  await Promise.all([api, elsewhere].map((server) => new Promise((resolve) => server.close(resolve))))
})

const client = (http: Layer.Layer<HttpClient.HttpClient>) =>
  FinClient.layer({ clientId: "id", clientSecret: "secret", baseUrl: apiUrl }).pipe(Layer.provide(http))

describe("a 401 not read whole", () => {
  it.live("after a redirect, its body lost: not the service's refusal; the payment is not sent again", () =>
    Effect.gen(function*() {
      Object.assign(counts, { payments: 0, tokens: 0 })
      const error = yield* Effect.flip(
        HttpTransport.request({ method: "POST", path: "/v1/payments", body: { amount: 1 }, response: Schema.Void })
      )
      expect([error._tag, counts.payments, counts.tokens]).toEqual(["TransportError", 1, 1])
    }).pipe(Effect.provide(client(FetchHttpClient.layer))))

  it.live("made a defect by the user's client (filterStatusOk, orDie): still a 401, the token refreshed once", () =>
    Effect.gen(function*() {
      Object.assign(counts, { refused: 0, tokens: 0 })
      const error = yield* Effect.flip(HttpTransport.request({ method: "GET", path: "/v1/x", response: Schema.Void }))
      expect([error._tag, counts.refused, counts.tokens]).toEqual(["AuthenticationError", 2, 2])
    }).pipe(Effect.provide(client(Layer.effect(
      HttpClient.HttpClient,
      Effect.map(HttpClient.HttpClient, (http) =>
        http.pipe(HttpClient.filterStatusOk, HttpClient.transformResponse(Effect.orDie)))
    ).pipe(Layer.provide(FetchHttpClient.layer))))))
})
