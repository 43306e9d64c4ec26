/**
 * The Redis connection of the stores: a client of the user's or one of ours, commands bounded by a timeout, Lua
 * scripts run by their SHA-1 (loaded again after a Redis restart).
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { Redis, type RedisOptions } from "ioredis"
import * as NodeCrypto from "node:crypto"
import type * as FinConfig from "../../FinConfig.js"
import { detachedIfUninterruptible } from "../../internal/detached.js"
import * as Durations from "../../internal/duration.js"
import * as OptionNames from "../../internal/optionNames.js"

/**
 * Where the stores find Redis, and how long one command may take.
 */
export interface Options {
  /** An ioredis client of the application's; it stays open when the layer closes. */
  readonly client?: Redis | undefined
  /**
   * Otherwise the URL to connect to (default `redis://127.0.0.1:6379`); that client is closed with the layer. It may
   * hold a password (`redis://:password@host`): give it `Redacted` (`Config.redacted("REDIS_URL")`) to keep it out of
   * logs of your configuration.
   */
  readonly url?: string | Redacted.Redacted<string> | undefined
  /** ioredis options for the client made from `url`. */
  readonly redisOptions?: RedisOptions | undefined
  /**
   * Longest wait for one command's answer (default 1 second); also the longest wait for the first connection of a
   * client made from `url`. A command that timed out may still run in Redis later: the stores undo what matters.
   */
  readonly timeout?: FinConfig.DurationOption | undefined
  /** Prefix of every key: non-empty text; default `effect-fin`. */
  readonly prefix?: string | undefined
}

/**
 * The names of either store's options (the token store's own too), for `checkOptionNames`: one options object may
 * serve both stores, each ignoring the other's.
 */
export const optionNames: { readonly [K in keyof Options | "encryptionKey" | "lockTtl" | "waitInterval"]: true } = {
  client: true,
  url: true,
  redisOptions: true,
  timeout: true,
  prefix: true,
  encryptionKey: true,
  lockTtl: true,
  waitInterval: true
}

/**
 * Refuses, when the store is made, a key of its options that is none of `names` (misspelt, from a config file):
 * `encryptionkey` would otherwise leave the tokens stored in plain text without a word.
 */
export const checkOptionNames = (store: string, options: object, names: object): void =>
  OptionNames.checkOrThrow(store, options, names, { option: `of ${store}.Options` })

/** A failed command, before a store names it in its own error type. */
export interface Failure {
  readonly operation: string
  readonly message: string
}

/** A Lua script and its SHA-1. */
export interface Script {
  readonly source: string
  readonly sha: string
}

/** Prepares a Lua script once. */
export const script = (source: string): Script => ({
  source,
  sha: NodeCrypto.createHash("sha1").update(source).digest("hex")
})

/**
 * `read`'s answer, or `wrongType` when the key holds a value of another type (another writer's, by hand or by
 * mistake): read as nothing there rather than a failure of every command for as long as the key lives.
 */
export const orIfWrongType = <A, B>(read: Promise<A>, wrongType: B): Promise<A | B> =>
  read.catch((error: unknown) =>
    error instanceof Error && error.message.startsWith("WRONGTYPE") ? wrongType : Promise.reject(error)
  )

/**
 * Whether a script's integer reply is 1: ioredis gives integers as numbers, or as their decimal text when the client
 * has `stringNumbers` set (an application's borrowed client, or `redisOptions`).
 */
export const isOne = (reply: unknown): boolean => reply === 1 || reply === "1"

/** SHA-256 of a text, in hex. */
export const sha256 = (text: string): string => NodeCrypto.createHash("sha256").update(text).digest("hex")

/**
 * Commands given up on (timed out) and still unanswered on an open connection past which new ones are not sent: a
 * few are a slow moment, a hundred a Redis that stopped answering. Each holds a few kilobytes until it is answered.
 */
const MAX_UNANSWERED = 100

