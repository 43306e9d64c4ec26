import * as HttpApp from "@effect/platform/HttpApp"
import * as PlatformHeaders from "@effect/platform/Headers"
import { describe, expect, it } from "@effect/vitest"
import { expectTypeOf, vi } from "vitest"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Arbitrary from "effect/Arbitrary"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as JSONSchema from "effect/JSONSchema"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Match from "effect/Match"
import * as Option from "effect/Option"
import * as Pretty from "effect/Pretty"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { createHmac } from "node:crypto"
import { runInNewContext } from "node:vm"
import * as Zlib from "node:zlib"
import type { WebhookVerificationError } from "../src/FinError.js"
import type * as FinConfig from "../src/FinConfig.js"
import { NodeWebhookCrypto } from "../src/node/index.js"
import * as Webhooks from "../src/Webhooks.js"
import { dedupeStoreContract } from "./dedupeStoreContract.js"
import {
  captureLogs,
  countedDeliveries,
  defectOf,
  deliveriesCountedSince,
  documentedWebhookBody,
  illegalArgument,
  recordingTracer,
  roundTrips,
  withTestWallClockSetBack,
  withWallClockSetBack
} from "./support.js"

// --- Fixtures -------------------------------------------------------------------------------------------------------

const secretValue = "whsec_test_8c1f0b6e2a9d4c7f"
const secret = Redacted.make(secretValue)

const currentBody = documentedWebhookBody

// The older page snapshot: no `status`. Its ids are cut short in the copy ("4d715f20-…"), so they are completed here;
// the event fields around it are not shown there and are filled in the current envelope's shape.
const olderBody = JSON.stringify({
  event: {
    id: "7b3c9a10-2f4e-4d1a-9c55-1e2f3a4b5c6d",
    event_reference_id: "4d715f20-0000-4000-8000-000000000001",
    type: "beneficiary.status",
    created_at: "2025-12-10T10:36:19.055159Z",
    sandbox_mode: true
  },
  data: {
    active: true,
    beneficiary_id: "4d715f20-0000-4000-8000-000000000001",
    customer_id: "efb54adf-0000-4000-8000-000000000002",
    type: "INDIVIDUAL"
  }
})

interface EventSpec {
  readonly id?: string
  readonly type?: string
  readonly referenceId?: string
  readonly createdAt?: string
  readonly sandbox?: boolean | undefined
  readonly data?: unknown
}

const beneficiaryData = (status: string) => ({
  beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
  customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
  type: "INDIVIDUAL",
  active: status === "ACTIVE",
  status
})

const makeBody = (spec: EventSpec = {}): string =>
  JSON.stringify({
    event: {
      id: spec.id ?? "40061557-f125-4b39-97d6-c16a0f1230c1",
      event_reference_id: spec.referenceId ?? "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
      type: spec.type ?? "beneficiary.status",
      created_at: spec.createdAt ?? "2026-04-04T17:38:26.843132Z",
      ...("sandbox" in spec ? spec.sandbox === undefined ? {} : { sandbox_mode: spec.sandbox } : { sandbox_mode: true })
    },
    data: "data" in spec ? spec.data : beneficiaryData("ACTIVE")
  })

const nodeHmacHex = (algorithm: string, key: string, body: string) =>
  createHmac(algorithm, key).update(body, "utf8").digest("hex")

const cryptoLayers = [
  ["WebCrypto", Webhooks.layerWebCrypto],
  ["node:crypto", NodeWebhookCrypto.layer]
] as const

const reasonOf = <A>(effect: Effect.Effect<A, WebhookVerificationError>) =>
  Effect.map(Effect.flip(effect), (error) => error.reason)

// --- Verification with both crypto layers ---------------------------------------------------------------------------

