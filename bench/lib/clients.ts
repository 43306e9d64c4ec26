/**
 * The clients compared by the client benchmark (and profiled by bench/profile.ts): each one sends the same fee quote
 * (same JSON body, same headers) to the loopback server and reads the answer as JSON.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Undici from "undici"
import * as UndiciHttpClient from "../../src/node/UndiciHttpClient.js"
import * as FeeService from "../../src/FeeService.js"
import * as FinClient from "../../src/FinClient.js"
import * as TokenProvider from "../../src/TokenProvider.js"
import type { Modules } from "./baseline.js"

/** The current source. */
export const current: Modules = { FinClient, FeeService, TokenProvider }

/** The request every client sends (the documented example's input). */
export const feeRequest: FeeService.FeeCalculationRequest = {
  source_currency: "USD",
  destination_currency: "CAD",
  source_amount: 3508679
}

/**
 * The headers the raw and bare clients send: what effect-fin sends (content-type comes with the JSON body;
 * `accept-encoding: identity` since 93f9c20). The bare platform clients add their `http.client` span's trace headers.
 */
export const requestHeaders = (token: string): Record<string, string> => ({
  accept: "application/json",
  "accept-encoding": "identity",
  "user-agent": "effect-fin/0.1.0",
  authorization: `Bearer ${token}`
})

/** The token the raw and bare clients send (the server does not check it). */
export const benchToken = "bench-access-token-0123456789abcdef0123456789abcdef"

/** Runs `n` calls with `concurrency` workers, each awaiting one call after another; `latencies[i]` in ms. */
export type Runner = (n: number, concurrency: number, latencies: Float64Array) => Promise<void>

/** A client under test. */
export interface BenchClient {
  readonly name: string
  /** The platform client this one is compared with, for effect-fin's overhead ratio. */
  readonly base?: string
  readonly run: Runner
  readonly dispose: () => Promise<void>
}

