/**
 * Options of the client, their validation and defaults.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Record from "effect/Record"
import * as Redacted from "effect/Redacted"
import * as BaseUrl from "./internal/baseUrl.js"
import * as ConfigLiteral from "./internal/configLiteral.js"
import * as Durations from "./internal/duration.js"
import * as OptionNames from "./internal/optionNames.js"
import * as Padded from "./internal/padded.js"
import * as Printable from "./internal/printable.js"
import { version } from "./internal/version.js"
import * as Wiped from "./internal/wiped.js"

/**
 * What a user passes to `FinClient.layer`. Every field but the credentials has a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The account's client id (`FIN_CLIENT_ID`): sent only to the token route; no surrounding whitespace (a zero-width
   * space included), no control characters, bidirectional overrides or lone surrogates.
   */
  readonly clientId: string
  /**
   * The account's client secret (`FIN_CLIENT_SECRET`): prefer `Redacted` (`Config.redacted`); a plain string is
   * wrapped at once. Sent only to the token route, never logged; no whitespace (a zero-width space included) or
   * control character (DEL and C1 too) at either end (a trailing newline), no lone surrogate half.
   */
  readonly clientSecret: Redacted.Redacted<string> | string
  /** Default `"sandbox"`. */
  readonly environment?: Environment | undefined
  /**
   * Overrides `environment` (a proxy, the emulator), but not with the other environment's address when `environment`
   * is given too (a `ConfigError`); https required unless the host is loopback; no credentials, query, fragment or
   * port 0; no path of `/v1` alone, whatever the host (the routes add it; a gateway's `/payments/v1` is taken).
   * Blanks and a newline around it are dropped (as `new URL` drops them); a no-break or zero-width space is refused.
   */
  readonly baseUrl?: string | undefined
  /** Per attempt (request + whole body; the decode after it is synchronous). Default 30 s. */
  readonly timeout?: DurationOption | undefined
  /** Whole call, retries and waits included. Default 60 s. */
  readonly deadline?: DurationOption | undefined
  /**
   * A whole number from 0 to 10; default 2 (3 attempts); 0 disables. For API calls and token calls alike (a per-call
   * `withOptions` override reaches only the call's own attempts). The 401 refresh-retry is extra.
   */
  readonly maxRetries?: number | undefined
  /** Longest `Retry-After` honoured (also capped by what is left of the deadline). Default 60 s. */
  readonly maxRetryAfter?: DurationOption | undefined
  /**
   * At most this many requests of the client's calls in flight at once (a whole number from 1; default: no limit).
   * An attempt beyond it waits for one to end, first come first served; the wait counts against its call's
   * `deadline`, not against the attempt's `timeout`, and ends when the client closes. Token requests are not counted;
   * a request left running past its timeout (a platform client that ignores interruption) counts until it ends.
   */
  readonly maxConcurrentRequests?: number | undefined
  /**
   * The client's retry budget, per operation (the fee quote, the subdivisions, each `HttpTransport.request` name):
   * the retries of the last 10 seconds may be at most 100 (10 a second) plus this percentage (a whole number from 0
   * to 100) of the safe calls (those the client may retry, whatever their `maxRetries`) first sent in those seconds;
   * a retry beyond it is not made, its call ending with its last attempt's error. Default 20; `"unlimited"`:
   * `maxRetries` alone bounds them. Token calls are not counted (one fetch at a time however many callers wait, and
   * a failure whose answer asked for a wait, or refused the credentials, is held for that wait), nor the one resend
   * after a 401.
   */
  readonly retryBudget?: number | "unlimited" | undefined
  /** Per attempt of a token call. Default 10 s. */
  readonly tokenTimeout?: DurationOption | undefined
  /** Refresh this long before expiry (10% of the token's lifetime if that is shorter). Default 60 s. */
  readonly refreshMargin?: DurationOption | undefined
  /** Send b3/traceparent headers. Default false. */
  readonly tracePropagation?: boolean | undefined
  /** Appended to `effect-fin/<version>`: printable ASCII, at most 512 characters. */
  readonly userAgent?: string | undefined
  /** Default `"fallback"`. */
  readonly subdivisionMode?: SubdivisionMode | undefined
  /** How long API results are cached. Default 24 h. */
  readonly subdivisionCacheTtl?: DurationOption | undefined
  /**
   * In `"fallback"` mode, how long lookups are answered from the snapshot without asking the API after it failed
   * (unreachable, timing out, 5xx); then one lookup asks it again. Default 30 s, longer for a failure whose answer
   * asked for a longer wait (`Retry-After`, `maxRetryAfter` at most); `"0 seconds"` asks the API every time.
   */
  readonly subdivisionFallbackCooldown?: DurationOption | undefined
}

