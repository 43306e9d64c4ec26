/**
 * The webhook event schemas (the envelope, each documented event, `Unknown`), re-exported by `Webhooks`.
 *
 * @internal
 */
import * as DateTime from "effect/DateTime"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Timestamps from "./timestamp.js"

// ---------------------------------------------------------------------------------------------------------------------
// Timestamps
// ---------------------------------------------------------------------------------------------------------------------

// Epoch microseconds of an ISO 8601 date-time with a zone (`Z` or an offset), or undefined. Microseconds because the
// service sends them (`2026-04-04T17:38:26.843132Z`) and ordering should not lose them; a `DateTime` keeps milliseconds.
export const parseTimestamp = (s: string): number | undefined => {
  const parsed = Timestamps.parse(s)
  return parsed?.zoned === true ? parsed.micros : undefined
}

const TimestampString = Schema.String.pipe(
  Schema.filter((s) => parseTimestamp(s) !== undefined, {
    identifier: "effect-fin.Timestamp",
    description: "an ISO 8601 date-time with a zone",
    // Random text is next to never a date-time: filtering it, an `Arbitrary` would search for ever.
    arbitrary: () => (fc) =>
      fc.tuple(Timestamps.arbitraryMillis(fc), fc.integer({ min: 0, max: 999 }))
        .map(([millis, micros]) => new Date(millis).toISOString().replace("Z", `${String(micros).padStart(3, "0")}Z`))
  })
)

/**
 * An ISO 8601 date-time with a zone (`Z` or an offset), up to nanosecond digits, as a `DateTime.Utc` (milliseconds).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Timestamp: Schema.Schema<DateTime.Utc, string> = Schema.transformOrFail(
  TimestampString,
  Timestamps.Utc,
  {
    strict: true,
    decode: (s) => ParseResult.succeed(DateTime.unsafeMake(Timestamps.parse(s)!.millis)),
    encode: (dateTime, _, ast) => Timestamps.encode(dateTime, ast)
  }
).annotations({ identifier: "effect-fin.Timestamp" })

// ---------------------------------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Any JSON value (present, of unknown shape): the `data` of events this library does not model.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonValue: Schema.Schema<unknown> = Schema.declare(
  (u: unknown): u is unknown => u !== undefined,
  {
    identifier: "effect-fin.JsonValue",
    description: "a JSON value",
    // A declaration has no Arbitrary, JSON Schema, Pretty or equivalence of its own: without these, each throws on
    // every event schema, and two decodings of one body would be unequal (compared by reference).
    arbitrary: () => (fc) => fc.jsonValue(),
    // Any of JSON's six types (an empty schema would not replace the declaration's missing one).
    jsonSchema: { anyOf: ["object", "array", "string", "number", "boolean", "null"].map((type) => ({ type })) },
    pretty: () => prettyJson,
    equivalence: () => jsonEquals
  }
)

// The value as JSON; a value built in code may hold what JSON cannot (a bigint, a cycle): that is shown as text. One
// nested deeper than `JSON.stringify` goes (some thousands of levels, a body of a few kilobytes) is named only.
const prettyJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    try {
      return String(u)
    } catch {
      return Object.prototype.toString.call(u)
    }
  }
}

// By content, as JSON compares: arrays item by item, objects key by key (in any order), anything else with `===`.
// Without recursion, and a pair of objects met again taken as equal: a decoded body some thousands of levels deep
// would overflow the stack, and a value built in code may hold a cycle.
const jsonEquals = (a: unknown, b: unknown): boolean => {
  const seen = new Map<object, Set<object>>()
  const pending: Array<readonly [unknown, unknown]> = [[a, b]]
  for (let pair = pending.pop(); pair !== undefined; pair = pending.pop()) {
    const [x, y] = pair
    if (x === y) continue
    if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false
    const met = seen.get(x) ?? new Set<object>()
    if (met.has(y)) continue
    seen.set(x, met.add(y))
    if (Array.isArray(x) || Array.isArray(y)) {
      if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false
      x.forEach((item: unknown, i) => pending.push([item, y[i]]))
      continue
    }
    const left = x as Record<string, unknown>
    const right = y as Record<string, unknown>
    const keys = Object.keys(left)
    if (keys.length !== Object.keys(right).length) return false
    for (const key of keys) {
      if (!Object.hasOwn(right, key)) return false
      pending.push([left[key], right[key]])
    }
  }
  return true
}

// At most 256 characters (the service's ids are UUIDs, 36): the handler keeps ids in its de-duplication store, which is
// bounded in entries, not in bytes (10,000 ids of a megabyte each would be 10 GB), and puts them in every log line.
// Whole characters only, none that acts on a terminal: an id is a store key (Redis writes it as UTF-8, where two
// lone surrogate halves both become U+FFFD, one key) and an annotation of log lines (written as it is).
export const Id = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(256),
  Schema.filter((id) => !/[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|\p{Cs}/u.test(id), {
    message: () => "an id of whole, printable characters"
  })
).annotations({
  identifier: "effect-fin.Id",
  description: "a non-empty id of at most 256 printable characters"
})

/**
 * The documented event types, in the order of the service's `WebhookEventEnvelope.type` enum.
 *
 * @since 0.1.0
 * @category constants
 */
