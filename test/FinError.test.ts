/**
 * `FinError` is a schema "for users who persist or send errors", and the token store sends a fetch's failure to the
 * processes waiting on it: every variant must survive JSON, Durations included.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberId from "effect/FiberId"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Util from "node:util"
import { EmulatorError } from "../src/emulator/internal/error.js"
import {
  ApiError,
  AuthenticationError,
  FieldError,
  FinError,
  fromRejection,
  isFinError,
  isInterruption,
  Issue,
  RateLimitError,
  RequestValidationError,
  ResponseDecodeError,
  TimeoutError,
  TransportError,
  WebhookVerificationError
} from "../src/FinError.js"
import * as FeeService from "../src/FeeService.js"
import * as FinTest from "../src/FinTest.js"
import { TokenStoreError } from "../src/TokenStore.js"
import { WebhookDedupeStoreError } from "../src/Webhooks.js"

const call = { operation: "POST /v1/fee-calculation", attempts: 2, requestId: "req-1" }

const examples: ReadonlyArray<FinError> = [
  new RequestValidationError({ message: "bad", issues: [new Issue({ path: "source_amount", expected: "a number" })] }),
  new AuthenticationError({ message: "401", status: 401, retryAfter: Duration.seconds(30), ...call }),
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
    const read = roundTrip(
      new TransportError({
        message: "cut",
        reason: "BodyReadFailed",
        code: "ECONNRESET",
        status: 503,
        retryAfter: Duration.seconds(3),
        ...call
      })
    )
    expect(read._tag === "TransportError" && [read.reason, read.retryAfter])
      .toEqual(["BodyReadFailed", Duration.seconds(3)])
    // A figure JSON cannot write (NaN and Infinity become null) is refused when the error is made, not when another
    // process fails to decode it.
    expect(() => new ApiError({ status: NaN, message: "no" })).toThrow()
    // Every error's status, not only ApiError's.
    expect(() => new RateLimitError({ status: NaN, message: "no" })).toThrow()
    expect(() => new AuthenticationError({ status: NaN, message: "no" })).toThrow()
    expect(() => new TransportError({ status: NaN, message: "no", reason: "BodyReadFailed" })).toThrow()
    expect(() => new ResponseDecodeError({ status: NaN, message: "no", issues: [] })).toThrow()
    const late = { message: "late", kind: "attempt", timeout: Duration.seconds(1) } as const
    expect(() => new TimeoutError({ ...late, attempts: Infinity })).toThrow()
    expect(() => new ApiError({ status: 422, message: "no", code: Infinity })).toThrow()
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
    const apiError = roundTrip(examples[2]!)
    expect(apiError._tag === "ApiError" && apiError.fieldErrors?.[0]).toBeInstanceOf(FieldError)
    // Durations go as Effect writes them, the form other processes (and versions) sharing a token store read.
    const encoded = (error: FinError) => JSON.parse(Schema.encodeSync(json)(error))
    expect([encoded(examples[2]!).retryAfter, encoded(examples[5]!).timeout])
      .toEqual([{ _tag: "Millis", millis: 1500 }, { _tag: "Millis", millis: 10_000 }])
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

  // Promise code: runPromise rejects with Effect's FiberFailure, a wrapper with none of the error's fields.
  describe("from Promise code", () => {
    const rejectionOf = (promise: Promise<unknown>) =>
      promise.then(() => expect.fail("resolved"), (e: unknown) => e)
    const webhookError = new WebhookVerificationError({ reason: "bad_signature", message: "no match" })

    it("fromRejection is the error a rejection wraps (in a span or not), and the error when given one", async () => {
      for (const error of [...examples, webhookError]) {
        const plain = await rejectionOf(Effect.runPromise(Effect.fail(error)))
        const inSpan = await rejectionOf(Effect.runPromise(Effect.withSpan(Effect.fail(error), "call")))
        expect(isFinError(plain)).toBe(false)
        expect([fromRejection(plain), fromRejection(inSpan), fromRejection(error)]).toEqual([error, error, error])
        expect(fromRejection(inSpan)).toBe(error)
        expect([isInterruption(plain), isInterruption(error)]).toEqual([false, false])
      }
    })

    it("fromRejection is undefined for all but effect-fin's errors; isInterruption true of interruptions", async () => {
      const notOurs = [
        await rejectionOf(Effect.runPromise(Effect.die(new Error("bug")))),
        await rejectionOf(Effect.runPromise(Effect.fail({ _tag: "ApiError", status: 503, message: "an app's own" }))),
        await rejectionOf(Effect.runPromise(Effect.fail(new Error("another")))),
        new Error("plain"),
        { _tag: "TimeoutError" },
        undefined
      ]
      expect(notOurs.map(fromRejection)).toEqual(notOurs.map(() => undefined))
      expect(notOurs.map(isInterruption)).toEqual(notOurs.map(() => false))
      // Beside an app's own failure, an interruption or a defect, the error is still found.
      const [apiError, other] = [examples[2]!, { _tag: "AppError" }]
      const causes = [
        Cause.parallel(Cause.fail(other), Cause.fail(apiError)),
        Cause.parallel(Cause.fail(apiError), Cause.interrupt(FiberId.none)),
        Cause.sequential(Cause.fail(apiError), Cause.die(new Error("a finalizer died")))
      ]
      for (const cause of causes) {
        const rejection = await rejectionOf(Effect.runPromise(Effect.failCause(cause)))
        expect([fromRejection(rejection), isInterruption(rejection)]).toEqual([apiError, false])
      }
      // An error as a span hands it on (the Left of Effect.either, say) is the error itself.
      const left = Either.getLeft(await Effect.runPromise(Effect.either(Effect.withSpan(Effect.fail(apiError), "x"))))
      expect(Option.map(left, fromRejection)).toEqual(Option.some(apiError))
      expect(Option.getOrThrow(Option.map(left, fromRejection))).toBe(apiError)
      const aborted = await rejectionOf(Effect.runPromise(Effect.never, { signal: AbortSignal.abort() }))
      expect([isInterruption(aborted), fromRejection(aborted)]).toEqual([true, undefined])
      const interrupted = await rejectionOf(Effect.runPromise(Effect.interrupt))
      expect(isInterruption(interrupted)).toBe(true)
    })

    it("a call of a client in a ManagedRuntime: its typed error, or an interruption once disposed", async () => {
      // Its fee route never answers: a call waits on it until the runtime is disposed.
      const fin = ManagedRuntime.make(FinTest.layerClient({
        "POST /v1/oauth/token": FinTest.tokenHandler({ lifetime: "1 hour" }),
        "POST /v1/fee-calculation": () => FinTest.stall
      }))
      // As from a request's body: a literal -5 would not compile.
      const amount: number = -5
      const request = { source_currency: "USD", source_amount: amount, destination_currency: "CAD" }
      const refused = fromRejection(await rejectionOf(fin.runPromise(FeeService.calculate(request))))
      expect(refused?._tag === "RequestValidationError" && refused.issues.map((i) => i.path)).toEqual(["source_amount"])
      // The same failure, typed and without a rejection.
      const either = await fin.runPromise(Effect.either(FeeService.calculate(request)))
      expect(Either.isLeft(either) && either.left).toEqual(refused)
      const stuck = rejectionOf(fin.runPromise(FeeService.calculate({ ...request, source_amount: 5 })))
      const sent = () =>
        fin.runPromise(Effect.flatMap(FinTest.InMemoryHttp, (http) => http.count("POST /v1/fee-calculation")))
      while ((await sent()) === 0) await new Promise((resolve) => setTimeout(resolve, 5))
      await fin.dispose()
      expect(isInterruption(await stuck)).toBe(true)
      // A call made afterwards is a defect of the runtime ("ManagedRuntime disposed"): neither.
      const late = await rejectionOf(fin.runPromise(FeeService.calculate(request)))
      expect([isInterruption(late), fromRejection(late)]).toEqual([false, undefined])
    })
  })
})