/**
 * A duration as the options take it: with its unit (`"30 seconds"`, `Duration.seconds(30)`), never a bare number,
 * which Effect reads as milliseconds (`timeout: 30` would be 30 ms) and a bigint as nanoseconds. Refused at run time
 * too, as the environment's `FIN_TIMEOUT=30` is.
 *
 * @since 0.1.0
 * @category models
 */
export type DurationOption = Exclude<Duration.DurationInput, number | bigint>

/**
 * Which service to talk to: the sandbox or production.
 *
 * @since 0.1.0
 * @category models
 */
export type Environment = "sandbox" | "production"

/**
 * Where subdivisions come from: the API only, the snapshot only, or the API with the snapshot as fallback.
 *
 * @since 0.1.0
 * @category models
 */
export type SubdivisionMode = "online" | "offline" | "fallback"

/**
 * Options after validation, with every default filled in.
 *
 * @since 0.1.0
 * @category models
 */
export interface Resolved {
  /** The account's client id, as given; sent only to the token route. */
  readonly clientId: string
  /** The account's client secret (a plain string given is wrapped); sent only to the token route, never logged. */
  readonly clientSecret: Redacted.Redacted<string>
  /** Origin and optional path prefix, no trailing slash. */
  readonly baseUrl: string
  /** Limit per attempt (request + whole body). */
  readonly timeout: Duration.Duration
  /** Limit for the whole call, retries and waits included. */
  readonly deadline: Duration.Duration
  /** Retries after the first attempt, 0 to 10 (0: none); the 401 refresh-retry is extra. */
  readonly maxRetries: number
  /** Longest `Retry-After` honoured (also capped by what is left of the deadline). */
  readonly maxRetryAfter: Duration.Duration
  /** At most this many requests of the client's calls in flight at once; undefined: no limit. */
  readonly maxConcurrentRequests?: number | undefined
  /**
   * Percent of an operation's safe calls (those the client may retry) in the last 10 s allowed as retries, on top of
   * 100; or `"unlimited"`.
   */
  readonly retryBudget: number | "unlimited"
  /** Limit per attempt of a token call. */
  readonly tokenTimeout: Duration.Duration
  /** How long before expiry a token is refreshed (10% of its lifetime if that is shorter). */
  readonly refreshMargin: Duration.Duration
  /** Whether b3/traceparent headers are sent. */
  readonly tracePropagation: boolean
  /** The whole `User-Agent` sent: `effect-fin/<version>`, then the given text after a space, if any. */
  readonly userAgent: string
  /** Where subdivisions come from. */
  readonly subdivisionMode: SubdivisionMode
  /** How long API results are cached. */
  readonly subdivisionCacheTtl: Duration.Duration
  /** In `"fallback"` mode, how long the snapshot answers alone after the API failed (zero: the API is always asked). */
  readonly subdivisionFallbackCooldown: Duration.Duration
}

/**
 * The base URLs of the two documented environments.
 *
 * @since 0.1.0
 * @category constants
 */
export const baseUrls: Readonly<Record<Environment, string>> = Object.freeze({
  sandbox: "https://sandbox.api.fin.com",
  production: "https://api.fin.com"
})

/**
 * The resolved options of one client.
 *
 * @since 0.1.0
 * @category tags
 */
export class FinConfig extends Context.Tag("effect-fin/FinConfig")<FinConfig, Resolved>() {}

const invalid = (path: string, message: string) => ConfigError.InvalidData([path], message)

// An environment given with the other environment's address (FIN_ENVIRONMENT=production, FIN_BASE_URL left at the
// sandbox's) would send one environment's credentials to the other: said, rather than one of them silently winning.
const contradicts = (environment: unknown, url: string): Either.Either<string, ConfigError.ConfigError> => {
  const other = environment === "production" ? "sandbox" : environment === "sandbox" ? "production" : undefined
  // The host as DNS reads it: "sandbox.api.fin.com." (the root's dot) is the same address.
  const { hostname, port, protocol } = new URL(url)
  return other !== undefined && `${protocol}//${hostname.replace(/\.$/, "")}${port === "" ? "" : `:${port}`}` === baseUrls[other]
    ? Either.left(
      invalid(
        "baseUrl",
        `baseUrl is the ${other} environment's address, and environment is "${environment}": give one of them, or both alike`
      )
    )
    : Either.right(url)
}

