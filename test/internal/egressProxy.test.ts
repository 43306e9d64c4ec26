import * as Undici from "@effect/platform-node/Undici"
import { describe, expect, it } from "@effect/vitest"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as EgressProxy from "../../src/internal/egressProxy.js"
import { eventually, startConnectProxy } from "../support.js"

// As Effect prints a ConfigError: each refusal in parentheses, joined by "and".
const refusal = (...names: ReadonlyArray<string>) =>
  names.map((name) =>
    `(Invalid data at ${name}: "is not a proxy URL: give http://host:port or https://host:port ` +
    `(http://user:pass@host:port with credentials)")`
  ).join(" and ")

const messageOf = (env: NodeJS.ProcessEnv) =>
  Either.match(EgressProxy.fromEnv(env), {
    onLeft: String,
    onRight: (proxies) => proxies
  })

describe("EgressProxy.fromEnv", () => {
  it("reads the proxies as undici does: the lower-case name first, even empty", () => {
    expect(messageOf({ HTTPS_PROXY: "http://a:1", HTTP_PROXY: "http://b:2" }))
      .toEqual({ httpsProxy: "http://a:1", httpProxy: "http://b:2" })
    expect(messageOf({ https_proxy: "http://a:1", HTTPS_PROXY: "junk:1", http_proxy: "", HTTP_PROXY: "http://b:2" }))
      .toEqual({ httpsProxy: "http://a:1", httpProxy: "" })
    expect(messageOf({})).toEqual({})
  })

  it("names each variable read that holds no http or https proxy URL, never its value", () => {
    expect(messageOf({ HTTPS_PROXY: "http://good:3128", HTTP_PROXY: "proxy:3128" })).toBe(refusal("HTTP_PROXY"))
    expect(messageOf({ https_proxy: "socks5://user:hunter2@proxy:1080", http_proxy: "http://" }))
      .toBe(refusal("https_proxy", "http_proxy"))
    expect(messageOf({ HTTPS_PROXY: "ftp://user:hunter2@proxy" })).toBe(refusal("HTTPS_PROXY"))
    // Credentials undici cannot decode (a bare %), refused here rather than a defect in undici's constructor.
    for (const value of ["http://user:50%off@proxy:3128", "http://50%off:pass@proxy:3128"]) {
      expect(messageOf({ HTTPS_PROXY: value }), value).toBe(
        `(Invalid data at HTTPS_PROXY: "holds credentials that are not percent-encoded: write a % in them as %25")`
      )
    }
    expect(messageOf({ HTTPS_PROXY: "http://user:50%25off@proxy:3128" }))
      .toEqual({ httpsProxy: "http://user:50%25off@proxy:3128" })
    expect(Either.getLeft(EgressProxy.fromEnv({ HTTPS_PROXY: "x" })).pipe(Option.exists(ConfigError.isConfigError)))
      .toBe(true)
    // A path, query or fragment: undici's pool refuses it at the first request ("invalid url", naming nothing); a
    // bare trailing slash is the origin.
    for (const value of ["http://proxy:3128/squid", "http://proxy:3128?x=1", "http://proxy:3128/#f"]) {
      expect(messageOf({ HTTPS_PROXY: value }), value).toBe(
        `(Invalid data at HTTPS_PROXY: "is not a proxy URL: give http://host:port or https://host:port, ` +
          `with no path, query or fragment")`
      )
    }
    expect(messageOf({ HTTPS_PROXY: "http://proxy:3128/" })).toEqual({ httpsProxy: "http://proxy:3128/" })
  })
})

const misbehaving = (behaviour: "silent" | "close") =>
  Effect.acquireRelease(Effect.promise(() => startConnectProxy(behaviour)), (proxy) => Effect.promise(proxy.close))

describe("EgressProxy.pool", () => {
  it.scopedLive("a CONNECT unanswered is given up at the answer timeout, socket closed; a closing proxy is named", () =>
    Effect.gen(function*() {
      const cases = [["silent", "UND_ERR_HEADERS_TIMEOUT"], ["close", "PROXY_TUNNEL_CLOSED"]] as const
      for (const [behaviour, code] of cases) {
        const proxy = yield* misbehaving(behaviour)
        const agent = yield* Effect.acquireRelease(
          Effect.sync(() => new Undici.ProxyAgent({ uri: proxy.url, clientFactory: EgressProxy.pool(Undici, 200) })),
          (agent) => Effect.promise(() => agent.destroy())
        )
        const outcome = yield* Effect.promise(() =>
          Undici.request("http://127.0.0.1:9/", { dispatcher: agent }).then(() => "answered", (e) => e.code)
        )
        // One CONNECT, not a CONNECT again at once for ever (undici alone, on a proxy closing).
        expect([outcome, proxy.tunnels().length]).toEqual([code, 1])
        yield* eventually(Effect.sync(() => proxy.open() === 0), "the proxy's socket closed")
      }
    }))

  it.scopedLive("the callback form of connect names a proxy closing too", () =>
    Effect.gen(function*() {
      const proxy = yield* misbehaving("close")
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => EgressProxy.pool(Undici, 200)(new URL(proxy.url), {})),
        (pool) => Effect.promise(() => pool.destroy())
      )
      const code = yield* Effect.async<unknown>((resume) => {
        pool.connect(
          { origin: proxy.url, path: "127.0.0.1:9" },
          (error) => resume(Effect.succeed((error as { readonly code?: unknown } | null)?.code))
        )
      })
      expect(code).toBe("PROXY_TUNNEL_CLOSED")
    }))
})
