/**
 * Issue 6: a deterministic (seeded) 10,000-case fuzz of what reaches `Webhooks.verify`, split between the two crypto
 * layers (5,000 each, the same cases): bodies, signatures, algorithm names, header forms and secrets (see
 * ./webhooksFuzz.ts for the cases and how each is labelled).
 *
 * The property: `verify` (and `verifySignature`) accept a delivery if and only if its bytes are exactly bytes signed
 * with one of the current secrets under an allowed algorithm, announced as such, with the signature given once (header
 * names and hex digits in any case, blanks around values, and any case of an allowed algorithm's name are the same
 * delivery). Every acceptance is checked again independently with node:crypto; every refusal is a typed
 * `WebhookVerificationError` about the signature, never about the body (an unauthenticated body is never parsed).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import { NodeWebhookCrypto } from "../../src/node/index.js"
import type { WebhookVerificationError } from "../../src/FinError.js"
import * as Webhooks from "../../src/Webhooks.js"
import { type Case, caseArbitrary, hmac, signedByCurrent } from "./webhooksFuzz.js"

const signatureReasons: ReadonlyArray<string> = ["missing_signature", "bad_signature", "unsupported_algorithm", "no_secret"]

// 10,000 cases in all, split between the two layers: the verifier's own cost (a typed error per refusal) puts 10,000
// per layer over this suite's time budget on a busy two-core machine.
const numRuns = 5_000
const seed = 0x5ec0_0006

interface Tally {
  genuine: number
  forged: number
  readonly families: Set<string>
}

type Outcome = Exit.Exit<unknown, WebhookVerificationError>

const describeOutcome = (exit: Outcome): string =>
  Exit.isSuccess(exit)
    ? "accepted"
    : exit.cause._tag === "Fail"
    ? `refused (${exit.cause.error.reason})`
    : `died: ${String(exit.cause)}`

// What is wrong with the outcomes of one case, if anything (one assertion per case keeps 10,000 cases cheap).
const problemOf = (c: Case, verified: Exit.Exit<Webhooks.WebhookEvent, WebhookVerificationError>, signature: Outcome) => {
  const refusedForSignature = (exit: Outcome) =>
    Exit.isFailure(exit) && exit.cause._tag === "Fail" && signatureReasons.includes(exit.cause.error.reason)
  if (Exit.isSuccess(verified) || Exit.isSuccess(signature)) {
    // Whatever the label says: nothing is accepted that node:crypto does not confirm.
    if (!signedByCurrent(c.body, c.headers, c.current)) return "accepted a signature node:crypto does not confirm"
  }
  if (!c.genuine) {
    if (!refusedForSignature(verified)) return `verify: ${describeOutcome(verified)}, expected a signature refusal`
    if (!refusedForSignature(signature)) return `verifySignature: ${describeOutcome(signature)}, expected a refusal`
    return undefined
  }
  if (Exit.isFailure(signature)) return `verifySignature: ${describeOutcome(signature)}, expected acceptance`
  if (c.envelope === true) {
    if (Exit.isFailure(verified)) return `verify: ${describeOutcome(verified)}, expected acceptance`
    if (verified.value.id !== c.eventId) return `verify decoded event ${verified.value.id}, expected ${c.eventId}`
    return undefined
  }
  // Authentic bytes, not necessarily an envelope: accepted, or refused as malformed only.
  if (Exit.isFailure(verified) && describeOutcome(verified) !== "refused (malformed_body)") {
    return `verify: ${describeOutcome(verified)}, expected acceptance or malformed_body`
  }
  return undefined
}

const check = async (runtime: Runtime.Runtime<Webhooks.WebhookCrypto>, c: Case, tally: Tally) => {
  const run = Runtime.runPromiseExit(runtime)
  const verified = await run(Webhooks.verify(c.body, c.headers, c.secrets))
  const signature = await run(Webhooks.verifySignature(c.body, c.headers, c.secrets))
  const problem = problemOf(c, verified, signature)
  if (problem !== undefined) expect.fail(`${problem}; case: ${c.kind}`)
  if (c.genuine) tally.genuine++
  else tally.forged++
  for (const part of c.kind.split("; ").slice(1)) tally.families.add(part.split(/[:(]/)[0]!.trim())
}

const layers: ReadonlyArray<readonly [string, Layer.Layer<Webhooks.WebhookCrypto>]> = [
  ["WebCrypto (default layer)", Webhooks.layerWebCrypto],
  ["node:crypto (effect-fin/node)", NodeWebhookCrypto.layer]
]

describe("Webhooks signature fuzz", () => {
  layers.forEach(([name, layer], index) => {
    const title = `${name}: ${numRuns.toLocaleString("en")} seeded cases (half of 10,000 distinct), ` +
      "only genuine deliveries accepted"
    it.effect(title, () =>
      Effect.gen(function*() {
        const runtime = yield* Effect.runtime<Webhooks.WebhookCrypto>()
        const tally: Tally = { genuine: 0, forged: 0, families: new Set() }
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(caseArbitrary, (c) => check(runtime, c, tally)),
            // A seed per layer: 10,000 distinct cases in all, not the same 5,000 twice.
            { numRuns, seed: seed + index }
          )
        )
        // The mix is what the cases were built for: both outcomes, every family of forgery.
        expect(tally.genuine + tally.forged).toBe(numRuns)
        expect(tally.genuine).toBeGreaterThan(numRuns / 8)
        expect(tally.forged).toBeGreaterThan(numRuns / 2)
        expect([...tally.families].sort()).toEqual([
          "algorithm",
          "body",
          "duplicate algorithm header",
          "duplicate signature header",
          "empty key",
          "near-miss secret",
          "no usable secret configured",
          "retired secret",
          "rotated-out secret",
          "signature"
        ])
      }).pipe(Effect.provide(layer)))
  })
})

// The fuzz is only worth its runtime if it fails on a broken verifier: two plausible mistakes that accept forgeries
// while every genuine delivery still passes.
const brokenCrypto = (
  name: string,
  accepts: (mac: Uint8Array, signature: Uint8Array) => boolean,
  keysOf: (secret: string) => ReadonlyArray<string> = (secret) => [secret]
) => {
  const verifySync: NonNullable<Webhooks.WebhookCryptoService["verifySync"]> = (algorithm, secret, body, signature) =>
    keysOf(Redacted.value(secret)).some((key) => accepts(hmac(algorithm, key, body), signature))
  return [name, Layer.succeed(Webhooks.WebhookCrypto, {
    verifySync,
    verify: (algorithm, secret, body, signature) => Effect.sync(() => verifySync(algorithm, secret, body, signature)),
    sign: (algorithm, secret, body) => Effect.sync(() => hmac(algorithm, Redacted.value(secret), body))
  })] as const
}

const sameDigest = (mac: Uint8Array, signature: Uint8Array) => Buffer.from(mac).equals(signature)

// A verifier that keeps the last secret that verified and still accepts it once it is no longer configured (a key
// cache or a "try the last good key first" fast path that outlives a rotation).
const rememberingCrypto = () => {
  let last: string | undefined
  const verifySync: NonNullable<Webhooks.WebhookCryptoService["verifySync"]> = (algorithm, secret, body, signature) => {
    for (const key of last === undefined ? [Redacted.value(secret)] : [Redacted.value(secret), last]) {
      if (sameDigest(hmac(algorithm, key, body), signature)) {
        last = key
        return true
      }
    }
    return false
  }
  return ["still accepts the secret that verified last, once rotated out", Layer.succeed(Webhooks.WebhookCrypto, {
    verifySync,
    verify: (algorithm, secret, body, signature) => Effect.sync(() => verifySync(algorithm, secret, body, signature)),
    sign: (algorithm, secret, body) => Effect.sync(() => hmac(algorithm, Redacted.value(secret), body))
  })] as const
}

describe("Webhooks signature fuzz, against deliberately broken verifiers", () => {
  for (
    const [name, layer] of [
      brokenCrypto("compares only the first 4 bytes of the digest", (mac, signature) =>
        mac.subarray(0, 4).every((byte, i) => byte === signature[i])),
      brokenCrypto("also accepts the secret with a newline added", sameDigest, (secret) => [secret, `${secret}\n`]),
      rememberingCrypto()
    ]
  ) {
    it.effect(`finds a forgery accepted by a verifier that ${name}`, () =>
      Effect.gen(function*() {
        const runtime = yield* Effect.runtime<Webhooks.WebhookCrypto>()
        const tally: Tally = { genuine: 0, forged: 0, families: new Set() }
        const details = yield* Effect.promise(() =>
          FastCheck.check(FastCheck.asyncProperty(caseArbitrary, (c) => check(runtime, c, tally)), { numRuns, seed })
        )
        expect(details.failed).toBe(true)
        expect(String(details.errorInstance)).toMatch(/does not confirm|expected a signature refusal|expected a refusal/)
      }).pipe(Effect.provide(layer)))
  }
})
