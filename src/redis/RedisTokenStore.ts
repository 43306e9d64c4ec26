/**
 * A `TokenStore` in Redis: every process of a service shares one token pair, and one of them refreshes it per expiry
 * while the others wait for it, under a lock (`SET NX PX`) that its owner renews while fetching, that only its owner
 * releases, and that expires if its owner dies. Optionally encrypted at rest (AES-GCM through WebCrypto, bound to its
 * key name).
 *
 * When Redis fails, `TokenProvider` logs a warning and fetches for its own process: calls go on, unshared.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as NodeCrypto from "node:crypto"
import type * as FinConfig from "../FinConfig.js"
import * as BoundedStore from "../internal/boundedStore.js"
import * as TokenStore from "../TokenStore.js"
import * as Connection from "./internal/connection.js"

/**
 * The options of `make` and `layer`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Connection.Options {
  /**
   * Encrypts the stored pair with AES-GCM: 16, 24 or 32 bytes, as a `Uint8Array` or a base64 string (hex is refused:
   * it would read as base64 of another key). Every process sharing the pair needs the same key; a pair that does not
   * decrypt is ignored (and replaced by the next refresh), with a warning saying why, once.
   * The cipher's key and the fingerprint's HMAC key are derived from it (HKDF-SHA256), never the key itself.
   */
  readonly encryptionKey?: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string> | undefined
  /**
   * How long the refresh lock lives unless renewed (its owner renews it every third of this while fetching), so how
   * long the others wait when its owner dies: default 10 seconds.
   */
  readonly lockTtl?: FinConfig.DurationOption | undefined
  /** How often a process waiting for another's refresh looks at Redis again: default 25 ms. */
  readonly waitInterval?: FinConfig.DurationOption | undefined
}

// Short field names: the pair is read on every refresh by every process.
const Stored = Schema.parseJson(Schema.Struct({
  a: Schema.String,
  // Finite: JSON's 1e999 reads as Infinity, which would be written back (a refused refresh token taken out) as an
  // expiry Redis refuses after the HSET: a pair kept for ever, holding `null`s.
  r: Schema.Finite,
  /** `accessUsableUntil`; absent in pairs written by earlier builds. */
  x: Schema.optional(Schema.Finite),
  t: Schema.optional(Schema.String),
  u: Schema.optional(Schema.Finite)
}))
const encodeStored = Schema.encodeSync(Stored)
const decodeStored = Schema.decodeUnknownEither(Stored)

// `m`: with encryptionKey, an HMAC of the record under the fingerprint key, so one written without the key is ignored.
const StoredFailure = Schema.parseJson(
  Schema.Struct({ owner: Schema.String, error: Schema.String, m: Schema.optional(Schema.String) })
)
const encodeFailure = Schema.encodeSync(StoredFailure)
const decodeFailure = Schema.decodeUnknownOption(StoredFailure)

// Compared in constant time: the MAC of a failure record.
// (Compared as bytes: a text of the same length in characters may not be of the same length in bytes, and
// timingSafeEqual throws on buffers of different lengths.)
const sameText = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && NodeCrypto.timingSafeEqual(x, y)
}

