/**
 * `FinError` is a schema "for users who persist or send errors", and the token store sends a fetch's failure to the
 * processes waiting on it: every variant must survive JSON, Durations included.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Util from "node:util"
import { EmulatorError } from "../src/emulator/internal/error.js"
import {
  ApiError,
  AuthenticationError,
  FieldError,
  FinError,
  isFinError,
  Issue,
  RateLimitError,
  RequestValidationError,
  ResponseDecodeError,
  TimeoutError,
  TransportError,
  WebhookVerificationError
} from "../src/FinError.js"
import { TokenStoreError } from "../src/TokenStore.js"
import { WebhookDedupeStoreError } from "../src/Webhooks.js"

const call = { operation: "POST /v1/fee-calculation", attempts: 2, requestId: "req-1" }

const examples: ReadonlyArray<FinError> = [
  new RequestValidationError({ message: "bad", issues: [new Issue({ path: "source_amount", expected: "a number" })] }),
  new AuthenticationError({ message: "401", status: 401, ...call }),
  new ApiError({
    status: 503,
    message: "busy",
    code: "unavailable",
    fieldErrors: [new FieldError({ field: "f", message: "m" })],
    body: "<html>",
    retryAfter: Duration.millis(1500),
    ...call
  }),
  new RateLimitError({ message: "slow down", retryAfter: Duration.seconds(120), ...call }),
  new TransportError({ message: "reset", reason: "RequestFailed", ...call }),
  new TimeoutError({ message: "late", kind: "token", timeout: Duration.seconds(10), ...call }),
  new ResponseDecodeError({ message: "odd", status: 200, issues: [new Issue({ path: "data", expected: "an object" })], ...call })
]

describe("FinError", () => {
  it("isFinError is true of the seven errors only, not of an app's own error with one of their tags", () => {
    expect(examples.every(isFinError)).toBe(true)
    class AppApiError extends Data.TaggedError("ApiError")<{ readonly reason: string }> {}
    for (const other of [new AppApiError({ reason: "x" }), { _tag: "TimeoutError" }, new Error("ApiError"), null]) {
      expect(isFinError(other)).toBe(false)
    }
  })

  it("every variant survives Schema.parseJson(FinError): encoded, then decoded back equal", () => {
    const json = Schema.parseJson(FinError)
    for (const error of examples) {
      const text = Schema.encodeSync(json)(error)
      const decoded = Schema.decodeUnknownSync(json)(text)
      expect(decoded, error._tag).toBeInstanceOf(error.constructor)
      expect({ ...decoded }, error._tag).toEqual({ ...error })
    }
  })

  it("the other forms survive too: a numeric code, a body-read failure; decoded issues are Issue instances", () => {
    const json = Schema.parseJson(FinError)
    const roundTrip = (error: FinError) => Schema.decodeUnknownSync(json)(Schema.encodeSync(json)(error))
    const numeric = roundTrip(new ApiError({ status: 422, message: "no", code: 1042, ...call }))
    expect(numeric._tag === "ApiError" && numeric.code).toBe(1042)
    const read = roundTrip(new TransportError({ message: "cut", reason: "BodyReadFailed", code: "ECONNRESET", status: 200, ...call }))
    expect(read._tag === "TransportError" && read.reason).toBe("BodyReadFailed")
    // A reason of neither kind (sent by another version, or mangled) is refused, not decoded into a TransportError.
    const stranger = { _tag: "TransportError", message: "cut", reason: "Cancelled" }
    expect(Schema.decodeUnknownEither(json)(JSON.stringify(stranger))._tag).toBe("Left")
    // A status is part of what an answer's error says: one without it is no ApiError or ResponseDecodeError.
    for (const tag of ["ApiError", "ResponseDecodeError"]) {
      const statusless = { _tag: tag, message: "odd", issues: [] }
      expect(Schema.decodeUnknownEither(json)(JSON.stringify(statusless))._tag, tag).toBe("Left")
    }
    for (const error of [examples[0]!, examples[6]!]) {
      const decoded = roundTrip(error)
      expect("issues" in decoded && decoded.issues[0], error._tag).toBeInstanceOf(Issue)
    }
  })

  // Effect wraps an error that fails in a span (every call's) in a Proxy, whose inspection chai looped on.
  it.effect("a failed expectation on an error that failed in a span shows a diff, not a stack overflow", () =>
    Effect.gen(function*() {
      const others = [
        new WebhookVerificationError({ reason: "bad_signature", message: "no" }),
        new TokenStoreError({ operation: "get", message: "down" }),
        new WebhookDedupeStoreError({ operation: "claim", message: "down" }),
        new EmulatorError({ reason: "InvalidInput", message: "no" })
      ]
      for (const error of [...examples, ...others]) {
        const failed = yield* Effect.flip(Effect.withSpan(Effect.fail(error), "call"))
        expect(failed).not.toBe(error)
        expect(() => expect(failed).toMatchObject({ message: "something else" })).toThrow(
          `expected ${error._tag}: ${error.message}`
        )
        expect(() => expect(failed).toEqual({})).toThrow(`expected ${error._tag}: ${error.message}`)
        expect(Util.inspect(failed)).toBe(Util.inspect(error))
      }
    }))
})
