import { defineConfig } from "tsup"

const shared = {
  dts: true,
  sourcemap: true,
  target: "es2022",
  treeshake: true
} as const

// ESM and CommonJS with declarations; esbuild inlines the snapshot data, so no format needs `fs` or JSON imports.
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
      "emulator/index": "src/emulator/index.ts"
    },
    format: ["esm", "cjs"],
    // CommonJS too: each entry would otherwise carry its own copy of every class, and `instanceof` would fail
    // between `effect-fin` and `effect-fin/test`.
    splitting: true,
    clean: true,
    platform: "neutral"
  },
  {
    ...shared,
    entry: { "cli/bin": "src/cli/bin.ts" },
    format: ["esm"],
    dts: false,
    platform: "node"
  }
])
