/**
 * The ISO 3166-1 alpha-3 country codes the service accepts (the 249 values of the interface's `country_code`),
 * as a Schema literal, and conversion from and to alpha-2.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Issue, RequestValidationError } from "./FinError.js"
import type { IsLiteral } from "./internal/literal.js"

/**
 * The 249 alpha-3 codes, in the order the interface lists them.
 *
 * @since 0.1.0
 * @category constants
 */
export const alpha3Codes = Object.freeze([
  "AFG", "ALB", "DZA", "ASM", "AND", "AGO", "AIA", "ATA", "ATG", "ARG", "ARM", "ABW", "AUS", "AUT", "AZE", "BHS",
  "BHR", "BGD", "BRB", "BLR", "BEL", "BLZ", "BEN", "BMU", "BTN", "BOL", "BES", "BIH", "BWA", "BVT", "BRA", "IOT",
  "BRN", "BGR", "BFA", "BDI", "CPV", "KHM", "CMR", "CAN", "CYM", "CAF", "TCD", "CHL", "CHN", "CXR", "CCK", "COL",
  "COM", "COD", "COG", "COK", "CRI", "HRV", "CUB", "CUW", "CYP", "CZE", "CIV", "DNK", "DJI", "DMA", "DOM", "ECU",
  "EGY", "SLV", "GNQ", "ERI", "EST", "SWZ", "ETH", "FLK", "FRO", "FJI", "FIN", "FRA", "GUF", "PYF", "ATF", "GAB",
  "GMB", "GEO", "DEU", "GHA", "GIB", "GRC", "GRL", "GRD", "GLP", "GUM", "GTM", "GGY", "GIN", "GNB", "GUY", "HTI",
  "HMD", "VAT", "HND", "HKG", "HUN", "ISL", "IND", "IDN", "IRN", "IRQ", "IRL", "IMN", "ISR", "ITA", "JAM", "JPN",
  "JEY", "JOR", "KAZ", "KEN", "KIR", "PRK", "KOR", "KWT", "KGZ", "LAO", "LVA", "LBN", "LSO", "LBR", "LBY", "LIE",
  "LTU", "LUX", "MAC", "MDG", "MWI", "MYS", "MDV", "MLI", "MLT", "MHL", "MTQ", "MRT", "MUS", "MYT", "MEX", "FSM",
  "MDA", "MCO", "MNG", "MNE", "MSR", "MAR", "MOZ", "MMR", "NAM", "NRU", "NPL", "NLD", "NCL", "NZL", "NIC", "NER",
  "NGA", "NIU", "NFK", "MNP", "NOR", "OMN", "PAK", "PLW", "PSE", "PAN", "PNG", "PRY", "PER", "PHL", "PCN", "POL",
  "PRT", "PRI", "QAT", "MKD", "ROU", "RUS", "RWA", "REU", "BLM", "SHN", "KNA", "LCA", "MAF", "SPM", "VCT", "WSM",
  "SMR", "STP", "SAU", "SEN", "SRB", "SYC", "SLE", "SGP", "SXM", "SVK", "SVN", "SLB", "SOM", "ZAF", "SGS", "SSD",
  "ESP", "LKA", "SDN", "SUR", "SJM", "SWE", "CHE", "SYR", "TWN", "TJK", "TZA", "THA", "TLS", "TGO", "TKL", "TON",
  "TTO", "TUN", "TUR", "TKM", "TCA", "TUV", "UGA", "UKR", "ARE", "GBR", "UMI", "USA", "URY", "UZB", "VUT", "VEN",
  "VNM", "VGB", "VIR", "WLF", "ESH", "YEM", "ZMB", "ZWE", "ALA"
] as const)

