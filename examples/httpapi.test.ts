import { FetchHttpClient, HttpApiBuilder, HttpApiClient, HttpServer, OpenApi } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { Webhooks } from "effect-fin"
import * as FinTest from "effect-fin/test"
import { Api, ApiLive } from "./httpapi.js"

const secret = "whsec_example_0123456789"

// The whole API as a web handler on effect-fin's test layers: no server, no network.
const serve = (fin: Layer.Layer<any, unknown>) =>
  HttpApiBuilder.toWebHandler(Layer.mergeAll(ApiLive, HttpServer.layerContext).pipe(
    Layer.provide(fin),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["FIN_WEBHOOK_SECRET", secret]]))))
  ))

const send = (handler: (request: Request) => Promise<Response>, path: string, body?: string, headers = {}) =>
  Effect.promise(async () => {
    const response = await handler(new Request(`http://localhost${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json", ...headers },
      body: body ?? null
    }))
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  })

const quote = { source_currency: "USD", source_amount: 100, destination_currency: "CAD" }

describe("effect-fin behind an HttpApi", () => {
  it.live("quotes, refuses, lists subdivisions and takes webhooks", () =>
    Effect.acquireUseRelease(
      Effect.sync(() =>
        serve(Layer.merge(
          FinTest.layerClient({}, { subdivisionMode: "offline" }),
          FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 }, fee: { fixed: 1, percentage: 0.5 } })
        ))
      ),
      ({ handler }) =>
        Effect.gen(function*() {
          const ok = yield* send(handler, "/quotes", JSON.stringify(quote))
          expect(ok).toMatchObject({ status: 200, body: { destination_amount: 134.95, fee: { total: 1.5 } } })
          // A misspelt key: the platform's 400, the quote never asked for.
          const misspelt = yield* send(handler, "/quotes", JSON.stringify({ ...quote, benficiary_id: "x" }))
          expect(misspelt).toMatchObject({ status: 400, body: { _tag: "HttpApiDecodeError" } })
          // The test layer's 422 for a pair it has no rate for, handed on as the public error.
          const refused = yield* send(handler, "/quotes", JSON.stringify({ ...quote, destination_currency: "EUR" }))
          expect(refused).toEqual({ status: 422, body: { _tag: "QuoteRefused", fields: ["destination_currency"] } })
          const andorra = yield* send(handler, "/countries/AND/subdivisions")
          expect(andorra).toMatchObject({ status: 200, body: { country: "AND", source: "snapshot" } })
          expect((yield* send(handler, "/countries/XXX/subdivisions")).status).toBe(400)
          const body = JSON.stringify({
            event: {
              id: "40061557-f125-4b39-97d6-c16a0f1230c1",
              event_reference_id: "tx-1",
              type: "transaction.status",
              created_at: "2026-04-04T17:38:26.843132Z",
              sandbox_mode: true
            },
            data: { status: "COMPLETED" }
          })
          const signed = yield* Webhooks.sign(body, secret)
          expect(yield* send(handler, "/webhooks/fin", body, signed)).toEqual({
            status: 200,
            body: { outcome: "handled" }
          })
          expect((yield* send(handler, "/webhooks/fin", body, { ...signed, "x-fin-signature": "00" })).status)
            .toBe(401)
        }),
      ({ dispose }) => Effect.promise(dispose)
    ))

  it.live("hands a 429 on as 503 with the wait in seconds, which an HttpApiClient decodes", () =>
    Effect.acquireUseRelease(
      Effect.sync(() =>
        serve(FinTest.layerClient({
          "POST /v1/fee-calculation": () => FinTest.json(429, { message: "Slow down" }, { "retry-after": "600" })
        }))
      ),
      ({ handler }) =>
        Effect.gen(function*() {
          const client = yield* HttpApiClient.make(Api, { baseUrl: "http://localhost" })
          const error = yield* Effect.flip(client.fin.quote({ payload: quote }))
          expect(error).toMatchObject({ _tag: "Unavailable", retryAfterSeconds: 600 })
        }).pipe(
          Effect.provide(FetchHttpClient.layer),
          Effect.provideService(FetchHttpClient.Fetch, (input, init) => handler(new Request(input, init)))
        ),
      ({ dispose }) => Effect.promise(dispose)
    ))

  it.live("hands a token call's 422 on as 503, not as a refusal of the quote", () =>
    Effect.acquireUseRelease(
      Effect.sync(() =>
        serve(FinTest.layerClient({
          "POST /v1/oauth/token": () => FinTest.json(422, { message: "Unprocessable", errors: { grant: ["bad"] } })
        }))
      ),
      ({ handler }) =>
        Effect.map(send(handler, "/quotes", JSON.stringify(quote)), (answer) =>
          expect(answer).toMatchObject({ status: 503, body: { _tag: "Unavailable" } })),
      ({ dispose }) => Effect.promise(dispose)
    ))

  it.live("hands the quote's 404 (no such beneficiary) on as a refusal, not as a 503 to retry", () =>
    Effect.acquireUseRelease(
      Effect.sync(() =>
        serve(FinTest.layerClient({
          "POST /v1/fee-calculation": () => FinTest.json(404, { message: "Resource not found" })
        }))
      ),
      ({ handler }) =>
        Effect.map(send(handler, "/quotes", JSON.stringify(quote)), (answer) =>
          expect(answer).toEqual({ status: 422, body: { _tag: "QuoteRefused", fields: [] } })),
      ({ dispose }) => Effect.promise(dispose)
    ))

  it("documents the API with effect-fin's schemas, under names OpenAPI accepts", () => {
    const document = OpenApi.fromApi(Api)
    const names = Object.keys(document.components.schemas)
    expect(names).toEqual(
      expect.arrayContaining(["effect-fin.Fee", "effect-fin.SubdivisionList", "effect-fin.CountryCode"])
    )
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9._-]+$/)
    // The 249 country codes once, referred to from the path and the list.
    expect(JSON.stringify(document).match(/"AFG"/g)).toHaveLength(1)
    // The endpoint's rules, which no keyword of the fields says, in words.
    expect(document.paths["/quotes"]?.post?.requestBody?.content["application/json"]?.schema)
      .toMatchObject({ description: expect.stringMatching(/^exactly one of source_amount and destination_amount/) })
  })
})