for (const [name, cryptoLayer] of cryptoLayers) {
  describe(`Webhooks.verify with ${name}`, () => {
    it.effect("verifies and decodes the current documented example", () =>
      Effect.gen(function*() {
        const headers = yield* Webhooks.sign(currentBody, secret)
        expect(headers["x-fin-signature"]).toBe(nodeHmacHex("sha256", secretValue, currentBody))
        const event = yield* Webhooks.verify(currentBody, headers, secret)
        expect(event.type).toBe("beneficiary.status")
        if (event.type !== "beneficiary.status") return
        expect(event.id).toBe("40061557-f125-4b39-97d6-c16a0f1230c1")
        expect(event.event_reference_id).toBe("e8fccaeb-fb9d-4fae-846e-ea7c97c70b31")
        expect(DateTime.formatIso(event.created_at)).toBe("2026-04-04T17:38:26.843Z")
        expect(event.sandbox_mode).toEqual(Option.some(true))
        expect(event.data).toEqual({
          beneficiary_id: "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31",
          customer_id: "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f",
          type: "INDIVIDUAL",
          active: false,
          status: Option.some("PROCESSING")
        })
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("verifies and decodes the older example without status", () =>
      Effect.gen(function*() {
        const headers = yield* Webhooks.sign(olderBody, secret)
        const event = yield* Webhooks.verify(new TextEncoder().encode(olderBody), headers, secret)
        if (event.type !== "beneficiary.status") return expect.fail(`decoded as ${event.type}`)
        expect(event.data.status).toEqual(Option.none())
        expect(event.data.active).toBe(true)
        expect(DateTime.formatIso(event.created_at)).toBe("2025-12-10T10:36:19.055Z")
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("verifies a signature made by node:crypto directly, for every allowed algorithm", () =>
      Effect.gen(function*() {
        for (const algorithm of Webhooks.algorithms) {
          const headers = {
            "x-fin-signature": nodeHmacHex(algorithm, secretValue, currentBody),
            "x-fin-signature-algorithm": algorithm
          }
          const event = yield* Webhooks.verify(currentBody, headers, secret)
          expect(event.id).toBe("40061557-f125-4b39-97d6-c16a0f1230c1")
          const signed = yield* Webhooks.sign(currentBody, secret, algorithm)
          expect(signed["x-fin-signature"]).toBe(headers["x-fin-signature"])
        }
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("sign refuses an empty or non-text secret and an algorithm outside the allow-list with a defect that says so", () =>
      Effect.gen(function*() {
        const defect = (effect: Effect.Effect<unknown>) =>
          Effect.map(Effect.exit(effect), (exit) =>
            Exit.isFailure(exit)
              ? Cause.dieOption(exit.cause).pipe(
                // An IllegalArgumentException, as every other option check's defect is.
                Option.filter(Cause.isIllegalArgumentException),
                Option.map((e) => e.message)
              )
              : Option.none())
        const wipedSecret = Redacted.make("whsec_wiped")
        Redacted.unsafeWipe(wipedSecret)
        for (const bad of ["", Redacted.make(""), undefined, 42, Redacted.make(42), [secretValue, "other"], wipedSecret]) {
          expect(yield* defect(Webhooks.sign(currentBody, bad as Webhooks.Secret))).toEqual(
            Option.some("effect-fin: a webhook secret must be one text, and not empty")
          )
        }
        // One used before it was wiped (its list kept) is refused as well, with the same message.
        const usedThenWiped = Redacted.make("whsec_used")
        yield* Webhooks.sign(currentBody, usedThenWiped)
        Redacted.unsafeWipe(usedThenWiped)
        expect(yield* defect(Webhooks.sign(currentBody, usedThenWiped))).toEqual(
          Option.some("effect-fin: a webhook secret must be one text, and not empty")
        )
        // verify would refuse it (no_secret): its signatures would test nothing.
        expect(yield* defect(Webhooks.sign(currentBody, "whsec_x\n"))).toEqual(
          Option.some(
            "effect-fin: a webhook secret must not start or end with whitespace, a control character or an invisible " +
              "formatting one (a trailing newline, say)"
          )
        )
        expect(yield* defect(Webhooks.sign(currentBody, secret, "md5" as Webhooks.Algorithm)))
          .toEqual(Option.some("effect-fin: the signature algorithm is not one of sha256, sha384, sha512"))
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("rejects a tampered byte", () =>
      Effect.gen(function*() {
        const headers = yield* Webhooks.sign(currentBody, secret)
        const tampered = currentBody.replace("\"active\":false", "\"active\":true ")
        expect(tampered.length).toBe(currentBody.length)
        expect(yield* reasonOf(Webhooks.verify(tampered, headers, secret))).toBe("bad_signature")
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("rejects a wrong secret and accepts any secret of a rotation", () =>
      Effect.gen(function*() {
        const oldSecret = Redacted.make("whsec_old_secret")
        const headers = yield* Webhooks.sign(currentBody, secret)
        expect(yield* reasonOf(Webhooks.verify(currentBody, headers, oldSecret))).toBe("bad_signature")
        const rotated = yield* Webhooks.verify(currentBody, headers, [oldSecret, secret])
        expect(rotated.id).toBe("40061557-f125-4b39-97d6-c16a0f1230c1")
        const signedWithOld = yield* Webhooks.sign(currentBody, oldSecret)
        expect((yield* Webhooks.verify(currentBody, signedWithOld, [oldSecret, secret])).id).toBe(rotated.id)
        // Plain strings are accepted too.
        expect((yield* Webhooks.verify(currentBody, headers, ["nope", secretValue])).id).toBe(rotated.id)
      }).pipe(Effect.provide(cryptoLayer)))

    // Which secret of a rotation matched: its position in the list given, an empty one (dropped) counted too.
    it.effect("verifySignature succeeds with the position of the secret that matched", () =>
      Effect.gen(function*() {
        const oldSecret = Redacted.make("whsec_old_secret")
        const signedWithNew = yield* Webhooks.sign(currentBody, secret)
        const signedWithOld = yield* Webhooks.sign(currentBody, oldSecret)
        const positions = (secrets: Webhooks.Secrets) =>
          Effect.all([signedWithNew, signedWithOld].map((headers) =>
            Effect.either(Webhooks.verifySignature(currentBody, headers, secrets))
          ))
        expect(yield* positions(secret)).toEqual([Either.right(0), Either.left(expect.anything())])
        expect(yield* positions([secret, oldSecret])).toEqual([Either.right(0), Either.right(1)])
        expect(yield* positions([oldSecret, "", secretValue])).toEqual([Either.right(2), Either.right(0)])
        // verifyWithSecret: the event and the same position, in one verification; failing as verify fails.
        const both = [secret, oldSecret]
        const [withNew, withOld] = [
          yield* Webhooks.verifyWithSecret(currentBody, signedWithNew, both),
          yield* Webhooks.verifyWithSecret(currentBody, signedWithOld, both, { environment: "sandbox" })
        ]
        const event = yield* Webhooks.verify(currentBody, signedWithNew, both)
        expect([withNew, withOld]).toEqual([{ event, secret: 0 }, { event, secret: 1 }])
        expect(yield* reasonOf(Webhooks.verifyWithSecret(currentBody, signedWithOld, secret))).toBe("bad_signature")
        const options = { environment: "production", maxAge: "1 minute" } as const
        expect(yield* reasonOf(Webhooks.verifyWithSecret(currentBody, signedWithNew, both, options))).toBe(
          "wrong_environment"
        )
        // A mistaken option is named as this function's.
        const tooShort = Webhooks.verifyWithSecret(currentBody, signedWithNew, both, { maxAge: "-5 seconds" })
        expect(defectOf(tooShort)).toMatchObject({
          message: "effect-fin: Webhooks.verifyWithSecret: maxAge must be greater than zero"
        })
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("rejects a missing, empty or non-hex signature and an unsupported algorithm", () =>
      Effect.gen(function*() {
        const { "x-fin-signature": signature } = yield* Webhooks.sign(currentBody, secret)
        expect(yield* reasonOf(Webhooks.verify(currentBody, {}, secret))).toBe("missing_signature")
        // No headers at all, from untyped code (API Gateway's `headers: null`): no signature, not a TypeError.
        for (const none of [null, undefined] as ReadonlyArray<unknown> as ReadonlyArray<Webhooks.HeadersInput>) {
          expect(yield* reasonOf(Webhooks.verify(currentBody, none, secret))).toBe("missing_signature")
          expect(yield* reasonOf(Webhooks.verifySignature(currentBody, none, secret))).toBe("missing_signature")
        }
        expect(yield* reasonOf(Webhooks.verify(currentBody, { "x-fin-signature": "" }, secret))).toBe(
          "missing_signature"
        )
        expect(yield* reasonOf(Webhooks.verify(currentBody, { "x-fin-signature": "zz" + signature.slice(2) }, secret)))
          .toBe("bad_signature")
        expect(yield* reasonOf(Webhooks.verify(currentBody, { "x-fin-signature": signature.slice(2) }, secret))).toBe(
          "bad_signature"
        )
        for (const algorithm of ["md5", "sha1", "sha224", "sha3-256", "none"]) {
          const headers = { "x-fin-signature": signature, "x-fin-signature-algorithm": algorithm }
          const error = yield* Effect.flip(Webhooks.verify(currentBody, headers, secret))
          expect([error.reason, error.message]).toEqual([
            "unsupported_algorithm",
            "the x-fin-signature-algorithm header is not one of sha256, sha384, sha512"
          ])
        }
        // A sha256 signature announced as sha512 has the wrong length for it.
        const announced512 = { "x-fin-signature": signature, "x-fin-signature-algorithm": "sha512" }
        expect(yield* reasonOf(Webhooks.verify(currentBody, announced512, secret))).toBe("bad_signature")
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("a blank algorithm header means sha256; a signature of another length or not hex is said to be one", () =>
      Effect.gen(function*() {
        const { "x-fin-signature": signature } = yield* Webhooks.sign(currentBody, secret)
        const blank = { "x-fin-signature": signature, "x-fin-signature-algorithm": " " }
        expect((yield* Webhooks.verify(currentBody, blank, secret)).id).toBe("40061557-f125-4b39-97d6-c16a0f1230c1")
        for (const bad of [signature.slice(1), `${signature}0`, `g${signature.slice(1)}`]) {
          const error = yield* Effect.flip(Webhooks.verify(currentBody, { "x-fin-signature": bad }, secret))
          expect([error.reason, error.message]).toEqual(["bad_signature", "the x-fin-signature header is not a hex sha256 digest"])
        }
      }).pipe(Effect.provide(cryptoLayer)))

    it.effect("reads header names and hex in any case, from records, platform Headers and web Headers", () =>
      Effect.gen(function*() {
        const signed = yield* Webhooks.sign(currentBody, secret, "sha384")
        const upper = signed["x-fin-signature"].toUpperCase()
        const forms: ReadonlyArray<Webhooks.HeadersInput> = [
          { "X-Fin-Signature": upper, "X-FIN-SIGNATURE-ALGORITHM": "SHA384" },
          PlatformHeaders.fromInput({ "X-Fin-Signature": upper, "x-fin-signature-algorithm": "sha384" }),
          new Headers({ "X-Fin-Signature": upper, "X-Fin-Signature-Algorithm": "sha384" }),
          { "x-fin-signature": ` ${upper} `, "x-fin-signature-algorithm": ["sha384"][0] },
          // Multi-value headers (AWS Lambda's form): a list of one value is that value.
          { "x-fin-signature": [upper], "x-fin-signature-algorithm": ["sha384"] },
          // Inherited, as a record made with a prototype has them; a null from untyped code is no value.
          Object.create({ "x-fin-signature": upper, "x-fin-signature-algorithm": "sha384" }),
          { "X-Fin-Signature": null, "x-fin-signature": upper, "x-fin-signature-algorithm": "sha384" } as {}
        ]
        for (const headers of forms) {
          expect((yield* Webhooks.verify(currentBody, headers, secret)).id).toBe("40061557-f125-4b39-97d6-c16a0f1230c1")
        }
        // Two values of one header are refused, whatever they are, and said to be repeated: as a list, or joined with
        // a comma as Node, web Headers and proxies join them (not "not a hex digest", which sends one to the secret).
        const [signatureName, algorithmName] = ["x-fin-signature", "x-fin-signature-algorithm"]
        const repeatedForms: ReadonlyArray<readonly [Webhooks.HeadersInput, string, string]> = [
          [{ [signatureName]: [upper, upper], [algorithmName]: "sha384" }, "bad_signature", signatureName],
          [{ [signatureName]: `${upper}, ${upper}`, [algorithmName]: "sha384" }, "bad_signature", signatureName],
          [{ [signatureName]: `${upper},`, [algorithmName]: "sha384" }, "bad_signature", signatureName],
          [{ [signatureName]: upper, [algorithmName]: ["sha384", "sha384"] }, "unsupported_algorithm", algorithmName],
          // Joined without a blank, as a proxy may join them.
          [{ [signatureName]: upper, [algorithmName]: "sha384,sha384" }, "unsupported_algorithm", algorithmName],
          [
            new Headers([[signatureName, upper], [algorithmName, "sha384"], [algorithmName, "sha384"]]),
            "unsupported_algorithm",
            algorithmName
          ],
          // A record that gives one header under two spellings gives it twice, whichever of them its keys list first.
          [{ [signatureName]: upper, "X-Fin-Signature": upper }, "bad_signature", signatureName],
          [{ "X-FIN-SIGNATURE": upper, [signatureName]: [upper] }, "bad_signature", signatureName],
          [
            { [signatureName]: upper, [algorithmName]: "sha384", "X-Fin-Signature-Algorithm": "sha384" },
            "unsupported_algorithm",
            algorithmName
          ]
        ]
        for (const [headers, reason, name] of repeatedForms) {
          const error = yield* Effect.flip(Webhooks.verify(currentBody, headers, secret))
          expect([error.reason, error.message]).toEqual([
            reason,
            `the ${name} header is repeated (a list, or values joined with a comma)`
          ])
        }
        // An empty list is no value: no signature is missing, no algorithm the default (sha256). So is a null.
        const noSignature = { "x-fin-signature": [] }
        expect(yield* reasonOf(Webhooks.verify(currentBody, noSignature, secret))).toBe("missing_signature")
        for (const none of [null, [null], [5]]) {
          const headers = { "x-fin-signature": none } as {}
          expect(yield* reasonOf(Webhooks.verify(currentBody, headers, secret))).toBe("missing_signature")
        }
        const sha256 = (yield* Webhooks.sign(currentBody, secret))["x-fin-signature"]
        const noAlgorithm = { "x-fin-signature": sha256, "x-fin-signature-algorithm": [] }
        expect((yield* Webhooks.verify(currentBody, noAlgorithm, secret)).type).toBe("beneficiary.status")
      }).pipe(Effect.provide(cryptoLayer)))
  })
}

describe("Webhooks.makeWebCrypto", () => {
  // Jest runs tests in a realm of their own: WebCrypto's promises, and an ArrayBuffer Node made (a fetch Request's
  // `arrayBuffer()`), are then of another realm than the library's `Promise` and `ArrayBuffer`.
  it.effect("works with promises and bytes of another realm (Node's own, under Jest)", () =>
    Effect.gen(function*() {
      const OtherPromise = runInNewContext("Promise") as PromiseConstructor
      const subtle = globalThis.crypto.subtle
      const importKey = subtle.importKey
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          Object.defineProperty(subtle, "importKey", {
            configurable: true,
            value: (...args: Parameters<typeof importKey>) =>
              new OtherPromise((resolve, reject) => importKey.apply(subtle, args).then(resolve, reject))
          })
        }),
        () => Effect.sync(() => delete (subtle as { importKey?: unknown }).importKey)
      )
      const crypto = Webhooks.makeWebCrypto()
      // The first call for a secret meets its key's import still running: a promise of the other realm.
      const headers = yield* Webhooks.sign(currentBody, secret).pipe(
        Effect.provideService(Webhooks.WebhookCrypto, crypto)
      )
      expect(headers).toEqual(yield* Webhooks.sign(currentBody, secret))
      const copy = runInNewContext(
        "(from) => { const to = new ArrayBuffer(from.length); new Uint8Array(to).set(from); return to }"
      )
      const bytes = copy(new TextEncoder().encode(currentBody)) as ArrayBuffer
      expect(bytes instanceof ArrayBuffer).toBe(false)
      const event = yield* Webhooks.verify(bytes as unknown as Uint8Array, headers, secret).pipe(
        Effect.provideService(Webhooks.WebhookCrypto, crypto)
      )
      expect(event.id).toBe("40061557-f125-4b39-97d6-c16a0f1230c1")
    }).pipe(Effect.scoped))

  it.effect("a service with verifySync: undefined (exactOptionalPropertyTypes) verifies through its verify", () =>
    Effect.gen(function*() {
      const crypto: Webhooks.WebhookCryptoService = { ...Webhooks.makeWebCrypto(), verifySync: undefined }
      const headers = yield* Webhooks.sign(currentBody, secret)
      const verifyWith = (body: string) =>
        Webhooks.verify(body, headers, secret).pipe(Effect.provideService(Webhooks.WebhookCrypto, crypto))
      expect((yield* verifyWith(currentBody)).type).toBe("beneficiary.status")
      expect(yield* reasonOf(verifyWith(`${currentBody} `))).toBe("bad_signature")
    }))

  // A custom crypto, untyped, whose verifySync answers a promise (truthy whatever it holds), or whose verify does
  // (`Effect.sync(() => subtle.verify(...))`), accepts no signature.
  it.effect("a verifySync or verify that answers anything but true is no match", () =>
    Effect.gen(function*() {
      const answering = (answer: unknown) =>
        [
          { ...Webhooks.makeWebCrypto(), verifySync: () => answer },
          { ...Webhooks.makeWebCrypto(), verifySync: undefined, verify: () => Effect.succeed(answer) }
        ] as unknown as ReadonlyArray<Webhooks.WebhookCryptoService>
      const headers = yield* Webhooks.sign(currentBody, "whsec_other")
      for (const answer of [Promise.resolve(false), 1, "yes", {}]) {
        for (const crypto of answering(answer)) {
          const verified = Webhooks.verify(currentBody, headers, secret).pipe(
            Effect.provideService(Webhooks.WebhookCrypto, crypto)
          )
          expect(yield* reasonOf(verified)).toBe("bad_signature")
        }
      }
    }))

  // A body in shared memory (handed over from a worker): WebCrypto refuses a view on a SharedArrayBuffer, node:crypto
  // takes it; both layers verify it, and a SharedArrayBuffer itself is bytes as an ArrayBuffer is.
  it.effect("a body in a SharedArrayBuffer verifies and signs with either crypto layer", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode(currentBody)
      const shared = new Uint8Array(new SharedArrayBuffer(bytes.length))
      shared.set(bytes)
      const headers = yield* Webhooks.sign(currentBody, secret)
      for (const crypto of [Webhooks.makeWebCrypto(), NodeWebhookCrypto.make()]) {
        const provided = Effect.provideService(Webhooks.WebhookCrypto, crypto)
        expect((yield* provided(Webhooks.verify(shared, headers, secret))).type).toBe("beneficiary.status")
        const asBuffer = shared.buffer as unknown as Uint8Array
        expect((yield* provided(Webhooks.verify(asBuffer, headers, secret))).type).toBe("beneficiary.status")
        expect(yield* provided(Webhooks.sign(shared, secret))).toEqual(headers)
      }
    }))

  // The built-in WebCrypto implementation reads each delivery's signature from a shared block, more deliveries in
  // flight than a block holds here: each is checked against its own.
  it.effect("600 verifications in flight through makeWebCrypto: each against its own signature", () =>
    Effect.gen(function*() {
      const bodies = Array.from(
        { length: 600 },
        (_, i) => makeBody({ id: `40061557-f125-4b39-97d6-${i + 100000}c16a0f` })
      )
      const signed = yield* Effect.forEach(bodies, (body) => Webhooks.sign(body, secret))
      // Every other delivery carries its neighbour's signature: refused, while its neighbour passes.
      const results = yield* Effect.forEach(bodies, (body, i) =>
        Webhooks.verifySignature(body, signed[i % 2 === 0 ? i : i - 1]!, secret).pipe(Effect.either), {
        concurrency: "unbounded"
      }).pipe(Effect.provideService(Webhooks.WebhookCrypto, Webhooks.makeWebCrypto()))
      expect(results.map(Either.isRight)).toEqual(bodies.map((_, i) => i % 2 === 0))
    }))

  // An implementation of the user's own may keep the signature past its call (reading it late, handing its buffer to a
  // worker): it gets bytes of its own, in a buffer of their own.
  it.effect("a WebhookCrypto of the user's own gets each signature in a buffer of its own", () =>
    Effect.gen(function*() {
      const web = Webhooks.makeWebCrypto()
      const buffers: Array<ArrayBufferLike> = []
      const crypto: Webhooks.WebhookCryptoService = {
        ...web,
        verify: (algorithm, key, body, signature) => {
          buffers.push(signature.buffer)
          const copy = new Uint8Array(signature.buffer.slice(0))
          return Effect.zipRight(Effect.sleep("1 millis"), web.verify(algorithm, key, body, copy))
        }
      }
      const headers = yield* Webhooks.sign(currentBody, secret)
      const verifying = yield* Effect.fork(Effect.all(
        Array.from({ length: 3 }, () => Webhooks.verifySignature(currentBody, headers, secret)),
        { concurrency: "unbounded" }
      ).pipe(Effect.provideService(Webhooks.WebhookCrypto, crypto)))
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(verifying)).toEqual([0, 0, 0])
      expect(buffers.map((buffer) => buffer.byteLength)).toEqual([32, 32, 32])
      expect(new Set(buffers).size).toBe(3)
    }))

  it.effect("a key import that fails is not kept: the next verification imports it again, and passes", () =>
    Effect.gen(function*() {
      const crypto = Webhooks.makeWebCrypto()
      const headers = yield* Webhooks.sign(currentBody, secret)
      const importKey = vi.spyOn(globalThis.crypto.subtle, "importKey")
      importKey.mockRejectedValueOnce(new Error("import failed"))
      try {
        const verifyWith = Webhooks.verify(currentBody, headers, secret).pipe(
          Effect.provideService(Webhooks.WebhookCrypto, crypto)
        )
        expect(Exit.isFailure(yield* Effect.exit(verifyWith))).toBe(true)
        expect((yield* verifyWith).type).toBe("beneficiary.status")
        // Imported once more, then kept: a third verification imports nothing.
        yield* verifyWith
        expect(importKey).toHaveBeenCalledTimes(2)
      } finally {
        importKey.mockRestore()
      }
    }))
})

// --- Decoding and the checks the service lacks ----------------------------------------------------------------------

const signedVerify = (body: string, options?: Webhooks.VerifyOptions) =>
  Effect.flatMap(Webhooks.sign(body, secret), (headers) => Webhooks.verify(body, headers, secret, options))

describe("Webhooks decoding", () => {
  it.effect("decodes every documented type with its data kept as JSON", () =>
    Effect.gen(function*() {
      // The 13 types of the service's WebhookEventEnvelope.type enum (service-facts 7), in its order.
      expect(Webhooks.documentedEventTypes).toEqual([
        "customer.created", "customer.status", "customer.rfi", "transaction.status", "virtual_account.created",
        "virtual_account.created.v2", "virtual_account.status", "virtual_account.status.v2", "beneficiary.created",
        "beneficiary.status", "beneficiary.liquidation.deposit", "batch.transaction.item.status",
        "transit.payment.status"
      ])
      for (const type of Webhooks.documentedEventTypes) {
        if (type === "beneficiary.status") continue
        const data = { anything: [1, "two", { three: null }] }
        const event = yield* signedVerify(makeBody({ type, data }))
        expect(event.type).toBe(type)
        expect(event.data).toEqual(data)
      }
    }))

  it.effect("turns an undocumented type into the Unknown variant, and Match narrows on type", () =>
    Effect.gen(function*() {
      const describeEvent = Match.type<Webhooks.WebhookEvent>().pipe(
        Match.when({ type: "beneficiary.status" }, (e) => `beneficiary ${e.data.beneficiary_id} ${e.data.type}`),
        Match.when({ type: "Unknown" }, (e) => `unknown ${e.received_type}`),
        Match.orElse((e) => `other ${e.type}`)
      )
      const unknown = yield* signedVerify(makeBody({ type: "payout.settled", data: { x: 1 } }))
      expect(unknown.type).toBe("Unknown")
      expect(describeEvent(unknown)).toBe("unknown payout.settled")
      expect(describeEvent(yield* signedVerify(currentBody))).toBe(
        "beneficiary e8fccaeb-fb9d-4fae-846e-ea7c97c70b31 INDIVIDUAL"
      )
      expect(describeEvent(yield* signedVerify(makeBody({ type: "customer.rfi", data: [] })))).toBe(
        "other customer.rfi"
      )
    }))

  it.effect("keeps an unlisted status value, as Unlisted, which a typo cannot be compared with", () =>
    Effect.gen(function*() {
      const event = yield* signedVerify(makeBody({ data: beneficiaryData("SUSPENDED") }))
      if (event.type !== "beneficiary.status") return expect.fail(`decoded as ${event.type}`)
      expect(event.data.status).toEqual(Option.some(new Webhooks.Unlisted({ value: "SUSPENDED" })))
      const status = Option.getOrThrow(event.data.status)
      // @ts-expect-error "ACTIV" is no status: a misspelt comparison does not compile
      expect(status === "ACTIV").toBe(false)
      const described = typeof status === "string" ? status : `unlisted ${status.value}`
      expect(described).toBe("unlisted SUSPENDED")
      // Written out as received: in a log line and in JSON; compared by its text or by value.
      expect(`${status}`).toBe("SUSPENDED")
      expect(String(status) === String(new Webhooks.Unlisted({ value: "SUSPENDED" }))).toBe(true)
      expect(Equal.equals(status, new Webhooks.Unlisted({ value: "SUSPENDED" }))).toBe(true)
      // Matched exhaustively as the README says.
      const label = Match.value(status).pipe(
        Match.when("PROCESSING", () => "pending"),
        Match.when("ACTIVE", () => "usable"),
        Match.when("INACTIVE", () => "closed"),
        Match.when("REJECTED", () => "closed"),
        Match.tag("Unlisted", (unlisted) => `unknown (${unlisted.value})`),
        Match.exhaustive
      )
      expect(label).toBe("unknown (SUSPENDED)")
      expect(JSON.parse(JSON.stringify(event.data))).toMatchObject({ status: { value: "SUSPENDED" }, type: "INDIVIDUAL" })
      // Encoded back as received, so an event re-signed in a test is the service's.
      const encoded = Schema.encodeSync(Webhooks.BeneficiaryStatusData)(event.data)
      expect([encoded.status, encoded.type]).toEqual(["SUSPENDED", "INDIVIDUAL"])
      // A listed value stays the literal.
      const active = yield* signedVerify(makeBody({ data: beneficiaryData("ACTIVE") }))
      if (active.type !== "beneficiary.status") return expect.fail(`decoded as ${active.type}`)
      expect(active.data.status).toEqual(Option.some("ACTIVE"))
    }))

  it.effect("reads a null status as none; a status that is not a string is still malformed", () =>
    Effect.gen(function*() {
      const event = yield* signedVerify(makeBody({ data: { ...beneficiaryData("ACTIVE"), status: null } }))
      if (event.type !== "beneficiary.status") return expect.fail(`decoded as ${event.type}`)
      expect(event.data.status).toEqual(Option.none())
      const error = yield* Effect.flip(signedVerify(makeBody({ data: { ...beneficiaryData("ACTIVE"), status: 1 } })))
      expect(error.reason).toBe("malformed_body")
    }))

  it.effect("a malformed body is told with every issue, in the envelope and in the event's data", () =>
    Effect.gen(function*() {
      const envelope = JSON.parse(makeBody({})) as { event: Record<string, unknown> }
      delete envelope.event.id
      envelope.event.created_at = "yesterday"
      const badEnvelope = yield* Effect.flip(signedVerify(JSON.stringify(envelope)))
      expect(badEnvelope.issues?.map((issue) => issue.path)).toEqual(["event.id", "event.created_at"])
      const badData = yield* Effect.flip(
        signedVerify(makeBody({ data: { ...beneficiaryData("ACTIVE"), status: 1, type: 2 } }))
      )
      // Each field once, its listed values and the text any other value is read from said together.
      expect(badData.issues?.map(({ expected, path }) => `${path}: ${expected}`)).toEqual([
        `data.type: "INDIVIDUAL" or "BUSINESS" or a string`,
        `data.status: "PROCESSING" or "ACTIVE" or "INACTIVE" or "REJECTED" or a string`
      ])
    }))

  it.effect("an id longer than 256 characters is malformed (the dedupe store is bounded in entries, not bytes)", () =>
    Effect.gen(function*() {
      const longest = "i".repeat(256)
      const event = yield* signedVerify(makeBody({ id: longest, referenceId: longest }))
      expect(event.id).toBe(longest)
      const tooLong = [{ id: "i".repeat(257) }, { referenceId: "r".repeat(20_000) }]
      for (const spec of [...tooLong, { id: "" }, { referenceId: "" }]) {
        const error = yield* Effect.flip(signedVerify(makeBody(spec)))
        expect(error.reason).toBe("malformed_body")
      }
    }))

  it.effect("an id with a control or bidi character or half a surrogate pair is malformed (a log field, a key)", () =>
    Effect.gen(function*() {
      // JSON.stringify writes the lone halves as `\ud800` and `\udc00`: both would be U+FFFD in a Redis key.
      for (const id of ["evt-\ud800", "evt-\udc00", "e\u001b[2J", "e\u009b", "e\u202ex", "e\u2066", "e\u2028"]) {
        const error = yield* Effect.flip(signedVerify(makeBody({ id })))
        expect(error.reason).toBe("malformed_body")
        expect(error.issues?.map((issue) => issue.path)).toEqual(["event.id"])
      }
      // Whole characters outside ASCII make an id all the same.
      const event = yield* signedVerify(makeBody({ id: "évé-😀-東京" }))
      expect(event.id).toBe("évé-😀-東京")
    }))

  it.effect("keeps an unlisted beneficiary type; a type that is not a string is still malformed", () =>
    Effect.gen(function*() {
      const event = yield* signedVerify(makeBody({ data: { ...beneficiaryData("ACTIVE"), type: "JOINT" } }))
      if (event.type !== "beneficiary.status") return expect.fail(`decoded as ${event.type}`)
      expect(event.data.type).toEqual(new Webhooks.Unlisted({ value: "JOINT" }))
      // @ts-expect-error "BUSSINESS" is no beneficiary type
      expect(event.data.type === "BUSSINESS").toBe(false)
      const error = yield* Effect.flip(signedVerify(makeBody({ data: { ...beneficiaryData("ACTIVE"), type: 1 } })))
      expect(error.reason).toBe("malformed_body")
    }))

  it.effect("accepts a missing sandbox_mode and timestamps with offsets or without a fraction", () =>
    Effect.gen(function*() {
      const noSandbox = yield* signedVerify(makeBody({ sandbox: undefined }))
      expect(noSandbox.sandbox_mode).toEqual(Option.none())
      const offset = yield* signedVerify(makeBody({ createdAt: "2026-04-04T19:38:26.843132+02:00" }))
      expect(DateTime.formatIso(offset.created_at)).toBe("2026-04-04T17:38:26.843Z")
      const negative = yield* signedVerify(makeBody({ createdAt: "2026-04-04T12:08:26.843999-0530" }))
      expect(DateTime.formatIso(negative.created_at)).toBe("2026-04-04T17:38:26.843Z")
      const whole = yield* signedVerify(makeBody({ createdAt: "2026-04-04T17:38:26Z" }))
      expect(DateTime.formatIso(whole.created_at)).toBe("2026-04-04T17:38:26.000Z")
      // RFC 3339 allows the T and Z in lower case.
      const lowerCase = yield* signedVerify(makeBody({ createdAt: "2026-04-04t17:38:26.843132z" }))
      expect(DateTime.formatIso(lowerCase.created_at)).toBe("2026-04-04T17:38:26.843Z")
    }))

  it.effect("rejects malformed bodies with safe issues: paths and expected types, never the values", () =>
    Effect.gen(function*() {
      const marker = "SENSITIVE-VALUE-42"
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["not json " + marker, ""],
        [makeBody({ data: { ...beneficiaryData("ACTIVE"), active: marker } }), "data.active"],
        [makeBody({ data: { ...beneficiaryData("ACTIVE"), beneficiary_id: undefined } }), "data.beneficiary_id"],
        [makeBody({ createdAt: marker }), "event.created_at"],
        [makeBody({ createdAt: "2026-02-30T10:00:00Z" }), "event.created_at"],
        // Each field past its range, which `Date` would roll over into the next month, day, hour or minute.
        ...["2026-13-01T10:00:00Z", "2026-04-04T24:00:00Z", "2026-04-04T10:60:00Z", "2026-04-04T10:00:60Z"].map(
          (createdAt) => [makeBody({ createdAt }), "event.created_at"] as const
        ),
        ...["2026-04-04T10:00:00+24:00", "2026-04-04T10:00:00+05:60"].map(
          (createdAt) => [makeBody({ createdAt }), "event.created_at"] as const
        ),
        [makeBody({ createdAt: "2026-04-04" }), "event.created_at"],
        [JSON.stringify({ event: { id: marker } }), "event.event_reference_id"],
        [makeBody({ type: "customer.status", data: undefined }), "data"]
      ]
      for (const [body, path] of cases) {
        const error = yield* Effect.flip(signedVerify(body))
        expect(error.reason).toBe("malformed_body")
        expect(JSON.stringify(error)).not.toContain(marker)
        expect(error.message).not.toContain(marker)
        if (path !== "") expect(error.issues?.map((issue) => issue.path)).toContain(path)
      }
      const notUtf8 = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])
      const headers = yield* Webhooks.sign(notUtf8, secret)
      expect(yield* reasonOf(Webhooks.verify(notUtf8, headers, secret))).toBe("malformed_body")
    }))

  it.effect("fails with no_secret when no usable secret is given", () =>
    Effect.gen(function*() {
      const headers = yield* Webhooks.sign(currentBody, secret)
      expect(yield* reasonOf(Webhooks.verify(currentBody, headers, []))).toBe("no_secret")
      expect(yield* reasonOf(Webhooks.verify(currentBody, headers, [""]))).toBe("no_secret")
      // A secret with a trailing newline (read from a file) would refuse every delivery as a bad signature.
      const padded = yield* Effect.flip(Webhooks.verify(currentBody, headers, [secret, `${secretValue}\n`]))
      expect(padded.reason).toBe("no_secret")
      expect(padded.message).toContain("whitespace")
      expect(padded.message).not.toContain(secretValue)
      // Wherever it is in the list: one padded secret before a good one is refused too.
      expect(yield* reasonOf(Webhooks.verify(currentBody, headers, [`${secretValue}\n`, secret]))).toBe("no_secret")
      // A secret that is no text (untyped configuration), or one wiped since (also after a first use), is no
      // secret, not a defect.
      const wipedLater = Redacted.make(secretValue)
      expect((yield* Webhooks.verify(currentBody, headers, wipedLater)).type).toBe("beneficiary.status")
      Redacted.unsafeWipe(wipedLater)
      for (const secrets of [undefined, null, 42, [42], [secret, undefined], Redacted.make(42), wipedLater, [wipedLater]]) {
        const notText = yield* Effect.flip(Webhooks.verify(currentBody, headers, secrets as Webhooks.Secrets))
        expect([notText.reason, notText.message]).toEqual([
          "no_secret",
          "the configuration holds a webhook secret that is not text (or was wiped)"
        ])
        expect(yield* reasonOf(Webhooks.verifySignature(currentBody, headers, secrets as Webhooks.Secrets))).toBe(
          "no_secret"
        )
      }
      // An environment other than the two is a mistake in the caller's configuration: a defect, said at once.
      expect(defectOf(Webhooks.verify(currentBody, headers, secret, { environment: "Sandbox" as "sandbox" }))).toEqual(
        illegalArgument(`effect-fin: Webhooks.verify: environment must be "sandbox" or "production"`)
      )
    }))

  it.effect("never shows a secret in an error", () =>
    Effect.gen(function*() {
      const headers = yield* Webhooks.sign(currentBody, Redacted.make("another-secret-value"))
      const error = yield* Effect.flip(Webhooks.verify(currentBody, headers, [secret, secretValue]))
      for (const text of [JSON.stringify(error), String(error), error.message, JSON.stringify(error.toJSON())]) {
        expect(text).not.toContain(secretValue)
        expect(text).not.toContain("another-secret-value")
      }
    }))

  it.effect("refuses events older than maxAge, on the Clock", () =>
    Effect.gen(function*() {
      const createdAt = DateTime.toEpochMillis(DateTime.unsafeMake("2026-04-04T17:38:26.843Z"))
      // A limit with a fraction of a millisecond is said rounded down: never as long as the age it refused.
      yield* TestClock.setTime(createdAt + 2)
      expect(yield* Effect.flip(signedVerify(currentBody, { maxAge: "1500 micros" }))).toMatchObject({
        message: "the event was created 2ms ago, over maxAge (1ms)"
      })
      yield* TestClock.setTime(createdAt + 4 * 60_000)
      expect((yield* signedVerify(currentBody, { maxAge: "5 minutes" })).type).toBe("beneficiary.status")
      // Exactly maxAge old is not older than it.
      yield* TestClock.adjust("1 minute")
      expect((yield* signedVerify(currentBody, { maxAge: "5 minutes" })).type).toBe("beneficiary.status")
      yield* TestClock.adjust("1 millis")
      expect(yield* reasonOf(signedVerify(currentBody, { maxAge: "5 minutes" }))).toBe("too_old")
      yield* TestClock.adjust("2 minutes")
      // The message says by how much, and the limit: which of the two is wrong shows in a log.
      expect(yield* Effect.flip(signedVerify(currentBody, { maxAge: "5 minutes" }))).toMatchObject({
        reason: "too_old",
        message: "the event was created 7m 1ms ago, over maxAge (5m)"
      })
      // Years old, said in whole milliseconds exactly: past 104 days a double's nanoseconds add noise ("64ns").
      yield* TestClock.adjust(Duration.sum(Duration.days(20_000), Duration.millis(42)))
      expect(yield* Effect.flip(signedVerify(currentBody, { maxAge: "5 minutes" }))).toMatchObject({
        message: "the event was created 20000d 7m 43ms ago, over maxAge (5m)"
      })
      // Off by default.
      expect((yield* signedVerify(currentBody)).type).toBe("beneficiary.status")
    }))

  it("refuses a maxAge that is not a finite duration greater than zero: a defect of the verification", () => {
    for (
      const [maxAge, problem] of [
        [Number.NaN, "must say its unit"],
        [3600, `must say its unit ("30 seconds", Duration.seconds(30)): a bare number would be read as milliseconds`],
        ["-5 seconds", "must be greater than zero"],
        [Duration.infinity, "must be finite"],
        ["1 fortnight", "is not a valid duration"]
      ] as const
    ) {
      // Built without a throw: the effect dies when run.
      const verification = Webhooks.verify(currentBody, {}, secret, { maxAge: maxAge as FinConfig.DurationOption })
      const defect = defectOf(verification)
      expect(defect, String(maxAge)).toBeInstanceOf(Cause.IllegalArgumentException)
      expect((defect as Error).message, String(maxAge)).toContain(`effect-fin: Webhooks.verify: maxAge ${problem}`)
    }
  })

  it.effect("options that are not an object (untyped code) are a defect naming the mistake, not a TypeError", () =>
    Effect.gen(function*() {
      const headers = yield* Webhooks.sign(currentBody, secret)
      for (const options of [null, "sandbox", 5]) {
        const exit = yield* Effect.exit(Webhooks.verify(currentBody, headers, secret, options as never))
        const defect = Exit.isFailure(exit) ? Cause.dieOption(exit.cause) : Option.none()
        expect(Option.map(defect, (e) => (e as Error).message)).toEqual(
          Option.some("effect-fin: Webhooks.verify: takes an options object or none")
        )
      }
    }))

  it.effect("with maxAge, refuses events dated more than 5 minutes ahead of the Clock (from_future)", () =>
    Effect.gen(function*() {
      const createdAt = DateTime.toEpochMillis(DateTime.unsafeMake("2026-04-04T17:38:26.843Z"))
      // A clock a little behind the service's passes; one more than 5 minutes behind does not.
      yield* TestClock.setTime(createdAt - 5 * 60_000)
      expect((yield* signedVerify(currentBody, { maxAge: "1 hour" })).type).toBe("beneficiary.status")
      yield* TestClock.setTime(createdAt - 5 * 60_000 - 1)
      expect(yield* Effect.flip(signedVerify(currentBody, { maxAge: "1 hour" }))).toMatchObject({
        reason: "from_future",
        message: "the event is dated 5m 1ms ahead of this clock, over the 5 minutes allowed"
      })
      // Off without maxAge, like the age check.
      expect((yield* signedVerify(currentBody)).type).toBe("beneficiary.status")
    }))

  it.effect("checks sandbox_mode against the expected environment", () =>
    Effect.gen(function*() {
      expect(yield* reasonOf(signedVerify(currentBody, { environment: "production" }))).toBe("wrong_environment")
      expect((yield* signedVerify(currentBody, { environment: "sandbox" })).type).toBe("beneficiary.status")
      const live = makeBody({ sandbox: false })
      expect(yield* reasonOf(signedVerify(live, { environment: "sandbox" }))).toBe("wrong_environment")
      expect((yield* signedVerify(live, { environment: "production" })).type).toBe("beneficiary.status")
      // The crypto-orchestration envelope has no sandbox_mode: nothing to check.
      for (const environment of ["production", "sandbox"] as const) {
        expect((yield* signedVerify(makeBody({ sandbox: undefined }), { environment })).type).toBe("beneficiary.status")
      }
    }))

  it.effect("encodes an event back to its envelope", () =>
    Effect.gen(function*() {
      const unknown = yield* signedVerify(makeBody({ type: "payout.settled", data: { x: 1 } }))
      const envelope = yield* Schema.encode(Webhooks.WebhookEventFromEnvelope)(unknown)
      expect(envelope.event.type).toBe("payout.settled")
      expect(envelope).not.toHaveProperty("received_type")
    }))

  it.effect.prop(
    "rejects any change to the body or the signature",
    {
      change: FastCheck.constantFrom("flip body byte", "insert body byte", "drop body byte", "change hex digit", "cut signature"),
      position: FastCheck.nat(),
      byte: FastCheck.integer({ min: 1, max: 255 })
    },
    ({ byte, change, position }) =>
      Effect.gen(function*() {
        const body = new TextEncoder().encode(currentBody)
        const headers = yield* Webhooks.sign(body, secret)
        const signature = headers["x-fin-signature"]
        const at = position % body.length
        const i = position % signature.length
        let tamperedBody = body
        let tamperedSignature = signature
        switch (change) {
          case "flip body byte":
            tamperedBody = body.slice()
            tamperedBody[at] = body[at]! ^ byte
            break
          case "insert body byte":
            tamperedBody = new Uint8Array([...body.subarray(0, at), byte, ...body.subarray(at)])
            break
          case "drop body byte":
            tamperedBody = new Uint8Array([...body.subarray(0, at), ...body.subarray(at + 1)])
            break
          case "change hex digit":
            tamperedSignature = signature.slice(0, i) +
              ((parseInt(signature[i]!, 16) + (byte % 15) + 1) % 16).toString(16) + signature.slice(i + 1)
            break
          case "cut signature":
            tamperedSignature = signature.slice(0, i)
            break
        }
        const tampered = { ...headers, "x-fin-signature": tamperedSignature }
        const error = yield* Effect.flip(Webhooks.verify(tamperedBody, tampered, secret))
        expect(error.reason).toBe(tamperedSignature === "" ? "missing_signature" : "bad_signature")
      }).pipe(Effect.provide(NodeWebhookCrypto.layer)),
    { fastCheck: { numRuns: 200 } }
  )
})

// --- The HttpApp handler ---------------------------------------------------------------------------------------------

const url = "http://localhost/webhooks/fin"

interface Answer {
  readonly status: number
  readonly body: string
  readonly headers: globalThis.Headers
}

// Runs the app on the test's runtime, so its TestClock and logger apply; with node:crypto's verification unless the
// test provides a WebhookCrypto. It is synchronous, where WebCrypto's runs on libuv's thread pool in real time, which a
// loaded machine stretches past the turns `settle` waits: a delivery would then reach the TestClock late.
const nodeCrypto = NodeWebhookCrypto.make()
const webHandler = <E>(app: HttpApp.Default<E, Scope.Scope>) =>
  Effect.map(Effect.runtime<never>(), (runtime) =>
    HttpApp.toWebHandlerRuntime(runtime)(
      Option.isSome(Context.getOption(runtime.context, Webhooks.WebhookCrypto))
        ? app
        : Effect.provideService(app, Webhooks.WebhookCrypto, nodeCrypto)
    ))

const send = (handle: (request: Request) => Promise<Response>, request: Request) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await handle(request)
    return { status: response.status, body: await response.text(), headers: response.headers }
  })

const post = (body: string, headers: Record<string, string>) =>
  new Request(url, { method: "POST", body, headers })

const signedPost = (body: string, algorithm?: Webhooks.Algorithm) =>
  Effect.map(Webhooks.sign(body, secret, algorithm), (headers) => post(body, { ...headers }))

// Handlers that record what they saw.
const recorder = Effect.gen(function*() {
  const seen = yield* Ref.make(Chunk.empty<string>())
  const record = (line: string) => Ref.update(seen, Chunk.append(line))
  return { seen: Effect.map(Ref.get(seen), Chunk.toReadonlyArray), record }
})

// What a status handler records: the status, and whether the delivery was stale.
const statusLine = (event: Webhooks.WebhookEventOf<"beneficiary.status">, delivery: Webhooks.Delivery) =>
  `${Option.getOrElse(event.data.status, () => "none")}${delivery.stale ? " stale" : ""}`

/** A handler under `secret` (with `options`) whose user handlers, made from `record`, write down what they saw. */
const recordingHandler = (
  handlers: (record: (line: string) => Effect.Effect<void>) => {
    readonly [T in Webhooks.EventType]?: (
      event: Webhooks.WebhookEventOf<T>,
      delivery: Webhooks.Delivery
    ) => Effect.Effect<unknown, unknown>
  },
  options: Omit<Webhooks.HandlerOptions<Webhooks.Handlers>, "secrets" | "handlers"> = {}
) =>
  Effect.gen(function*() {
    const { record, seen } = yield* recorder
    const handle = yield* webHandler(Webhooks.handler({ secrets: secret, ...options, handlers: handlers(record) }))
    return { handle, seen }
  })

// Turns of the event loop, for fibers of the app (run by the web handler) to run, until `done` holds of the TestClock's
// pending sleeps (their wake-up times) for several turns in a row; each turn is a `setTimeout(0)`, which also lets
// fibers that Effect's scheduler put off to a timer of their own run first. Dies after 2,000 turns, so a test never
// hangs on it. Fixed real-time pauses would race a loaded machine.
const settleUntil = (done: (sleeps: ReadonlyArray<number>, now: number) => boolean) =>
  Effect.gen(function*() {
    const turn = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 0)))
    let last = ""
    let same = 0
    for (let turns = 0; turns < 2_000; turns++) {
      yield* turn
      const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps())
      const now = yield* Clock.currentTimeMillis
      const key = sleeps.join(",")
      same = key === last && done(sleeps, now) ? same + 1 : 0
      last = key
      if (same >= 5) return
    }
    return yield* Effect.dieMessage("settle: the app's fibers did not settle within 2,000 turns of the event loop")
  })

// Until the app's fibers are parked: the pending sleeps stay the same (a sleep interrupted stays listed until its time,
// so a fiber that ends without a new sleep is not seen; wait for what such a fiber does explicitly).
const settle = settleUntil(() => true)

// A store's failure to reach its backend.
const refused = (operation: "renew") =>
  new Webhooks.WebhookDedupeStoreError({ operation, message: "connection refused" })

// The TestClock moved `times` steps of `step`, the app's fibers settled after each.
const moveClock = (times: number, step: Duration.DurationInput) =>
  Effect.gen(function*() {
    for (let i = 0; i < times; i++) yield* Effect.zipRight(TestClock.adjust(step), settle)
  })

// A handler on `store` with a 3 s claim, whose handler is `run` (in a scope of its own, told how many handlers are
// running besides it); the current example delivered (forked) and settled once the handler has started. `most`: the
// most handlers that ran at once.
const claimRig = (
  store: Webhooks.WebhookDedupeStoreService,
  run: (ordinal: number) => Effect.Effect<void, never, Scope.Scope>
) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const counts = { runs: 0, running: 0, most: 0 }
    const handle = yield* webHandler(Webhooks.handler({
      secrets: secret,
      store,
      claimTtl: "3 seconds",
      handlers: {
        "beneficiary.status": () =>
          Effect.gen(function*() {
            counts.most = Math.max(counts.most, ++counts.running)
            yield* Effect.addFinalizer(() => Effect.sync(() => counts.running--))
            const ordinal = ++counts.runs
            yield* Deferred.succeed(started, undefined)
            yield* run(ordinal)
          }).pipe(Effect.scoped)
      }
    }))
    const deliver = Effect.flatMap(signedPost(currentBody), (request) => send(handle, request))
    const first = yield* Effect.fork(deliver)
    yield* Deferred.await(started)
    yield* settle
    return { deliver, first, counts }
  })

// A user handler that says when it starts, then waits to be let go; counts its runs.
const gate = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  let runs = 0
  return {
    run: Effect.gen(function*() {
      runs++
      yield* Deferred.succeed(started, undefined)
      yield* Deferred.await(release)
    }),
    started: Deferred.await(started),
    open: Deferred.succeed(release, undefined),
    runs: () => runs
  }
})

/**
 * A memory store whose `claim` pauses `before` or `after` taking the claim, as a remote store's round trip may:
 * `paused` once it got there, `resume` to let it go on.
 */
const pausedClaims = (at: "before" | "after") =>
  Effect.gen(function*() {
    const memory = Webhooks.makeMemoryDedupeStore()
    const reached = yield* Deferred.make<void>()
    const go = yield* Deferred.make<void>()
    const pause = Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(go))
    const store: Webhooks.WebhookDedupeStoreService = {
      ...memory,
      claim: (eventId, referenceId, ttl) =>
        at === "before"
          ? Effect.zipRight(pause, memory.claim(eventId, referenceId, ttl))
          : Effect.tap(memory.claim(eventId, referenceId, ttl), () => pause)
    }
    return { memory, store, paused: Deferred.await(reached), resume: Deferred.succeed(go, undefined) }
  })

/** A handler whose user handler waits at the gate, with `options` beside the secret. */
const gatedHandler = (options: Omit<Webhooks.HandlerOptions<Webhooks.Handlers>, "secrets" | "handlers"> = {}) =>
  Effect.gen(function*() {
    const handler = yield* gate
    const handle = yield* webHandler(Webhooks.handler({
      secrets: secret,
      ...options,
      handlers: { "beneficiary.status": () => handler.run }
    }))
    return { handler, handle }
  })

describe("Webhooks.handler", () => {
  // With each crypto layer: the other tests use node:crypto's (see webHandler).
  for (const [name, cryptoLayer] of cryptoLayers) {
    it.effect(`handles a delivery once and answers duplicates with 200 (${name})`, () =>
      Effect.gen(function*() {
        const { handle, seen } = yield* recordingHandler((record) => ({
          "beneficiary.status": (event) =>
            record(`${event.id} ${Option.getOrElse(event.data.status, () => "none")}`)
        }))
        const first = yield* send(handle, yield* signedPost(currentBody))
        expect(first.status).toBe(200)
        expect(JSON.parse(first.body)).toEqual({ outcome: "handled" })
        const again = yield* send(handle, yield* signedPost(currentBody, "sha512"))
        expect(again.status).toBe(200)
        expect(JSON.parse(again.body)).toEqual({ outcome: "duplicate" })
        const forged = yield* send(handle, post(currentBody, { "x-fin-signature": "ab".repeat(32) }))
        expect([forged.status, forged.body]).toEqual([401, ""])
        expect(yield* seen).toEqual(["40061557-f125-4b39-97d6-c16a0f1230c1 PROCESSING"])
      }).pipe(Effect.provide(cryptoLayer)))
  }

  // A web framework's middleware that read `await request.json()` leaves the body used (its stream locked): reading it
  // is a defect in the platform, which a web handler answers 500 without a log line, delivery after delivery.
  it.effect("a Request whose body was read before the handler is refused 400, said so, not a silent 500", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.status": (event) => record(event.id)
      })).pipe(Effect.provide(capture))
      const request = yield* signedPost(currentBody)
      yield* Effect.promise(() => request.json())
      const answer = yield* send(handle, request)
      expect([answer.status, answer.body]).toEqual([400, `{"error":"malformed_body"}`])
      // Nothing is left unread: the connection is kept, as after any 400 of a body read whole.
      expect(answer.headers.get("connection")).toBeNull()
      expect(yield* seen).toEqual([])
      expect(logs.join("\n")).toContain("the body was read before the handler")
      // Unsigned as well: a 401 that says nothing, as before any body is looked at.
      const unsigned = post(currentBody, {})
      yield* Effect.promise(() => unsigned.text())
      expect([(yield* send(handle, unsigned)).status]).toEqual([401])
      // A clone read first leaves the request's own body whole.
      const cloned = yield* signedPost(currentBody)
      yield* Effect.promise(() => cloned.clone().json())
      expect((yield* send(handle, cloned)).status).toBe(200)
    }))

  it.effect("a secret wiped after the handler was built (at shutdown, say) answers 500 no_secret, logged, not a defect", () =>
    Effect.gen(function*() {
      const wipeable = Redacted.make(secretValue)
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({ secrets: wipeable, handlers: {} })).pipe(Effect.provide(capture))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      Redacted.unsafeWipe(wipeable)
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(500)
      expect(logs.join("\n")).toContain("no_secret")
      // Our own misconfiguration: at Error, not as a rejection of the sender's.
      expect(logs.find((line) => line.includes("no_secret"))).toMatch(/^ERROR /)
    }))

  it.effect("a store's defect, answered 500 by the platform, ends the delivery's spans failed, outcome defect", () =>
    Effect.gen(function*() {
      // Before the claim (the request span only), and after it, in the handler's run (its span too).
      for (const [broken, expected] of [
        [{ claim: () => Effect.dieMessage("driver bug") }, ["effect-fin.webhook defect Failure driver bug"]],
        [{ complete: () => Effect.dieMessage("driver bug") }, [
          "effect-fin.webhook defect Failure driver bug",
          "effect-fin.webhook.handle defect Failure driver bug"
        ]],
        // The same broken driver's release dying too: both defects kept, neither in place of the other.
        [{ complete: () => Effect.dieMessage("complete bug"), release: () => Effect.dieMessage("release bug") }, [
          "effect-fin.webhook defect Failure complete bug,release bug",
          "effect-fin.webhook.handle defect Failure complete bug,release bug"
        ]]
      ] as const) {
        const { layer, spans } = yield* recordingTracer
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          store: { ...Webhooks.makeMemoryDedupeStore(), ...broken },
          handlers: { "beneficiary.status": () => Effect.void }
        })).pipe(Effect.provide(layer))
        expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(500)
        const ended = (yield* spans).filter((span) => span.name.startsWith("effect-fin.webhook")).map((span) => {
          const exit = span.status._tag === "Ended" ? span.status.exit : undefined
          const defects = exit !== undefined && Exit.isFailure(exit)
            ? Chunk.toArray(Cause.defects(exit.cause)).map((defect) => (defect as Error).message)
            : []
          const outcome = span.attributes.get("fin.webhook.outcome")
          return `${span.name} ${outcome} ${exit?._tag ?? "open"} ${defects.join(",")}`
        })
        expect(ended).toEqual(expected)
      }
    }))

  it.effect("a delivery answered 500 (its handler failed) ends its spans as failed; a handled one does not", () =>
    Effect.gen(function*() {
      const { layer, spans } = yield* recordingTracer
      let failing = true
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => failing ? Effect.fail("db down") : Effect.void }
      })).pipe(Effect.provide(layer))
      const ended = Effect.map(spans, (all) =>
        all.filter((span) => span.name.startsWith("effect-fin.webhook")).map((span) =>
          `${span.name} ${span.attributes.get("fin.webhook.outcome")} ${
            span.status._tag === "Ended" ? span.status.exit._tag : "open"
          }`
        ))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(500)
      expect(yield* ended).toEqual([
        "effect-fin.webhook failed Failure",
        "effect-fin.webhook.handle failed Failure"
      ])
      // What a tracer records as the span's error (OpenTelemetry's status message): the marker's message, not the
      // answer rendered as JSON.
      const messages = (yield* spans).flatMap((span) =>
        span.status._tag === "Ended" && span.status.exit._tag === "Failure"
          ? Cause.prettyErrors(span.status.exit.cause).map((error) => error.message)
          : []
      )
      expect(messages).toEqual([
        "the webhook delivery was answered 500",
        "the webhook delivery was answered 500"
      ])
      failing = false
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect((yield* ended).slice(2)).toEqual([
        "effect-fin.webhook handled Success",
        "effect-fin.webhook.handle handled Success"
      ])
    }))

  // During a rotation, the operator sees from the span, and the handler from its delivery, which secret signed it.
  it.effect("tells the handler and the span which secret of a rotation verified a delivery, or why none did", () =>
    Effect.gen(function*() {
      const { layer, spans } = yield* recordingTracer
      const { record, seen } = yield* recorder
      const oldSecret = "whsec_old_rotated_out"
      const handle = yield* webHandler(Webhooks.handler({
        secrets: [secret, oldSecret],
        handlers: { "beneficiary.status": (event, delivery) => record(`${event.id} ${delivery.secret}`) }
      })).pipe(Effect.provide(layer))
      const first = makeBody({ id: "40061557-f125-4b39-97d6-c16a0f1230c1" })
      const second = makeBody({ id: "40061557-f125-4b39-97d6-c16a0f1230c2", createdAt: "2026-04-04T17:39:00Z" })
      expect((yield* send(handle, post(first, yield* Webhooks.sign(first, oldSecret)))).status).toBe(200)
      expect((yield* send(handle, post(second, yield* Webhooks.sign(second, secret)))).status).toBe(200)
      // A rejected delivery was verified by none.
      expect((yield* send(handle, post(second, { "x-fin-signature": "00".repeat(32) }))).status).toBe(401)
      expect(yield* seen).toEqual(["40061557-f125-4b39-97d6-c16a0f1230c1 1", "40061557-f125-4b39-97d6-c16a0f1230c2 0"])
      const requests = (yield* spans).filter((span) => span.name === "effect-fin.webhook")
      expect(requests.map((span) => span.attributes.get("fin.webhook.secret"))).toEqual([1, 0, undefined])
      // Why the last was rejected: on its span, as its log line is said at Warning once a minute at most.
      expect(requests.map((span) => span.attributes.get("fin.webhook.reason")))
        .toEqual([undefined, undefined, "bad_signature"])
    }))

  it.effect("answers 401 without detail on a bad or missing signature, 400 on a malformed body", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({ "beneficiary.status": (event) => record(event.id) }))
      const signed = yield* Webhooks.sign(currentBody, secret)
      const wrongSecret = yield* Webhooks.sign(currentBody, "whsec_other")
      for (
        const headers of [
          {},
          { ...wrongSecret },
          { ...signed, "x-fin-signature-algorithm": "md5" },
          { "x-fin-signature": "not hex" }
        ]
      ) {
        const answer = yield* send(handle, post(currentBody, headers))
        expect(answer.status).toBe(401)
        expect(answer.body).toBe("")
      }
      const tampered = yield* send(handle, post(currentBody.replace("PROCESSING", "ACTIVE\"  "), { ...signed }))
      expect(tampered.status).toBe(401)
      const malformed = yield* send(handle, yield* signedPost(makeBody({ data: { active: "yes" } })))
      expect(malformed.status).toBe(400)
      expect(JSON.parse(malformed.body)).toEqual({ error: "malformed_body" })
      const badLength = yield* send(handle, new Request(url, { method: "POST", body: currentBody, headers: { ...signed, "content-length": "12x" } }))
      expect(badLength.status).toBe(400)
      expect(JSON.parse(badLength.body)).toEqual({ error: "malformed_body" })
      // A Content-Length of 0 reads no body: a signed empty one is malformed, and a body sent past it is never the one
      // verified.
      const empty = yield* send(handle, post("", { ...(yield* Webhooks.sign("", secret)), "content-length": "0" }))
      expect([empty.status, JSON.parse(empty.body)]).toEqual([400, { error: "malformed_body" }])
      expect((yield* send(handle, post(currentBody, { ...signed, "content-length": "0" }))).status).toBe(401)
      const get = yield* send(handle, new Request(url, { method: "GET" }))
      expect(get.status).toBe(405)
      expect(yield* seen).toEqual([])
    }))

  it.effect("answers 413 for a Content-Length over the limit without reading the body", () =>
    Effect.gen(function*() {
      let pulls = 0
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {}, maxBodySize: 1024 }))
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulls++
          controller.enqueue(new Uint8Array(512))
          if (pulls === 4) controller.close()
        }
      })
      const headers = { ...(yield* Webhooks.sign("x", secret)), "content-length": "2048" }
      const init: RequestInit & { readonly duplex: "half" } = { method: "POST", body, headers, duplex: "half" }
      const answer = yield* send(handle, new Request(url, init))
      expect(answer.status).toBe(413)
      expect(answer.headers.get("connection")).toBe("close")
      // Only what the stream buffers ahead of any reader (its high-water mark) was produced.
      expect(pulls).toBeLessThanOrEqual(1)
    }))

  // README: an answer given before the body was read ("400 for a Content-Length that is no number") closes the
  // connection. Node's parser refuses such a header itself; a web runtime's Request passes it on.
  it.effect("answers 400 to a Content-Length that is no number, closing the connection", () =>
    Effect.gen(function*() {
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {} }))
      const headers = { ...(yield* Webhooks.sign(currentBody, secret)), "content-length": "abc" }
      const answer = yield* send(handle, new Request(url, { method: "POST", body: currentBody, headers }))
      expect([answer.status, JSON.parse(answer.body)]).toEqual([400, { error: "malformed_body" }])
      expect(answer.headers.get("connection")).toBe("close")
    }))

  // A compressed body fails its signature or its JSON either way it was signed: the encoding is named instead.
  it.effect("answers 400 to a Content-Encoding other than identity, named in the log, before the body is read", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.status": (event) => record(event.id)
      })).pipe(Effect.provide(capture))
      const compressed = Zlib.gzipSync(currentBody)
      for (const body of [compressed, new TextEncoder().encode(currentBody)]) {
        const headers = { ...(yield* Webhooks.sign(body, secret)), "content-encoding": " GZip " }
        const answer = yield* send(handle, new Request(url, { method: "POST", body, headers }))
        expect([answer.status, JSON.parse(answer.body)]).toEqual([400, { error: "malformed_body" }])
        expect(answer.headers.get("connection")).toBe("close")
      }
      // (JSON in the log line: its quotes escaped.)
      expect(logs.join("\n")).toContain(`the body came with Content-Encoding \\"gzip\\"`)
      expect(yield* seen).toEqual([])
      // Compressed after all: one of the codings listed (a header sent twice is one list).
      const listed = { ...(yield* Webhooks.sign(currentBody, secret)), "content-encoding": "identity, gzip" }
      expect((yield* send(handle, new Request(url, { method: "POST", body: currentBody, headers: listed }))).status)
        .toBe(400)
      // No encoding, said or not, is the body as signed.
      for (const encoding of ["identity", "", "Identity, identity"]) {
        const headers = { ...(yield* Webhooks.sign(currentBody, secret)), "content-encoding": encoding }
        expect((yield* send(handle, new Request(url, { method: "POST", body: currentBody, headers }))).status).toBe(200)
      }
      // A transfer coding but chunked (Node's server undoes chunked alone) is refused as well, before the body is read,
      // and named (a minute on: malformed_body is said once a minute); chunked in any case, identity, or none, is the
      // body as signed (the event handled above again: 200 duplicate).
      yield* TestClock.adjust("1 minute")
      const signed = yield* Webhooks.sign(currentBody, secret)
      const codings = [["gzip, Chunked", 400], [" Chunked ", 200], ["identity, chunked", 200], ["", 200]] as const
      for (const [coding, status] of codings) {
        const headers = { ...signed, "transfer-encoding": coding }
        const answer = yield* send(handle, new Request(url, { method: "POST", body: currentBody, headers }))
        expect([answer.status, answer.headers.get("connection")], coding)
          .toEqual([status, status === 400 ? "close" : null])
      }
      expect(logs.join("\n")).toContain(`the body came with Transfer-Encoding \\"gzip, chunked\\"`)
      expect(yield* seen).toHaveLength(1)
    }))

  it.effect("answers 413 for a chunked body over the limit, stopping at the limit, Content-Length too low too", () =>
    Effect.gen(function*() {
      const chunk = new Uint8Array(64 * 1024).fill(0x20)
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {} }))
      // 100 chunks of 64 KiB (6.4 MiB) without Content-Length, or with one far below it (a web Request, unlike Node's
      // server, does not hold a body to its header); the default limit is 1 MiB.
      for (const contentLength of [undefined, "100"]) {
        let pulls = 0
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            pulls++
            controller.enqueue(chunk)
            if (pulls === 100) controller.close()
          }
        })
        const headers = {
          ...(yield* Webhooks.sign("x", secret)),
          ...(contentLength === undefined ? {} : { "content-length": contentLength })
        }
        const init: RequestInit & { readonly duplex: "half" } = { method: "POST", body, headers, duplex: "half" }
        const request = new Request(url, init)
        expect(request.headers.get("content-length")).toBe(contentLength ?? null)
        const answer = yield* send(handle, request)
        expect(answer.status).toBe(413)
        expect(pulls).toBeGreaterThanOrEqual(16)
        expect(pulls).toBeLessThan(30)
      }
    }))

  it.effect("answers 408 to a body that does not arrive within bodyTimeout (default 10 s), closing the connection", () =>
    Effect.gen(function*() {
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {} }))
      // A signed start, then nothing more: such requests would each hold what they sent until the server's own
      // request timeout (300 s on Node).
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(currentBody.slice(0, 100)))
        }
      })
      const headers = yield* Webhooks.sign(currentBody, secret)
      const init: RequestInit & { readonly duplex: "half" } = { method: "POST", body, headers: { ...headers }, duplex: "half" }
      const answer = yield* Effect.fork(send(handle, new Request(url, init)))
      yield* settleUntil((sleeps, now) => sleeps.some((wakeUp) => wakeUp >= now + 10_000))
      yield* TestClock.adjust("10 seconds")
      const answered = yield* Fiber.join(answer)
      expect([answered.status, answered.headers.get("connection")]).toEqual([408, "close"])
    }))

  it.effect("accepts a body right at the limit", () =>
    Effect.gen(function*() {
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: {},
        maxBodySize: new TextEncoder().encode(currentBody).length
      }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
    }))

  it.effect("accepts a Content-Length right at the limit; one byte over it gets 413 before the body is read", () =>
    Effect.gen(function*() {
      const size = new TextEncoder().encode(currentBody).length
      const signed = { ...(yield* Webhooks.sign(currentBody, secret)), "content-length": String(size) }
      const atLimit = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {}, maxBodySize: size }))
      expect((yield* send(atLimit, post(currentBody, signed))).status).toBe(200)
      const underIt = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {}, maxBodySize: size - 1 }))
      expect((yield* send(underIt, post(currentBody, signed))).status).toBe(413)
    }))

  it.effect("answers 500 when the user's handler fails, and a redelivery runs it again", () =>
    Effect.gen(function*() {
      let attempts = 0
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.status": (event) =>
          Effect.suspend(() => ++attempts === 1 ? Effect.fail("database down") : record(event.id))
      }))
      const failed = yield* send(handle, yield* signedPost(currentBody))
      expect(failed.status).toBe(500)
      const retried = yield* send(handle, yield* signedPost(currentBody))
      expect(retried.status).toBe(200)
      expect(JSON.parse(retried.body)).toEqual({ outcome: "handled" })
      const third = yield* send(handle, yield* signedPost(currentBody))
      expect(JSON.parse(third.body)).toEqual({ outcome: "duplicate" })
      expect(attempts).toBe(2)
      expect(yield* seen).toEqual(["40061557-f125-4b39-97d6-c16a0f1230c1"])
    }))

  // What an operator alerts on: forged deliveries or a secret out of step, which the logs say once a minute.
  it.effect("counts each answered delivery in effect_fin_webhook_deliveries_total: outcome, a rejection's reason", () =>
    Effect.gen(function*() {
      const before = yield* countedDeliveries
      let attempts = 0
      const { handle } = yield* recordingHandler(() => ({
        "beneficiary.status": () => Effect.suspend(() => ++attempts === 1 ? Effect.fail("database down") : Effect.void)
      }))
      const headers = yield* Webhooks.sign(currentBody, secret)
      const forged = () => post(currentBody, { ...headers, "x-fin-signature": "ab".repeat(32) })
      const signed = () => post(currentBody, { ...headers })
      const answers = []
      for (const request of [forged(), forged(), post(currentBody, {}), signed(), signed(), signed()]) {
        answers.push((yield* send(handle, request)).status)
      }
      // Not a POST: answered 405 (Allow: POST), and not counted, as the README says.
      const get = yield* send(handle, new Request(url, { method: "GET" }))
      expect([get.status, get.headers.get("allow"), get.headers.get("connection")]).toEqual([405, "POST", "close"])
      // A store of the user's whose claim dies: the platform answers the defect 500, past effect-fin's own answers.
      const dying = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store: { ...Webhooks.makeMemoryDedupeStore(), claim: () => Effect.dieMessage("driver bug") },
        handlers: {}
      }))
      answers.push((yield* send(dying, signed())).status)
      expect(answers).toEqual([401, 401, 401, 500, 200, 200, 500])
      expect(yield* deliveriesCountedSince(before)).toEqual([
        "outcome=defect: 1",
        "outcome=duplicate: 1",
        "outcome=failed: 1",
        "outcome=handled: 1",
        "outcome=rejected,reason=bad_signature: 2",
        "outcome=rejected,reason=missing_signature: 1"
      ])
    }))

  it.effect("a defect in the user's handler is a 500 too, and releases the event", () =>
    Effect.gen(function*() {
      let attempts = 0
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: {
          "beneficiary.status": () => Effect.sync(() => {
            if (++attempts === 1) throw new Error("bug")
          })
        }
      }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(500)
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect(attempts).toBe(2)
    }))

  // A driver's bug, or a pool of its own shut down (an operation that interrupts itself, which had ended the delivery
  // as a shutdown does: a 503, its claim held).
  it.effect("a store of the user's own that dies or interrupts itself after the claim is a 500, and releases the event", () =>
    Effect.gen(function*() {
      for (const broken of [Effect.dieMessage("driver bug"), Effect.interrupt]) {
        for (const op of ["lastHandled", "complete"] as const) {
          const memory = Webhooks.makeMemoryDedupeStore()
          let calls = 0
          const fails = <A, E>(effect: Effect.Effect<A, E>) => Effect.suspend(() => calls++ === 0 ? broken : effect)
          const store: Webhooks.WebhookDedupeStoreService = op === "lastHandled"
            ? { ...memory, lastHandled: (key) => fails(memory.lastHandled(key)) }
            : { ...memory, complete: (...args) => fails(memory.complete(...args)) }
          let handled = 0
          const handle = yield* webHandler(Webhooks.handler({
            secrets: secret,
            store,
            handlers: { "beneficiary.status": () => Effect.sync(() => void handled++) }
          }))
          expect((yield* send(handle, yield* signedPost(currentBody))).status, op).toBe(500)
          // Not held until the claim expires (409 to every redelivery meanwhile): the redelivery runs it.
          const again = yield* send(handle, yield* signedPost(currentBody))
          expect([again.status, JSON.parse(again.body)], op).toEqual([200, { outcome: "handled" }])
          expect(handled, op).toBe(op === "complete" ? 2 : 1)
        }
      }
    }))

  // The claim's and (for an event past maxAge) the release's guard: an interruption of the store's own is a failure.
  it.effect("a claim, or a too-old event's release, that interrupts itself is a 500 store_unavailable", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      const interrupting = (op: "claim" | "release"): Webhooks.WebhookDedupeStoreService =>
        op === "claim" ? { ...memory, claim: () => Effect.interrupt } : { ...memory, release: () => Effect.interrupt }
      const deposit = (id: string) =>
        makeBody({ id, type: "beneficiary.liquidation.deposit", createdAt: "2026-04-04T17:39:00Z", data: {} })
      yield* TestClock.setTime(DateTime.toEpochMillis(DateTime.unsafeMake("2026-04-04T17:40:00Z")))
      const cases = [["claim", undefined, "i-1"], ["claim", "1 minute", "i-2"], ["release", "1 minute", "i-3"]] as const
      for (const [op, maxAge, id] of cases) {
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          store: interrupting(op),
          ...(maxAge === undefined ? {} : { maxAge }),
          handlers: { "beneficiary.liquidation.deposit": () => Effect.void }
        }))
        if (maxAge !== undefined) yield* TestClock.adjust("2 minutes")
        const answer = yield* send(handle, yield* signedPost(deposit(id)))
        expect([op, maxAge, answer.status, JSON.parse(answer.body)]).toEqual(
          [op, maxAge, 500, { outcome: "store_unavailable" }]
        )
      }
    }))

  // An outage ends with an answer to the operation that failed: a store that answers claims but not their completion
  // (timeouts under load) is one outage, not an outage and its end per delivery.
  for (const op of ["claim", "complete"] as const) {
    it.effect(`a store outage (${op} failing) is one Error line, its end one Info line, the deliveries between at Debug`, () =>
      Effect.gen(function*() {
        const memory = Webhooks.makeMemoryDedupeStore()
        let down = true
        const failing = <A>(self: Effect.Effect<A, Webhooks.WebhookDedupeStoreError>) =>
          down ? Effect.fail(new Webhooks.WebhookDedupeStoreError({ operation: op, message: "unreachable" })) : self
        const store: Webhooks.WebhookDedupeStoreService = op === "claim"
          ? { ...memory, claim: (...args) => failing(memory.claim(...args)) }
          : { ...memory, complete: (...args) => failing(memory.complete(...args)) }
        const { layer: capture, lines: logs } = captureLogs()
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          store,
          handlers: { "beneficiary.status": () => Effect.void }
        })).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.All))
        const deliver = (id: string) => Effect.flatMap(signedPost(makeBody({ id })), (request) => send(handle, request))
        const said = () =>
          logs.filter((line) => line.includes("de-duplication store")).map((line) =>
            `${line.split(" ")[0]} ${line.includes("available again") ? "up" : "down"}`
          )
        for (const id of ["d-1", "d-2", "d-3"]) expect((yield* deliver(id)).status).toBe(500)
        expect(said()).toEqual(["ERROR down", "DEBUG down", "DEBUG down"])
        down = false
        for (const id of ["d-1", "d-2"]) expect((yield* deliver(id)).status).toBe(200)
        down = true
        expect((yield* deliver("d-4")).status).toBe(500)
        expect(said()).toEqual(["ERROR down", "DEBUG down", "DEBUG down", "INFO up", "ERROR down"])
      }))
  }

  // A store merged beside the server (Layer.merge) rather than provided to it never reaches the handler: with several
  // instances each would de-duplicate alone. The type cannot tell (the store is optional); the log says it, once.
  it.effect("a handler with no store provided says once that it de-duplicates in memory, and how to share a store", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const app = Webhooks.handler({ secrets: secret, handlers: { "beneficiary.status": () => Effect.void } })
      const deliver = (handle: (request: Request) => Promise<Response>, id: string) =>
        Effect.flatMap(signedPost(makeBody({ id })), (request) => send(handle, request))
      const alone = yield* webHandler(app).pipe(Effect.provide(capture))
      for (const id of ["m-1", "m-2", "m-1"]) yield* deliver(alone, id)
      const said = logs.filter((line) => line.includes("WebhookDedupeStore"))
      expect(said).toHaveLength(1)
      expect(said[0]).toMatch(/^INFO .*in this process's memory .*give it as the handler's `store` option/)
      expect(said[0]).toMatch(/, or provide it to the server's layer with Layer\.provide/)
      // Provided: used, and nothing said.
      const store = Webhooks.makeMemoryDedupeStore()
      const provided = yield* webHandler(Effect.provideService(
        Webhooks.handler({ secrets: secret, handlers: { "beneficiary.status": () => Effect.void } }),
        Webhooks.WebhookDedupeStore,
        store
      )).pipe(Effect.provide(capture))
      expect((yield* deliver(provided, "p-1")).status).toBe(200)
      expect((yield* store.claim("p-1", "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31", Duration.seconds(1)))._tag).toBe("Done")
      expect(logs.filter((line) => line.includes("WebhookDedupeStore"))).toHaveLength(1)
    }))

  // A handler served with a store per tenant (provided per request): one tenant's store answering did say the end of
  // another's outage, and that one's next failure began a new one: an Error and an Info line per delivery.
  it.effect("a handler given several stores keeps an outage per store: another store's answers do not end it", () =>
    Effect.gen(function*() {
      const down = Webhooks.makeMemoryDedupeStore()
      const failing: Webhooks.WebhookDedupeStoreService = {
        ...down,
        claim: () => Effect.fail(new Webhooks.WebhookDedupeStoreError({ operation: "claim", message: "unreachable" }))
      }
      const up = Webhooks.makeMemoryDedupeStore()
      const app = Webhooks.handler({ secrets: secret, handlers: { "beneficiary.status": () => Effect.void } })
      const perTenant = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.provideService(app, Webhooks.WebhookDedupeStore, request.headers["x-tenant"] === "down" ? failing : up))
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(perTenant).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.All))
      const deliver = (id: string, tenant: string) =>
        Effect.flatMap(
          Webhooks.sign(makeBody({ id }), secret),
          (headers) => send(handle, post(makeBody({ id }), { ...headers, "x-tenant": tenant }))
        )
      const statuses: Array<number> = []
      for (const id of ["t-1", "t-2", "t-3"]) {
        statuses.push((yield* deliver(id, "down")).status, (yield* deliver(id, "up")).status)
      }
      expect(statuses).toEqual([500, 200, 500, 200, 500, 200])
      expect(
        logs.filter((line) => line.includes("de-duplication store")).map((line) => line.split(" ")[0])
      ).toEqual(["ERROR", "DEBUG", "DEBUG"])
    }))

  // Every running handler renews its claim: a store gone while many run said one line each per renewal, and each
  // handler stopped for it as "webhook handler failed".
  // Renewals are asked only while handlers run: that outage ends with any answer once a minute has passed with no
  // failure, or the next one would go unsaid.
  // The minute on monotonic time: a wall clock set back meanwhile (an NTP step) does not hold the end unsaid.
  it.effect("a store gone while handlers run: one Error line, no handler said to have failed; its end said later", () =>
    withTestWallClockSetBack((setBack) => Effect.gen(function*() {
      // Set back before the outage too: its failures timed on the wall clock would end it at the first answer.
      setBack(3_600_000)
      const down = new Webhooks.WebhookDedupeStoreError({ operation: "renew", message: "connection refused" })
      const store: Webhooks.WebhookDedupeStoreService = {
        ...Webhooks.makeMemoryDedupeStore(),
        renew: () => Effect.fail(down)
      }
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        handlers: { "beneficiary.status": () => Effect.never, "beneficiary.created": () => Effect.void }
      })).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.Info))
      const deliveries = yield* Effect.forEach(["1", "2", "3", "4"], (n) =>
        Effect.flatMap(signedPost(makeBody({ id: `e-${n}`, referenceId: `r-${n}` })), (request) =>
          Effect.fork(send(handle, request))))
      yield* settle
      for (let i = 0; i < 300; i++) yield* Effect.zipRight(TestClock.adjust("100 millis"), settle)
      for (const delivery of deliveries) expect((yield* Fiber.join(delivery)).status).toBe(500)
      const said = () => logs.map((line) => line.slice(0, line.indexOf("]") + 1))
      const renewFailed = `ERROR ["effect-fin: could not renew a webhook claim; trying again"]`
      expect(said()).toEqual([renewFailed])
      const created = (id: string) =>
        Effect.flatMap(signedPost(makeBody({ id, type: "beneficiary.created", data: {} })), (request) =>
          send(handle, request))
      expect((yield* created("c-1")).status).toBe(200)
      expect(said()).toEqual([renewFailed])
      setBack(7_200_000)
      yield* TestClock.adjust("1 minute")
      expect((yield* created("c-2")).status).toBe(200)
      expect(said()).toEqual([renewFailed, `INFO ["effect-fin: webhook de-duplication store available again"]`])
    })))

  // A failure of another operation during an outage does not take it over: one begun by a renewal ends when a renewal
  // answers, though completions fail meanwhile (and a completion failing after that end is a new outage).
  it.effect("a store outage ends with an answer to the operation that began it, whatever failed since", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      let renewals = 0
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        renew: (...args) =>
          renewals++ === 0
            ? Effect.fail(new Webhooks.WebhookDedupeStoreError({ operation: "renew", message: "timed out" }))
            : memory.renew(...args),
        complete: () => Effect.fail(new Webhooks.WebhookDedupeStoreError({ operation: "complete", message: "refused" }))
      }
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        claimTtl: "3 seconds",
        handlers: { "beneficiary.status": () => Effect.sleep("1500 millis") }
      })).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.All))
      const deliver = (id: string) =>
        Effect.gen(function*() {
          const delivery = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ id }))))
          yield* settle
          for (let i = 0; i < 20; i++) yield* Effect.zipRight(TestClock.adjust("100 millis"), settle)
          return (yield* Fiber.join(delivery)).status
        })
      expect(yield* deliver("e-1")).toBe(500)
      expect(yield* deliver("e-2")).toBe(500)
      expect(renewals).toBe(2)
      const said = logs.filter((line) => line.includes("store") || line.includes("renew")).map((line) =>
        `${line.split(" ")[0]} ${line.includes("renew") ? "renew" : line.includes("again") ? "up" : "down"}`
      )
      expect(said).toEqual(["ERROR renew", "DEBUG down", "INFO up", "ERROR down"])
      expect(logs[0]).toMatch(/"operation":"renew"/)
    }))

  // A renewal answered "no claim" (evicted, flushed), or not answered in time: the handler is stopped, said as such (a
  // Warning with no outage going on), not as a handler that failed.
  for (
    const [renew, reason] of [
      [Effect.succeed(false), "the claim on the event expired while its handler ran"],
      [Effect.never, "the claim on the event could not be renewed in time"]
    ] as const
  ) {
    it.effect(`a claim lost while its handler runs stops it, said at Warning: ${reason}`, () =>
      Effect.gen(function*() {
        const store: Webhooks.WebhookDedupeStoreService = { ...Webhooks.makeMemoryDedupeStore(), renew: () => renew }
        const { layer: capture, lines: logs } = captureLogs()
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          store,
          claimTtl: "3 seconds",
          handlers: { "beneficiary.status": () => Effect.never }
        })).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.Info))
        const delivery = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ id: "gone" }))))
        yield* settle
        for (let i = 0; i < 40; i++) yield* Effect.zipRight(TestClock.adjust("100 millis"), settle)
        expect((yield* Fiber.join(delivery)).status).toBe(500)
        expect(logs.map((line) => line.slice(0, line.indexOf("]") + 1))).toEqual([
          expect.stringMatching(new RegExp(`^WARN \\["effect-fin: webhook handler stopped: ${reason}`))
        ])
      }))
  }

  it.effect("a handler that throws before returning its effect is a 500 too, and releases the event", () =>
    Effect.gen(function*() {
      let attempts = 0
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: {
          "beneficiary.status": () => {
            if (++attempts === 1) throw new Error("bug while building the effect")
            return Effect.void
          }
        }
      })).pipe(Effect.provide(capture))
      const failed = yield* send(handle, yield* signedPost(currentBody))
      expect(failed.status).toBe(500)
      expect(JSON.parse(failed.body)).toEqual({ outcome: "failed" })
      expect(logs.some((line) => line.includes("webhook handler failed"))).toBe(true)
      const retried = yield* send(handle, yield* signedPost(currentBody))
      expect(retried.status).toBe(200)
      expect(JSON.parse(retried.body)).toEqual({ outcome: "handled" })
      expect(attempts).toBe(2)
    }))

  // The second store acts when its methods are called, not when their effects run: the handler calls one only when
  // it runs it (a release prepared early would have given the claim back while the handler still ran).
  const actsWhenCalled = (): Webhooks.WebhookDedupeStoreService => {
    const memory = Webhooks.makeMemoryDedupeStore()
    const eager = <Args extends ReadonlyArray<any>, A, E>(operation: (...args: Args) => Effect.Effect<A, E>) =>
    (...args: Args) => Effect.runSyncExit(operation(...args))
    return {
      ...memory,
      claim: eager(memory.claim),
      renew: eager(memory.renew),
      complete: eager(memory.complete),
      release: eager(memory.release),
      lastHandled: eager(memory.lastHandled)
    }
  }
  const stores = [["memory store", undefined], ["a store that acts when called", actsWhenCalled()]] as const
  for (const [name, store] of stores) {
    it.effect(`runs the handler once for concurrent deliveries of one event: 409 while it runs (${name})`, () =>
      Effect.gen(function*() {
        const { handle, handler } = yield* gatedHandler(store === undefined ? {} : { store })
        const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
        yield* handler.started
        const second = yield* send(handle, yield* signedPost(currentBody))
        expect(second.status).toBe(409)
        expect(JSON.parse(second.body)).toEqual({ outcome: "in_progress" })
        yield* handler.open
        const firstAnswer = yield* Fiber.join(first)
        expect(firstAnswer.status).toBe(200)
        expect(JSON.parse(firstAnswer.body)).toEqual({ outcome: "handled" })
        const third = yield* send(handle, yield* signedPost(currentBody))
        expect(JSON.parse(third.body)).toEqual({ outcome: "duplicate" })
        expect(handler.runs()).toBe(1)
      }))
  }

  it.effect("many concurrent deliveries of one event: one handled, the others 409 or duplicate", () =>
    Effect.gen(function*() {
      let runs = 0
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => runs++)) }
      }))
      const requests = yield* Effect.all(Array.from({ length: 20 }, () => signedPost(currentBody)))
      const answers = yield* Effect.all(requests.map((request) => send(handle, request)), { concurrency: "unbounded" })
      const outcomes = answers.map((answer) => `${answer.status} ${answer.body}`)
      expect(outcomes.filter((o) => o === `200 {"outcome":"handled"}`)).toHaveLength(1)
      for (const outcome of outcomes) {
        expect([`200 {"outcome":"handled"}`, `200 {"outcome":"duplicate"}`, `409 {"outcome":"in_progress"}`]).toContain(
          outcome
        )
      }
      expect(runs).toBe(1)
    }))

  // JSON.parse reads numbers as doubles: the handler has the signed text to read a larger one from.
  it.effect("a handler gets the verified body as text, for numbers JSON.parse cannot keep", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.liquidation.deposit": (event, delivery) =>
          record(`${JSON.stringify(event.data)} ${delivery.body.match(/"amount":(\d+)/)?.[1]}`)
      }))
      const body = makeBody({ type: "beneficiary.liquidation.deposit", data: {} }).replace(
        `"data":{}`,
        `"data":{"amount":1234567890123456789}`
      )
      expect(JSON.parse((yield* send(handle, yield* signedPost(body))).body)).toEqual({ outcome: "handled" })
      expect(yield* seen).toEqual([`{"amount":1234567890123456800} 1234567890123456789`])
    }))

  it.effect("a body starting with a byte order mark is handled and given to the handler as signed, mark included", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.status": (_event, delivery) => record(JSON.stringify(delivery.body.slice(0, 2)))
      }))
      const body = `\ufeff${currentBody}`
      const headers = yield* Webhooks.sign(body, secret)
      expect(JSON.parse((yield* send(handle, post(body, { ...headers }))).body)).toEqual({ outcome: "handled" })
      expect(yield* seen).toEqual([JSON.stringify("\ufeff{")])
      // So the text a handler keeps verifies again against the delivery's own signature.
      yield* Webhooks.verifySignature(body, headers, secret)
    }))

  it.effect("reports an older event for the same resource as stale, without calling the handler", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.status": (event, delivery) =>
          record(statusLine(event, delivery))
      }))
      const active = makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:00.000002Z", data: beneficiaryData("ACTIVE") })
      // One microsecond older than the ACTIVE event: only the microseconds tell them apart.
      const processing = makeBody({
        id: "e-1",
        createdAt: "2026-04-04T17:40:00.000001Z",
        data: beneficiaryData("PROCESSING")
      })
      const other = makeBody({
        id: "e-3",
        referenceId: "another-beneficiary",
        createdAt: "2026-04-04T17:00:00Z",
        data: beneficiaryData("REJECTED")
      })
      expect(JSON.parse((yield* send(handle, yield* signedPost(active))).body)).toEqual({ outcome: "handled" })
      const stale = yield* send(handle, yield* signedPost(processing))
      expect(stale.status).toBe(200)
      expect(JSON.parse(stale.body)).toEqual({ outcome: "stale" })
      // The stale event counts as answered: its redelivery is a duplicate.
      expect(JSON.parse((yield* send(handle, yield* signedPost(processing))).body)).toEqual({ outcome: "duplicate" })
      // Ordering is per event_reference_id.
      expect(JSON.parse((yield* send(handle, yield* signedPost(other))).body)).toEqual({ outcome: "handled" })
      expect(yield* seen).toEqual(["ACTIVE", "REJECTED"])
    }))

  it.live("handles the events of one resource one at a time: an older event arriving meanwhile waits, then is stale", () =>
    Effect.gen(function*() {
      const { record, seen } = yield* recorder
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: {
          "beneficiary.status": (event) =>
            Effect.gen(function*() {
              const status = Option.getOrElse(event.data.status, () => "none")
              if (status === "ACTIVE") {
                yield* Deferred.succeed(started, undefined)
                yield* Deferred.await(release)
              }
              yield* record(typeof status === "string" ? status : status.value)
            })
        }
      }))
      const active = makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z", data: beneficiaryData("ACTIVE") })
      const processing = makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("PROCESSING") })
      const newer = yield* Effect.fork(send(handle, yield* signedPost(active)))
      yield* Deferred.await(started)
      const older = yield* Effect.fork(send(handle, yield* signedPost(processing)))
      // Both the older and an unrelated event of another resource arrive while the newer one is being handled.
      const other = makeBody({ id: "e-3", referenceId: "another-beneficiary", data: beneficiaryData("REJECTED") })
      expect(JSON.parse((yield* send(handle, yield* signedPost(other))).body)).toEqual({ outcome: "handled" })
      yield* Effect.sleep("100 millis")
      expect(Option.isNone(yield* Fiber.poll(older))).toBe(true)
      yield* Deferred.succeed(release, undefined)
      expect(JSON.parse((yield* Fiber.join(newer)).body)).toEqual({ outcome: "handled" })
      const olderAnswer = yield* Fiber.join(older)
      expect(olderAnswer.status).toBe(200)
      expect(JSON.parse(olderAnswer.body)).toEqual({ outcome: "stale" })
      expect(yield* seen).toEqual(["REJECTED", "ACTIVE"])
    }))

  // The handler's own scope closes inside its run: what it acquired (a transaction committed in a release, say) is
  // released before its event is marked handled, or its claim given up, so nothing of its resource runs meanwhile.
  it.live("a handler's resources are released before its event is marked or freed: the next event of its resource waits", () =>
    Effect.gen(function*() {
      const steps: Array<string> = []
      const step = (line: string) => Effect.sync(() => void steps.push(line))
      const releasing = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const memory = Webhooks.makeMemoryDedupeStore()
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        complete: (eventId, ...rest) => Effect.zipRight(step(`complete ${eventId}`), memory.complete(eventId, ...rest)),
        release: (eventId, ...rest) => Effect.zipRight(step(`release ${eventId}`), memory.release(eventId, ...rest))
      }
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        handlers: {
          "beneficiary.status": (event) =>
            Effect.acquireRelease(step(`${event.id} begin`), () =>
              event.id === "e-1"
                ? Effect.zipRight(Deferred.succeed(releasing, undefined), Deferred.await(gate)).pipe(
                  Effect.zipRight(step("e-1 released"))
                )
                : step(`${event.id} released`)).pipe(Effect.zipRight(event.id === "e-1" ? Effect.fail("boom") : Effect.void))
        }
      }))
      const first = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z" }))))
      yield* Deferred.await(releasing)
      const second = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z" }))))
      yield* Effect.sleep("100 millis")
      expect(Option.isNone(yield* Fiber.poll(second))).toBe(true)
      yield* Deferred.succeed(gate, undefined)
      expect((yield* Fiber.join(first)).status).toBe(500)
      expect((yield* Fiber.join(second)).status).toBe(200)
      expect(steps).toEqual(["e-1 begin", "e-1 released", "release e-1", "e-2 begin", "e-2 released", "complete e-2"])
    }))

  // Claims are kept on monotonic time: a wall clock stepped forward (an NTP step, a virtual machine resumed) neither
  // stops a handler whose claim is alive nor lapses the claim.
  it.live("a wall clock stepped forward during a handler neither stops it nor frees its event for a redelivery", () =>
    withWallClockSetBack((setBack) =>
      Effect.gen(function*() {
        let runs = 0
        const pastTtl = yield* Deferred.make<void>()
        const redelivered = yield* Deferred.make<void>()
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          claimTtl: "2 seconds",
          handlers: {
            // Runs past its claim's time (renewed meanwhile), then until the redelivery has been answered: a fixed
            // pause in the test would race the handler's own on a loaded machine. The 2 s claim leaves a renewal
            // about a second of slack for a stalled event loop.
            "beneficiary.status": () =>
              Effect.suspend(() => {
                runs++
                setBack(-3_600_000)
                // A second run (the redelivery let through) ends at once, for the answers below to say so.
                return runs > 1 ? Effect.void : Effect.sleep("2400 millis").pipe(
                  Effect.zipRight(Deferred.succeed(pastTtl, undefined)),
                  Effect.zipRight(Deferred.await(redelivered))
                )
              })
          }
        }))
        const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
        // Or until the first delivery has ended (its handler stopped): the answers below then say what went wrong.
        yield* Effect.race(Deferred.await(pastTtl), Fiber.await(first))
        const redelivery = yield* send(handle, yield* signedPost(currentBody))
        expect([redelivery.status, JSON.parse(redelivery.body)]).toEqual([409, { outcome: "in_progress" }])
        yield* Deferred.succeed(redelivered, undefined)
        const answer = yield* Fiber.join(first)
        expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { outcome: "handled" }])
        expect(runs).toBe(1)
      })
    ), 10_000)

  // On the TestClock: on the live one, a loaded machine could stretch the handler's 50 ms of work past its timeout.
  it.effect("the timeout bounds a handler's work, not its release: done in time, its longer commit is handled", () =>
    Effect.gen(function*() {
      let commits = 0
      const releasing = yield* Deferred.make<void>()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlerTimeout: "300 millis",
        handlers: {
          "beneficiary.status": () =>
            Effect.zipRight(
              Effect.acquireRelease(Effect.void, () =>
                Deferred.succeed(releasing, undefined).pipe(
                  Effect.zipRight(Effect.sleep("400 millis")),
                  Effect.zipRight(Effect.sync(() => commits++))
                )),
              Effect.sleep("50 millis")
            )
        }
      }))
      const fiber = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      // The work's 50 ms, then the commit's 400: past the 300 ms timeout, which fires first if it bounds the commit.
      yield* settleUntil((sleeps, now) => sleeps.includes(now + 50))
      yield* TestClock.adjust("50 millis")
      yield* Deferred.await(releasing)
      yield* settleUntil((sleeps, now) => sleeps.includes(now + 400))
      yield* TestClock.adjust("400 millis")
      const first = yield* Fiber.join(fiber)
      expect([first.status, JSON.parse(first.body)]).toEqual([200, { outcome: "handled" }])
      expect(JSON.parse((yield* send(handle, yield* signedPost(currentBody))).body)).toEqual({ outcome: "duplicate" })
      expect(commits).toBe(1)
    }))

  it.live("a wall clock set back before a delivery, or stepped while it waits for its resource, changes none of its times", () =>
    withWallClockSetBack((setBack) =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          // Renewed every second: a renewal late by a stalled event loop (a loaded machine) still comes in time.
          claimTtl: "3 seconds",
          referenceWait: "5 seconds",
          handlers: {
            "beneficiary.status": (event) =>
              event.id === "e-1"
                ? Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate))
                : Effect.sleep("300 millis")
          }
        }))
        const other = makeBody({ id: "e-0", referenceId: "another-beneficiary" })
        setBack(3_600_000)
        // Its claim's first renewal is due by monotonic time, not an hour late.
        const alone = yield* send(handle, yield* signedPost(other))
        expect([alone.status, JSON.parse(alone.body)]).toEqual([200, { outcome: "handled" }])
        const first = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z" }))))
        yield* Deferred.await(started)
        const second = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z" }))))
        yield* Effect.sleep("200 millis")
        // Two hours forward while it waits: its referenceWait has not run out.
        setBack(-3_600_000)
        // Past the first renewal (a third of the claim's time): it too is on monotonic time.
        yield* Effect.sleep("1200 millis")
        yield* Deferred.succeed(gate, undefined)
        expect((yield* Fiber.join(first)).status).toBe(200)
        const answer = yield* Fiber.join(second)
        expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { outcome: "handled" }])
      })
    ), 15_000)

  it.live("answers 409 reference_busy when the resource stays busy past referenceWait; the redelivery is then stale", () =>
    Effect.gen(function*() {
      const { handle, handler } = yield* gatedHandler({ referenceWait: "100 millis" })
      const active = makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z" })
      const processing = makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("PROCESSING") })
      const newer = yield* Effect.fork(send(handle, yield* signedPost(active)))
      yield* handler.started
      const busy = yield* send(handle, yield* signedPost(processing))
      expect(busy.status).toBe(409)
      expect(JSON.parse(busy.body)).toEqual({ outcome: "reference_busy" })
      yield* handler.open
      expect((yield* Fiber.join(newer)).status).toBe(200)
      expect(JSON.parse((yield* send(handle, yield* signedPost(processing))).body)).toEqual({ outcome: "stale" })
      expect(handler.runs()).toBe(1)
    }))

  it.effect("a delivery interrupted while its claim is being taken releases the claim, so neither event nor resource stays held", () =>
    Effect.gen(function*() {
      // As with a remote store: the claim is taken, and the delivery is interrupted before the answer arrives.
      const { memory, paused, resume, store } = yield* pausedClaims("after")
      let runs = 0
      const app = Webhooks.handler({ secrets: secret, store, handlers: { "beneficiary.status": () => Effect.sync(() => runs++) } })
      const request = HttpServerRequest.fromWeb(yield* signedPost(currentBody))
      const delivery = yield* app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, request),
        Effect.scoped,
        Effect.fork
      )
      yield* paused
      const interrupting = yield* Effect.fork(Fiber.interrupt(delivery))
      yield* resume
      expect(Exit.isInterrupted(yield* Fiber.join(interrupting))).toBe(true)
      expect(runs).toBe(0)
      const again = yield* memory.claim("40061557-f125-4b39-97d6-c16a0f1230c1", "another-reference", Duration.minutes(1))
      expect(again._tag).toBe("Claimed")
      const sameResource = yield* memory.claim("another-event", "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31", Duration.minutes(1))
      expect(sameResource._tag).toBe("Claimed")
    }))

  it.effect("a delivery interrupted while it waits for its busy resource ends at once, and never takes the event", () =>
    Effect.gen(function*() {
      const handler = yield* gate
      let deposits = 0
      const app = Webhooks.handler({
        secrets: secret,
        handlers: {
          "beneficiary.status": () => handler.run,
          "beneficiary.liquidation.deposit": () => Effect.sync(() => deposits++)
        }
      })
      const first = yield* Effect.fork(send(yield* webHandler(app), yield* signedPost(makeBody())))
      yield* handler.started
      // Another event of the same resource waits for it; its client goes (the server shutting down, say).
      const deposit = makeBody({ id: "d-1", type: "beneficiary.liquidation.deposit", data: {} })
      const request = HttpServerRequest.fromWeb(yield* signedPost(deposit))
      const waiting = yield* app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, request),
        Effect.scoped,
        Effect.fork
      )
      // Until it sleeps before asking the store again (25 ms).
      yield* settleUntil((sleeps, now) => sleeps.includes(now + 25))
      const interrupting = yield* Effect.fork(Fiber.interrupt(waiting))
      yield* settle
      // Ended without the clock moving: it did not poll on to referenceWait.
      const ended = yield* Fiber.poll(interrupting)
      yield* handler.open
      expect((yield* Fiber.join(first)).status).toBe(200)
      yield* TestClock.adjust("10 seconds")
      yield* settle
      expect(Option.isSome(ended)).toBe(true)
      expect(deposits).toBe(0)
    }))

  it.effect("passes stale events to the handler when asked to", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.status": (event, delivery) =>
          record(statusLine(event, delivery))
      }), { deliverStale: true })
      yield* send(handle, yield* signedPost(makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z" })))
      const older = makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("PROCESSING") })
      const answer = yield* send(handle, yield* signedPost(older))
      expect(JSON.parse(answer.body)).toEqual({ outcome: "stale" })
      expect(yield* seen).toEqual(["ACTIVE", "PROCESSING stale"])
    }))

  it.effect("routes each type to its handler; Unknown gets undocumented types; others are acknowledged", () =>
    Effect.gen(function*() {
      const { record, seen } = yield* recorder
      const handle = yield* webHandler(Webhooks.handler({
        secrets: [Redacted.make("whsec_old"), secret],
        handlers: {
          "transit.payment.status": (event) => record(`transit ${JSON.stringify(event.data)}`),
          Unknown: (event) => record(`unknown ${event.received_type}`)
        }
      }))
      const transit = makeBody({ id: "t-1", type: "transit.payment.status", data: { status: "PAY_SUCCESS" } })
      const unknown = makeBody({ id: "u-1", type: "payout.settled", data: {} })
      const customer = makeBody({ id: "c-1", type: "customer.created", data: {} })
      for (const body of [transit, unknown, customer]) {
        expect((yield* send(handle, yield* signedPost(body))).status).toBe(200)
      }
      expect(yield* seen).toEqual([`transit {"status":"PAY_SUCCESS"}`, "unknown payout.settled"])
    }))

  it.effect("keeps only status events in order: late deposits, creations and undocumented events are handled", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "beneficiary.status": (event, delivery) =>
          record(`status ${statusLine(event, delivery)}`),
        "beneficiary.liquidation.deposit": (event) => record(`deposit ${event.id}`),
        "beneficiary.created": (event) => record(`created ${event.id}`),
        Unknown: (event) => record(`unknown ${event.id}`)
      }))
      const at = (second: number) => `2026-04-04T17:40:0${second}.000000Z`
      const bodies = [
        makeBody({ id: "d-2", type: "beneficiary.liquidation.deposit", createdAt: at(5), data: { amount: 200 } }),
        // Older than the deposit before it, and than the status after it: each is news of its own.
        makeBody({ id: "d-1", type: "beneficiary.liquidation.deposit", createdAt: at(4), data: { amount: 100 } }),
        makeBody({ id: "s-2", createdAt: at(3), data: beneficiaryData("ACTIVE") }),
        makeBody({ id: "c-1", type: "beneficiary.created", createdAt: at(1), data: {} }),
        makeBody({ id: "u-1", type: "beneficiary.merged", createdAt: at(0), data: {} }),
        // A status older than the one handled is stale, whatever came between.
        makeBody({ id: "s-1", createdAt: at(2), data: beneficiaryData("PROCESSING") })
      ]
      const outcomes: Array<string> = []
      for (const body of bodies) outcomes.push(JSON.parse((yield* send(handle, yield* signedPost(body))).body).outcome)
      expect(outcomes).toEqual(["handled", "handled", "handled", "handled", "handled", "stale"])
      expect(yield* seen).toEqual(["deposit d-2", "deposit d-1", "status ACTIVE", "created c-1", "unknown u-1"])
      expect(Webhooks.orderedEventTypes).toEqual([
        "customer.status",
        "transaction.status",
        "virtual_account.status",
        "virtual_account.status.v2",
        "beneficiary.status",
        "transit.payment.status"
      ])
    }))

  it.effect("batch item statuses are not kept in order: two items' events under one reference are both handled", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "batch.transaction.item.status": (event) => record(`item ${event.id}`)
      }))
      // Whether event_reference_id is the item or the batch is undocumented; if it is the batch, the later item's event
      // arriving first must not make the other's stale (each is fired once, at PENDING).
      const batch = { referenceId: "0b5e8a52-3c1d-4f7e-9a10-6d2c4b8e9f01", type: "batch.transaction.item.status" }
      const bodies = [
        makeBody({ ...batch, id: "item-2", createdAt: "2026-04-04T17:40:02Z", data: { batch_item_id: "2" } }),
        makeBody({ ...batch, id: "item-1", createdAt: "2026-04-04T17:40:01Z", data: { batch_item_id: "1" } })
      ]
      const outcomes: Array<string> = []
      for (const body of bodies) outcomes.push(JSON.parse((yield* send(handle, yield* signedPost(body))).body).outcome)
      expect(outcomes).toEqual(["handled", "handled"])
      expect(yield* seen).toEqual(["item item-2", "item item-1"])
    }))

  it.effect("keeps order per status and resource: another kind of status sharing the id never makes one stale", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "transaction.status": (event) => record(`transaction ${event.id}`),
        "virtual_account.status": (event) => record(`account ${event.id}`),
        "virtual_account.status.v2": (event) => record(`account v2 ${event.id}`)
      }))
      const at = (second: number) => `2026-04-04T17:40:0${second}.000000Z`
      const shared = { referenceId: "7d2d2a6e-5e0b-4d40-9d1c-3f1f5c1f0e11", data: {} }
      const bodies = [
        // An item status (no handler for it) dated after the transaction's own status, for the same id.
        makeBody({ ...shared, id: "i-1", type: "batch.transaction.item.status", createdAt: at(5) }),
        makeBody({ ...shared, id: "t-1", type: "transaction.status", createdAt: at(4) }),
        // The two versions of one status are one order: the older is stale, whichever version it comes in.
        makeBody({ ...shared, id: "a-2", type: "virtual_account.status.v2", createdAt: at(3) }),
        makeBody({ ...shared, id: "a-1", type: "virtual_account.status", createdAt: at(2) })
      ]
      const outcomes: Array<string> = []
      for (const body of bodies) outcomes.push(JSON.parse((yield* send(handle, yield* signedPost(body))).body).outcome)
      expect(outcomes).toEqual(["handled", "handled", "handled", "stale"])
      expect(yield* seen).toEqual(["transaction t-1", "account v2 a-2"])
      expect(Webhooks.orderKey("virtual_account.status.v2", "r")).toBe(Webhooks.orderKey("virtual_account.status", "r"))
      // Any version suffix, not only one digit (a `.v10` the service may add later), and only at the end.
      expect(Webhooks.orderKey("virtual_account.status.v10", "r")).toBe("virtual_account.status:r")
      expect(Webhooks.orderKey("x.v2.status", "r")).toBe("x.v2.status:r")
    }))

  it.effect("an event no handler takes records no order: it never makes a handled version of its status stale", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "virtual_account.status": (event) => record(`account ${event.id}`)
      }))
      const shared = { referenceId: "7d2d2a6e-5e0b-4d40-9d1c-3f1f5c1f0e11", data: {} }
      const newerV2 = makeBody({ ...shared, id: "a-2", type: "virtual_account.status.v2", createdAt: "2026-04-04T17:40:03.000001Z" })
      const olderV1 = makeBody({ ...shared, id: "a-1", type: "virtual_account.status", createdAt: "2026-04-04T17:40:03Z" })
      const outcomes: Array<string> = []
      for (const body of [newerV2, olderV1]) {
        outcomes.push(JSON.parse((yield* send(handle, yield* signedPost(body))).body).outcome)
      }
      expect(outcomes).toEqual(["handled", "handled"])
      expect(yield* seen).toEqual(["account a-1"])
    }))

  // A service that changes a payload must not have its deliveries of a type the app ignores refused (and redelivered)
  // for it; an app that handles the type still refuses them.
  it.effect("an event no handler takes is acknowledged even if its data is not the documented shape", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({
        "transaction.status": (event) => record(`transaction ${event.id}`),
        Unknown: (event) => record(`unknown ${event.id}`)
      }))
      const odd = makeBody({ id: "b-1", data: { ...beneficiaryData("ACTIVE"), active: "yes" } })
      const answer = yield* send(handle, yield* signedPost(odd))
      expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { outcome: "handled" }])
      // Nor is it given to the handler of undocumented types: it is a documented one.
      expect(yield* seen).toEqual([])
      const { handle: strict } = yield* recordingHandler((record) => ({
        "beneficiary.status": (event) => record(`beneficiary ${event.id}`)
      }))
      const refused = yield* send(strict, yield* signedPost(odd))
      expect([refused.status, JSON.parse(refused.body).error]).toEqual([400, "malformed_body"])
    }))

  it.effect("a status event replayed after its id is forgotten is still stale (orderTtl outlives dedupeTtl)", () =>
    Effect.gen(function*() {
      const { handle, seen } = yield* recordingHandler((record) => ({ "beneficiary.status": (event) => record(`${event.id}`) }), { dedupeTtl: "24 hours" })
      const active = makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("ACTIVE") })
      const inactive = makeBody({ id: "e-2", createdAt: "2026-04-04T17:41:00Z", data: beneficiaryData("INACTIVE") })
      for (const body of [active, inactive]) yield* send(handle, yield* signedPost(body))
      yield* TestClock.adjust("25 hours")
      expect(JSON.parse((yield* send(handle, yield* signedPost(active))).body)).toEqual({ outcome: "stale" })
      yield* TestClock.adjust("30 days")
      // Past orderTtl too, nothing is left to compare with: only maxAge refuses a replay that old.
      expect(JSON.parse((yield* send(handle, yield* signedPost(active))).body)).toEqual({ outcome: "handled" })
      expect(yield* seen).toEqual(["e-1", "e-2", "e-1"])
    }))

  // The service retries a delivery until it sees a 2xx: one whose 200 was lost must not meet 400 for ever once past
  // maxAge, though it was handled.
  it.effect("with maxAge, a redelivery of a handled event past maxAge is a duplicate (200), one never handled too_old", () =>
    Effect.gen(function*() {
      let runs = 0
      const memory = Webhooks.makeMemoryDedupeStore()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        maxAge: "1 hour",
        store: memory,
        handlers: { "beneficiary.liquidation.deposit": () => Effect.sync(() => runs++) }
      }))
      yield* TestClock.setTime(DateTime.toEpochMillis(DateTime.unsafeMake("2026-04-04T17:40:00Z")))
      const deposit = (id: string) =>
        makeBody({ id, type: "beneficiary.liquidation.deposit", createdAt: "2026-04-04T17:39:00Z", data: {} })
      expect(JSON.parse((yield* send(handle, yield* signedPost(deposit("d-1")))).body)).toEqual({ outcome: "handled" })
      yield* TestClock.adjust("2 hours")
      expect(JSON.parse((yield* send(handle, yield* signedPost(deposit("d-1")))).body)).toEqual({ outcome: "duplicate" })
      const never = yield* send(handle, yield* signedPost(deposit("d-2")))
      expect([never.status, JSON.parse(never.body)]).toEqual([400, { error: "too_old" }])
      expect(runs).toBe(1)
      // Nothing is left claimed by the refused one.
      expect((yield* memory.claim("d-2", "r", Duration.minutes(1)))._tag).toBe("Claimed")
      // Being handled right now by another delivery: 409, as for any event, so the service asks again.
      const busy = yield* webHandler(Webhooks.handler({
        secrets: secret,
        maxAge: "1 hour",
        store: { ...memory, claim: () => Effect.succeed({ _tag: "InProgress" as const }) },
        handlers: {}
      }))
      const inProgress = yield* send(busy, yield* signedPost(deposit("d-3")))
      expect([inProgress.status, JSON.parse(inProgress.body)]).toEqual([409, { outcome: "in_progress" }])
      // Never handled, past maxAge, while another event of its resource is being handled: too_old, not 409 (there is
      // nothing to wait for), and the other's claim is left alone.
      const reference = "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"
      expect((yield* memory.claim("d-other", reference, Duration.minutes(5)))._tag).toBe("Claimed")
      const behind = yield* send(handle, yield* signedPost(deposit("d-4")))
      expect([behind.status, JSON.parse(behind.body)]).toEqual([400, { error: "too_old" }])
      expect((yield* memory.claim("d-other", reference, Duration.minutes(5)))._tag).toBe("InProgress")
      // Dated over 5 minutes ahead: from_future, unhandled and unclaimed.
      const ahead = makeBody({
        id: "d-5",
        type: "beneficiary.liquidation.deposit",
        createdAt: "2026-04-04T19:50:00Z",
        data: {}
      })
      const future = yield* send(handle, yield* signedPost(ahead))
      expect([future.status, JSON.parse(future.body)]).toEqual([400, { error: "from_future" }])
      expect((yield* memory.claim("d-5", "r-5", Duration.minutes(1)))._tag).toBe("Claimed")
      expect(runs).toBe(1)
    }))

  it.effect("with maxAge longer than dedupeTtl, handled ids are kept for maxAge: a replay is a duplicate", () =>
    Effect.gen(function*() {
      let runs = 0
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        maxAge: "7 days",
        dedupeTtl: "1 hour",
        handlers: { "beneficiary.liquidation.deposit": () => Effect.sync(() => runs++) }
      }))
      yield* TestClock.setTime(DateTime.toEpochMillis(DateTime.unsafeMake("2026-04-04T17:40:00Z")))
      const deposit = makeBody({ id: "d-1", type: "beneficiary.liquidation.deposit", createdAt: "2026-04-04T17:39:00Z", data: {} })
      expect(JSON.parse((yield* send(handle, yield* signedPost(deposit))).body)).toEqual({ outcome: "handled" })
      yield* TestClock.adjust("6 days")
      expect(JSON.parse((yield* send(handle, yield* signedPost(deposit))).body)).toEqual({ outcome: "duplicate" })
      yield* TestClock.adjust("2 days")
      expect(JSON.parse((yield* send(handle, yield* signedPost(deposit))).body)).toEqual({ error: "too_old" })
      expect(runs).toBe(1)
      // An event dated ahead of this clock (within the 5 minutes allowed) is young for longer than maxAge after it was
      // handled: its id is kept that much longer too, so a replay in between is still a duplicate, also at the instant
      // one dated the full 5 minutes ahead is exactly maxAge old (not too old yet).
      for (const [id, ahead] of [["d-2", 4], ["d-3", 5]] as const) {
        const body = makeBody({
          id,
          type: "beneficiary.liquidation.deposit",
          createdAt: DateTime.formatIso(DateTime.unsafeMake((yield* Clock.currentTimeMillis) + ahead * 60_000)),
          data: {}
        })
        expect(JSON.parse((yield* send(handle, yield* signedPost(body))).body)).toEqual({ outcome: "handled" })
        yield* TestClock.adjust("7 days")
        yield* TestClock.adjust(Duration.minutes(ahead))
        expect(JSON.parse((yield* send(handle, yield* signedPost(body))).body)).toEqual({ outcome: "duplicate" })
      }
      expect(runs).toBe(3)
    }))

  it("refuses invalid options when it is built", () => {
    const build = (options: Partial<Webhooks.HandlerOptions<Webhooks.Handlers>>) => () =>
      Webhooks.handler({ secrets: secret, handlers: {}, ...options })
    const refused = (options: Partial<Webhooks.HandlerOptions<Webhooks.Handlers>>, message: string) => {
      expect(build(options)).toThrow(Cause.IllegalArgumentException)
      expect(build(options)).toThrow(`effect-fin: Webhooks.handler: ${message}`)
    }
    // An unset variable read as a number is NaN: it must not switch off the body limit or the de-duplication.
    refused({ maxBodySize: Number(undefined) }, "maxBodySize must be a whole number of bytes, 1 or more")
    refused({ maxBodySize: -1 }, "maxBodySize must be a whole number of bytes, 1 or more")
    // An empty variable read as a number is 0: every delivery would get 413.
    refused({ maxBodySize: Number("") }, "maxBodySize must be a whole number of bytes, 1 or more")
    // From untyped configuration: "true" would otherwise be read as not true, without a word.
    for (const deliverStale of ["true", "false", 1]) {
      refused({ deliverStale } as unknown as Partial<Webhooks.HandlerOptions<Webhooks.Handlers>>, "deliverStale must be true or false")
    }
    refused({ dedupeTtl: Number.NaN as unknown as FinConfig.DurationOption }, "dedupeTtl must say its unit")
    refused({ dedupeTtl: "15 mins" as FinConfig.DurationOption }, "dedupeTtl is not a valid duration")
    refused({ maxAge: "0 seconds" }, "maxAge must be greater than zero")
    refused({ handlerTimeout: Duration.infinity }, "handlerTimeout must be finite")
    // Past 24 days a timer never fires.
    refused({ handlerTimeout: "25 days" }, "handlerTimeout must be at most 24 days")
    refused({ bodyTimeout: "25 days" }, "bodyTimeout must be at most 24 days")
    refused({ referenceWait: "25 days" }, "referenceWait must be at most 24 days")
    refused({ referenceWait: "-5 seconds" }, "referenceWait must be zero or more")
    refused({ bodyTimeout: "0 seconds" }, "bodyTimeout must be greater than zero")
    for (const secrets of ["", [], [""], Redacted.make("")]) {
      refused({ secrets }, "secrets holds no webhook secret (empty ones do not count)")
    }
    // A value read from configuration: anything but the two names would refuse every event of one environment.
    for (const environment of ["Sandbox", "staging", ""]) {
      refused({ environment: environment as "sandbox" }, `environment must be "sandbox" or "production"`)
    }
    // Every delivery would be refused (401) with no clue why: the HMAC key would hold the newline.
    for (const secrets of ["whsec_x\n", [secretValue, " whsec_y"], Redacted.make("whsec_x\r\n"), "\u0001whsec_x"]) {
      refused(
        { secrets },
        "secrets holds a webhook secret that starts or ends with whitespace, a control character or an invisible " +
          "formatting one (a trailing newline, say)"
      )
    }
    // From untyped configuration (an unset variable, a number), or wiped: said as such, not an error from deep inside.
    const wipedSecret = Redacted.make("whsec_wiped")
    Redacted.unsafeWipe(wipedSecret)
    for (
      const secrets of [undefined, null, 42, {}, [42], [undefined], [secretValue, null], Redacted.make(42), [
        Redacted.make(undefined)
      ], wipedSecret]
    ) {
      refused({ secrets: secrets as Webhooks.Secrets }, "secrets must be text or Redacted text (not wiped), or a list of them")
    }
    // A misspelt event type (a compile error too) would have its events acknowledged and never handled.
    refused(
      { handlers: { "transaction.stauts": () => Effect.void } as Webhooks.Handlers },
      `handlers has "transaction.stauts", which is not an event type (${Webhooks.documentedEventTypes.join(", ")}, Unknown)`
    )
    refused({ handlers: { Unknown: "log it" } as unknown as Webhooks.Handlers }, `handlers["Unknown"] is not a function`)
    // From untyped code: no handlers at all (an unset configuration key), or no options, is named, not a TypeError.
    for (const handlers of [undefined, null, "log", [() => Effect.void], new Map([["transaction.status", () => Effect.void]])]) {
      refused(
        { handlers: handlers as unknown as Webhooks.Handlers },
        "handlers must be an object of event types to handlers ({} to acknowledge every event)"
      )
    }
    expect(() => Webhooks.handler(undefined as unknown as Webhooks.HandlerOptions<Webhooks.Handlers>)).toThrow(
      illegalArgument("effect-fin: Webhooks.handler: takes an options object ({ secrets, handlers })")
    )
    expect(defectOf(Webhooks.makeHandler({ secrets: secret } as unknown as Webhooks.HandlerOptions<Webhooks.Handlers>)))
      .toBeInstanceOf(Cause.IllegalArgumentException)
    // A misspelt option (from a variable, or a config file: no excess-property check) would leave its default in force.
    const misspelt = { maxBodysize: 10 } as Partial<Webhooks.HandlerOptions<Webhooks.Handlers>>
    refused(misspelt, `"maxBodysize" is no option of Webhooks.HandlerOptions`)
    refused({ ["\u001b[2J"]: 1 } as Partial<Webhooks.HandlerOptions<Webhooks.Handlers>>, `"\\u001b[2J" is no option`)
    expect(defectOf(Webhooks.verify(currentBody, {}, secret, { maxage: "1 minute" } as Webhooks.VerifyOptions))).toEqual(
      illegalArgument(`effect-fin: Webhooks.verify: "maxage" is no option of Webhooks.VerifyOptions`)
    )
    // A bare number is refused when compiled too, in every duration option.
    // @ts-expect-error a bare number (milliseconds to Effect)
    refused({ handlerTimeout: 30 }, "handlerTimeout must say its unit")
    // @ts-expect-error a bare number
    refused({ bodyTimeout: 30, maxAge: "1 minute" }, "bodyTimeout must say its unit")
    // makeHandler: the same refusals, a defect of the effect that makes it.
    expect(defectOf(Webhooks.makeHandler({ secrets: secret, handlers: {}, maxBodySize: 0 }))).toEqual(
      illegalArgument(`effect-fin: Webhooks.handler: maxBodySize must be a whole number of bytes, 1 or more`)
    )
    // A handler's options extend verify's: one object may serve both (the delivery's missing header is all it fails on).
    const shared: Webhooks.HandlerOptions<Webhooks.Handlers> = { secrets: secret, handlers: {}, maxAge: "1 minute" }
    expect(Effect.runSync(Effect.flip(Webhooks.verify(currentBody, {}, secret, shared))).reason).toBe("missing_signature")
    expect(build({ referenceWait: "0 seconds", maxBodySize: 1, orderTtl: "1 day" })).not.toThrow()
  })

  it.effect("applies maxAge and environment: 400", () =>
    Effect.gen(function*() {
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: {},
        maxAge: "10 minutes",
        environment: "production"
      }))
      yield* TestClock.setTime(DateTime.toEpochMillis(DateTime.unsafeMake("2026-04-04T17:40:00Z")))
      const sandboxEvent = yield* send(handle, yield* signedPost(currentBody))
      expect(sandboxEvent.status).toBe(400)
      expect(JSON.parse(sandboxEvent.body)).toEqual({ error: "wrong_environment" })
      yield* TestClock.adjust("1 hour")
      const old = yield* send(handle, yield* signedPost(makeBody({ sandbox: false })))
      expect(JSON.parse(old.body)).toEqual({ error: "too_old" })
    }))

  it.effect("a client that gives up does not stop the handler: it finishes, and the redelivery is a duplicate", () =>
    Effect.gen(function*() {
      const { handle, handler } = yield* gatedHandler()
      const client = new AbortController()
      const headers = yield* Webhooks.sign(currentBody, secret)
      // No answer comes to an aborted request, so this one is not awaited.
      void handle(new Request(url, { method: "POST", body: currentBody, headers: { ...headers }, signal: client.signal }))
      yield* handler.started
      client.abort()
      yield* settle
      expect(JSON.parse((yield* send(handle, yield* signedPost(currentBody))).body)).toEqual({ outcome: "in_progress" })
      yield* handler.open
      // The handler finishes, then its event is marked handled: until then a redelivery is still in progress.
      let outcome = "in_progress"
      for (let tries = 0; outcome === "in_progress" && tries < 200; tries++) {
        yield* settle
        outcome = JSON.parse((yield* send(handle, yield* signedPost(currentBody))).body).outcome
      }
      expect(outcome).toBe("duplicate")
      expect(handler.runs()).toBe(1)
    }))

  it.effect("makeHandler: closing its scope waits for the running handler; deliveries meanwhile get 503", () =>
    Effect.gen(function*() {
      const handler = yield* gate
      const store = Webhooks.makeMemoryDedupeStore()
      const scope = yield* Scope.make()
      const app = yield* Scope.extend(
        Webhooks.makeHandler({ secrets: secret, store, handlers: { "beneficiary.status": () => handler.run } }),
        scope
      )
      const handle = yield* webHandler(app)
      const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* handler.started
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* settle
      // The handler is held at its gate, so the scope cannot have closed.
      expect(Option.isNone(yield* Fiber.poll(closing))).toBe(true)
      const later = yield* send(handle, yield* signedPost(makeBody({ id: "0b9f4c1e-7a52-4c53-9d0e-2f1a3b4c5d6e" })))
      expect([later.status, JSON.parse(later.body)]).toEqual([503, { outcome: "shutting_down" }])
      yield* handler.open
      yield* Fiber.join(closing)
      const answer = yield* Fiber.join(first)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { outcome: "handled" }])
      // Marked handled before the scope closed; the refused delivery was never claimed.
      const claims = yield* Effect.all([
        store.claim("40061557-f125-4b39-97d6-c16a0f1230c1", "another", Duration.minutes(1)),
        store.claim("0b9f4c1e-7a52-4c53-9d0e-2f1a3b4c5d6e", "another", Duration.minutes(1))
      ])
      expect(claims.map((claim) => claim._tag)).toEqual(["Done", "Claimed"])
      expect(handler.runs()).toBe(1)
    }))

  it.effect("makeHandler: a delivery claiming its event as the scope begins to close is still handled, and waited for", () =>
    Effect.gen(function*() {
      // A claim that takes its time (a store across the network): the scope starts closing meanwhile.
      const { paused, resume, store } = yield* pausedClaims("before")
      const { record, seen } = yield* recorder
      const scope = yield* Scope.make()
      const app = yield* Scope.extend(
        Webhooks.makeHandler({ secrets: secret, store, handlers: { "beneficiary.status": (event) => record(event.id) } }),
        scope
      )
      const handle = yield* webHandler(app)
      const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* paused
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* settle
      expect(Option.isNone(yield* Fiber.poll(closing))).toBe(true)
      yield* resume
      yield* Fiber.join(closing)
      const answer = yield* Fiber.join(first)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { outcome: "handled" }])
      expect(yield* seen).toEqual(["40061557-f125-4b39-97d6-c16a0f1230c1"])
    }))

  it.effect("makeHandler: a delivery claiming as the scope closes is waited for, after earlier deliveries ended", () =>
    Effect.gen(function*() {
      // Only the second event's claim takes its time: the first delivery is answered (none left under way) before.
      const memory = Webhooks.makeMemoryDedupeStore()
      const paused = yield* Deferred.make<void>()
      const resume = yield* Deferred.make<void>()
      const slow = "0b9f4c1e-7a52-4c53-9d0e-2f1a3b4c5d6e"
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        claim: (eventId, referenceId, ttl) =>
          eventId === slow
            ? Effect.zipRight(Deferred.succeed(paused, undefined), Deferred.await(resume)).pipe(
              Effect.zipRight(memory.claim(eventId, referenceId, ttl))
            )
            : memory.claim(eventId, referenceId, ttl)
      }
      const { record, seen } = yield* recorder
      const scope = yield* Scope.make()
      const app = yield* Scope.extend(
        Webhooks.makeHandler({
          secrets: secret,
          store,
          handlers: { "beneficiary.status": (event) => record(event.id) }
        }),
        scope
      )
      const handle = yield* webHandler(app)
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      const second = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ id: slow, referenceId: "r-2" }))))
      yield* Deferred.await(paused)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* settle
      expect(Option.isNone(yield* Fiber.poll(closing))).toBe(true)
      yield* Deferred.succeed(resume, undefined)
      yield* Fiber.join(closing)
      const answer = yield* Fiber.join(second)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { outcome: "handled" }])
      expect(yield* seen).toEqual(["40061557-f125-4b39-97d6-c16a0f1230c1", slow])
    }))

  it.effect("makeHandler: a delivery past maxAge arriving as the scope closes gets 503 too, the store untouched", () =>
    Effect.gen(function*() {
      const handler = yield* gate
      const memory = Webhooks.makeMemoryDedupeStore()
      const claimed: Array<string> = []
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        claim: (eventId, referenceId, ttl) =>
          Effect.zipRight(Effect.sync(() => claimed.push(eventId)), memory.claim(eventId, referenceId, ttl))
      }
      yield* TestClock.setTime(DateTime.toEpochMillis(DateTime.unsafeMake("2026-04-04T17:40:00Z")))
      const scope = yield* Scope.make()
      const app = yield* Scope.extend(
        Webhooks.makeHandler({
          secrets: secret,
          store,
          maxAge: "1 hour",
          handlers: { "beneficiary.status": () => handler.run }
        }),
        scope
      )
      const handle = yield* webHandler(app)
      const first = yield* Effect.fork(send(handle, yield* signedPost(makeBody({ createdAt: "2026-04-04T17:39:00Z" }))))
      yield* handler.started
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* settle
      const old = makeBody({ id: "0b9f4c1e-7a52-4c53-9d0e-2f1a3b4c5d6e", createdAt: "2026-04-04T15:00:00Z" })
      const late = yield* send(handle, yield* signedPost(old))
      yield* handler.open
      yield* Fiber.join(closing)
      expect([late.status, JSON.parse(late.body)]).toEqual([503, { outcome: "shutting_down" }])
      expect((yield* Fiber.join(first)).status).toBe(200)
      expect(claimed).toEqual(["40061557-f125-4b39-97d6-c16a0f1230c1"])
    }))

  it.effect("a handler running past handlerTimeout is interrupted: 500, the claim released, the redelivery handled", () =>
    Effect.gen(function*() {
      let attempts = 0
      const started = yield* Deferred.make<void>()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlerTimeout: "30 seconds",
        handlers: {
          "beneficiary.status": () =>
            Effect.suspend(() =>
              (attempts += 1) === 1 ? Effect.zipRight(Deferred.succeed(started, undefined), Effect.never) : Effect.void
            )
        }
      }))
      const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* Deferred.await(started)
      // Until the handler's timeout sleeps on the TestClock, then past it.
      yield* settleUntil((sleeps, now) => sleeps.some((wakeUp) => wakeUp >= now + 30_000))
      yield* TestClock.adjust("31 seconds")
      const answer = yield* Fiber.join(first)
      expect(answer.status).toBe(500)
      expect(JSON.parse(answer.body)).toEqual({ outcome: "failed" })
      const again = yield* send(handle, yield* signedPost(currentBody))
      expect(JSON.parse(again.body)).toEqual({ outcome: "handled" })
      expect(attempts).toBe(2)
    }))

  // Lets `seconds` pass on the TestClock a second at a time, settling after each step for the woken fibers (the
  // claim's renewals) to run and sleep again.
  const pass = (seconds: number) =>
    Effect.forEach(Array.from({ length: seconds }), () => Effect.zipRight(TestClock.adjust("1 second"), settle), {
      discard: true
    })

  it.effect("a handler running longer than claimTtl keeps its claim: it is renewed, and a redelivery still gets 409", () =>
    Effect.gen(function*() {
      const { handle, handler } = yield* gatedHandler({ claimTtl: "3 seconds" })
      const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* handler.started
      yield* pass(10)
      const second = yield* send(handle, yield* signedPost(currentBody))
      expect(JSON.parse(second.body)).toEqual({ outcome: "in_progress" })
      yield* handler.open
      expect(JSON.parse((yield* Fiber.join(first)).body)).toEqual({ outcome: "handled" })
      expect(handler.runs()).toBe(1)
    }))

  it.effect("a claim that cannot be kept (gone, or the store down until it expires) stops the handler: 500", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      const down = new Webhooks.WebhookDedupeStoreError({ operation: "renew", message: "unreachable" })
      const stores: ReadonlyArray<readonly [Webhooks.WebhookDedupeStoreService, number]> = [
        [{ ...memory, renew: () => Effect.succeed(false) }, 2],
        [{ ...memory, renew: () => Effect.fail(down) }, 4]
      ]
      for (const [store, seconds] of stores) {
        let interrupted = 0
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          store,
          claimTtl: "3 seconds",
          handlers: { "beneficiary.status": () => Effect.onInterrupt(Effect.never, () => Effect.sync(() => interrupted++)) }
        }))
        const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
        yield* settle
        yield* pass(seconds)
        const answer = yield* Fiber.join(delivery)
        expect(answer.status).toBe(500)
        expect(JSON.parse(answer.body)).toEqual({ outcome: "store_unavailable" })
        expect(interrupted).toBe(1)
      }
    }))

  it.effect("a handler whose claim cannot be renewed stops before the claim lapses: a redelivery never runs beside it", () =>
    Effect.gen(function*() {
      // Two processes on one store; A's link to it goes quiet: each renewal waits a second, then fails.
      const shared = Webhooks.makeMemoryDedupeStore()
      let partitioned = false
      const down = new Webhooks.WebhookDedupeStoreError({ operation: "renew", message: "Redis did not answer within 1s" })
      const storeA: Webhooks.WebhookDedupeStoreService = {
        ...shared,
        renew: (...args) => partitioned ? Effect.zipRight(Effect.sleep("1 second"), Effect.fail(down)) : shared.renew(...args)
      }
      let running = 0
      let most = 0
      let runs = 0
      const user = () =>
        Effect.suspend(() => {
          runs++
          most = Math.max(most, ++running)
          return Effect.ensuring(Effect.sleep("60 seconds"), Effect.sync(() => running--))
        })
      const options = { secrets: secret, handlerTimeout: "5 minutes", handlers: { "beneficiary.status": user } } as const
      const a = yield* webHandler(Webhooks.handler({ ...options, store: storeA }))
      const b = yield* webHandler(Webhooks.handler({ ...options, store: shared }))
      const first = yield* Effect.fork(send(a, yield* signedPost(currentBody)))
      yield* settle
      yield* pass(10) // renewed at 10 s: the claim holds until 40 s
      partitioned = true
      yield* pass(27) // A stops its handler at 37 s, a tenth of claimTtl before the claim lapses
      const answer = yield* Fiber.join(first)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([500, { outcome: "store_unavailable" }])
      expect(running).toBe(0)
      yield* pass(4) // 41 s: the claim has lapsed; the redelivery runs the handler, alone
      const second = yield* Effect.fork(send(b, yield* signedPost(currentBody)))
      yield* settle
      yield* pass(61)
      expect((yield* Fiber.join(second)).status).toBe(200)
      expect([runs, most]).toEqual([2, 1])
    }))

  it.effect("renewals come sooner as the claim's end nears: two failed ones in a row still leave time for a third", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      const down = new Webhooks.WebhookDedupeStoreError({ operation: "renew", message: "connection reset" })
      let renewals = 0
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        renew: (...args) => Effect.suspend(() => ++renewals <= 2 ? Effect.fail(down) : memory.renew(...args))
      }
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        claimTtl: "3 seconds",
        handlers: { "beneficiary.status": () => Effect.sleep("4 seconds") }
      }))
      const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* settle
      for (let i = 0; i < 50; i++) yield* Effect.zipRight(TestClock.adjust("100 millis"), settle)
      const answer = yield* Fiber.join(delivery)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { outcome: "handled" }])
      expect(renewals).toBeGreaterThan(2)
    }))

  it.effect("a running handler's claim is renewed every third of claimTtl", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      const renewedAt: Array<number> = []
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        renew: (...args) =>
          Effect.zipRight(
            Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => renewedAt.push(now))),
            memory.renew(...args)
          )
      }
      const { handle, handler } = yield* gatedHandler({ store, claimTtl: "30 seconds" })
      const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* handler.started
      yield* pass(35)
      expect(renewedAt).toEqual([10_000, 20_000, 30_000])
      yield* handler.open
      expect(JSON.parse((yield* Fiber.join(delivery)).body)).toEqual({ outcome: "handled" })
    }))

  it.effect("a renewal the store never answers stops the handler before the claim lapses, not claimTtl after", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      let hung = false
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        renew: (...args) => hung ? Effect.never : memory.renew(...args)
      }
      let interrupted = 0
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        handlerTimeout: "5 minutes",
        handlers: {
          "beneficiary.status": () => Effect.onInterrupt(Effect.never, () => Effect.sync(() => interrupted++))
        }
      }))
      const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* settle
      yield* pass(10) // renewed at 10 s: the claim holds until 40 s
      hung = true
      // The renewal sent at 20 s never answers: the handler stops at 37 s, a tenth of claimTtl before the claim lapses
      // (waiting for the renewal as long as a claim lives would keep it running until 50 s, beside a redelivery).
      yield* pass(27)
      const answer = yield* answered(delivery)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([500, { outcome: "store_unavailable" }])
      expect(interrupted).toBe(1)
    }))

  it.effect("a renewal timer waking past the handler's stop (a stalled event loop) stops it, whatever the store", () =>
    Effect.gen(function*() {
      // The app's clock runs `stall` ahead of the TestClock: a timer due at 10 s wakes, as it reads, at 10 s + stall.
      const testClock = yield* Effect.clock
      let stall = 0
      const stalling: Clock.Clock = {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        unsafeCurrentTimeMillis: () => testClock.unsafeCurrentTimeMillis() + stall,
        currentTimeMillis: Effect.sync(() => testClock.unsafeCurrentTimeMillis() + stall),
        unsafeCurrentTimeNanos: () => testClock.unsafeCurrentTimeNanos() + BigInt(stall) * 1_000_000n,
        currentTimeNanos: Effect.sync(() => testClock.unsafeCurrentTimeNanos() + BigInt(stall) * 1_000_000n),
        sleep: (duration) => testClock.sleep(duration)
      }
      let interrupted = 0
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlerTimeout: "5 minutes",
        handlers: {
          "beneficiary.status": () => Effect.onInterrupt(Effect.never, () => Effect.sync(() => interrupted++))
        }
      })).pipe(Effect.withClock(stalling))
      const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* settle
      // Claimed at 0 s: the handler is to stop by 27 s, a tenth of claimTtl before the claim could lapse. The first
      // renewal's timer, due at 10 s, wakes at 28 s: the claim still holds (until 30 s), and a renewal would keep it,
      // but the handler has run past its stop, and stops.
      stall = 18_000
      yield* pass(10)
      const answer = yield* answered(delivery)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([500, { outcome: "store_unavailable" }])
      expect(interrupted).toBe(1)
    }))

  it.effect("a store that fails every renewal is asked a few times, not ever faster, before the handler stops", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      const down = new Webhooks.WebhookDedupeStoreError({ operation: "renew", message: "connection refused" })
      const renewedAt: Array<number> = []
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        renew: () =>
          Effect.zipRight(
            Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => renewedAt.push(now))),
            Effect.fail(down)
          )
      }
      const started = yield* Deferred.make<void>()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        claimTtl: "3 seconds",
        handlers: { "beneficiary.status": () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never) }
      }))
      const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      // Claimed and started at 0 before the clock moves: verification may take real time first (the WebCrypto default
      // runs on libuv's thread pool), longer than the turns `settle` waits on a loaded machine.
      yield* Deferred.await(started)
      yield* settle
      for (let i = 0; i < 300; i++) yield* Effect.zipRight(TestClock.adjust("10 millis"), settle)
      expect([(yield* Fiber.join(delivery)).status, renewedAt]).toEqual([500, [1000, 1850, 2275, 2487.5, 2593.75]])
    }))

  // Stopped for its claim, the handler's releases (a commit) still run: the claim is renewed until they end, as far as
  // the store allows (here it answers again once the handler was stopped), so a redelivery meanwhile is told 409,
  // not run beside them. The release outlasts several claims: each renewal moves the claim's lapse on, not only the
  // first one after the stop.
  it.effect("a handler stopped for a claim it could not renew keeps it renewed while its releases run", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      let storeDown = true
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        renew: (...args) => storeDown ? Effect.fail(refused("renew")) : memory.renew(...args)
      }
      // The first one's commit, 10 s in the release of what it acquired: more than three times the claim's 3 s.
      const commit = Effect.zipRight(Effect.sync(() => (storeDown = false)), Effect.sleep("10 seconds"))
      const { counts, deliver, first } = yield* claimRig(store, (ordinal) =>
        ordinal === 1 ? Effect.zipRight(Effect.addFinalizer(() => commit), Effect.never) : Effect.void)
      // Stopped at 2.7 s (a tenth of the claim's time before it would lapse); at 8 s its release still runs, past the
      // 5.8 s the first renewal after the stop bought.
      yield* moveClock(80, "100 millis")
      expect(JSON.parse((yield* deliver).body)).toEqual({ outcome: "in_progress" })
      yield* moveClock(50, "100 millis")
      expect([(yield* Fiber.join(first)).status, counts.running]).toEqual([500, 0])
      expect(JSON.parse((yield* deliver).body)).toEqual({ outcome: "handled" })
      expect([counts.runs, counts.most]).toEqual([2, 1])
    }))

  // While the store stays down, the claim is not tried past the time it lapses (a renewal then would find it gone):
  // a stopped handler's long release does not keep a failing store asked every thirtieth of the claim's time.
  it.effect("a handler stopped for its claim: no renewal is tried past the claim's lapse while its release runs", () =>
    Effect.gen(function*() {
      const renewedAt: Array<number> = []
      const store: Webhooks.WebhookDedupeStoreService = {
        ...Webhooks.makeMemoryDedupeStore(),
        renew: () =>
          Effect.zipRight(
            Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => renewedAt.push(now))),
            Effect.fail(refused("renew"))
          )
      }
      const { first } = yield* claimRig(store, () =>
        Effect.zipRight(Effect.addFinalizer(() => Effect.sleep("10 seconds")), Effect.never))
      yield* moveClock(300, "50 millis")
      expect((yield* Fiber.join(first)).status).toBe(500)
      expect(renewedAt.filter((at) => at > 2_700).length).toBeGreaterThan(0)
      expect(renewedAt.filter((at) => at >= 3_000)).toEqual([])
    }))

  // A renewal that dies (a driver's bug) stops the handler, as one that fails does: left unseen, the handler ran on
  // with no renewals, and a redelivery ran beside it once the claim lapsed. (No renewal follows a defect: a handler
  // with a release longer than the claim may still have a redelivery beside that release.) It is the store's defect,
  // answered and counted as its other defects are, not logged as the handler's failure.
  it.effect("a renewal that dies stops the handler, as one that fails does, as the store's defect", () =>
    Effect.gen(function*() {
      const store: Webhooks.WebhookDedupeStoreService = {
        ...Webhooks.makeMemoryDedupeStore(),
        renew: () => Effect.dieMessage("renew bug")
      }
      const { layer: capture, lines: logs } = captureLogs()
      const before = yield* countedDeliveries
      const { counts, deliver, first } = yield* Effect.provide(
        claimRig(store, () => Effect.sleep("10 seconds")),
        capture
      )
      yield* moveClock(20, "200 millis")
      const second = yield* Effect.fork(deliver)
      yield* settle
      yield* moveClock(60, "200 millis")
      const answers = [yield* Fiber.join(first), yield* Fiber.join(second)].map((x) => `${x.status} ${x.body}`)
      expect([answers, counts.most]).toEqual([["500 ", "500 "], 1])
      expect(yield* deliveriesCountedSince(before)).toEqual(["outcome=defect: 2"])
      expect(logs.filter((line) => line.includes("webhook handler failed"))).toEqual([])
    }))

  // Likewise once keepClaim gave up on an outage: a renewal that dies in renewOnward, while the handler's release
  // runs, is the store's defect too, not a claim lost to an outage (nor a daemon fiber's Debug line).
  it.effect("a renewal that dies after the claim was given up on is the store's defect too", () =>
    Effect.gen(function*() {
      const store: Webhooks.WebhookDedupeStoreService = {
        ...Webhooks.makeMemoryDedupeStore(),
        // Refused until keepClaim gives up (2.7 s into a 3 s claim), then dying.
        renew: () =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            now < 2_690 ? Effect.fail(refused("renew")) : Effect.dieMessage("renew bug"))
      }
      const before = yield* countedDeliveries
      const { first } = yield* claimRig(store, () => Effect.onInterrupt(Effect.never, () => Effect.sleep("5 seconds")))
      yield* moveClock(100, "100 millis")
      const answer = yield* Fiber.join(first)
      expect(`${answer.status} ${answer.body}`).toBe("500 ")
      expect(yield* deliveriesCountedSince(before)).toEqual(["outcome=defect: 1"])
    }))

  // The race drops the exit of a handler stopped for its claim: a release of its that then dies is logged all the same.
  it.effect("a handler stopped for its claim whose release dies: the release's defect is logged", () =>
    Effect.gen(function*() {
      const store: Webhooks.WebhookDedupeStoreService = {
        ...Webhooks.makeMemoryDedupeStore(),
        renew: () => Effect.succeed(false)
      }
      const lines: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ cause, logLevel, message }) => {
          lines.push(`${logLevel.label} ${String(message)} ${Cause.isEmpty(cause) ? "" : Cause.pretty(cause)}`)
        })
      )
      const { first } = yield* Effect.provide(
        claimRig(store, () =>
          Effect.zipRight(Effect.addFinalizer(() => Effect.dieMessage("the commit in a release died")), Effect.never)),
        capture
      )
      yield* moveClock(40, "100 millis")
      const answer = yield* Fiber.join(first)
      expect(`${answer.status} ${answer.body}`).toBe(`500 {"outcome":"store_unavailable"}`)
      const failed = lines.filter((line) => line.startsWith("ERROR effect-fin: webhook handler failed"))
      expect([failed.length, failed.every((line) => line.includes("the commit in a release died"))]).toEqual([1, true])
      expect(lines.filter((line) => line.includes("webhook handler stopped")).length).toBe(1)
    }))

  it.effect("a stuck claim expires after claimTtl; handled ids are forgotten after dedupeTtl", () =>
    Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore()
      const stuck = yield* store.claim("40061557-f125-4b39-97d6-c16a0f1230c1", "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31", Duration.minutes(5))
      expect(stuck._tag).toBe("Claimed")
      let runs = 0
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        claimTtl: "1 minute",
        dedupeTtl: "1 hour",
        handlers: { "beneficiary.status": () => Effect.sync(() => runs++) }
      }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(409)
      yield* TestClock.adjust("6 minutes")
      expect(JSON.parse((yield* send(handle, yield* signedPost(currentBody))).body)).toEqual({ outcome: "handled" })
      yield* TestClock.adjust("59 minutes")
      expect(JSON.parse((yield* send(handle, yield* signedPost(currentBody))).body)).toEqual({ outcome: "duplicate" })
      yield* TestClock.adjust("2 minutes")
      expect(JSON.parse((yield* send(handle, yield* signedPost(currentBody))).body)).toEqual({ outcome: "handled" })
      expect(runs).toBe(2)
    }))

  it.effect("the app requires what the user's handlers require", () =>
    Effect.gen(function*() {
      class Audit extends Context.Tag("test/Audit")<Audit, { readonly note: (line: string) => Effect.Effect<void> }>() {}
      const notes: Array<string> = []
      const app = Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": (event) => Effect.flatMap(Audit, (audit) => audit.note(event.id)) }
      })
      // @ts-expect-error Audit is required, so the app cannot be used where nothing but the request is provided
      const _unprovided: Effect.Effect<unknown, never, HttpServerRequest.HttpServerRequest | Scope.Scope> = app
      void _unprovided
      const provided = Effect.provideService(app, Audit, { note: (line) => Effect.sync(() => notes.push(line)) })
      const handle = yield* webHandler(provided)
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect(notes).toEqual(["40061557-f125-4b39-97d6-c16a0f1230c1"])
    }))

  it("handlers annotated with Webhooks.Handlers give the app exact requirements; misspelt keys alone do not compile", () => {
    class Audit extends Context.Tag("test/Audit")<Audit, { readonly note: (line: string) => Effect.Effect<void> }>() {}
    // Annotated (as an app's own module would), needing nothing: the app needs only the request and a scope.
    const plain: Webhooks.Handlers<never> = { "beneficiary.status": (event) => Effect.log(event.id) }
    const app: HttpApp.Default<never, HttpServerRequest.HttpServerRequest | Scope.Scope> = Webhooks.handler({
      secrets: secret,
      handlers: plain
    })
    // Needing a service: said in the annotation, and required by the app.
    const audited: Webhooks.Handlers<Audit> = {
      "beneficiary.status": (event) => Effect.flatMap(Audit, (audit) => audit.note(event.id))
    }
    const needs: HttpApp.Default<never, Audit | HttpServerRequest.HttpServerRequest | Scope.Scope> = Webhooks.handler({
      secrets: secret,
      handlers: audited
    })
    // @ts-expect-error a handler needing a service is no Webhooks.Handlers<never> (no services)
    const _unsaid: Webhooks.Handlers<never> = audited
    // A helper of the app's own, generic over the handlers (as OnlyEventTypes says): exact requirements, keys checked.
    const mount = <H extends Webhooks.Handlers>(handlers: H & Webhooks.OnlyEventTypes<H>["handlers"]) =>
      Webhooks.handler<H>({ secrets: secret, handlers })
    const mounted: HttpApp.Default<never, Audit | HttpServerRequest.HttpServerRequest | Scope.Scope> = mount({
      "beneficiary.status": (event) => Effect.flatMap(Audit, (audit) => audit.note(event.id))
    })
    // @ts-expect-error "beneficiary.stauts" is no event type, through the helper too
    const _mountedMisspelt = () => mount({ "beneficiary.stauts": () => Effect.void })
    // Checked with `satisfies` (the literal's own type kept): exact requirements.
    const satisfying = { "beneficiary.status": () => Audit } satisfies Webhooks.Handlers
    const checked: HttpApp.Default<never, Audit | HttpServerRequest.HttpServerRequest | Scope.Scope> = Webhooks.handler({
      secrets: secret,
      handlers: satisfying
    })
    // Handlers whose only key is misspelt, held in a variable: every event would be acknowledged, none handled.
    const misspelt = { "beneficiary.stauts": () => Effect.void }
    // @ts-expect-error "beneficiary.stauts" is no event type
    const _refused = () => Webhooks.handler({ secrets: secret, handlers: misspelt })
    // The type the compiler's message names: the key, and that it is no event type.
    expectTypeOf<Webhooks.OnlyEventTypes<typeof misspelt>["handlers"]>().toEqualTypeOf<
      { readonly "beneficiary.stauts": Webhooks.NotAnEventType<"beneficiary.stauts"> }
    >()
    // Its text names where the event types are listed: an export that exists.
    type Listed = keyof Pick<typeof Webhooks, "documentedEventTypes">
    expectTypeOf<keyof Webhooks.NotAnEventType<"x">>().toEqualTypeOf<
      `effect-fin: not a webhook event type (Webhooks.${Listed} lists them, and Unknown)`
    >()
    expect([app, needs, mounted, checked].every(Effect.isEffect) && _unsaid === audited).toBe(true)
    expect(_mountedMisspelt).toThrow(`handlers has "beneficiary.stauts", which is not an event type`)
    // And when built (from untyped code): refused.
    expect(_refused).toThrow(`handlers has "beneficiary.stauts", which is not an event type`)
  })

  it.effect("a handler given as undefined (switched off by a flag) compiles under exactOptionalPropertyTypes and handles nothing", () =>
    Effect.gen(function*() {
      const enabled = (() => false)()
      const seen: Array<string> = []
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: {
          "beneficiary.status": enabled ? (event) => Effect.sync(() => seen.push(event.id)) : undefined,
          "customer.status": undefined
        }
      }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect(seen).toEqual([])
    }))

  it.effect("uses the WebhookDedupeStore service when provided", () =>
    Effect.gen(function*() {
      const store = yield* Webhooks.WebhookDedupeStore
      const app = Webhooks.handler({ secrets: secret, handlers: {} })
      // Two handlers sharing the service's store see each other's deliveries.
      const one = yield* webHandler(app)
      const two = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {} }))
      expect(JSON.parse((yield* send(one, yield* signedPost(currentBody))).body)).toEqual({ outcome: "handled" })
      expect(JSON.parse((yield* send(two, yield* signedPost(currentBody))).body)).toEqual({ outcome: "duplicate" })
      const claim = yield* store.claim("40061557-f125-4b39-97d6-c16a0f1230c1", "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31", Duration.minutes(1))
      expect(claim._tag).toBe("Done")
    }).pipe(Effect.provide(Webhooks.layerMemoryDedupeStore())))

  // Anyone who can reach the endpoint can send unsigned requests, and a secret out of step fails every delivery: one
  // warning per reason until a new delivery is handled and a minute has passed, the rest at Debug (each still
  // answered, and in its span): forged requests between real deliveries warn at most once a minute.
  it.effect("a rejection is one warning per reason until a new delivery is handled and a minute has passed", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {} })).pipe(
        Effect.provide(capture),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      const wrong = yield* Webhooks.sign(currentBody, "whsec_wrong")
      const forged = () => post(currentBody, { ...wrong })
      const warnings = () => logs.filter((line) => line.startsWith("WARN")).map((line) => /"reason":"(\w+)"/.exec(line)?.[1])
      for (let i = 0; i < 5; i++) expect((yield* send(handle, forged())).status).toBe(401)
      for (let i = 0; i < 5; i++) expect((yield* send(handle, post(currentBody, {}))).status).toBe(401)
      expect(warnings()).toEqual(["bad_signature", "missing_signature"])
      expect(logs.filter((line) => line.startsWith("DEBUG") && line.includes("delivery rejected"))).toHaveLength(8)
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      yield* TestClock.adjust("59 seconds")
      expect((yield* send(handle, forged())).status).toBe(401)
      expect(warnings()).toEqual(["bad_signature", "missing_signature"])
      yield* TestClock.adjust("1 second")
      expect((yield* send(handle, forged())).status).toBe(401)
      expect((yield* send(handle, forged())).status).toBe(401)
      expect(warnings()).toEqual(["bad_signature", "missing_signature", "bad_signature"])
      // A minute on, but no new delivery handled: still at Debug.
      yield* TestClock.adjust("2 minutes")
      expect((yield* send(handle, forged())).status).toBe(401)
      expect(warnings()).toEqual(["bad_signature", "missing_signature", "bad_signature"])
    }))

  // A 400 after the signature verified is an authentic event refused (a payload the service changed, say): while no
  // delivery is handled, that is said at Warning again once a minute, not once for a whole outage.
  // A minute on monotonic time: a wall clock set back an hour (an NTP step) does not hold the next warning that long.
  it.effect("signed deliveries refused as malformed warn again once a minute while none is handled", () =>
    withTestWallClockSetBack((setBack) => Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => Effect.void }
      })).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.All))
      const warnings = () =>
        logs.filter((line) => line.startsWith("WARN")).map((line) => /"reason":"(\w+)"/.exec(line)?.[1])
      const changed = (id: string) => makeBody({ id, data: { ...beneficiaryData("ACTIVE"), customer_id: 42 } })
      expect((yield* send(handle, yield* signedPost(changed("e-1")))).status).toBe(400)
      yield* TestClock.adjust("59 seconds")
      expect((yield* send(handle, yield* signedPost(changed("e-2")))).status).toBe(400)
      expect(warnings()).toEqual(["malformed_body"])
      yield* TestClock.adjust("1 second")
      expect((yield* send(handle, yield* signedPost(changed("e-3")))).status).toBe(400)
      yield* TestClock.adjust("1 hour")
      expect((yield* send(handle, yield* signedPost(changed("e-4")))).status).toBe(400)
      expect(warnings()).toEqual(["malformed_body", "malformed_body", "malformed_body"])
      setBack(3_600_000)
      yield* TestClock.adjust("1 minute")
      expect((yield* send(handle, yield* signedPost(changed("e-5")))).status).toBe(400)
      expect(warnings()).toEqual(["malformed_body", "malformed_body", "malformed_body", "malformed_body"])
    })))

  // A replay of one genuine delivery (a duplicate, answered 200) is no new delivery: it must not reset the warnings,
  // or an attacker holding one captured delivery warns once per forged request again.
  // Replayed: a duplicate of a handled one (200), or one whose handler fails each time (500, released, claimed again).
  for (const [replayed, handlers, status] of [
    ["a duplicate", {}, 200],
    ["one whose handler fails", { "beneficiary.status": () => Effect.fail("handler error") }, 500]
  ] as const) {
    it.effect(`a replayed delivery (${replayed}) does not bring back one warning per forged request`, () =>
      Effect.gen(function*() {
        const { layer: capture, lines: logs } = captureLogs()
        const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers })).pipe(
          Effect.provide(capture),
          Logger.withMinimumLogLevel(LogLevel.All)
        )
        const captured = yield* Webhooks.sign(currentBody, secret)
        expect((yield* send(handle, post(currentBody, { ...captured }))).status).toBe(status)
        const wrong = yield* Webhooks.sign(currentBody, "whsec_wrong")
        for (let i = 0; i < 5; i++) {
          expect((yield* send(handle, post(currentBody, { ...captured }))).status).toBe(status)
          expect((yield* send(handle, post(currentBody, { ...wrong }))).status).toBe(401)
        }
        expect(logs.filter((line) => line.startsWith("WARN"))).toHaveLength(1)
      }))
  }

  // Nor does one older than the last handled (stale: acknowledged, its handler not run), replayed: stale each time once
  // its id is forgotten (past dedupeTtl), as a genuine late delivery would be.
  it.effect("a replayed stale delivery does not bring back one warning per forged request", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        dedupeTtl: "1 minute",
        handlers: { "beneficiary.status": () => Effect.void }
      })).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.All))
      const newer = makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("ACTIVE") })
      const older = makeBody({ id: "e-1", createdAt: "2026-04-04T17:39:00Z", data: beneficiaryData("PROCESSING") })
      const outcome = (body: string) => Effect.map(Effect.flatMap(signedPost(body), (request) => send(handle, request)),
        (answer) => JSON.parse(answer.body).outcome)
      expect(yield* outcome(newer)).toBe("handled")
      const wrong = yield* Webhooks.sign(currentBody, "whsec_wrong")
      for (let i = 0; i < 3; i++) {
        expect((yield* send(handle, post(currentBody, { ...wrong }))).status).toBe(401)
        yield* TestClock.adjust("2 minutes")
        expect(yield* outcome(older)).toBe("stale")
      }
      expect(logs.filter((line) => line.startsWith("WARN"))).toHaveLength(1)
    }))

  it.effect("logs rejections and handler failures without secrets", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => Effect.fail("handler error") }
      })).pipe(
        Effect.provide(capture),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      yield* send(handle, post(currentBody, { ...(yield* Webhooks.sign(currentBody, "whsec_wrong")) }))
      yield* send(handle, yield* signedPost(currentBody))
      // Signed, but `active` is text: the log says where and what was expected, never the value.
      const textActive = currentBody.replace(`"active":false`, `"active":"sometimes"`)
      expect((yield* send(handle, yield* signedPost(textActive))).status).toBe(400)
      expect(logs.length).toBeGreaterThanOrEqual(3)
      expect(logs.some((line) => line.includes("bad_signature"))).toBe(true)
      const rejected = logs.filter((line) => line.includes("malformed_body"))
      expect(rejected).toHaveLength(1)
      expect(rejected[0]).toContain("the event data is malformed: data.active: expected")
      expect(rejected[0]).not.toContain("sometimes")
      expect(logs.some((line) => line.includes("webhook handler failed"))).toBe(true)
      for (const line of logs) {
        expect(line).not.toContain(secretValue)
        expect(line).not.toContain("whsec_wrong")
      }
    }))

  // The handler knows the secret (its configuration): a failure quoting it, in its message or in its error's own
  // `cause` (which Effect's loggers print), or holding it in a field of its error (which a logger that serialises
  // the cause shows, though Effect's rendering leaves it out), is logged with the secret redacted, as text; a long
  // one without it as it was.
  it.effect("logs a handler's failure that quotes a webhook secret with the secret redacted", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      class LedgerConfigError extends Data.TaggedError("LedgerConfigError")<{ readonly config: { key: string } }> {}
      const cyclic: Record<string, unknown> = {}
      cyclic["self"] = cyclic
      const failures: Array<unknown> = [
        new Error(`cannot reach the ledger with ${secretValue}`),
        new Error("ledger unreachable", { cause: new Error(`bad key ${secretValue}`) }),
        Object.assign(new Error("ledger misconfigured"), { config: { key: secretValue } }),
        new LedgerConfigError({ config: { key: secretValue } }),
        // Where JSON sees nothing but an inspecting logger does: an error's message in a field, a Map's entries.
        Object.assign(new Error("ledger refused"), { reason: new Error(`bad key ${secretValue}`) }),
        Object.assign(new Error("ledger headers"), { headers: new Map([["authorization", secretValue]]) }),
        // Where JSON writes it but a look at data fields alone misses it: a getter's value, a boxed string.
        Object.assign(new Error("ledger getter"), { config: { get key() { return secretValue } } }),
        Object.assign(new Error("ledger boxed"), { key: new String(secretValue) }),
        new Error("x".repeat(20_000)),
        // No secret, in fields JSON cannot write (a bigint amount, a cycle): logged as it is.
        Object.assign(new Error("ledger amount"), { amount: 100n, node: cyclic })
      ]
      const handle = yield* webHandler(Webhooks.handler({
        secrets: ["whsec_old_rotated_out", secret],
        handlers: { "beneficiary.status": () => Effect.die(failures.shift()) }
      })).pipe(Effect.provide(capture))
      for (let i = 0; i < 10; i++) expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(500)
      const failed = logs.filter((line) => line.includes("webhook handler failed"))
      expect(failed).toHaveLength(10)
      expect(failed[0]).toContain("cannot reach the ledger with <redacted>")
      expect(failed[1]).toContain("bad key <redacted>")
      expect(failed[2]).toContain("ledger misconfigured")
      expect(failed[3]).toContain("LedgerConfigError")
      expect(failed[4]).toContain("ledger refused")
      expect(failed[5]).toContain("ledger headers")
      expect(failed[6]).toContain("ledger getter")
      expect(failed[7]).toContain("ledger boxed")
      for (const line of failed.slice(0, 8)) {
        // One message, the failure in it: a second message is a second `message` key in a logfmt line.
        expect(line).toContain("(a webhook secret redacted): ")
        expect(line).not.toContain(secretValue)
      }
      for (const line of failed.slice(8)) expect(line).not.toContain("redacted")
    }))

  // Effect's rendering of a cause (Cause.pretty, every logger) overflows the stack on an error that is its own cause:
  // the failure is still said, by name and message (redacted), and the event is not marked handled.
  it.effect("a handler failing with an error whose causes make a cycle is logged by name and message, not lost", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const cyclic = new Error(`ledger unreachable with ${secretValue}`) as Error & { cause?: unknown }
      cyclic.cause = new Error("retry later", { cause: cyclic })
      let runs = 0
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => Effect.suspend(() => runs++ === 0 ? Effect.fail(cyclic) : Effect.void) }
      })).pipe(Effect.provide(capture))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(500)
      expect(logs.filter((line) => line.includes("webhook handler failed"))).toEqual([
        expect.stringContaining(
          "webhook handler failed with an error whose causes make a cycle (not renderable): " +
            "Error: ledger unreachable with <redacted>"
        )
      ])
      expect(JSON.parse((yield* send(handle, yield* signedPost(currentBody))).body)).toEqual({ outcome: "handled" })
      expect(runs).toBe(2)
    }))

  // Only the handler's own stop for its claim is said as stopped: a failure of the handler's that is an object (an
  // Error, a tagged error) is still its failure.
  it.effect("a handler failing with an error object is logged as a failed handler, not one stopped for its claim", () =>
    Effect.gen(function*() {
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => Effect.fail(new Error("ledger unreachable")) }
      })).pipe(Effect.provide(capture))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(500)
      expect(logs.filter((line) => !line.startsWith("INFO"))).toEqual([
        expect.stringMatching(/^ERROR \["effect-fin: webhook handler failed"\]/)
      ])
    }))
})

