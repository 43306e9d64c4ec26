/**
 * effect-fin's own cost per fee quote without I/O: each layer of a call, from the bare platform client up to
 * `FeeService.calculate`, on an in-process client that answers each request on the next `setImmediate` (so sockets,
 * the server and the JSON on the wire are out of the figures, and what is left is the library's own work).
 *
 *   npm run bench:ladder [calls per round] [concurrency]      (defaults: 10000, 1)
 *
 * Steps: the bare client with its tracer off (`execute` + `text`); one attempt in effect-fin's frame (`Http.execute`:
 * its timer's fiber, the body read and parsed, no schema); the same decoding into `FeeQuote`; the transport's whole
 * call (`HttpTransport.request`: options, token, retry boundary, span, metrics); the transport with the tracer off;
 * `FeeService.calculate` (the request and the answer checked). Every round runs every step in turn (the order reversed
 * every other round); CPU per call (`process.cpuUsage`) is the median of 8 rounds after a warm-up round. The Effect
 * operations a call runs (every fiber's, counted by a supervisor) are printed beside.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as RuntimeFlagsPatch from "effect/RuntimeFlagsPatch"
import * as Supervisor from "effect/Supervisor"
import * as FeeService from "../src/FeeService.js"
import * as FinClient from "../src/FinClient.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as Codecs from "../src/internal/codecs.js"
import * as Http from "../src/internal/http.js"
import { benchToken, feeRequest } from "./lib/clients.js"
import { feeResponseBody } from "./server.js"

const baseUrl = "http://127.0.0.1:1"
const url = `${baseUrl}/v1/fee-calculation`
const body = JSON.stringify(feeRequest)

// The service's token format (`2025-12-28 10:34:45+00`), valid for the whole run.
const serviceTime = (millis: number) => `${new Date(millis).toISOString().slice(0, 19).replace("T", " ")}+00`
const tokenBody = JSON.stringify({
  access_token: benchToken,
  access_token_ttl: serviceTime(Date.now() + 24 * 3600_000),
  current_time: serviceTime(Date.now())
})

// An answer whose body is at hand: a platform response (its prototype, for the type ids and the rest) with the
// status, headers and text set, so that reading it costs nothing of a stream's.
const responsePrototype: object = Object.getPrototypeOf(
  HttpClientResponse.fromWeb(HttpClientRequest.get(url), new Response(""))
)
const answer = (request: HttpClientRequest.HttpClientRequest, text: string): HttpClientResponse.HttpClientResponse =>
  Object.create(responsePrototype, {
    request: { value: request },
    status: { value: 200 },
    headers: { value: { "content-type": "application/json", "content-length": String(text.length) } },
    text: { value: Effect.succeed(text) }
  })

const client = HttpClient.make((request) =>
  Effect.async<HttpClientResponse.HttpClientResponse>((resume) => {
    setImmediate(() =>
      resume(Effect.succeed(answer(request, request.url.endsWith("/v1/oauth/token") ? tokenBody : feeResponseBody)))
    )
  })
)

const runtime = ManagedRuntime.make(
  FinClient.layer({ clientId: "bench", clientSecret: "bench-secret", baseUrl }).pipe(
    Layer.provide(Layer.succeed(HttpClient.HttpClient, client))
  )
)

const attempt = (decode: Codecs.Decoder<unknown>): Http.Attempt<unknown> => ({
  method: "POST",
  url,
  headers: { accept: "application/json", authorization: `Bearer ${benchToken}` },
  body,
  decode,
  timeout: Duration.seconds(30),
  kind: "attempt",
  operation: "POST /v1/fee-calculation",
  attempt: 1,
  credentials: [benchToken]
})

const main = async () => {
  const [calls = 10000, concurrency = 1] = process.argv.slice(2).map(Number)
  const fees = await runtime.runPromise(FeeService.FeeService)
  const transport = await runtime.runPromise(HttpTransport.HttpTransport)
  const configured = Http.configure(client, false)
  const feeDecoder: Codecs.Decoder<unknown> = Codecs.decoderFor(FeeService.FeeCalculationResponse)
  const bare = () =>
    Effect.flatMap(configured.execute(HttpClientRequest.bodyText(HttpClientRequest.post(url), body)), (r) => r.text)
  const quote = () =>
    transport.request({
      method: "POST",
      path: "/v1/fee-calculation",
      body: feeRequest,
      response: FeeService.FeeCalculationResponse,
      safe: true,
      name: "fee-calculation"
    })
  const steps: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown>]> = [
    ["bare platform client, tracer off", () => Effect.withTracerEnabled(bare(), false)],
    ["Http.execute, no schema", () => Http.execute(configured, attempt(Either.right))],
    ["Http.execute, decoded into FeeQuote", () => Http.execute(configured, attempt(feeDecoder))],
    ["HttpTransport.request", quote],
    ["HttpTransport.request, tracer off", () => Effect.withTracerEnabled(quote(), false)],
    ["FeeService.calculate", () => fees.calculate(feeRequest)]
  ]

  let operations = 0
  class Counter extends Supervisor.AbstractSupervisor<void> {
    get value() {
      return Effect.void
    }
    override onEffect() {
      operations++
    }
  }
  const counter = new Counter()
  const opsPerCall = async (make: () => Effect.Effect<unknown, unknown>) => {
    operations = 0
    await runtime.runPromise(
      Effect.repeatN(Effect.suspend(make), 99).pipe(
        Effect.supervised(counter),
        Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
      )
    )
    return operations / 100
  }

  const cpu = () => {
    const usage = process.cpuUsage()
    return usage.user + usage.system
  }
  const run = (make: () => Effect.Effect<unknown, unknown>) => {
    let next = 0
    const worker = Effect.whileLoop({ while: () => next++ < calls, body: make, step: () => {} })
    return runtime.runPromise(
      Effect.all(Array.from({ length: concurrency }, () => worker), { concurrency: "unbounded", discard: true })
    )
  }
  const perCall = new Map<string, Array<number>>(steps.map(([name]) => [name, []]))
  for (let round = 0; round < 9; round++) {
    for (const [name, make] of round % 2 === 0 ? steps : [...steps].reverse()) {
      const before = cpu()
      await run(make)
      if (round > 0) perCall.get(name)!.push((cpu() - before) / calls)
    }
  }
  const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[values.length >> 1]!
  process.stdout.write(`${calls} calls per round, concurrency ${concurrency}: CPU µs per call, Effect operations\n`)
  for (const [name, make] of steps) {
    process.stdout.write(
      `${name.padEnd(40)} ${median(perCall.get(name)!).toFixed(1).padStart(8)} µs ${
        String(await opsPerCall(make)).padStart(6)
      } ops\n`
    )
  }
  await runtime.dispose()
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
  process.exitCode = 1
})
