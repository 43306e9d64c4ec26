/**
 * The `effect-fin` command line: quotes, subdivisions, webhook verification and the local emulator, configured from
 * `FIN_*` variables. Human tables by default, `--json` for machines; every failure is one line starting with the error
 * tag, and a non-zero exit code.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import type * as Usage from "@effect/cli/Usage"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as NodeFs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import * as CountryCode from "../CountryCode.js"
import * as Emulator from "../emulator/Emulator.js"
import * as FeeService from "../FeeService.js"
import * as FinClient from "../FinClient.js"
import * as FinConfig from "../FinConfig.js"
import * as FinError from "../FinError.js"
import * as Amounts from "../internal/amount.js"
import * as Bytes from "../internal/bytes.js"
import * as ConfigLiteral from "../internal/configLiteral.js"
import * as Issues from "../internal/issues.js"
import * as Loopback from "../internal/loopback.js"
import * as Padded from "../internal/padded.js"
import * as Printable from "../internal/printable.js"
import * as Retry from "../internal/retry.js"
import * as SignatureHeaders from "../internal/signatureHeaders.js"
import { version } from "../internal/version.js"
import * as UndiciHttpClient from "../node/UndiciHttpClient.js"
import * as Subdivisions from "../Subdivisions.js"
import * as SubdivisionService from "../SubdivisionService.js"
import * as Webhooks from "../Webhooks.js"
import * as SubdivisionsInternal from "../internal/subdivisions.js"
import * as Snapshot from "../../scripts/lib/main.js"
import * as FailureLine from "./failureLine.js"
import * as Render from "./render.js"

const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON instead of a table (and a failure as one line of JSON on stderr)")
)

const print = (asJson: boolean, value: unknown, human: () => string) =>
  Console.log(asJson ? Render.json(value) : human())

// Failures already printed (as JSON): `run` only sets the exit code. The error itself goes on, so a program that
// mounts `command` still gets it (a FinError, to `catchTag`), not a marker. Kept and looked up unwrapped: an error
// failed under a span travels as a Proxy of itself, a new one each time it is failed anew (as the TokenProvider found).
const printedAsJson = new WeakSet<object>()

// With `--json`, a failure is printed as JSON (`Render.errorJson`) here, where the flag is known, rather than as
// `run`'s text line.
const failingAsJson =
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
const clientLayer = Layer.unwrapEffect(Effect.map(FinConfig.optionsFromEnv, (options) =>
  FinClient.layer({ ...options, subdivisionFallbackCooldown: options.subdivisionFallbackCooldown ?? "0 seconds" })
)).pipe(
  Layer.provide(NodeHttpClient.layerUndiciWithoutDispatcher),
  Layer.provide(UndiciHttpClient.layerDispatcherFromEnvProxy)
)

// ---------------------------------------------------------------------------------------------------------------------
// quote
// ---------------------------------------------------------------------------------------------------------------------

// The request's fields by the flags that give them: a refusal names what was typed.
const flags = {
  source_currency: "--from",
  destination_currency: "--to",
  source_amount: "--amount",
  destination_amount: "--receive",
  beneficiary_id: "--beneficiary"
} as const

const flagWords = (text: string): string =>
  text
    .replace(/\b(source_currency|destination_currency|source_amount|destination_amount|beneficiary_id)\b/g, (field) =>
      flags[field as keyof typeof flags])
    // Currencies are taken in any case here (upper-cased before the check).
    .replace("three upper-case letters", "three letters")

// The request's refusal said in the terms of the command line: its flags, not the fields they fill.
const inFlags = (error: FinError.RequestValidationError): FinError.RequestValidationError => {
  const issues = error.issues.map((issue) =>
    new FinError.Issue({ path: flagWords(issue.path), expected: flagWords(issue.expected) })
  )
  return new FinError.RequestValidationError({ message: `Invalid quote: ${Issues.summarize(issues)}`, issues })
}

// Plain decimal notation only: `Number` would also read "0x10" as 16, "1e2" as 100 and " 12" as 12. A decimal with
// more significant digits than a number keeps (90071992547409.99 reads as ...409.98) is refused too: the service would
// quote another amount.
const amount = (
  field: "source_amount" | "destination_amount",
  text: string
): Either.Either<number, FinError.Issue> => {
  const refuse = (expected: string) => Either.left(new FinError.Issue({ path: field, expected }))
  // A negative amount is said as the schema says a zero one, not as a matter of notation.
  if (/^-\d+(\.\d+)?$/.test(text)) return refuse(Amounts.EXPECTED)
  if (!/^\d+(\.\d+)?$/.test(text)) {
    return refuse("an amount in plain decimal notation (digits, and any fraction after a dot: 1000 or 12.50)")
  }
  const value = Number(text)
  // Leading zeros and the fraction's trailing ones are no significant digits.
  const [whole = "", fraction = ""] = text.split(".")
  const decimals = fraction.replace(/0+$/, "")
  const digits = whole.replace(/^0+(?=\d)/, "") + (decimals === "" ? "" : `.${decimals}`)
  // What is sent is the number's shortest form (JSON's): it must be what was typed. Past MAX_SAFE_INTEGER the schema
  // refuses the amount anyway, with its own message.
  const exact = value > Number.MAX_SAFE_INTEGER || plainDecimal(value) === digits
  if (!exact) return refuse("an amount with no more significant digits than a number keeps exactly (15 always are)")
  // Said here in the terms of a typed amount (the schema's own message is about computed ones).
  return decimals.length > Amounts.MAX_DECIMALS
    ? refuse(`an amount with at most ${Amounts.MAX_DECIMALS} decimal places`)
    : Either.right(value)
}

// The shortest decimal that reads back as `value` (as JSON writes it), in plain notation: 1e-7 as 0.0000001.
const plainDecimal = (value: number): string => {
  if (value < 0) return `-${plainDecimal(-value)}`
  const shortest = String(value)
  const exponent = /^(\d)(?:\.(\d+))?e-(\d+)$/.exec(shortest)
  return exponent === null ? shortest : `0.${"0".repeat(Number(exponent[3]) - 1)}${exponent[1]}${exponent[2] ?? ""}`
}

// A figure of a quote for people: without a float artefact's digits, in plain decimal.
const shown = (value: number): string => plainDecimal(value < 0 ? -Amounts.trimmed(-value) : Amounts.trimmed(value))

// A currency typed by hand, in any case, as country codes are: three ASCII letters only, as Unicode's upper case
// would make "uſd" a USD.
const currency = (typed: string) => /^[a-z]{3}$/i.test(typed) ? typed.toUpperCase() : typed

const quote = Command.make(
  "quote",
  {
    from: Options.text("from").pipe(Options.withDescription("Source currency (ISO 4217, e.g. USD; any case)"), Options.optional),
    to: Options.text("to").pipe(Options.withDescription("Destination currency (e.g. CAD; any case)"), Options.optional),
    amount: Options.text("amount").pipe(Options.withDescription("Amount to send, in the source currency (plain decimal: 100 or 12.50)"), Options.optional),
    receive: Options.text("receive").pipe(
      Options.withDescription("Amount to receive, in the destination currency (plain decimal)"),
      Options.optional
    ),
    beneficiary: Options.text("beneficiary").pipe(
      Options.withDescription(
        "Beneficiary UUID (adds its developer fee; paid in its account's currency, so not with --to)"
      ),
      Options.optional
    ),
    json
  },
  (args) =>
    Effect.gen(function*() {
      // Checked by FeeService.validate, exactly as a program's request is: a bad flag is a RequestValidationError,
      // naming the flag.
      // Every issue at once, as `calculate` tells them: a refused amount or --to with --beneficiary does not hide the
      // other flags' issues.
      const request = yield* Effect.gen(function*() {
        const issues: Array<FinError.Issue> = []
        // With a beneficiary the service quotes in its account's currency, whatever --to says: a script that named
        // EUR would take a quote in CAD for one in EUR, exit 0. Which one it is cannot be known before sending.
        if (Option.isSome(args.beneficiary) && Option.isSome(args.to)) {
          const expected = "no destination_currency with beneficiary_id (its account's currency is quoted)"
          issues.push(new FinError.Issue({ path: "destination_currency", expected }))
        }
        // A refused amount stands as 1 for the request's own check, so that its rules (exactly one amount) are told.
        const amountOf = (field: "source_amount" | "destination_amount", text: Option.Option<string>) =>
          Option.match(text, {
            onNone: () => ({}),
            onSome: (typed) =>
              Either.match(amount(field, typed), {
                onLeft: (issue) => (issues.push(issue), { [field]: 1 }),
                onRight: (value) => ({ [field]: value })
              })
          })
        const checked = yield* Effect.either(FeeService.validate({
          ...Option.match(args.from, { onNone: () => ({}), onSome: (v) => ({ source_currency: currency(v) }) }),
          ...Option.match(args.to, { onNone: () => ({}), onSome: (v) => ({ destination_currency: currency(v) }) }),
          ...amountOf("source_amount", args.amount),
          ...amountOf("destination_amount", args.receive),
          ...Option.match(args.beneficiary, { onNone: () => ({}), onSome: (v) => ({ beneficiary_id: v }) })
        }))
        const all = [...issues, ...(Either.isLeft(checked) ? checked.left.issues : [])]
        if (all.length > 0 || Either.isLeft(checked)) {
          return yield* new FinError.RequestValidationError({
            message: `Invalid fee calculation request: ${Issues.summarize(all)}`,
            issues: all
          })
        }
        return checked.right
      }).pipe(Effect.mapError(inFlags))
      const result = yield* FeeService.calculate(request).pipe(Effect.provide(clientLayer))
      // Said as the library reads it (`FeeQuote.isValidAt`): a quote with no end, or past it, is not to be relied on.
      const now = yield* DateTime.now
      const validTill = Option.match(result.valid_till, {
        onNone: () => "(not given: not to be taken as valid)",
        onSome: (till) => `${DateTime.formatIso(till)}${FeeService.FeeQuote.isValidAt(result, now) ? "" : " (expired)"}`
      })
      yield* print(args.json, { ...result, valid_till: Option.getOrNull(Option.map(result.valid_till, DateTime.formatIso)) }, () =>
        // Figures in plain decimal, as amounts are typed (`String` writes one under 1e-6 as 1e-7).
        // A float artefact of the service's (0.30000000000000004) shown as the figure it stands for, as the
        // client's own check of the quote reads it (`Amounts.trimmed`); --json keeps the number as sent.
        Render.pairs([
          ["send", `${shown(result.source_amount)} ${result.source_currency}`],
          ["receive", `${shown(result.destination_amount)} ${result.destination_currency}`],
          ["exchange rate", shown(result.exchange_rate)],
          [
            "fee",
            `${shown(result.fee.total)} (fixed ${shown(result.fee.fixed)}, percentage ${
              shown(result.fee.percentage)
            }${result.fee.is_fee_applied ? "" : ", not applied"})`
          ],
          ["valid till", validTill]
        ]))
    }).pipe(failingAsJson(args.json))
).pipe(Command.withDescription(
  "Quote a transfer: POST /v1/fee-calculation (with FIN_CLIENT_ID and FIN_CLIENT_SECRET; FIN_BASE_URL for the emulator)"
))

// ---------------------------------------------------------------------------------------------------------------------
// subdivisions
// ---------------------------------------------------------------------------------------------------------------------

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

const subdivisions = Command.make(
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

// ---------------------------------------------------------------------------------------------------------------------
// webhook verify
// ---------------------------------------------------------------------------------------------------------------------

// The body, at most the handler's default limit, read once (not copied per chunk). The platform's reader ends at once
// when a signal interrupts it; an async iterator over stdin would wait for a next chunk that may never come.
const readStdin = Effect.logDebug("effect-fin: reading the webhook body from standard input").pipe(
  Effect.zipRight(
    Bytes.readAtMost(
      NodeStream.fromReadable<Error, Uint8Array>(
        () => process.stdin,
        (cause) => new Error(`could not read standard input: ${String(cause)}`)
      ),
      Webhooks.defaultMaxBodySize
    )
  ),
  Effect.flatMap(Option.match({
    onNone: () =>
      new FinError.WebhookVerificationError({
        reason: "body_too_large",
        message: `the body is larger than ${Webhooks.defaultMaxBodySize} bytes`
      }),
    // No delivery is empty: standard input was left unset or closed (a body to pipe in forgotten), which a signature
    // check would only call a bad signature.
    onSome: (body) =>
      body.length === 0
        ? new FinError.WebhookVerificationError({
          reason: "malformed_body",
          message: "standard input is empty: give the body there (effect-fin webhook verify ... < body.json)"
        })
        : Effect.succeed(body)
  })),
  Effect.scoped
)

const verify = Command.make(
  "verify",
  {
    signature: Options.text("signature").pipe(Options.withDescription("The x-fin-signature header (hex)")),
    // Text, checked as the header is (any case, blanks around it): what a log shows can be pasted as it is.
    algorithm: Options.text("algorithm").pipe(
      Options.withDescription(`The x-fin-signature-algorithm header: ${Webhooks.algorithms.join(", ")} (any case)`),
      Options.withDefault("sha256")
    ),
    json
  },
  (args) =>
    Effect.gen(function*() {
      // The secret comes from the environment only: a command-line argument is visible to `ps`.
      const secret = yield* Config.redacted("FIN_WEBHOOK_SECRET")
      // Said as a problem of the variable, before the body is waited for (as an unset one is), not as a refused
      // delivery once it has been read.
      const text = Redacted.value(secret)
      if (text === "" || Padded.isPadded(text)) {
        return yield* Effect.fail(ConfigError.InvalidData(
          ["FIN_WEBHOOK_SECRET"],
          text === ""
            ? "FIN_WEBHOOK_SECRET is empty"
            : `FIN_WEBHOOK_SECRET ${Padded.rule}`
        ))
      }
      // Read and refused as the client's own configuration reads it: an event of the other environment is refused, as a
      // handler would refuse it.
      const environment = yield* Config.option(ConfigLiteral.literal("FIN_ENVIRONMENT", "sandbox", "production"))
      // The flags are checked before the body is waited for too: a mistyped --signature or --algorithm is said at
      // once, not once standard input ends (on a terminal, only at Ctrl-D), and named as the flags.
      const headers = { [Webhooks.signatureHeader]: args.signature, [Webhooks.algorithmHeader]: args.algorithm }
      yield* SignatureHeaders.check(headers, { signature: "--signature", algorithm: "--algorithm" })
      const body = yield* readStdin
      const event = yield* Webhooks.verify(
        body,
        headers,
        secret,
        Option.match(environment, { onNone: () => ({}), onSome: (environment) => ({ environment }) })
      )
      const signed = new TextDecoder().decode(body)
      // The event as it was signed, not read back through numbers (one past 2^53 would print as another, one past
      // 1e308 as null): a script reading `event` gets what the signature covers.
      if (args.json) return yield* Console.log(`{\n  "verified": true,\n  "event": ${Render.compactJson(signed)}\n}`)
      const sent = JSON.parse(signed)
      yield* Console.log(
        Render.pairs([
          ["verified", "yes"],
          [
            "event",
            `${event.type === "Unknown" ? `${event.received_type} (not a documented type)` : event.type} ${event.id}`
          ],
          ["reference", event.event_reference_id],
          ["sandbox mode", Option.match(event.sandbox_mode, { onNone: () => "not said", onSome: String })],
          // As sent: the service's timestamps have microseconds, which a DateTime does not keep.
          ["created at", sent.event.created_at]
        ])
      )
    }).pipe(failingAsJson(args.json))
).pipe(Command.withDescription(
    "Verify a webhook body read from standard input (secret from FIN_WEBHOOK_SECRET; with FIN_ENVIRONMENT set, an " +
      "event of the other environment is refused)"
  ))

const webhook = Command.make("webhook").pipe(
  Command.withDescription("Webhook tools"),
  Command.withSubcommands([verify])
)

// ---------------------------------------------------------------------------------------------------------------------
// emulator
// ---------------------------------------------------------------------------------------------------------------------

const noOptions: Emulator.Options = {}

// A value as one word of a POSIX shell, so the printed line works pasted: as it is when nothing in it is special to
// the shell, else in single quotes (an options file's credentials may hold a space or a quote).
const shellWord = (value: string): string =>
  /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`

// The most an options file may hold: the emulator's admin API takes bodies up to 1 MiB too.
const MAX_OPTIONS_BYTES = 1024 * 1024

// An `--options` file read up to its limit (a FIFO or a device too), and parsed: a file that is not JSON is named, not
// quoted (the wrong path could be any file, a credentials file say, which a parser's message would show the start of).
const readOptionsFile = (path: string) =>
  Effect.gen(function*() {
    const invalid = (message: string) => ValidationError.invalidValue(HelpDoc.p(`--options: ${path}: ${message}`))
    const fs = yield* FileSystem.FileSystem
    // As `Options.file` said it (a path that does not exist is the usage error a script knows).
    if (!(yield* Effect.orElseSucceed(fs.exists(path), () => false))) {
      return yield* Effect.fail(ValidationError.invalidValue(HelpDoc.p(`Path '${path}' must exist`)))
    }
    // A Node stream, not `fs.stream`: that one reads at offsets, which a pipe (`<(jq ...)`, a FIFO) refuses (ESPIPE).
    const stream = NodeStream.fromReadable<Error, Uint8Array>(
      () => NodeFs.createReadStream(path),
      (cause) => cause instanceof Error ? cause : new Error(String(cause))
    )
    // Disconnected: Ctrl-C while a pipe with no writer yet is being opened (its open waits on a thread of the pool)
    // ends the command at once, rather than once something writes to the pipe.
    const { bytes, cut } = yield* Effect.scoped(Bytes.readUpTo(stream, MAX_OPTIONS_BYTES)).pipe(
      Effect.disconnect,
      Effect.mapError((error) => invalid(`could not be read (${error.message})`))
    )
    if (cut) return yield* Effect.fail(invalid("larger than 1 MiB"))
    const json = yield* Effect.try({
      try: (): unknown => JSON.parse(new TextDecoder().decode(bytes)),
      catch: () => invalid("not JSON")
    })
    return Predicate.isRecord(json)
      ? json as Emulator.Options
      : yield* Effect.fail(invalid("expected a JSON object of options"))
  })

const emulator = Command.make(
  "emulator",
  {
    // Digits only: `Options.integer` reads with `Number`, so "0x10" would be port 16, "1e3" 1000 and " 80" 80. A number
    // past 65535 is a usage error too, not the emulator's failure to start.
    port: Options.text("port").pipe(
      Options.withDescription("Port to listen on (default 4010, or the options file's; 0: a free port)"),
      Options.mapEffect((text) =>
        /^\d{1,5}$/.test(text) && Number(text) <= 65535
          ? Effect.succeed(Number(text))
          : Effect.fail(ValidationError.invalidValue(
            HelpDoc.p(`--port: expected a port number in digits (0 to 65535), got ${JSON.stringify(text)}`)
          ))
      ),
      Options.optional
    ),
    host: Options.text("host").pipe(
      Options.withDescription(
        "Address to listen on (default 127.0.0.1, or the options file's); on another than loopback the API is open " +
          "to other machines, the admin routes are not"
      ),
      Options.optional
    ),
    production: Options.boolean("production").pipe(
      Options.withDescription("Send webhook events as production ones (sandbox_mode false), for a handler expecting them")
    ),
    // Everything else `Emulator.make` takes, for a run started from a shell: a seed for repeatable fault rates,
    // short token lifetimes, the older token envelope, fault rules from the start...
    // Text, not `Options.file`: that one refuses anything but a regular file, so `--options <(jq ... )` (a FIFO) or a
    // device would be a usage error before `readOptionsFile`, which reads those too, saw it.
    options: Options.text("options").pipe(
      Options.withPseudoName("file"),
      Options.withDescription(
        "A JSON file of the emulator's other options, as Emulator.make takes them (seed, accessTokenLifetime, " +
          "tokenEnvelope, revokeOnIssue, faults...; the README lists them); --port, --host and --production win"
      ),
      Options.mapEffect(readOptionsFile),
      Options.withDefault(noOptions)
    )
  },
  (args) =>
    Effect.scoped(Effect.gen(function*() {
      const running = yield* Emulator.make({
        ...args.options,
        // (A `null` in the file is passed on, for the emulator to refuse, not read as no port.)
        port: Option.getOrElse(args.port, () => args.options.port === undefined ? 4010 : args.options.port),
        ...Option.match(args.host, { onNone: () => ({}), onSome: (host) => ({ host }) }),
        ...(args.production ? { sandboxMode: false } : {})
      })
      // The emulator's own credentials (test values, or the options file's: never put the service's there), printed
      // so another shell can point the client at it.
      // On an address that is not loopback (`--host 192.0.2.2`) the admin routes answer no one (they take loopback
      // clients only, and the emulator listens on that address alone), and effect-fin's client refuses a plain http
      // baseUrl there: said so, not printed as if either worked.
      const local = Loopback.urlIsLoopback(running.url)
      yield* Console.log(Render.pairs([
        ["emulator", `listening on ${running.url} (Ctrl-C stops it)`],
        [
          "admin",
          local
            ? `${running.url}/__emulator`
            : "loopback clients only, so not on this address (--host 0.0.0.0 serves it on 127.0.0.1 as well)"
        ],
        [
          "use it with",
          `FIN_BASE_URL=${shellWord(running.url)} FIN_CLIENT_ID=${shellWord(running.credentials.clientId)} ` +
          `FIN_CLIENT_SECRET=${shellWord(running.credentials.clientSecret)}`
        ],
        ...(local ? [] : [
          [
            "note",
            "effect-fin's client sends plain http to loopback only: that FIN_BASE_URL is refused (put https in front)"
          ] as const
        ]),
        // Printed as loopback's URL, a wildcard address serves the API to other machines too: said, not left unseen.
        ...(Loopback.isEveryInterface(Option.getOrElse(args.host, () => args.options.host))
          ? [
            ["note", "listening on every interface: the API answers other machines too (admin: loopback only)"] as const
          ]
          : []),
        ["webhooks", `signed with FIN_WEBHOOK_SECRET=${shellWord(running.webhookSecret)}`],
        ...Object.entries(args.options.beneficiaries ?? Emulator.defaultBeneficiaries).map(([id, beneficiary]) =>
          [
            "beneficiary",
            `--beneficiary ${id} (paid in ${beneficiary.currency}${
              beneficiary.developerFee === undefined ? "" : ", with a developer fee"
            })`
          ] as const
        )
      ]))
      return yield* Effect.never
    }))
).pipe(Command.withDescription("Run the local emulator of the service (no credentials needed)"))

// ---------------------------------------------------------------------------------------------------------------------

/**
 * How `run` is started.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions {
  /**
   * The folder of the snapshot bundled with the package: what `cross-check` compares with unless `--out` says
   * otherwise, wherever the command is run from. Default: the installed package's own data/ (found through its
   * exports), as the `effect-fin` binary has it.
   */
  readonly dataDir?: string | undefined
}