describe("Webhooks memory store", () => {
  it.effect("is bounded in size, but never drops a live claim on an event or a resource", () =>
    Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore({ maxEntries: 3 })
      const ttl = Duration.hours(1)
      for (const id of ["a", "b", "c", "d"]) {
        const claim = yield* store.claim(id, id, ttl)
        if (claim._tag === "Claimed") yield* store.complete(id, claim.token, { referenceId: id, order: { key: id, createdAt: 1, ttl } }, ttl)
      }
      // "a" was the oldest and is gone; the newest three remain.
      expect((yield* store.claim("a", "a", ttl))._tag).toBe("Claimed")
      expect((yield* store.claim("d", "d", ttl))._tag).toBe("Done")
      expect(Option.isNone(yield* store.lastHandled("a"))).toBe(true)
      expect(yield* store.lastHandled("d")).toEqual(Option.some(1))
      // Live claims are never evicted, however many others are taken: a duplicate of the first is still in progress
      // (not made to wait for its resource), and another event of its resource still waits.
      for (const reference of ["r1", "r2", "r3", "r4"]) {
        expect((yield* store.claim(`first-of-${reference}`, reference, ttl))._tag).toBe("Claimed")
      }
      expect((yield* store.claim("first-of-r1", "r1", ttl))._tag).toBe("InProgress")
      expect((yield* store.claim("second-of-r1", "r1", ttl))._tag).toBe("ReferenceBusy")
    }))

  // README: "the default store remembers at most 10,000 handled events and resources (the oldest go first)": fewer
  // would run redeliveries again sooner than said, more would hold more memory than said.
  it.effect("remembers 10,000 handled events and resources by default, and no more", () =>
    Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore()
      const ttl = Duration.hours(1)
      const handle = (i: number) =>
        Effect.flatMap(store.claim(`e${i}`, `r${i}`, ttl), (claim) =>
          claim._tag === "Claimed"
            ? store.complete(`e${i}`, claim.token, {
              referenceId: `r${i}`,
              order: { key: `k${i}`, createdAt: i, ttl }
            }, ttl)
            : Effect.dieMessage(`not claimed: ${i}`))
      for (let i = 0; i < 10_000; i++) yield* handle(i)
      expect((yield* store.claim("e0", "r0", ttl))._tag).toBe("Done")
      expect(yield* store.lastHandled("k0")).toEqual(Option.some(0))
      yield* handle(10_000)
      expect((yield* store.claim("e1", "r1", ttl))._tag).toBe("Done")
      expect(Option.isNone(yield* store.lastHandled("k0"))).toBe(true)
      expect((yield* store.claim("e0", "r0", ttl))._tag).toBe("Claimed")
    }))

  // Handlers of different lifetimes share a store: the short-lived expire while the long-lived stay, however many
  // entries were set again before them (a resource's last status, remembered first briefly, then for longer).
  it.effect("forgets what expired, and only that, with entries of several lifetimes set again and again", () =>
    Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore({ maxEntries: 2_000 })
      const handle = (id: string, key: string, createdAt: number, ttl: Duration.Duration) =>
        Effect.flatMap(store.claim(id, `ref-${id}`, Duration.seconds(30)), (claim) =>
          claim._tag === "Claimed"
            ? store.complete(id, claim.token, { referenceId: `ref-${id}`, order: { key, createdAt, ttl } }, ttl)
            : Effect.dieMessage(`not claimed: ${id}`))
      const ids = Array.from({ length: 500 }, (_, i) => i)
      for (const i of ids) {
        yield* handle(`brief-${i}`, `brief-${i}`, 1, Duration.minutes(1))
        yield* handle(`first-${i}`, `kept-${i}`, 1, Duration.minutes(1))
        yield* handle(`then-${i}`, `kept-${i}`, 2, Duration.hours(1))
      }
      yield* TestClock.adjust("2 minutes")
      yield* handle("after", "after", 1, Duration.minutes(1))
      for (const i of ids) {
        expect(yield* store.lastHandled(`brief-${i}`)).toEqual(Option.none())
        expect(yield* store.lastHandled(`kept-${i}`)).toEqual(Option.some(2))
        expect((yield* store.claim(`first-${i}`, `ref-first-${i}`, Duration.seconds(30)))._tag).toBe("Claimed")
        expect((yield* store.claim(`then-${i}`, `ref-then-${i}`, Duration.seconds(30)))._tag).toBe("Done")
      }
    }))

  // A resource whose status comes again and again counts as new each time: past maxEntries the oldest of the others
  // goes first, then it, as last set.
  it.effect("a resource set again many times is evicted by when it was last set", () =>
    Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore({ maxEntries: 10 })
      const ttl = Duration.hours(1)
      let events = 0
      const handle = (key: string, createdAt: number) =>
        Effect.gen(function*() {
          const id = `e${events++}`
          const claim = yield* store.claim(id, `ref-${id}`, ttl)
          if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${id}`)
          yield* store.complete(id, claim.token, { referenceId: `ref-${id}`, order: { key, createdAt, ttl } }, ttl)
        })
      yield* handle("older", 1)
      for (let i = 1; i <= 200; i++) yield* handle("hot", i)
      for (let i = 0; i < 8; i++) yield* handle(`other-${i}`, 1)
      expect(yield* store.lastHandled("older")).toEqual(Option.some(1))
      yield* handle("other-8", 1)
      expect(yield* store.lastHandled("older")).toEqual(Option.none())
      expect(yield* store.lastHandled("hot")).toEqual(Option.some(200))
      yield* handle("other-9", 1)
      expect(yield* store.lastHandled("hot")).toEqual(Option.none())
      for (let i = 0; i < 10; i++) expect(yield* store.lastHandled(`other-${i}`)).toEqual(Option.some(1))
    }))

  // A store of two entries, and how to handle an event (and its resource) through it, remembered for `ttl`.
  const smallStore = () => {
    const logs = captureLogs()
    const store = Webhooks.makeMemoryDedupeStore({ maxEntries: 2 })
    const handle = (id: string, ttl: Duration.DurationInput) =>
      Effect.gen(function*() {
        const claim = yield* store.claim(id, `ref-${id}`, Duration.seconds(30))
        if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${id}`)
        const remembered = Duration.decode(ttl)
        const order = { key: `ref-${id}`, createdAt: 1, ttl: remembered }
        yield* store.complete(id, claim.token, { referenceId: `ref-${id}`, order }, remembered)
      }).pipe(Effect.provide(logs.layer))
    return { logs, store, handle }
  }

  // Forgetting before their time is what lets a redelivery run again: said once (a store this busy would say it on
  // every event); forgetting expired entries is no news.
  it.effect("says once, as a warning, when it forgets handled events before their time", () =>
    Effect.gen(function*() {
      const { handle, logs } = smallStore()
      for (const id of ["a", "b"]) yield* handle(id, Duration.seconds(1))
      yield* TestClock.adjust("2 seconds")
      // Both have expired: dropping them says nothing.
      for (const id of ["d", "e"]) yield* handle(id, Duration.hours(1))
      expect(logs.lines).toEqual([])
      for (const id of ["f", "g", "h"]) yield* handle(id, Duration.hours(1))
      expect(logs.lines).toHaveLength(1)
      expect(logs.lines[0]).toMatch(/^WARN .*in-memory webhook dedupe store holds its most \(maxEntries 2\)/)
    }))

  // References live for orderTtl (30 days by default), handled ids for dedupeTtl (24 hours): the references fill first,
  // and forgetting one lets an older status pass as new. That is said too, not only a full set of handled ids.
  it.effect("says once, as a warning, when it forgets resources before their time, handled ids long expired", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore({ maxEntries: 2 })
      for (const id of ["a", "b", "c"]) {
        const claim = yield* store.claim(id, `ref-${id}`, Duration.seconds(30))
        if (claim._tag !== "Claimed") return yield* Effect.dieMessage(`not claimed: ${id}`)
        const order = { key: `ref-${id}`, createdAt: 1, ttl: Duration.hours(1) }
        yield* store.complete(id, claim.token, { referenceId: `ref-${id}`, order }, Duration.seconds(1))
        yield* TestClock.adjust("2 seconds")
      }
      expect(yield* store.lastHandled("ref-a")).toEqual(Option.none())
      expect(logs.lines).toHaveLength(1)
      expect(logs.lines[0]).toMatch(/^WARN .*in-memory webhook dedupe store holds its most \(maxEntries 2\)/)
    }).pipe(Effect.provide(logs.layer))
  })

  // Handlers of different dedupeTtl sharing one store interleave TTLs: an expired entry behind a live one goes first.
  it.effect("makes room by dropping expired entries before any live one, wherever they are", () =>
    Effect.gen(function*() {
      const { handle, logs, store } = smallStore()
      yield* handle("long", "1 day")
      yield* handle("short", "1 second")
      // Exactly its TTL: expired at it (gone to a read), so it is dropped to make room, not "long".
      yield* TestClock.adjust("1 second")
      yield* handle("next", "1 day")
      expect((yield* store.claim("long", "ref-long", Duration.seconds(30)))._tag).toBe("Done")
      expect(logs.lines).toEqual([])
    }))

  // A resource's order record is written again by each newer event of it (same orderTtl): it must move to the end of
  // its lifetime's expiry order, or the expired records behind it stay, and a live one is dropped for them.
  it.effect("a record written again moves to its new place in the order of expiry: the expired go first still", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const store = Webhooks.makeMemoryDedupeStore({ maxEntries: 3 })
      // Completions of one event id (one handled entry), each recording a resource's created_at.
      const record = (key: string, createdAt: number, ttl: Duration.DurationInput) =>
        store.complete("evt", "no-claim", {
          referenceId: key,
          order: { key, createdAt, ttl: Duration.decode(ttl) }
        }, Duration.hours(1)).pipe(Effect.provide(logs.layer))
      yield* record("long", 1, "1 day")
      yield* record("a", 1, "10 seconds")
      yield* TestClock.adjust("1 second")
      yield* record("b", 1, "10 seconds")
      yield* TestClock.adjust("1 second")
      // A newer event of "a": it now expires after "b".
      yield* record("a", 2, "10 seconds")
      yield* TestClock.adjust("9500 millis")
      // "b" has expired, "a" and "long" have not: making room drops "b" alone.
      yield* record("next", 1, "1 day")
      expect(yield* store.lastHandled("long")).toEqual(Option.some(1))
      expect(yield* store.lastHandled("a")).toEqual(Option.some(2))
      expect(logs.lines).toEqual([])
    }))

  // NaN (an unset variable read as a number) had made every write drop every entry: no de-duplication, no stale check.
  it("a maxEntries that is not a whole number of 1 or more is refused when the store or its layer is made", () => {
    for (const maxEntries of [NaN, 0, -1, 2.5, Infinity]) {
      const expected = `effect-fin: Webhooks.makeMemoryDedupeStore: maxEntries must be a whole number of 1 or more, not ${maxEntries}`
      expect(() => Webhooks.makeMemoryDedupeStore({ maxEntries })).toThrow(illegalArgument(expected))
      // The layer is made; its build dies.
      expect(defectOf(Webhooks.layerMemoryDedupeStore({ maxEntries }))).toEqual(illegalArgument(expected))
    }
    expect(() => Webhooks.makeMemoryDedupeStore({ maxEntries: 1 })).not.toThrow()
    // A value from outside is shown escaped and cut, or by its kind when it is no text (a symbol cannot be made text).
    for (
      const [maxEntries, shown] of [
        ["10\r\nWARN forged", `"10\\r\\nWARN forged"`],
        ["9".repeat(100), `"${"9".repeat(64)}"`],
        // Cut by characters, not UTF-16 units; escaped as printed text is (JSON leaves a bidi override raw).
        ["\u{1f600}".repeat(70), `"${"\u{1f600}".repeat(64)}"`],
        ["10\u202e01", `"10\\u202e01"`],
        [true, "true"],
        [Symbol("n"), "a symbol"],
        [Object.create(null), "an object"]
      ] as const
    ) {
      expect(() => Webhooks.makeMemoryDedupeStore({ maxEntries: maxEntries as unknown as number })).toThrow(
        illegalArgument(
          `effect-fin: Webhooks.makeMemoryDedupeStore: maxEntries must be a whole number of 1 or more, not ${shown}`
        )
      )
    }
    expect(() => Webhooks.makeMemoryDedupeStore(null as unknown as { maxEntries?: number })).toThrow(
      "effect-fin: Webhooks.makeMemoryDedupeStore: takes an options object ({ maxEntries }), not null"
    )
    // A bigint is no number: shown as one, "not 10" would read as 10 refused for no reason.
    expect(() => Webhooks.makeMemoryDedupeStore({ maxEntries: 10n as unknown as number })).toThrow(
      illegalArgument(
        "effect-fin: Webhooks.makeMemoryDedupeStore: maxEntries must be a whole number of 1 or more, not 10n"
      )
    )
    // So is a misspelt option, which would leave the default in force.
    expect(() => Webhooks.makeMemoryDedupeStore({ maxentries: 5 } as { maxEntries?: number })).toThrow(
      `effect-fin: Webhooks.makeMemoryDedupeStore: "maxentries" is no option (maxEntries)`
    )
  })

  it.effect("a claim and a handled event live for their TTL exactly: there a millisecond before, gone at it", () =>
    Effect.gen(function*() {
      const store = Webhooks.makeMemoryDedupeStore()
      const minute = Duration.minutes(1)
      const first = yield* store.claim("evt-t", "ref-t", minute)
      yield* TestClock.adjust("59999 millis")
      expect((yield* store.claim("evt-t", "ref-t", minute))._tag).toBe("InProgress")
      yield* TestClock.adjust("1 millis")
      const second = yield* store.claim("evt-t", "ref-t", minute)
      expect([first._tag, second._tag]).toEqual(["Claimed", "Claimed"])
      if (second._tag !== "Claimed") return
      yield* store.complete("evt-t", second.token, { referenceId: "ref-t" }, minute)
      yield* TestClock.adjust("59999 millis")
      expect((yield* store.claim("evt-t", "ref-t", minute))._tag).toBe("Done")
      yield* TestClock.adjust("1 millis")
      expect((yield* store.claim("evt-t", "ref-t", minute))._tag).toBe("Claimed")
    }))

  it.effect("keeps the dedupe store contract: one claim per event and per reference, newest created_at, expiry", () =>
    dedupeStoreContract(Webhooks.makeMemoryDedupeStore(), Duration.seconds(1), TestClock.adjust("2 seconds")))
})

