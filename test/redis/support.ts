// Shared by the Redis suite: the server's URL, key prefixes, a client, and child processes (test/redis/worker.ts
// under tsx, with IPC).
import { inject } from "vitest"
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import { type ChildProcess, fork } from "node:child_process"
import * as Path from "node:path"
import * as Url from "node:url"
import type { Job, Message } from "./worker.js"

/** The Redis server of the global set-up. */
export const redisUrl = inject("redisUrl")

let prefixes = 0
/** A key prefix of one test: the suite's files share one Redis. */
export const uniquePrefix = (name: string) => `effect-fin-test:${process.pid}:${name}:${++prefixes}`

/** A plain client, to look at what the stores wrote. */
export const redisClient = Effect.acquireRelease(
  Effect.sync(() => new Redis(redisUrl)),
  (redis) => Effect.promise(() => redis.quit())
)

const workerPath = Path.join(Path.dirname(Url.fileURLToPath(import.meta.url)), "worker.ts")

export interface Worker {
  readonly child: ChildProcess
  /** The next message of `type` (those that came earlier are kept). */
  readonly next: <T extends Message["type"]>(type: T) => Effect.Effect<Extract<Message, { readonly type: T }>>
  readonly send: (message: unknown) => Effect.Effect<void>
  readonly kill: Effect.Effect<void>
}

/** Forks a worker for the life of the scope (killed at the end if still running). */
export const worker = (job: Job) =>
  Effect.acquireRelease(
    Effect.sync((): Worker => {
      const child = fork(workerPath, [JSON.stringify(job)], {
        execArgv: ["--import", "tsx"],
        stdio: ["ignore", "inherit", "inherit", "ipc"]
      })
      const inbox: Array<Message> = []
      const waiting: Array<() => void> = []
      const wakeAll = () => {
        for (const wake of waiting.splice(0)) wake()
      }
      // 'close' comes after the IPC channel is drained ('exit' can come before a last message is emitted).
      let closed = false
      const exited = new Promise<void>((resolve) =>
        child.once("close", () => {
          closed = true
          wakeAll()
          resolve()
        })
      )
      child.on("message", (message: Message) => {
        inbox.push(message)
        wakeAll()
      })
      const next = <T extends Message["type"]>(type: T) =>
        Effect.async<Extract<Message, { readonly type: T }>>((resume) => {
          const look = () => {
            const index = inbox.findIndex((m) => m.type === type)
            if (index >= 0) {
              resume(Effect.succeed(inbox.splice(index, 1)[0] as Extract<Message, { readonly type: T }>))
            } else if (closed) {
              resume(Effect.dieMessage(`worker ${job.mode} exited (${child.exitCode ?? child.signalCode}) before "${type}"`))
            } else {
              waiting.push(look)
            }
          }
          look()
        })
      return {
        child,
        next,
        send: (message) => Effect.async<void>((resume) => void child.send(message as never, () => resume(Effect.void))),
        kill: Effect.promise(() => {
          if (!closed) child.kill("SIGKILL")
          return exited
        })
      }
    }),
    (w) => w.kill
  )

export { eventually } from "../support.js"