export const documentedEventTypes = Object.freeze([
  "customer.created",
  "customer.status",
  "customer.rfi",
  "transaction.status",
  "virtual_account.created",
  "virtual_account.created.v2",
  "virtual_account.status",
  "virtual_account.status.v2",
  "beneficiary.created",
  "beneficiary.status",
  "beneficiary.liquidation.deposit",
  "batch.transaction.item.status",
  "transit.payment.status"
] as const)

/**
 * An event type the service documents; one of `documentedEventTypes`.
 *
 * @since 0.1.0
 * @category models
 */
export type DocumentedEventType = typeof documentedEventTypes[number]

export const documented: ReadonlySet<string> = new Set(documentedEventTypes)

/**
 * The event types the handler keeps in order per `event_reference_id`: each carries the whole current status of its
 * resource, so an older one arriving late is stale. Every other event (a deposit, a creation, a request for
 * information, an undocumented type) carries news of its own: it is never stale, and does not make others stale. Not
 * `batch.transaction.item.status` either: it is fired once per item (at `PENDING`), so there is no older status to
 * undo, and the docs do not say whether its `event_reference_id` is the item or the whole batch (if the batch, one
 * item's event would make the others' stale).
 *
 * @since 0.1.0
 * @category constants
 */
export const orderedEventTypes: ReadonlyArray<DocumentedEventType> = Object.freeze(documentedEventTypes.filter((type) =>
  /\.status(\.v\d+)?$/.test(type) && type !== "batch.transaction.item.status"
))

export const ordered: ReadonlySet<string> = new Set(orderedEventTypes)

/**
 * The envelope exactly as sent: `{ event: { id, event_reference_id, type, created_at, sandbox_mode? }, data }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Envelope = Schema.Struct({
  event: Schema.Struct({
    id: Id,
    event_reference_id: Id,
    type: Id,
    created_at: TimestampString,
    // The crypto-orchestration guide's envelope has no `sandbox_mode`.
    sandbox_mode: Schema.optional(Schema.Boolean)
  }),
  data: JsonValue
}).annotations({ identifier: "effect-fin.WebhookEnvelope" })

/**
 * The envelope exactly as sent (see the `Envelope` schema).
 *
 * @since 0.1.0
 * @category models
 */
export type Envelope = typeof Envelope.Type

// Every decoded event is flat: `type` at the top, so `Match` and `switch` on `event.type` narrow.
const eventFields = {
  /** Unique per event; redeliveries of one event carry the same id. */
  id: Id,
  /** The resource the event is about (`beneficiary_id` for `beneficiary.status`, `payment_id` for transit). */
  event_reference_id: Id,
  /** When the service created the event, in UTC (to the millisecond; sent with microseconds). */
  created_at: Timestamp,
  /** Absent in the crypto-orchestration envelope. */
  sandbox_mode: Schema.optionalWith(Schema.Boolean, { as: "Option" })
}