// KEYS: pair, lock. ARGV: fingerprint, value, ttl, owner. Written only while the writer holds the lock, so a writer
// that lost it (stalled past lockTtl) cannot overwrite a newer pair. A pair key of another type (another writer's) is
// replaced, not a failure of every refresh: HSET would not write over it.
const setPair = Connection.script(`
if redis.pcall('GET', KEYS[2]) ~= ARGV[4] then return 0 end
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'v', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

const clearPair = Connection.script(`
if redis.pcall('HGET', KEYS[1], 'fp') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// KEYS: lock. ARGV: owner, ttl. Returns {1, owner} when taken, {0, holder} when held. A lock with no expiry (set by
// hand, restored from a dump) would hold every fetch off for ever: it gets this store's lockTtl. A key of another type
// (another writer's; GET's error, from pcall, is a table) is held by no one of ours ('') until it expires. The same
// command run again (ioredis sends it again after a reconnection when its answer was lost with the connection) finds
// the lock its own first run took: taken, as that run answered, not held by an owner no one is. It gets its lockTtl
// again: its owner renews it a third of lockTtl after this answer, which came late (the reconnection's wait).
const lock = Connection.script(`
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, ARGV[1]}
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, ARGV[1]} end
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) ~= 'string' then holder = '' end
return {0, holder}`)

const renew = Connection.script(`
if redis.pcall('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)

// KEYS: lock, failure. ARGV: owner, failure record ('' for none), ttl.
const unlock = Connection.script(`
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return 1`)

// e1 (AES-GCM and the fingerprint under the given key itself) is no longer written, and is ignored as unreadable.
const ENCRYPTED = "e2:"
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

const configError = (message: string) => new TokenStore.TokenStoreError({ operation: "configure", message })

const keyBytes = (key: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string>) => {
  // A wiped Redacted, or no Redacted at all (untyped code: `encryptionKey: process.env.KEY`), throws in
  // Redacted.value: refused as a key that is none, not a defect (nor a number read as that many zero bytes).
  let value: unknown
  try {
    value = Redacted.isRedacted(key) ? Redacted.value<unknown>(key as Redacted.Redacted<unknown>) : undefined
  } catch {
    value = undefined
  }
  // Told by its tag, not `instanceof`: a Buffer of Node's own realm (under Jest) is bytes all the same.
  if (Object.prototype.toString.call(value) === "[object Uint8Array]") {
    return Either.right(new Uint8Array(value as Uint8Array))
  }
  if (typeof value !== "string") {
    return Either.left(configError("encryptionKey must be a Redacted string (base64) or Uint8Array, not wiped"))
  }
  // Hex (`openssl rand -hex 16`) is valid base64 too, of another length and another key.
  if (/^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{48}|[0-9a-fA-F]{64})$/.test(value.trim())) {
    return Either.left(configError("encryptionKey looks like hex; give it as base64 (or a Uint8Array)"))
  }
  // Refused as the other secrets are (the key is not guessed at), but named: a file's newline is the usual cause.
  if (value.trim() !== value) return Either.left(configError("encryptionKey starts or ends with whitespace (a trailing newline, say)"))
  // Strict: a raw text key, or a typo, must not pass as base64 of another length.
  return BASE64.test(value)
    ? Either.right(new Uint8Array(Buffer.from(value, "base64")))
    : Either.left(configError("encryptionKey is a string but not base64 (give a Uint8Array for raw bytes)"))
}

const importKey = (key: Redacted.Redacted<Uint8Array> | Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const bytes = yield* keyBytes(key)
    if (![16, 24, 32].includes(bytes.length)) {
      return yield* configError(`encryptionKey must be 16, 24 or 32 bytes, not ${bytes.length}`)
    }
    // One key, one use: the cipher's key and the fingerprint's are each derived from the given one (HKDF-SHA256).
    const derive = (use: string, length: number) =>
      new Uint8Array(NodeCrypto.hkdfSync("sha256", bytes, new Uint8Array(0), `effect-fin token store: ${use}`, length))
    const cryptoKey = yield* Effect.promise(() =>
      globalThis.crypto.subtle.importKey("raw", derive("AES-GCM", bytes.length), { name: "AES-GCM" }, false, [
        "encrypt",
        "decrypt"
      ])
    )
    return { cryptoKey, fingerprintKey: derive("fingerprint", 32) }
  })

// Every option of this store is among the names checked (a new one left out would not compile).
const optionNames: { readonly [K in keyof Options]-?: true } = Connection.optionNames

/**
 * Connects (or borrows `options.client`) for the life of the scope. Fails only on an invalid `encryptionKey`; an
 * unreachable Redis is not an error here (the provider works around it until Redis is back; a warning says why, and so
 * does each failed command's `TokenStoreError`).
 *
 * Dies with `IllegalArgumentException` (a defect: the program's mistake) when `timeout`, `lockTtl` or `waitInterval`
 * is not a finite duration above zero and at most 24 days (past 2^31 - 1 ms a timer never fires), `url` is no Redis
 * URL, `client` is no ioredis client, `prefix` is not non-empty text, or an option is none of these
 * (`encryptionkey`: the tokens would be stored in plain text).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<TokenStore.Service, TokenStore.TokenStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    Connection.checkOptionNames("RedisTokenStore", options, optionNames)
    const timeout = Connection.durationOption("RedisTokenStore", "timeout", options.timeout, "1 second")
    Connection.checkUrl("RedisTokenStore", options.url)
    Connection.checkPrefix("RedisTokenStore", options.prefix)
    Connection.checkClient("RedisTokenStore", options.client)
    const lockTtl = Connection.durationOption("RedisTokenStore", "lockTtl", options.lockTtl, "10 seconds")
    const waitInterval = Connection.durationOption("RedisTokenStore", "waitInterval", options.waitInterval, "25 millis")
    const encryption = options.encryptionKey === undefined ? undefined : yield* importKey(options.encryptionKey)
    const lockMillis = Math.max(1, Math.round(Duration.toMillis(lockTtl)))
    const redis = yield* Connection.connect(options, timeout)
    const pairKey = (key: string) => `${redis.prefix}:token:${key}`
    const lockKey = (key: string) => `${redis.prefix}:token-lock:${key}`
    const failureKey = (key: string) => `${redis.prefix}:token-failure:${key}`
    const failed = (failure: Connection.Failure) => new TokenStore.TokenStoreError(failure)
    const unexpected = (operation: string) =>
      Effect.fail<Connection.Failure>({ operation, message: "Redis answered in a form this store does not expect" })
    // What compare-and-delete compares: with encryption on, an HMAC under the key, so Redis holds nothing that can
    // confirm a guessed token.
    // HMAC-SHA256 under the fingerprint key, in hex; none without encryption.
    const mac = (data: string) =>
      encryption === undefined
        ? undefined
        : NodeCrypto.createHmac("sha256", encryption.fingerprintKey).update(data).digest("hex")
    const fingerprint = (token: Redacted.Redacted<string>) =>
      mac(Redacted.value(token)) ?? Connection.sha256(Redacted.value(token))
    // The key name is authenticated with the data: a pair copied under another client's key does not decrypt.
    const gcm = (name: string, iv: Uint8Array<ArrayBuffer>) => ({
      name: "AES-GCM",
      iv,
      additionalData: new TextEncoder().encode(name)
    })

    const seal = (name: string, text: string): Effect.Effect<string> =>
      encryption === undefined ? Effect.succeed(text) : Effect.promise(async () => {
        const iv = globalThis.crypto.getRandomValues(new Uint8Array(12))
        const sealed = await globalThis.crypto.subtle.encrypt(
          gcm(name, iv),
          encryption.cryptoKey,
          new TextEncoder().encode(text)
        )
        return ENCRYPTED + Buffer.concat([iv, new Uint8Array(sealed)]).toString("base64")
      })

    // The pair's text, or why it cannot be read here (said so that a mismatch between processes can be told apart).
    const open = (name: string, value: string): Effect.Effect<Either.Either<string, string>> => {
      if (encryption === undefined && value.startsWith("e1:")) {
        return Effect.succeed(Either.left("sealed by an older build (e1:), and this process has no encryptionKey"))
      }
      if (!value.startsWith(ENCRYPTED)) {
        return Effect.succeed(
          encryption === undefined
            ? Either.right(value)
            : Either.left(
              value.startsWith("e1:")
                ? "sealed by an older build (e1:), which this one no longer opens"
                : "not encrypted: written by a process with no encryptionKey"
            )
        )
      }
      if (encryption === undefined) return Effect.succeed(Either.left("encrypted, and this process has no encryptionKey"))
      const bytes = new Uint8Array(Buffer.from(value.slice(ENCRYPTED.length), "base64"))
      return Effect.tryPromise(() =>
        globalThis.crypto.subtle.decrypt(gcm(name, bytes.slice(0, 12)), encryption.cryptoKey, bytes.slice(12))
      ).pipe(
        Effect.map((plain) => Either.right(new TextDecoder().decode(plain))),
        Effect.orElseSucceed(() => Either.left("sealed with another encryptionKey (or altered)"))
      )
    }

    // Said once per reason as a warning (a process waiting on another's refresh reads the pair many times a second),
    // then at Debug: processes that do not share a key each fetch their own token until they are configured alike.
    const said = new Set<string>()
    const unreadable = (reason: string) => {
      const message = `effect-fin: the token pair in Redis is ${reason}; ignoring it until the next refresh`
      const first = !said.has(reason)
      said.add(reason)
      return Effect.as(first ? Effect.logWarning(message) : Effect.logDebug(message), Option.none<TokenStore.Tokens>())
    }

    const get: TokenStore.Service["get"] = (key) =>
      Effect.gen(function*() {
        const read = yield* redis.run(
          "get",
          (client) => Connection.orIfWrongType(client.hmget(pairKey(key), "fp", "v"), undefined)
        )
        if (read === undefined) return yield* unreadable("of another type than this store writes (a hash)")
        // Checked, not trusted: a server or proxy that is not quite Redis may answer otherwise, and this store's
        // operations must fail, never die (TokenProvider runs them unguarded).
        if (!Array.isArray(read)) return yield* unexpected("get")
        const [fp, value]: ReadonlyArray<unknown> = read
        if (value === null || value === undefined) return Option.none()
        if (typeof value !== "string") return yield* unexpected("get")
        const text = yield* open(pairKey(key), value)
        if (Either.isLeft(text)) return yield* unreadable(text.left)
        const decoded = decodeStored(text.right)
        if (Either.isLeft(decoded)) return yield* unreadable("malformed")
        const { a, r, t, u, x } = decoded.right
        // `fp` is what a 401 clears the pair by, and it is outside the sealed value: one that does not match (a pair
        // written back by someone without the key, with its `fp` changed) would make the pair impossible to clear.
        const accessToken = Redacted.make(a)
        if (fp !== fingerprint(accessToken)) return yield* unreadable("not matching its fingerprint")
        return Option.some<TokenStore.Tokens>({
          accessToken,
          refreshAt: r,
          ...(x !== undefined ? { accessUsableUntil: x } : {}),
          ...(t !== undefined && u !== undefined ? { refreshToken: Redacted.make(t), refreshUsableUntil: u } : {})
        })
      }).pipe(Effect.mapError(failed))

    const set: TokenStore.Service["set"] = (key, tokens, owner) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // Kept while either token is of use, then Redis drops it.
        const ttl = Math.max(
          1000,
          Math.max(tokens.refreshAt, tokens.accessUsableUntil ?? 0, tokens.refreshUsableUntil ?? 0) - now
        )
        const value = yield* seal(
          pairKey(key),
          encodeStored({
            a: Redacted.value(tokens.accessToken),
            r: tokens.refreshAt,
            ...(tokens.accessUsableUntil !== undefined ? { x: tokens.accessUsableUntil } : {}),
            ...(tokens.refreshToken !== undefined && tokens.refreshUsableUntil !== undefined
              ? { t: Redacted.value(tokens.refreshToken), u: tokens.refreshUsableUntil }
              : {})
          })
        )
        const reply = yield* redis.eval("set", setPair, [pairKey(key), lockKey(key)], [
          fingerprint(tokens.accessToken),
          value,
          Math.round(ttl),
          owner
        ])
        return Connection.isOne(reply)
      }).pipe(Effect.mapError(failed))

    const clear: TokenStore.Service["clear"] = (key, accessToken) =>
      Effect.mapError(redis.eval("clear", clearPair, [pairKey(key)], [fingerprint(accessToken)]), failed).pipe(
        Effect.asVoid
      )

    // The MAC of a failure record (with encryption on): its key name, owner and error, under the fingerprint key.
    const failureMac = (key: string, owner: string, error: string) =>
      mac(JSON.stringify([failureKey(key), owner, error]))
    const unlockCommand = (key: string, owner: string, failure?: string): Connection.Command => {
      const m = failure === undefined ? undefined : failureMac(key, owner, failure)
      return {
        script: unlock,
        keys: [lockKey(key), failureKey(key)],
        args: [
          owner,
          failure === undefined ? "" : encodeFailure({ owner, error: failure, ...(m === undefined ? {} : { m }) }),
          lockMillis
        ]
      }
    }
    const readFailure = (key: string, value: string | null): Option.Option<TokenStore.Failure> =>
      Option.flatMap(Option.flatMap(Option.fromNullable(value), decodeFailure), ({ error, m, owner }) => {
        const expected = failureMac(key, owner, error)
        return expected === undefined || (m !== undefined && sameText(m, expected))
          ? Option.some({ owner, error })
          : Option.none()
      })

    // With encryption on, a failure's text (the service's answer to a token request) is sealed as the pair is, bound
    // to its key name and owner: Redis holds none of it in the clear.
    const failureName = (key: string, owner: string) => JSON.stringify([failureKey(key), owner])
    const release: TokenStore.Service["unlock"] = (key, owner, failure) =>
      Effect.flatMap(
        failure === undefined ? Effect.succeed(undefined) : seal(failureName(key, owner), failure),
        (recorded) => {
          const { args, keys, script } = unlockCommand(key, owner, recorded)
          return Effect.mapError(redis.eval("unlock", script, keys, args, true), failed).pipe(Effect.asVoid)
        }
      )

    const take: TokenStore.Service["lock"] = (key) => {
      const owner = globalThis.crypto.randomUUID()
      // A command that timed out may still reach Redis and take the lock for no one: it is released behind it, so the
      // others need not wait for it to expire.
      return redis.evalTaking(
        "lock",
        { script: lock, keys: [lockKey(key)], args: [owner, lockMillis] },
        unlockCommand(key, owner),
        lockMillis
      ).pipe(
        Effect.flatMap((reply) => {
          // Checked as `get`'s answer is: a reply of another form is a failure, not a defect.
          if (!Array.isArray(reply) || reply.length !== 2 || typeof reply[1] !== "string") return unexpected("lock")
          const [taken, holder]: ReadonlyArray<unknown> = reply
          return Effect.succeed<TokenStore.Lock>(
            Connection.isOne(taken) ? { _tag: "Acquired", owner } : { _tag: "Held", owner: String(holder) }
          )
        }),
        Effect.mapError(failed)
      )
    }

    // Each command is bounded by `timeout`: TokenProvider need not guard it.
    return BoundedStore.bounded<TokenStore.Service>({
      get,
      set,
      clear,
      lock: take,
      renew: (key, owner) =>
        Effect.mapError(redis.eval("renew", renew, [lockKey(key)], [owner, lockMillis]), failed).pipe(
          Effect.map(Connection.isOne)
        ),
      unlock: release,
      failure: (key) =>
        redis.run("failure", (client) => Connection.orIfWrongType(client.get(failureKey(key)), null)).pipe(
          Effect.mapError(failed),
          Effect.flatMap((value) =>
            Option.match(readFailure(key, value), {
              onNone: () => Effect.succeed(Option.none()),
              // Without encryption the text is as recorded; with it, one that does not open is none.
              onSome: ({ error, owner }) =>
                Effect.map(
                  open(failureName(key, owner), error),
                  (text) => Either.isRight(text) ? Option.some({ owner, error: text.right }) : Option.none()
                )
            })
          )
        ),
      lockTtl,
      waitInterval
    })
  })

/**
 * Provides the store to `TokenProvider` (e.g. `FinClient.layer(options).pipe(Layer.provide(RedisTokenStore.layer(...)))`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<TokenStore.TokenStore, TokenStore.TokenStoreError> =>
  Layer.scoped(TokenStore.TokenStore, make(options))