// The package's own data/, found through its exports (a self-reference), wherever the bundler put this module (the
// CommonJS build is given this module's URL by tsup): `run` defaults to it, whoever calls it (the binary, or a
// program of the user's through `effect-fin/cli`). Undefined where it cannot be resolved.
const bundledDataDir = (): string | undefined => {
  try {
    return Path.dirname(createRequire(import.meta.url).resolve("effect-fin/data/subdivisions.json"))
  } catch {
    return undefined
  }
}

// The tool's defaults are paths in the effect-fin repository. Installed, `cross-check` reads the bundled snapshot,
// and `snapshot` writes only where `--out` says: the bundled files are never rewritten in place.
const snapshotArgs = (
  sub: "snapshot" | "cross-check",
  rest: ReadonlyArray<string>,
  dataDir: string | undefined
): Either.Either<ReadonlyArray<string>, string> => {
  const args = sub === "snapshot" ? rest : ["--cross-check", ...rest]
  const given = (flag: string) => args.some((arg) => arg === flag || arg.startsWith(`${flag}=`))
  if (given("--help") || given("-h")) return Either.right(args)
  // A writing run's --out that is `dataDir` itself is refused by the tool, which knows it as its `bundledDir`.
  if (given("--out")) return Either.right(args)
  // Never the repository's paths relative to the working folder, which `snapshot` would write into (a user's own
  // project) and `cross-check` could not read: not even where the package's data/ is not found (effect-fin bundled
  // into a program deployed without its node_modules).
  if (given("--cross-check")) {
    return dataDir === undefined
      ? Either.left(
        "effect-fin cross-check: give --out DIR (the folder of the snapshot to compare): effect-fin's own data/ " +
          "could not be found from where it runs (bundled into a program?)"
      )
      : Either.right(["--out", dataDir, ...args])
  }
  return Either.left(
    "effect-fin snapshot: give --out DIR: the snapshot bundled with effect-fin is not rewritten in place " +
      "(in the effect-fin repository, `npm run snapshot` writes data/ and src/)"
  )
}

