/**
 * `GET /v1/countries/{country_code}/subdivisions`, with the offline snapshot as fallback and a cross-check of the
 * snapshot against the API.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as CountryCode from "./CountryCode.js"
import * as FinConfig from "./FinConfig.js"
import { type FinError, Issue, type TimeoutError } from "./FinError.js"
import * as HttpTransport from "./HttpTransport.js"
import * as Breaker from "./internal/breaker.js"
import * as CallOptionsInternal from "./internal/callOptions.js"
import * as Durations from "./internal/duration.js"
import * as Issues from "./internal/issues.js"
import * as KeyedCache from "./internal/keyedCache.js"
import * as Retry from "./internal/retry.js"
import { memo } from "./internal/memo.js"
import * as Printable from "./internal/printable.js"
import * as internal from "./internal/subdivisions.js"
import * as Subdivisions from "./Subdivisions.js"

/**
 * Schema of a `SubdivisionList`, to send or keep one (an HttpApi endpoint's success, a cache of your own).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SubdivisionList: Schema.Struct<{
  country: typeof CountryCode.CountryCode
  subdivisions: Schema.Array$<typeof Subdivisions.Subdivision>
  source: Schema.Literal<["api", "snapshot"]>
}> = Schema.Struct({
  /** The country listed (ISO 3166-1 alpha-3). */
  country: CountryCode.CountryCode,
  /** Its subdivisions; from the API, only `code` and `name` (the snapshot adds `type` and `parent` when known). */
  subdivisions: Schema.Array(Subdivisions.Subdivision),
  /** `"api"`: the service answered (possibly from the cache); `"snapshot"`: the committed offline data. */
  source: Schema.Literal("api", "snapshot")
}).annotations({
  identifier: "effect-fin.SubdivisionList",
  title: "the subdivisions of a country {country, subdivisions, source}",
  description: "The subdivisions of a country, from the API or the offline snapshot"
})

/**
 * The subdivisions of one country and where they came from (see the `SubdivisionList` schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface SubdivisionList extends Schema.Schema.Type<typeof SubdivisionList> {}

/**
 * An entry of the API's list that `crossCheck` left out of the comparison, and why: a code that is not ISO 3166-2
 * (`malformed_code`, e.g. lower case), a code of another country (`other_country`), no name (`empty_name`), a name with
 * a control character that is no blank, a bidirectional override or isolate, or a lone surrogate half
 * (`unprintable_name`), or a code listed before (`duplicate`; the first listing is the one compared). Exported, so an
 * app's own declarations can name it.
 *
 * @since 0.1.0
 * @category models
 */
export type { InvalidEntry } from "./internal/subdivisions.js"

/**
 * The snapshot measured against the API for one country: `missing` are codes the API lists and the snapshot lacks,
 * `extra` are codes only the snapshot has, `renamed` are codes both have under different names, `invalid` are API
 * entries left out of the comparison (a malformed code, another country's code, no name, an unprintable name, or a
 * code listed twice).
 *
 * @since 0.1.0
 * @category models
 */
export interface SubdivisionDiff extends internal.CrossCheck {
  /** The country compared. */
  readonly country: CountryCode.CountryCode
  /** API entries left out of the comparison, and why. */
  readonly invalid: ReadonlyArray<internal.InvalidEntry>
  /** Codes the API lists and the snapshot lacks, as the API names them. */
  readonly missing: ReadonlyArray<Subdivisions.Subdivision>
  /** Codes only the snapshot has, as it names them. */
  readonly extra: ReadonlyArray<Subdivisions.Subdivision>
  /** Codes both have under different names. */
  readonly renamed: ReadonlyArray<internal.RenamedEntry>
}

/**
 * A code the snapshot and the API both have under different names: `snapshotName` and `apiName`. Exported, so an
 * app's own declarations can name it.
 *
 * @since 0.1.0
 * @category models
 */
export type { RenamedEntry } from "./internal/subdivisions.js"

