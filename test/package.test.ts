import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { execFile, execFileSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

// Builds and packs the package, unpacks it into a scratch app that reuses this repo's installed peers (no registry
// access), and loads its entries with `import` and with `require`: the main one, /test, /node and the per-module ones
// of both in the app; /cli, /emulator and /redis once their peers are installed.
const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { readonly exports: object }
const bin = (name: string) => join(root, "node_modules", ".bin", name)
let scratch = ""
let app = ""
let tarball = ""

const run = (file: string, args: ReadonlyArray<string>, cwd: string) =>
  execFileSync(file, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } })

/** How a command that is to fail ended: its exit status and standard error (undefined if it succeeded). */
const failureOf = (file: string, args: ReadonlyArray<string>, cwd: string) => {
  try {
    run(file, args, cwd)
    return undefined
  } catch (error) {
    return error as { status: number; stderr: string }
  }
}

// The build takes a while; a synchronous call would block the worker and time out vitest's own messages.
const runAsync = (file: string, args: ReadonlyArray<string>, cwd: string) =>
  new Promise<string>((resolve, reject) =>
    execFile(file, args, { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout))
  )

// What tsc reports in `cwd` (empty when it passes), so a failure shows the compiler's own words.
const typecheck = (cwd: string) =>
  new Promise<string>((resolve) =>
    execFile(bin("tsc"), ["-p", "tsconfig.json"], { cwd, encoding: "utf8" }, (_error, stdout, stderr) =>
      resolve(stdout + stderr))
  )

// The per-module entries the app can load with the peers it has (effect and @effect/platform): each must give the very
// values of its namespace in the main entry (or in effect-fin/node), one copy of each class.
const perModule = Object.keys(packageJson.exports).flatMap((key) =>
  /^\.\/(?:node\/)?[A-Z]\w*$/.test(key) ? [key.slice(2)] : []
)

const smoke = (load: (id: string) => string) => `
const fin = ${load("effect-fin")}
const finTest = ${load("effect-fin/test")}
const finNode = ${load("effect-fin/node")}
const modules = [${perModule.map((name) => `[${JSON.stringify(name)}, ${load(`effect-fin/${name}`)}]`).join(", ")}]
const apart = modules.flatMap(([name, module]) => {
  const whole = name.startsWith("node/") ? finNode[name.slice(5)] : fin[name]
  const keys = Object.keys(module)
  return keys.length > 0 && keys.length === Object.keys(whole).length && keys.every((key) => module[key] === whole[key])
    ? []
    : [name]
})
const subdivisions = fin.Subdivisions.forCountry("BRA")
const { Effect } = ${load("effect")}
const program = fin.FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" }).pipe(
  Effect.provide(finTest.layerFeeService({ rates: { "USD/CAD": 2 } }))
)
const refused = fin.FeeService.calculate({ source_currency: "usd", source_amount: 100, destination_currency: "CAD" }).pipe(
  Effect.provide(finTest.layerFeeService({ rates: { "USD/CAD": 2 } })),
  Effect.flip
)
Effect.runPromise(Effect.all([program, refused])).then(([quote, error]) => {
  console.log(JSON.stringify({
    namespaces: Object.keys(fin).sort(),
    destination: quote.destination_amount,
    // One copy of each class behind every entry: what the test layer returns is the main entry's class.
    sameClasses: quote instanceof fin.FeeService.FeeQuote && error instanceof fin.FinError.RequestValidationError,
    country: fin.CountryCode.toAlpha2("USA"),
    node: Object.keys(finNode).length > 0,
    modules: modules.length,
    apart,
    saoPaulo: subdivisions.right.find((s) => s.code === "BR-SP").name
  }))
})
`

// A CommonJS program building UndiciHttpClient.layer: "built", or its failure.
const undiciLayerBuilt = `const { UndiciHttpClient } = require("effect-fin/node")
const { Effect, Layer } = require("effect")
Effect.runPromise(Effect.scoped(Layer.build(UndiciHttpClient.layer))).then(
  () => console.log("built"),
  (error) => console.log(String(error)))`

