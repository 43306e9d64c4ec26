/**
 * effect-fin/emulator: a local emulator of the service for tests, demos, chaos runs and benchmarks.
 *
 * @since 0.1.0
 */

/**
 * The emulator: documented routes, webhook sender, fault injection, counters, admin endpoints.
 *
 * @since 0.1.0
 */
export * as Emulator from "./Emulator.js"
