/**
 * effect-fin: an Effect client for the Fin Orchestration API.
 *
 * @since 0.1.0
 */

/**
 * The 249 alpha-3 country codes of the service, and alpha-2 conversion.
 *
 * @since 0.1.0
 */
export * as CountryCode from "./CountryCode.js"

/**
 * `POST /v1/fee-calculation`.
 *
 * @since 0.1.0
 */
export * as FeeService from "./FeeService.js"

/**
 * Wiring of every service of one client.
 *
 * @since 0.1.0
 */
export * as FinClient from "./FinClient.js"

/**
 * Options, validation and defaults.
 *
 * @since 0.1.0
 */
export * as FinConfig from "./FinConfig.js"

/**
 * The typed errors.
 *
 * @since 0.1.0
 */
export * as FinError from "./FinError.js"

/**
 * Authenticated calls with retries, deadline and per-call options.
 *
 * @since 0.1.0
 */
export * as HttpTransport from "./HttpTransport.js"

/**
 * `GET /v1/countries/{alpha3}/subdivisions` with the offline fallback and cross-check.
 *
 * @since 0.1.0
 */
export * as SubdivisionService from "./SubdivisionService.js"

/**
 * Offline ISO 3166-2 lookups over the committed snapshot.
 *
 * @since 0.1.0
 */
export * as Subdivisions from "./Subdivisions.js"

/**
 * Access tokens: cached, refreshed, single flight.
 *
 * @since 0.1.0
 */
export * as TokenProvider from "./TokenProvider.js"

/**
 * Where token pairs are kept and the refresh lock (in memory by default; `effect-fin/redis` shares them).
 *
 * @since 0.1.0
 */
export * as TokenStore from "./TokenStore.js"

/**
 * Webhook verification, decoding and the `HttpApp` handler.
 *
 * @since 0.1.0
 */
export * as Webhooks from "./Webhooks.js"
