import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Emulator } from "../../src/emulator/index.js"

const post = (url: string, body?: string) =>
  Effect.promise(() =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: body ?? null }).then(async (r) => ({
      status: r.status,
      json: await r.json()
    }))
  )

describe("emulator admin routes without input", () => {
  it.scopedLive("reset and revoke-tokens refuse a body that is not JSON (or has fields) with 400, and do nothing", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.make()
      yield* emulator.setFaults([{ kind: "stall", route: "POST /v1/fee-calculation" }])
      for (const path of ["/__emulator/reset", "/__emulator/revoke-tokens"]) {
        const garbage = yield* post(`${emulator.url}${path}`, "garbage{")
        expect(garbage.status, path).toBe(400)
        expect(garbage.json.message).toBe(`Invalid body for POST ${path}: not valid JSON`)
        const extra = yield* post(`${emulator.url}${path}`, JSON.stringify({ refresh: true }))
        expect(extra.status, path).toBe(400)
        expect(extra.json.message).toBe(`Invalid body for POST ${path}: no input: an empty body or {}`)
      }
      // Nothing was reset.
      expect((yield* emulator.faults).length).toBe(1)
      // An empty body or {} still works.
      expect(yield* post(`${emulator.url}/__emulator/revoke-tokens`)).toEqual({ status: 200, json: { revoked: 0 } })
      expect(yield* post(`${emulator.url}/__emulator/reset`, "{}")).toEqual({ status: 200, json: { reset: true } })
    }))
})
