/**
 * A vitest setup file (vitest.config.ts's `setupFiles`): a failing test's stack with no V8 `at` line is dropped.
 *
 * Vitest reads such a stack as Firefox's and parses each of its lines with a regular expression that backtracks without
 * bound on a line holding many quotes. A test that fails with a plain object (@effect/vitest throws Effect's
 * `PrettyError`, whose stack is the object's JSON alone: what `Effect.flip` gives should a refusal regress into a
 * success) held vitest's main process at full CPU for minutes, its test timeout never firing. Such a stack carries
 * nothing but the message, which vitest shows anyway.
 */
import { beforeEach } from "vitest"

beforeEach(({ onTestFailed }) => {
  onTestFailed(({ task }) => {
    for (const error of task.result?.errors ?? []) {
      if (typeof error.stack === "string" && !/^\s*at /m.test(error.stack)) error.stack = ""
    }
  })
})