// The duration options: their defaults, whether zero is allowed (it means "off" for those that take it), and whether
// it is a time limit (a timer, so at most Durations.MAX_TIMER).
const durations = {
  timeout: ["30 seconds", false, true],
  deadline: ["60 seconds", false, true],
  maxRetryAfter: ["60 seconds", true, true],
  tokenTimeout: ["10 seconds", false, true],
  refreshMargin: ["60 seconds", true, false],
  subdivisionCacheTtl: ["24 hours", true, false],
  subdivisionFallbackCooldown: ["30 seconds", true, false]
} as const satisfies Record<string, readonly [Duration.DurationInput, boolean, boolean]>

type DurationName = keyof typeof durations

// Only an absent option takes its default: a null (from untyped config: meant as "none"? `maxRetries: null` would be 2
// retries) is checked as given, and refused, as a per-call override's is.
const orDefault = <A, B>(value: A | undefined, fallback: B): A | B => value === undefined ? fallback : value

const duration = (
  options: Options,
  name: DurationName
): Either.Either<Duration.Duration, ConfigError.ConfigError> => {
  const [fallback, allowZero, timer] = durations[name]
  return Either.mapLeft(
    Durations.check(orDefault(options[name], fallback), allowZero, timer),
    (problem) => invalid(name, `${name} ${problem}`)
  )
}

// `value`, unless a rule (taken in order) is broken: then the first broken rule's message, under `path`.
const checked = <A>(
  value: A,
  path: string,
  ...rules: ReadonlyArray<readonly [ok: () => boolean, message: string]>
): Either.Either<A, ConfigError.ConfigError> => {
  const broken = rules.find(([ok]) => !ok())
  return broken === undefined ? Either.right(value) : Either.left(invalid(path, broken[1]))
}

// Every option checked on its own, so that all problems are told at once, not one per attempt. `environment` is
// checked apart from the base URL it picks: a base URL given (which overrides it) is checked whatever it is.
type Checked = {
  readonly [K in keyof Resolved | "environment"]: Either.Either<
    K extends keyof Resolved ? Resolved[K] : Environment,
    ConfigError.ConfigError
  >
}