// --- Handler defaults and limits ----------------------------------------------------------------------------------

// A memory store that records the TTLs the handler passes to it.
const ttlSpy = () => {
  const memory = Webhooks.makeMemoryDedupeStore()
  const ttls: Record<string, number> = {}
  const store: Webhooks.WebhookDedupeStoreService = {
    ...memory,
    claim: (eventId, referenceId, ttl) => {
      ttls.claim = Duration.toMillis(ttl)
      return memory.claim(eventId, referenceId, ttl)
    },
    complete: (eventId, token, handled, ttl) => {
      ttls.dedupe = Duration.toMillis(ttl)
      if (handled.order !== undefined) ttls.order = Duration.toMillis(handled.order.ttl)
      return memory.complete(eventId, token, handled, ttl)
    }
  }
  return { store, ttls }
}

// Settles until `fiber` is done (the app's answer travels through a promise), or dies.
const answered = <A>(fiber: Fiber.Fiber<A>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 20; i++) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return yield* Fiber.join(fiber)
      yield* settle
    }
    return yield* Effect.dieMessage("not answered")
  })

describe("Webhooks.handler defaults and limits", () => {
  it.effect("passes the documented TTLs to the store: claimTtl 30 s, dedupeTtl 24 h, orderTtl 30 days", () =>
    Effect.gen(function*() {
      const { store, ttls } = ttlSpy()
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, store, handlers: { "beneficiary.status": () => Effect.void } }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect(ttls).toEqual({ claim: 30_000, dedupe: 24 * 3_600_000, order: 30 * 24 * 3_600_000 })
    }))

  it.effect("claimTtl is at least 1 second, and orderTtl at least dedupeTtl", () =>
    Effect.gen(function*() {
      const { store, ttls } = ttlSpy()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        claimTtl: "100 millis",
        dedupeTtl: "2 hours",
        orderTtl: "1 hour",
        handlers: { "beneficiary.status": () => Effect.void }
      }))
      expect((yield* send(handle, yield* signedPost(currentBody))).status).toBe(200)
      expect(ttls).toEqual({ claim: 1_000, dedupe: 2 * 3_600_000, order: 2 * 3_600_000 })
    }))

  it.effect("handlerTimeout is 1 minute by default", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        handlers: { "beneficiary.status": () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never) }
      }))
      const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* Deferred.await(started)
      yield* settleUntil((sleeps, now) => sleeps.some((wakeUp) => wakeUp >= now + 60_000))
      yield* TestClock.adjust("61 seconds")
      const answer = yield* answered(first)
      expect([answer.status, JSON.parse(answer.body)]).toEqual([500, { outcome: "failed" }])
    }))

  // README: "up to `referenceWait`, the last of its tries of the store at its end"; the store is
  // asked after 25 ms, then twice as long each time, up to 200 ms (not 40 times a second per waiting delivery).
  it.effect("referenceWait is 5 seconds by default", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      const tries: Array<number> = []
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        claim: (eventId, referenceId, ttl) =>
          Effect.zipRight(
            eventId === "e-1" ? Effect.map(Clock.currentTimeMillis, (now) => tries.push(now)) : Effect.void,
            memory.claim(eventId, referenceId, ttl)
          )
      }
      const { handle, handler } = yield* gatedHandler({ store })
      const active = makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z" })
      const processing = makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("PROCESSING") })
      const newer = yield* Effect.fork(send(handle, yield* signedPost(active)))
      yield* handler.started
      const older = yield* Effect.fork(send(handle, yield* signedPost(processing)))
      // The clock moved to each wake-up in turn, so every try of the store is seen when it is due.
      while (Option.isNone(yield* Fiber.poll(older))) {
        yield* settle
        const now = yield* Clock.currentTimeMillis
        const next = Math.min(...Chunk.toReadonlyArray(yield* TestClock.sleeps()).filter((at) => at > now))
        if (Option.isSome(yield* Fiber.poll(older))) break
        yield* TestClock.adjust(next - now)
      }
      const gaps = tries.slice(1).map((at, i) => at - tries[i]!)
      // 4,975 ms after the first try: still waiting; the last try at 5 s, not 200 ms past it, ends the wait (a test
      // that moves the TestClock by referenceWait gets its 409).
      expect(gaps.slice(0, -1)).toEqual([25, 50, 100, ...Array.from({ length: 24 }, () => 200)])
      expect(tries.at(-1)! - tries[0]!).toBeCloseTo(5000, 2) // (to the microsecond: a reading's grid)
      const busy = yield* answered(older)
      expect([busy.status, JSON.parse(busy.body)]).toEqual([409, { outcome: "reference_busy" }])
      yield* handler.open
      expect((yield* Fiber.join(newer)).status).toBe(200)
    }))

  it.effect("referenceWait 0: a delivery whose resource is busy gets 409 at once, with no poll", () =>
    Effect.gen(function*() {
      const { handle, handler } = yield* gatedHandler({ referenceWait: "0 millis" })
      const active = makeBody({ id: "e-2", createdAt: "2026-04-04T17:40:01Z" })
      const processing = makeBody({ id: "e-1", createdAt: "2026-04-04T17:40:00Z", data: beneficiaryData("PROCESSING") })
      const newer = yield* Effect.fork(send(handle, yield* signedPost(active)))
      yield* handler.started
      // The TestClock does not move: a delivery that waited for one poll would never be answered.
      const older = yield* Effect.fork(send(handle, yield* signedPost(processing)))
      const busy = yield* answered(older)
      expect([busy.status, JSON.parse(busy.body)]).toEqual([409, { outcome: "reference_busy" }])
      yield* handler.open
      expect((yield* Fiber.join(newer)).status).toBe(200)
    }))

  it.effect("a chunked body one byte over maxBodySize gets 413", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode(currentBody)
      const handle = yield* webHandler(Webhooks.handler({ secrets: secret, handlers: {}, maxBodySize: bytes.length - 1 }))
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes)
          controller.close()
        }
      })
      const headers = yield* Webhooks.sign(currentBody, secret)
      const init: RequestInit & { readonly duplex: "half" } = { method: "POST", body, headers: { ...headers }, duplex: "half" }
      const request = new Request(url, init)
      expect(request.headers.get("content-length")).toBeNull()
      expect((yield* send(handle, request)).status).toBe(413)
    }))

  it.effect("verify: a created_at without a zone is malformed, as the Timestamp schema says", () =>
    Effect.gen(function*() {
      expect(Either.isLeft(Schema.decodeUnknownEither(Webhooks.Timestamp)("2026-04-04T17:38:26.843132"))).toBe(true)
      const body = makeBody({ createdAt: "2026-04-04T17:38:26.843132" })
      const headers = yield* Webhooks.sign(body, secret)
      expect(yield* reasonOf(Webhooks.verify(body, headers, secret))).toBe("malformed_body")
    }))

  // An offset can put a created_at of 9999 (or 0000) in the next (or previous) year in UTC: encoded, it reads back.
  it("Timestamp encodes every time its decode accepts, offsets past the years' ends included", () => {
    for (const text of ["9999-12-31T23:59:59-05:00", "9999-12-31 23:59:59.5-23:59", "0000-01-01T00:30:00+01:00"]) {
      const decoded = Schema.decodeUnknownSync(Webhooks.Timestamp)(text)
      const encoded = Schema.encodeEither(Webhooks.Timestamp)(decoded)
      expect(Either.isRight(encoded)).toBe(true)
      if (Either.isRight(encoded)) {
        expect(DateTime.toEpochMillis(Schema.decodeUnknownSync(Webhooks.Timestamp)(encoded.right))).toBe(
          DateTime.toEpochMillis(decoded)
        )
      }
    }
    expect(Either.isLeft(Schema.encodeEither(Webhooks.Timestamp)(DateTime.unsafeMake(Date.UTC(10000, 0, 2))))).toBe(true)
  })

  // Epoch microseconds are past 2^53 from 2255 on: milliseconds worked out from them would floor some down.
  it("Timestamp decodes a far year's milliseconds as written, and its encoding back to the same", () => {
    for (const text of ["8286-07-20T19:44:00.642Z", "9405-04-17T22:03:33.8582806Z", "9994-10-01T06:48:13.9466+00:00"]) {
      const decoded = Schema.decodeUnknownSync(Webhooks.Timestamp)(text)
      expect(DateTime.toEpochMillis(decoded)).toBe(Math.floor(Date.parse(text.replace(/(\.\d{3})\d+/, "$1"))))
      const again = Schema.decodeUnknownSync(Webhooks.Timestamp)(Schema.encodeSync(Webhooks.Timestamp)(decoded))
      expect(DateTime.toEpochMillis(again)).toBe(DateTime.toEpochMillis(decoded))
    }
  })

  it.effect("verify: a signed body that is not valid UTF-8 is malformed, not decoded with replacement characters", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode(currentBody)
      const at = currentBody.indexOf("INDIVIDUAL")
      expect(at).toBeGreaterThan(0)
      bytes[at] = 0xff
      const headers = yield* Webhooks.sign(bytes, secret)
      expect(yield* reasonOf(Webhooks.verify(bytes, headers, secret))).toBe("malformed_body")
    }))
})

