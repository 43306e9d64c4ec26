/**
 * The webhook sender: builds a `beneficiary.status` event in the documented envelope, signs the exact bytes it sends
 * with `Webhooks.sign`, POSTs them to the target and reports the answer's status.
 *
 * @internal
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Bytes from "../../internal/bytes.js"
import * as Monotonic from "../../internal/monotonic.js"
import { systemCode } from "../../internal/transportCause.js"
import * as Webhooks from "../../Webhooks.js"
import { EmulatorError } from "./error.js"
import type { WebhookRequest } from "./model.js"
import type { State } from "./state.js"

// How much of a receiver's answer a delivery keeps: 1,024 characters, read from at most 4 KiB (the rest is not read:
// ending the read ends the request).
const MAX_ANSWER = 1024
const MAX_ANSWER_BYTES = 4 * MAX_ANSWER
const utf8 = new TextDecoder()

// The start of an answer read, in whole characters (never half of one).
const answerOf = ({ bytes }: { readonly bytes: Uint8Array }): string =>
  Array.from(utf8.decode(bytes)).slice(0, MAX_ANSWER).join("")

// Why a delivery could not be made, as the system said it (ECONNREFUSED...), for the receiver's developer.
const codeOf = (cause: unknown): string => {
  const code = systemCode(cause)
  return code === undefined ? "" : ` (${code})`
}

/**
 * The target as a message or an admin answer names it: a `user:pass@` in it (a receiver behind Basic auth) is not
 * repeated in logs, nor in what the admin routes answer (a test script's output).
 */
export const shown = (url: string): string => {
  const parsed = new URL(url)
  if (parsed.username === "" && parsed.password === "") return url
  parsed.username = "***"
  parsed.password = ""
  return parsed.href
}

// A URL's user or password as meant: percent-escapes undone, a stray `%` (not an escape) kept as written.
const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

// The target as requested: a `user:pass@` in it is sent as Basic credentials (the platform's client would drop it),
// never in the URL, which the client's span records whole (`url.full`), where the `authorization` header is redacted.
const withoutCredentials = (url: string): { readonly url: string; readonly headers: Record<string, string> } => {
  const parsed = new URL(url)
  if (parsed.username === "" && parsed.password === "") return { url, headers: {} }
  const basic = Buffer.from(`${decoded(parsed.username)}:${decoded(parsed.password)}`).toString("base64")
  parsed.username = ""
  parsed.password = ""
  return { url: parsed.href, headers: { authorization: `Basic ${basic}` } }
}

/** The documented example beneficiary (developer.fin.com, beneficiary.status). */
export const exampleBeneficiaryId = "e8fccaeb-fb9d-4fae-846e-ea7c97c70b31"
// The documented example's customer.
const exampleCustomerId = "ecbd3a73-3bcb-40ae-be06-0e71f9b27c2f"

/** One delivery. */
export interface Delivery {
  /**
   * The webhook target it was sent to, as registered: a `user:pass@` in it is kept here (it went as Basic
   * credentials), so do not log this as it is (the emulator's messages and admin routes name it without).
   */
  readonly url: string
  /** The receiver's HTTP status. */
  readonly status: number
  /** The envelope as sent (`{ event, data }`). */
  readonly event: BeneficiaryStatusEnvelope
  /** The exact body that was signed and sent. */
  readonly body: string
  /**
   * The start of the receiver's answer (its first 1,024 characters; empty if it sent none, or its body failed or
   * stalled): effect-fin's handler answers `{"outcome":"handled"}`, `"duplicate"`, `"stale"`...
   */
  readonly answer: string
}

/** The documented `beneficiary.status` envelope. */
export interface BeneficiaryStatusEnvelope {
  /** The event's envelope fields: its id, reference (the beneficiary), type, creation time and sandbox flag. */
  readonly event: {
    readonly id: string
    readonly event_reference_id: string
    readonly type: "beneficiary.status"
    readonly created_at: string
    readonly sandbox_mode: boolean
  }
  /** The beneficiary's new state. */
  readonly data: {
    /** `INDIVIDUAL` or `BUSINESS`, or a type the documentation does not list yet (an admin request's). */
    readonly type: "INDIVIDUAL" | "BUSINESS" | (string & {})
    readonly active: boolean
    /** One of the documented four, or a status the documentation does not list yet (an admin request's). */
    /** Absent in the documented older payload (an admin request's `status: null`). */
    readonly status?: "PROCESSING" | "ACTIVE" | "INACTIVE" | "REJECTED" | (string & {})
    readonly customer_id: string
    readonly beneficiary_id: string
  }
}

