/**
 * SHA-256 and HMAC-SHA-256 of the short inputs a client is built from (its token store key), with no promise wherever
 * the runtime has node:crypto.
 *
 * @internal
 */
import * as Effect from "effect/Effect"

interface Hasher {
  readonly update: (data: Uint8Array) => { readonly digest: () => Uint8Array }
}

/** The part of node:crypto used here (structural: the core's declarations name no Node type). */
export interface NodeHashes {
  readonly createHash: (algorithm: "sha256") => Hasher
  readonly createHmac: (algorithm: "sha256", key: Uint8Array) => Hasher
}

/** The digests, made on `node` if given, else on WebCrypto. */
export const make = (node: NodeHashes | undefined) => ({
  sha256: (data: Uint8Array<ArrayBuffer>): Effect.Effect<Uint8Array> =>
    node === undefined
      ? Effect.map(Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", data)), (d) => new Uint8Array(d))
      : Effect.sync(() => new Uint8Array(node.createHash("sha256").update(data).digest())),
  hmacSha256: (key: Uint8Array<ArrayBuffer>, data: Uint8Array<ArrayBuffer>): Effect.Effect<Uint8Array> =>
    node === undefined
      ? Effect.promise(async () => {
        const subtle = globalThis.crypto.subtle
        // WebCrypto refuses an empty HMAC key (node:crypto takes it): a key shorter than the block is zero-padded, so
        // 64 zero bytes give the same MAC.
        const raw = key.length === 0 ? new Uint8Array(64) : key
        const imported = await subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
        return new Uint8Array(await subtle.sign("HMAC", imported, data))
      })
      : Effect.sync(() => new Uint8Array(node.createHmac("sha256", key).update(data).digest()))
})

// node:crypto through `process.getBuiltinModule` (Node 20.16 and later, Deno, Bun), not an import: bundles for other
// runtimes carry no node: module, and use WebCrypto. Synchronous, because WebCrypto's digests are promises settled on a
// thread pool in real time, which a TestClock does not wait for: a client built while a test moves the clock (in a
// LayerMap, on first use) would make its first wait after the times the test expects it done.
const nodeHashes = (): NodeHashes | undefined => {
  try {
    const process = (globalThis as { readonly process?: { readonly getBuiltinModule?: (id: string) => unknown } })
      .process
    return process?.getBuiltinModule?.("node:crypto") as NodeHashes | undefined
  } catch {
    return undefined
  }
}

const digests = make(nodeHashes())

/** SHA-256 of `data`. */
export const sha256: (data: Uint8Array<ArrayBuffer>) => Effect.Effect<Uint8Array> = digests.sha256

/** HMAC-SHA-256 of `data` under `key`. */
export const hmacSha256: (
  key: Uint8Array<ArrayBuffer>,
  data: Uint8Array<ArrayBuffer>
) => Effect.Effect<Uint8Array> = digests.hmacSha256
