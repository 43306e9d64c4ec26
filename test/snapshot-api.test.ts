/**
 * The online parts of the snapshot script (`--from-api`, `--cross-check`), run in-process through `main` on the
 * in-memory HttpClient of `FinTest`: no network, no child process.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { CrossCheckReport } from "../scripts/lib/api.js"
import { main } from "../scripts/lib/main.js"
import { type Snapshot, SnapshotMeta } from "../scripts/lib/snapshot.js"
import * as FinTest from "../src/FinTest.js"

const created: Array<string> = []
afterAll(() => Promise.all(created.map((dir) => Fs.rm(dir, { recursive: true, force: true }))))
const tempDir = async () => {
  const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "effect-fin-snapshot-api-"))
  created.push(dir)
  return dir
}

const read = (path: string) => Fs.readFile(path, "utf8")
const readAll = async (dir: string) => {
  const out: Record<string, string> = {}
  for (const name of (await Fs.readdir(dir)).sort()) out[name] = await read(Path.join(dir, name))
  return out
}
/** A temporary --out holding a copy of the committed snapshot and its meta. */
const committedCopy = async () => {
  const dir = await tempDir()
  for (const name of ["subdivisions.json", "subdivisions.meta.json"]) {
    await Fs.copyFile(Path.join("data", name), Path.join(dir, name))
  }
  return dir
}
const exists = (path: string) => Fs.access(path).then(() => true, () => false)

const committed = JSON.parse(await Fs.readFile("data/subdivisions.json", "utf8")) as Snapshot
/** What the API would say for a country of the committed snapshot: codes and names only. */
const apiOf = (country: string) => (committed[country] ?? []).map((e) => ({ code: e.code, name: e.name }))

const env = {
  FIN_CLIENT_ID: "snapshot-client",
  FIN_CLIENT_SECRET: "snapshot-secret-value",
  FIN_BASE_URL: "https://sandbox.example.test"
}
const baseUrl = "http://127.0.0.1:4999"

type Served = Readonly<Record<string, ReadonlyArray<{ readonly code: string; readonly name: string }>>>

/**
 * `main` on an in-memory API: `served` per country ([] for the others), `replies` to answer some countries
 * otherwise. Returns the exit code, both outputs and every request the client sent.
 */
const runMain = async (
  args: ReadonlyArray<string>,
  options: {
    readonly served?: Served
    readonly replies?: Readonly<Record<string, FinTest.Handler>>
    readonly env?: Readonly<Record<string, string | undefined>>
    readonly isTTY?: boolean
    readonly bundledDir?: string
  } = {}
) => {
  const requests: Array<string> = []
  const token = FinTest.tokenHandler()
  const handler: FinTest.Handler = (request) => {
    requests.push(`${request.method} ${request.url}`)
    if (request.method === "POST" && request.path === "/v1/oauth/token") return token(request)
    const match = /^\/v1\/countries\/([A-Z]{3})\/subdivisions$/.exec(request.path)
    if (request.method !== "GET" || match === null) return FinTest.json(404, { message: "Resource not found" })
    const country = match[1]!
    const reply = options.replies?.[country]
    if (reply !== undefined) return reply(request)
    return FinTest.json(200, { data: { subdivisions: options.served?.[country] ?? [] } })
  }
  let stdout = ""
  let stderr = ""
  const code = await main(args, {
    env: options.env ?? env,
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    isTTY: options.isTTY ?? false,
    bundledDir: options.bundledDir,
    now: new Date("2025-03-01T00:00:00Z"),
    httpClient: FinTest.layerHttpClient(handler)
  })
  const subdivisionCalls = requests.filter((r) => r.includes("/subdivisions"))
  return { code, stdout, stderr, requests, subdivisionCalls }
}

const fromApi = (out: string, ...more: ReadonlyArray<string>) => [
  "--from-api",
  "--base-url",
  baseUrl,
  "--out",
  out,
  "--generated-at",
  "2025-01-01T00:00:00Z",
  ...more
]