/** The connection the stores use. */
export interface Connection {
  readonly prefix: string
  readonly run: <A>(operation: string, command: (client: Redis) => Promise<A>) => Effect.Effect<A, Failure>
  /**
   * `ending`: the command ends what this process took (a claim's `complete` or `release`, a lock's `unlock`), and is
   * sent even while Redis is behind (see `MAX_UNANSWERED`): run late, it frees what its TTL would hold; there is one
   * per claim or lock at most, so these do not grow with the traffic.
   */
  readonly eval: (
    operation: string,
    script: Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | number>,
    ending?: boolean
  ) => Effect.Effect<unknown, Failure>
  /**
   * `eval` of a command that takes something for `ttl` milliseconds (a lock, a claim). If its caller does not see it
   * succeed (it timed out, failed, or was interrupted), the command may still take it in Redis: `undo` is sent once
   * the command has settled (answered, or given up by the client), and again until it is answered or the thing has
   * expired. Sending it at once would not do: the command is sent a second time, after its answer, when Redis had
   * forgotten its script, and a connection that drops loses what is sent meanwhile.
   */
  readonly evalTaking: (
    operation: string,
    command: Command,
    undo: Command,
    ttl: number
  ) => Effect.Effect<unknown, Failure>
}

/** A script with its keys and arguments. */
export interface Command {
  readonly script: Script
  readonly keys: ReadonlyArray<string>
  readonly args: ReadonlyArray<string | number>
}

// ioredis's refusal of a command while its socket is closing, before its status leaves "ready" (a Redis that died
// a moment ago): the connection is lost, said as for any other state but "ready".
const lostStream = (cause: unknown): boolean =>
  cause instanceof Error && cause.message.startsWith("Stream isn't writeable")

// Only the first line of a Redis error, and not too much of it: enough to act on, nothing of what was sent.
const describe = (cause: unknown): string => {
  const text = cause instanceof Error ? cause.message : String(cause)
  return (text.split("\n")[0] ?? "").slice(0, 200)
}

/**
 * A duration option of a store (`timeout`, `lockTtl`, ...), checked when the store is made: a NaN, negative, zero or
 * infinite one (an unset variable read as a number, say) would fail every command, or let one wait for ever.
 */
export const durationOption = (
  store: string,
  name: string,
  input: Duration.DurationInput | undefined,
  fallback: Duration.DurationInput
): Duration.Duration =>
  Durations.checkOrThrow(input ?? fallback, false, `effect-fin: ${store}: ${name}`, true)

const textOf = (url: string | Redacted.Redacted<string>): string => Redacted.isRedacted(url) ? Redacted.value(url) : url

/**
 * The `url` option of a store, checked when the store is made: ioredis would throw on a malformed one, and its error
 * quotes the URL, password included. Said without it.
 */
