import { describe, expect, it } from "@effect/vitest"
import type * as Brand from "effect/Brand"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { build } from "esbuild"
import { readFileSync } from "node:fs"
import * as Vm from "node:vm"
import * as CountryCode from "../src/CountryCode.js"
import { RequestValidationError } from "../src/FinError.js"
import { compareEntries, decodeRows, encodeRows, normalize, typeTable } from "../src/internal/subdivisions.js"
import { subdivisionsData, types } from "../src/internal/subdivisionsData.js"
import * as Subdivisions from "../src/Subdivisions.js"

const right = <A, E>(either: Either.Either<A, E>): A => {
  if (Either.isLeft(either)) throw new Error(`expected Right, got Left: ${String(either.left)}`)
  return either.right
}
const codes = (either: Either.Either<ReadonlyArray<Subdivisions.SnapshotSubdivision>, unknown>) =>
  right(either).map((e) => e.code)
const names = (either: Either.Either<ReadonlyArray<Subdivisions.SnapshotSubdivision>, unknown>) =>
  right(either).map((e) => e.name)

const badCountries = ["usa", "XXX", "../v1", "", "US", "USA ", "__proto__"]

describe("Subdivisions", () => {
  describe("forCountry", () => {
    it("lists a country's subdivisions sorted by code", () => {
      const usa = right(Subdivisions.forCountry("USA"))
      expect(usa).toHaveLength(57)
      expect(usa.map((e) => e.code)).toEqual([...usa.map((e) => e.code)].sort())
      expect(usa.find((e) => e.code === "US-CA")).toEqual({ code: "US-CA", name: "California", type: "State" })
    })

    it("gives an empty list, not an error, for a country without subdivisions", () => {
      expect(right(Subdivisions.forCountry("ABW"))).toEqual([])
      expect(right(Subdivisions.forCountry("ATA"))).toEqual([])
    })

    it("keeps the parent as a full code", () => {
      const aze = right(Subdivisions.forCountry("AZE"))
      expect(aze.find((e) => e.code === "AZ-BAB")).toEqual({
        code: "AZ-BAB",
        name: "Babək",
        type: "Rayon",
        parent: "AZ-NX"
      })
    })

    it("rejects unknown countries with the RequestValidationError of CountryCode.validate", () => {
      for (const input of badCountries) {
        const result = Subdivisions.forCountry(input)
        expect(Either.isLeft(result), input).toBe(true)
        if (Either.isLeft(result)) {
          expect(result.left).toBeInstanceOf(RequestValidationError)
          expect(result.left._tag).toBe("RequestValidationError")
          const expected = Effect.runSync(Effect.flip(CountryCode.validate(input)))
          expect(result.left.message).toBe(expected.message)
          expect(result.left.issues).toEqual(expected.issues)
        }
      }
    })

    it("refuses a literal that is no alpha-3 code when compiled (tsc), and takes strings, brands and unions of codes", () => {
      // @ts-expect-error alpha-2
      const alpha2 = Subdivisions.forCountry("US")
      // @ts-expect-error lower case
      const lower = Subdivisions.forCountry("usa")
      // @ts-expect-error one member of the union is no code
      const mixed = Subdivisions.isValid(Math.random() < 2 ? "XXX" : "USA", "US-CA")
      // @ts-expect-error
      const searched = Subdivisions.search("bra", "sao paulo")
      expect([Either.isLeft(alpha2), Either.isLeft(lower), Either.isLeft(mixed), Either.isLeft(searched)]).toEqual([true, true, true, true])
      // Codes known only at run time are checked then: a string, a branded string, a union of codes.
      const typed: string = "CAN"
      const branded = "MEX" as string & Brand.Brand<"Country">
      const union: "USA" | "CAN" = Math.random() < 2 ? "USA" : "CAN"
      expect([typed, branded, union].map((code) => codes(Subdivisions.forCountry(code))[0])).toEqual(["CA-AB", "MX-AGU", "US-AK"])
      expect(codes(Subdivisions.forCountry(branded))).toContain("MX-CMX")
      expect(codes(Subdivisions.forCountry(union))).toContain("US-CA")
      // A caller's own generic wrapper compiles, as it did before `Checked`.
      const ofCode = <C extends CountryCode.CountryCode>(code: C) => Subdivisions.forCountry(code)
      const ofText = <C extends string>(code: C, text: C) => Subdivisions.search(code, text)
      expect(codes(ofCode("USA"))).toContain("US-CA")
      expect(Either.isLeft(ofText("usa", "usa"))).toBe(true)
    })

    it("says when a refused code names a country all the same (alpha-2, other letters), quoting only such a code", () => {
      const messageOf = (input: string) => Either.match(Subdivisions.forCountry(input), { onLeft: (e) => e.message, onRight: () => "" })
      const base = `Invalid country code: expected one of the 249 ISO 3166-1 alpha-3 codes of the service (e.g. "USA")`
      expect(messageOf("US")).toBe(
        `${base}; "US" is USA's alpha-2 code (CountryCode.fromAlpha2 converts it; CountryCode.parse reads codes as people type them)`
      )
      // fromAlpha2 reads upper case only: a lower-case code is pointed to parse alone.
      expect(messageOf("fr")).toBe(`${base}; "fr" is FRA's alpha-2 code (CountryCode.parse reads codes as people type them)`)
      expect(messageOf("usa")).toBe(`${base}; "usa" is USA in other letters (CountryCode.parse reads codes as people type them)`)
      for (const input of ["XX", "XYZ", " US", "u\u017fa", "USAA", "<script>"]) expect(messageOf(input), input).toBe(base)
    })

    it("hands out frozen entries, so no caller can change what the next one sees", () => {
      const usa = right(Subdivisions.forCountry("USA"))
      expect(Object.isFrozen(usa)).toBe(true)
      expect(Object.isFrozen(usa[0])).toBe(true)
      expect(right(Subdivisions.forCountry("USA"))).toBe(usa)
      // Nor through the answers' wrappers (from plain JavaScript, or a cast): each call gets its own.
      const answers = [Subdivisions.forCountry("CAN"), Subdivisions.byCode("US-CA"), Subdivisions.isValid("USA", "US-CA")]
      Object.assign(answers[0]!, { right: [] })
      Object.assign(answers[1]!, { value: { code: "US-CA", name: "changed" } })
      Object.assign(answers[2]!, { right: false })
      expect(right(Subdivisions.forCountry("CAN"))).toHaveLength(13)
      expect(Option.map(Subdivisions.byCode("US-CA"), (e) => e.name)).toEqual(Option.some("California"))
      expect(Subdivisions.isValid("USA", "US-CA")).toEqual(Either.right(true))
    })
  })

  describe("byCode", () => {
    it("finds a subdivision by its full code", () => {
      expect(Subdivisions.byCode("US-CA")).toEqual(Option.some({ code: "US-CA", name: "California", type: "State" }))
      expect(Option.map(Subdivisions.byCode("BR-SP"), (e) => e.name)).toEqual(Option.some("São Paulo"))
      expect(Option.map(Subdivisions.byCode("AZ-NV"), (e) => e.parent)).toEqual(Option.some("AZ-NX"))
    })

    it("is None for codes the snapshot lacks, in any form", () => {
      for (const code of ["us-ca", "US-ZZ", "XX-YY", "", "US", "USA-CA", "US_CA", " US-CA", "__proto__"]) {
        expect(Option.isNone(Subdivisions.byCode(code)), code).toBe(true)
      }
    })
  })

  describe("isValid", () => {
    it("tells whether a code belongs to a country", () => {
      expect(Subdivisions.isValid("USA", "US-CA")).toEqual(Either.right(true))
      expect(Subdivisions.isValid("CAN", "US-CA")).toEqual(Either.right(false))
      // @ts-expect-error a literal in lower case is no ISO 3166-2 code
      expect(Subdivisions.isValid("USA", "us-ca")).toEqual(Either.right(false))
      expect(Subdivisions.isValid("ABW", "AW-01")).toEqual(Either.right(false))
      expect(Subdivisions.isValid("BGD", "BD-01")).toEqual(Either.right(true))
    })

    it("refuses a literal that is no ISO 3166-2 code when compiled (tsc), and takes strings and templates", () => {
      const refused = [
        // @ts-expect-error the code without its country: never a subdivision of anything
        Subdivisions.isValid("USA", "CA"),
        // @ts-expect-error an alpha-3 prefix
        Subdivisions.isValid("USA", "USA-CA"),
        // @ts-expect-error one member of the union is no code
        Subdivisions.isValid("USA", Math.random() < 2 ? "US-CA" : "CA")
      ]
      expect(refused).toEqual([Either.right(false), Either.right(false), Either.right(true)])
      // @ts-expect-error through byCode too
      expect(Option.isNone(Subdivisions.byCode("USA-CA"))).toBe(true)
      // Codes known only at run time are checked then; a caller's own type parameter is left to the run-time answer.
      const typed: string = "CA"
      const template: `US-${string}` = "US-CA"
      const generic = <S extends string>(code: S) => Subdivisions.isValid("USA", code)
      expect([Subdivisions.isValid("USA", typed), Subdivisions.isValid("USA", template), generic("US-NY")])
        .toEqual([Either.right(false), Either.right(true), Either.right(true)])
      expect(Subdivisions.isValid("CAN", "US-CA")).toEqual(Either.right(false))
    })

    it("refuses, when compiled, each way a literal misses the ISO 3166-2 form; takes each form the data has", () => {
      const refused = [
        // @ts-expect-error four characters after the hyphen
        Subdivisions.byCode("US-CALI"),
        // @ts-expect-error none after it
        Subdivisions.byCode("US-"),
        // @ts-expect-error a lower-case country
        Subdivisions.byCode("us-CA"),
        // @ts-expect-error a lower-case first character after the hyphen
        Subdivisions.byCode("US-cA"),
        // @ts-expect-error a lower-case second one
        Subdivisions.byCode("US-Ca"),
        // @ts-expect-error a digit in the country
        Subdivisions.byCode("U5-CA"),
        // @ts-expect-error a second hyphen
        Subdivisions.byCode("US-C-A")
      ]
      expect(refused.every(Option.isNone)).toBe(true)
      // One to three letters or digits, each digit among them: as the snapshot has them, so each compiles.
      const taken = [
        Subdivisions.byCode("ES-M"),
        Subdivisions.byCode("CZ-10"),
        Subdivisions.byCode("GB-ENG"),
        Subdivisions.byCode("FR-75C"),
        Subdivisions.byCode("FR-971"),
        Subdivisions.byCode("PH-00"),
        Subdivisions.isValid("CZE", "CZ-20A"),
        Subdivisions.isValid("CZE", "CZ-31"),
        Subdivisions.isValid("CZE", "CZ-42"),
        Subdivisions.isValid("CZE", "CZ-53"),
        Subdivisions.isValid("CZE", "CZ-64"),
        Subdivisions.isValid("CZE", "CZ-80"),
        Subdivisions.isValid("CZE", "CZ-71")
      ]
      expect(taken.map((answer) => Option.isOption(answer) ? Option.isSome(answer) : right(answer)))
        .toEqual(Array.from({ length: 13 }, () => true))
    })

    it("fails on an unknown country instead of answering false", () => {
      for (const input of badCountries) {
        const result = Subdivisions.isValid(input, "US-CA")
        expect(Either.isLeft(result) && result.left._tag === "RequestValidationError", input).toBe(true)
      }
    })
  })

  describe("search", () => {
    it("ignores case and diacritics", () => {
      for (const query of ["sao paulo", "SAO PAULO", "São Paulo", "  são   paulo "]) {
        expect(codes(Subdivisions.search("BRA", query))[0], query).toBe("BR-SP")
      }
      expect(codes(Subdivisions.search("USA", "new y"))).toEqual(["US-NY"])
      expect(codes(Subdivisions.search("USA", "NEW Y"))).toEqual(["US-NY"])
    })

    it("folds apostrophes, punctuation and letters without a decomposition", () => {
      expect(codes(Subdivisions.search("ARE", "ajman"))).toEqual(["AE-AJ"]) // ‘Ajmān
      expect(codes(Subdivisions.search("ARE", "ras al khaymah"))).toEqual(["AE-RK"]) // Ra’s al Khaymah
      expect(codes(Subdivisions.search("AND", "escaldes-engordany"))).toEqual(["AD-08"])
      expect(codes(Subdivisions.search("ESP", "lerida"))).toEqual(["ES-L"]) // Lleida [Lérida]
      expect(normalize("Bakı")).toBe("baki")
      expect(normalize("Ærøskøbing ǝ")).toBe("aeroskobing e")
    })

    it("normalize: ß as ss, non-ASCII punctuation and a backtick as word breaks or nothing, letters past U+FFFF kept whole, full-width letters", () => {
      expect(normalize("Straße")).toBe("strasse")
      expect(normalize("Zürich")).toBe("zurich")
      expect(normalize("Saint\u2014Denis")).toBe("saint denis") // an em dash separates words
      expect(normalize("Ra`s al Khaymah")).toBe("ras al khaymah") // a backtick is an apostrophe
      expect(normalize(" -Saint-Denis- ")).toBe("saint denis")
      expect(normalize("x\u{10400}y")).toBe("x\u{10428}y") // one letter, two UTF-16 code units
      // Full-width letters, as an input method types them, are letters.
      expect(normalize("Ｎｅｗ　Ｙｏｒｋ")).toBe("new york")
      expect(codes(Subdivisions.search("USA", "ｎｅｗ ｙｏｒｋ"))).toEqual(["US-NY"])
      // Forms with no lower case of their own that decompose to a capital: bold, double-struck, squared.
      expect(normalize("𝐍𝐞𝐰 𝐘𝐨𝐫𝐤")).toBe("new york")
      expect(codes(Subdivisions.search("USA", "ℕew 🅈🄾🅁🄺"))).toEqual(["US-NY"])
    })

    it("ranks exact, then prefix, then word prefix, then substring", () => {
      expect(names(Subdivisions.search("FRA", "loire"))).toEqual([
        "Loire", // exact
        "Loire-Atlantique", // prefix
        "Loiret",
        "Centre-Val de Loire", // word prefix, by name
        "Haute-Loire",
        "Indre-et-Loire",
        "Maine-et-Loire",
        "Pays-de-la-Loire",
        "Saône-et-Loire"
      ])
      expect(names(Subdivisions.search("POL", "pomorskie"))).toEqual([
        "Pomorskie", // exact
        "Kujawsko-Pomorskie", // word prefix
        "Zachodniopomorskie" // substring
      ])
    })

    it("finds what a plain scan of every name finds, in the same order", () => {
      // The reference: every entry checked, ranked as documented, a name read both without its apostrophes and with
      // them as spaces (the better rank counts).
      const spacedName = (name: string) => normalize(name.replace(/['`\u2018\u2019\u02bb\u02bc\u00b4]/g, " "))
      const reference = (country: string, text: string) => {
        const query = normalize(text)
        const entries = right(Subdivisions.forCountry(country))
        const ranked = entries.flatMap((entry, i) => {
          const name = normalize(entry.name)
          const suffix = entry.code.slice(entry.code.indexOf("-") + 1)
          const rankOfForm = (form: string) =>
            form === query
              ? 0
              : form.startsWith(query)
              ? 1
              : form.includes(` ${query}`)
              ? 2
              : form.includes(query)
              ? 3
              : -1
          const ranks = [rankOfForm(name), rankOfForm(spacedName(entry.name))].filter((rank) => rank >= 0)
          const rank = query === normalize(entry.code) || query === normalize(suffix)
            ? 0
            : ranks.length === 0
            ? -1
            : Math.min(...ranks)
          return rank < 0 ? [] : [{ rank, name, i, code: entry.code }]
        })
        ranked.sort((a, b) => a.rank - b.rank || (a.name < b.name ? -1 : a.name > b.name ? 1 : a.i - b.i))
        return ranked.map((r) => r.code)
      }
      let queries = 0
      for (const country of ["USA", "FRA", "GBR", "ESP", "AZE", "BRA", "SVN", "THA", "ARE", "MKD"]) {
        for (const entry of right(Subdivisions.forCountry(country))) {
          const name = normalize(entry.name)
          const end = spacedName(entry.name).slice(-6)
          for (const query of [name.slice(0, 1), name.slice(0, 2), name.slice(1, 4), name.slice(2, 7), name, end]) {
            if (query.trim() === "") continue
            expect(codes(Subdivisions.search(country, query)), `${country} ${query}`).toEqual(reference(country, query))
            queries++
          }
        }
      }
      expect(queries).toBeGreaterThan(2000)
    })

    it("treats the code as an exact match", () => {
      expect(codes(Subdivisions.search("USA", "ny"))[0]).toBe("US-NY")
      expect(codes(Subdivisions.search("USA", "us-ny"))[0]).toBe("US-NY")
    })

    it("reads plain ASCII with extra blanks, codes with digits, and every apostrophe people type", () => {
      // Plain ASCII skips the Unicode pass, but not the blanks: runs of spaces and blanks around count as one space.
      expect(codes(Subdivisions.search("USA", "  new   york "))).toEqual(["US-NY"])
      expect(codes(Subdivisions.search("USA", " ny "))[0]).toBe("US-NY")
      // Digits stay letters through the punctuation pass ("-" sends the text there).
      expect(codes(Subdivisions.search("FRA", "FR-75C"))).toEqual(["FR-75C"])
      expect(codes(Subdivisions.search("BGD", "BD-01"))[0]).toBe("BD-01")
      // A left single quote and the ʻokina (a modifier letter) are apostrophes too.
      expect(codes(Subdivisions.search("ARE", "Ra\u2018s al Khaymah"))).toEqual(["AE-RK"])
      expect(codes(Subdivisions.search("USA", "Hawai\u02bbi"))).toEqual(["US-HI"])
      // An apostrophe typed as a space, or as a URL slug writes it: found as well as with it or without it.
      for (const query of ["cote d azur", "cote-d-azur", "Côte d’Azur", "cote dazur", "d azur"]) {
        expect(codes(Subdivisions.search("FRA", query)), query).toEqual(["FR-PAC"])
      }
      const aosta = codes(Subdivisions.search("ITA", "valle d aosta"))
      expect(aosta).toEqual(codes(Subdivisions.search("ITA", "valle d'aosta")))
      expect(aosta).not.toEqual([])
    })

    it("matches nothing for blank text, honours limit, and rejects unknown countries and a negative or NaN limit", () => {
      expect(right(Subdivisions.search("USA", ""))).toEqual([])
      expect(right(Subdivisions.search("USA", " - "))).toEqual([])
      expect(right(Subdivisions.search("ABW", "a"))).toEqual([])
      expect(right(Subdivisions.search("USA", "a", { limit: 3 }))).toHaveLength(3)
      expect(right(Subdivisions.search("USA", "a", { limit: 2.5 }))).toHaveLength(2)
      expect(right(Subdivisions.search("USA", "new york", { limit: 0 }))).toEqual([])
      expect(right(Subdivisions.search("USA", "new york", { limit: Infinity }))).toHaveLength(1)
      // And, from untyped code, a limit that is no number (null would floor to 0: nothing found, silently).
      for (const limit of [-1, Number.NaN, -Infinity, null as unknown as number, "3" as unknown as number]) {
        const refused = Subdivisions.search("USA", "new york", { limit })
        expect(Either.isLeft(refused) && refused.left.issues.map((i) => i.path), String(limit)).toEqual(["limit"])
        expect(Either.isLeft(refused) && refused.left.message).toBe("Invalid search limit: expected a number of results, 0 or more")
      }
      // Options that are no object, or a misspelt key, would leave every result in without a word.
      for (const [options, path] of [[{ limt: 1 }, "limt"], [null, ""], [5, ""], ["limit", ""]] as const) {
        const refused = Subdivisions.search("USA", "a", options as { readonly limit?: number })
        expect(Either.isLeft(refused) && refused.left.issues.map((i) => i.path), String(options)).toEqual([path])
      }
      expect(right(Subdivisions.search("USA", "a", {}))).toHaveLength(right(Subdivisions.search("USA", "a")).length)
      expect(right(Subdivisions.search("USA", "zzz"))).toEqual([])
      for (const input of badCountries) {
        const result = Subdivisions.search(input, "a")
        expect(Either.isLeft(result) && result.left._tag === "RequestValidationError", input).toBe(true)
      }
    })
  })

  describe("compareEntries", () => {
    it("a name in another Unicode encoding of the same text is no rename; another letter case is", () => {
      const before = [{ code: "CO-DC", name: "Bogot\u00e1" }, { code: "CO-ANT", name: "Antioquia" }]
      const after = [{ code: "CO-DC", name: "Bogota\u0301" }, { code: "CO-ANT", name: "ANTIOQUIA" }]
      expect(compareEntries(before, after, false)).toEqual({
        added: [],
        removed: [],
        renamed: [{ code: "CO-ANT", from: "Antioquia", to: "ANTIOQUIA" }],
        changed: []
      })
    })
  })

  describe("countriesWithout", () => {
    it("lists the 49 countries without subdivisions, sorted", () => {
      const without = Subdivisions.countriesWithout()
      expect(without).toHaveLength(49)
      expect([...without]).toEqual([...without].sort())
      for (const country of without) expect(right(Subdivisions.forCountry(country))).toEqual([])
      const withSome = CountryCode.alpha3Codes.filter((c) => right(Subdivisions.forCountry(c)).length > 0)
      expect(withSome).toHaveLength(200)
      expect(without).toContain("ATA")
      expect(without).not.toContain("USA")
      // One list for every caller: frozen, so no caller can change another's.
      expect(Object.isFrozen(without)).toBe(true)
    })
  })

  describe("the snapshot", () => {
    it("covers all 249 countries with valid entries that byCode finds again", () => {
      const decode = Schema.decodeUnknownSync(Schema.Array(Subdivisions.SnapshotSubdivision))
      let total = 0
      for (const country of CountryCode.alpha3Codes) {
        const entries = right(Subdivisions.forCountry(country))
        decode(entries)
        for (const entry of entries) {
          expect(entry.code.startsWith(`${CountryCode.toAlpha2(country)}-`)).toBe(true)
          expect(Subdivisions.byCode(entry.code)).toEqual(Option.some(entry))
          expect(Subdivisions.isValid(country, entry.code)).toEqual(Either.right(true))
          if (entry.parent !== undefined) {
            expect(Subdivisions.isValid(country, entry.parent)).toEqual(Either.right(true))
          }
        }
        total += entries.length
      }
      expect(total).toBe(5046)
    })

    it("the generated module holds exactly the entries of data/subdivisions.json", () => {
      const file = JSON.parse(readFileSync("data/subdivisions.json", "utf8")) as Record<
        string,
        ReadonlyArray<Subdivisions.SnapshotSubdivision>
      >
      expect(Object.keys(subdivisionsData)).toEqual(Object.keys(file))
      expect(Object.keys(subdivisionsData).sort()).toEqual([...CountryCode.alpha3Codes].sort())
      expect(types).toEqual(typeTable(file))
      for (const country of CountryCode.alpha3Codes) {
        const prefix = `${CountryCode.toAlpha2(country)}-`
        const entries = decodeRows(subdivisionsData[country]!, prefix, types)
        // toStrictEqual: same keys too (no `parent: undefined` where the file has none).
        expect(entries).toStrictEqual(file[country])
        expect(encodeRows(file[country]!, prefix, types)).toBe(subdivisionsData[country])
      }
    })

    it("provenance is the data file's, as its meta file records it", () => {
      const meta = JSON.parse(readFileSync("data/subdivisions.meta.json", "utf8"))
      expect(Subdivisions.provenance).toStrictEqual({
        source: meta.source,
        version: meta.sourceVersion,
        sha256: meta.sha256
      })
      expect(Object.isFrozen(Subdivisions.provenance)).toBe(true)
    })

    it("encodeRows refuses a code, or a parent, of another country, and a type not in the table", () => {
      const types = ["State"]
      expect(() => encodeRows([{ code: "CA-ON", name: "Ontario", type: "State" }], "US-", types))
        .toThrow("CA-ON does not start with US-")
      expect(() => encodeRows([{ code: "US-XX", name: "X", type: "State", parent: "CA-ON" }], "US-", types))
        .toThrow("CA-ON does not start with US-")
      expect(() => encodeRows([{ code: "US-CA", name: "California", type: "Land" }], "US-", types))
        .toThrow(`type "Land" is not in the table`)
    })

    it("a snapshot entry is a Subdivision (the API shape, type and parent optional)", () => {
      const decode = Schema.decodeUnknownSync(Subdivisions.Subdivision)
      expect(decode({ code: "BD-01", name: "Bandarban" })).toEqual({ code: "BD-01", name: "Bandarban" })
      const entry: Subdivisions.Subdivision = Option.getOrThrow(Subdivisions.byCode("BD-01"))
      expect(decode(entry)).toEqual(entry)
    })
  })

  describe("runs without Node", () => {
    // Bundled for the browser (esbuild fails on any node: import) and evaluated with only the web globals an edge
    // runtime has: no require, process, Buffer or fs.
    it("as a browser CommonJS bundle in a bare VM context", async () => {
      const result = await build({
        entryPoints: ["src/Subdivisions.ts"],
        bundle: true,
        write: false,
        format: "cjs",
        platform: "browser",
        logLevel: "silent"
      })
      const code = result.outputFiles[0]!.text
      expect(code).not.toMatch(/require\(["'](node:)?fs["']\)/)
      const module = { exports: {} as Record<string, unknown> }
      const { clearTimeout, performance, queueMicrotask, setTimeout, TextDecoder, TextEncoder, URL } = globalThis
      const web = { clearTimeout, performance, queueMicrotask, setTimeout, TextDecoder, TextEncoder, URL }
      Vm.runInNewContext(code, { ...web, module, exports: module.exports })
      const forCountry = module.exports["forCountry"] as typeof Subdivisions.forCountry
      const search = module.exports["search"] as typeof Subdivisions.search
      expect(codes(search("BRA", "sao paulo"))[0]).toBe("BR-SP")
      expect(right(forCountry("USA"))).toHaveLength(57)
    })
  })
})
