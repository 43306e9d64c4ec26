import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { refusedTls } from "../support.js"
import { quoteFrom } from "./clientSuite.js"

describe("NodeHttpClient.layer (node:http)", () => {
  // node:http says EPROTO for any failed handshake: the code is read from OpenSSL's reason, as undici names it.
  it.live("a TLS handshake refused is named as under undici, and tried once", () =>
    Effect.scoped(Effect.gen(function*() {
      const tls = yield* refusedTls
      const codes = []
      for (const server of ["selfSigned", "plain"] as const) {
        const error = yield* quoteFrom({ url: tls[server] }, NodeHttpClient.layer, 3)
        codes.push(error._tag === "TransportError" ? [error.code, error.attempts] : error._tag)
      }
      expect(codes).toEqual([["DEPTH_ZERO_SELF_SIGNED_CERT", 1], ["ERR_SSL_WRONG_VERSION_NUMBER", 1]])
      expect(tls.connections()).toEqual({ selfSigned: 1, plain: 1 })
    })))
})
