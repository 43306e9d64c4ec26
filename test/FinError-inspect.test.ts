/**
 * Without `effect-fin/test` (which makes every Effect error inspect unwrapped), as a user's own tests may run: the
 * errors effect-fin fails with still show a diff when an expectation on them fails in a span, not a stack overflow.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { ApiError, WebhookVerificationError } from "../src/FinError.js"

describe("FinError without effect-fin/test", () => {
  it.effect("a failed expectation on an error that failed in a span shows a diff", () =>
    Effect.gen(function*() {
      const errors = [
        new ApiError({ status: 503, message: "busy" }),
        new WebhookVerificationError({ reason: "bad_signature", message: "no" })
      ]
      for (const error of errors) {
        const failed = yield* Effect.flip(Effect.withSpan(Effect.fail(error), "call"))
        expect(() => expect(failed).toEqual({})).toThrow(`expected ${error._tag}: ${error.message}`)
      }
    }))
})
