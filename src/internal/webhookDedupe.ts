/**
 * The de-duplication store's contract and its in-memory implementation, re-exported by `Webhooks`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Inspect from "./inspect.js"
import * as Monotonic from "./monotonic.js"
import * as OptionNames from "./optionNames.js"

// ---------------------------------------------------------------------------------------------------------------------
// De-duplication store
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The answer to a claim on an event id and its `event_reference_id`.
 *
 * @since 0.1.0
 * @category models
 */
export type Claim =
  /** Handle it; pass the token to `complete` or `release`. */
  | { readonly _tag: "Claimed"; readonly token: string }
  /** Another delivery of the same event holds a live claim. */
  | { readonly _tag: "InProgress" }
  /** The event was handled before. */
  | { readonly _tag: "Done" }
  /** Another event of the same reference is being handled: nothing was claimed, try again once it is done. */
  | { readonly _tag: "ReferenceBusy" }

/**
 * What the handler remembers about a handled event, for ordering.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handled {
  /** The event's `event_reference_id`, whose claim `complete` frees. */
  readonly referenceId: string
  /**
   * For an event kept in order (`orderedEventTypes`): its `created_at` in epoch microseconds, to record under `key`
   * (keeping the newest) for `ttl`. Absent for other events, which record nothing. The key is the event's status and
   * its reference (`orderKey`), so that statuses of different kinds of one resource never make each other stale.
   */
  readonly order?: { readonly key: string; readonly createdAt: number; readonly ttl: Duration.Duration } | undefined
}

/**
 * What the order of a status event is kept under: its type without a version suffix (`virtual_account.status.v2`
 * and `virtual_account.status` are one status) and its `event_reference_id`.
 *
 * @since 0.1.0
 * @category models
 */
export const orderKey = (type: string, referenceId: string): string => `${type.replace(/\.v\d+$/, "")}:${referenceId}`

/**
 * Where the handler keeps which events were handled (by `event.id`) and, per `event_reference_id`, the newest
 * `created_at` handled. A claim holds the event and its reference together, so while it lives no other event of that
 * resource is handled: otherwise both could pass the stale check and the older could be applied last. Shaped for a
 * shared store such as Redis (`effect-fin/redis`): `claim` is one atomic step over the event and the reference lock
 * (both under `ttl`, so a crashed handler's claim expires), `complete` marks the event done, max-updates the reference
 * and drops the lock, `renew` extends both while the token holds them (the handler renews while it runs and while
 * `complete` is under way: a `renew` may come beside a `complete`, so each is one atomic step, and a `renew` of an
 * event done answers `false`, never setting it back to pending), `release` is a compare-and-delete of both on the
 * token. A store that fails (an operation that dies or interrupts itself too) makes the handler answer 500, its claim
 * released, so the service delivers again: nothing is lost.
 *
 * @since 0.1.0
 * @category models
 */
export interface WebhookDedupeStoreService {
  /**
   * Claims `eventId` and `referenceId` for `ttl`, unless the event is claimed or handled already (`InProgress`,
   * `Done`) or another claim holds the reference (`ReferenceBusy`, and nothing is claimed). The handler runs it
   * uninterruptibly (a claim taken must be seen to be released), so it must end in bounded time: give remote calls a
   * timeout, as the Redis store does.
   */
  readonly claim: (
    eventId: string,
    referenceId: string,
    ttl: Duration.Duration
  ) => Effect.Effect<Claim, WebhookDedupeStoreError>
  /**
   * Marks `eventId` handled for `ttl` (unless another delivery has claimed it since `token`'s claim lapsed: that one
   * marks it), records `handled.order` under its key (keeping the newest) and frees the reference if `token` still
   * holds it.
   */
  readonly complete: (
    eventId: string,
    token: string,
    handled: Handled,
    ttl: Duration.Duration
  ) => Effect.Effect<void, WebhookDedupeStoreError>
  /**
   * Extends the event and reference claims held under `token` to `ttl` from now; `false` when `token` no longer holds
   * both (the claim expired, and maybe another delivery took it).
   */
  readonly renew: (
    eventId: string,
    referenceId: string,
    token: string,
    ttl: Duration.Duration
  ) => Effect.Effect<boolean, WebhookDedupeStoreError>
  /**
   * Drops the event and reference claims still held under `token`, so a redelivery runs the handler again; a no-op
   * once completed.
   */
  readonly release: (eventId: string, referenceId: string, token: string) => Effect.Effect<void, WebhookDedupeStoreError>
  /** The newest `created_at` (epoch microseconds) recorded under an order key (`Handled.order.key`). */
  readonly lastHandled: (key: string) => Effect.Effect<Option.Option<number>, WebhookDedupeStoreError>
}

