/**
 * A `WebhookDedupeStore` in Redis, so that every instance behind a load balancer handles each event once: a claim is
 * taken atomically with a short TTL that the handler renews while it runs, marked done with a long TTL after success,
 * and released on failure so a redelivery runs it. The newest `created_at` per `event_reference_id` lives there too,
 * for the stale-event check, and a claim holds the event's reference with it, so the events of one resource are handled
 * one at a time across every instance.
 *
 * When Redis fails, the handler answers 500 and the service delivers again: nothing is lost.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Webhooks from "../Webhooks.js"
import * as Connection from "./internal/connection.js"

/**
 * The options of `make` and `layer`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Connection.Options {}

// KEYS: event, reference claim. The event's state first: a duplicate is answered even while its reference is busy. A
// claim with no expiry (set by hand, restored from a dump) would hold its event or reference off for ever: it gets
// this claim's TTL. So does an event key of another type (another writer's; GET's error, from pcall, is a table): held
// for a while, then free, rather than a failure on every delivery for ever.
// The same claim run again (ioredis sends a command again after a reconnection when its answer was lost with the
// connection) is answered as the first run was: otherwise the delivery would be told 'pending' by its own claim, and
// that claim, whose token no one knows, would hold the event and its reference until it expired.
const claim = Connection.script(`
local v = redis.pcall('GET', KEYS[1])
if v == 'done' then return 'done' end
if v == 'pending:' .. ARGV[1] and redis.pcall('GET', KEYS[2]) == ARGV[1] then return 'claimed' end
if v then
  if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return 'pending'
end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if redis.call('PTTL', KEYS[2]) == -1 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
  return 'busy'
end
redis.call('SET', KEYS[1], 'pending:' .. ARGV[1], 'PX', ARGV[2])
return 'claimed'`)

// KEYS: event, the newest created_at of the event's order key (unused without one), reference claim. ARGV: event TTL,
// created_at ("" for an event not kept in order), token, created_at TTL. Numbers are compared with tonumber (exact
// below 2^53: microsecond timestamps fit, negative before 1970) and stored as sent; a stored value that is not an
// integer (another writer's: "nan" and "inf" are numbers to Lua), or a key of another type, counts as none and is
// replaced (a script that fails midway is not rolled back, so nothing here may fail: the read is a pcall, and SET
// replaces a key of any type).
// An event another delivery has claimed since (this claim lapsed) is left to it: marked done here, its handler would
// lose its claim midway.
const complete = Connection.script(`
local v = redis.pcall('GET', KEYS[1])
if not (type(v) == 'string' and string.sub(v, 1, 8) == 'pending:' and v ~= 'pending:' .. ARGV[3]) then
  redis.call('SET', KEYS[1], 'done', 'PX', ARGV[1])
end
if ARGV[2] ~= '' then
  local stored = redis.pcall('GET', KEYS[2])
  local last = type(stored) == 'string' and string.match(stored, '^%-?%d+$') and tonumber(stored)
  if (not last) or last < tonumber(ARGV[2]) then
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
  end
end
if redis.pcall('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
return 1`)

// KEYS: event, reference claim; both extended only while `token` holds both (a key of another type holds nothing).
const renew = Connection.script(`
if redis.pcall('GET', KEYS[1]) == 'pending:' .. ARGV[1] and redis.pcall('GET', KEYS[2]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0`)

// KEYS: event, reference claim; each dropped only while `token` holds it.
const release = Connection.script(`
if redis.pcall('GET', KEYS[1]) == 'pending:' .. ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.pcall('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1`)

const millis = (ttl: Duration.Duration) => Math.max(1, Math.round(Duration.toMillis(ttl)))

/**
 * Connects (or borrows `options.client`) for the life of the scope. An unreachable Redis is not an error here: a
 * warning says why, and each failed command's `WebhookDedupeStoreError` too (the handler answers 500 meanwhile).
 *
 * Dies with `IllegalArgumentException` (a defect: the program's mistake) when `timeout` is not a finite duration above
 * zero and at most 24 days (past 2^31 - 1 ms a timer never fires), `url` is no Redis URL, `client` is no ioredis
 * client, `prefix` is not non-empty text, or an option is none of these (misspelt, from a config file).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Webhooks.WebhookDedupeStoreService, never, Scope.Scope> =>
  Effect.suspend(() => {
    Connection.checkOptionNames("RedisWebhookDedupeStore", options, Connection.optionNames)
    const timeout = Connection.durationOption("RedisWebhookDedupeStore", "timeout", options.timeout, "1 second")
    Connection.checkUrl("RedisWebhookDedupeStore", options.url)
    Connection.checkPrefix("RedisWebhookDedupeStore", options.prefix)
    Connection.checkClient("RedisWebhookDedupeStore", options.client)
    return Connection.connect(options, timeout)
  }).pipe(Effect.map((redis): Webhooks.WebhookDedupeStoreService => {
    const eventKey = (eventId: string) => `${redis.prefix}:webhook:event:${eventId}`
    const orderKey = (key: string) => `${redis.prefix}:webhook:order:${key}`
    const referenceClaimKey = (referenceId: string) => `${redis.prefix}:webhook:reference-claim:${referenceId}`
    const failed = (failure: Connection.Failure) => new Webhooks.WebhookDedupeStoreError(failure)
    const releaseClaim = (eventId: string, referenceId: string, token: string) =>
      redis.eval("release", release, [eventKey(eventId), referenceClaimKey(referenceId)], [token], true).pipe(
        Effect.asVoid,
        Effect.mapError(failed)
      )
    return {
      claim: (eventId, referenceId, ttl) => {
        const token = globalThis.crypto.randomUUID()
        const keys = [eventKey(eventId), referenceClaimKey(referenceId)]
        // A claim that timed out, or whose caller was interrupted, may still reach Redis: it is released behind it, or
        // redeliveries would get 409 until the claim expires.
        return redis.evalTaking(
          "claim",
          { script: claim, keys, args: [token, millis(ttl)] },
          { script: release, keys, args: [token] },
          millis(ttl)
        )
          .pipe(
            Effect.map((reply): Webhooks.Claim =>
              reply === "claimed"
                ? { _tag: "Claimed", token }
                : reply === "done"
                ? { _tag: "Done" }
                : reply === "busy"
                ? { _tag: "ReferenceBusy" }
                : { _tag: "InProgress" }
            ),
            Effect.mapError(failed)
          )
      },
      complete: (eventId, token, handled, ttl) =>
        redis.eval(
          "complete",
          complete,
          [eventKey(eventId), orderKey(handled.order?.key ?? ""), referenceClaimKey(handled.referenceId)],
          [
            millis(ttl),
            handled.order === undefined ? "" : String(handled.order.createdAt),
            token,
            handled.order === undefined ? "1" : millis(handled.order.ttl)
          ],
          true
        ).pipe(Effect.asVoid, Effect.mapError(failed)),
      renew: (eventId, referenceId, token, ttl) =>
        redis.eval("renew", renew, [eventKey(eventId), referenceClaimKey(referenceId)], [token, millis(ttl)]).pipe(
          Effect.map(Connection.isOne),
          Effect.mapError(failed)
        ),
      release: releaseClaim,
      lastHandled: (key) =>
        redis.run("lastHandled", (client) =>
          // A key of another type (another writer's) is none too, rather than a failure on every delivery.
          Connection.orIfWrongType(client.get(orderKey(key)), null)
        ).pipe(
          // A value that is not an integer (another writer's) is none, as `complete` takes it: the next event replaces
          // it.
          Effect.map((value) => value !== null && /^-?\d+$/.test(value) ? Option.some(Number(value)) : Option.none()),
          Effect.mapError(failed)
        )
    }
  }))

/**
 * Provides the store to every `Webhooks.handler` without a `store` option.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Webhooks.WebhookDedupeStore> =>
  Layer.scoped(Webhooks.WebhookDedupeStore, make(options))
