import { defineConfig } from "tsup"

// ESM and CommonJS with declarations; esbuild inlines the snapshot data, so no format needs `fs` or JSON imports.
export default defineConfig({
  entry: {
    index: "src/index.ts",
    FinTest: "src/FinTest.ts",
    "node/index": "src/node/index.ts"
  },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "es2022",
  platform: "neutral",
  treeshake: true
})
