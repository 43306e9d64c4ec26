/**
 * Wiring: every service of one client (one account) from one set of options.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as FeeService from "./FeeService.js"
import * as FinConfig from "./FinConfig.js"
import * as HttpTransport from "./HttpTransport.js"
import type * as Http from "./internal/http.js"
import * as SubdivisionService from "./SubdivisionService.js"
import * as TokenProvider from "./TokenProvider.js"

/**
 * The options `layer` and `make` take: `FinConfig.Options`, named here too, where a client is made.
 *
 * @since 0.1.0
 * @category models
 */
export type Options = FinConfig.Options

/**
 * The services a client layer provides.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | TokenProvider.TokenProvider
  | HttpTransport.HttpTransport
  | FeeService.FeeService
  | SubdivisionService.SubdivisionService

/**
 * The services of one client as plain values, for programs that talk to several accounts.
 *
 * @since 0.1.0
 * @category models
 */
export interface Client {
  /** The client's token provider: the access token its calls send, fetched and refreshed for this account. */
  readonly tokens: TokenProvider.Service
  /** The client's transport: authenticated, retried requests to any route of the service. */
  readonly transport: HttpTransport.Service
  /** Fee quotes (`calculate`). */
  readonly fees: FeeService.Service
  /** Subdivisions of a country (`list`, `crossCheck`), from the API or the snapshot as `subdivisionMode` says. */
  readonly subdivisions: SubdivisionService.Service
}

// Fresh: built anew for each client (a memo map of its own, in which each of these layers is built once: the token
// provider the transport uses is the one the client's context holds).
const services = Layer.fresh(
  Layer.merge(FeeService.layer, SubdivisionService.layer).pipe(
    Layer.provideMerge(HttpTransport.layer),
    Layer.provideMerge(TokenProvider.layer)
  )
)

/**
 * Every service of a client. The platform `HttpClient` comes from the application (`FetchHttpClient.layer`,
 * `NodeHttpClient.layerUndici`, ...), so it is shared and configured there.
 *
 * Each call gives a layer of its own: two clients (two accounts, sandbox and production) in one layer graph, or in
 * one `LayerMap`, are two clients. (Effect shares a layer by reference within one build, whatever it is provided
 * with: the module-level service layers this one is made of are therefore made anew for each client, so that the
 * second client is not handed the first one's token provider and transport.) The same layer value used twice in one
 * graph is still built once, as every layer is.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: FinConfig.Options): Layer.Layer<Services, ConfigError.ConfigError, Http.Client> =>
  Layer.provide(services, FinConfig.layer(options))

/**
 * Like `layer`, with the options read from `Config` (e.g. `Config.redacted` for the secret).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<FinConfig.Options>
): Layer.Layer<Services, ConfigError.ConfigError, Http.Client> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))

/**
 * Like `layer`, with the options read from the `FIN_*` environment variables and checked (see
 * `FinConfig.optionsFromEnv`): a missing `FIN_CLIENT_ID` or `FIN_CLIENT_SECRET`, or any value that does not read or
 * is refused, is a `ConfigError` naming its variable, all of them at once.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnv = (): Layer.Layer<Services, ConfigError.ConfigError, Http.Client> =>
  Layer.unwrapEffect(Effect.map(FinConfig.optionsFromEnv, layer))

/**
 * The services of a client as values, living as long as the scope: call it once per account. Give it its platform
 * client in that scope too: one provided only around `make` (`make(options).pipe(Effect.provide(layerUndici))`) is
 * closed once the client is made, and every call then fails at once with a `TransportError` saying so (but a
 * subdivisions lookup in `"fallback"` mode, which the offline snapshot answers, with a warning saying so).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: FinConfig.Options
): Effect.Effect<Client, ConfigError.ConfigError, Http.Client | Scope.Scope> =>
  Effect.map(Layer.build(layer(options)), (context) => ({
    tokens: Context.get(context, TokenProvider.TokenProvider),
    transport: Context.get(context, HttpTransport.HttpTransport),
    fees: Context.get(context, FeeService.FeeService),
    subdivisions: Context.get(context, SubdivisionService.SubdivisionService)
  }))