/** Sends one event; the request has been validated. */
export const send = (
  state: State,
  client: HttpClient.HttpClient,
  request: WebhookRequest
): Effect.Effect<Delivery, EmulatorError> =>
  Effect.gen(function*() {
    const { settings } = state
    if (request.url !== undefined) yield* state.setWebhookUrl(request.url)
    const url = yield* state.webhookUrl
    if (url === undefined) {
      return yield* new EmulatorError({
        reason: "WebhookNotRegistered",
        message: "No webhook target: pass a url (or register one first)"
      })
    }
    const beneficiaryId = request.beneficiaryId ?? Object.keys(settings.beneficiaries)[0] ?? exampleBeneficiaryId
    // `null`: the documented older payload, which had no `status` (its example: `active: true`).
    const status = request.status === null ? undefined : request.status ?? "ACTIVE"
    const event: BeneficiaryStatusEnvelope = {
      event: {
        id: request.eventId ?? (yield* state.uuid),
        event_reference_id: beneficiaryId,
        type: "beneficiary.status",
        created_at: request.createdAt ?? (yield* state.eventTime),
        sandbox_mode: request.sandboxMode ?? settings.sandboxMode
      },
      // Field order of the documented example.
      data: {
        type: request.type ?? "INDIVIDUAL",
        active: request.active ?? (status === undefined || status === "ACTIVE"),
        ...(status === undefined ? {} : { status }),
        customer_id: request.customerId ?? exampleCustomerId,
        beneficiary_id: beneficiaryId
      }
    }
    const body = JSON.stringify(event)
    const bytes = new TextEncoder().encode(body)
    const headers = yield* Webhooks.sign(
      bytes,
      request.secret ?? settings.webhookSecret,
      request.algorithm ?? settings.webhookAlgorithm
    )
    const timeout = Duration.millis(settings.webhookTimeout)
    const target = withoutCredentials(url)
    // One budget for the whole delivery, on monotonic time: the answer's head, then the start of its body in what is
    // left of it.
    const endsAt = Monotonic.plus(yield* Monotonic.millis, timeout)
    // The service's documented headers only: no trace context of this client's own.
    const answer = yield* HttpClient.withTracerPropagation(client, false).execute(
      HttpClientRequest.post(target.url).pipe(
        HttpClientRequest.setHeaders({ "user-agent": "effect-fin-emulator", ...target.headers }),
        HttpClientRequest.setHeaders(headers),
        HttpClientRequest.bodyUint8Array(bytes, "application/json")
      )
    ).pipe(
      Effect.mapError((error) =>
        new EmulatorError({
          reason: "WebhookDeliveryFailed",
          message: `The webhook delivery to ${shown(url)} failed: ${error.reason}${codeOf(error.cause)}`
        })
      ),
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () =>
          new EmulatorError({
            reason: "WebhookDeliveryFailed",
            message: `The webhook delivery to ${shown(url)} got no answer within ${Duration.format(timeout)}`
          })
      }),
      // The start of the answer's body is read (see MAX_ANSWER), within the same time; one that fails or stalls keeps
      // the status already received.
      Effect.flatMap((response) =>
        Effect.flatMap(Monotonic.millis, (now) =>
          Effect.map(
            Effect.option(Effect.timeout(
              Effect.scoped(Bytes.readUpTo(response.stream, MAX_ANSWER_BYTES)),
              Monotonic.between(now, endsAt)
            )),
            (read) => ({ status: response.status, text: Option.match(read, { onNone: () => "", onSome: answerOf }) })
          ))
      ),
      Effect.tapBoth({
        onFailure: () => state.countWebhook(false),
        onSuccess: () => state.countWebhook(true)
      })
    )
    return { url, status: answer.status, event, body, answer: answer.text }
  })
