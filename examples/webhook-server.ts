import { HttpRouter, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Option } from "effect"
import { Webhooks } from "effect-fin"
import { NodeWebhookCrypto } from "effect-fin/node"
import { createServer } from "node:http"

// On shutdown the platform stops serving before it closes the server: a request whose headers were still arriving
// would get no answer, and hold the shutdown until its client gives up. Refused instead (503, sent again later).
// And a delivery answered during the shutdown would keep its connection, and the process, for Node's 5 s keep-alive.
const refusingWhenClosed = () => {
  const server = createServer()
  server.on("request", (_request, response) => {
    if (server.listenerCount("request") === 1) response.writeHead(503, { connection: "close" }).end()
    // Once closing, each kept-alive connection ends with its answer (else it holds the shutdown for keepAliveTimeout).
    response.on("finish", () => { if (!server.listening) setImmediate(() => server.closeIdleConnections()) })
  })
  return server
}

// Scoped: on shutdown the handlers still running finish (Webhooks.handler is the unscoped form).
const WebhookServer = Layer.unwrapScoped(
  Effect.gen(function* () {
    const secret = yield* Config.redacted("FIN_WEBHOOK_SECRET")
    const webhooks = yield* Webhooks.makeHandler({
      secrets: secret,              // or [newSecret, oldSecret] while rotating; no whitespace or control
                                    // character at either end
      environment: "production",    // refuse events whose sandbox_mode is true (`effect-fin emulator --production`
                                    // sends events it takes)
      maxAge: "1 hour",             // refuse events created earlier, or over 5 min ahead (off by default)
      handlers: {
        "beneficiary.status": (event) =>
          Effect.log(`${event.data.beneficiary_id}: ${Option.getOrElse(event.data.status, () => "no status")}`),
        "transaction.status": (event) => Effect.log(event.data), // undocumented shape: `data` is unknown JSON
        Unknown: (event) => Effect.logWarning(`webhook of an undocumented type: ${event.received_type}`)
      }
    })
    // The server is built after the handler, so it closes first: no new delivery, then the running ones finish.
    return HttpServer.serve(HttpRouter.empty.pipe(HttpRouter.post("/webhooks/fin", webhooks))).pipe(
      Layer.provide(NodeHttpServer.layer(refusingWhenClosed, { port: 3000 }))
    )
  })
).pipe(
  Layer.provide(NodeWebhookCrypto.layer) // optional on Node: node:crypto instead of WebCrypto
)

NodeRuntime.runMain(Layer.launch(WebhookServer))