const promiseRunner = (call: () => Promise<unknown>): Runner => async (n, concurrency, latencies) => {
  let next = 0
  const worker = async () => {
    while (next < n) {
      const i = next++
      const t0 = performance.now()
      await call()
      latencies[i] = performance.now() - t0
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

const effectRunner = <R>(
  runtime: ManagedRuntime.ManagedRuntime<R, unknown>,
  call: () => Effect.Effect<unknown, unknown, R>,
  options: { readonly tracer?: boolean } = {}
): Runner =>
(n, concurrency, latencies) => {
  let next = 0
  const worker = Effect.suspend(() => {
    let i = 0
    let t0 = 0
    return Effect.whileLoop({
      while: () => next < n,
      body: () => {
        i = next++
        t0 = performance.now()
        return call()
      },
      step: () => {
        latencies[i] = performance.now() - t0
      }
    })
  })
  const all = Effect.all(Array.from({ length: concurrency }, () => worker), { concurrency: "unbounded", discard: true })
  // Without the tracer, no span at all (the platform's `http.client` span and effect-fin's): for the breakdown only.
  return runtime.runPromise(options.tracer === false ? Effect.withTracerEnabled(all, false) : all)
}

const check = (status: number) => {
  if (status !== 200) throw new Error(`unexpected status ${status}`)
}

/** `undici.request` + `body.text()` + `JSON.parse`, on its own Agent (as NodeHttpClient.layerUndici has). */
export const rawUndici = (baseUrl: string): BenchClient => {
  const agent = new Undici.Agent()
  const url = `${baseUrl}/v1/fee-calculation`
  const headers = { ...requestHeaders(benchToken), "content-type": "application/json" }
  return {
    name: "raw undici.request",
    run: promiseRunner(async () => {
      const response = await Undici.request(url, {
        method: "POST",
        headers,
        body: JSON.stringify(feeRequest),
        dispatcher: agent
      })
      const text = await response.body.text()
      check(response.statusCode)
      return JSON.parse(text)
    }),
    dispose: () => agent.close()
  }
}

/** Global `fetch` + `response.json()`. */
export const rawFetch = (baseUrl: string): BenchClient => {
  const url = `${baseUrl}/v1/fee-calculation`
  const headers = { ...requestHeaders(benchToken), "content-type": "application/json" }
  return {
    name: "raw fetch",
    run: promiseRunner(async () => {
      const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(feeRequest) })
      const json = await response.json()
      check(response.status)
      return json
    }),
    dispose: () => Promise.resolve()
  }
}

/** A platform `HttpClient` used bare: build the request, `execute`, `response.json`; no schema, no retry. */
export const bare = (
  name: string,
  baseUrl: string,
  layer: Layer.Layer<HttpClient.HttpClient>,
  options: { readonly tracer?: boolean } = {}
): BenchClient => {
  const runtime = ManagedRuntime.make(layer)
  const url = `${baseUrl}/v1/fee-calculation`
  const headers = requestHeaders(benchToken)
  let client: HttpClient.HttpClient | undefined
  const call = () =>
    client!.execute(
      HttpClientRequest.post(url).pipe(
        HttpClientRequest.setHeaders(headers),
        HttpClientRequest.bodyUnsafeJson(feeRequest)
      )
    ).pipe(
      Effect.flatMap((response) =>
        Effect.map(response.json, (json) => {
          check(response.status)
          return json
        })
      )
    )
  const run = effectRunner(runtime, call, options)
  return {
    name,
    run: async (n, concurrency, latencies) => {
      client ??= await runtime.runPromise(HttpClient.HttpClient)
      return run(n, concurrency, latencies)
    },
    dispose: () => runtime.dispose()
  }
}

/** effect-fin's full stack: `FinClient.layer` + `FeeService.calculate` on `layer` (from `modules`: now or before). */
export const fullStack = (
  name: string,
  base: string,
  baseUrl: string,
  layer: Layer.Layer<HttpClient.HttpClient>,
  modules: Modules = current
): BenchClient => {
  const runtime = ManagedRuntime.make(
    modules.FinClient.layer({ clientId: "bench", clientSecret: "bench-secret", baseUrl }).pipe(Layer.provide(layer))
  )
  let fees: FeeService.Service | undefined
  const run = effectRunner(runtime, () => fees!.calculate(feeRequest))
  return {
    name,
    base,
    run: async (n, concurrency, latencies) => {
      fees ??= await runtime.runPromise(modules.FeeService.FeeService)
      return run(n, concurrency, latencies)
    },
    dispose: () => runtime.dispose()
  }
}

/** The names of the platform layers, as the tables show them. */
export const names = {
  rawUndici: "raw undici.request",
  bareUndici: "NodeHttpClient.layerUndici (bare)",
  fullUndici: "effect-fin on NodeHttpClient.layerUndici",
  rawFetch: "raw fetch",
  bareFetch: "FetchHttpClient.layer (bare)",
  fullFetch: "effect-fin on FetchHttpClient",
  bareLean: "UndiciHttpClient.layer (bare)",
  fullLean: "effect-fin on UndiciHttpClient.layer",
  beforeUndici: "effect-fin before optimisations, on NodeHttpClient.layerUndici"
} as const

/** The full stack as it was before the optimisations (bench/lib/baseline.ts), on NodeHttpClient.layerUndici. */
export const baselineClients = (modules: Modules) => (baseUrl: string): ReadonlyArray<BenchClient> => [
  fullStack(names.beforeUndici, names.bareUndici, baseUrl, NodeHttpClient.layerUndici, modules)
]

/** Every client of the comparison, in table order. */
export const makeClients = (baseUrl: string): ReadonlyArray<BenchClient> => [
  rawUndici(baseUrl),
  bare(names.bareUndici, baseUrl, NodeHttpClient.layerUndici),
  fullStack(names.fullUndici, names.bareUndici, baseUrl, NodeHttpClient.layerUndici),
  rawFetch(baseUrl),
  bare(names.bareFetch, baseUrl, FetchHttpClient.layer),
  fullStack(names.fullFetch, names.bareFetch, baseUrl, FetchHttpClient.layer),
  bare(names.bareLean, baseUrl, UndiciHttpClient.layer),
  fullStack(names.fullLean, names.bareLean, baseUrl, UndiciHttpClient.layer)
]

/** `undici.request` with its callback API inside `Effect.async`, run by fibers: what Effect itself adds per call. */
export const effectUndici = (name: string, baseUrl: string, options: { readonly signal: boolean }): BenchClient => {
  const agent = new Undici.Agent()
  const runtime = ManagedRuntime.make(Layer.empty)
  const url = new URL(`${baseUrl}/v1/fee-calculation`)
  const headers = { ...requestHeaders(benchToken), "content-type": "application/json" }
  const call = () =>
    Effect.async<unknown, Error>((resume) => {
      const controller = options.signal ? new AbortController() : undefined
      agent.request({
        method: "POST",
        origin: url.origin,
        path: url.pathname,
        headers,
        body: JSON.stringify(feeRequest),
        ...(controller === undefined ? {} : { signal: controller.signal })
      }, (error, data) => {
        if (error !== null) return resume(Effect.fail(error))
        data.body.text().then((text) => {
          check(data.statusCode)
          resume(Effect.succeed(JSON.parse(text)))
        }, (e: Error) => resume(Effect.fail(e)))
      })
    })
  return { name, run: effectRunner(runtime, call), dispose: () => agent.close().then(() => runtime.dispose()) }
}

/** The steps of the breakdown of the platform's cost; each step's `base` is the one it adds to. */
export const steps = {
  effect: "undici.request (callback API) in Effect.async, run by fibers",
  abort: "+ an AbortController per request",
  make: "+ HttpClient.make's frame: UndiciHttpClient.layer, tracer off",
  span: "+ the http.client span: UndiciHttpClient.layer",
  driver: "NodeHttpClient's undici driver instead: NodeHttpClient.layerUndici, tracer off",
  nodeSpan: "+ the http.client span: NodeHttpClient.layerUndici"
} as const

const withBase = (client: BenchClient, base: string): BenchClient => ({ ...client, base })

/** The steps from raw undici to the bare platform clients, for the breakdown of the platform's cost. */
export const breakdownClients = (baseUrl: string): ReadonlyArray<BenchClient> => [
  withBase(effectUndici(steps.effect, baseUrl, { signal: false }), names.rawUndici),
  withBase(effectUndici(steps.abort, baseUrl, { signal: true }), steps.effect),
  withBase(bare(steps.make, baseUrl, UndiciHttpClient.layer, { tracer: false }), steps.abort),
  withBase(bare(steps.span, baseUrl, UndiciHttpClient.layer), steps.make),
  withBase(bare(steps.driver, baseUrl, NodeHttpClient.layerUndici, { tracer: false }), steps.make),
  withBase(bare(steps.nodeSpan, baseUrl, NodeHttpClient.layerUndici), steps.driver)
]

/** A fresh client (cold token cache) on `layer`, for the single-flight benchmark. */
export const freshTokenProvider = async (
  baseUrl: string,
  layer: Layer.Layer<HttpClient.HttpClient>,
  modules: Modules = current
) => {
  const runtime = ManagedRuntime.make(
    modules.FinClient.layer({ clientId: "bench", clientSecret: "bench-secret", baseUrl }).pipe(Layer.provide(layer))
  )
  const tokens = await runtime.runPromise(modules.TokenProvider.TokenProvider)
  return { runtime, tokens }
}

/** Short names for bench/profile.ts. */
export const shortNames: Record<string, string> = {
  "raw-undici": names.rawUndici,
  "bare-undici": names.bareUndici,
  "full-undici": names.fullUndici,
  "raw-fetch": names.rawFetch,
  "bare-fetch": names.bareFetch,
  "full-fetch": names.fullFetch,
  "bare-lean": names.bareLean,
  "full-lean": names.fullLean
}

/** Every client, including the ones only some runs compare. */
export const allClients = (baseUrl: string): ReadonlyArray<BenchClient> => makeClients(baseUrl)