const checks = (options: Options): Checked => {
  const { clientId, userAgent } = options
  const clientSecret = Redacted.isRedacted(options.clientSecret)
    ? options.clientSecret as Redacted.Redacted<string>
    : Redacted.make(options.clientSecret)
  // Undefined for a `Redacted` wiped: refused as no secret, a `ConfigError`, not a defect.
  const secret = Wiped.valueOf(clientSecret)
  const environment = orDefault(options.environment, "sandbox")
  const knownEnvironment = environment === "sandbox" || environment === "production"
  const maxRetries = orDefault(options.maxRetries, 2)
  const slotCount = options.maxConcurrentRequests
  const retryBudget = orDefault(options.retryBudget, 20)
  const mode = orDefault(options.subdivisionMode, "fallback")
  const tracePropagation = orDefault(options.tracePropagation, false)
  return {
    clientId: checked(
      clientId,
      "clientId",
      [() => typeof clientId === "string" && clientId.trim() !== "", "clientId must be a non-empty string"],
      // A lone surrogate is lost in UTF-8 (two such ids would share one token store key); a control character or a
      // bidi override in an id is a paste gone wrong, and would reach every log line that names the client. First:
      // a bidi override or isolate at either end is one too, not as padding.
      [
        () => Printable.printable(clientId) === clientId,
        "clientId must hold no control characters, bidirectional overrides or lone surrogates"
      ],
      // Sent as is, a pasted space (or a zero-width one) would only show as a 401 from the token call.
      [() => !Padded.isPadded(clientId), `clientId ${Padded.rule}`]
    ),
    clientSecret: checked(
      clientSecret,
      "clientSecret",
      [
        () => typeof secret === "string" && secret !== "",
        "clientSecret must be a non-empty string (given as a Redacted, one not wiped)"
      ],
      // A secret read from a file or a pasted one often brings a newline or a space along; said here (without the
      // value), not as a 401 from the token call.
      [
        // A C0 control (a C string's NUL), DEL, a C1 control or a zero-width space too, as a webhook secret is checked:
        // sent, it would only be a 401.
        () => typeof secret !== "string" || !Padded.isPadded(secret),
        `clientSecret ${Padded.rule}`
      ],
      // UTF-8 sends a lone surrogate half as U+FFFD, a secret other than the one given, which two such secrets would
      // share, and their token store key with it.
      [
        () => typeof secret !== "string" || !/\p{Cs}/u.test(secret),
        "clientSecret must hold no lone surrogate halves (UTF-8 would send another secret)"
      ]
    ),
    environment: checked(environment, "environment", [
      () => knownEnvironment,
      `environment must be "sandbox" or "production"`
    ]),
    baseUrl: Either.flatMap(
      BaseUrl.parse(orDefault(options.baseUrl, baseUrls[knownEnvironment ? environment : "sandbox"])),
      (url) => contradicts(options.environment, url)
    ),
    timeout: duration(options, "timeout"),
    deadline: duration(options, "deadline"),
    maxRetries: checked(maxRetries, "maxRetries", [
      () => Number.isSafeInteger(maxRetries) && maxRetries >= 0 && maxRetries <= 10,
      "maxRetries must be a whole number from 0 to 10"
    ]),
    maxRetryAfter: duration(options, "maxRetryAfter"),
    maxConcurrentRequests: checked(slotCount, "maxConcurrentRequests", [
      () => slotCount === undefined || (Number.isSafeInteger(slotCount) && slotCount > 0),
      "maxConcurrentRequests must be a whole number of 1 or more"
    ]),
    retryBudget: checked(retryBudget, "retryBudget", [
      () =>
        retryBudget === "unlimited" || (Number.isSafeInteger(retryBudget) && retryBudget >= 0 && retryBudget <= 100),
      `retryBudget must be a whole number from 0 to 100 (a percentage), or "unlimited"`
    ]),
    tokenTimeout: duration(options, "tokenTimeout"),
    refreshMargin: duration(options, "refreshMargin"),
    tracePropagation: checked(tracePropagation, "tracePropagation", [
      () => typeof tracePropagation === "boolean",
      "tracePropagation must be true or false"
    ]),
    userAgent: checked(
      // Built from text only: anything else (a symbol, an object with no `toString`) would throw here.
      typeof userAgent !== "string" || userAgent === "" ? `effect-fin/${version}` : `effect-fin/${version} ${userAgent}`,
      "userAgent",
      [
        () => userAgent === undefined || (typeof userAgent === "string" && /^[\x20-\x7e]*$/.test(userAgent)),
        "userAgent must be printable ASCII text"
      ],
      // Sent on every request: a long one is refused by servers (431) only once a call is made.
      [() => typeof userAgent !== "string" || userAgent.length <= 512, "userAgent must be at most 512 characters"]
    ),
    subdivisionMode: checked(mode, "subdivisionMode", [
      () => mode === "online" || mode === "offline" || mode === "fallback",
      `subdivisionMode must be "online", "offline" or "fallback"`
    ]),
    subdivisionCacheTtl: duration(options, "subdivisionCacheTtl"),
    subdivisionFallbackCooldown: duration(options, "subdivisionFallbackCooldown")
  }
}

// The problems the checks found, but those of the options in `skip` (values that could not be read at all).
const problems = (results: Checked, skip: ReadonlySet<string>): Array<ConfigError.ConfigError> =>
  (Object.values(results) as ReadonlyArray<Either.Either<unknown, ConfigError.ConfigError>>).flatMap((result) =>
    Either.isLeft(result) && !(ConfigError.isInvalidData(result.left) && skip.has(result.left.path[0]!))
      ? [result.left]
      : []
  )

// Keys that are none of the options: `maxRetry: 0` would otherwise leave the default of 2 retries without a word.
const unknownOptions = (options: object, known: Checked): Array<ConfigError.ConfigError> =>
  OptionNames.unknown(options, known).map((shown) => invalid(shown, `${shown} is no option of FinConfig.Options`))

const allOf = (errors: ReadonlyArray<ConfigError.ConfigError>): ConfigError.ConfigError =>
  errors.reduce((all, error) => ConfigError.And(all, error))