const event = <const T extends string, D extends Schema.Schema.AnyNoContext>(type: T, data: D) =>
  Schema.Struct({
    /** The event type, as sent: the discriminant (`switch` and `Match` on it narrow the event). */
    type: Schema.Literal(type),
    ...eventFields,
    /** The payload: for `beneficiary.status`, `BeneficiaryStatusData`; for the other types, the JSON as sent. */
    data
  }).annotations({ identifier: `effect-fin.${type}` })

/**
 * A value the documentation does not list (yet), kept as received in `value`: a signed event with a new status or
 * type is passed on, not refused with a 400 and lost. An object rather than a plain string, so that a misspelt
 * comparison (`status === "ACTIV"`) does not compile: a branded string would compare with any text.
 *
 * @since 0.1.0
 * @category models
 */
export class Unlisted extends Schema.TaggedClass<Unlisted>("effect-fin.Unlisted")("Unlisted", {
  /** The value exactly as received. */
  value: Schema.String
}) {
  /** The value as received (in a template literal, a log line). */
  override toString(): string {
    return this.value
  }

  /** The value as received: an event written out as JSON is the service's. */
  toJSON(): string {
    return this.value
  }
}

// The listed values as themselves, anything else as `Unlisted` (the listed ones match first). An `Unlisted` holding a
// listed value (built by hand or drawn by an Arbitrary) is refused: it would encode as that value and decode back as
// the listed one, not as itself, and a `Match.when` on the value would miss it.
const listedOr = <const L extends ReadonlyArray<string>>(...listed: L) =>
  Schema.Union(
    Schema.Literal(...listed),
    Schema.transform(
      Schema.String,
      Schema.typeSchema(Unlisted).pipe(
        Schema.filter((unlisted) => !listed.includes(unlisted.value), { message: () => "a value that is not listed" })
      ),
      { strict: true, decode: (value) => new Unlisted({ value }), encode: (unlisted) => unlisted.value }
    )
  )

/**
 * A beneficiary type: `INDIVIDUAL`, `BUSINESS`, or a value the documentation does not list yet, as `Unlisted`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryType = listedOr("INDIVIDUAL", "BUSINESS")

/**
 * `INDIVIDUAL`, `BUSINESS`, or an `Unlisted` value.
 *
 * @since 0.1.0
 * @category models
 */
export type BeneficiaryType = typeof BeneficiaryType.Type

/**
 * A beneficiary status: one of the documented four, or a value the documentation does not list yet, as `Unlisted`.
 * `INITIATED` is one: the beneficiary details endpoint lists it, the webhook's own schema does not.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryStatus = listedOr("PROCESSING", "ACTIVE", "INACTIVE", "REJECTED")

/**
 * One of the documented four statuses, or an `Unlisted` value.
 *
 * @since 0.1.0
 * @category models
 */
export type BeneficiaryStatus = typeof BeneficiaryStatus.Type

/**
 * `data` of `beneficiary.status`. `status` is `None` in the older payload, which had no such field, and when it is
 * `null` (undocumented, but a signed status change is not worth losing over it).
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryStatusData = Schema.Struct({
  /** The beneficiary whose status changed (the event's `event_reference_id` too). */
  beneficiary_id: Id,
  /** The customer the beneficiary belongs to. */
  customer_id: Id,
  /** `INDIVIDUAL` or `BUSINESS` (another value as `Unlisted`). */
  type: BeneficiaryType,
  /** Whether the beneficiary is activated (`PATCH /v1/beneficiaries` switches it on and off). */
  active: Schema.Boolean,
  /** The new status; `None` in the older payload, which had none, or when it is `null`. */
  status: Schema.optionalWith(BeneficiaryStatus, { as: "Option", nullable: true })
})

