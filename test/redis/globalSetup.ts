// Starts the Redis server the Redis suite shares; vitest.config.ts installs this only where redis-server exists.
import type { TestProject } from "vitest/node"
import { startRedis } from "./server.js"

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string
  }
}

export default async function setup(project: TestProject) {
  const server = await startRedis()
  project.provide("redisUrl", server.url)
  return server.stop
}