export const checkUrl = (store: string, url: string | Redacted.Redacted<string> | undefined): void => {
  if (url === undefined) return
  const refused = () =>
    new Cause.IllegalArgumentException(
      `effect-fin: ${store}: url is not a Redis URL (redis://[user:password@]host[:port][/db] or rediss://...)`
    )
  let parsed: URL
  try {
    // A wiped Redacted throws here too: refused as no URL.
    parsed = new URL(textOf(url))
    // ioredis decodes the credentials and would throw on a stray %.
    decodeURIComponent(parsed.username)
    decodeURIComponent(parsed.password)
  } catch {
    throw refused()
  }
  if ((parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") || parsed.hostname === "") throw refused()
  // The database (as ioredis reads it: the path, else the last `db` parameter) is a number: ioredis would send
  // SELECT NaN for another, and fail it with an unhandled rejection that ends the process.
  const params = parsed.searchParams.getAll("db")
  const db = parsed.pathname.length > 1 ? parsed.pathname.slice(1) : (params[params.length - 1] ?? null)
  if (db !== null && !/^\d+$/.test(db)) throw refused()
}

/**
 * The `prefix` option of a store, checked when the store is made: anything but non-empty text would be written into
 * every key as its `String` (`[object Object]`, `<redacted>`, `a,b`), a key space shared by every such mistake, or
 * fail each command later (a symbol, an object without a prototype).
 */
export const checkPrefix = (store: string, prefix: unknown): void => {
  if (prefix !== undefined && (typeof prefix !== "string" || prefix === "")) {
    throw new Cause.IllegalArgumentException(`effect-fin: ${store}: prefix must be non-empty text`)
  }
}

/**
 * The `client` option of a store, checked when the store is made: something other than an ioredis client (a
 * node-redis client, a URL given as `client`) would fail later as a TypeError from inside the store.
 */
export const checkClient = (store: string, client: unknown): void => {
  if (client === undefined) return
  const methods = ["on", "off", "eval", "evalsha", "get"] as const
  const looksLikeIoredis = typeof client === "object" && client !== null &&
    typeof (client as { status?: unknown }).status === "string" &&
    methods.every((name) => typeof (client as Record<string, unknown>)[name] === "function")
  if (!looksLikeIoredis) {
    throw new Cause.IllegalArgumentException(`effect-fin: ${store}: client must be an ioredis client (new Redis(...))`)
  }
}

// ioredis's connection states, in words.
const state = (status: string): string =>
  status === "reconnecting"
    ? "reconnecting"
    : status === "close" || status === "end"
    ? "the connection is closed"
    : "not ready yet (connecting, or Redis is loading its data)"

/** Opens (or borrows) the client for the life of the scope; `timeout` bounds each command. */
export const connect = (options: Options, timeout: Duration.Duration): Effect.Effect<Connection, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Why our own client cannot connect (a refused connection, a wrong password): without it, every command would
    // only say that the connection is not writeable.
    let connectionError: string | undefined
    const client = options.client ?? (yield* Effect.acquireRelease(
      Effect.sync(() => {
        // No offline queue: while Redis is unreachable a command fails at once (the stores then go on without it)
        // instead of waiting to be sent minutes later, when what it would write is stale.
        // ioredis 6 types `replyMapping` without `undefined` (exactOptionalPropertyTypes refuses `RedisOptions` as
        // they are): either mapping serves the stores, whose replies are arrays, text and integers.
        const clientOptions = {
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          ...options.redisOptions
        } as RedisOptions & { readonly replyMapping?: never }
        const own = new Redis(options.url === undefined ? "redis://127.0.0.1:6379" : textOf(options.url), clientOptions)
        // Failures reach the stores through their commands; without a listener ioredis prints each one.
        own.on("error", (error: unknown) => {
          connectionError = describe(error)
        })
        own.on("ready", () => {
          connectionError = undefined
        })
        // `lazyConnect` would leave it unconnected until a first command, which with no offline queue fails: this
        // client is connected (and waited for) at once all the same. Its failure is said through "error".
        if (own.status === "wait") own.connect().catch(() => {})
        return own
      }),
      // A Redis that stopped answering does not answer QUIT either: the closing waits at most `timeout`.
      (own) =>
        Effect.tryPromise(() => own.quit()).pipe(
          Effect.timeout(timeout),
          detachedIfUninterruptible,
          Effect.catchAll(() => Effect.sync(() => own.disconnect()))
        )
    ))
    // A store used past the scope it was made in (provided only around `FinClient.make`, say, which keeps it) has
    // closed its own client: said so, not as an outage, which would read as Redis's and never end.
    let scopeClosed = false
    if (options.client === undefined) {
      yield* Effect.addFinalizer(() => Effect.sync(() => void (scopeClosed = true)))
      // Without an offline queue the first commands need the connection: wait for it (bounded, and no longer than its
      // first error; a Redis that is down now is treated like one that goes down later, but said at once).
      yield* Effect.async<void, void>((resume) => {
        if (client.status === "ready") return resume(Effect.void)
        const stop = () => {
          client.off("ready", ready)
          client.off("error", failed)
        }
        const ready = () => {
          stop()
          resume(Effect.void)
        }
        const failed = () => {
          stop()
          resume(Effect.fail(undefined))
        }
        client.on("ready", ready)
        client.on("error", failed)
        return Effect.sync(stop)
      }).pipe(
        Effect.timeout(timeout),
        // Bounded wherever the store is made (a layer may be built uninterruptibly).
        detachedIfUninterruptible,
        Effect.catchAll(() =>
          // What it means is the store's to say: tokens are fetched unshared, webhook deliveries answered 500.
          Effect.logWarning("effect-fin: Redis is not reachable; its commands fail until it is").pipe(
            Effect.annotateLogs({ reason: connectionError ?? `no connection within ${Duration.format(timeout)}` })
          )
        )
      )
    }
    // While not connected, said so (with the client's last error, else its state), not in the client's own words
    // ("Stream isn't writeable and enableOfflineQueue options is false").
    const failure = (operation: string, cause: unknown): Failure => ({
      operation,
      message: scopeClosed
        ? "the store was closed with the scope it was made in: provide it for as long as what uses it lives " +
          "(the client's or webhook handler's layer, or around the whole program)"
        : client.status !== "ready" || lostStream(cause)
        ? `Redis is not connected: ${
          connectionError ?? (client.status === "ready" ? "the connection was lost" : state(client.status))
        }`
        : describe(cause)
    })
    // A command given up on stays queued in the client, with what it holds, until Redis answers: a Redis that stopped
    // answering (frozen, a network that drops packets) keeps the connection open, and the queue would grow with the
    // traffic for as long. Past `MAX_UNANSWERED` such commands a new one is not sent but fails at once (Redis answers
    // in order: it would wait behind them); late answers let commands through again.
    let unanswered = 0
    // A connection that closes ends the count: its unanswered commands are failed, sent again (counted no more),
    // or, without `autoResendUnfulfilledCommands`, dropped by ioredis, never settled: counted still, they would
    // refuse every command for the life of the client. Only a command given up on in this connection counts down.
    let connection = 0
    const closed = () => {
      connection++
      unanswered = 0
    }
    client.on("close", closed)
    yield* Effect.addFinalizer(() => Effect.sync(() => client.off("close", closed)))
    const tooLate = (operation: string, sent: boolean): Failure => ({
      operation,
      message: `Redis did not answer within ${Duration.format(timeout)}` +
        (sent ? "" : ` (${unanswered} earlier commands are still unanswered; not sent)`)
    })
    const behind = () => !scopeClosed && unanswered >= MAX_UNANSWERED && client.status === "ready"
    // The timeout holds for a command sent from an uninterruptible region too (a lock taken or released by the token
    // provider, a webhook claim): a frozen Redis would otherwise hold it for as long as it keeps the connection open.
    // The promise cannot be cancelled; its late answer is dropped.
    const run = <A>(
      operation: string,
      command: (client: Redis) => Promise<A>,
      ending = false
    ): Effect.Effect<A, Failure> =>
      Effect.suspend(() => {
        if (!ending && behind()) return Effect.fail(tooLate(operation, false))
        let pending: Promise<A> | undefined
        return Effect.tryPromise({
          try: () => (pending = command(client)),
          catch: (cause) => failure(operation, cause)
        }).pipe(
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: (): Failure => {
              if (pending !== undefined) {
                unanswered++
                const counted = connection
                const answered = () => {
                  if (connection === counted) unanswered--
                }
                pending.then(answered, answered)
              }
              return tooLate(operation, true)
            }
          }),
          detachedIfUninterruptible
        )
      })
    const send = ({ args, keys, script }: Command): Promise<unknown> =>
      client.evalsha(script.sha, keys.length, ...keys, ...args).catch((error: unknown) =>
        // A restarted or flushed Redis forgot the script: send it whole (Redis caches it again).
        describe(error).startsWith("NOSCRIPT")
          ? client.eval(script.source, keys.length, ...keys, ...args)
          : Promise.reject(error)
      )
    const evalScript: Connection["eval"] = (operation, script, keys, args, ending) =>
      run(operation, () => send({ script, keys, args }), ending)

    // Background clean-up, on plain timers (unref'd: it never keeps the process alive), until the undo is answered,
    // the thing it undoes has expired, or the client is closed. What the command took lasts `ttl` from when Redis ran
    // it, at the latest when it answered (a Redis frozen past the ttl runs it late): counted from then.
    const undoAfter = (sent: Promise<unknown>, undo: Command, ttl: number) => {
      const start = () => {
        const until = Date.now() + ttl
        const attempt = (pause: number): void => {
          if (client.status === "end" || Date.now() >= until) return
          send(undo).catch(() => {
            setTimeout(() => attempt(Math.min(pause * 2, 1_000)), pause).unref()
          })
        }
        attempt(50)
      }
      sent.then(start, start)
    }
    const evalTaking: Connection["evalTaking"] = (operation, command, undo, ttl) =>
      Effect.suspend(() => {
        // Not sent: nothing to undo.
        if (behind()) return Effect.fail(tooLate(operation, false))
        const sent = send(command)
        // Handled from now on: the command may fail before `run`'s fiber listens (an unreachable Redis fails it at once,
        // and a scheduler may run that fiber on a later timer), which Node would report as an unhandled rejection.
        sent.catch(() => undefined)
        return run(operation, () => sent).pipe(
          Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => undoAfter(sent, undo, ttl)))
        )
      })
    return { prefix: options.prefix ?? "effect-fin", run, eval: evalScript, evalTaking }
  })