/**
 * A de-duplication store could not be read or written. The handler answers 500 (the service delivers again); the
 * error is logged, never passed to the user's handlers.
 *
 * @since 0.1.0
 * @category errors
 */
export class WebhookDedupeStoreError extends Schema.TaggedError<WebhookDedupeStoreError>(
  "effect-fin.WebhookDedupeStoreError"
)("WebhookDedupeStoreError", {
  /** What the store was doing: `claim`, `complete`, `renew`, `release`, `lastHandled`. */
  operation: Schema.String,
  /** What went wrong (unreachable, no answer in time), for a log line. */
  message: Schema.String
}) {}

Inspect.showUnwrapped(WebhookDedupeStoreError)

/**
 * The de-duplication store the handler uses when its options name none. Without either, each handler keeps its own
 * in-memory store.
 *
 * @since 0.1.0
 * @category tags
 */
export class WebhookDedupeStore extends Context.Tag("effect-fin/WebhookDedupeStore")<
  WebhookDedupeStore,
  WebhookDedupeStoreService
>() {}

// A map whose entries expire; re-set keys count as new, so the oldest are first. Bounded: past `maxEntries` the
// expired entries go first, wherever they are (handlers of different TTLs may share a store), then the oldest live
// ones (`full` then says so).
// The order is kept in queues (an array and its head) of the entries as set, not by iterating the Map or a Set from
// its start: V8 leaves a deleted entry as a hole until the table is rebuilt, so finding the first entry again after
// deleting the one before costs a walk over every hole, O(maxEntries) per write. An entry removed or set again since
// is left in its queue and skipped when met (the queues are compacted once they hold twice the live entries).
const expiringMap = <V extends { readonly expiresAt: number }>(maxEntries: number) => {
  interface Entry {
    readonly key: string
    readonly value: V
  }
  interface Queue {
    items: Array<Entry>
    head: number
  }
  const map = new Map<string, Entry>()
  // The entries of each lifetime in the order they were set, which is their order of expiry (the clock only moves
  // on): the expired ones of each lifetime are at its head, found without searching the whole map on every insert.
  const byLifetime = new Map<number, Queue>()
  // All entries in the order they were set, for eviction past `maxEntries` (none without a limit).
  const inOrder: Queue | undefined = Number.isFinite(maxEntries) ? { items: [], head: 0 } : undefined
  let full = false
  const live = (entry: Entry) => map.get(entry.key) === entry
  const first = (queue: Queue): Entry | undefined => {
    while (queue.head < queue.items.length && !live(queue.items[queue.head]!)) queue.head += 1
    return queue.items[queue.head]
  }
  // Entries held by all the queues, live or not: past twice the live ones (and a little per queue), every queue is
  // compacted, so that dead entries behind a live head, in queues of many lifetimes, stay within a bound of map.size.
  let queued = 0
  const compact = (queue: Queue) => {
    const before = queue.items.length
    queue.items = queue.items.slice(queue.head).filter(live)
    queue.head = 0
    queued -= before - queue.items.length
  }
  const push = (queue: Queue, entry: Entry) => {
    queue.items.push(entry)
    queued += 1
    if (queued > 2 * (inOrder === undefined ? 1 : 2) * map.size + 64 * (byLifetime.size + 1)) {
      for (const each of byLifetime.values()) compact(each)
      if (inOrder !== undefined) compact(inOrder)
    } else if (queue.head > 64 && queue.head * 2 > queue.items.length) {
      queue.items = queue.items.slice(queue.head)
      queued -= queue.head
      queue.head = 0
    }
  }
  const remove = (key: string) => {
    map.delete(key)
  }
  const sweep = (now: number) => {
    for (const [lifetime, queue] of byLifetime) {
      let head = first(queue)
      while (head !== undefined && head.value.expiresAt <= now) {
        map.delete(head.key)
        head = first(queue)
      }
      if (head === undefined) {
        queued -= queue.items.length
        byLifetime.delete(lifetime)
      }
    }
    if (inOrder !== undefined) {
      while (map.size > maxEntries) {
        full = true
        map.delete(first(inOrder)!.key)
      }
    }
  }
  return {
    get full() {
      return full
    },
    get: (key: string, now: number): V | undefined => {
      const value = map.get(key)?.value
      return value !== undefined && value.expiresAt > now ? value : undefined
    },
    set: (key: string, value: V, now: number) => {
      const entry: Entry = { key, value }
      map.delete(key)
      map.set(key, entry)
      const lifetime = value.expiresAt - now
      let queue = byLifetime.get(lifetime)
      if (queue === undefined) byLifetime.set(lifetime, queue = { items: [], head: 0 })
      push(queue, entry)
      if (inOrder !== undefined) push(inOrder, entry)
      sweep(now)
    },
    delete: remove
  }
}