/**
 * The response: `{ "data": { "subdivisions": [{ "name", "code" }] } }`. Only the documented `code` and `name` are
 * read: another field (a `type: null`, say) is dropped, whatever it holds, rather than failing the list. A
 * `data.pagination` (as the service's paged lists have; this one is documented without) is kept to be checked: a page
 * of a longer list is not the country's list.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SubdivisionsResponse = Schema.Struct({
  data: Schema.Struct({
    subdivisions: Schema.Array(internal.ApiSubdivision),
    pagination: Schema.optional(Schema.Unknown)
  })
})

/**
 * Subdivisions of a country from the API, the snapshot, or both (`subdivisionMode`), and the cross-check of the two.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * By `subdivisionMode`: the API (`online`), the snapshot (`offline`) or the API with the snapshot as fallback. An
   * API answer with an entry that is no subdivision of the country (what `crossCheck` calls `invalid`) is a
   * `ResponseDecodeError` naming it (in fallback mode: the snapshot), never served or cached.
   */
  readonly list: <C extends string>(country: CountryCode.Checked<C>) => Effect.Effect<SubdivisionList, FinError>
  /** Always asks the API, never cached; refused in `offline` mode. */
  readonly crossCheck: <C extends string>(country: CountryCode.Checked<C>) => Effect.Effect<SubdivisionDiff, FinError>
}

/**
 * The subdivision service, provided by `layer` (or `FinClient.layer`).
 *
 * @since 0.1.0
 * @category tags
 */
export class SubdivisionService extends Context.Tag("effect-fin/SubdivisionService")<SubdivisionService, Service>() {}

// The snapshot stands in for an unreachable, failing or timing-out service, never for a refusal: 401/403/429 and
// other 4xx reach the caller. A TLS handshake refused on its certificate is an unreachable service here (the snapshot
// is ours, no attacker's), though not one to retry.
const canFallBack = Retry.isOutage

// Cut on whole characters, then, only where it was cut, without a `\uXXXX` escape cut in half (the code arrives
// escaped already): a code that ends in a backslash of its own keeps it.
const shortCode = (code: string): string => {
  const chars = Array.from(Printable.printable(code))
  return chars.length <= 64 ? chars.join("") : chars.slice(0, 64).join("").replace(/\\(u[0-9a-f]{0,3})?$/, "")
}

// A failure's cause, to say it once: its tag and the status, code or kind it carries (a 503 and a proxy's page are two
// causes; the same 503 answered to every lookup is one). An ApiError's code is the service's own text (up to 1,024
// characters, its control characters escaped): cut again here, since the recovery line names the cause.
const causeOf = (error: FinError): string =>
  [
    error._tag,
    "status" in error ? error.status : undefined,
    "code" in error && error.code !== undefined ? shortCode(String(error.code)) : undefined,
    "kind" in error ? error.kind : undefined
  ].filter((part) => part !== undefined).join(" ")

// How often the snapshot stood in for the API, by why: the error's tag, or `cooldown` for a lookup answered while the
// API was left alone after a failure. Tagged once per reason, not per lookup.
const snapshotServed = Metric.counter("effect_fin_subdivision_snapshot_total", {
  description: "Subdivision lookups answered from the offline snapshot in fallback mode, by reason",
  incremental: true
})
const snapshotServedFor = memo((reason) => Metric.tagged(snapshotServed, "reason", reason))

// A lookup falls back on these too (`judge` still counts them as answers, so they start no cool-down): an answer
// that is not the documented list (a proxy's page), or that lists entries that are no subdivisions of the country;
// and a redirect (a proxy's, a captive portal's), which a client that follows it reports as the former.
const canServeSnapshotFor = (error: FinError): boolean =>
  canFallBack(error) || error._tag === "ResponseDecodeError" ||
  (error._tag === "ApiError" && error.status >= 300 && error.status <= 399)

