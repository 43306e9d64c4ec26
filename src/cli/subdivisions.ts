/**
 * The `subdivisions` command, with the hint to `--offline` a failure for want of credentials gets.
 *
 * @internal
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as CountryCode from "../CountryCode.js"
import * as FinError from "../FinError.js"
import * as Subdivisions from "../Subdivisions.js"
import * as SubdivisionService from "../SubdivisionService.js"
import * as SubdivisionsInternal from "../internal/subdivisions.js"
import * as Render from "./render.js"
import { clientLayer, failingAsJson, json, print } from "./shared.js"

// The API's entries have no type (the snapshot's have): no empty column for them.
const subdivisionRows = (list: ReadonlyArray<Subdivisions.Subdivision>) =>
  list.some((s) => s.type !== undefined)
    ? Render.table(["code", "name", "type"], list.map((s) => [s.code, s.name, s.type ?? ""]))
    : Render.table(["code", "name"], list.map((s) => [s.code, s.name]))

const count = (n: number) => `${n} subdivision${n === 1 ? "" : "s"}`

// Without usable credentials (unset, or set but refused: empty, padded) the snapshot is still at hand: the failure
// says how to reach it.
const offlineHint = <E>(error: E): E | ConfigError.ConfigError =>
  ConfigError.isConfigError(error) && missesCredentials(error)
    ? ConfigError.And(
      error,
      ConfigError.InvalidData(["--offline"], "--offline lists the bundled snapshot, which needs no credentials")
    )
    : error

const credentialVariables: ReadonlySet<string> = new Set(["FIN_CLIENT_ID", "FIN_CLIENT_SECRET"])

const missesCredentials = (error: ConfigError.ConfigError): boolean =>
  error._op === "MissingData" ||
  (error._op === "InvalidData" && credentialVariables.has(error.path[0] ?? "")) ||
  ((error._op === "And" || error._op === "Or") && (missesCredentials(error.left) || missesCredentials(error.right)))

/** The `subdivisions` command: a country's subdivisions, from the API or the bundled snapshot. */
export const subdivisions = Command.make(
  "subdivisions",
  {
    country: Args.text({ name: "country" }).pipe(
      Args.withDescription("ISO 3166-1 code, e.g. USA (alpha-2 and any letter case are read too: us, usa)")
    ),
    offline: Options.boolean("offline").pipe(Options.withDescription("Use the bundled snapshot only (no network)")),
    search: Options.text("search").pipe(
      Options.withDescription("Search names in the snapshot (case and accents ignored), e.g. \"new y\""),
      Options.optional
    ),
    json
  },
  ({ country: input, ...args }) =>
    Effect.gen(function*() {
      const country = yield* CountryCode.parse(input)
      // A search of nothing once normalised matches nothing (`Subdivisions.search`): from a shell it is a query left
      // unset ("", " "), or a stray character (".", a zero-width space), refused rather than answered with an empty
      // list and exit 0.
      if (Option.isSome(args.search) && SubdivisionsInternal.normalize(args.search.value) === "") {
        const expected = "a name or part of one to search for (a blank one matches nothing)"
        return yield* new FinError.RequestValidationError({
          message: `Invalid search: --search: expected ${expected}`,
          issues: [new FinError.Issue({ path: "--search", expected })]
        })
      }
      // Offline by flag or by configuration: no client is built, so no credentials are needed.
      const mode = yield* Config.option(Config.string("FIN_SUBDIVISION_MODE"))
      if (args.offline || Option.isSome(args.search) || Option.contains(mode, "offline")) {
        const list = yield* Option.isSome(args.search)
          ? Subdivisions.search(country, args.search.value)
          : Subdivisions.forCountry(country)
        return yield* print(args.json, { country, source: "snapshot", subdivisions: list }, () =>
          `${subdivisionRows(list)}\n\n${count(list.length)} of ${country} (offline snapshot)`)
      }
      const result = yield* SubdivisionService.list(country).pipe(
        Effect.provide(clientLayer),
        Effect.mapError(offlineHint)
      )
      yield* print(args.json, result, () =>
        `${subdivisionRows(result.subdivisions)}\n\n${count(result.subdivisions.length)} of ${result.country} (${
          result.source === "api" ? "from the API" : "offline snapshot: the API call failed, as logged above"
        })`)
    }).pipe(failingAsJson(args.json))
).pipe(Command.withDescription(
  "List the ISO 3166-2 subdivisions of a country (from the API with FIN_CLIENT_ID and FIN_CLIENT_SECRET; " +
    "--offline or --search: from the bundled snapshot, no credentials)"
))
