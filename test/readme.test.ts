import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { runBundlesBench } from "../bench/bundles.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const readme = readFileSync(join(root, "README.md"), "utf8")

describe("README", () => {
  it("gives the set-up as npm ci, then npm start (the main job), then npm test", () => {
    expect(readme).toContain("```sh\nnpm ci\nnpm start\nnpm test\n```")
  })

  // GitHub's anchors: a heading lower-cased, its punctuation dropped, its spaces as hyphens (code blocks hold none).
  it("links only to headings it has, and its contents list every section", () => {
    const prose = readme.replace(/```[\s\S]*?```/g, "")
    const headings = [...prose.matchAll(/^#{2,3} (.+)$/gm)].map(([, title]) => title!)
    const slug = (title: string) => title.toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, "").replaceAll(" ", "-")
    const anchors = new Set(headings.map(slug))
    const links = [...prose.matchAll(/\]\(#([^)]+)\)/g)].map(([, anchor]) => anchor!)
    expect(links.filter((anchor) => !anchors.has(anchor))).toEqual([])
    const sections = headings.filter((title) => title !== "Contents").map(slug)
    expect(sections.filter((anchor) => !links.includes(anchor))).toEqual([])
  })

  // The reference pages under docs/: every link from the README into them, between them and within one names a file
  // that exists and, with an #anchor, a heading of that file (the slug rule above); and the README links every page.
  it("links to docs pages, and within and between them, only to headings they have; and links every page", () => {
    const slug = (title: string) => title.toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, "").replaceAll(" ", "-")
    const prose = (markdown: string) => markdown.replace(/```[\s\S]*?```/g, "")
    const pages = readdirSync(join(root, "docs")).filter((file) => file.endsWith(".md")).map((file) => `docs/${file}`)
    expect(pages.length).toBeGreaterThan(0)
    const files = new Map(["README.md", ...pages].map((file) => [file, readFileSync(join(root, file), "utf8")]))
    const anchorsOf = new Map([...files].map(([file, text]) => {
      const slugs = [...prose(text).matchAll(/^#{1,6} (.+)$/gm)].map(([, title]) => slug(title!))
      // Two headings of one slug would take GitHub's "-1" suffix, which this rule does not give.
      expect(slugs.filter((anchor, i) => slugs.indexOf(anchor) !== i), `${file}: headings alike`).toEqual([])
      return [file, new Set(slugs)]
    }))
    const broken: Array<string> = []
    const linked = new Set<string>()
    for (const [file, text] of files) {
      for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue // an absolute URL
        const [path, anchor] = target!.split("#") as [string, string | undefined]
        const to = path === "" ? file : normalize(relative(root, join(root, dirname(file), path))).replaceAll("\\", "/")
        if (file === "README.md") linked.add(to)
        if (!to.startsWith("docs/") && to !== "README.md") continue // README to README is checked above
        if (file === "README.md" && path === "") continue
        if (!files.has(to)) broken.push(`${file}: ${target} (no such file)`)
        else if (anchor !== undefined && !anchorsOf.get(to)!.has(anchor)) broken.push(`${file}: ${target}`)
      }
    }
    expect(broken).toEqual([])
    expect(pages.filter((page) => !linked.has(page))).toEqual([])
  })

  // Install: "In the core only `src/internal/http.ts` touches the platform's HTTP client" (a port of the calls to the
  // service changes one module). The test kit, the Node and command-line entries and the emulator are not the core,
  // and the webhook handler's server modules are not the client: the README names them as the rest of a port.
  it("holds to its claim that in the core only src/internal/http.ts imports the platform's HTTP client", () => {
    expect(readme).toContain("In the core only\n`src/internal/http.ts` touches the platform's HTTP client")
    const notCore = /^(FinTest\.ts|internal\/http\.ts|node\/|cli\/|emulator\/)/
    const client = /from "@effect\/platform(-node)?\/(HttpClient\w*|HttpBody|HttpTraceContext|\w*HttpClient)"/
    const files = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !notCore.test(file.replaceAll("\\", "/")))
    expect(files.length).toBeGreaterThan(20)
    expect(files.filter((file) => client.test(readFileSync(join(root, "src", file), "utf8")))).toEqual([])
  })

  // Install: what effect-fin adds to a bundle, as `npm run bench:bundles` measures it (esbuild, in memory: a second).
  it("gives the bundle sizes bench/bundles.ts measures, each within 5%", async () => {
    const [, snapshot, client, feePath] = (
      /\(about (\d+) KB of the (\d+) KB effect-fin adds[\s\S]*?the fee path alone, about (\d+) KB/.exec(readme) ?? []
    ).map(Number)
    const [fees, whole] = await runBundlesBench()
    const figures: ReadonlyArray<readonly [string, number | undefined, number]> = [
      ["the fee path alone", feePath, fees!.bytes],
      ["FinClient", client, whole!.bytes],
      ["its snapshot", snapshot, whole!.snapshotBytes]
    ]
    for (const [name, said, bytes] of figures) {
      expect(Math.abs((said ?? 0) * 1000 - bytes) / bytes, `${name}: README ${said} KB, measured ${bytes} B`)
        .toBeLessThanOrEqual(0.05)
    }
  })

  // `npm install ioredis@N` must install beside @effect/platform-node, whose @effect/experimental has ioredis as a peer.
  it("tells to install an ioredis that @effect/platform-node's peers accept", () => {
    const [, major] = /^npm install ioredis@(\d+)$/m.exec(readme) ?? []
    const experimental = JSON.parse(readFileSync(join(root, "node_modules/@effect/experimental/package.json"), "utf8"))
    const majors = String(experimental.peerDependencies.ioredis).split("||").map((range) => /\^(\d+)/.exec(range)?.[1])
    expect(majors).toContain(major)
  })

  // Every TypeScript block of the README and docs/ is type-checked by npm test's tsc: an example shown whole
  // (examples/*.ts, the tests below), or a block held verbatim in examples/docs/, whose files add what the text
  // says the reader has (imports, the values of the example before it).
  it("shows only TypeScript that an example or examples/docs/ holds verbatim", () => {
    const examples = readdirSync(join(root, "examples")).filter((file) => file.endsWith(".ts"))
      .map((file) => readFileSync(join(root, "examples", file), "utf8"))
    const held = readdirSync(join(root, "examples", "docs")).filter((file) => file.endsWith(".ts"))
      .map((file) => readFileSync(join(root, "examples", "docs", file), "utf8"))
    const pages = ["README.md", ...readdirSync(join(root, "docs")).filter((file) => file.endsWith(".md"))
      .map((file) => `docs/${file}`)]
    const unchecked = pages.flatMap((page) =>
      [...readFileSync(join(root, page), "utf8").matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```/gm)]
        .map(([, block]) => block!)
        .filter((block) => !examples.includes(block) && !held.some((file) => file.includes(`\n${block}`)))
        .map((block) => `${page}: ${block.split("\n")[0]}`)
    )
    expect(unchecked).toEqual([])
  })

  it("shows examples/webhook-server.ts verbatim (type-checked by npm test)", () => {
    const example = readFileSync(join(root, "examples", "webhook-server.ts"), "utf8")
    expect(/### Mounting it in an HttpRouter\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
  })

  it("shows examples/redis.ts verbatim (type-checked by npm test)", () => {
    const example = readFileSync(join(root, "examples", "redis.ts"), "utf8")
    expect(/### Wiring it\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
  })

  it("shows examples/testing.test.ts verbatim (run by npm test)", () => {
    const example = readFileSync(join(root, "examples", "testing.test.ts"), "utf8")
    expect(/## Testing your programs\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
  })

  it("shows examples/httpapi.ts verbatim (run by examples/httpapi.test.ts)", () => {
    const example = readFileSync(join(root, "examples", "httpapi.ts"), "utf8")
    expect(/## Behind your own HttpApi\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
  })

  it("shows examples/webhook.test.ts verbatim (run by npm test)", () => {
    const example = readFileSync(join(root, "examples", "webhook.test.ts"), "utf8")
    expect(/### Testing your webhook handler\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
  })

  it("shows examples/emulator.ts verbatim, and it runs as written", () => {
    const example = readFileSync(join(root, "examples", "emulator.ts"), "utf8")
    expect(/## Local emulator[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
    const output = execFileSync(join(root, "node_modules", ".bin", "tsx"), ["examples/emulator.ts"], {
      cwd: root,
      encoding: "utf8"
    })
    expect(output.trim()).toBe("142.1 CAD")
  })

  it("shows examples/promise.ts verbatim, and it runs as written", () => {
    const example = readFileSync(join(root, "examples", "promise.ts"), "utf8")
    expect(/### From Promise code[^\n]*\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
    const output = execFileSync(join(root, "node_modules", ".bin", "tsx"), ["examples/promise.ts"], {
      cwd: root,
      encoding: "utf8"
    })
    expect(output.trim().split("\n")).toEqual(["142.1 CAD", "refused: source_amount, destination_currency", "aborted"])
  })

  it("shows examples/webhook-promise.ts verbatim, and it runs as written: dispose() waits for the handler", () => {
    const example = readFileSync(join(root, "examples", "webhook-promise.ts"), "utf8")
    expect(/### In an Express or node:http server\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(example)
    const output = execFileSync(join(root, "node_modules", ".bin", "tsx"), ["examples/webhook-promise.ts"], {
      cwd: root,
      encoding: "utf8"
    })
    // Effect's log lines (the Info line saying no shared store is given) aside.
    expect(output.trim().split("\n").filter((line) => !line.startsWith("timestamp="))).toEqual([
      "handled 40061557-f125-4b39-97d6-c16a0f1230c1",
      "stopped; the delivery was answered 200"
    ])
  })

  it("shows examples/quickstart.ts verbatim, and it runs as written", () => {
    const example = readFileSync(join(root, "examples", "quickstart.ts"), "utf8")
    const block = /## Quick start\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
    expect(block).toBe(example)
    expect(example.trim().split("\n").length).toBeLessThanOrEqual(15)
    const env: NodeJS.ProcessEnv = { ...process.env }
    delete env.FIN_CLIENT_ID
    const output = execFileSync(join(root, "node_modules", ".bin", "tsx"), ["examples/quickstart.ts"], {
      cwd: root,
      env,
      encoding: "utf8"
    })
    expect(output.trim()).toBe("100 USD -> 134.95 CAD (fee 1.5)")
  })
})