describe("Webhooks public surface", () => {
  it("exposes no internal helper, and keeps the header constants' literal types", () => {
    // The header check the CLI shares lives in src/internal: not a name users can come to rely on.
    expect("checkSignatureHeaders" in Webhooks).toBe(false)
    const header: "x-fin-signature" = Webhooks.signatureHeader
    const algorithm: "x-fin-signature-algorithm" = Webhooks.algorithmHeader
    const names: ReadonlyArray<Webhooks.Algorithm> = Webhooks.algorithms
    expect([header, algorithm, names, Webhooks.digestLength.sha512]).toEqual([
      "x-fin-signature",
      "x-fin-signature-algorithm",
      ["sha256", "sha384", "sha512"],
      64
    ])
  })

  it.effect("BeneficiaryStatusData names a verified beneficiary.status event's data (its members checked by tsc)", () =>
    Effect.gen(function*() {
      const dataOf = (event: Webhooks.BeneficiaryStatusEvent): Webhooks.BeneficiaryStatusData => event.data
      const activeOf = (data: Webhooks.BeneficiaryStatusData): boolean => data.active
      const asData = (data: Webhooks.BeneficiaryStatusData): Webhooks.BeneficiaryStatusEvent["data"] => data
      const event = yield* Webhooks.verify(currentBody, yield* Webhooks.sign(currentBody, secret), secret)
      expect(event.type).toBe("beneficiary.status")
      if (event.type !== "beneficiary.status") return
      const data = asData(dataOf(event))
      expect([activeOf(data), data.beneficiary_id]).toEqual([false, "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"])
    }))
})

