/**
 * The peer range admits ioredis 5 and 6, whose types differ (6's client is generic over its reply mapping): src/redis
 * type-checks against ioredis 6 too (the dev alias `ioredis-6`, mapped to the name `ioredis` by
 * test/redis/tsconfig.ioredis6.json), as `npm test`'s own check does against the lock file's ioredis 5. A user's
 * compiler reads only the built declarations, but this build must compile beside either.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"

const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url))
const project = fileURLToPath(new URL("./redis/tsconfig.ioredis6.json", import.meta.url))

describe("src/redis with ioredis 6", () => {
  it("type-checks, with ioredis 6's declarations in place of ioredis 5's", async () => {
    const run = (args: ReadonlyArray<string>) =>
      new Promise<string>((resolve) =>
        execFile(process.execPath, [tsc, "-p", project, ...args], { encoding: "utf8" }, (_error, stdout, stderr) =>
          resolve(stdout + stderr))
      )
    // The mapping holds: ioredis 6's declarations are read, and no file of ioredis 5's.
    const files = (await run(["--listFilesOnly"])).split("\n")
    expect(files.some((file) => file.includes("/node_modules/ioredis-6/built/"))).toBe(true)
    expect(files.filter((file) => file.includes("/node_modules/ioredis/"))).toEqual([])
    expect(await run([])).toBe("")
  }, 120_000)
})
