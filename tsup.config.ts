import * as Fs from "node:fs/promises"
import { defineConfig, type Options } from "tsup"

// tsup's `treeshake` (a rollup pass, which CommonJS code splitting needs: without it tsup's other pass breaks
// generators) leaves rollup's sourceMappingURL comment in each file and tsup then appends its own: keep one.
const oneSourceMapComment: NonNullable<Options["plugins"]>[number] = {
  name: "one-source-map-comment",
  buildEnd: async ({ writtenFiles }) => {
    for (const { name } of writtenFiles) {
      if (!/\.c?js$/.test(name)) continue
      const code = await Fs.readFile(name, "utf8")
      const deduped = code.replace(/(\/\/# sourceMappingURL=\S+)\n\1$/, "$1")
      if (deduped !== code) await Fs.writeFile(name, deduped)
    }
  }
}

// Declarations come from tsc, one file per module (tsconfig.build.json, scripts/dts.ts), not from tsup's bundler.
const shared = {
  // `node:crypto` kept as written (the default drops the prefix for Node < 14.18): a bare `crypto` does not resolve
  // in runtimes that offer Node's modules under `node:` only.
  removeNodeProtocol: false,
  sourcemap: true,
  target: "es2022",
  treeshake: true,
  plugins: [oneSourceMapComment] as Array<typeof oneSourceMapComment>
} as const

// The modules with a path of their own in package.json's `exports` ("effect-fin/FeeService", ...).
const modules = [
  "CountryCode",
  "FeeService",
  "FinClient",
  "FinConfig",
  "FinError",
  "HttpTransport",
  "SubdivisionService",
  "Subdivisions",
  "TokenProvider",
  "TokenStore",
  "Webhooks",
  "node/NodeWebhookCrypto",
  "node/UndiciHttpClient",
  "redis/RedisTokenStore",
  "redis/RedisWebhookDedupeStore",
  "emulator/Emulator"
]

// ESM and CommonJS; esbuild inlines the snapshot data, so no format needs `fs` or JSON imports.
// The executable is ESM only: it checks its optional peers with top-level await.
export default defineConfig([
  {
    ...shared,
    entry: {
      index: "src/index.ts",
      FinTest: "src/FinTest.ts",
      "node/index": "src/node/index.ts",
      "redis/index": "src/redis/index.ts",
      "cli/index": "src/cli/main.ts",
      "emulator/index": "src/emulator/index.ts",
      // Each module on its own path too, as effect's are: a consumer's emitted declarations name effect-fin's types
      // through them (`import("effect-fin/FinError").ApiError`); a namespace of the main entry cannot be named so.
      ...Object.fromEntries(modules.map((module) => [module, `src/${module}.ts`]))
    },
    format: ["esm", "cjs"],
    // CommonJS too: each entry would otherwise carry its own copy of every class, and `instanceof` would fail
    // between `effect-fin` and `effect-fin/test`.
    splitting: true,
    clean: true,
    platform: "neutral",
    // Node's own modules (of effect-fin/node, /redis, /emulator) stay imports; a neutral build does not know them.
    external: [/^node:/],
    // The CommonJS build loads an optional peer (UndiciHttpClient's @effect/platform-node, which ships CommonJS too)
    // with `require` where the source writes `import()`: a runner that loads CommonJS in a VM context of its own
    // (Jest, without --experimental-vm-modules) refuses a dynamic import.
    esbuildOptions: (options, context) => {
      if (context.format === "cjs") options.supported = { ...options.supported, "dynamic-import": false }
    }
  },
  {
    ...shared,
    entry: { "cli/bin": "src/cli/bin.ts" },
    format: ["esm"],
    platform: "node"
  }
])
