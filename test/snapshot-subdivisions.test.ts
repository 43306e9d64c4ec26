import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { parseCommandLine } from "../scripts/lib/cli.js"
import { main } from "../scripts/lib/main.js"
import {
  buildFromIsoCodes,
  crossCheck,
  crossCheckCountry,
  diffSnapshots,
  type DownloadLimits,
  formatDiff,
  fromApi,
  fromIsoCodes,
  generatedModule,
  publishedInputs,
  readSourceFile,
  run,
  type RunOptions,
  type Snapshot,
  serializeSnapshot,
  SnapshotMeta,
  writeFilesAtomically
} from "../scripts/lib/snapshot.js"
import * as Emulator from "../src/emulator/Emulator.js"

const inputs = "data/iso-codes-4.20"
const read = (path: string) => Fs.readFile(path, "utf8")
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

const loadInputs = async () => ({
  iso31661: JSON.parse(await read(`${inputs}/iso_3166-1.json`)) as { "3166-1": Array<Record<string, string>> },
  iso31662: JSON.parse(await read(`${inputs}/iso_3166-2.json`)) as { "3166-2": Array<Record<string, string>> },
  label31661: "iso_3166-1.json",
  label31662: "iso_3166-2.json"
})

const buildOrThrow = (input: Parameters<typeof buildFromIsoCodes>[0]) => {
  const built = buildFromIsoCodes(input)
  if (Either.isLeft(built)) throw new Error(built.left.message)
  return built.right.snapshot
}

// Every temporary folder, removed once the file is done.
const created: Array<string> = []
afterAll(() => Promise.all(created.map((dir) => Fs.rm(dir, { recursive: true, force: true }))))
const mkdtemp = async (prefix: string) => {
  const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), prefix))
  created.push(dir)
  return dir
}

const tempDir = () => Effect.promise(() => mkdtemp("effect-fin-snapshot-"))

const options = (outDir: string, source = fromIsoCodes(inputs, "4.20")): RunOptions & { output: Array<string> } => {
  const output: Array<string> = []
  return {
    source,
    outDir,
    modulePath: Path.join(outDir, "subdivisionsData.ts"),
    generatedAt: "2025-01-01T00:00:00.000Z",
    check: false,
    dryRun: false,
    log: (text) => output.push(text),
    output
  }
}

// A snapshot written from the pinned inputs into a fresh directory, and its data file as written.
const written = Effect.gen(function*() {
  const dir = yield* tempDir()
  yield* run(options(dir))
  const dataPath = Path.join(dir, "subdivisions.json")
  return { dir, dataPath, committed: yield* Effect.promise(() => read(dataPath)) }
})

const listDir = (dir: string) => Effect.promise(() => Fs.readdir(dir).then((names) => names.sort()))
const readAll = (dir: string) =>
  Effect.promise(async () => {
    const out: Record<string, string> = {}
    for (const name of await Fs.readdir(dir)) out[name] = await read(Path.join(dir, name))
    return out
  })

// A copy of the inputs in a temp folder, with iso_3166-2.json replaced by `broken`.
const brokenSource = (broken: string) =>
  Effect.promise(async () => {
    const dir = await mkdtemp("effect-fin-source-")
    await Fs.copyFile(`${inputs}/iso_3166-1.json`, Path.join(dir, "iso_3166-1.json"))
    await Fs.writeFile(Path.join(dir, "iso_3166-2.json"), broken)
    return dir
  })

const script = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      Path.resolve("node_modules/.bin/tsx"),
      ["scripts/snapshot-subdivisions.ts", ...args],
      { env: { ...process.env, SOURCE_DATE_EPOCH: "", ...env } },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr })
    )
  })

const entry = (code: string, name: string, type = "State") => ({ code, name, type })

