/**
 * What the commands share: the `--json` option and its printing, and the client of the `FIN_*` variables.
 *
 * @internal
 */
import * as Options from "@effect/cli/Options"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as FinClient from "../FinClient.js"
import * as FinConfig from "../FinConfig.js"
import * as UndiciHttpClient from "../node/UndiciHttpClient.js"
import * as FailureLine from "./failureLine.js"
import * as Render from "./render.js"

/** The `--json` option every command takes. */
export const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON instead of a table (and a failure as one line of JSON on stderr)")
)

/** Prints `value` as JSON with `--json`, else the text `human` makes. */
export const print = (asJson: boolean, value: unknown, human: () => string) =>
  Console.log(asJson ? Render.json(value) : human())

/**
 * Failures already printed (as JSON): `run` only sets the exit code. The error itself goes on, so a program that
 * mounts `command` still gets it (a FinError, to `catchTag`), not a marker. Kept and looked up unwrapped: an error
 * failed under a span travels as a Proxy of itself, a new one each time it is failed anew (as the TokenProvider found).
 */
export const printedAsJson = new WeakSet<object>()

/**
 * With `--json`, a failure is printed as JSON (`Render.errorJson`) here, where the flag is known, rather than as
 * `run`'s text line.
 */
export const failingAsJson =
  (asJson: boolean) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    asJson
      ? Effect.zipRight(
        Effect.sync(() => FailureLine.setJson(true)),
        Effect.tapError(self, (error) =>
          Effect.zipRight(
            Console.error(Render.errorJson(error)),
            Effect.sync(() => {
              if (Predicate.isObject(error)) printedAsJson.add(Cause.originalError(error))
            })
          ))
      )
      : self

/**
 * The client of the `FIN_*` variables on undici, through the egress proxy `HTTPS_PROXY` names (with `NO_PROXY`:
 * `UndiciHttpClient.layerDispatcherFromEnvProxy`); only built by commands that call the service. A command makes one
 * lookup, so the fallback cool-down (which spares later lookups) is off unless `FIN_SUBDIVISION_FALLBACK_COOLDOWN`
 * asks.
 */
export const clientLayer = Layer.unwrapEffect(Effect.map(FinConfig.optionsFromEnv, (options) =>
  FinClient.layer({ ...options, subdivisionFallbackCooldown: options.subdivisionFallbackCooldown ?? "0 seconds" })
)).pipe(
  Layer.provide(NodeHttpClient.layerUndiciWithoutDispatcher),
  Layer.provide(UndiciHttpClient.layerDispatcherFromEnvProxy)
)