describe("package", () => {
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "effect-fin-pack-"))
    // `npm pack` builds (prepack), as `npm publish` does: a package is never packed from a stale or missing dist/.
    await runAsync("npm", ["pack", "--pack-destination", scratch], root)
    tarball = readdirSync(scratch).find((f) => f.endsWith(".tgz"))!
    app = join(scratch, "app")
    const installed = join(app, "node_modules", "effect-fin")
    mkdirSync(installed, { recursive: true })
    run("tar", ["xzf", join(scratch, tarball), "-C", installed, "--strip-components=1"], scratch)
    mkdirSync(join(app, "node_modules", "@effect"), { recursive: true })
    for (const peer of ["effect", "@effect/platform"]) {
      symlinkSync(join(root, "node_modules", peer), join(app, "node_modules", peer), "dir")
    }
    writeFileSync(join(app, "esm.mjs"), smoke((id) => `await import(${JSON.stringify(id)})`))
    writeFileSync(join(app, "cjs.cjs"), smoke((id) => `require(${JSON.stringify(id)})`))
  }, 300_000)

  afterAll(() => {
    if (scratch !== "") rmSync(scratch, { recursive: true, force: true })
  })

  for (const file of ["esm.mjs", "cjs.cjs"]) {
    const how = file.startsWith("esm") ? "import" : "require"
    it(`loads the main, test, node and per-module entries with ${how}`, () => {
      const output = JSON.parse(run(process.execPath, [file], app))
      // Every per-module entry of the core and of effect-fin/node (13): its namespace's own values, not copies.
      expect([output.modules, output.apart]).toEqual([perModule.length, []])
      expect(perModule).toHaveLength(13)
      expect(output.namespaces).toEqual(expect.arrayContaining(["FeeService", "FinClient", "FinError", "TokenProvider"]))
      expect(output.destination).toBe(200)
      expect(output.sameClasses).toBe(true)
      expect(output.country).toBe("US")
      expect(output.node).toBe(true)
      expect(output.saoPaulo).toBe("São Paulo")
    })
  }

  // An app may load both builds (an ESM program, a CommonJS helper making one of its layers): the client's parts must
  // still find each other. Here the provider comes from the CommonJS build: closing the client still ends a call that
  // waits on a stalled service at once, as an interruption, not after its 20 s timeout.
  it("a client made of both builds (import and require) still ends its calls when it closes", async () => {
    writeFileSync(
      join(app, "mixed.mjs"),
      `import { createRequire } from "node:module"
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as fin from "effect-fin"
import * as finTest from "effect-fin/test"
const { TokenProvider } = createRequire(import.meta.url)("effect-fin")
let reached
const stalled = new Promise((resolve) => (reached = resolve))
const http = finTest.layerHttpClient({
  "POST /v1/oauth/token": finTest.tokenHandler(),
  "POST /v1/fee-calculation": () => (reached(), finTest.stall)
})
const config = fin.FinConfig.layer({
  clientId: "id", clientSecret: "secret", baseUrl: "http://127.0.0.1:4010", timeout: "20 seconds", maxRetries: 0
})
const runtime = ManagedRuntime.make(fin.FeeService.layer.pipe(
  Layer.provideMerge(fin.HttpTransport.layer.pipe(Layer.provideMerge(TokenProvider.layer))),
  Layer.provide(config),
  Layer.provide(http)
))
const call = runtime.runPromiseExit(
  fin.FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
)
await stalled
await runtime.dispose()
const exit = await call
console.log(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? "interrupted" : String(exit))
`
    )
    expect((await runAsync(process.execPath, ["mixed.mjs"], app)).trim()).toBe("interrupted")
  }, 60_000)

  it("every name that is both a type and a schema keeps both meanings in the declarations, for import and require", async () => {
    // The bundled declarations once kept one meaning only (scripts/fix-dts.ts): `FinError.FinError` was no type,
    // `Subdivisions.Subdivision` no value.
    const consumer = `import { CountryCode, FinClient, FinError, Subdivisions, Webhooks } from "effect-fin"
import * as Schema from "effect/Schema"
export const tag = (error: FinError.FinError): string => error._tag
export const code: CountryCode.CountryCode = "USA"
export type Client = FinClient.Client
export type Types = [
  FinError.WebhookFailureReason, Subdivisions.Subdivision, Subdivisions.SnapshotSubdivision,
  Webhooks.Envelope, Webhooks.BeneficiaryStatus, Webhooks.WebhookEvent
]
export const schemas: ReadonlyArray<Schema.Schema.Any> = [
  FinError.FinError, CountryCode.CountryCode, FinError.WebhookFailureReason, Subdivisions.Subdivision,
  Subdivisions.SnapshotSubdivision, Webhooks.Envelope, Webhooks.BeneficiaryStatus, Webhooks.WebhookEvent
]
`
    writeFileSync(join(app, "types.mts"), consumer)
    writeFileSync(join(app, "types.cts"), consumer)
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, target: "es2022", lib: ["es2022", "dom"], module: "node16",
        // The declarations themselves are checked too: a mended namespace must name real values only.
        moduleResolution: "node16", skipLibCheck: false, types: []
      },
      files: ["types.mts", "types.cts"]
    }))
    expect(await typecheck(app)).toBe("")
  }, 120_000)

  it("a consumer that emits declarations can export values typed by effect-fin, for import and require", async () => {
    // A library or a project-references build writes the inferred types of its exports: each effect-fin type in them
    // must be nameable through the package's entries (bundled declaration chunks made that fail with TS2742).
    const consumer = `import { CountryCode, FeeService, FinClient, Subdivisions, SubdivisionService, Webhooks } from "effect-fin"
import * as FinTest from "effect-fin/test"
import { Emulator } from "effect-fin/emulator"
import * as Effect from "effect/Effect"
export const quote = FeeService.calculate({ source_currency: "USD", source_amount: 100, destination_currency: "CAD" })
export const client = FinClient.layer({ clientId: "id", clientSecret: "secret" })
export const validated = FeeService.validate({ source_currency: "USD", source_amount: 1, destination_currency: "CAD" })
export const offline = Subdivisions.forCountry("USA")
export const online = SubdivisionService.list("USA")
export const invalid = Effect.map(SubdivisionService.crossCheck("USA"), (diff) => diff.invalid)
export const renamed = Effect.map(SubdivisionService.crossCheck("USA"), (diff) => diff.renamed[0])
export const parsed = CountryCode.parse("US")
export const verified = Webhooks.verify(new Uint8Array(), {}, ["secret"])
export const statusEvent = (event: Webhooks.WebhookEvent) => event.type === "beneficiary.status" ? event : undefined
export const missing = Effect.map(SubdivisionService.crossCheck("USA"), (diff) => diff.missing[0])
// An alias the package declares in a module without a path of its own could not be printed here (TS2742).
export const headersOf = (headers: Webhooks.HeadersInput) => ({ headers })
// sign and WebhookCrypto name the algorithm by the alias Webhooks exports, never by a path into dist/.
export const signing = Webhooks.sign
export const hmac = Webhooks.makeWebCrypto().verify
export const fees = FinTest.layerFeeService({ rates: { "USD/CAD": 1.37 } })
export const emulator = Emulator.layer()
export const delivery = Emulator.Emulator.pipe(Effect.flatMap((running) => running.sendWebhook()))
export const counters = Emulator.Emulator.pipe(Effect.flatMap((running) => running.counters))
export const developerFee = Emulator.defaultBeneficiaries["x"]?.developerFee
export const faults = Emulator.Emulator.pipe(Effect.flatMap((running) => running.faults))
export const statusRule = (rule: Emulator.FaultRule) => rule.kind === "status" ? rule : undefined
`
    const dir = join(app, "declarations")
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, "consumer.mts"), consumer)
    writeFileSync(join(dir, "consumer.cts"), consumer)
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, declaration: true, emitDeclarationOnly: true, outDir: "out", target: "es2022",
        lib: ["es2022", "dom"], module: "node16", moduleResolution: "node16", skipLibCheck: true, types: []
      },
      files: ["consumer.mts", "consumer.cts"]
    }))
    expect(await typecheck(dir)).toBe("")
    // TypeScript's node10 resolution (`module: commonjs`) too: the types named through the entries, never a path into
    // dist/ that no entry exports (which a reader on node16 or bundler could not resolve).
    const node10 = join(app, "declarations-node10")
    mkdirSync(node10, { recursive: true })
    writeFileSync(join(node10, "consumer.ts"), consumer)
    writeFileSync(join(node10, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, declaration: true, emitDeclarationOnly: true, outDir: "out", target: "es2022",
        lib: ["es2022", "dom"], module: "commonjs", moduleResolution: "node10", skipLibCheck: true, types: [],
        ignoreDeprecations: "5.0"
      },
      files: ["consumer.ts"]
    }))
    expect(await typecheck(node10)).toBe("")
    const emitted = readFileSync(join(node10, "out", "consumer.d.ts"), "utf8")
    // Types are printed by their names, not spelt out whole (an event's union was about a hundred lines of it).
    for (
      const line of [
        "verified: Effect.Effect<Webhooks.WebhookEvent, ",
        "statusEvent: (event: Webhooks.WebhookEvent) => Webhooks.BeneficiaryStatusEvent | undefined;",
        "missing: Effect.Effect<Subdivisions.Subdivision, ",
        "renamed: Effect.Effect<SubdivisionService.RenamedEntry, ",
        "faults: Effect.Effect<readonly Emulator.FaultRule[], never, Emulator.Emulator>;",
        "statusRule: (rule: Emulator.FaultRule) => Emulator.StatusFaultRule | undefined;",
        "algorithm?: Webhooks.Algorithm) => ",
        "hmac: (algorithm: Webhooks.Algorithm, "
      ]
    ) expect(emitted).toContain(line)
    expect(emitted).toContain(`import("effect-fin/FinError").FinError`)
    expect(emitted).not.toContain("effect-fin/dist")
  }, 120_000)

  it("the effect-fin command names the missing optional peers instead of crashing", () => {
    const bin = join(app, "node_modules", "effect-fin", "dist", "cli", "bin.js")
    const failure = failureOf(process.execPath, [bin, "--help"], app)
    expect(failure?.status).toBe(1)
    expect(failure?.stderr.trim()).toBe(
      "effect-fin: the command line needs @effect/cli and @effect/platform-node: npm install @effect/cli@0.77 @effect/platform-node@0.108"
    )
  })

  // As `npm install --legacy-peer-deps` leaves them: naming the peers again would send the user round in a circle.
  it("the effect-fin command names what an installed peer lacks (its own peers), with the range it asks for", () => {
    const legacy = join(scratch, "legacy-peers")
    mkdirSync(join(legacy, "node_modules", "@effect"), { recursive: true })
    cpSync(join(app, "node_modules", "effect-fin"), join(legacy, "node_modules", "effect-fin"), { recursive: true })
    for (const peer of ["effect", "@effect/platform"]) {
      symlinkSync(join(root, "node_modules", peer), join(legacy, "node_modules", peer), "dir")
    }
    // Copies: a link's imports would resolve from its real path, where everything is installed.
    for (const peer of ["@effect/cli", "@effect/platform-node"]) {
      cpSync(join(root, "node_modules", peer), join(legacy, "node_modules", peer), { recursive: true })
    }
    const bin = join(legacy, "node_modules", "effect-fin", "dist", "cli", "bin.js")
    const failure = failureOf(process.execPath, [bin, "--help"], legacy)
    expect(failure?.status).toBe(1)
    // Which of a peer's own peers is looked for first is the peer's affair; each is named with its range.
    expect(failure?.stderr.trim()).toMatch(
      new RegExp(
        "^effect-fin: the command line needs (@effect/printer(?:-ansi)?) \\(for @effect/cli\\) and " +
          "(@effect/(?:cluster|rpc|sql)) \\(for @effect/platform-node\\): " +
          "npm install \"\\1@\\^\\d+\\.\\d+\\.\\d+\" \"\\2@\\^\\d+\\.\\d+\\.\\d+\"$"
      )
    )
    // A file missing inside an installed package is a broken installation, not a package to install: its own error.
    rmSync(join(legacy, "node_modules", "@effect", "cli", "dist", "esm", "Args.js"))
    const broken = failureOf(process.execPath, [bin, "--help"], legacy)
    expect(broken?.status).toBe(1)
    expect(broken?.stderr).toContain("Args.js")
    expect(broken?.stderr).not.toContain("the command line needs")
  })

  it("UndiciHttpClient.layer without @effect/platform-node names it, instead of a bare module-not-found", () => {
    const script = `import("effect-fin/node").then(({ UndiciHttpClient }) =>
  import("effect").then(({ Effect, Layer }) =>
    Effect.runPromise(Effect.scoped(Layer.build(UndiciHttpClient.layer))).then(
      () => console.log("built"),
      (error) => console.log(String(error)))))`
    expect(run(process.execPath, ["--input-type=module", "-e", script], app)).toContain(
      "effect-fin/node: UndiciHttpClient needs @effect/platform-node: npm install @effect/platform-node@0.108"
    )
    expect(run(process.execPath, ["-e", undiciLayerBuilt], app)).toContain(
      "effect-fin/node: UndiciHttpClient needs @effect/platform-node: npm install @effect/platform-node@0.108"
    )
  })

  it("the effect-fin command, the emulator and the Redis stores run from the package once their peers are installed", () => {
    const withPeers = join(scratch, "with-peers")
    mkdirSync(join(withPeers, "node_modules", "@effect"), { recursive: true })
    // A copy, not a link: Node resolves a module's imports from its real path.
    cpSync(join(app, "node_modules", "effect-fin"), join(withPeers, "node_modules", "effect-fin"), { recursive: true })
    const peers = ["@effect/platform-node", "@effect/cli", "@effect/printer", "@effect/printer-ansi", "@effect/cluster", "@effect/rpc", "@effect/sql", "ioredis"]
    for (const peer of ["effect", "@effect/platform", ...peers]) {
      symlinkSync(join(root, "node_modules", peer), join(withPeers, "node_modules", peer), "dir")
    }
    const bin = join(withPeers, "node_modules", "effect-fin", "dist", "cli", "bin.js")
    const output = JSON.parse(run(process.execPath, [bin, "subdivisions", "USA", "--offline", "--json"], withPeers))
    expect(output.source).toBe("snapshot")
    expect(output.subdivisions.some((s: { code: string }) => s.code === "US-CA")).toBe(true)
    // The installed command knows its bundled snapshot: it will not rewrite it, nor write into a folder it was not given.
    const refused = failureOf(process.execPath, [bin, "snapshot", "--from-api"], withPeers)
    expect(refused?.status).toBe(2)
    expect(refused?.stderr).toMatch(/^effect-fin snapshot: give --out DIR/)
    // The Node-only subpaths load in both formats once @effect/platform-node is there.
    const esm = `import("effect-fin/emulator").then((m) => console.log(typeof m.Emulator.layer))`
    expect(run(process.execPath, ["--input-type=module", "-e", esm], withPeers).trim()).toBe("function")
    const cjs = `console.log(typeof require("effect-fin/emulator").Emulator.layer)`
    expect(run(process.execPath, ["-e", cjs], withPeers).trim()).toBe("function")
    // So does effect-fin/redis once ioredis is there.
    const redisEsm = `import("effect-fin/redis").then((m) => console.log(typeof m.RedisTokenStore.layer, typeof m.RedisWebhookDedupeStore.layer))`
    expect(run(process.execPath, ["--input-type=module", "-e", redisEsm], withPeers).trim()).toBe("function function")
    const redisCjs = `const m = require("effect-fin/redis"); console.log(typeof m.RedisTokenStore.layer, typeof m.RedisWebhookDedupeStore.layer)`
    expect(run(process.execPath, ["-e", redisCjs], withPeers).trim()).toBe("function function")
    // UndiciHttpClient loads its peer with `require` in the CommonJS build: a runner that loads CommonJS in a VM
    // context of its own (Jest, without --experimental-vm-modules) refuses a dynamic import.
    expect(run(process.execPath, ["-e", undiciLayerBuilt], withPeers).trim()).toBe("built")
    const dist = join(withPeers, "node_modules", "effect-fin", "dist")
    const importing = readdirSync(dist, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".cjs") && /\bimport\(/.test(readFileSync(join(dist, file), "utf8")))
    expect(importing).toEqual([])
  }, 120_000)

  it("run from effect-fin/cli in a program of the user's keeps the binary's bundled-snapshot defaults (import, require)", () => {
    const user = join(scratch, "user-program")
    mkdirSync(join(user, "node_modules", "@effect"), { recursive: true })
    cpSync(join(app, "node_modules", "effect-fin"), join(user, "node_modules", "effect-fin"), { recursive: true })
    const peers = ["effect", "@effect/platform", "@effect/platform-node", "@effect/cli", "@effect/printer"]
    for (const peer of [...peers, "@effect/printer-ansi", "@effect/cluster", "@effect/rpc", "@effect/sql"]) {
      symlinkSync(join(root, "node_modules", peer), join(user, "node_modules", peer), "dir")
    }
    const program = (load: (id: string) => string) => `const { NodeContext, NodeRuntime } = ${load("@effect/platform-node")}
const { Effect } = ${load("effect")}
const { run } = ${load("effect-fin/cli")}
run(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain)
`
    writeFileSync(join(user, "cli.mjs"), program((id) => `await import(${JSON.stringify(id)})`))
    writeFileSync(join(user, "cli.cjs"), program((id) => `require(${JSON.stringify(id)})`))
    for (const file of ["cli.mjs", "cli.cjs"]) {
      // Run in the user's own project: without the package's data/, `snapshot` wrote data/ and src/internal/ there.
      const cwd = mkdtempSync(join(scratch, "project-"))
      const refused = failureOf(process.execPath, [join(user, file), "snapshot", "--from-api"], cwd)
      expect(refused?.status).toBe(2)
      expect(refused?.stderr).toMatch(/^effect-fin snapshot: give --out DIR/)
      expect(readdirSync(cwd)).toEqual([])
    }
  })

  it("typesVersions names every subpath of exports, with its CommonJS declarations (TypeScript's node10 resolution)", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      readonly exports: Record<string, string | { readonly require: { readonly types: string } }>
      readonly typesVersions: { readonly "*": Record<string, ReadonlyArray<string>> }
    }
    const expected = Object.fromEntries(
      Object.entries(pkg.exports).flatMap(([subpath, target]) =>
        typeof target === "string" || subpath === "." ? [] : [[subpath.slice(2), [target.require.types]]]
      )
    )
    expect(pkg.typesVersions["*"]).toEqual(expected)
  })

  // The snapshot is LGPL data: every built file holding it says so, in a comment bundlers keep.
  it("every built file holding the subdivision data carries its licence comment; the package says both licences", () => {
    const dist = join(app, "node_modules", "effect-fin", "dist")
    const built = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => /\.(c?js)$/.test(f))
    const holding = built.filter((f) => readFileSync(join(dist, f), "utf8").includes("California"))
    expect(holding.length).toBeGreaterThanOrEqual(2)
    for (const file of holding) {
      expect(readFileSync(join(dist, file), "utf8"), file).toContain("ISO 3166-2 subdivisions from Debian iso-codes (LGPL-2.1-or-later")
    }
    const manifest = JSON.parse(readFileSync(join(app, "node_modules", "effect-fin", "package.json"), "utf8"))
    expect(manifest.license).toBe("MIT AND LGPL-2.1-or-later")
  })

  // Runtimes that offer Node's modules (Deno, workers with Node compatibility) may do so under `node:` only.
  it("built files import Node's own modules by their node: names", () => {
    const dist = join(app, "node_modules", "effect-fin", "dist")
    const built = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => /\.(c?js)$/.test(f))
    const builtins = new Set(builtinModules.filter((name) => !name.startsWith("_")))
    const bare = built.flatMap((file) =>
      [...readFileSync(join(dist, file), "utf8").matchAll(/(?:from |import\(|require\()\s*["']([^"']+)["']/g)]
        .map(([, specifier]) => specifier!)
        .filter((specifier) => builtins.has(specifier))
        .map((specifier) => `${file}: ${specifier}`)
    )
    expect(bare).toEqual([])
    expect(built.some((file) => /["']node:crypto["']/.test(readFileSync(join(dist, file), "utf8")))).toBe(true)
  })

  // Tools that read a file's source map take one comment naming it (some the first, some the last).
  it("every built file names its own source map once, at its end", () => {
    const dist = join(app, "node_modules", "effect-fin", "dist")
    const built = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => /\.(c?js)$/.test(f))
    const wrong = built.filter((file) => {
      const comments = [...readFileSync(join(dist, file), "utf8").matchAll(/^\/\/# sourceMappingURL=(.*)$/gm)]
      return comments.length !== 1 || comments[0]![1] !== `${file.split("/").pop()}.map`
    })
    expect(built.length).toBeGreaterThan(20)
    expect(wrong).toEqual([])
  })

  it("passes publint", async () => {
    expect(await runAsync(bin("publint"), [], root)).toContain("All good")
  }, 120_000)

  it("passes @arethetypeswrong/cli for node10, node16 and bundlers", async () => {
    // Exits non-zero on any problem. node10 (TypeScript's resolution for `module: commonjs`, no `exports`) finds the
    // subpaths through `typesVersions`. JSON, because attw's default text layout follows the terminal's width.
    const output = await runAsync(bin("attw"), ["--format", "json", join(scratch, tarball)], root)
    const { analysis } = JSON.parse(output) as {
      readonly analysis: {
        readonly problems: ReadonlyArray<unknown>
        readonly entrypoints: Record<
          string,
          { readonly resolutions: Record<string, { readonly resolution?: { readonly fileName: string } }> }
        >
      }
    }
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { readonly exports: object }
    expect(analysis.problems).toEqual([])
    expect(Object.keys(analysis.entrypoints).sort()).toEqual(Object.keys(pkg.exports).sort())
    for (const [subpath, { resolutions }] of Object.entries(analysis.entrypoints)) {
      const found = Object.fromEntries(Object.entries(resolutions).map(([kind, r]) => [kind, r.resolution !== undefined]))
      expect({ subpath, found }).toEqual({
        subpath,
        found: { node10: true, "node16-cjs": true, "node16-esm": true, bundler: true }
      })
    }
  }, 120_000)
})
