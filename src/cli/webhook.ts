/**
 * The `webhook verify` command and its reading of the body from standard input.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as FinError from "../FinError.js"
import * as Bytes from "../internal/bytes.js"
import * as ConfigLiteral from "../internal/configLiteral.js"
import * as Padded from "../internal/padded.js"
import * as SignatureHeaders from "../internal/signatureHeaders.js"
import * as Webhooks from "../Webhooks.js"
import * as Render from "./render.js"
import { failingAsJson, json } from "./shared.js"

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

/** The `webhook verify` command: a webhook body read from standard input, checked. */
export const verify = Command.make(
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

/** The `webhook` command, whose one subcommand is `verify`. */
export const webhook = Command.make("webhook").pipe(
  Command.withDescription("Webhook tools"),
  Command.withSubcommands([verify])
)