/**
 * `data` of a decoded `beneficiary.status` event (see the `BeneficiaryStatusData` schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryStatusData extends Schema.Schema.Type<typeof BeneficiaryStatusData> {}

/**
 * The `beneficiary.status` event, its `data` decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryStatusEvent = event("beneficiary.status", BeneficiaryStatusData)

/**
 * A decoded `beneficiary.status` event (as `WebhookEventOf<"beneficiary.status">`).
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryStatusEvent extends Schema.Schema.Type<typeof BeneficiaryStatusEvent> {}

/**
 * The `customer.created` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CustomerCreatedEvent = event("customer.created", JsonValue)

/**
 * A decoded `customer.created` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomerCreatedEvent extends Schema.Schema.Type<typeof CustomerCreatedEvent> {}

/**
 * The `customer.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CustomerStatusEvent = event("customer.status", JsonValue)

/**
 * A decoded `customer.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomerStatusEvent extends Schema.Schema.Type<typeof CustomerStatusEvent> {}

/**
 * The `customer.rfi` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CustomerRfiEvent = event("customer.rfi", JsonValue)

/**
 * A decoded `customer.rfi` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomerRfiEvent extends Schema.Schema.Type<typeof CustomerRfiEvent> {}

/**
 * The `transaction.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TransactionStatusEvent = event("transaction.status", JsonValue)

/**
 * A decoded `transaction.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransactionStatusEvent extends Schema.Schema.Type<typeof TransactionStatusEvent> {}

/**
 * The `virtual_account.created` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountCreatedEvent = event("virtual_account.created", JsonValue)

/**
 * A decoded `virtual_account.created` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountCreatedEvent extends Schema.Schema.Type<typeof VirtualAccountCreatedEvent> {}

/**
 * The `virtual_account.created.v2` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountCreatedV2Event = event("virtual_account.created.v2", JsonValue)

/**
 * A decoded `virtual_account.created.v2` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountCreatedV2Event extends Schema.Schema.Type<typeof VirtualAccountCreatedV2Event> {}

/**
 * The `virtual_account.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountStatusEvent = event("virtual_account.status", JsonValue)

/**
 * A decoded `virtual_account.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountStatusEvent extends Schema.Schema.Type<typeof VirtualAccountStatusEvent> {}

/**
 * The `virtual_account.status.v2` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VirtualAccountStatusV2Event = event("virtual_account.status.v2", JsonValue)

/**
 * A decoded `virtual_account.status.v2` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface VirtualAccountStatusV2Event extends Schema.Schema.Type<typeof VirtualAccountStatusV2Event> {}

/**
 * The `beneficiary.created` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryCreatedEvent = event("beneficiary.created", JsonValue)

/**
 * A decoded `beneficiary.created` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryCreatedEvent extends Schema.Schema.Type<typeof BeneficiaryCreatedEvent> {}

/**
 * The `beneficiary.liquidation.deposit` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BeneficiaryLiquidationDepositEvent = event("beneficiary.liquidation.deposit", JsonValue)

/**
 * A decoded `beneficiary.liquidation.deposit` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface BeneficiaryLiquidationDepositEvent
  extends Schema.Schema.Type<typeof BeneficiaryLiquidationDepositEvent>
{}

/**
 * The `batch.transaction.item.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BatchTransactionItemStatusEvent = event("batch.transaction.item.status", JsonValue)

/**
 * A decoded `batch.transaction.item.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchTransactionItemStatusEvent extends Schema.Schema.Type<typeof BatchTransactionItemStatusEvent> {}

/**
 * The `transit.payment.status` event, its `data` kept as JSON.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TransitPaymentStatusEvent = event("transit.payment.status", JsonValue)

/**
 * A decoded `transit.payment.status` event, its `data` as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransitPaymentStatusEvent extends Schema.Schema.Type<typeof TransitPaymentStatusEvent> {}

/**
 * An event whose type is not documented (yet): `type` is `"Unknown"` so matching on `type` still narrows;
 * `received_type` holds the type as sent.
 *
 * @since 0.1.0
 * @category schemas
 */
