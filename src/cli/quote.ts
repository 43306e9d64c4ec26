/**
 * The `quote` command, and the reading of its flags: amounts in plain decimal, currencies in any case, a refusal named
 * by the flags.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as FeeService from "../FeeService.js"
import * as FinError from "../FinError.js"
import * as Amounts from "../internal/amount.js"
import * as Issues from "../internal/issues.js"
import * as Render from "./render.js"
import { clientLayer, failingAsJson, json, print } from "./shared.js"

// The request's fields by the flags that give them: a refusal names what was typed.
const flags = {
  source_currency: "--from",
  destination_currency: "--to",
  source_amount: "--amount",
  destination_amount: "--receive",
  beneficiary_id: "--beneficiary"
} as const

const flagWords = (text: string): string =>
  text
    .replace(/\b(source_currency|destination_currency|source_amount|destination_amount|beneficiary_id)\b/g, (field) =>
      flags[field as keyof typeof flags])
    // Currencies are taken in any case here (upper-cased before the check).
    .replace("three upper-case letters", "three letters")

// The request's refusal said in the terms of the command line: its flags, not the fields they fill.
const inFlags = (error: FinError.RequestValidationError): FinError.RequestValidationError => {
  const issues = error.issues.map((issue) =>
    new FinError.Issue({ path: flagWords(issue.path), expected: flagWords(issue.expected) })
  )
  return new FinError.RequestValidationError({ message: `Invalid quote: ${Issues.summarize(issues)}`, issues })
}

// Plain decimal notation only: `Number` would also read "0x10" as 16, "1e2" as 100 and " 12" as 12. A decimal with
// more significant digits than a number keeps (90071992547409.99 reads as ...409.98) is refused too: the service would
// quote another amount.
const amount = (
  field: "source_amount" | "destination_amount",
  text: string
): Either.Either<number, FinError.Issue> => {
  const refuse = (expected: string) => Either.left(new FinError.Issue({ path: field, expected }))
  // A negative amount is said as the schema says a zero one, not as a matter of notation.
  if (/^-\d+(\.\d+)?$/.test(text)) return refuse(Amounts.EXPECTED)
  if (!/^\d+(\.\d+)?$/.test(text)) {
    return refuse("an amount in plain decimal notation (digits, and any fraction after a dot: 1000 or 12.50)")
  }
  const value = Number(text)
  // Leading zeros and the fraction's trailing ones are no significant digits.
  const [whole = "", fraction = ""] = text.split(".")
  const decimals = fraction.replace(/0+$/, "")
  const digits = whole.replace(/^0+(?=\d)/, "") + (decimals === "" ? "" : `.${decimals}`)
  // What is sent is the number's shortest form (JSON's): it must be what was typed. Past MAX_SAFE_INTEGER the schema
  // refuses the amount anyway, with its own message.
  const exact = value > Number.MAX_SAFE_INTEGER || plainDecimal(value) === digits
  if (!exact) return refuse("an amount with no more significant digits than a number keeps exactly (15 always are)")
  // Said here in the terms of a typed amount (the schema's own message is about computed ones).
  return decimals.length > Amounts.MAX_DECIMALS
    ? refuse(`an amount with at most ${Amounts.MAX_DECIMALS} decimal places`)
    : Either.right(value)
}

// The shortest decimal that reads back as `value` (as JSON writes it), in plain notation: 1e-7 as 0.0000001.
const plainDecimal = (value: number): string => {
  if (value < 0) return `-${plainDecimal(-value)}`
  const shortest = String(value)
  const exponent = /^(\d)(?:\.(\d+))?e-(\d+)$/.exec(shortest)
  return exponent === null ? shortest : `0.${"0".repeat(Number(exponent[3]) - 1)}${exponent[1]}${exponent[2] ?? ""}`
}

// A figure of a quote for people: without a float artefact's digits, in plain decimal.
const shown = (value: number): string => plainDecimal(value < 0 ? -Amounts.trimmed(-value) : Amounts.trimmed(value))

// A currency typed by hand, in any case, as country codes are: three ASCII letters only, as Unicode's upper case
// would make "uſd" a USD.
const currency = (typed: string) => /^[a-z]{3}$/i.test(typed) ? typed.toUpperCase() : typed

/** The `quote` command: a fee quote for a transfer (`FeeService.calculate`). */
export const quote = Command.make(
  "quote",
  {
    from: Options.text("from").pipe(Options.withDescription("Source currency (ISO 4217, e.g. USD; any case)"), Options.optional),
    to: Options.text("to").pipe(Options.withDescription("Destination currency (e.g. CAD; any case)"), Options.optional),
    amount: Options.text("amount").pipe(Options.withDescription("Amount to send, in the source currency (plain decimal: 100 or 12.50)"), Options.optional),
    receive: Options.text("receive").pipe(
      Options.withDescription("Amount to receive, in the destination currency (plain decimal)"),
      Options.optional
    ),
    beneficiary: Options.text("beneficiary").pipe(
      Options.withDescription(
        "Beneficiary UUID (adds its developer fee; paid in its account's currency, so not with --to)"
      ),
      Options.optional
    ),
    json
  },
  (args) =>
    Effect.gen(function*() {
      // Checked by FeeService.validate, exactly as a program's request is: a bad flag is a RequestValidationError,
      // naming the flag.
      // Every issue at once, as `calculate` tells them: a refused amount or --to with --beneficiary does not hide the
      // other flags' issues.
      const request = yield* Effect.gen(function*() {
        const issues: Array<FinError.Issue> = []
        // With a beneficiary the service quotes in its account's currency, whatever --to says: a script that named
        // EUR would take a quote in CAD for one in EUR, exit 0. Which one it is cannot be known before sending.
        if (Option.isSome(args.beneficiary) && Option.isSome(args.to)) {
          const expected = "no destination_currency with beneficiary_id (its account's currency is quoted)"
          issues.push(new FinError.Issue({ path: "destination_currency", expected }))
        }
        // A refused amount stands as 1 for the request's own check, so that its rules (exactly one amount) are told.
        const amountOf = (field: "source_amount" | "destination_amount", text: Option.Option<string>) =>
          Option.match(text, {
            onNone: () => ({}),
            onSome: (typed) =>
              Either.match(amount(field, typed), {
                onLeft: (issue) => (issues.push(issue), { [field]: 1 }),
                onRight: (value) => ({ [field]: value })
              })
          })
        const checked = yield* Effect.either(FeeService.validate({
          ...Option.match(args.from, { onNone: () => ({}), onSome: (v) => ({ source_currency: currency(v) }) }),
          ...Option.match(args.to, { onNone: () => ({}), onSome: (v) => ({ destination_currency: currency(v) }) }),
          ...amountOf("source_amount", args.amount),
          ...amountOf("destination_amount", args.receive),
          ...Option.match(args.beneficiary, { onNone: () => ({}), onSome: (v) => ({ beneficiary_id: v }) })
        }))
        const all = [...issues, ...(Either.isLeft(checked) ? checked.left.issues : [])]
        if (all.length > 0 || Either.isLeft(checked)) {
          return yield* new FinError.RequestValidationError({
            message: `Invalid fee calculation request: ${Issues.summarize(all)}`,
            issues: all
          })
        }
        return checked.right
      }).pipe(Effect.mapError(inFlags))
      const result = yield* FeeService.calculate(request).pipe(Effect.provide(clientLayer))
      // Said as the library reads it (`FeeQuote.isValidAt`): a quote with no end, or past it, is not to be relied on.
      const now = yield* DateTime.now
      const validTill = Option.match(result.valid_till, {
        onNone: () => "(not given: not to be taken as valid)",
        onSome: (till) => `${DateTime.formatIso(till)}${FeeService.FeeQuote.isValidAt(result, now) ? "" : " (expired)"}`
      })
      yield* print(args.json, { ...result, valid_till: Option.getOrNull(Option.map(result.valid_till, DateTime.formatIso)) }, () =>
        // Figures in plain decimal, as amounts are typed (`String` writes one under 1e-6 as 1e-7).
        // A float artefact of the service's (0.30000000000000004) shown as the figure it stands for, as the
        // client's own check of the quote reads it (`Amounts.trimmed`); --json keeps the number as sent.
        Render.pairs([
          ["send", `${shown(result.source_amount)} ${result.source_currency}`],
          ["receive", `${shown(result.destination_amount)} ${result.destination_currency}`],
          ["exchange rate", shown(result.exchange_rate)],
          [
            "fee",
            `${shown(result.fee.total)} (fixed ${shown(result.fee.fixed)}, percentage ${
              shown(result.fee.percentage)
            }${result.fee.is_fee_applied ? "" : ", not applied"})`
          ],
          ["valid till", validTill]
        ]))
    }).pipe(failingAsJson(args.json))
).pipe(Command.withDescription(
  "Quote a transfer: POST /v1/fee-calculation (with FIN_CLIENT_ID and FIN_CLIENT_SECRET; FIN_BASE_URL for the emulator)"
))