describe("Webhooks schemas with effect's schema tools", () => {
  const transitBody = `{"event":{"id":"a1","event_reference_id":"p1","type":"transit.payment.status",` +
    `"created_at":"2026-04-04T17:38:26.843132Z"},"data":{"status":"PAY_SUCCESS","details":{"retry_attempts":0}}}`

  // JsonValue is a declaration: without its own hooks, each tool threw on every event schema.
  // OpenAPI takes a schema's name as its component's: a user's own `Id` or `Timestamp` must not be taken for one of
  // these (and a `/` is no component name).
  it("names every schema it defines effect-fin.<name>", () => {
    for (const document of [JSONSchema.make(Webhooks.Envelope), JSONSchema.make(Webhooks.WebhookEvent)]) {
      const names = Object.keys(document.$defs ?? {})
      expect(names.length).toBeGreaterThan(0)
      for (const name of names) expect(name).toMatch(/^effect-fin\.[A-Za-z0-9._-]+$/)
    }
  })

  it("JSONSchema, Pretty and Arbitrary work on every event schema", () => {
    expect(() => JSONSchema.make(Webhooks.JsonValue)).not.toThrow()
    expect(() => JSONSchema.make(Webhooks.Envelope)).not.toThrow()
    expect(() => JSONSchema.make(Webhooks.WebhookEventFromEnvelope)).not.toThrow()
    const event = Schema.decodeUnknownSync(Webhooks.WebhookEventFromEnvelope)(JSON.parse(transitBody))
    expect(Pretty.make(Webhooks.WebhookEvent)(event)).toContain(`{"status":"PAY_SUCCESS","details":{"retry_attempts":0}}`)
    for (const value of FastCheck.sample(Arbitrary.make(Webhooks.WebhookEvent), { numRuns: 50, seed: 1 })) {
      expect(Schema.is(Webhooks.WebhookEvent)(value)).toBe(true)
    }
    // The envelope as sent: its created_at text drawn as such (filtered random text would never end), each decoding.
    for (const envelope of FastCheck.sample(Arbitrary.make(Webhooks.Envelope), { numRuns: 50, seed: 1 })) {
      expect(Either.isRight(Schema.decodeUnknownEither(Webhooks.Envelope)(JSON.parse(JSON.stringify(envelope)))))
        .toBe(true)
    }
  })

  // A DateTime's Arbitrary spans some 270,000 years; created_at is written only for the years 0000 to 9999.
  it("every event an Arbitrary makes encodes to an envelope that decodes back to it", () => {
    const equivalent = Schema.equivalence(Webhooks.WebhookEvent)
    for (const [event, again] of roundTrips(Webhooks.WebhookEventFromEnvelope)) {
      expect(equivalent(again, event)).toBe(true)
    }
    // Values no decode gives, which would encode to a body that decodes as another value (or not at all): refused.
    const transit = Schema.decodeUnknownSync(Webhooks.WebhookEventFromEnvelope)(JSON.parse(transitBody))
    const unknown = { ...transit, type: "Unknown" as const, received_type: "payout.settled" }
    expect(Schema.is(Webhooks.WebhookEvent)(unknown)).toBe(true)
    expect(Schema.is(Webhooks.WebhookEvent)({ ...unknown, received_type: "beneficiary.status" })).toBe(false)
    expect(Schema.is(Webhooks.BeneficiaryStatus)(new Webhooks.Unlisted({ value: "SUSPENDED" }))).toBe(true)
    expect(Schema.is(Webhooks.BeneficiaryStatus)(new Webhooks.Unlisted({ value: "ACTIVE" }))).toBe(false)
    expect(Schema.is(Webhooks.BeneficiaryType)(new Webhooks.Unlisted({ value: "BUSINESS" }))).toBe(false)
  })

  it("Schema.equivalence: two decodings of one body are equivalent, whatever the event's data", () => {
    const equivalent = Schema.equivalence(Webhooks.WebhookEvent)
    for (const body of [transitBody, documentedWebhookBody]) {
      const decode = () => Schema.decodeUnknownSync(Webhooks.WebhookEventFromEnvelope)(JSON.parse(body))
      expect(equivalent(decode(), decode())).toBe(true)
    }
    const other = Schema.decodeUnknownSync(Webhooks.WebhookEventFromEnvelope)(
      JSON.parse(transitBody.replace("PAY_SUCCESS", "PAY_FAILED"))
    )
    expect(equivalent(Schema.decodeUnknownSync(Webhooks.WebhookEventFromEnvelope)(JSON.parse(transitBody)), other))
      .toBe(false)
    // A key more on either side is a difference, though every key of the other side is equal.
    const json = Schema.equivalence(Webhooks.JsonValue)
    expect([json({ a: 1 }, { a: 1, b: 2 }), json({ a: 1, b: 2 }, { a: 1 }), json({ a: 1 }, { a: 1 })])
      .toEqual([false, false, true])
    // As many keys, not the same ones; the same keys in another order.
    const reordered = json({ a: 1, b: [{ c: null }] }, { b: [{ c: null }], a: 1 })
    expect([json({ a: 1 }, { b: 1 }), json({ a: null }, { b: null }), reordered]).toEqual([false, false, true])
  })

  // A signed body a few kilobytes long can nest some thousands of levels; a value built in code can be cyclic.
  it("compare and show them without overflowing the stack", () => {
    const equivalent = Schema.equivalence(Webhooks.JsonValue)
    const pretty = Pretty.make(Webhooks.JsonValue)
    const deep = "[".repeat(20_000) + "]".repeat(20_000)
    expect(equivalent(JSON.parse(deep), JSON.parse(deep))).toBe(true)
    expect(equivalent(JSON.parse(deep), JSON.parse(deep.replace("[]", "[1]")))).toBe(false)
    expect(pretty(JSON.parse(deep))).toBe("[object Array]")
    const a: Record<string, unknown> = { n: 1 }
    a["self"] = a
    const b: Record<string, unknown> = { n: 1 }
    b["self"] = b
    expect(equivalent(a, b)).toBe(true)
    expect(equivalent(a, { n: 2, self: b })).toBe(false)
    expect(equivalent([1, { x: [2, null] }], [1, { x: [2, null] }])).toBe(true)
    expect(equivalent([1, { x: [2, null] }], [1, { x: [2, false] }])).toBe(false)
    expect(equivalent({ 0: 1 }, [1])).toBe(false)
  })
})