const expectedOf: Record<internal.InvalidEntry["reason"], (alpha2: string) => readonly [field: string, string]> = {
  malformed_code: () => ["code", `an ISO 3166-2 code in upper case (e.g. "US-CA")`],
  other_country: (alpha2) => ["code", `a code of ${alpha2} (${alpha2}-...)`],
  empty_name: () => ["name", "a name"],
  unprintable_name: () => ["name", "a name without control characters"],
  duplicate: () => ["code", "a code not listed before"]
}

// The API's entries as a lookup serves them must each be a subdivision of the country: the transport's check of a
// lookup's answer, naming those that are not (what `crossCheck` reports as `invalid`), so the answer is a
// ResponseDecodeError (with the call's attempts and request id), never served or cached as the country's list.
const entryIssues = (country: CountryCode.CountryCode) =>
(response: typeof SubdivisionsResponse.Type): ReadonlyArray<Issue> => {
  const alpha2 = CountryCode.toAlpha2(country)
  const seen = new Set<string>()
  const issues: Array<Issue> = []
  response.data.subdivisions.forEach((entry, i) => {
    const reason = internal.problemOf(entry, alpha2, seen)
    if (reason === undefined) return void seen.add(entry.code)
    const [field, expected] = expectedOf[reason](alpha2)
    issues.push(new Issue({ path: `data.subdivisions[${i}].${field}`, expected }))
  })
  return [...issues, ...internal.pageIssues(response)]
}

// Checked entries, frozen as the snapshot's are: the list is cached and shared by every caller.
const served = (entries: ReadonlyArray<Subdivisions.Subdivision>): ReadonlyArray<Subdivisions.Subdivision> =>
  Object.freeze(entries.map((entry) => Object.freeze({ ...entry, name: internal.comparable(entry.name) })))

const snapshotOf = (country: CountryCode.CountryCode): ReadonlyArray<Subdivisions.Subdivision> =>
  // `country` is already validated, so the lookup cannot fail.
  Either.getOrElse(Subdivisions.forCountry(country), () => [])

