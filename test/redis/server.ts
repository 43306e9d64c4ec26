// A real redis-server on a free loopback port, for the Redis suite: no persistence, stopped by its owner.
import { spawn, spawnSync } from "node:child_process"
import * as Net from "node:net"

export interface RedisServer {
  readonly url: string
  readonly port: number
  /** Stops the process answering (SIGSTOP): connections stay open, commands wait. */
  readonly freeze: () => void
  /** Lets it answer again (SIGCONT). */
  readonly thaw: () => void
  readonly stop: () => Promise<void>
}

/** Whether `redis-server` can be started here. */
export const redisServerInstalled = (): boolean => spawnSync("redis-server", ["--version"]).status === 0

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Starts a server and resolves once it accepts connections. */
export const startRedis = async (): Promise<RedisServer> => {
  const port = await freePort()
  const child = spawn("redis-server", [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--save", "",
    "--appendonly", "no",
    "--loglevel", "warning"
  ], { stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout.on("data", (chunk) => (output += String(chunk)))
  child.stderr.on("data", (chunk) => (output += String(chunk)))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const deadline = Date.now() + 10_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited at start: ${output}`)
    const ready = await new Promise<boolean>((resolve) => {
      const socket = Net.connect(port, "127.0.0.1", () => {
        socket.end()
        resolve(true)
      })
      socket.once("error", () => resolve(false))
    })
    if (ready) break
    if (Date.now() > deadline) throw new Error(`redis-server did not start: ${output}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    freeze: () => void child.kill("SIGSTOP"),
    thaw: () => void child.kill("SIGCONT"),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL")
        await exited
      }
    }
  }
}
