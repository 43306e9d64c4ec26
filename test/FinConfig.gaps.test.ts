import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FinConfig from "../src/FinConfig.js"

const base = { clientId: "id", clientSecret: "secret" }
const configError = (options: FinConfig.Options) =>
  Effect.map(Effect.flip(FinConfig.resolve(options)), (e) => String(e))

describe("FinConfig: gaps found by mutation testing", () => {
  it.effect("a baseUrl with only a password in it, or a userAgent with DEL, is a ConfigError naming the option", () =>
    Effect.gen(function*() {
      expect(yield* configError({ ...base, baseUrl: "https://:secret@api.fin.com" })).toContain("baseUrl must not carry credentials")
      expect(yield* configError({ ...base, userAgent: "app/1\x7f" })).toContain("userAgent")
    }))
})