/**
 * Builds the service on the transport in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service, never, FinConfig.FinConfig | HttpTransport.HttpTransport | Scope.Scope> =
  Effect.gen(function*() {
    const config = yield* FinConfig.FinConfig
    const transport = yield* HttpTransport.HttpTransport

    // A lookup's entries must each be a subdivision of the country (`check`); crossCheck takes them as sent (an entry
    // without a code or name too: it is `invalid`).
    const fetch = <I>(
      country: CountryCode.CountryCode,
      response: Schema.Schema<typeof SubdivisionsResponse.Type, I>,
      check?: (response: typeof SubdivisionsResponse.Type) => ReadonlyArray<Issue>
    ) =>
      Effect.map(
        transport.request({
          method: "GET",
          path: `/v1/countries/${country}/subdivisions`,
          response,
          name: "subdivisions",
          check
        }),
        (response) => response.data.subdivisions
      )
    // Countries do not lose every subdivision: an empty list where the snapshot has some is served (the API is the
    // authority) but said as the likely fault of the service it is: a warning once per country until it lists some
    // again, then at Debug (the list is not cached, so every lookup fetches it anew).
    const saidEmpty = new Set<CountryCode.CountryCode>()
    const fetchChecked = (country: CountryCode.CountryCode) =>
      Effect.map(fetch(country, SubdivisionsResponse, entryIssues(country)), served).pipe(
        Effect.tap((entries) =>
          Effect.suspend(() => {
            const known = snapshotOf(country).length
            if (entries.length > 0 || known === 0) {
              saidEmpty.delete(country)
              return Effect.void
            }
            const message =
              `effect-fin: the API lists no subdivisions for ${country}, where the offline snapshot has ${known}`
            if (saidEmpty.has(country)) return Effect.logDebug(message)
            saidEmpty.add(country)
            return Effect.logWarning(message)
          })
        )
      )

    const fromSnapshot = (country: CountryCode.CountryCode): SubdivisionList => ({
      country,
      subdivisions: snapshotOf(country),
      source: "snapshot"
    })

    // A caller with its own options (`HttpTransport.withOptions`) makes its own call rather than join one made under
    // another caller's deadline and retries.
    const shareable = CallOptionsInternal.overridesNothing
    const apiList = (country: CountryCode.CountryCode) => (subdivisions: ReadonlyArray<Subdivisions.Subdivision>) =>
      ({ country, subdivisions, source: "api" }) satisfies SubdivisionList
    // An empty list where the snapshot has entries is served but not kept: a degraded service's [] is not pinned for
    // the cache's lifetime.
    const cacheOf = (
      lookup: (country: CountryCode.CountryCode) => Effect.Effect<ReadonlyArray<Subdivisions.Subdivision>, FinError>
    ) =>
      KeyedCache.make({
        lookup,
        timeToLive: config.subdivisionCacheTtl,
        cacheable: (country, entries) => entries.length > 0 || snapshotOf(country).length === 0
      })

    const online = Effect.map(cacheOf(fetchChecked), (cache) => (country: CountryCode.CountryCode) =>
      Effect.flatMap(HttpTransport.currentCallOptions, (options) =>
        Effect.map(cache.get(country, shareable(options)), apiList(country))))

    const fromSnapshotLogged = (country: CountryCode.CountryCode, reason: string, log: Effect.Effect<void>) =>
      log.pipe(Effect.zipRight(Metric.increment(snapshotServedFor(reason))), Effect.as(fromSnapshot(country)))

    // A limit the caller set (`withOptions`) that fired says nothing about the service, and neither does a request
    // refused before it was sent (invalid per-call options): that caller still gets the snapshot or its error, and the
    // others keep asking the API.
    const ownLimit = (error: TimeoutError, options: HttpTransport.CallOptions) =>
      (error.kind === "deadline" && options.deadline !== undefined) ||
      (error.kind === "attempt" && options.timeout !== undefined)
    // Nor does an answer after fewer retries than the client makes that its retries would have absorbed (a one-off
    // 503). A stall or a refused connection still starts one: a program whose lookups all fail fast would otherwise
    // wait out the client's `timeout` on each lookup of a stalled service. So does an answer the client would not
    // have retried either (a 501, a wait longer than `maxRetryAfter`, or than the client's `deadline`), and a 5xx
    // whose wait outlasted the client's deadline (a RateLimitError): the client's own retries end with it too. Only
    // the caller's own deadline (`withOptions`) may have cut that wait short.
    const absorbable = (error: FinError, options: HttpTransport.CallOptions) => {
      const wait = Retry.retryAfterOf(error) ?? Duration.zero
      return options.maxRetries !== undefined && options.maxRetries < config.maxRetries &&
        (error._tag === "ApiError" || (error._tag === "RateLimitError" && options.deadline !== undefined)) &&
        Retry.isRetryable(error) && Duration.lessThanOrEqualTo(wait, config.maxRetryAfter) &&
        Duration.lessThan(wait, config.deadline)
    }
    const judge = (options: HttpTransport.CallOptions) => (error: FinError): Breaker.Verdict =>
      error._tag === "RequestValidationError" || (error._tag === "TimeoutError" && ownLimit(error, options))
        ? "unknown"
        : canFallBack(error)
        ? absorbable(error, options) ? "unknown" : "down"
        : "up"

    // After a failure that the snapshot stood in for, the snapshot answers at once for the cool-down (a service that
    // is down would otherwise cost every lookup its whole deadline); then one lookup asks the API again, with a
    // request of its own. The breaker admits callers before the cache's shared lookups, so nobody joins a probe (a
    // fresh cached answer is still served); it counts each request's outcome inside the lookup, so an old request
    // joined later counts as of when it was sent. The cool-down lasts at least the wait the failure's answer asked
    // for (its `Retry-After`, `maxRetryAfter` at most): the probe does not ask a service that said when to come back
    // before then. Its log lines give durations, not dates: the breaker's clock is monotonic, and the wall clock may
    // have been set since.
    const fallback = Effect.gen(function*() {
      const configured = config.subdivisionFallbackCooldown
      // Per country, the causes warned of (see `failureLogged`), each with whether it started a cool-down (the
      // breaker's close ends it), and whether its recovery is told there.
      const MAX_CAUSES = 8
      const warned = new Map<CountryCode.CountryCode, { readonly causes: Map<string, boolean>; recovery: boolean }>()
      const breaker: Breaker.Breaker<FinError> = Duration.toMillis(configured) > 0
        ? yield* Breaker.make<FinError>({
          cooldown: (error) =>
            Duration.max(configured, Duration.min(Retry.retryAfterOf(error) ?? Duration.zero, config.maxRetryAfter)),
          onOpen: (error, again, cooldown) =>
            Effect.logInfo(
              again
                ? `effect-fin: the subdivisions API still fails (${error._tag}); lookups use the offline snapshot for ` +
                  `another ${Durations.formatMillis(cooldown)}`
                : `effect-fin: the subdivisions API failed with ${error._tag}; lookups use the offline snapshot for ` +
                  `the next ${Durations.formatMillis(cooldown)}, then ask it again`
            ),
          onClose: (error, openFor) =>
            Effect.suspend(() => {
              // The outage is over (this line tells the recovery): a failure after it, whatever country it hits
              // first, is a new one and warns again, though the country warned of before was not asked since. A
              // country that also saw a cause with no cool-down (a proxy's page) keeps that one, for its own recovery.
              for (const [country, was] of warned) {
                for (const [cause, cooled] of was.causes) if (cooled) was.causes.delete(cause)
                if (was.causes.size === 0) warned.delete(country)
              }
              return Effect.logInfo(
                `effect-fin: the subdivisions API answers again; lookups use it again (the offline snapshot stood in ` +
                  `for ${Durations.formatMillis(openFor)}; the last failure was ${error._tag})`
              )
            })
        })
        : Breaker.none()
      const cache = yield* cacheOf((country) =>
        Effect.flatMap(
          HttpTransport.currentCallOptions,
          (options) => breaker.track(fetchChecked(country), judge(options))
        )
      )
      // A failure is a warning once per country and cause until that country's API answers again, then at Debug:
      // every caller of a shared lookup gets its error (a stall's ends thousands of waits at once), and a cause that
      // starts no cool-down (a proxy's page) fails each lookup alike. Every cause said is kept, not the last one
      // only: two alternating (a 502 and a 503 from a balancer's backends) would otherwise warn on each lookup; past
      // `MAX_CAUSES` (a code that differs on each answer), the rest are at Debug. A recovery is told where no
      // cool-down's end is.
      const failureLogged = (country: CountryCode.CountryCode, error: FinError, options: HttpTransport.CallOptions) =>
        Effect.suspend(() => {
          const message = `effect-fin: serving the offline snapshot for ${country} (${error._tag}: ${error.message})`
          const cause = causeOf(error)
          const was = warned.get(country)
          if (was !== undefined && (was.causes.has(cause) || was.causes.size >= MAX_CAUSES)) {
            return Effect.logDebug(message)
          }
          // Only a failure judged "down" while the breaker is open starts or joins a cool-down, whose end tells the
          // recovery; any other (a limit of the caller's own, an answer its retries would have absorbed, a request sent
          // before the breaker's last change, which it does not count) has its recovery told here.
          const recovery = Duration.toMillis(configured) === 0 || judge(options)(error) !== "down" || !breaker.isOpen()
          if (was === undefined) warned.set(country, { causes: new Map([[cause, !recovery]]), recovery })
          else {
            was.causes.set(cause, !recovery)
            was.recovery ||= recovery
          }
          return Effect.logWarning(message)
        })
      const answered = (country: CountryCode.CountryCode) =>
        Effect.suspend(() => {
          const was = warned.get(country)
          if (was === undefined) return Effect.void
          warned.delete(country)
          return was.recovery
            ? Effect.logInfo(
              `effect-fin: the subdivisions API answers for ${country} again (it failed with ${
                [...was.causes.keys()].join(", ")
              })`
            )
            : Effect.void
        })
      const lookup = (country: CountryCode.CountryCode) =>
        Effect.flatMap(HttpTransport.currentCallOptions, (options) =>
          Effect.flatMap(cache.getIfFresh(country), (cached) =>
            Option.isSome(cached)
              ? Effect.succeed(apiList(country)(cached.value))
              : breaker.guard((probe) =>
                Effect.map(cache.get(country, !probe && shareable(options)), apiList(country))
              )))
      return (country: CountryCode.CountryCode) =>
        Effect.catchAll(Effect.tap(lookup(country), () => answered(country)), (error) => {
          if (error._tag === "CircuitOpen") {
            const next = error.probing
              ? "another lookup is asking it again"
              : `it is asked again in ${Durations.formatMillis(error.retryIn)}`
            return fromSnapshotLogged(
              country,
              "cooldown",
              Effect.logDebug(
                `effect-fin: serving the offline snapshot for ${country} (the API failed with ${error.error._tag}; ${next})`
              )
            )
          }
          return canServeSnapshotFor(error)
            ? Effect.flatMap(
              HttpTransport.currentCallOptions,
              (options) => fromSnapshotLogged(country, error._tag, failureLogged(country, error, options))
            )
            : Effect.fail(error)
        })
    })

    const byMode: (country: CountryCode.CountryCode) => Effect.Effect<SubdivisionList, FinError> =
      config.subdivisionMode === "offline"
        ? (country) => Effect.succeed(fromSnapshot(country))
        : config.subdivisionMode === "online"
        ? yield* online
        : yield* fallback

    // Per-call options the transport would refuse are refused here too, before a cached answer or the snapshot can
    // stand in for the call that would have refused them; offline as well, though no call is made, so that a test
    // run offline refuses what the same code run online or in fallback would.
    const optionsChecked = Effect.flatMap(
      HttpTransport.currentCallOptions,
      (options) => shareable(options) ? Effect.void : CallOptionsInternal.resolve(config, options)
    )
    const list = (input: string) =>
      Effect.flatMap(CountryCode.validate(input), (country) => Effect.zipRight(optionsChecked, byMode(country)))

    // Offline means no network at all, so the one operation that must ask the API is refused, not sent.
    const offline = Issues.refusal(
      "subdivisionMode",
      `crossCheck asks the API, and subdivisionMode is "offline" (no network)`,
      `"online" or "fallback"`
    )

    const crossCheck = (input: string) =>
      Effect.flatMap(CountryCode.validate(input), (country) =>
        config.subdivisionMode === "offline"
          ? Effect.fail(offline)
          : Effect.map(
            fetch(country, internal.SentSubdivisionsResponse, internal.pageIssues),
            (api): SubdivisionDiff => ({
              country,
              ...internal.crossCheckCountry(snapshotOf(country), api, CountryCode.toAlpha2(country))
            })
          ))

    return SubdivisionService.of({ list, crossCheck })
  })

/**
 * The subdivision service on a client's options and `HttpTransport`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<SubdivisionService, never, FinConfig.FinConfig | HttpTransport.HttpTransport> = Layer
  .scoped(SubdivisionService, make)

/**
 * Lists the subdivisions of `country` with the service in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const list = <C extends string>(
  country: CountryCode.Checked<C>
): Effect.Effect<SubdivisionList, FinError, SubdivisionService> =>
  Effect.flatMap(SubdivisionService, (service) => service.list(country))

/**
 * Cross-checks the snapshot of `country` against the API with the service in context.
 *
 * @since 0.1.0
 * @category accessors
 */
export const crossCheck = <C extends string>(
  country: CountryCode.Checked<C>
): Effect.Effect<SubdivisionDiff, FinError, SubdivisionService> =>
  Effect.flatMap(SubdivisionService, (service) => service.crossCheck(country))