// alpha-2 codes, index-aligned with `alpha3Codes` (from iso-codes 4.20's iso_3166-1.json).
const alpha2Codes = [
  "AF", "AL", "DZ", "AS", "AD", "AO", "AI", "AQ", "AG", "AR", "AM", "AW", "AU", "AT", "AZ", "BS",
  "BH", "BD", "BB", "BY", "BE", "BZ", "BJ", "BM", "BT", "BO", "BQ", "BA", "BW", "BV", "BR", "IO",
  "BN", "BG", "BF", "BI", "CV", "KH", "CM", "CA", "KY", "CF", "TD", "CL", "CN", "CX", "CC", "CO",
  "KM", "CD", "CG", "CK", "CR", "HR", "CU", "CW", "CY", "CZ", "CI", "DK", "DJ", "DM", "DO", "EC",
  "EG", "SV", "GQ", "ER", "EE", "SZ", "ET", "FK", "FO", "FJ", "FI", "FR", "GF", "PF", "TF", "GA",
  "GM", "GE", "DE", "GH", "GI", "GR", "GL", "GD", "GP", "GU", "GT", "GG", "GN", "GW", "GY", "HT",
  "HM", "VA", "HN", "HK", "HU", "IS", "IN", "ID", "IR", "IQ", "IE", "IM", "IL", "IT", "JM", "JP",
  "JE", "JO", "KZ", "KE", "KI", "KP", "KR", "KW", "KG", "LA", "LV", "LB", "LS", "LR", "LY", "LI",
  "LT", "LU", "MO", "MG", "MW", "MY", "MV", "ML", "MT", "MH", "MQ", "MR", "MU", "YT", "MX", "FM",
  "MD", "MC", "MN", "ME", "MS", "MA", "MZ", "MM", "NA", "NR", "NP", "NL", "NC", "NZ", "NI", "NE",
  "NG", "NU", "NF", "MP", "NO", "OM", "PK", "PW", "PS", "PA", "PG", "PY", "PE", "PH", "PN", "PL",
  "PT", "PR", "QA", "MK", "RO", "RU", "RW", "RE", "BL", "SH", "KN", "LC", "MF", "PM", "VC", "WS",
  "SM", "ST", "SA", "SN", "RS", "SC", "SL", "SG", "SX", "SK", "SI", "SB", "SO", "ZA", "GS", "SS",
  "ES", "LK", "SD", "SR", "SJ", "SE", "CH", "SY", "TW", "TJ", "TZ", "TH", "TL", "TG", "TK", "TO",
  "TT", "TN", "TR", "TM", "TC", "TV", "UG", "UA", "AE", "GB", "UM", "US", "UY", "UZ", "VU", "VE",
  "VN", "VG", "VI", "WF", "EH", "YE", "ZM", "ZW", "AX"
] as const satisfies { readonly length: (typeof alpha3Codes)["length"] }

// Both code types go through a mapped type: an alias of `(typeof codes)[number]` itself is dropped by the compiler,
// which then prints the 249 literals (`Option<"AFG" | ... 225 more ... | "ALA">`) wherever the type appears.

/**
 * The alpha-2 code of a `CountryCode`, as `toAlpha2` returns it.
 *
 * @since 0.1.0
 * @category models
 */
export type Alpha2Code = { readonly [C in (typeof alpha2Codes)[number]]: C }[(typeof alpha2Codes)[number]]

/**
 * An alpha-3 code the service accepts.
 *
 * @since 0.1.0
 * @category models
 */
export type CountryCode = { readonly [C in (typeof alpha3Codes)[number]]: C }[(typeof alpha3Codes)[number]]

/**
 * The type of a country argument (`SubdivisionService.list`, `Subdivisions.forCountry`, ...): a string, checked at
 * run time, except that a literal must be a `CountryCode`. `list("usa")` or `list("US")` does not compile, the
 * message saying what is expected, where it would only fail when run; a `string`, a branded string or a union of
 * codes passes as before.
 *
 * @since 0.1.0
 * @category models
 */
export type Checked<C extends string> = CheckedAs<
  C,
  CountryCode,
  "expected an ISO 3166-1 alpha-3 country code of the service, e.g. \"USA\""
>

/**
 * The type of `fromAlpha2`'s argument: a string, except that a literal must be an `Alpha2Code`. `fromAlpha2("USA")`
 * (an alpha-3 code, already what it returns) or `fromAlpha2("us")` does not compile, where it would only give `None`
 * when run; a `string` or a branded string passes as before.
 *
 * @since 0.1.0
 * @category models
 */
export type CheckedAlpha2<S extends string> = CheckedAs<
  S,
  Alpha2Code,
  "expected an ISO 3166-1 alpha-2 country code, e.g. \"US\""
>

// `S`, unless it is a literal (or a union holding one) that is none of `Codes`: then each such member is `Message`.
type CheckedAs<S extends string, Codes extends string, Message extends string> = [BadLiteral<S, Codes>] extends [never]
  ? S
  : S extends Codes ? S
  : Message

// Through `infer`, as `FeeService.CheckedRequest` does: a caller's own type parameter (a wrapper
// `<C extends CountryCode>(c: C) => list(c)`, or `<C extends string>`) is then accepted as before, where a check of
// `C` itself is left unresolved and refuses it. Each member of a union on its own: `"USA" | "US"` is refused, the
// message pointing at `"US"`.
type BadLiteral<C, Codes extends string> = [C] extends [infer S] ? true extends LiteralNotOf<S, Codes> ? true : never
  : never