/**
 * Whether the command line (`process.argv.slice(2)`) runs the emulator, which serves until a signal stops it: the
 * command, not any argument (`webhook verify --signature emulator` is not the emulator). `--log-level` is the one
 * option before a command that takes a value.
 *
 * @since 0.1.0
 * @category running
 */
export const servesUntilStopped = (args: ReadonlyArray<string>): boolean => commandOf(args) === "emulator"

// The command named on the command line: its first word that is no option (nor `--log-level`'s value).
const commandOf = (args: ReadonlyArray<string>): string | undefined =>
  args.find((arg, i) => !arg.startsWith("-") && args[i - 1] !== "--log-level")

/**
 * The `effect-fin` command and its subcommands: `quote`, `subdivisions`, `webhook verify`, `emulator`. `snapshot` and
 * `cross-check` (named in its description) are not among them: `run` dispatches those before this parser sees them,
 * so a program that mounts `command` itself does not get them.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make("effect-fin").pipe(
  Command.withDescription(
    "Fin Orchestration API from the command line, configured by FIN_* variables: FIN_CLIENT_ID and " +
      "FIN_CLIENT_SECRET (for calls to the service), FIN_ENVIRONMENT (sandbox or production), FIN_BASE_URL (the " +
      "emulator's address, say); the README lists the others (FIN_TIMEOUT, FIN_MAX_RETRIES...). Also: " +
      "`effect-fin snapshot --help` (rebuild or check the ISO 3166-2 snapshot) and `effect-fin cross-check --help` " +
      "(compare it with the API)"
  ),
  Command.withSubcommands([quote, subdivisions, webhook, emulator])
)

// Its subcommands, by name.
const commands = Command.getSubcommands(command)

// The shells @effect/cli's built-in `--completions` writes a script for.
const shells = ["sh", "bash", "fish", "zsh"]

// The line added to the parser's own "Invalid subcommand for effect-fin - use one of ...", which it says whatever was
// wrong: its list has no `snapshot` or `cross-check`, which `run` dispatches before it, but only as the first
// argument; `webhook`'s own subcommand misspelt, or a shell `--completions` does not know, are said as such.
const commandHint = (args: ReadonlyArray<string>): Option.Option<string> => {
  const completions = args.findIndex((arg) => arg === "--completions" || arg.startsWith("--completions="))
  const given = args[completions]
  const shell = given?.startsWith("--completions=") ? given.slice("--completions=".length) : args[completions + 1]
  if (completions !== -1 && !shells.includes(shell ?? "")) {
    return Option.some(`effect-fin: --completions takes one of ${shells.join(", ")}`)
  }
  const named = commandOf(args)
  return named === "snapshot" || named === "cross-check"
    ? Option.some(`effect-fin: '${named}' comes first, before any option (effect-fin ${named} --help)`)
    : named === "webhook"
    ? Option.some("effect-fin: webhook's one subcommand is verify (effect-fin webhook verify --help)")
    : HashMap.has(commands, named ?? "")
    ? Option.none()
    : Option.some("effect-fin: or 'snapshot', 'cross-check' (the subdivisions snapshot: see their --help)")
}

// @effect/cli writes its help and usage errors in colour whatever the output is: a file, a pipe (or NO_COLOR) gets
// them as plain text.
const noColour = () => process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== ""
const colourOn = (stream: { readonly isTTY?: boolean | undefined }) => stream.isTTY === true && !noColour()

// A log line may quote the service (a fallback's warning names its error, message and all): its text, and the text of
// its annotations, escaped whole before the logger adds its own colour codes (the console keeps those, and would keep
// a colour code of the service's that could hide the rest of the line).
const printableLogs = <Output>(logger: Logger.Logger<unknown, Output>): Logger.Logger<unknown, Output> =>
  Logger.mapInputOptions(logger, (options: Logger.Logger.Options<unknown>) => ({
    ...options,
    message: printableValue(options.message),
    annotations: HashMap.map(options.annotations, printableValue)
  }))

const printableValue = (value: unknown): unknown =>
  typeof value === "string" ? Render.printable(value) : Array.isArray(value) ? value.map(printableValue) : value

// Log lines on standard error: as text, or, once a command given `--json` runs, one JSON document each (Effect's
// structured form: message, logLevel, timestamp, annotations...), so that standard error is JSON lines as its failure
// line is, for a script's `jq`. Escaped as the answer's JSON is.
const stderrLogs = (colors: boolean): Logger.Logger<unknown, void> => {
  const text = printableLogs(Logger.prettyLogger({ stderr: true, colors }))
  const json = Logger.withConsoleError(Logger.map(Logger.structuredLogger, (entry) => Printable.json(entry)))
  return Logger.make((options) => (FailureLine.isJson() ? json : text).log(options))
}

// The levels @effect/cli's built-in `--log-level` takes: Effect's, in lower case.
const logLevels = ["all", "trace", "debug", "info", "warning", "error", "fatal", "none"]

// The values given to `--log-level` (`--log-level X` or `--log-level=X`), up to a `--` that ends the options.
const logLevelValues = (args: ReadonlyArray<string>): Array<string> => {
  const end = args.indexOf("--")
  const options = end === -1 ? args : args.slice(0, end)
  return options.flatMap((arg, i) =>
    arg.startsWith("--log-level=")
      ? [arg.slice("--log-level=".length)]
      : arg === "--log-level" && i + 1 < options.length
      ? [options[i + 1]!]
      : []
  )
}

// @effect/cli's own options, which it reads on any command line.
const builtIns = ["--help", "-h", "--version", "--wizard", "--completions", "--log-level"]

// Each command's options (read from its own usage, so a new one is in them), and those of them that take a value.
// @effect/cli reads one given no value as no option at all: `quote --from` is "Received unknown argument: '--from'",
// and `quote --from $CURRENCY --to CAD` with the variable unset takes `--to` as the currency, then calls `CAD` unknown.
const commandOptions: ReadonlyMap<
  string,
  { readonly command: string; readonly options: ReadonlySet<string>; readonly takingValues: ReadonlySet<string> }
> = new Map(
  Object.entries({
    quote: ["quote", Command.getUsage(quote)],
    subdivisions: ["subdivisions", Command.getUsage(subdivisions)],
    webhook: ["webhook verify", Command.getUsage(verify)],
    emulator: ["emulator", Command.getUsage(emulator)]
  } as const).map(([word, [command, usage]]) => {
    const named = namedIn(usage)
    const optionsOf = (some: ReadonlyArray<Usage.Named>) =>
      some.flatMap((one) => one.names.filter((name) => name.startsWith("-")))
    return [word, {
      command,
      options: new Set([...optionsOf(named), ...builtIns]),
      takingValues: new Set([...optionsOf(named.filter((one) => Option.isSome(one.acceptedValues))), "--log-level"])
    }]
  })
)

function namedIn(usage: Usage.Usage): Array<Usage.Named> {
  switch (usage._tag) {
    case "Named":
      return [usage]
    case "Optional":
    case "Repeated":
      return namedIn(usage.usage)
    case "Alternation":
    case "Concat":
      return [...namedIn(usage.left), ...namedIn(usage.right)]
    default:
      return []
  }
}

// The line for the first option of the command named that is given no value: last, or followed by one of its options
// (or by the `--` that ends them). Another text, even one starting with `--`, is its value to the parser (`--search
// --x` searches for "--x"). Not when `--help` or `--version` is asked (not as a value): the parser shows it anyway.
const valueless = (args: ReadonlyArray<string>): string | undefined => {
  const named = commandOptions.get(commandOf(args) ?? "")
  if (named === undefined) return undefined
  const end = args.indexOf("--")
  const options = end === -1 ? args : args.slice(0, end + 1)
  const takesValue = (i: number) => i >= 0 && named.takingValues.has(options[i]!)
  if (options.some((arg, i) => (arg === "--help" || arg === "-h" || arg === "--version") && !takesValue(i - 1))) {
    return undefined
  }
  const missing = options.find((_, i) =>
    takesValue(i) && (i + 1 === options.length || options[i + 1] === "--" || named.options.has(options[i + 1]!))
  )
  return missing === undefined
    ? undefined
    : `effect-fin: ${missing} needs a value (see effect-fin ${named.command} --help)`
}

// @effect/cli reads its own `--help` (`-h`) and `--log-level` only before a command's own options and arguments:
// `quote --from USD --help` was "Received unknown argument: '--help'", and `--log-level debug` so too. Given after
// them (not as an option's value, not past a `--`), they are moved to follow the command's name.
const globalsAfterCommand = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const word = commandOf(args)
  const named = commandOptions.get(word ?? "")
  if (word === undefined || named === undefined) return args
  const end = args.indexOf("--")
  const options = end === -1 ? args : args.slice(0, end)
  // The command's words as given (`webhook verify`): the options go after them, or are left where they are.
  const words = named.command.split(" ")
  const first = args.indexOf(word)
  if (words.some((w, k) => args[first + k] !== w)) return args
  const after = first + words.length
  const moved: Array<string> = []
  const kept: Array<string> = []
  for (let i = after; i < options.length; i++) {
    const arg = options[i]!
    // An option taking a value is read with it: `--search -h` searches for "-h".
    const pair = named.takingValues.has(arg) ? options.slice(i, i + 2) : [arg]
    i += pair.length - 1
    const global = arg === "--help" || arg === "-h" || arg === "--log-level" || arg.startsWith("--log-level=")
    if (global) moved.push(...pair)
    else kept.push(...pair)
  }
  return moved.length === 0 ? args : [...args.slice(0, after), ...moved, ...kept, ...args.slice(options.length)]
}

// sysexits.h's EX_TEMPFAIL: a failure worth a later try (`Retry.worthALaterTry`), so a script may run the command
// again (a quote or a lookup changes nothing); any other failure is 1.
const exitTryLater = 75

const worthRetrying = (error: unknown): boolean => FinError.isFinError(error) && Retry.worthALaterTry(error)

// A usage error found before the parser runs: its line on standard error, exit code 2 (as the parser's own).
const usageError = (line: string) =>
  Effect.zipRight(Console.error(line), Effect.sync(() => void (process.exitCode = 2)))

/**
 * Runs the command line on `argv` (as `process.argv`), printing any failure as one line.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>, options: RunOptions = {}) => {
  const args = argv.slice(2)
  // The snapshot tool has its own flags (and --help); it runs as is rather than through @effect/cli's parser. It
  // writes to the streams itself, quoting arguments, files and the service, in no colour: its text is made printable
  // on the way, escape sequences and all.
  const [sub, ...rest] = args
  if (sub === "snapshot" || sub === "cross-check") {
    const dataDir = options.dataDir ?? bundledDataDir()
    const parsed = snapshotArgs(sub, rest, dataDir)
    if (Either.isLeft(parsed)) {
      return usageError(Printable.lines(parsed.left))
    }
    return Effect.flatMap(
      Effect.promise(() =>
        Snapshot.main(parsed.right, {
          program: "effect-fin snapshot",
          bundledDir: dataDir,
          stdout: (text) => void process.stdout.write(Printable.lines(text)),
          stderr: (text) => void process.stderr.write(Printable.lines(text))
        })
      ),
      (code) => Effect.sync(() => {
        process.exitCode = code
      })
    )
  }
  // @effect/cli's built-in `--wizard` prompts on the terminal, writing its own colour codes: with no terminal on
  // standard input (a pipe, /dev/null, a CI job) it would wait for ever for answers that cannot come.
  // @effect/cli takes `--wizard=true` (`=1`, `=yes`, `=on`) too: every `--wizard=` form is refused here (one that is
  // false is a usage error there anyway).
  if (args.some((arg) => arg === "--wizard" || arg.startsWith("--wizard=")) && process.stdin.isTTY !== true) {
    return usageError("effect-fin: --wizard asks its questions on a terminal, and standard input is none")
  }
  // First: `--log-level --json` is a level not given, not a level "--json".
  const missing = valueless(args)
  if (missing !== undefined) return usageError(missing)
  // @effect/cli answers a log level it does not know (`--log-level verbose`, `--log-level Debug`) with "Received
  // unknown argument: '--log-level'", as if the option did not exist: the value is named here, with the levels it takes.
  const badLevel = logLevelValues(args).find((level) => !logLevels.includes(level))
  if (badLevel !== undefined) {
    return usageError(Render.printable(
      `effect-fin: --log-level: expected one of ${logLevels.join(", ")} (lower case), got ${JSON.stringify(badLevel)}`
    ))
  }
  // An argument holding an escape character is shown escaped wherever it is quoted; one that is a colour code the
  // parser uses too would take the parser's own codes with it, so such a run prints no colour at all.
  const colour = (stream: { readonly isTTY?: boolean | undefined }) =>
    colourOn(stream) && !args.some((arg) => arg.includes("\x1b"))
  // A run without `--json` prints its failures as text even after one with it, in one process (a program or a test).
  const reset = Effect.sync(() => FailureLine.setJson(false))
  const parsed = [...argv.slice(0, 2), ...globalsAfterCommand(args)]
  return Effect.zipRight(reset, Command.run(command, { name: "effect-fin", version })(parsed)).pipe(
    // Option names as written: @effect/cli's default case-insensitive matching consumes `--JSON` (or `--OFFLINE`,
    // `--FROM USD` with its value) and then finds no value under `--json`, so the option was silently dropped (a
    // table for a script that asked JSON, a network call for `--OFFLINE`). A usage error instead.
    Effect.provide(CliConfig.layer({ isCaseSensitive: true })),
    // Logs (a fallback's warning, say) go to stderr: stdout carries only the answer, which `--json` keeps parseable.
    Effect.provide(Logger.replace(Logger.defaultLogger, stderrLogs(colour(process.stderr)))),
    Effect.tapErrorCause((cause) => Effect.sync(() => {
      process.exitCode = Option.exists(Cause.failureOption(cause), worthRetrying) ? exitTryLater : 1
    })),
    Effect.catchAll((error) =>
      // @effect/cli has already printed a usage error (one line, then a blank one): exit 2, as `snapshot` and the
      // usage errors of most tools, so a script tells it from a failed call (1). Ours are one line with the tag.
      ValidationError.isValidationError(error)
        ? Effect.zipRight(
          ValidationError.isCommandMismatch(error)
            ? Option.match(commandHint(args), { onNone: () => Effect.void, onSome: Console.error })
            : Effect.void,
          Effect.sync(() => {
            process.exitCode = 2
          })
        )
        : Predicate.isObject(error) && printedAsJson.has(Cause.originalError(error))
        ? Effect.void
        : Console.error(Render.errorLine(error))
    ),
    // A defect (a bug, or a value no code path expected) would otherwise end the process with exit 1 and not a word
    // (the runtime's own report is off): one line too.
    Effect.catchAllDefect((defect) => {
      const said = Predicate.hasProperty(defect, "message") && typeof defect.message === "string"
        ? defect.message.split("\n")[0]!
        : String(defect)
      return Console.error(FailureLine.failureLine("Defect", `unexpected failure: ${said}`))
    }),
    (program) =>
      Effect.flatMap(Effect.console, (console) =>
        Effect.withConsole(
          program,
          Render.printableConsole(console, { out: colour(process.stdout), err: colour(process.stderr) }, args)
        ))
  )
}
