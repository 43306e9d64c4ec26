/**
 * An egress proxy from the environment, for undici's `EnvHttpProxyAgent`: the variables it reads, checked first so
 * that a malformed one is named, and the pool of connections to the proxy.
 *
 * @internal
 */
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import type * as Undici from "@effect/platform-node/Undici"

/** The proxies the environment names, as `EnvHttpProxyAgent` reads them: the lower-case name first, even empty. */
export interface Proxies {
  readonly httpProxy?: string
  readonly httpsProxy?: string
}

// Each proxy and where it was read from, for a refusal that names the variable (never its value: it may hold the
// proxy's credentials).
const read = (env: NodeJS.ProcessEnv, name: string): readonly [string, string | undefined] =>
  env[name.toLowerCase()] !== undefined ? [name.toLowerCase(), env[name.toLowerCase()]] : [name, env[name]]

const notProxyUrl = "is not a proxy URL: give http://host:port or https://host:port " +
  "(http://user:pass@host:port with credentials)"

// Why a value is no proxy URL undici tunnels through with CONNECT (http or https, with a host), if it is not. undici
// also takes socks5://, refused here: it tunnels otherwise, outside `pool` and its mends, and is experimental on Node
// 20. Credentials undici cannot decode (a bare `%`) would throw in its constructor: a defect naming nothing.
const problemOf = (value: string): string | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return notProxyUrl
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") return notProxyUrl
  // undici builds its pool on the proxy's origin and refuses one with a path, query or fragment ("invalid url", a
  // defect naming nothing, on the first request).
  if (url.pathname !== "/" || url.search !== "" || url.hash !== "") {
    return "is not a proxy URL: give http://host:port or https://host:port, with no path, query or fragment"
  }
  try {
    decodeURIComponent(url.username)
    decodeURIComponent(url.password)
  } catch {
    return "holds credentials that are not percent-encoded: write a % in them as %25"
  }
  return undefined
}

/** The proxies `env` names, or a `ConfigError` naming each variable that holds no proxy URL undici can use. */
export const fromEnv = (env: NodeJS.ProcessEnv): Either.Either<Proxies, ConfigError.ConfigError> => {
  const [http, https] = [read(env, "HTTP_PROXY"), read(env, "HTTPS_PROXY")]
  const refused = [https, http].flatMap(([name, value]) => {
    const problem = value === undefined || value === "" ? undefined : problemOf(value)
    return problem === undefined ? [] : [ConfigError.InvalidData([name], problem)]
  })
  return refused.length === 0
    ? Either.right({
      ...(http[1] === undefined ? {} : { httpProxy: http[1] }),
      ...(https[1] === undefined ? {} : { httpsProxy: https[1] })
    })
    : Either.left(refused.reduce((all, error) => ConfigError.And(all, error)))
}

/**
 * The pool of connections to the proxy (`ProxyAgent`'s `clientFactory`), mending two ways undici 7 fails when the
 * proxy misbehaves: a proxy closing the connection before answering CONNECT is undici's UND_ERR_SOCKET, which the
 * client waiting for the tunnel takes as recoverable and answers by asking again at once, for ever (thousands of
 * CONNECTs a second, after the call has ended too): it fails as PROXY_TUNNEL_CLOSED; and a CONNECT never answered
 * would hold its socket for undici's 300 s headers timeout, whatever the call's own limits: it is given
 * `answerTimeout` (milliseconds).
 */
export const pool = (undici: typeof Undici, answerTimeout: number) =>
(origin: URL, options: object): Undici.Dispatcher => {
  const proxy = new undici.Pool(origin, { ...options, headersTimeout: answerTimeout })
  const connect = proxy.connect.bind(proxy) as (
    options: Undici.Dispatcher.ConnectOptions,
    callback?: (error: Error | null, data: unknown) => void
  ) => Promise<unknown> | void
  return Object.assign(proxy, {
    connect: (
      options: Undici.Dispatcher.ConnectOptions,
      callback?: (error: Error | null, data: unknown) => void
    ) =>
      callback === undefined
        ? (connect(options) as Promise<unknown>).catch((cause: unknown) => {
          throw tunnelFailure(cause)
        })
        : connect(options, (error, data) => callback(error === null ? null : tunnelFailure(error) as Error, data))
  })
}

const tunnelFailure = (cause: unknown): unknown =>
  (cause as { readonly code?: unknown } | null)?.code === "UND_ERR_SOCKET"
    ? Object.assign(new Error("the proxy closed the connection before opening the tunnel", { cause }), {
      code: "PROXY_TUNNEL_CLOSED"
    })
    : cause