type LiteralNotOf<S, Codes extends string> = S extends string
  ? IsLiteral<S> extends true ? S extends Codes ? never : true : never
  : never

/**
 * Schema of `CountryCode`: exactly one of the 249 upper-case alpha-3 codes (no trimming, no case folding), so that a
 * path built from it can never carry anything else.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CountryCode: Schema.Literal<typeof alpha3Codes> = Schema.Literal(...alpha3Codes).annotations({
  // A name for JSON Schema and OpenAPI: the 249 codes are one definition there, referred to, not written out each time.
  identifier: "effect-fin.CountryCode",
  title: "an ISO 3166-1 alpha-3 country code of the service",
  // One line for the whole union: without it, a refused value is reported once per code (249 lines, ~10 kB).
  message: () => ({ message: "Expected an ISO 3166-1 alpha-3 country code of the service", override: true })
})

const alpha3Set: ReadonlySet<string> = new Set(alpha3Codes)
const toAlpha2Map = new Map<string, Alpha2Code>(alpha3Codes.map((code, i) => [code, alpha2Codes[i]!]))
const toAlpha3Map = new Map<string, CountryCode>(alpha3Codes.map((code, i) => [alpha2Codes[i]!, code]))

/**
 * Whether `input` is one of the 249 codes.
 *
 * @since 0.1.0
 * @category guards
 */
export const isCountryCode = (input: unknown): input is CountryCode => typeof input === "string" && alpha3Set.has(input)

/**
 * The alpha-2 code of an alpha-3 code (`"USA"` -> `"US"`).
 *
 * @since 0.1.0
 * @category conversions
 */
export const toAlpha2 = (code: CountryCode): Alpha2Code => toAlpha2Map.get(code)!

/**
 * The alpha-3 code of an alpha-2 code (`"US"` -> `Some("USA")`), case-sensitive; `None` when unknown.
 *
 * @since 0.1.0
 * @category conversions
 */
export const fromAlpha2 = <S extends string>(alpha2: CheckedAlpha2<S>): Option.Option<CountryCode> =>
  Option.fromNullable(toAlpha3Map.get(alpha2))

/**
 * Checks untrusted input before it reaches a request path: a `CountryCode`, or `RequestValidationError`.
 *
 * @since 0.1.0
 * @category validation
 */
export const validate = (input: unknown): Effect.Effect<CountryCode, RequestValidationError> =>
  isCountryCode(input)
    ? Effect.succeed(input)
    : Effect.fail(
      new RequestValidationError({
        message: `Invalid country code: expected one of the 249 ISO 3166-1 alpha-3 codes of the service (e.g. "USA")${
          hintFor(input)
        }`,
        issues: [new Issue({ path: "country", expected: "an ISO 3166-1 alpha-3 country code of the service" })]
      })
    )

const parseHint = "CountryCode.parse reads codes as people type them"

// A code that names a country all the same (alpha-2, or another letter case) is said to, with the way to read it.
// Only such a code is quoted: two or three ASCII letters of the table, never whatever else was given.
const hintFor = (input: unknown): string => {
  if (typeof input !== "string" || !/^[A-Za-z]{2,3}$/.test(input)) return ""
  const code = input.toUpperCase()
  const country = code.length === 2 ? toAlpha3Map.get(code) : isCountryCode(code) ? code : undefined
  if (country === undefined) return ""
  // fromAlpha2 is case-sensitive: it reads "US", not "us".
  const converts = input === code ? "CountryCode.fromAlpha2 converts it; " : ""
  return code.length === 2
    ? `; "${input}" is ${country}'s alpha-2 code (${converts}${parseHint})`
    : `; "${input}" is ${country} in other letters (${parseHint})`
}

/**
 * Reads a country code as people write it: surrounding spaces and letter case ignored, alpha-2 accepted (`" usa"`,
 * `"us"` -> `"USA"`). Anything else is a `RequestValidationError`, as with `validate`.
 *
 * @since 0.1.0
 * @category validation
 */
export const parse = (input: string): Effect.Effect<CountryCode, RequestValidationError> => {
  // Typed as text, but given from outside (a repeated query parameter is an array): refused like every other bad code.
  if (typeof input !== "string") return validate(input)
  const trimmed = input.trim()
  // ASCII letters only: upper-casing other scripts can make ASCII ("ıta" would become "ITA").
  if (!/^[A-Za-z]{2,3}$/.test(trimmed)) return validate(input)
  const code = trimmed.toUpperCase()
  return validate(code.length === 2 ? Option.getOrElse(fromAlpha2(code), () => input) : code)
}