export const UnknownEvent = Schema.Struct({
  /** Always `"Unknown"`, so that matching on `type` narrows to this event. */
  type: Schema.Literal("Unknown"),
  /**
   * The event type as sent, e.g. a type added to the service after this version; never a documented one, which
   * decodes as its own event (and one built by hand would encode as that event's envelope, not decode back as itself).
   */
  received_type: Id.pipe(
    Schema.filter((type) => !documented.has(type), { message: () => "an event type the documentation does not list" })
  ),
  ...eventFields,
  /** The payload, the JSON as sent. */
  data: JsonValue
}).annotations({ identifier: "effect-fin.UnknownEvent" })

/**
 * A decoded event of a type the documentation does not list (see the `UnknownEvent` schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface UnknownEvent extends Schema.Schema.Type<typeof UnknownEvent> {}

/**
 * A decoded event (flat; `type` is the discriminant). To store events, encode them with `WebhookEventFromEnvelope`:
 * an `UnknownEvent` stored flat no longer decodes once a later version documents its type.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookEvent = Schema.Union(
  BeneficiaryStatusEvent,
  CustomerCreatedEvent,
  CustomerStatusEvent,
  CustomerRfiEvent,
  TransactionStatusEvent,
  VirtualAccountCreatedEvent,
  VirtualAccountCreatedV2Event,
  VirtualAccountStatusEvent,
  VirtualAccountStatusV2Event,
  BeneficiaryCreatedEvent,
  BeneficiaryLiquidationDepositEvent,
  BatchTransactionItemStatusEvent,
  TransitPaymentStatusEvent,
  UnknownEvent
)

// Named, not `typeof WebhookEvent.Type`: an editor and a user's emitted declarations then print a variant by its name,
// not as the whole structure of every variant.
/**
 * A decoded event: a union on `type` (see the `WebhookEvent` schema).
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookEvent =
  | BeneficiaryStatusEvent
  | CustomerCreatedEvent
  | CustomerStatusEvent
  | CustomerRfiEvent
  | TransactionStatusEvent
  | VirtualAccountCreatedEvent
  | VirtualAccountCreatedV2Event
  | VirtualAccountStatusEvent
  | VirtualAccountStatusV2Event
  | BeneficiaryCreatedEvent
  | BeneficiaryLiquidationDepositEvent
  | BatchTransactionItemStatusEvent
  | TransitPaymentStatusEvent
  | UnknownEvent

/**
 * `"Unknown"` or one of the documented types.
 *
 * @since 0.1.0
 * @category models
 */
export type EventType = WebhookEvent["type"]

/**
 * The event variant of one type, e.g. `WebhookEventOf<"beneficiary.status">`.
 *
 * @since 0.1.0
 * @category models
 */
export type WebhookEventOf<T extends EventType> = Extract<WebhookEvent, { readonly type: T }>

/**
 * From the envelope as sent to a flat `WebhookEvent` (and back). Encoding gives the envelope of the same event, not
 * its bytes: timestamps to the millisecond in UTC, a `null` status left out, and fields the schemas do not name
 * dropped (in the envelope's `event` or beside `event` and `data`, for every type; in a `beneficiary.status` event's
 * `data`); verify the raw body, and store it if you need what was sent.
 * To store a decoded event as JSON, encode it with this schema: `JSON.stringify` would write its `Option`s as objects,
 * and the flat form (`WebhookEvent` encoded) of an `UnknownEvent` whose type a later version documents no longer
 * decodes there, where the envelope decodes as that type's event.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookEventFromEnvelope: Schema.Schema<WebhookEvent, Envelope> = Schema.transform(
  Envelope,
  WebhookEvent,
  {
    // Not strict: the flat shape is chosen by `type` at run time, and `WebhookEvent` checks it right after.
    strict: false,
    decode: ({ data, event: { type, ...meta } }) =>
      documented.has(type) ? { type, ...meta, data } : { type: "Unknown", received_type: type, ...meta, data },
    encode: ({ data, type, ...rest }) => {
      const { received_type, ...meta } = rest as typeof rest & { readonly received_type?: string }
      return { event: { type: received_type ?? type, ...meta }, data }
    }
  }
)
