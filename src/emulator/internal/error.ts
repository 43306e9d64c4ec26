/**
 * The emulator's own error (re-exported as `Emulator.EmulatorError`).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import * as Inspect from "../../internal/inspect.js"

/** Invalid options or admin input, a host and port it could not listen on, or a webhook that could not be delivered. */
export class EmulatorError extends Schema.TaggedError<EmulatorError>("effect-fin.EmulatorError")("EmulatorError", {
  /** Which kind of failure (see `Emulator.EmulatorError`). */
  reason: Schema.Literal(
    "InvalidOptions",
    "InvalidInput",
    "ListenFailed",
    "WebhookNotRegistered",
    "WebhookDeliveryFailed"
  ),
  /** What was wrong: the option or input refused, the listen's failure, or the delivery's target and failure. */
  message: Schema.String,
  /** For `ListenFailed`, the listen's own error (its `code`: `EADDRINUSE`, `EACCES`, `ENOTFOUND`...). */
  cause: Schema.optional(Schema.Defect)
}) {}

Inspect.showUnwrapped(EmulatorError)
