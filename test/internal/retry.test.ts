import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as FinError from "../../src/FinError.js"
import * as Retry from "../../src/internal/retry.js"

const call = { operation: "POST /v1/fee-calculation", attempts: 1 }
const api = (status: number) => new FinError.ApiError({ status, message: `${status}`, ...call })
const cut = (status?: number) =>
  new FinError.TransportError({
    message: "lost",
    reason: status === undefined ? "RequestFailed" : "BodyReadFailed",
    ...(status === undefined ? {} : { status }),
    ...call
  })

const maintenance = new FinError.RateLimitError({
  message: "maintenance",
  status: 503,
  retryAfter: Duration.hours(1),
  ...call
})
const late = new FinError.TimeoutError({ message: "late", kind: "deadline", timeout: Duration.seconds(1), ...call })

describe("Retry.isOutage and worthALaterTry", () => {
  it("an unreachable, timing-out or failing service is an outage; a refusal is not, even with its body lost", () => {
    const cases: ReadonlyArray<readonly [FinError.FinError, boolean, boolean]> = [
      [cut(), true, true],
      [cut(200), true, true],
      [cut(503), true, true],
      [cut(408), true, true],
      // The head of a refusal arrived: the lost page does not make it an outage.
      [cut(422), false, false],
      // Asked to slow down: no outage, but a later try may well succeed.
      [cut(429), false, true],
      [new FinError.RateLimitError({ message: "slow down", status: 429, ...call }), false, true],
      [maintenance, true, true],
      [late, true, true],
      [api(408), true, true],
      [api(500), true, true],
      [api(501), true, true],
      [api(400), false, false],
      [api(404), false, false],
      [new FinError.AuthenticationError({ message: "refused", status: 401, ...call }), false, false],
      [new FinError.ResponseDecodeError({ message: "not JSON", issues: [], status: 200, ...call }), false, false]
    ]
    for (const [error, outage, later] of cases) {
      expect([Retry.isOutage(error), Retry.worthALaterTry(error)], error.message).toEqual([outage, later])
    }
  })
})