/**
 * Validates options and fills in defaults; every problem is a `ConfigError` naming the option (several problems: an
 * `And` of them, all told at once).
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = (options: Options): Effect.Effect<Resolved, ConfigError.ConfigError> =>
  Effect.suspend(() => {
    // From JavaScript or a cast: said as the other problems are, not thrown.
    if (typeof options !== "object" || options === null) {
      return Effect.fail(ConfigError.InvalidData([], "the options must be an object (FinConfig.Options)"))
    }
    const all = checks(options)
    const errors = [...unknownOptions(options, all), ...problems(all, new Set())]
    const { environment: _environment, ...results } = all
    return errors.length === 0 ? Effect.succeed(Either.getOrThrow(Either.all(results))) : Effect.fail(allOf(errors))
  })

/**
 * A layer of the resolved options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<FinConfig, ConfigError.ConfigError> =>
  Layer.effect(FinConfig, resolve(options))

// Config.duration reads "-5 seconds" as zero: a negative duration is refused here, in the words `resolve` uses for zero
// where zero is not allowed. Values are quoted, so that stray whitespace shows.
const durationVar = (option: DurationName): Config.Config<Duration.Duration> => {
  const name = variables[option]
  return Config.nested(
    Config.mapOrFail(Config.string(), (text) =>
      Durations.isNegativeOrNaN(text)
        ? Either.left(
          ConfigError.InvalidData([], `${name} must be ${durations[option][1] ? "zero or more" : "greater than zero"}`)
        )
        : Either.fromOption(
          Duration.decodeUnknown(text),
          () =>
            ConfigError.InvalidData(
              [],
              Durations.meant(text) === undefined
                ? `Expected a duration with its unit (e.g. "30 seconds", "500 millis") but received ${
                  OptionNames.shown(text)
                }`
                : `Expected a duration Effect reads but received ${OptionNames.shown(text)}: ${
                  Durations.howToWrite(text, durations[option][1], durations[option][2])
                }`
            )
        )),
    name
  )
}

// Config.integer reads with `Number`: an empty value (`FIN_MAX_RETRIES=` in a container spec) would be 0, retries off
// without a word, and " 3", "3.0" or "1e1" would pass. Only digits are a count (or the one word given, in any case).
function countVar(name: string): Config.Config<number>
function countVar<W extends string>(name: string, word: W): Config.Config<number | W>
function countVar<W extends string>(name: string, word?: W): Config.Config<number | W> {
  return Config.nested(
    Config.mapOrFail(Config.string(), (text): Either.Either<number | W, ConfigError.ConfigError> =>
      /^\d+$/.test(text)
        ? Either.right(Number(text))
        : word !== undefined && text.toLowerCase() === word
        ? Either.right(word)
        : Either.left(ConfigError.InvalidData(
          [],
          `Expected a whole number (digits only)${word === undefined ? "" : ` or ${word}`} but received ${
            OptionNames.shown(text)
          }`
        ))),
    name
  )
}

// Config.boolean knows only lower case: `TRUE` or `True` (as YAML, .NET and Python write them) would be refused.
// The same words in any case; anything else is told with the words that are understood.
const booleanVar = (name: string): Config.Config<boolean> =>
  Config.nested(
    Config.mapOrFail(Config.string(), (text) => {
      const word = text.toLowerCase()
      return ["true", "yes", "on", "1"].includes(word)
        ? Either.right(true)
        : ["false", "no", "off", "0"].includes(word)
        ? Either.right(false)
        : Either.left(ConfigError.InvalidData(
          [],
          `Expected true/false, yes/no, on/off or 1/0 (in any case) but received ${OptionNames.shown(text)}`
        ))
    }),
    name
  )

const variables: { readonly [K in keyof Options]-?: string } = {
  clientId: "FIN_CLIENT_ID",
  clientSecret: "FIN_CLIENT_SECRET",
  environment: "FIN_ENVIRONMENT",
  baseUrl: "FIN_BASE_URL",
  timeout: "FIN_TIMEOUT",
  deadline: "FIN_DEADLINE",
  maxRetries: "FIN_MAX_RETRIES",
  maxRetryAfter: "FIN_MAX_RETRY_AFTER",
  maxConcurrentRequests: "FIN_MAX_CONCURRENT_REQUESTS",
  retryBudget: "FIN_RETRY_BUDGET",
  tokenTimeout: "FIN_TOKEN_TIMEOUT",
  refreshMargin: "FIN_REFRESH_MARGIN",
  tracePropagation: "FIN_TRACE_PROPAGATION",
  userAgent: "FIN_USER_AGENT",
  subdivisionMode: "FIN_SUBDIVISION_MODE",
  subdivisionCacheTtl: "FIN_SUBDIVISION_CACHE_TTL",
  subdivisionFallbackCooldown: "FIN_SUBDIVISION_FALLBACK_COOLDOWN"
}

// A problem `resolve` found in an option, told in terms of the variable the value came from.
const inVariables = (error: ConfigError.ConfigError): ConfigError.ConfigError => {
  if (!ConfigError.isInvalidData(error) || error.path.length !== 1) return error
  const option = error.path[0]!
  const variable = (variables as Record<string, string>)[option]
  return variable === undefined
    ? error
    // The environment clash names the other option too.
    : ConfigError.InvalidData(
      [variable],
      error.message.replace(new RegExp(`^${option}\\b`), variable)
        .replace(", and environment is", ", and FIN_ENVIRONMENT is")
    )
}

// One Config per option, each reading its variable.
const envOptions = {
  // Read as plain text: `resolve` says what is wrong with it, in the words it uses for the secret.
  clientId: Config.string("FIN_CLIENT_ID"),
  // Read as text and wrapped, not `Config.redacted`: that one replaces a missing variable's message with "<redacted>",
  // and the provider's own message is the one that names the variable as it is read (under a nested provider).
  clientSecret: Config.map(Config.string("FIN_CLIENT_SECRET"), Redacted.make),
  environment: Config.option(ConfigLiteral.literal("FIN_ENVIRONMENT", "sandbox", "production")),
  baseUrl: Config.option(Config.string("FIN_BASE_URL")),
  timeout: Config.option(durationVar("timeout")),
  deadline: Config.option(durationVar("deadline")),
  maxRetries: Config.option(countVar("FIN_MAX_RETRIES")),
  maxRetryAfter: Config.option(durationVar("maxRetryAfter")),
  maxConcurrentRequests: Config.option(countVar("FIN_MAX_CONCURRENT_REQUESTS")),
  retryBudget: Config.option(countVar("FIN_RETRY_BUDGET", "unlimited")),
  tokenTimeout: Config.option(durationVar("tokenTimeout")),
  refreshMargin: Config.option(durationVar("refreshMargin")),
  tracePropagation: Config.option(booleanVar("FIN_TRACE_PROPAGATION")),
  userAgent: Config.option(Config.string("FIN_USER_AGENT")),
  subdivisionMode: Config.option(ConfigLiteral.literal("FIN_SUBDIVISION_MODE", "online", "offline", "fallback")),
  subdivisionCacheTtl: Config.option(durationVar("subdivisionCacheTtl")),
  subdivisionFallbackCooldown: Config.option(durationVar("subdivisionFallbackCooldown"))
}

type EnvValues = { readonly [K in keyof typeof envOptions]: Config.Config.Success<(typeof envOptions)[K]> }

// Options from what was read; a value that could not be read (`undefined`) is left out.
const toOptions = ({ clientId, clientSecret, ...rest }: Partial<EnvValues>): Options => ({
  clientId: clientId!,
  clientSecret: clientSecret!,
  ...Object.fromEntries(
    Object.entries(rest).flatMap(([key, value]) =>
      value === undefined ? [] : [[key, Option.getOrUndefined(value as Option.Option<unknown>)]]
    )
  )
})

/**
 * Options read from `FIN_*` variables: `FIN_CLIENT_ID`, `FIN_CLIENT_SECRET` (redacted), `FIN_ENVIRONMENT`,
 * `FIN_BASE_URL`, `FIN_TIMEOUT`, `FIN_DEADLINE`, `FIN_MAX_RETRIES`, `FIN_MAX_RETRY_AFTER`,
 * `FIN_MAX_CONCURRENT_REQUESTS`, `FIN_RETRY_BUDGET`, `FIN_TOKEN_TIMEOUT`, `FIN_REFRESH_MARGIN`,
 * `FIN_TRACE_PROPAGATION`, `FIN_USER_AGENT`, `FIN_SUBDIVISION_MODE`, `FIN_SUBDIVISION_CACHE_TTL`,
 * `FIN_SUBDIVISION_FALLBACK_COOLDOWN`. Durations are written like `30 seconds` or `500 millis`. Read, not checked:
 * a value it reads is checked where the options are resolved, and a problem then names the option (`maxRetries`);
 * `optionsFromEnv` (and `FinClient.layerFromEnv`) checks them, naming the variable.
 * Under a nested `ConfigProvider` (effect 3.22), which reads every value as a list, a value holding a comma fails the
 * whole read: with a `MissingData` naming no variable ("The element at index 1 in a sequence ... was missing"), or,
 * when a piece does not read (`FIN_TIMEOUT=1,500 millis`), an `InvalidData` about that piece; `optionsFromEnv` names
 * it.
 *
 * @since 0.1.0
 * @category config
 */
