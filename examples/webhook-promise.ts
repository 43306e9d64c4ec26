import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { Webhooks } from "effect-fin"
import { NodeWebhookCrypto } from "effect-fin/node"
import { createServer, type RequestListener } from "node:http"
import type { AddressInfo } from "node:net"

const secret = Redacted.make("whsec-example-only") // yours: from configuration
let started = () => {}
const handling = new Promise<void>((resolve) => (started = resolve)) // for this example: a delivery is in its handler

// The listener is made in the runtime's layer, so `fin.dispose()` waits for the handlers still running.
class FinWebhooks extends Context.Tag("FinWebhooks")<FinWebhooks, RequestListener>() {}
const Listener = Layer.scoped(FinWebhooks, Effect.flatMap(Webhooks.makeHandler({
  secrets: secret,
  handlers: {
    "transaction.status": (event) => Effect.sync(started).pipe(
      Effect.zipRight(Effect.sleep("100 millis")), // your work: a database commit, say
      Effect.zipRight(Effect.sync(() => console.log(`handled ${event.id}`)))
    )
  }
}), (app) => NodeHttpServer.makeHandler(app)))
// With your FinClient layer too: Listener.pipe(Layer.provideMerge(Client)), so the client outlives the handlers.
const fin = ManagedRuntime.make(Listener.pipe(Layer.provide(NodeWebhookCrypto.layer)))

const server = createServer(await fin.runPromise(FinWebhooks)) // Express: app.post("/webhooks/fin", listener)
await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))

// Fin delivers an event, signed as Fin signs it; SIGTERM comes while it is being handled.
const body = JSON.stringify({
  event: { id: "40061557-f125-4b39-97d6-c16a0f1230c1", event_reference_id: "tx-1", type: "transaction.status",
    created_at: "2026-04-04T17:38:26.843132Z", sandbox_mode: true },
  data: { status: "COMPLETED" }
})
const headers = await Effect.runPromise(Webhooks.sign(body, secret))
const delivery = fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { method: "POST", body, headers })
await handling
server.close() // on SIGTERM: stop taking connections first,
await fin.dispose() // then wait for the handlers (a delivery still arriving is refused: sent again later)
server.closeIdleConnections() // and the keep-alive connections now answered (else held up to 5 s)
console.log(`stopped; the delivery was answered ${(await delivery).status}`)
