/**
 * Answers as proxies and other stacks shape them, read alike by every platform client, success and error alike: a
 * proxy that compresses whenever the request does not refuse it (no Accept-Encoding: any coding is acceptable, RFC
 * 9110 12.5.3); a UTF-8 byte order mark before the JSON, its length declared (RFC 8259 8.1: a parser may ignore it;
 * node:http's text kept it where TextDecoder and fetch drop it).
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Zlib from "node:zlib"
import * as FinClient from "../src/FinClient.js"
import { UndiciHttpClient } from "../src/node/index.js"
import { MAX_RESPONSE_BYTES } from "../src/internal/http.js"
import { quoteBody, quoteRequest } from "./support.js"

let server: Http.Server
let base = ""
let feeStatus = 200
let shape: "gzip" | "bom" | "bomb" = "gzip"

beforeAll(async () => {
  server = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      const [status, body] = req.url === "/v1/oauth/token"
        ? [200, { access_token: "token-1", access_token_ttl: "2099-01-01T00:00:00Z" }]
        : feeStatus === 200
        ? [200, quoteBody]
        : [feeStatus, { message: "Validation failed", errors: [{ source_amount: "too small" }] }]
      if (shape === "bom") {
        const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(body))])
        res.writeHead(status, { "content-type": "application/json", "content-length": bytes.length })
        return res.end(bytes)
      }
      if (shape === "bomb" && req.url !== "/v1/oauth/token") {
        // A proxy that compresses whatever the request asked, its declared length the compressed one (a few KiB)
        const padded = JSON.stringify(quoteBody).replace("{", `{${" ".repeat(MAX_RESPONSE_BYTES)}`)
        const bytes = Zlib.gzipSync(padded)
        res.writeHead(200, {
          "content-type": "application/json",
          "content-encoding": "gzip",
          "content-length": bytes.length
        })
        return res.end(bytes)
      }
      const accepted = req.headers["accept-encoding"]
      const gzip = accepted === undefined || /gzip|\*/.test(accepted)
      res.writeHead(status, { "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) })
      res.end(gzip ? Zlib.gzipSync(JSON.stringify(body)) : JSON.stringify(body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const clients: Record<string, Layer.Layer<HttpClient.HttpClient>> = {
  NodeHttpClient: NodeHttpClient.layer,
  "NodeHttpClient.layerUndici": NodeHttpClient.layerUndici,
  FetchHttpClient: FetchHttpClient.layer,
  UndiciHttpClient: UndiciHttpClient.layer
}

const calculate = (client: Layer.Layer<HttpClient.HttpClient>) =>
  Effect.scoped(Effect.flatMap(
    FinClient.make({ clientId: "id", clientSecret: "secret", baseUrl: base, maxRetries: 0 }),
    (fin) => fin.fees.calculate(quoteRequest)
  )).pipe(Effect.provide(client))

describe.each([["a proxy that compresses unless told not to", "gzip"], ["a byte order mark before the JSON", "bom"]] as const)(
  "%s",
  (_, answered) => {
    for (const [name, client] of Object.entries(clients)) {
      it.live(`${name}: the quote is read`, () =>
        Effect.gen(function*() {
          ;[feeStatus, shape] = [200, answered]
          expect(yield* calculate(client)).toMatchObject({ source_currency: "USD", destination_amount: 508679 })
        }))
      it.live(`${name}: a 422's message and field errors are read`, () =>
        Effect.gen(function*() {
          ;[feeStatus, shape] = [422, answered]
          const error = yield* Effect.flip(calculate(client))
          expect(error).toMatchObject({
            _tag: "ApiError",
            status: 422,
            fieldErrors: [{ field: "source_amount", message: "too small" }]
          })
          expect(error).not.toHaveProperty("body")
        }))
    }
  }
)

// The declared length of a compressed answer is the compressed one: fetch decompresses, and would read past the limit
// if that length were trusted (a few KiB of gzip make more than 4 MiB).
it.live("FetchHttpClient: a compressed answer past the limit once decompressed is cut, its declared length small", () =>
  Effect.gen(function*() {
    ;[feeStatus, shape] = [200, "bomb"]
    const error = yield* Effect.flip(calculate(FetchHttpClient.layer))
    expect(error._tag).toBe("ResponseDecodeError")
    expect(error.message).toContain(`a body of at most ${MAX_RESPONSE_BYTES} bytes`)
  }))
