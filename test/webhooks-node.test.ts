/**
 * The webhook handler on a real Node server (NodeHttpServer, loopback) when the client gives up mid-handler, as the
 * service does when a handler outlasts its own timeout: the platform then interrupts the request and closes its scope.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Http from "node:http"
import * as Webhooks from "../src/Webhooks.js"
import { captureLogs, documentedWebhookBody } from "./support.js"

const secret = "whsec_node_abort_test"
const body = documentedWebhookBody


const pause = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

describe("Webhooks.handler on a Node server, the client gone mid-handler", () => {
  it.live("the handler runs to its end with its scoped resources, and a store failure after it is logged", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen: Array<string> = []
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const memory = Webhooks.makeMemoryDedupeStore()
      const store: Webhooks.WebhookDedupeStoreService = {
        ...memory,
        complete: () => Effect.fail(new Webhooks.WebhookDedupeStoreError({ operation: "complete", message: "down" }))
      }
      const logs = captureLogs()
      const server = Http.createServer()
      const httpServer = yield* NodeHttpServer.make(() => server, { port: 0, host: "127.0.0.1" })
      yield* HttpServer.serveEffect(Webhooks.handler({
        secrets: secret,
        store,
        handlers: {
          "beneficiary.status": () =>
            Effect.acquireRelease(Effect.sync(() => seen.push("acquired")), () => Effect.sync(() => seen.push("released")))
              .pipe(
                Effect.zipRight(Deferred.succeed(started, undefined)),
                Effect.zipRight(Deferred.await(release)),
                Effect.zipRight(Effect.sync(() => seen.push("done")))
              )
        }
      })).pipe(Effect.provideService(HttpServer.HttpServer, httpServer), Effect.provide(logs.layer))
      const port = httpServer.address._tag === "TcpAddress" ? httpServer.address.port : 0

      const headers = yield* Webhooks.sign(body, secret)
      const client = new AbortController()
      const sent = fetch(`http://127.0.0.1:${port}/`, { method: "POST", body, headers, signal: client.signal })
        .catch((error: unknown) => String(error))
      yield* Deferred.await(started)
      client.abort()
      yield* Effect.promise(() => sent)
      yield* pause(50)
      // The request is gone; the handler and what it acquired are not.
      expect(seen).toEqual(["acquired"])
      yield* Deferred.succeed(release, undefined)
      yield* pause(50)
      expect(seen).toEqual(["acquired", "done", "released"])
      expect(logs.lines.some((line) => line.includes("de-duplication store unavailable"))).toBe(true)
      // Not marked handled, and the claim freed: a redelivery runs the handler again.
      const again = yield* memory.claim("40061557-f125-4b39-97d6-c16a0f1230c1", "another", Duration.minutes(1))
      expect(again._tag).toBe("Claimed")
    })), 20_000)
})