describe("snapshot script, online", () => {
  describe("--from-api", () => {
    const served: Served = {
      USA: [{ code: "US-NY", name: "New York" }, { code: "US-CA", name: "California" }],
      FRA: [{ code: "FR-75C", name: "Paris" }],
      AZE: [{ code: "AZ-NX", name: "Naxçıvan" }, { code: "AZ-BAB", name: "Babək" }]
    }

    it("writes what the API served, records the API as source, prints progress lines", async () => {
      const out = await tempDir()
      // The mode of the environment is overridden: the snapshot script always asks the API.
      const result = await runMain(fromApi(out), { served, env: { ...env, FIN_SUBDIVISION_MODE: "offline" } })
      expect(result.stderr).not.toContain("Nothing was written")
      expect(result.code).toBe(0)

      const files = await readAll(out)
      expect(Object.keys(files)).toEqual(["subdivisions.json", "subdivisions.meta.json", "subdivisionsData.ts"])
      const written = JSON.parse(files["subdivisions.json"]!) as Snapshot
      expect(Object.keys(written)).toHaveLength(249)
      // Nothing to take types from in an empty folder: codes and names as served, sorted, type empty.
      expect(written["USA"]).toEqual([
        { code: "US-CA", name: "California", type: "" },
        { code: "US-NY", name: "New York", type: "" }
      ])
      expect(written["FRA"]).toEqual([{ code: "FR-75C", name: "Paris", type: "" }])
      expect(Object.entries(written).filter(([, list]) => list.length > 0).map(([c]) => c).sort()).toEqual([
        "AZE",
        "FRA",
        "USA"
      ])

      const meta = Schema.decodeUnknownSync(SnapshotMeta)(JSON.parse(files["subdivisions.meta.json"]!))
      expect(meta).toMatchObject({
        source: "api",
        sourceLocation: baseUrl,
        sourceVersion: "v1",
        sourceFiles: {},
        generatedAt: "2025-01-01T00:00:00.000Z",
        countries: 249,
        subdivisions: 5,
        countriesWithout: 246
      })
      // The module says where its data came from as the meta does (`Subdivisions.provenance` of a build on it).
      expect(files["subdivisionsData.ts"]).toContain(`source: "api",\n    version: "v1",\n    sha256: "${meta.sha256}"`)
      for (const text of [...Object.values(files), result.stdout, result.stderr]) {
        expect(text).not.toContain(env.FIN_CLIENT_SECRET)
      }

      // Every country once, from --base-url rather than FIN_BASE_URL, in online mode (nothing from the snapshot).
      expect(result.subdivisionCalls).toHaveLength(249)
      expect(new Set(result.subdivisionCalls).size).toBe(249)
      expect(result.requests.every((r) => r.includes(baseUrl))).toBe(true)
      expect(result.stdout).toContain(`Source: api v1 (${baseUrl}): 5 subdivisions, 3 of 249 countries`)
      expect(result.stderr.split("\n").filter((line) => line !== "")).toEqual([
        ...[25, 50, 75, 100, 125, 150, 175, 200, 225].map((n) => `Subdivisions from the API: ${n}/249`),
        "Subdivisions from the API: 249/249"
      ])
    })

    it("keeps type and parent from the snapshot in --out; --check exits 0 when up to date, 1 on differences", async () => {
      const out = await tempDir()
      await Fs.copyFile("data/subdivisions.json", Path.join(out, "subdivisions.json"))
      const all: Record<string, ReadonlyArray<{ code: string; name: string }>> = {}
      for (const country of Object.keys(committed)) all[country] = apiOf(country)

      // The same codes and names as the committed snapshot: the entries do not change, only meta and module are new.
      expect((await runMain(fromApi(out), { served: all })).code).toBe(0)
      expect(await read(Path.join(out, "subdivisions.json"))).toBe(await read("data/subdivisions.json"))
      const written = JSON.parse(await read(Path.join(out, "subdivisions.json"))) as Snapshot
      expect(written["AZE"]!.find((e) => e.code === "AZ-BAB")).toEqual({
        code: "AZ-BAB",
        name: "Babək",
        type: "Rayon",
        parent: "AZ-NX"
      })

      const check = await runMain(fromApi(out, "--check"), { served: all })
      expect(check.code).toBe(0)
      expect(check.stdout).toContain("Check: the committed snapshot is up to date.")

      const before = await readAll(out)
      const changed = {
        ...all,
        USA: [...all["USA"]!.filter((e) => e.code !== "US-DC"), { code: "US-XX", name: "Nowhere" }].map((e) =>
          e.code === "US-TX" ? { ...e, name: "Tejas" } : e
        )
      }
      const stale = await runMain(fromApi(out, "--check"), { served: changed })
      expect(stale.code).toBe(1)
      expect(stale.stdout).toContain("USA  +1 -1 ~1")
      expect(stale.stdout).toContain("  ~ US-TX   Texas -> Tejas")
      expect(stale.stdout).toContain("Check: the committed snapshot differs from the source.")
      expect(await readAll(out)).toEqual(before)
      // Installed, --out the package's data/ (which ships no generated module): --check does not ask for the module.
      await Fs.rm(Path.join(out, "subdivisionsData.ts"))
      expect((await runMain(fromApi(out, "--check"), { served: all, bundledDir: out })).code).toBe(0)
      expect((await runMain(fromApi(out, "--check"), { served: all })).code).toBe(1)
    })

    it("into an empty --out, an API answering [] where the bundled snapshot has entries is refused unless allowed", async () => {
      const out = await tempDir()
      const args = fromApi(out)
      // The installed command's bundled data/, or the committed one `npm run snapshot` names.
      const run = (more: ReadonlyArray<string>, dir: "bundledDir" | "baselineDir" = "bundledDir") => {
        const token = FinTest.tokenHandler()
        let stderr = ""
        return main([...args, ...more], {
          env,
          stdout: () => undefined,
          stderr: (text) => {
            stderr += text
          },
          isTTY: false,
          [dir]: "data",
          httpClient: FinTest.layerHttpClient((request) =>
            request.method === "POST" ? token(request) : FinTest.json(200, { data: { subdivisions: [] } })
          )
        }).then((code) => ({ code, stderr }))
      }
      const refused = await run([])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain("the source lists no subdivisions for 200 countries")
      // Nothing is at --out yet: the counts are the bundled snapshot's, and the refusal says so.
      expect(refused.stderr).toContain("that the bundled snapshot (none is in the output directory yet) has some for")
      expect(await Fs.readdir(out)).toEqual([])
      const fromRepository = await run([], "baselineDir")
      expect(fromRepository.code).toBe(2)
      expect(fromRepository.stderr).toContain("that the committed snapshot (none is in the output directory yet) has")
      expect(await Fs.readdir(out)).toEqual([])
      expect((await run(["--allow-emptied"])).code).toBe(0)
    })

    it("a snapshot in --out that cannot be read stops the run before any request: its types and parents would be lost", async () => {
      const out = await committedCopy()
      await Fs.writeFile(Path.join(out, "subdivisions.json"), "{\"USA\": [")
      const before = await readAll(out)
      const result = await runMain(fromApi(out), { served })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(`${Path.join(out, "subdivisions.json")}: `)
      expect(result.stderr).toContain("Nothing was written.")
      expect(result.subdivisionCalls).toEqual([])
      expect(await readAll(out)).toEqual(before)
      // One that is there but cannot be read at all (a directory in its place) stops it too.
      const odd = await tempDir()
      await Fs.mkdir(Path.join(odd, "subdivisions.json"))
      const unreadable = await runMain(fromApi(odd), { served })
      expect(unreadable.code).toBe(2)
      expect(unreadable.stderr).toContain(`${Path.join(odd, "subdivisions.json")}: cannot be read (EISDIR)`)
      expect(unreadable.subdivisionCalls).toEqual([])
    })

    it("a country refused with 401 stops the run, names the country and the tag, writes nothing", async () => {
      const out = await committedCopy()
      const before = await readAll(out)

      const refused = await runMain(fromApi(out), {
        served: { ...served, USA: [{ code: "US-ZZ", name: "New" }] },
        replies: { FRA: () => FinTest.json(401, { message: "Authentication failed" }) }
      })
      expect(refused.code).toBe(2)
      const lines = refused.stderr.split("\n").filter((line) => line !== "" && !line.startsWith("Subdivisions from"))
      expect(lines).toEqual([
        `${baseUrl} FRA: AuthenticationError: Authentication failed (401) on GET /v1/countries/FRA/subdivisions: ` +
        "Authentication failed (2 attempts)",
        "Nothing was written."
      ])
      expect(refused.stdout).toBe("")
      expect(await readAll(out)).toEqual(before)
    })

    it("a country answering 503 after every retry stops the run; an invalid answer too", async () => {
      const out = await committedCopy()
      const before = await readAll(out)

      let attempts = 0
      const unavailable = await runMain(fromApi(out), {
        served,
        // Never the offline snapshot in place of a failing country, whatever the environment says.
        env: { ...env, FIN_SUBDIVISION_MODE: "fallback" },
        replies: {
          // Retry-After: 0 keeps the retries instant.
          DEU: () => {
            attempts++
            return FinTest.json(503, { message: "Service Unavailable" }, { "retry-after": "0" })
          }
        }
      })
      expect(unavailable.code).toBe(2)
      expect(unavailable.stderr).toContain(`${baseUrl} DEU: ApiError: The service answered 503 on GET /v1/countries/DEU/subdivisions: Service Unavailable (3 attempts)\n`)
      expect(unavailable.stderr).toContain("Nothing was written.")
      expect(attempts).toBe(3)

      const foreign = await runMain(fromApi(out), { served: { ...served, CAN: [{ code: "US-CA", name: "California" }] } })
      expect(foreign.code).toBe(2)
      expect(foreign.stderr).toContain(
        `${baseUrl} CAN: ResponseDecodeError: Unexpected response from GET /v1/countries/CAN/subdivisions: ` +
          `data.subdivisions[0].code: expected a code of CA (CA-...)`
      )
      expect(await readAll(out)).toEqual(before)
    })

    it("draws a progress bar on a terminal", async () => {
      const out = await tempDir()
      const result = await runMain(fromApi(out, "--dry-run", "--concurrency", "3"), { served, isTTY: true })
      expect(result.code).toBe(0)
      expect(result.stderr.startsWith("\rSubdivisions from the API [")).toBe(true)
      expect(result.stderr.endsWith(`[${"#".repeat(30)}] 249/249\n`)).toBe(true)
      expect(result.stderr.split("\n")).toHaveLength(2)
      expect(await Fs.readdir(out)).toEqual([])
    })

    it("configuration errors exit 2 before any request", async () => {
      const out = await tempDir()
      const missing = await runMain(fromApi(out), { env: { FIN_CLIENT_SECRET: "x" } })
      expect(missing.code).toBe(2)
      expect(missing.stderr).toBe("effect-fin: ConfigError: FIN_CLIENT_ID is not set\nNothing was written.\n")
      const insecure = await runMain(["--from-api", "--base-url", "http://api.example.test", "--out", out])
      expect(insecure.code).toBe(2)
      expect(insecure.stderr).toContain("baseUrl must use https")
      // Every problem at once, each named by its variable, as the rest of the command line does.
      const several = await runMain(fromApi(out), {
        env: { FIN_CLIENT_ID: "id", FIN_CLIENT_SECRET: "s3cr3t-value\n", FIN_MAX_RETRIES: "11", FIN_TIMEOUT: "30" }
      })
      expect(several.code).toBe(2)
      const told = several.stderr.split("\n")[0]!
      for (const variable of ["FIN_CLIENT_SECRET", "FIN_MAX_RETRIES", "FIN_TIMEOUT"]) expect(told, variable).toContain(variable)
      expect(several.stderr).not.toContain("s3cr3t-value")
      // What the script replaces is not held against it: --base-url over FIN_BASE_URL, "online" over
      // FIN_SUBDIVISION_MODE.
      const replaced = await runMain(fromApi(out, "--dry-run"), {
        served,
        env: { ...env, FIN_BASE_URL: "http://insecure.example", FIN_SUBDIVISION_MODE: "bogus" }
      })
      expect([replaced.code, replaced.stderr.split("\n").filter((line) => line.includes("Error"))]).toEqual([0, []])
      expect([...missing.requests, ...insecure.requests, ...several.requests]).toEqual([])
      expect(await Fs.readdir(out)).toEqual([])
    })
  })

  describe("--cross-check", () => {
    const crossCheck = (report: string, ...more: ReadonlyArray<string>) => [
      "--cross-check",
      "--base-url",
      baseUrl,
      "--report",
      report,
      "--generated-at",
      "2025-01-01T00:00:00Z",
      ...more
    ]
    const readReport = async (path: string) =>
      Schema.decodeUnknownSync(CrossCheckReport)(JSON.parse(await read(path)))

    // Through a symlink too: the report is written through one, to the file it names.
    it("refuses a report path that is the snapshot or its meta, before asking the API, and leaves both as they were", async () => {
      const out = await committedCopy()
      const link = Path.join(await tempDir(), "latest.json")
      await Fs.symlink(Path.join(out, "subdivisions.json"), link)
      const before = await readAll(out)
      for (const report of [Path.join(out, "subdivisions.json"), Path.join(out, "subdivisions.meta.json"), link]) {
        const result = await runMain(crossCheck(report, "--out", out, "--countries", "USA"), {
          served: { USA: apiOf("USA") }
        })
        expect(result.code).toBe(2)
        expect(result.stderr).toContain("the report would replace it")
        expect(result.subdivisionCalls).toEqual([])
        expect(await readAll(out)).toEqual(before)
      }
    })

    it("counts missing, extra, renamed and invalid codes against the committed snapshot, writes the report, exits 1", async () => {
      const report = Path.join(await tempDir(), "report.json")
      const usa = [
        ...apiOf("USA").filter((e) => e.code !== "US-DC" && e.code !== "US-UM"),
        { code: "US-XX", name: "Nowhere" },
        { code: "US-YY", name: "Elsewhere" },
        { code: "us-ny", name: "New York" }
      ].map((e) => (e.code === "US-CA" ? { ...e, name: "Kalifornien" } : e))
      const result = await runMain(crossCheck(report, "--countries", "USA,CAN,ABW"), {
        served: { USA: usa, CAN: apiOf("CAN") }
      })
      expect(result.code).toBe(1)
      expect(result.subdivisionCalls.map((r) => r.replace(baseUrl, ""))).toEqual(
        expect.arrayContaining(["GET /v1/countries/USA/subdivisions", "GET /v1/countries/CAN/subdivisions"])
      )
      expect(result.subdivisionCalls).toHaveLength(3)
      const lines = result.stdout.split("\n")
      expect(lines.slice(0, 3)).toEqual([
        "country  missing  extra  renamed  invalid  first codes",
        "-------  -------  -----  -------  -------  -------------------------------------------",
        `USA      2        2      1        1        +US-XX +US-YY -US-DC -US-UM ~US-CA !"us-ny"`
      ])
      expect(result.stdout).toContain(
        "1 of 3 countries disagree with data/subdivisions.json: 2 missing, 2 extra, 1 renamed, 1 invalid."
      )
      expect(result.stdout).toContain(`Report: ${report}`)

      const written = await readReport(report)
      expect(written).toMatchObject({
        generatedAt: "2025-01-01T00:00:00.000Z",
        baseUrl,
        snapshot: "data/subdivisions.json",
        checked: ["ABW", "CAN", "USA"],
        agree: false,
        totals: { countries: 1, missing: 2, extra: 2, renamed: 1, invalid: 1 }
      })
      expect(written.countries).toEqual([{
        country: "USA",
        missing: [{ code: "US-XX", name: "Nowhere" }, { code: "US-YY", name: "Elsewhere" }],
        extra: committed["USA"]!.filter((e) => e.code === "US-DC" || e.code === "US-UM"),
        renamed: [{ code: "US-CA", snapshotName: "California", apiName: "Kalifornien" }],
        invalid: [{ code: "us-ny", name: "New York", reason: "malformed_code" }]
      }])
      expect(await read(report)).not.toContain(env.FIN_CLIENT_SECRET)
    })

    it("exits 0 when every country agrees, and asks all 249 without --countries", async () => {
      const dir = await tempDir()
      const all: Record<string, ReadonlyArray<{ code: string; name: string }>> = {}
      for (const country of Object.keys(committed)) all[country] = apiOf(country)

      const some = await runMain(crossCheck(Path.join(dir, "some.json"), "--countries", "USA,CAN"), { served: all })
      expect(some.code).toBe(0)
      expect(some.stdout).toContain("All 2 countries agree with data/subdivisions.json.")
      const one = await runMain(crossCheck(Path.join(dir, "one.json"), "--countries", "FRA"), { served: all })
      expect(one.stdout).toContain("The country checked agrees with data/subdivisions.json.")
      expect(await readReport(Path.join(dir, "some.json"))).toMatchObject({
        checked: ["CAN", "USA"],
        agree: true,
        totals: { countries: 0, missing: 0, extra: 0, renamed: 0 },
        countries: []
      })

      // Against a snapshot of our own in --out, with progress lines.
      await Fs.copyFile("data/subdivisions.json", Path.join(dir, "subdivisions.json"))
      await Fs.copyFile("data/subdivisions.meta.json", Path.join(dir, "subdivisions.meta.json"))
      const every = await runMain(crossCheck(Path.join(dir, "all.json"), "--out", dir), { served: all })
      expect(every.code).toBe(0)
      expect(every.subdivisionCalls).toHaveLength(249)
      expect(every.stdout).toContain("All 249 countries agree with")
      expect(every.stderr).toContain("Subdivisions from the API: 249/249\n")
      expect((await readReport(Path.join(dir, "all.json"))).checked).toHaveLength(249)
    })

    it("a data file its meta does not describe (edited, half written) exits 2 before anything is sent", async () => {
      const dir = await tempDir()
      const report = Path.join(dir, "report.json")
      const data = await read("data/subdivisions.json")
      await Fs.writeFile(Path.join(dir, "subdivisions.json"), data.replace(`{"code":"US-CA"`, `{"code":"US-ZZ","name":"Added by hand","type":"State"},\n    {"code":"US-CA"`))
      await Fs.copyFile("data/subdivisions.meta.json", Path.join(dir, "subdivisions.meta.json"))
      const edited = await runMain(crossCheck(report, "--countries", "USA", "--out", dir), { served: {} })
      expect(edited.code).toBe(2)
      expect(edited.stderr).toContain("is not the file")
      expect(edited.stderr).toContain("another SHA-256")
      expect(edited.subdivisionCalls).toEqual([])
      await Fs.rm(Path.join(dir, "subdivisions.meta.json"))
      const noMeta = await runMain(crossCheck(report, "--countries", "USA", "--out", dir), { served: {} })
      expect(noMeta.code).toBe(2)
      expect(noMeta.subdivisionCalls).toEqual([])
      await expect(Fs.access(report)).rejects.toThrow()
    })

    it("invalid --countries exit 2 with nothing sent and no report", async () => {
      const report = Path.join(await tempDir(), "report.json")
      const result = await runMain(crossCheck(report, "--countries", "USA,XXX,usa,US"), { served: {} })
      expect(result.code).toBe(2)
      expect(result.stderr.split("\n")[0]).toBe(
        "--countries: not country codes of the service: \"XXX\", \"usa\", \"US\" " +
          "(expected upper-case ISO 3166-1 alpha-3 codes, e.g. USA,CAN)"
      )
      expect(result.requests).toEqual([])
      expect(await exists(report)).toBe(false)

      const empty = await runMain(crossCheck(report, "--countries", ","), { served: {} })
      expect(empty.code).toBe(2)
      expect(empty.requests).toEqual([])
    })

    it("a failing country exits 2 with no report", async () => {
      const report = Path.join(await tempDir(), "report.json")
      const result = await runMain(crossCheck(report, "--countries", "USA,CAN"), {
        served: { USA: apiOf("USA") },
        replies: { CAN: () => FinTest.json(403, { message: "Forbidden" }) }
      })
      expect(result.code).toBe(2)
      expect(result.stderr).toBe(`${baseUrl} CAN: ApiError: The service answered 403 on GET /v1/countries/CAN/subdivisions: Forbidden (1 attempt)\nNo report was written.\n`)
      expect(await exists(report)).toBe(false)
    })

    // A page of a longer list would make every code past it look missing from the API.
    it("a country answering a page of a longer list exits 2 with no report, as crossCheck refuses it", async () => {
      const report = Path.join(await tempDir(), "report.json")
      const page = apiOf("USA").slice(0, 10)
      const pagination = { current_page: 1, total_page: 6, total: 57 }
      const result = await runMain(crossCheck(report, "--countries", "USA"), {
        replies: { USA: () => FinTest.json(200, { data: { subdivisions: page, pagination } }) }
      })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(`${baseUrl} USA: ResponseDecodeError: `)
      expect(result.stderr).toContain("No report was written.")
      expect(await exists(report)).toBe(false)
    })

    it("a report that cannot be written is said to be the report, and exits 2", async () => {
      // A folder where the report file should go: the rename onto it fails.
      const report = await tempDir()
      const result = await runMain(crossCheck(report, "--countries", "USA"), { served: { USA: apiOf("USA") } })
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(/^cannot write the report \(EISDIR.+\)\nNo report was written\.\n/m)
      expect(await Fs.readdir(report)).toEqual([])
      // Its temporary file (beside the target) is gone too.
      const temps = (await Fs.readdir(Path.dirname(report))).filter((name) => name.startsWith(`.${Path.basename(report)}.`))
      expect(temps).toEqual([])
    })
  })
})