// NaN (an unset variable read as a number) would make every write drop every entry, the new one too: no
// de-duplication and no stale check, without a word.
const checkedMaxEntries = (options: { readonly maxEntries?: number | undefined }): number => {
  OptionNames.checkOrThrow("Webhooks.makeMemoryDedupeStore", options, { maxEntries: true }, {
    object: "({ maxEntries })",
    option: "(maxEntries)"
  })
  const maxEntries = options.maxEntries ?? 10_000
  if (Number.isSafeInteger(maxEntries) && maxEntries >= 1) return maxEntries
  throw new Cause.IllegalArgumentException(
    `effect-fin: Webhooks.makeMemoryDedupeStore: maxEntries must be a whole number of 1 or more, not ${
      OptionNames.shown(maxEntries)
    }`
  )
}

/**
 * An in-memory store for one process, bounded in size (default 10,000 handled events and as many references) and in
 * time (the TTLs the handler passes); claims are bounded by time only. The first time it forgets a handled event or
 * resource before its time (more events within `dedupeTtl` than `maxEntries`), it logs a warning.
 *
 * Throws `IllegalArgumentException` when `maxEntries` is not a whole number of 1 or more, or an option is none of
 * its own (`maxentries`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryDedupeStore = (options: { readonly maxEntries?: number | undefined } = {}): WebhookDedupeStoreService => {
  const maxEntries = checkedMaxEntries(options)
  const handledEvents = expiringMap<{ readonly expiresAt: number }>(maxEntries)
  const references = expiringMap<{ readonly createdAt: number; readonly expiresAt: number }>(maxEntries)
  // Times are monotonic (as the handler's renewals are): a wall clock stepped forward would otherwise expire every
  // live claim at once, and a redelivery would run beside its handler. Whole milliseconds, so that a lifetime
  // (expiresAt - now) is exact and entries of one TTL share one list.
  const currentMillis = Effect.map(Monotonic.millis, Math.floor)
  // Claims are never evicted before they expire: one lives only while its handler runs (so their number is that of
  // the deliveries in progress), and dropping a live one would let a duplicate of its event, or a second event of
  // its resource, run beside it.
  type Claimed = { readonly token: string; readonly expiresAt: number }
  const eventClaims = expiringMap<Claimed>(Number.POSITIVE_INFINITY)
  const referenceClaims = expiringMap<Claimed>(Number.POSITIVE_INFINITY)
  let counter = 0
  // Said once: a store this busy would say it on every event.
  let warned = false
  const holds = (claims: typeof eventClaims, key: string, token: string, now: number) =>
    claims.get(key, now)?.token === token
  const drop = (eventId: string, referenceId: string, token: string, now: number) => {
    if (holds(eventClaims, eventId, token, now)) eventClaims.delete(eventId)
    if (holds(referenceClaims, referenceId, token, now)) referenceClaims.delete(referenceId)
  }
  return {
    claim: (eventId, referenceId, ttl) =>
      Effect.map(currentMillis, (now): Claim => {
        if (handledEvents.get(eventId, now) !== undefined) return { _tag: "Done" }
        if (eventClaims.get(eventId, now) !== undefined) return { _tag: "InProgress" }
        if (referenceClaims.get(referenceId, now) !== undefined) return { _tag: "ReferenceBusy" }
        const claimed = { token: String(++counter), expiresAt: now + Duration.toMillis(ttl) }
        eventClaims.set(eventId, claimed, now)
        referenceClaims.set(referenceId, claimed, now)
        return { _tag: "Claimed", token: claimed.token }
      }),
    complete: (eventId, token, handled, ttl) =>
      Effect.flatMap(currentMillis, (now) => {
        // An event another delivery has claimed since (this claim lapsed) is left to that delivery to mark.
        const claimed = eventClaims.get(eventId, now)
        if (claimed === undefined || claimed.token === token) {
          handledEvents.set(eventId, { expiresAt: now + Duration.toMillis(ttl) }, now)
        }
        const order = handled.order
        const last = order === undefined ? undefined : references.get(order.key, now)
        if (order !== undefined && (last === undefined || last.createdAt < order.createdAt)) {
          references.set(
            order.key,
            { createdAt: order.createdAt, expiresAt: now + Duration.toMillis(order.ttl) },
            now
          )
        }
        drop(eventId, handled.referenceId, token, now)
        if (warned || !(handledEvents.full || references.full)) return Effect.void
        warned = true
        return Effect.logWarning(
          `effect-fin: the in-memory webhook dedupe store holds its most (maxEntries ${maxEntries}): handled events ` +
            "and resources are forgotten before their time, so a redelivery may run its handler again and an older " +
            "status pass as new; raise maxEntries, or share a store (effect-fin/redis)"
        )
      }),
    renew: (eventId, referenceId, token, ttl) =>
      Effect.map(currentMillis, (now) => {
        if (!holds(eventClaims, eventId, token, now) || !holds(referenceClaims, referenceId, token, now)) return false
        const claimed = { token, expiresAt: now + Duration.toMillis(ttl) }
        eventClaims.set(eventId, claimed, now)
        referenceClaims.set(referenceId, claimed, now)
        return true
      }),
    release: (eventId, referenceId, token) =>
      Effect.map(currentMillis, (now) => drop(eventId, referenceId, token, now)),
    lastHandled: (key) =>
      Effect.map(
        currentMillis,
        (now) => Option.map(Option.fromNullable(references.get(key, now)), (r) => r.createdAt)
      )
  }
}

/**
 * Provides an in-memory `WebhookDedupeStore` (one per layer build).
 *
 * Fails its build with an `IllegalArgumentException` defect when `maxEntries` is not a whole number of 1 or more, or
 * an option is none of its own, where `makeMemoryDedupeStore` throws it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemoryDedupeStore = (
  options: { readonly maxEntries?: number | undefined } = {}
): Layer.Layer<WebhookDedupeStore> => Layer.sync(WebhookDedupeStore, () => makeMemoryDedupeStore(options))