export const fromEnv: Config.Config<Options> = Config.map(Config.all(envOptions), toOptions)

// A variable that is not set, said so. Under a nested provider (`ConfigProvider.nested("A")`) the path holds its
// prefix, which only the provider knows how to join (`A_FIN_CLIENT_ID` from the environment): its message is kept.
const notSetSaid = (error: ConfigError.ConfigError): ConfigError.ConfigError =>
  ConfigError.isMissingData(error) && error.path.length === 1
    ? ConfigError.MissingData(error.path, `${error.path[0]} is not set`)
    : error

// `ConfigProvider.nested` (effect 3.22) reads every value as a list cut at the provider's separator (`seqDelim`, a
// comma unless set) and gives the first piece: a secret `ab,cd` would be read as `ab`, to fail only as a 401, and
// `FIN_MAX_RETRIES=1,000` as 1. A variable is cut when it reads as a list of several pieces whose first is the text
// read: a provider that reads it whole gives more than that piece (a separator and what follows), so a value holding
// the separator is not refused there (a secret `ab|cd` under `fromEnv({ seqDelim: "|" })`); nor is a comma, when the
// separator is another. Read as text, whatever the option's type: its value is never shown.
const cutVariable = (name: string): Effect.Effect<Option.Option<ConfigError.ConfigError>> =>
  Effect.map(
    Effect.option(Effect.all([Config.string(name), Config.array(Config.string(), name)])),
    Option.flatMap(([text, pieces]) =>
      pieces.length > 1 && pieces[0] === text
        ? Option.some(ConfigError.InvalidData(
          [name],
          `${name} holds a list separator (a comma, unless the provider was given another), where the configuration ` +
            `provider cut it (a nested ConfigProvider reads every value as a list): it would be used cut; give it ` +
            `through a provider that is not nested`
        ))
        : Option.none()
    )
  )