describe("snapshot-subdivisions", () => {
  describe("building", () => {
    it("gives the same bytes for the same input, whatever its order", async () => {
      const input = await loadInputs()
      const first = serializeSnapshot(buildOrThrow(input))
      expect(serializeSnapshot(buildOrThrow(input))).toBe(first)
      const shuffled = {
        ...input,
        iso31661: { "3166-1": [...input.iso31661["3166-1"]].reverse() },
        iso31662: {
          "3166-2": [...input.iso31662["3166-2"]].reverse().map((e) =>
            Object.fromEntries(Object.entries(e).reverse())
          )
        }
      }
      expect(serializeSnapshot(buildOrThrow(shuffled))).toBe(first)
      const origin = { source: "iso-codes", version: "4.20" }
      expect(generatedModule(first, origin)).toBe(generatedModule(serializeSnapshot(buildOrThrow(shuffled)), origin))
      // Accents spelled as combining marks (NFD) give the same bytes: names are written in NFC.
      const decomposed = {
        ...input,
        iso31662: { "3166-2": input.iso31662["3166-2"].map((e) => ({ ...e, name: String(e["name"]).normalize("NFD") })) }
      }
      expect(serializeSnapshot(buildOrThrow(decomposed))).toBe(first)
    })

    it("the committed snapshot, meta and module are what the committed inputs give", async () => {
      const dataText = serializeSnapshot(buildOrThrow(await loadInputs()))
      const committed = await read("data/subdivisions.json")
      expect(committed).toBe(dataText)
      const meta = Schema.decodeUnknownSync(SnapshotMeta)(JSON.parse(await read("data/subdivisions.meta.json")))
      expect(await read("src/internal/subdivisionsData.ts"))
        .toBe(generatedModule(committed, { source: meta.source, version: meta.sourceVersion }))
      expect(meta.sha256).toBe(sha256(committed))
      expect(meta.source).toBe("iso-codes")
      expect(meta.sourceVersion).toBe("4.20")
      expect(meta.sourceFiles).toEqual({
        "iso_3166-1.json": sha256(await read(`${inputs}/iso_3166-1.json`)),
        "iso_3166-2.json": sha256(await read(`${inputs}/iso_3166-2.json`))
      })
      // The published release's files, not only the ones here (an edit to both would pass the check above).
      expect(meta.sourceFiles).toEqual(publishedInputs["4.20"])
      expect([meta.countries, meta.subdivisions, meta.countriesWithout]).toEqual([249, 5046, 49])
      expect(meta.counts["USA"]).toBe(57)
      expect(Object.keys(meta.counts)).toHaveLength(249)
    })

    it.live("--check passes on the committed files: every field of the meta, not only those above", () =>
      Effect.gen(function*() {
        // CI runs the tests, not `npm run snapshot -- --check`: a hand-edited count or generator must fail here too.
        const output: Array<string> = []
        const code = yield* run({
          ...options("data"),
          modulePath: "src/internal/subdivisionsData.ts",
          check: true,
          log: (text) => output.push(text)
        })
        expect(output.join("\n")).toContain("is up to date")
        expect(code).toBe(0)
        // Installed (`effect-fin snapshot --out` the package's data/, which ships no generated module): the same.
        const packaged = yield* tempDir()
        for (const file of ["subdivisions.json", "subdivisions.meta.json"]) {
          yield* Effect.promise(() => Fs.copyFile(Path.join("data", file), Path.join(packaged, file)))
        }
        const installedRun = (out: string, ...more: Array<string>) =>
          Effect.promise(() =>
            main(["--from-iso-codes", inputs, "--source-version", "4.20", "--out", out, ...more], {
              bundledDir: packaged,
              stdout: () => undefined
            })
          )
        // Not another folder of the user's: its generated module missing is still a difference.
        const own = yield* Effect.promise(() =>
          main(["--from-iso-codes", inputs, "--source-version", "4.20", "--out", packaged, "--check"], {
            bundledDir: "data",
            stdout: () => undefined
          })
        )
        expect(own).toBe(1)
        expect(yield* installedRun(packaged, "--check")).toBe(0)
        // Only a module absent, and not named: one --module names, or one out of sync, is still checked.
        const named = Path.join(packaged, "named.ts")
        expect(yield* installedRun(packaged, "--check", "--module", named)).toBe(1)
        const module = Path.join(packaged, "subdivisionsData.ts")
        yield* Effect.promise(() => Fs.writeFile(module, "// not in sync\n"))
        expect(yield* installedRun(packaged, "--check")).toBe(1)
        yield* Effect.promise(() => Fs.rm(module))
        // A run that writes (elsewhere) writes the module still.
        const elsewhere = yield* tempDir()
        expect(yield* installedRun(elsewhere)).toBe(0)
        expect((yield* Effect.promise(() => Fs.readdir(elsewhere))).sort())
          .toEqual(["subdivisions.json", "subdivisions.meta.json", "subdivisionsData.ts"])
      }))

    it("keys by alpha-3 in order, entries by code, one per line", () => {
      const text = serializeSnapshot({
        USA: [entry("US-NY", "New York"), entry("US-CA", "California")],
        ABW: [],
        AZE: [{ code: "AZ-BAB", type: "Rayon", parent: "AZ-NX", name: "Babək" }]
      })
      expect(text).toBe(
        [
          "{",
          "  \"ABW\": [],",
          "  \"AZE\": [",
          "    {\"code\":\"AZ-BAB\",\"name\":\"Babək\",\"type\":\"Rayon\",\"parent\":\"AZ-NX\"}",
          "  ],",
          "  \"USA\": [",
          "    {\"code\":\"US-CA\",\"name\":\"California\",\"type\":\"State\"},",
          "    {\"code\":\"US-NY\",\"name\":\"New York\",\"type\":\"State\"}",
          "  ]",
          "}",
          ""
        ].join("\n")
      )
    })
  })

  describe("validation", () => {
    const base = {
      iso31661: { "3166-1": [] },
      iso31662: { "3166-2": [] },
      label31661: "src/iso_3166-1.json",
      label31662: "src/iso_3166-2.json"
    }
    const failure = (input: Parameters<typeof buildFromIsoCodes>[0]) => {
      const built = buildFromIsoCodes(input)
      return Either.isLeft(built) ? built.left.message : "no failure"
    }

    it("names the file, the path and what was expected", async () => {
      const input = await loadInputs()
      const broken = structuredClone(input.iso31662)
      ;(broken["3166-2"][3] as Record<string, unknown>)["name"] = 42
      broken["3166-2"][7]!["code"] = "us-ca"
      const message = failure({ ...input, iso31662: broken, label31662: "src/iso_3166-2.json" })
      expect(message).toContain("src/iso_3166-2.json: invalid data")
      expect(message).toContain("3166-2[3].name: expected")
      expect(message).toContain("3166-2[7].code: expected an ISO 3166-2 subdivision code")
      expect(failure({ ...base, iso31662: { "3166-2": "x" } })).toBe(
        "src/iso_3166-2.json: invalid data: 3166-2: expected an array of subdivisions"
      )
      expect(failure({ ...base, iso31661: { "3166-1": [{ alpha_2: "us", alpha_3: "USA" }] } })).toBe(
        "src/iso_3166-1.json: invalid data: 3166-1[0].alpha_2: expected an ISO 3166-1 alpha-2 code"
      )
    })

    it("rejects duplicates, unknown prefixes, dangling, own and circular parents, and missing countries", async () => {
      const input = await loadInputs()
      const list = input.iso31662["3166-2"]
      const withEntries = (...extra: Array<Record<string, string>>) => ({
        ...input,
        iso31662: { "3166-2": [...list, ...extra] }
      })
      expect(failure(withEntries({ code: "US-CA", name: "Again", type: "State" }))).toContain(
        `3166-2[${list.length}].code: expected a code not used before`
      )
      expect(failure(withEntries({ code: "QQ-1", name: "Nowhere", type: "State" }))).toContain(
        `3166-2[${list.length}].code: expected a code starting with an alpha-2 code`
      )
      expect(failure(withEntries({ code: "US-ZZ", name: "Orphan", type: "State", parent: "US-QQ" }))).toContain(
        `3166-2[${list.length}].parent: expected the code of another subdivision of the same country`
      )
      expect(failure(withEntries({ code: "US-ZZ", name: "Abroad", type: "State", parent: "CA-ON" }))).toContain(
        ".parent: expected the code of another subdivision of the same country"
      )
      expect(failure(withEntries({ code: "US-ZZ", name: "Itself", type: "State", parent: "US-ZZ" }))).toContain(
        `3166-2[${list.length}].parent: expected the code of another subdivision of the same country`
      )
      expect(failure(withEntries(
        { code: "US-ZY", name: "Round", type: "State", parent: "US-ZZ" },
        { code: "US-ZZ", name: "And round", type: "State", parent: "US-ZY" }
      ))).toContain(`3166-2[${list.length}].parent: expected a chain of parents that ends (US-ZY comes back)`)
      // A name as lookups serve and compare them, or the snapshot and the API would never agree on it.
      for (const name of ["   ", " Padded", "Trailing\u200b", "Dou  ble", "Nul\u0000", "Lone \ud800"]) {
        expect(failure(withEntries({ code: "US-ZZ", name, type: "State" })), JSON.stringify(name)).toContain(
          `3166-2[${list.length}].name: expected a name that shows`
        )
      }
      // A type is served and printed as it is too.
      for (const type of ["State\u001b[2J", "Lone \ud800", "State \u202egnipsam"]) {
        expect(failure(withEntries({ code: "US-ZZ", name: "Zed", type })), JSON.stringify(type)).toContain(
          `3166-2[${list.length}].type: expected a type without control characters or bidirectional overrides`
        )
      }
      const noUsa = { "3166-1": input.iso31661["3166-1"].filter((c) => c["alpha_3"] !== "USA") }
      expect(failure({ ...input, iso31661: noUsa })).toContain("no entry with alpha_3 \"USA\"")
      // A country listed twice: the later listing would take the other's alpha-2 code, and its subdivisions with it.
      const countries = input.iso31661["3166-1"]
      for (const again of [{ alpha_2: "US", alpha_3: "XUS" }, { alpha_2: "XU", alpha_3: "USA" }]) {
        expect(failure({ ...input, iso31661: { "3166-1": [...countries, { ...again, name: "Again" }] } })).toContain(
          `iso_3166-1.json: invalid data: 3166-1[${countries.length}].${
            again.alpha_3 === "USA" ? "alpha_3" : "alpha_2"
          }: expected a code not used before`
        )
      }
    })
  })

  describe("diff", () => {
    const before: Snapshot = {
      ABW: [],
      FRA: [entry("FR-01", "Ain", "Department"), entry("FR-02", "Aisne", "Department")],
      USA: [entry("US-CA", "California"), entry("US-NY", "New York"), entry("US-ZZ", "Gone")]
    }
    const after: Snapshot = {
      ABW: [],
      FRA: [entry("FR-01", "Ain", "Department"), entry("FR-02", "Aisne", "Metropolitan department")],
      USA: [entry("US-CA", "Californie"), entry("US-NY", "New York"), entry("US-TX", "Texas"), entry("US-AA", "A")]
    }

    it("counts added, removed, renamed and changed per country and in total", () => {
      const diff = diffSnapshots(before, after)
      expect(diff.countries.map((c) => c.country)).toEqual(["FRA", "USA"])
      const usa = diff.countries[1]!
      expect(usa.added.map((e) => e.code)).toEqual(["US-AA", "US-TX"])
      expect(usa.removed.map((e) => e.code)).toEqual(["US-ZZ"])
      expect(usa.renamed).toEqual([{ code: "US-CA", from: "California", to: "Californie" }])
      expect(diff.countries[0]!.changed.map((c) => c.code)).toEqual(["FR-02"])
      expect(diff.totals).toEqual({ countries: 2, added: 2, removed: 1, renamed: 1, changed: 1 })
      expect(diffSnapshots(after, after).totals).toEqual({ countries: 0, added: 0, removed: 0, renamed: 0, changed: 0 })
    })

    it("the same accents encoded otherwise are no rename; another parent alone is a change", () => {
      const composed: Snapshot = {
        USA: [entry("US-SP", "S\u00e3o Paulo"), { ...entry("US-XX", "X"), parent: "US-SP" }]
      }
      const decomposed: Snapshot = {
        USA: [entry("US-SP", "Sa\u0303o Paulo"), { ...entry("US-XX", "X"), parent: "US-CA" }]
      }
      const diff = diffSnapshots(composed, decomposed)
      expect(diff.countries.map((c) => [c.country, c.renamed, c.changed.map((change) => change.code)]))
        .toEqual([["USA", [], ["US-XX"]]])
      expect(diff.totals).toEqual({ countries: 1, added: 0, removed: 0, renamed: 0, changed: 1 })
    })

    it("prints one block per country and the totals", () => {
      const text = formatDiff(diffSnapshots(before, after))
      expect(text).toContain("USA  +2 -1 ~1")
      expect(text).toContain("  + US-TX   Texas (State)")
      expect(text).toContain("  - US-ZZ   Gone (State)")
      expect(text).toContain("  ~ US-CA   California -> Californie")
      expect(text).toContain("  * FR-02   Aisne (Department) -> Aisne (Metropolitan department)")
      expect(text).toContain("Total: 2 countries changed; 2 added, 1 removed, 1 renamed, 1 with another type or parent")
    })
  })

  describe("crossCheck", () => {
    it("finds what the snapshot misses, what it has in excess and what the API names otherwise", () => {
      const snapshot = [
        entry("BD-01", "Bandarban", "District"),
        entry("BD-02", "Barguna", "District"),
        entry("BD-99", "Old")
      ]
      const api = [
        { code: "BD-03", name: "Bogra" },
        { code: "BD-02", name: "Borguna" },
        { code: "BD-01", name: "Bandarban" }
      ]
      expect(crossCheckCountry(snapshot, api, "BD")).toEqual({
        invalid: [],
        missing: [{ code: "BD-03", name: "Bogra" }],
        extra: [entry("BD-99", "Old")],
        renamed: [{ code: "BD-02", snapshotName: "Barguna", apiName: "Borguna" }]
      })
      // Only codes and names count: the API has no type.
      expect(crossCheckCountry([entry("BD-01", "Bandarban", "District")], [{ code: "BD-01", name: "Bandarban" }], "BD"))
        .toEqual({ invalid: [], missing: [], extra: [], renamed: [] })
      // The same name with its accent encoded otherwise (a letter and a combining mark) is not a rename; another
      // letter case is.
      const saoPaulo = [entry("BR-SP", "São Paulo", "State")]
      expect(crossCheckCountry(saoPaulo, [{ code: "BR-SP", name: "São Paulo".normalize("NFD") }], "BR").renamed).toEqual([])
      expect(crossCheckCountry(saoPaulo, [{ code: "BR-SP", name: "SÃO PAULO" }], "BR").renamed)
        .toEqual([{ code: "BR-SP", snapshotName: "São Paulo", apiName: "SÃO PAULO" }])
    })

    it("leaves out and reports API entries it cannot compare", () => {
      const snapshot = [entry("US-CA", "California"), entry("US-NY", "New York")]
      const api = [
        { code: "US-NY", name: "New York" },
        { code: "US-NY", name: "NY" },
        { code: "us-ca", name: "California" },
        { code: "CA-ON", name: "Ontario" },
        { code: "../x", name: "x" },
        { code: "US-ZZ", name: " " }
      ]
      expect(crossCheckCountry(snapshot, api, "US")).toEqual({
        invalid: [
          { code: "US-NY", name: "NY", reason: "duplicate" },
          { code: "us-ca", name: "California", reason: "malformed_code" },
          { code: "CA-ON", name: "Ontario", reason: "other_country" },
          { code: "../x", name: "x", reason: "malformed_code" },
          { code: "US-ZZ", name: " ", reason: "empty_name" }
        ],
        // The duplicate does not count as a rename, and US-CA, listed only in lower case, is reported once, as invalid,
        // not also as a code the API lacks.
        missing: [],
        extra: [],
        renamed: []
      })
    })

    it("a code the API wrote with a typographic hyphen, a dash or a minus sign is invalid, not also extra", () => {
      const snapshot = [entry("US-CA", "California"), entry("US-NY", "New York"), entry("US-TX", "Texas")]
      const api = [
        { code: "US\u2011CA", name: "California" },
        { code: "US\u2013NY", name: "New York" },
        { code: "US\u2212TX", name: "Texas" }
      ]
      const result = crossCheckCountry(snapshot, api, "US")
      expect(result.invalid.map((e) => e.reason)).toEqual(["malformed_code", "malformed_code", "malformed_code"])
      expect(result.extra).toEqual([])
    })

    it("a code the API wrote without its country, with the alpha-3 or an underscore is invalid, not also extra", () => {
      const snapshot = [entry("US-CA", "California"), entry("US-NY", "New York"), entry("US-TX", "Texas")]
      const api = [
        { code: "CA", name: "California" },
        { code: "USA-NY", name: "New York" },
        { code: "US_TX", name: "Texas" }
      ]
      const result = crossCheckCountry(snapshot, api, "US")
      expect(result.invalid.map((e) => e.reason)).toEqual(["malformed_code", "malformed_code", "malformed_code"])
      expect(result.extra).toEqual([])
      // The alpha-3 is the country's own, not any three letters: AUT-9 is Austria's AT-9, ABC-9 names nothing.
      const wien = [entry("AT-9", "Wien")]
      expect(crossCheckCountry(wien, [{ code: "AUT-9", name: "Wien" }], "AT").extra).toEqual([])
      expect(crossCheckCountry(wien, [{ code: "ABC-9", name: "Wien" }], "AT").extra).toEqual(wien)
    })

    it("a code with a four-character suffix is malformed; a name with a bidirectional isolate is unprintable", () => {
      const snapshot = [entry("US-CA", "California")]
      const api = [
        { code: "US-CA", name: "California" },
        { code: "US-CALI", name: "California" },
        { code: "US-NY", name: "New \u2067York" },
        { code: "US-WA", name: "\u2066Washington\u2069" },
        // Nothing that shows: no name, whatever else it holds.
        { code: "US-TX", name: "\u2066 \u2069" }
      ]
      expect(crossCheckCountry(snapshot, api, "US").invalid).toEqual([
        { code: "US-CALI", name: "California", reason: "malformed_code" },
        { code: "US-NY", name: "New \u2067York", reason: "unprintable_name" },
        { code: "US-WA", name: "\u2066Washington\u2069", reason: "unprintable_name" },
        { code: "US-TX", name: "\u2066 \u2069", reason: "empty_name" }
      ])
    })

    it("lists renamed codes sorted by code, whatever the API's order", () => {
      const snapshot = [entry("US-CA", "California"), entry("US-NY", "New York")]
      const api = [{ code: "US-NY", name: "Nueva York" }, { code: "US-CA", name: "Californie" }]
      expect(crossCheckCountry(snapshot, api, "US").renamed.map((r) => r.code)).toEqual(["US-CA", "US-NY"])
    })

    it("a country named like an Object property is one the snapshot lacks, not a crash", () => {
      const report = crossCheck({}, { constructor: [{ code: "XX-1", name: "One" }] }, () => undefined)
      expect(report).toEqual([
        { country: "constructor", invalid: [], missing: [{ code: "XX-1", name: "One" }], extra: [], renamed: [] }
      ])
    })

    it("covers every country of the API map, sorted", () => {
      const report = crossCheck({ USA: [entry("US-CA", "California")] }, {
        USA: [{ code: "US-CA", name: "California" }],
        ABW: [{ code: "AW-01", name: "X" }]
      }, (country) => ({ USA: "US", ABW: "AW" })[country])
      expect(report.map((r) => r.country)).toEqual(["ABW", "USA"])
      expect(report[0]!.missing).toEqual([{ code: "AW-01", name: "X" }])
      expect(report[1]).toEqual({ country: "USA", invalid: [], missing: [], extra: [], renamed: [] })
    })
  })

  describe("run", () => {
    it.live("writes data, meta and module, then finds nothing to do", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        const first = options(dir)
        expect(yield* run(first)).toBe(0)
        expect(yield* listDir(dir)).toEqual(["subdivisions.json", "subdivisions.meta.json", "subdivisionsData.ts"])
        const written = yield* readAll(dir)
        expect(written["subdivisions.json"]).toBe(yield* Effect.promise(() => read("data/subdivisions.json")))
        expect(written["subdivisionsData.ts"]).toBe(
          yield* Effect.promise(() => read("src/internal/subdivisionsData.ts"))
        )
        expect(JSON.parse(written["subdivisions.meta.json"]!)).toMatchObject({
          generatedAt: "2025-01-01T00:00:00.000Z",
          sourceVersion: "4.20"
        })
        expect(first.output.join("\n")).toContain("No snapshot at")

        const again = { ...options(dir), generatedAt: "2030-01-01T00:00:00.000Z" }
        expect(yield* run(again)).toBe(0)
        expect(again.output.join("\n")).toContain("Up to date; nothing written.")
        expect(yield* readAll(dir)).toEqual(written)
      }))

    it.live("--check names a code listed twice, or under another country, in the committed snapshot", () =>
      Effect.gen(function*() {
        const { committed, dataPath, dir } = yield* written
        const line = `{"code":"US-CA","name":"California","type":"State"},`
        const cases = [
          [committed.replace(line, `${line}\n    ${line}`), "USA lists US-CA 2 times"],
          [committed.replace(line, `${line}\n    {"code":"US-CA","name":"Kalifornia","type":"State"},`), "USA lists US-CA 2 times"],
          [committed.replace(`{"code":"CA-ON",`, `{"code":"US-ON",`), "CAN lists US-ON, a code of another country"]
        ] as const
        for (const [text, expected] of cases) {
          yield* Effect.promise(() => Fs.writeFile(dataPath, text))
          const check = { ...options(dir), check: true }
          expect(yield* run(check)).toBe(1)
          const output = check.output.join("\n")
          expect(output).toContain(`${dataPath}: ${expected}`)
          expect(output).not.toContain("same entries, other bytes")
        }
      }))

    it.live("--check and --dry-run print the diff and write nothing", () =>
      Effect.gen(function*() {
        const { committed, dataPath, dir } = yield* written
        const edited = committed.replace("\"California\"", "\"Kalifornien\"")
        yield* Effect.promise(() => Fs.writeFile(dataPath, edited))
        const before = yield* readAll(dir)

        const check = { ...options(dir), check: true }
        expect(yield* run(check)).toBe(1)
        expect(check.output.join("\n")).toContain("  ~ US-CA   Kalifornien -> California")
        const dry = { ...options(dir), dryRun: true }
        expect(yield* run(dry)).toBe(0)
        expect(dry.output.join("\n")).toContain("Dry run; nothing written.")
        expect(yield* readAll(dir)).toEqual(before)

        // Every field of the meta counts but the time and place of the run: its totals too.
        yield* run(options(dir))
        expect(yield* run({ ...options(dir), check: true })).toBe(0)
        const metaPath = Path.join(dir, "subdivisions.meta.json")
        const meta = JSON.parse(yield* Effect.promise(() => read(metaPath))) as Record<string, unknown>
        yield* Effect.promise(() => Fs.writeFile(metaPath, JSON.stringify({ ...meta, subdivisions: 9999, countriesWithout: 0 })))
        expect(yield* run({ ...options(dir), check: true })).toBe(1)
        // And the same fields in other bytes: a key of its own, another layout, a generatedAt that is no time.
        for (
          const text of [
            `${JSON.stringify({ ...meta, extra: 1 }, null, 2)}\n`,
            JSON.stringify(meta),
            `${JSON.stringify({ ...meta, generatedAt: "bogus" }, null, 2)}\n`
          ]
        ) {
          yield* Effect.promise(() => Fs.writeFile(metaPath, text))
          const check = { ...options(dir), check: true }
          expect(yield* run(check), text).toBe(1)
          expect(check.output.join("\n")).toContain("same fields, other bytes")
        }
        // A run writes it back; then it is up to date (the written time, whatever it is, kept).
        yield* run({ ...options(dir), generatedAt: "2025-03-04T05:06:07.000Z" })
        expect(yield* run({ ...options(dir), check: true })).toBe(0)
      }))

    it.live("a malformed source fails before anything is written", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        yield* run(options(dir))
        const before = yield* readAll(dir)
        for (
          const [broken, expected] of [
            ["{\"3166-2\": [{\"code\": \"US-CA\", \"name\": \"\", \"type\": \"State\"}]}", "3166-2[0].name: expected"],
            ["{\"3166-2\": [", "iso_3166-2.json: not valid JSON"],
            ["[]", "iso_3166-2.json: invalid data"]
          ] as const
        ) {
          const source = yield* brokenSource(broken)
          const error = yield* Effect.flip(run(options(dir, fromIsoCodes(source, "broken"))))
          expect(error.message).toContain(expected)
          expect(error.message).toContain(Path.join(source, "iso_3166-2.json"))
        }
        const missing = yield* Effect.flip(run(options(dir, fromIsoCodes(Path.join(dir, "nowhere"), "x"))))
        expect(missing.message).toMatch(/iso_3166-1\.json: cannot read \(ENOENT\)/)
        // A copy given as iso-codes 4.20 that is not its file (one name edited, or CRLF line endings from a checkout)
        // is refused: rebuilt, it would record its own hash as 4.20's, and --check would then pass on it.
        const published = yield* Effect.promise(() => Fs.readFile(`${inputs}/iso_3166-2.json`, "utf8"))
        for (const edited of [published.replace("California", "Kalifornia"), published.replaceAll("\n", "\r\n")]) {
          const source = yield* brokenSource(edited)
          const error = yield* Effect.flip(run(options(dir, fromIsoCodes(source, "4.20"))))
          expect(error.message).toBe(
            `${Path.join(source, "iso_3166-2.json")} is not iso-codes 4.20's iso_3166-2.json (SHA-256 ${
              sha256(edited)
            }, published ${publishedInputs["4.20"]!["iso_3166-2.json"]}): an edited copy, or another release (give ` +
              "that release's --source-version), or line endings changed on checkout"
          )
        }
        expect(yield* readAll(dir)).toEqual(before)
      }))

    it.live("a module path naming the data or meta file is refused before anything is written", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        for (const name of ["subdivisions.json", "subdivisions.meta.json"]) {
          const error = yield* Effect.flip(run({ ...options(dir), modulePath: Path.join(dir, name) }))
          expect(error.message).toBe(`cannot write the snapshot: two of its files would be ${Path.join(dir, name)}`)
          expect(yield* listDir(dir)).toEqual([])
        }
        // One file under two spellings of its path.
        const absolute = Path.join(dir, "subdivisions.json")
        const twice = yield* Effect.flip(writeFilesAtomically([
          { path: absolute, content: "data" },
          { path: Path.relative(process.cwd(), absolute), content: "module" }
        ]))
        expect(twice.message).toBe(`cannot write the snapshot: two of its files would be ${absolute}`)
        expect(yield* listDir(dir)).toEqual([])
      }))

    // `cross-check --report /dev/null` (or /dev/stdout, a FIFO, a symlink to the archived report) renamed its temporary
    // file over the target: as root, /dev/null became a regular file; a symlink was replaced, its target left as it was.
    it.live("a target that is a symlink, FIFO or device is written through, never replaced", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        const real = Path.join(dir, "real.json")
        const link = Path.join(dir, "link.json")
        const fifo = Path.join(dir, "fifo")
        yield* Effect.promise(async () => {
          await Fs.writeFile(real, "old")
          await Fs.symlink(real, link)
          await new Promise<void>((resolve, reject) =>
            execFile("mkfifo", [fifo], (error) => error === null ? resolve() : reject(error))
          )
        })
        // The FIFO's reader, opened before the write (which waits for one).
        const read = Effect.runPromise(Effect.promise(() => Fs.readFile(fifo, "utf8")))
        yield* writeFilesAtomically([{ path: link, content: "new" }], "the report")
        yield* writeFilesAtomically([{ path: fifo, content: "through" }], "the report")
        // (No /dev/null here: without the fix, a run as root would replace it.)
        const [linkStat, fifoStat] = yield* Effect.promise(() => Promise.all([Fs.lstat(link), Fs.lstat(fifo)]))
        expect([linkStat.isSymbolicLink(), fifoStat.isFIFO()]).toEqual([true, true])
        expect(yield* Effect.promise(() => Fs.readFile(real, "utf8"))).toBe("new")
        expect(yield* Effect.promise(() => read)).toBe("through")
        expect((yield* listDir(dir)).sort()).toEqual(["fifo", "link.json", "real.json"])
      }))

    // `--report /dev/stdout >> log.txt`: /dev/stdout resolved to log.txt, whose earlier content (and the table the tool
    // printed to it) the report's temporary file replaced. A descriptor's path is written through the descriptor.
    it.live("a descriptor's path (/dev/fd/N, /dev/stdout) open on a file is written through it, the file kept", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        const log = Path.join(dir, "log.txt")
        const handle = yield* Effect.promise(async () => {
          await Fs.writeFile(log, "earlier\n")
          return Fs.open(log, "a")
        })
        yield* writeFilesAtomically([{ path: `/dev/fd/${handle.fd}`, content: "report\n" }], "the report").pipe(
          Effect.ensuring(Effect.promise(() => handle.close()))
        )
        expect(yield* Effect.promise(() => Fs.readFile(log, "utf8"))).toBe("earlier\nreport\n")
        expect(yield* listDir(dir)).toEqual(["log.txt"])
      }))

    // A symlink to a file not written yet (`report.json -> archive/latest.json`) was replaced by a regular file.
    it.live("a symlink to nothing yet is written through to the file it names, and kept", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        const target = Path.join(dir, "archive", "latest.json")
        const link = Path.join(dir, "report.json")
        yield* Effect.promise(async () => {
          await Fs.mkdir(Path.join(dir, "archive"))
          await Fs.symlink(target, link)
        })
        yield* writeFilesAtomically([{ path: link, content: "new" }], "the report")
        expect((yield* Effect.promise(() => Fs.lstat(link))).isSymbolicLink()).toBe(true)
        expect(yield* Effect.promise(() => Fs.readFile(target, "utf8"))).toBe("new")
      }))

    // A source that lost data (an empty file, a country dropped by a bad upstream change) is not a new snapshot.
    it.live("a source listing no subdivisions for a country the snapshot has some for is refused unless allowed", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        yield* run(options(dir))
        const before = yield* readAll(dir)
        const full = JSON.parse(yield* Effect.promise(() => read(`${inputs}/iso_3166-2.json`))) as {
          "3166-2": Array<{ code: string }>
        }
        const withoutUsa = { "3166-2": full["3166-2"].filter((e) => !e.code.startsWith("US-")) }
        for (const [broken, countries] of [[JSON.stringify(withoutUsa), "1 country (USA)"], ["{\"3166-2\": []}", "200 countries (AFG, "]] as const) {
          const source = yield* brokenSource(broken)
          const error = yield* Effect.flip(run(options(dir, fromIsoCodes(source, "broken"))))
          expect(error.message).toContain(`the source lists no subdivisions for ${countries}`)
          expect(error.message).toContain("--allow-emptied")
          expect(yield* readAll(dir)).toEqual(before)
          // A dry run fails the same way (a preview must not pass where the run will not), and writes nothing either;
          // the diff is printed first, the refusal once, as the error.
          const dry = { ...options(dir, fromIsoCodes(source, "broken")), dryRun: true }
          expect((yield* Effect.flip(run(dry))).message).toBe(error.message)
          expect(dry.output.join("\n")).not.toContain("the source lists no subdivisions")
          expect(dry.output.join("\n")).toContain("Changes against")
          const check = { ...options(dir, fromIsoCodes(source, "broken")), check: true }
          expect(yield* run(check)).toBe(1)
          expect(check.output.join("\n")).toContain(`the source lists no subdivisions for ${countries}`)
        }
        const allowed = { ...options(dir, fromIsoCodes(yield* brokenSource(JSON.stringify(withoutUsa)), "x")), allowEmptied: true }
        expect(yield* run(allowed)).toBe(0)
        expect(JSON.parse((yield* readAll(dir))["subdivisions.json"]!)["USA"]).toEqual([])
      }))

    // A committed snapshot that no longer decodes (one name a newer rule refuses, a half-written file) is still a
    // snapshot that had entries: a source that lists none for its countries is refused all the same.
    it.live("a source listing no subdivisions is refused even when the committed snapshot does not decode", () =>
      Effect.gen(function*() {
        const { committed, dataPath, dir } = yield* written
        const metaPath = Path.join(dir, "subdivisions.meta.json")
        const empty = yield* brokenSource("{\"3166-2\": []}")
        for (
          const [data, meta] of [
            [committed.replace("\"name\":\"Alaska\"", "\"name\":\"Alaska \""), undefined],
            [committed.slice(0, committed.length / 2), undefined],
            [committed.slice(0, committed.length / 2), "lost"]
          ] as const
        ) {
          yield* Effect.promise(() => Fs.writeFile(dataPath, data))
          if (meta === "lost") yield* Effect.promise(() => Fs.rm(metaPath, { force: true }))
          const before = yield* readAll(dir)
          const attempt = options(dir, fromIsoCodes(empty, "broken"))
          const outcome = yield* Effect.either(run(attempt))
          // Half a file and no meta: nothing says what it held, so nothing can be refused.
          if (meta === "lost") {
            expect(outcome._tag).toBe("Right")
            continue
          }
          expect(outcome._tag).toBe("Left")
          if (outcome._tag === "Left") expect(outcome.left.message).toContain("the source lists no subdivisions for 200 countries")
          expect(attempt.output.join("\n")).not.toContain("same entries, other bytes")
          expect(yield* readAll(dir)).toEqual(before)
        }
      }))

    it.live("reads the inputs from an http base URL", () =>
      Effect.gen(function*() {
        const server = Http.createServer((req, res) => {
          const name = Path.basename(req.url ?? "")
          if (req.url !== `/iso-codes/${name}` || !name.endsWith(".json")) {
            res.writeHead(404).end()
            return
          }
          Fs.readFile(Path.join(inputs, name)).then(
            (body) => res.writeHead(200, { "content-type": "application/json" }).end(body),
            () => res.writeHead(404).end()
          )
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
          () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
        )
        const port = (server.address() as AddressInfo).port
        const dir = yield* tempDir()
        const opts = options(dir, fromIsoCodes(`http://127.0.0.1:${port}/iso-codes`, "4.20"))
        expect(yield* run(opts)).toBe(0)
        expect(yield* Effect.promise(() => read(Path.join(dir, "subdivisions.json")))).toBe(
          yield* Effect.promise(() => read("data/subdivisions.json"))
        )
        const missing = yield* Effect.flip(run(options(dir, fromIsoCodes(`http://127.0.0.1:${port}/other`, "4.20"))))
        expect(missing.message).toContain(`http://127.0.0.1:${port}/other/iso_3166-1.json: cannot fetch (HTTP 404)`)
      }).pipe(Effect.scoped))

    // What a download reads becomes the offline data, and a run in CI must end: TLS off loopback, a time and a size
    // limit (a larger body refused as it arrives).
    it.live("a download is refused over plain http off loopback, past its time limit, or past its size", () =>
      Effect.gen(function*() {
        const server = Http.createServer((req, res) => {
          const url = req.url ?? ""
          if (url.startsWith("/slow/")) return // never answers
          if (url.startsWith("/half/") && url.endsWith("iso_3166-2.json")) return // the second file never comes
          // Plain http off loopback as far as the rule goes (0.0.0.0 is no loopback address), without leaving the
          // machine: the redirect is refused before any connection.
          if (url.startsWith("/moved/")) return void res.writeHead(302, { location: `http://0.0.0.0:${port}/x` }).end()
          // A Content-Length over the limit is refused before the body comes (its 10 bytes, then nothing).
          if (url.startsWith("/declared/")) return void res.writeHead(200, { "content-length": "5000" }).write("x".repeat(10))
          if (url.startsWith("/exact/")) return void res.writeHead(200).end("x".repeat(1_000))
          if (url.startsWith("/half/")) return void res.writeHead(200).end("{}")
          // No Content-Length: the limit is met while reading.
          res.writeHead(200, { "content-type": "application/json" })
          res.write("[")
          res.end(`${"0,".repeat(600)}0]`)
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
          () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
        )
        yield* Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections()))
        const port = (server.address() as AddressInfo).port
        const base = `http://127.0.0.1:${port}`
        const dir = yield* tempDir()
        const limits = { timeout: "300 millis", maxBytes: 1_000 } as const
        // For the answers that come: a loaded machine may take longer than 300 ms to fetch one, which would then end
        // as a timeout, not as what is checked (an answer that stalls runs into the 5 s all the same).
        const roomy = { ...limits, timeout: "5 seconds" } as const
        const failure = (location: string, within: DownloadLimits = roomy) =>
          Effect.map(Effect.flip(run(options(dir, fromIsoCodes(location, "x", within)))), (error) => error.message)
        expect(yield* failure("http://iso-codes.example/4.20")).toBe(
          "http://iso-codes.example/4.20/iso_3166-1.json: plain http is read only on loopback; use https"
        )
        expect(yield* failure(`${base}/moved`)).toBe(
          `${base}/moved/iso_3166-1.json: cannot fetch (redirected to http://0.0.0.0:${port}: plain http is read only on loopback)`
        )
        expect(yield* failure(`${base}/slow`, limits)).toBe(`${base}/slow/iso_3166-1.json: not read within 300ms`)
        // Each file has the limit: the first, which comes, is read within it; the second, which does not, ends there.
        expect(yield* failure(`${base}/half`, { ...limits, timeout: "2 seconds" }))
          .toBe(`${base}/half/iso_3166-2.json: not read within 2s`)
        for (const path of ["big", "declared"]) {
          expect(yield* failure(`${base}/${path}`)).toBe(`${base}/${path}/iso_3166-1.json: cannot fetch (larger than 1000 bytes)`)
        }
        expect((yield* readSourceFile(`${base}/exact`, "f.json", roomy)).length).toBe(1_000)
        for (const maxBytes of [Number.NaN, -1]) {
          expect((yield* Effect.flip(readSourceFile(`${base}/exact`, "f.json", { maxBytes }))).message).toBe(
            `${base}/exact/f.json: maxBytes must be a number of bytes, got ${maxBytes}`
          )
        }
        expect(yield* listDir(dir)).toEqual([])
      }).pipe(Effect.scoped))

    it.live("fromApi builds the same structure from per-country lists", () =>
      Effect.gen(function*() {
        const previous: Snapshot = { USA: [entry("US-CA", "California")] }
        const source = fromApi({
          location: "fake API",
          version: "test",
          previous,
          list: (country) =>
            Effect.succeed(
              country === "USA" ? [{ code: "US-NY", name: "New York" }, { code: "US-CA", name: "California" }] : []
            )
        })
        const loaded = yield* source.load
        expect(Object.keys(loaded.snapshot)).toHaveLength(249)
        // The type of a known code is kept from the previous snapshot; the API gives none for a new one.
        expect(loaded.snapshot["USA"]).toEqual([
          entry("US-CA", "California"),
          { code: "US-NY", name: "New York", type: "" }
        ])
        const bad = fromApi({
          location: "fake API",
          version: "test",
          list: () => Effect.succeed([{ code: "nope", name: "" }])
        })
        expect((yield* Effect.flip(bad.load)).message).toContain("fake API ABW: invalid data: [0].code: expected")
      }))
  })

  describe("command line", () => {
    const now = new Date("2025-06-01T12:00:00Z")
    const parse = (args: ReadonlyArray<string>, sourceDateEpoch?: string) =>
      parseCommandLine(args, { now, sourceDateEpoch })
    const source = ["--from-iso-codes", inputs, "--source-version", "4.20"]

    it("needs exactly one explicit source and rejects flags that do not go with it", () => {
      const usageError = (args: ReadonlyArray<string>, epoch?: string) => Either.getLeft(parse(args, epoch))
      expect(usageError([])).toEqual(
        Option.some("No source: pass --from-iso-codes DIR|URL with --source-version VERSION, or --from-api.")
      )
      expect(usageError(["--from-iso-codes", inputs])).toEqual(
        Option.some("--source-version is required with --from-iso-codes.")
      )
      expect(usageError([...source, "--from-api"])).toEqual(
        Option.some("--from-iso-codes and --from-api exclude each other: pass exactly one.")
      )
      expect(Option.getOrThrow(usageError(["--from-api", "--cross-check"]))).toContain("exclude each other")
      expect(Option.getOrThrow(usageError(["--from-api", "--countries", "USA"]))).toContain(
        "--countries only goes with --cross-check."
      )
      expect(Option.getOrThrow(usageError(["--from-api", "--report", "r.json"]))).toContain("--report only goes")
      expect(Option.getOrThrow(usageError([...source, "--base-url", "https://x.test"]))).toContain(
        "--base-url only goes with --from-api or --cross-check."
      )
      expect(Option.getOrThrow(usageError([...source, "--concurrency", "2"]))).toContain("--concurrency only goes")
      for (const n of ["0", "65", "two", "1.5"]) {
        expect(Option.getOrThrow(usageError(["--from-api", "--concurrency", n]))).toContain(
          "--concurrency: expected a whole number from 1 to 64"
        )
      }
      expect(Option.getOrThrow(usageError(["--cross-check", "--check"]))).toContain("do not go with --cross-check")
      expect(Option.getOrThrow(usageError(["--cross-check", "--allow-emptied"]))).toContain("do not go with --cross-check")
      expect(parse([...source, "--allow-emptied"])).toMatchObject(Either.right({ allowEmptied: true }))
      expect(Option.getOrThrow(usageError(["--cross-check", "--countries", " , "]))).toContain("--countries: expected")
      expect(Option.getOrThrow(usageError(["--cross-check", "--source-version", "1"]))).toContain("--source-version only")
      expect(Option.getOrThrow(usageError(["--from-api", "--base-url", ""]))).toContain("--base-url must not be empty")
      expect(Option.getOrThrow(usageError([...source, "--check", "--dry-run"]))).toContain("exclude each other")
      expect(Option.getOrThrow(usageError([...source, "--bogus"]))).toContain("--bogus")
      expect(Option.getOrThrow(usageError([...source, "--generated-at", "soon"]))).toContain("--generated-at")
      expect(Option.getOrThrow(usageError(source, "yesterday"))).toContain("SOURCE_DATE_EPOCH")
      // Past year 9999 (the time would not be four digits of year, or no time at all).
      expect(Option.getOrThrow(usageError(source, "99999999999999"))).toContain("SOURCE_DATE_EPOCH")
      // Only ISO 8601: no `Date.parse` guesses, no rolled-over dates.
      for (
        const time of [
          "1",
          "0",
          "Nov 22 2026",
          "2026-02-30T00:00:00Z",
          "2026-11-22T24:00:00Z",
          "9999-12-31T23:59:59-01:00",
          "0000-01-01T00:00:00+01:00"
        ]
      ) {
        expect(Option.getOrThrow(usageError([...source, "--generated-at", time])), time).toContain("--generated-at")
      }
      expect(parse(["--help"])).toEqual(Either.right({ _tag: "Help" }))
    })

    it("--from-api and --cross-check: defaults and options", () => {
      expect(parse(["--from-api"])).toEqual(Either.right({
        _tag: "FromApi",
        version: "v1",
        baseUrl: undefined,
        concurrency: 8,
        outDir: "data",
        modulePath: "src/internal/subdivisionsData.ts",
        moduleNamed: false,
        generatedAt: "2025-06-01T12:00:00.000Z",
        check: false,
        dryRun: false,
        allowEmptied: false
      }))
      expect(
        parse(["--from-api", "--base-url", "http://127.0.0.1:4010", "--concurrency", "3", "--source-version", "2025-06",
          "--out", "/tmp/x", "--check"])
      ).toMatchObject(Either.right({
        baseUrl: "http://127.0.0.1:4010",
        concurrency: 3,
        version: "2025-06",
        modulePath: Path.join("/tmp/x", "subdivisionsData.ts"),
        check: true
      }))
      expect(parse(["--cross-check"])).toEqual(Either.right({
        _tag: "CrossCheck",
        outDir: "data",
        countries: undefined,
        reportPath: "cross-check-report.json",
        generatedAt: "2025-06-01T12:00:00.000Z",
        baseUrl: undefined,
        concurrency: 8
      }))
      // Codes are split and deduplicated here and checked against the 249 by the entry (before any request).
      expect(parse(["--cross-check", "--countries", "USA, CAN,USA,xxx", "--report", "out/r.json"])).toMatchObject(
        Either.right({ countries: ["USA", "CAN", "xxx"], reportPath: "out/r.json" })
      )
    })

    it("defaults to data/ and src/, and keeps everything in --out when given", () => {
      expect(parse(source)).toEqual(Either.right({
        _tag: "FromIsoCodes",
        location: inputs,
        version: "4.20",
        outDir: "data",
        modulePath: "src/internal/subdivisionsData.ts",
        moduleNamed: false,
        generatedAt: "2025-06-01T12:00:00.000Z",
        check: false,
        dryRun: false,
        allowEmptied: false
      }))
      expect(parse([...source, "--out", "/tmp/x", "--check"])).toMatchObject(
        Either.right({ outDir: "/tmp/x", modulePath: Path.join("/tmp/x", "subdivisionsData.ts"), check: true })
      )
      expect(parse([...source, "--module=m.ts"])).toMatchObject(Either.right({ modulePath: "m.ts", moduleNamed: true }))
      expect(parse([...source, "--generated-at", "2025-02-03T04:05:06Z"], "0")).toMatchObject(
        Either.right({ generatedAt: "2025-02-03T04:05:06.000Z" })
      )
      // Without an offset, UTC, whatever the machine's time zone; with one, as it says.
      expect(parse([...source, "--generated-at", "2025-02-03T04:05:06"])).toMatchObject(
        Either.right({ generatedAt: "2025-02-03T04:05:06.000Z" })
      )
      expect(parse([...source, "--generated-at", "2025-02-03T04:05:06+02:00"])).toMatchObject(
        Either.right({ generatedAt: "2025-02-03T02:05:06.000Z" })
      )
      expect(parse(source, "1700000000")).toMatchObject(Either.right({ generatedAt: "2023-11-14T22:13:20.000Z" }))
    })

    // The real script in child processes: exit codes as a CI job sees them.
    it.scopedLive("exits 0 when up to date, 1 on differences under --check, 2 on usage errors and bad sources", () =>
      Effect.gen(function*() {
        const fresh = yield* tempDir()
        yield* run(options(fresh))
        const stale = yield* tempDir()
        yield* run(options(stale))
        const stalePath = Path.join(stale, "subdivisions.json")
        yield* Effect.promise(async () =>
          Fs.writeFile(stalePath, (await read(stalePath)).replace("\"Texas\"", "\"Tejas\""))
        )
        const broken = yield* brokenSource("{\"3166-2\": [{\"code\": 1}]}")
        const target = yield* tempDir()
        yield* run(options(target))
        const before = yield* readAll(target)
        // An API that lists nothing for a country, asked into an empty --out: measured against the committed data/.
        const emulator = yield* Emulator.make({ subdivisions: { USA: [] } })
        const empty = yield* tempDir()
        const credentials = {
          FIN_CLIENT_ID: emulator.credentials.clientId,
          FIN_CLIENT_SECRET: emulator.credentials.clientSecret
        }

        const [upToDate, differs, noArgs, malformed, emptied] = yield* Effect.promise(() =>
          Promise.all([
            script([...source, "--out", fresh, "--check"]),
            script([...source, "--out", stale, "--check"]),
            script([]),
            script(["--from-iso-codes", broken, "--source-version", "x", "--out", target]),
            script(["--from-api", "--base-url", emulator.url, "--out", empty, "--dry-run"], credentials)
          ])
        )
        expect(upToDate.code).toBe(0)
        expect(upToDate.stdout).toContain("Check: the committed snapshot is up to date.")
        expect(differs.code).toBe(1)
        expect(differs.stdout).toContain("  ~ US-TX   Tejas -> Texas")
        expect(differs.stdout).toContain("Total: 1 country changed; 0 added, 0 removed, 1 renamed")
        expect(noArgs.code).toBe(2)
        expect(noArgs.stderr).toContain("Usage: npm run snapshot")
        expect(malformed.code).toBe(2)
        expect(malformed.stderr).toContain("iso_3166-2.json: invalid data: 3166-2[0].code: expected")
        expect(malformed.stderr).toContain("Nothing was written.")
        expect(yield* readAll(target)).toEqual(before)
        expect(emptied.code).toBe(2)
        expect(emptied.stderr).toContain("for 1 country (USA) that the committed snapshot (none is in the output")
      }))
  })
})