describe("Webhooks.handler with a store that answers late or interrupts itself", () => {
  it.effect("a claim answered after it lapsed: the handler never starts beside the delivery that took the event since", () =>
    Effect.gen(function*() {
      const { memory, paused, resume, store } = yield* pausedClaims("after")
      let running = 0
      let most = 0
      let runs = 0
      const gateOpen = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const user = () =>
        Effect.suspend(() => {
          runs++
          most = Math.max(most, ++running)
          return Effect.ensuring(
            Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gateOpen)),
            Effect.sync(() => running--)
          )
        })
      const options = { secrets: secret, claimTtl: "3 seconds", handlers: { "beneficiary.status": user } } as const
      const a = yield* webHandler(Webhooks.handler({ ...options, store }))
      const b = yield* webHandler(Webhooks.handler({ ...options, store: memory }))
      const first = yield* Effect.fork(send(a, yield* signedPost(currentBody)))
      yield* paused // A holds the claim, its answer on its way
      yield* TestClock.adjust("4 seconds") // A's claim lapses before its answer arrives
      const second = yield* Effect.fork(send(b, yield* signedPost(currentBody)))
      // B runs the handler (waited for: reading the delivery takes turns of the event loop that set no timer).
      yield* Deferred.await(started)
      yield* settle
      expect(runs).toBe(1)
      yield* resume
      yield* settle
      yield* Deferred.succeed(gateOpen, undefined)
      const answers = [yield* Fiber.join(first), yield* Fiber.join(second)].map((x) => `${x.status} ${x.body}`)
      expect({ runs, most, answers }).toEqual({
        runs: 1,
        most: 1,
        answers: [`500 {"outcome":"store_unavailable"}`, `200 {"outcome":"handled"}`]
      })
    }))

  // The claim is renewed while the event is marked handled: a slow `complete` must not let a redelivery run it again.
  // Where it cannot be renewed, that is said (a redelivery may run the handler again); where it can, nothing is. The
  // handler runs most of claimTtl (2.8 s of 3): the renewals go on from its last one, not from the claim.
  it.effect("a complete answered after claimTtl: its claim is kept meanwhile, a redelivery is in progress", () =>
    Effect.gen(function*() {
      for (const renewal of ["renews", "refused", "dies"] as const) {
        const renews = renewal === "renews"
        const memory = Webhooks.makeMemoryDedupeStore()
        let completing = false
        const store: Webhooks.WebhookDedupeStoreService = {
          ...memory,
          // A renewal that dies (a driver's bug in a store of the user's) keeps the claim no better than one refused.
          renew: (...args) =>
            renews || !completing
              ? memory.renew(...args)
              : renewal === "dies"
              ? Effect.die(new Error("driver bug"))
              : Effect.succeed(false),
          complete: (...args) =>
            Effect.suspend(() => {
              const first = !completing
              completing = true
              return Effect.delay(memory.complete(...args), first ? "4 seconds" : 0)
            })
        }
        let runs = 0
        const options = {
          secrets: secret,
          store,
          claimTtl: "3 seconds",
          handlers: {
            "beneficiary.status": () => Effect.suspend(() => Effect.sleep(++runs === 1 ? "2.8 seconds" : 0))
          }
        } as const
        const { layer: capture, lines: logs } = captureLogs()
        const handle = yield* webHandler(Webhooks.handler(options)).pipe(Effect.provide(capture))
        const first = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
        // Handled until 2.8 s, marked until 6.8 s; the claim, last renewed by the handler at 2 s, would lapse at 5 s.
        yield* moveClock(12, "500 millis")
        const second = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
        yield* moveClock(8, "500 millis")
        const answers = [yield* Fiber.join(first), yield* Fiber.join(second)].map((x) => `${x.status} ${x.body}`)
        const warned = logs.filter((line) => line.includes("its claim could not be kept while the event was marked"))
        expect({ runs, answers, warned: warned.length }).toEqual(
          renews
            ? { runs: 1, answers: [`200 {"outcome":"handled"}`, `409 {"outcome":"in_progress"}`], warned: 0 }
            : { runs: 2, answers: [`200 {"outcome":"handled"}`, `200 {"outcome":"handled"}`], warned: 1 }
        )
      }
    }))

  // An event no handler takes has nothing to run beside another delivery: its claim answered late, it is acknowledged
  // all the same, not answered 500 for the service to deliver again and again.
  // Marked handled by a store that answers later (a remote one): no warning of a claim not kept, nothing to run again.
  it.effect("a claim answered after it lapsed, for an event no handler takes: acknowledged", () =>
    Effect.gen(function*() {
      const { paused, resume, store: pausing } = yield* pausedClaims("after")
      const store: Webhooks.WebhookDedupeStoreService = {
        ...pausing,
        complete: (...args) => Effect.zipRight(Effect.yieldNow(), pausing.complete(...args))
      }
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(
        Webhooks.handler({ secrets: secret, claimTtl: "3 seconds", handlers: {}, store })
      ).pipe(Effect.provide(capture))
      const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* paused
      yield* TestClock.adjust("4 seconds")
      yield* resume
      yield* settle
      const answer = yield* Fiber.join(delivery)
      expect(`${answer.status} ${answer.body}`).toBe(`200 {"outcome":"handled"}`)
      expect(logs.filter((line) => line.startsWith("WARN"))).toEqual([])
    }))

  // keepClaim stops a handler at once when less than a fifteenth of claimTtl is left before its margin: not started.
  it.effect("a claim answered with no time left for a renewal: the handler is not started to be stopped at once", () =>
    Effect.gen(function*() {
      for (const [after, expected] of [["2400 millis", 1], ["2600 millis", 0], ["2800 millis", 0]] as const) {
        const { paused, resume, store } = yield* pausedClaims("after")
        let starts = 0
        const user = () => Effect.zipRight(Effect.sync(() => starts++), Effect.sleep("100 millis"))
        const { layer: capture, lines: logs } = captureLogs()
        const handle = yield* webHandler(Webhooks.handler({
          secrets: secret,
          store,
          claimTtl: "3 seconds",
          handlers: { "beneficiary.status": user }
        })).pipe(Effect.provide(capture))
        const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
        yield* paused
        yield* TestClock.adjust(after) // the claim's answer arrives this late
        yield* resume
        yield* settle
        yield* TestClock.adjust("1 second")
        yield* settle
        const answer = yield* Fiber.join(delivery)
        expect([after, starts, answer.status]).toEqual([after, expected, expected === 1 ? 200 : 500])
        // Logged as a handler not started (a store too slow), not as a handler that failed.
        expect(logs.filter((line) => line.includes("webhook handler")).map((line) => line.split(" {")[0])).toEqual(
          expected === 1 ? [] : [
            `WARN ["effect-fin: webhook handler not started: the claim on the event could not be renewed in time: ` +
            `the de-duplication store failed or was too slow"]`
          ]
        )
      }
    }))

  it.effect("a renewal that interrupts itself (the user's store) is a failed renewal, tried again: the handler is not stopped", () =>
    Effect.gen(function*() {
      const memory = Webhooks.makeMemoryDedupeStore()
      let renewals = 0
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        renew: (...args) => Effect.suspend(() => ++renewals === 1 ? Effect.interrupt : memory.renew(...args))
      }
      const { layer: capture, lines: logs } = captureLogs()
      const handle = yield* webHandler(Webhooks.handler({
        secrets: secret,
        store,
        claimTtl: "3 seconds",
        handlers: { "beneficiary.status": () => Effect.sleep("4 seconds") }
      })).pipe(Effect.provide(capture))
      const delivery = yield* Effect.fork(send(handle, yield* signedPost(currentBody)))
      yield* settle
      for (let i = 0; i < 50; i++) yield* Effect.zipRight(TestClock.adjust("100 millis"), settle)
      const answer = yield* Fiber.join(delivery)
      expect([answer.status, JSON.parse(answer.body), logs.filter((l) => l.includes("handler failed"))]).toEqual(
        [200, { outcome: "handled" }, []]
      )
      expect(renewals).toBeGreaterThan(1)
    }))
})