/**
 * `fromEnv`, checked as `resolve` checks options, every problem naming its variable (`FIN_MAX_RETRIES`, not
 * `maxRetries`), so a misconfigured deployment is told what to change: variables that cannot be read and values the
 * checks refuse, all at once. A value that a nested `ConfigProvider` cut at a comma (it reads every value as a list)
 * is refused, never used cut.
 *
 * @since 0.1.0
 * @category config
 */
export const optionsFromEnv: Effect.Effect<Options, ConfigError.ConfigError> = Effect.gen(function*() {
  const read = yield* Effect.all(Record.map(envOptions, (config: Config.Config<unknown>) => Effect.either(config)))
  // Keys whose value came cut: refused as such, not also as the cut value did not read (`FIN_TIMEOUT=1,500 millis`
  // read as "1") or by `checks` (which saw the cut value).
  const cut = new Map<string, ConfigError.ConfigError>()
  for (const [key, name] of Object.entries(variables)) {
    const error = yield* cutVariable(name)
    if (Option.isSome(error)) cut.set(key, error.value)
  }
  const unread = Object.keys(read).filter((key) => Either.isLeft(read[key as keyof typeof read]))
  const options = toOptions(Record.map(read, Either.getOrUndefined) as Partial<EnvValues>)
  const errors = [
    ...Object.entries(read).flatMap(([key, result]) =>
      Either.isLeft(result) && !cut.has(key) ? [notSetSaid(result.left)] : []
    ),
    ...cut.values(),
    ...problems(checks(options), new Set([...unread, ...cut.keys()])).map(inVariables)
  ]
  return errors.length === 0 ? options : yield* Effect.fail(allOf(errors))
})
