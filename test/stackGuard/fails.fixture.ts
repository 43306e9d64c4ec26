// Run only by test/stackGuard.test.ts, in a vitest of its own: it fails on purpose.
import { it } from "@effect/vitest"
import * as Effect from "effect/Effect"

const entries = Array.from({ length: 200 }, (_, i) => ({ code: `US-${i}`, name: `"State" ${i}`, type: "state" }))

it.effect("fails with a plain object of 200 entries", () => Effect.fail({ subdivisions: entries }))
