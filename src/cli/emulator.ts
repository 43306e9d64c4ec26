/**
 * The `emulator` command and its `--options` file.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as NodeFs from "node:fs"
import * as Emulator from "../emulator/Emulator.js"
import * as Bytes from "../internal/bytes.js"
import * as Loopback from "../internal/loopback.js"
import * as Render from "./render.js"

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

/** The `emulator` command: the local emulator of the service, until a signal stops it. */
export const emulator = Command.make(
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
