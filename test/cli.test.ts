import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, beforeAll, describe, expect, it, vi } from "@effect/vitest"
import * as ConfigError from "effect/ConfigError"
import type * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Duration from "effect/Duration"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { spawn, spawnSync } from "node:child_process"
import {
  closeSync,
  constants as fsConstants,
  copyFileSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { writeFile } from "node:fs/promises"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { command, run, servesUntilStopped } from "../src/cli/main.js"
import { errorJson, errorLine, pairs, printableConsole, table } from "../src/cli/render.js"
import * as FinError from "../src/FinError.js"
import * as Emulator from "../src/emulator/Emulator.js"
import * as Webhooks from "../src/Webhooks.js"
import { bundleCli, type Cli } from "./cliHarness.js"
import { closedPort, documentedWebhookBody, startConnectProxy, startRefusedTls } from "./support.js"
import { findLeaks } from "./security/leaks.js"

let harness: Cli
const cli: Cli["run"] = (...args) => harness.run(...args)

beforeAll(async () => {
  harness = await bundleCli()
})
afterAll(() => harness.dispose())

// Every test here starts the command as a process of its own (a second or more each on a loaded machine), several in
// a row for some: a limit that only stops a hang, not one a slow start can reach.
vi.setConfig({ testTimeout: 180_000 })

// A stand-in for the service on loopback, for what the emulator does not answer: `use` gets the FIN_* variables
// pointing at it (no retries, no colour).
const withStubService = async (handle: Http.RequestListener, use: (env: Record<string, string>) => Promise<void>) => {
  const server = Http.createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  try {
    await use({
      FIN_CLIENT_ID: "id",
      FIN_CLIENT_SECRET: "secret",
      FIN_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      FIN_MAX_RETRIES: "0",
      NO_COLOR: "1"
    })
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const body = documentedWebhookBody

// Stops a command that would otherwise wait for ever (standard input left open, or a server that listens): only a
// guard against a hang, so far longer than any start of the command on a loaded machine (seconds, under CI's load).
// A shorter one races the command's own exit and cuts a correct run short (stderr empty, the test failed).
const hangGuard = () => new Promise((resolve) => setTimeout(resolve, 25_000).unref())

// The bundled CLI's emulator, started with `args`; `started` once its banner is out, with its URL.
const startEmulator = (args: ReadonlyArray<string>) => {
  const child = spawn(process.execPath, [join(harness.dir, "bin.mjs"), "emulator", ...args])
  const started = new Promise<{ readonly url: string; readonly banner: string }>((resolve, reject) => {
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8")
      // The beneficiaries come last in the banner.
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1]
      if (url !== undefined && out.includes("--beneficiary ")) resolve({ url, banner: out })
    })
    child.once("exit", (code) => reject(new Error(`the emulator exited (${code}): ${out}`)))
  })
  return { child, started }
}

// `webhook verify --json` of `signed`, signed as the service would.
const verifyJson = async (signed: string) => {
  const headers = await Effect.runPromise(Webhooks.sign(signed, "whsec_cli"))
  return cli(
    ["webhook", "verify", "--signature", headers["x-fin-signature"], "--json"],
    { FIN_WEBHOOK_SECRET: "whsec_cli" },
    signed
  )
}


describe("effect-fin (offline commands)", () => {
  it("subdivisions --offline prints a table", async () => {
    const result = await cli(["subdivisions", "USA", "--offline"])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^code\s+name\s+type/)
    expect(result.stdout).toContain("US-CA  California")
    expect(result.stdout).toMatch(/57 subdivisions of USA \(offline snapshot\)/)
  })

  it("FIN_SUBDIVISION_MODE=offline needs no credentials and sends nothing", async () => {
    const result = await cli(["subdivisions", "USA", "--json"], { FIN_SUBDIVISION_MODE: "offline" })
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ country: "USA", source: "snapshot" })
  })

  it("subdivisions reads the country as people type it: any case, alpha-2", async () => {
    const result = await cli(["subdivisions", " us", "--offline", "--json"])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ country: "USA", source: "snapshot" })
  })

  it("subdivisions --search ignores case and accents, --json for machines", async () => {
    const result = await cli(["subdivisions", "BRA", "--search", "sao paulo", "--json"])
    expect(result.code).toBe(0)
    const parsed = JSON.parse(result.stdout)
    expect(parsed.subdivisions[0]).toMatchObject({ code: "BR-SP", name: "São Paulo" })
  })

  it("an unknown country is one line with the error tag and exit 1", async () => {
    const result = await cli(["subdivisions", "../v1", "--offline"])
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split("\n")).toEqual([
      `effect-fin: RequestValidationError: Invalid country code: expected one of the 249 ISO 3166-1 alpha-3 codes of the service (e.g. "USA")`
    ])
  })

  it("with --json a failure is one line of JSON on stderr, whatever the error; without it, the text line", async () => {
    const failed = async (args: ReadonlyArray<string>, env: Record<string, string> = {}, input = "") => {
      const result = await cli(args, env, input)
      expect([result.code, result.stdout], args.join(" ")).toEqual([1, ""])
      expect(result.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1)
      return JSON.parse(result.stderr).error
    }
    expect(await failed(["quote", "--from", "US", "--to", "CAD", "--amount", "1", "--json"])).toEqual({
      _tag: "RequestValidationError",
      message: "Invalid quote: --from: expected a currency code of three letters",
      issues: [{ path: "--from", expected: "a currency code of three letters" }]
    })
    expect(await failed(["quote", "--from", "USD", "--to", "CAD", "--amount", "1", "--json"])).toEqual({
      _tag: "ConfigError",
      message: "FIN_CLIENT_ID is not set; FIN_CLIENT_SECRET is not set"
    })
    expect((await failed(["subdivisions", "XXX", "--json"]))._tag).toBe("RequestValidationError")
    const tampered = await failed(
      ["webhook", "verify", "--signature", "ab".repeat(32), "--json"],
      { FIN_WEBHOOK_SECRET: "whsec_cli" },
      body
    )
    expect(tampered).toEqual({
      _tag: "WebhookVerificationError",
      reason: "bad_signature",
      message: "the signature matches none of the webhook secrets"
    })
    const text = await cli(["subdivisions", "XXX"])
    expect(text.stderr).toMatch(/^effect-fin: RequestValidationError: Invalid country code/)
  })

  it("--wizard without a terminal on standard input is a usage error, not a wait for answers that cannot come", async () => {
    for (const args of [["--wizard"], ["quote", "--wizard"], ["--wizard=true"], ["quote", "--wizard=1"]]) {
      const result = await cli(args)
      expect([result.code, result.stdout, result.stderr.trim()]).toEqual([
        2,
        "",
        "effect-fin: --wizard asks its questions on a terminal, and standard input is none"
      ])
    }
  })

  // @effect/cli said "Received unknown argument: '--log-level'", as if the option did not exist.
  it("an unknown --log-level is a usage error naming the value and the levels, not an unknown --log-level", async () => {
    const levels = "all, trace, debug, info, warning, error, fatal, none"
    for (const [args, given] of [
      [["quote", "--log-level", "verbose", "--from", "USD"], "verbose"],
      [["subdivisions", "--log-level=Debug", "USA", "--offline"], "Debug"],
      [["--log-level", "\u202ewarn", "subdivisions", "USA"], "\\u202ewarn"]
    ] as const) {
      const result = await cli([...args])
      expect([result.code, result.stdout, result.stderr.trim()], args.join(" ")).toEqual([
        2,
        "",
        `effect-fin: --log-level: expected one of ${levels} (lower case), got "${given}"`
      ])
    }
    const fine = await cli(["subdivisions", "--log-level", "debug", "USA", "--offline", "--json"])
    expect([fine.code, JSON.parse(fine.stdout).country]).toEqual([0, "USA"])
    // After the command's options and arguments too, as a shell user adds it last.
    for (
      const args of [
        ["subdivisions", "USA", "--offline", "--json", "--log-level", "debug"],
        ["subdivisions", "USA", "--offline", "--log-level=debug", "--json"]
      ]
    ) {
      const late = await cli(args)
      expect([late.code, JSON.parse(late.stdout).country], args.join(" ")).toEqual([0, "USA"])
    }
  })

  it("an unknown command names every command and the snapshot tool; a misspelt webhook command or shell, its fix", async () => {
    const hint = "effect-fin: or 'snapshot', 'cross-check' (the subdivisions snapshot: see their --help)"
    const mismatch = "Invalid subcommand for effect-fin - use one of 'quote', 'subdivisions', 'webhook', 'emulator'"
    const lines = (text: string) => text.split("\n").filter((line) => line !== "")
    const bogus = await cli(["bogus"])
    expect([bogus.code, bogus.stdout, lines(bogus.stderr)]).toEqual([2, "", [mismatch, hint]])
    // The command is the first word that is no option (nor --log-level's value). The parser says its own line twice
    // there: ours comes once, last.
    const logged = await cli(["--log-level", "info", "snapshots"])
    expect([logged.code, lines(logged.stderr).filter((line) => line === hint).length, lines(logged.stderr).at(-1)])
      .toEqual([2, 1, hint])
    // `snapshot` or `cross-check` after an option reaches the parser: it is said to come first, not offered as if it
    // were not typed.
    for (const tool of ["snapshot", "cross-check"]) {
      const late = await cli(["--log-level", "info", tool])
      expect([late.code, lines(late.stderr).at(-1)], tool)
        .toEqual([2, `effect-fin: '${tool}' comes first, before any option (effect-fin ${tool} --help)`])
    }
    // The parser's line names the commands whatever was wrong: a misspelt webhook command, a shell --completions does
    // not know, are said as such (not offered the snapshot tool).
    const webhook = await cli(["webhook", "verfy"])
    expect([webhook.code, lines(webhook.stderr)]).toEqual([
      2,
      [mismatch, "effect-fin: webhook's one subcommand is verify (effect-fin webhook verify --help)"]
    ])
    for (const args of [["--completions", "powershell"], ["--completions=powershell"], ["--completions"]]) {
      const shell = await cli(args)
      expect([shell.code, lines(shell.stderr).at(-1)], args.join(" "))
        .toEqual([2, "effect-fin: --completions takes one of sh, bash, fish, zsh"])
    }
  })

  it("an option name in another letter case is a usage error, not an option silently dropped", async () => {
    for (const args of [
      ["subdivisions", "USA", "--OFFLINE"],
      ["subdivisions", "USA", "--offline", "--JSON"],
      ["quote", "--FROM", "USD", "--to", "CAD", "--amount", "1"]
    ]) {
      const result = await cli(args, {})
      const name = args.find((arg) => /^--[A-Z]/.test(arg))!
      expect([result.code, result.stdout, result.stderr.split("\n")[0]], args.join(" ")).toEqual([
        2,
        "",
        `Received unknown argument: '${name}'`
      ])
    }
  })

  it("an option given no value is said as such (the parser called the next argument unknown), exit 2", async () => {
    const cases = [
      [["quote", "--from"], "--from", "quote"],
      // `--from $CURRENCY --to CAD` with the variable unset: the parser took `--to` as the currency.
      [["quote", "--from", "--to", "CAD", "--amount", "5"], "--from", "quote"],
      [["quote", "--json", "--from", "USD", "--to", "CAD", "--amount"], "--amount", "quote"],
      [["webhook", "verify", "--signature", "--", "x"], "--signature", "webhook verify"],
      [["emulator", "--port"], "--port", "emulator"],
      [["--log-level", "info", "subdivisions", "BRA", "--search"], "--search", "subdivisions"],
      [["subdivisions", "BRA", "--search", "--offline"], "--search", "subdivisions"],
      [["quote", "--from", "USD", "--log-level"], "--log-level", "quote"],
      // Followed by an option of the command: no level given, not a level "--json".
      [["subdivisions", "USA", "--log-level", "--json"], "--log-level", "subdivisions"],
      // `--help` as a value is none (the parser took it as the currency).
      [["quote", "--from", "--help"], "--from", "quote"]
    ] as const
    const results = await Promise.all(cases.map(([args]) => cli([...args])))
    expect(results.map((result) => [result.code, result.stdout, result.stderr.trim()])).toEqual(
      cases.map(([, option, command]) => [
        2,
        "",
        `effect-fin: ${option} needs a value (see effect-fin ${command} --help)`
      ])
    )
    // A value that starts with one dash is a value: the quote refuses a negative amount itself. So is one that starts
    // with two and is no option of the command (searched for as typed), and `--help` or `--version` asked shows it.
    const [negative, dashes, help, version] = await Promise.all([
      cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "-5"]),
      cli(["subdivisions", "BRA", "--search", "--x", "--offline", "--json"]),
      cli(["quote", "--help", "--from"]),
      cli(["--version", "quote", "--amount"])
    ])
    expect([negative.code, negative.stderr]).toEqual([1, expect.stringContaining("RequestValidationError")])
    expect([dashes.code, JSON.parse(dashes.stdout).subdivisions, dashes.stderr]).toEqual([0, [], ""])
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining("USAGE")])
    expect([version.code, version.stdout.trim()]).toEqual([0, expect.stringMatching(/^\d+\.\d+\.\d+$/)])
  })

  it("quote validates its flags before reading any configuration", async () => {
    // Any case is taken, but only of ASCII letters: Unicode's upper case of "uſd" is USD.
    for (const from of ["US", "u\u017fd"]) {
      const result = await cli(["quote", "--from", from, "--to", "CAD", "--amount", "100"])
      expect(result.code, from).toBe(1)
      // Said by the flag typed, and without "upper-case" (any case is taken).
      expect(result.stderr.trim()).toBe(
        "effect-fin: RequestValidationError: Invalid quote: --from: expected a currency code of three letters"
      )
    }
    const both = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "1", "--receive", "2"])
    expect(both.stderr.trim()).toBe(
      "effect-fin: RequestValidationError: Invalid quote: --receive: expected exactly one of --amount and --receive"
    )
    const none = await cli(["quote"])
    expect(none.stderr.trim()).toBe(
      "effect-fin: RequestValidationError: Invalid quote: --amount: expected exactly one of --amount and --receive; " +
        "--to: expected --to or --beneficiary; --from: expected --from (required unless --beneficiary is given)"
    )
    const nan = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "abc"])
    expect(nan.code).toBe(1)
  })

  // `quote` with each amount, refused before any configuration is read, with `expected` said of its field.
  const refusesAmounts = async (
    amounts: ReadonlyArray<readonly ["--amount" | "--receive", string]>,
    expected: string
  ) => {
    // Side by side: a process each, which a loaded machine starts slowly.
    await Promise.all(amounts.map(async ([flag, amount]) => {
      const result = await cli(["quote", "--from", "USD", "--to", "CAD", flag, amount])
      expect([result.code, result.stderr.trim()], amount).toEqual([
        1,
        `effect-fin: RequestValidationError: Invalid quote: ${flag}: expected ${expected}`
      ])
    }))
  }

  it("quote refuses an amount a number cannot hold exactly, rather than send a rounded one", async () => {
    await refusesAmounts([
      ["--amount", "90071992547409.99"],
      ["--receive", "1234567890123456.78"],
      ["--amount", "0.30000000000000001"],
      // What the double holds, written out: still not what would be sent (0.1).
      ["--amount", "0.10000000000000001"],
      ["--amount", "0.1000000000000000055511151231257827"],
      // Past the 100 decimals Number#toFixed takes: refused all the same, not a crash without a word.
      ["--amount", `1.${"0".repeat(100)}1`]
    ], "an amount with no more significant digits than a number keeps exactly (15 always are)")
    // Held exactly, but with more decimal places than an amount has (as FeeService.validate says).
    await refusesAmounts([["--amount", "0.000000001"], ["--receive", "12.123456789"]], "an amount with at most 8 decimal places")
    // Held exactly (16 digits, leading and trailing zeros, however many, a tiny fraction): on to the configuration.
    const held = ["70368744177663.99", "0100.50", "0.0000001", "9007199254740991", "1.10000000000000000"]
    held.push(`1.${"0".repeat(101)}`)
    await Promise.all(held.map(async (amount) => {
      const result = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", amount])
      expect(result.stderr.trim(), amount).toBe("effect-fin: ConfigError: FIN_CLIENT_ID is not set; FIN_CLIENT_SECRET is not set")
    }))
    // Held exactly, but a neighbouring cent is the same number (past 2^46): refused by the request's schema.
    const shared = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "90071992547409.98"])
    expect(shared.stderr.trim()).toBe(
      "effect-fin: RequestValidationError: Invalid quote: --amount: expected a number that stands for one amount at " +
        "its decimal places (100000000000000.01 is read as 100000000000000.02, 123456789.12345677 as " +
        "123456789.12345678)"
    )
  })

  it("quote takes an amount with exactly 8 decimal places, leaves one past MAX_SAFE_INTEGER to the schema; subdivisions counts one result in the singular", async () => {
    const eight = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "0.12345678"])
    expect(eight.stderr.trim()).toBe("effect-fin: ConfigError: FIN_CLIENT_ID is not set; FIN_CLIENT_SECRET is not set")
    // Past MAX_SAFE_INTEGER: refused by the schema, in its words (the limit), not as a matter of significant digits.
    const huge = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "9007199254740993"])
    expect(huge.stderr.trim()).toBe(
      "effect-fin: RequestValidationError: Invalid quote: --amount: expected a number greater than 0 and at most 9007199254740991"
    )
    const one = await cli(["subdivisions", "BRA", "--search", "sao paulo"])
    expect(one.code).toBe(0)
    expect(one.stdout.trim().split("\n").at(-1)).toBe("1 subdivision of BRA (offline snapshot)")
    const none = await cli(["subdivisions", "BRA", "--search", "no such place"])
    expect([none.code, none.stdout.trim().split("\n").at(-1)]).toEqual([0, "0 subdivisions of BRA (offline snapshot)"])
    // A blank search (`--search "$QUERY"` with the variable unset) matches nothing by definition: refused, not an
    // empty answer and exit 0 that a script cannot tell from a search that found nothing.
    // So is one of nothing the search reads (a stray ".", a zero-width space pasted from a page).
    for (const query of [" ", ".", "\u200b"]) {
      const blank = await cli(["subdivisions", "BRA", "--search", query, "--json"])
      expect([blank.code, blank.stdout, JSON.parse(blank.stderr).error._tag], JSON.stringify(query))
        .toEqual([1, "", "RequestValidationError"])
    }
  })

  // A negative amount as the schema says a zero one, not as a matter of notation.
  it("quote refuses a negative amount as one not greater than 0", async () => {
    await refusesAmounts([["--amount", "-5"], ["--receive", "-0.5"]], "a number greater than 0 and at most 9007199254740991")
  })

  it("quote refuses an amount not in plain decimal notation, saying so (1e3 is a thousand to Number, not to us)", async () => {
    await refusesAmounts(
      [["--amount", "1e3"], ["--amount", "0x10"], ["--receive", "+5"], ["--amount", "12."], ["--amount", "-1e3"]],
      "an amount in plain decimal notation (digits, and any fraction after a dot: 1000 or 12.50)"
    )
    // Every issue at once, as the library tells them: a refused amount hides none of the other flags' issues.
    const all = await cli(["quote", "--from", "us", "--to", "CAD", "--amount", "1e3", "--receive", "5"])
    expect([all.code, all.stderr.trim()]).toEqual([
      1,
      "effect-fin: RequestValidationError: Invalid quote: --amount: expected an amount in plain decimal notation " +
      "(digits, and any fraction after a dot: 1000 or 12.50); --from: expected a currency code of three letters; " +
      "--receive: expected exactly one of --amount and --receive"
    ])
  })

  it("quote without credentials names the missing variables", async () => {
    const result = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100"])
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toBe("effect-fin: ConfigError: FIN_CLIENT_ID is not set; FIN_CLIENT_SECRET is not set")
  })

  it("subdivisions without credentials (or with refused ones) says that --offline needs none", async () => {
    const result = await cli(["subdivisions", "USA"])
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toBe(
      "effect-fin: ConfigError: FIN_CLIENT_ID is not set; FIN_CLIENT_SECRET is not set; " +
        "--offline lists the bundled snapshot, which needs no credentials"
    )
    // Set but refused (an empty variable of a deployment template): the snapshot needs none all the same.
    const empty = await cli(["subdivisions", "USA"], { FIN_CLIENT_ID: "", FIN_CLIENT_SECRET: "secret" })
    expect(empty.code).toBe(1)
    expect(empty.stderr.trim()).toBe(
      "effect-fin: ConfigError: FIN_CLIENT_ID must be a non-empty string; " +
        "--offline lists the bundled snapshot, which needs no credentials"
    )
    // Credentials that are fine, another variable refused: no word of credentials.
    const url = await cli(["subdivisions", "USA"], {
      FIN_CLIENT_ID: "id",
      FIN_CLIENT_SECRET: "secret",
      FIN_BASE_URL: "http://sandbox.api.fin.com"
    })
    expect([url.code, url.stderr.trim()])
      .toEqual([1, "effect-fin: ConfigError: FIN_BASE_URL must use https (plain http is allowed only on loopback)"])
  })

  it("a plain-http base URL off loopback is refused", async () => {
    const result = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100"], {
      FIN_CLIENT_ID: "id",
      FIN_CLIENT_SECRET: "secret",
      FIN_BASE_URL: "http://sandbox.api.fin.com"
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("ConfigError: FIN_BASE_URL must use https")
    expect(result.stderr).not.toContain("secret")
  })

  it("webhook verify: accepts a signed body from stdin, secret from FIN_WEBHOOK_SECRET", async () => {
    const headers = await Effect.runPromise(Webhooks.sign(body, "whsec_cli"))
    const ok = await cli(
      ["webhook", "verify", "--signature", headers["x-fin-signature"].toUpperCase()],
      { FIN_WEBHOOK_SECRET: "whsec_cli" },
      body
    )
    expect(ok.code).toBe(0)
    expect(ok.stdout).toContain("beneficiary.status 40061557-f125-4b39-97d6-c16a0f1230c1")
    // The time as sent, to the microsecond; an undocumented type by the name it was sent with.
    expect(ok.stdout).toContain("2026-04-04T17:38:26.843132Z")
    const other = body.replace(`"type":"beneficiary.status"`, `"type":"payout.settled"`)
    const otherHeaders = await Effect.runPromise(Webhooks.sign(other, "whsec_cli"))
    const undocumented = await cli(
      ["webhook", "verify", "--signature", otherHeaders["x-fin-signature"]],
      { FIN_WEBHOOK_SECRET: "whsec_cli" },
      other
    )
    expect(undocumented.stdout).toContain("payout.settled (not a documented type) 40061557-f125-4b39-97d6-c16a0f1230c1")
    const tampered = await cli(
      ["webhook", "verify", "--signature", headers["x-fin-signature"]],
      { FIN_WEBHOOK_SECRET: "whsec_cli" },
      body.replace("PROCESSING", "ACTIVE")
    )
    expect(tampered.code).toBe(1)
    expect(tampered.stderr).toMatch(/^effect-fin: WebhookVerificationError: /)
    expect(tampered.stderr + tampered.stdout).not.toContain("whsec_cli")
    // The algorithm as the header reads, whatever its case (as a log shows it): as the handler takes it.
    const sha512 = await Effect.runPromise(Webhooks.sign(body, "whsec_cli", "sha512"))
    const upper = await cli(
      ["webhook", "verify", "--signature", sha512["x-fin-signature"], "--algorithm", "SHA512"],
      { FIN_WEBHOOK_SECRET: "whsec_cli" },
      body
    )
    expect(upper.code).toBe(0)
    const unknown = await cli(
      ["webhook", "verify", "--signature", sha512["x-fin-signature"], "--algorithm", "md5"],
      { FIN_WEBHOOK_SECRET: "whsec_cli" },
      body
    )
    expect(unknown.code).toBe(1)
    expect(unknown.stderr.trim()).toBe(
      "effect-fin: WebhookVerificationError: --algorithm is not one of sha256, sha384, sha512"
    )
    const noSecret = await cli(["webhook", "verify", "--signature", "00"], {}, body)
    expect(noSecret.stderr.trim()).toBe("effect-fin: ConfigError: FIN_WEBHOOK_SECRET is not set")
    // Nothing on standard input (a body to pipe in forgotten) is said so, not called a bad signature.
    const empty = await cli(["webhook", "verify", "--signature", headers["x-fin-signature"]], { FIN_WEBHOOK_SECRET: "whsec_cli" }, "")
    expect([empty.code, empty.stderr.trim()]).toEqual([
      1,
      "effect-fin: WebhookVerificationError: standard input is empty: give the body there (effect-fin webhook verify ... < body.json)"
    ])
  })

  // A full disk (Linux's /dev/full; a pipe closed early alike): one line and exit 1, not Node's stack trace, never 0.
  it("an answer that cannot be written is one line on stderr and exit 1", () => {
    const full = openSync("/dev/full", "w")
    try {
      const result = spawnSync(process.execPath, [join(harness.dir, "bin.mjs"), "subdivisions", "USA", "--offline"], {
        stdio: ["ignore", full, "pipe"],
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        encoding: "utf8"
      })
      expect([result.status, result.stderr]).toEqual([1, "effect-fin: cannot write to standard output (ENOSPC)\n"])
      const json = spawnSync(process.execPath, [join(harness.dir, "bin.mjs"), "subdivisions", "USA", "--offline", "--json"], {
        stdio: ["ignore", full, "pipe"],
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        encoding: "utf8"
      })
      expect([json.status, JSON.parse(json.stderr)]).toEqual([
        1,
        { error: { _tag: "StdoutError", message: "cannot write to standard output (ENOSPC)" } }
      ])
    } finally {
      closeSync(full)
    }
  })

  // Standard error whose reader is gone (`2> >(logger)` with the logger stopped) loses only the logs: the answer is
  // still written and the exit code is the command's, not Node's uncaught EPIPE at the second line written there.
  it("a standard error that cannot be written does not stop the answer", async () => {
    const out = join(harness.dir, "stderr-closed.txt")
    const fd = openSync(out, "w")
    try {
      const port = await Effect.runPromise(closedPort)
      const args = ["subdivisions", "--log-level", "debug", "FRA"]
      const code = await new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [join(harness.dir, "bin.mjs"), ...args], {
          stdio: ["ignore", fd, "pipe"],
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            FIN_CLIENT_ID: "id",
            FIN_CLIENT_SECRET: "secret",
            FIN_BASE_URL: `http://127.0.0.1:${port}`
          }
        })
        child.stderr?.destroy()
        child.on("exit", resolve)
      })
      expect(code).toBe(0)
      expect(readFileSync(out, "utf8")).toMatch(/subdivisions of FRA \(offline snapshot/)
    } finally {
      closeSync(fd)
    }
  })

  it("webhook verify: says the event's sandbox mode, and refuses one of the other environment than FIN_ENVIRONMENT", async () => {
    const headers = await Effect.runPromise(Webhooks.sign(body, "whsec_cli"))
    const args = ["webhook", "verify", "--signature", headers["x-fin-signature"]]
    const sandbox = await cli(args, { FIN_WEBHOOK_SECRET: "whsec_cli", FIN_ENVIRONMENT: "sandbox" }, body)
    expect(sandbox.code).toBe(0)
    expect(sandbox.stdout).toMatch(/^sandbox mode +true$/m)
    const production = await cli(args, { FIN_WEBHOOK_SECRET: "whsec_cli", FIN_ENVIRONMENT: "production" }, body)
    expect(production.code).toBe(1)
    expect(production.stderr.trim()).toBe("effect-fin: WebhookVerificationError: the event is not from the production environment")
    const unsaid = body.replace(`,"sandbox_mode":true`, "")
    const unsaidHeaders = await Effect.runPromise(Webhooks.sign(unsaid, "whsec_cli"))
    const older = await cli(
      ["webhook", "verify", "--signature", unsaidHeaders["x-fin-signature"]],
      { FIN_WEBHOOK_SECRET: "whsec_cli", FIN_ENVIRONMENT: "production" },
      unsaid
    )
    expect(older.code).toBe(0)
    expect(older.stdout).toMatch(/^sandbox mode +not said$/m)
  })

  // Read as the client's configuration reads it: a refused value quoted escaped and cut to 64 characters (a secret
  // pasted into the wrong variable is not copied whole to the terminal).
  it("webhook verify: a refused FIN_ENVIRONMENT is quoted escaped and cut, as the client config does", async () => {
    const headers = await Effect.runPromise(Webhooks.sign(body, "whsec_cli"))
    const args = ["webhook", "verify", "--signature", headers["x-fin-signature"]]
    const long = await cli(args, { FIN_WEBHOOK_SECRET: "whsec_cli", FIN_ENVIRONMENT: "s3cr3t-".repeat(500) }, body)
    expect([long.code, long.stderr]).toEqual([1, expect.stringContaining("FIN_ENVIRONMENT")])
    expect(long.stderr).toContain(`received \"${"s3cr3t-".repeat(500).slice(0, 64)}\"`)
    expect(long.stderr).not.toContain("s3cr3t-".repeat(10))
  })

  // Standard input left open (the body forgotten, as at a terminal): the signal still ends the command.
  // The body is the sender's text: JSON leaves DEL, the C1 controls, U+2028/2029 and bidi overrides raw in strings.
  it("webhook verify --json escapes what a terminal would act on, and stays the same JSON", async () => {
    const note = "a\u0085b\u009b2Jc\u2028d\u202egnipsam\u007f"
    const odd = body.replace(`"type":"INDIVIDUAL",`, `"type":"INDIVIDUAL","note":${JSON.stringify(note)},`)
    const result = await verifyJson(odd)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`"note":"a\\u0085b\\u009b2Jc\\u2028d\\u202egnipsam\\u007f"`)
    expect(result.stdout).not.toMatch(/[\x7f-\x9f\u2028\u202e]/)
    expect(JSON.parse(result.stdout).event.data.note).toBe(note)
  })

  it("a usage error quotes the argument escaped, a colour code of its own too, in the snapshot tool as well", async () => {
    const result = await cli(["subdivisions", "USA", "--x\u001b]0;owned\u0007\u202e"])
    // Exit 2, a usage error, as the snapshot tool's: a script tells it from a failed call (1).
    expect([result.code, result.stderr.trim()]).toEqual([2, "Received unknown argument: '--x\\u001b]0;owned\\u0007\\u202e'"])
    expect((await cli(["subdivisions"])).code).toBe(2)
    // Not taken out as the parser's own colour would be: the message quotes the argument as given.
    const concealed = await cli(["subdivisions", "USA", "--x\u001b[8mhidden"])
    expect(concealed.stderr.trim()).toBe("Received unknown argument: '--x\\u001b[8mhidden'")
    // An escape character alone is in every colour code of the parser's: those are still taken out, not shown.
    const help = await cli(["quote", "--help", "\u001b"])
    expect(help.stdout).toContain("USAGE")
    expect(help.stdout + help.stderr).not.toMatch(/\u001b|\\u001b\[/)
    const snapshot = await cli(["cross-check", "--x\u001b]0;owned\u0007"])
    expect(snapshot.code).toBe(2)
    expect(snapshot.stderr).toContain("--x\\u001b]0;owned\\u0007")
    expect(snapshot.stderr).not.toMatch(/[\u001b\u0007]/)
  })

  // Arguments are read as given: the search ignores what is no letter, and a signature its blanks around it.
  it("an argument with a tab or a line break is taken as given, not as its escaped text", async () => {
    const search = await cli(["subdivisions", "USA", "--search", "new\ty"])
    expect(search.stdout).toContain("US-NY  New York")
    const headers = await Effect.runPromise(Webhooks.sign(body, "whsec_cli"))
    const verified = await cli(["webhook", "verify", "--signature", `${headers["x-fin-signature"]}\r\n`], { FIN_WEBHOOK_SECRET: "whsec_cli" }, body)
    expect(verified.code).toBe(0)
  })

  // `--json` prints the event as it was signed, not read back through numbers: a number past 2^53, or past 1e308,
  // and a body nested deeper than JSON.stringify goes (which was a defect) come out as signed.
  it("webhook verify --json prints the event as signed: its numbers, and nesting 10,000 deep", async () => {
    const numbers = body.replace(/"data":\s*\{/, `"data":{"amount_minor":9007199254740993,"rate":1e400,`)
    const printed = await verifyJson(numbers)
    expect(printed.code).toBe(0)
    expect(printed.stdout).toContain(`"data":{"amount_minor":9007199254740993,"rate":1e400,`)
    expect(JSON.parse(printed.stdout).verified).toBe(true)
    const depth = 10_000
    const deep = body.replace(/"data":\s*\{/, `"data":{"deep":${"[".repeat(depth)}${"]".repeat(depth)},`)
    const result = await verifyJson(deep)
    expect([result.code, result.stderr]).toEqual([0, ""])
    expect(result.stdout).toContain(`"deep":${"[".repeat(depth)}${"]".repeat(depth)},`)
  })

  it("webhook verify waiting for its body exits 128 + the signal's number when stopped", async () => {
    for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
      const stopped = await cli(
        ["--log-level", "debug", "webhook", "verify", "--signature", "00".repeat(32)],
        { FIN_WEBHOOK_SECRET: "whsec_cli" },
        null,
        undefined,
        { when: { stderrIncludes: "reading the webhook body from standard input" }, signal }
      )
      expect([stopped.code, stopped.stdout, stopped.stderr.trim().split("\n").at(-1)]).toEqual([
        code,
        "",
        `effect-fin: interrupted (${signal})`
      ])
    }
  })

  it("webhook verify: an empty or padded FIN_WEBHOOK_SECRET is a ConfigError naming it, before the body is waited for", async () => {
    const padded = "must not start or end with whitespace, a control character or an invisible formatting one " +
      "(a trailing newline, say)"
    for (const [secret, said] of [
      ["whsec_cli\n", `FIN_WEBHOOK_SECRET ${padded}`],
      // What the library refuses as padded, beyond what trim() removes: a control character, NEL.
      ["whsec_cli\u001f", `FIN_WEBHOOK_SECRET ${padded}`],
      ["\u0085whsec_cli", `FIN_WEBHOOK_SECRET ${padded}`],
      ["", "FIN_WEBHOOK_SECRET is empty"]
    ] as const) {
      // Standard input left open, as a terminal's: nothing to wait for when the secret cannot verify anything.
      const result = await cli(
        ["webhook", "verify", "--signature", "00"],
        { FIN_WEBHOOK_SECRET: secret },
        null,
        undefined,
        { when: hangGuard(), signal: "SIGTERM" }
      )
      expect([result.code, result.stderr.trim()]).toEqual([1, `effect-fin: ConfigError: ${said}`])
      expect(result.stderr).not.toContain("whsec_cli")
    }
  })

  it("webhook verify: a malformed --signature or --algorithm is refused before the body is waited for", async () => {
    for (const [args, said] of [
      [["--signature", "zz"], "--signature is not a hex sha256 digest"],
      [["--signature", "00".repeat(32), "--algorithm", "sha512"], "--signature is not a hex sha512 digest"],
      [["--signature", "00,11"], "--signature is repeated (a list, or values joined with a comma)"],
      [["--signature", "00".repeat(32), "--algorithm", "md5"], "--algorithm is not one of sha256, sha384, sha512"],
      [["--signature", ""], "--signature is missing"]
    ] as const) {
      // Standard input left open, as a terminal's: the command must not wait for a body it will refuse anyway.
      const result = await cli(
        ["webhook", "verify", ...args],
        { FIN_WEBHOOK_SECRET: "whsec_cli" },
        null,
        undefined,
        { when: hangGuard(), signal: "SIGTERM" }
      )
      expect([result.code, result.stderr.trim()], args.join(" ")).toEqual([1, `effect-fin: WebhookVerificationError: ${said}`])
    }
    // Blanks around either flag and the algorithm's case are still taken, as the headers are.
    const headers = await Effect.runPromise(Webhooks.sign(documentedWebhookBody, "whsec_cli", "sha384"))
    const ok = await cli(
      ["webhook", "verify", "--signature", ` ${headers["x-fin-signature"].toUpperCase()} `, "--algorithm", " SHA384 "],
      { FIN_WEBHOOK_SECRET: "whsec_cli" },
      documentedWebhookBody
    )
    expect(ok.code).toBe(0)
  })

  it("webhook verify refuses a body over 1 MiB, without reading the rest", async () => {
    // One byte past the limit is refused; the limit itself is read (and checked: a bad signature here).
    const sized = (size: number) => `{"padding":"${"x".repeat(size - 14)}"}`
    const verify = (text: string) =>
      cli(["webhook", "verify", "--signature", "00".repeat(32)], { FIN_WEBHOOK_SECRET: "whsec_cli" }, text)
    const [result, most] = await Promise.all([verify(sized(1024 * 1024 + 1)), verify(sized(1024 * 1024))])
    expect([result.code, result.stdout, result.stderr.trim()]).toEqual([
      1,
      "",
      "effect-fin: WebhookVerificationError: the body is larger than 1048576 bytes"
    ])
    expect([most.code, most.stderr.trim()])
      .toEqual([1, "effect-fin: WebhookVerificationError: the signature matches none of the webhook secrets"])
  })

  it("an ApiError's line: status and operation once, the first line of the message, every field error", () => {
    const line = (fields: ConstructorParameters<typeof FinError.ApiError>[0]) => errorLine(new FinError.ApiError(fields))
    const tooBig = new FinError.FieldError({ field: "a", message: "too\nbig" })
    expect(line({ status: 422, message: "Invalid\nsee the docs", fieldErrors: [tooBig] }))
      .toBe("effect-fin: ApiError: 422: Invalid (a: too big)")
    expect(line({ status: 503, message: "The service answered 503 on GET /x", operation: "GET /x" }))
      .toBe("effect-fin: ApiError: The service answered 503 on GET /x")
    expect(line({ status: 404, message: "Error 404", operation: "GET /x" })).toBe("effect-fin: ApiError: 404 on GET /x: Error 404")
  })

  it("a ConfigError's line names each variable once; a redacted one's message is said as invalid, not <redacted>", () => {
    const error = ConfigError.And(
      ConfigError.InvalidData(["FIN_CLIENT_SECRET"], "<redacted>"),
      ConfigError.Or(ConfigError.MissingData(["FIN_CLIENT_ID"], "x"), ConfigError.MissingData(["FIN_CLIENT_ID"], "x"))
    )
    expect(errorLine(error)).toBe("effect-fin: ConfigError: FIN_CLIENT_SECRET: invalid; FIN_CLIENT_ID is not set")
    // A message that names its variable itself is not prefixed with it again.
    const named = ConfigError.InvalidData(["FIN_CLIENT_SECRET"], "FIN_CLIENT_SECRET must not start or end with whitespace")
    expect(errorLine(named)).toBe("effect-fin: ConfigError: FIN_CLIENT_SECRET must not start or end with whitespace")
  })

  it("an ApiError without an operation whose message holds its status is still said with the status first", () => {
    expect(errorLine(new FinError.ApiError({ status: 422, message: "Rule 422 broken" })))
      .toBe("effect-fin: ApiError: 422: Rule 422 broken")
  })

  it("an error's JSON line escapes what JSON leaves raw and a terminal acts on (C1 controls, bidi overrides)", () => {
    const line = errorJson(new FinError.ApiError({ status: 500, message: "x\u009b2J\u202ey" }))
    expect(line).not.toMatch(/[\u0080-\u009f\u202a-\u202e]/)
    expect(line).toContain("x\\u009b2J\\u202ey")
    expect(JSON.parse(line).error.message).toBe("x\u009b2J\u202ey")
  })

  it("the printable console answers `in` as the console does", () => {
    const own = { log: () => Effect.void } as unknown as Console.Console
    const console = printableConsole(own, { out: false, err: false })
    expect(["log" in console, "nothing" in console]).toEqual([true, false])
  })

  it("a table: the header, a rule as wide as each column, cells padded to the widest one, no trailing blanks", () => {
    expect(table(["code", "name", "type"], [["US-CA", "California", ""], ["X", "Y", "State"]]).split("\n")).toEqual([
      "code   name        type",
      "-----  ----------  -----",
      "US-CA  California",
      "X      Y           State"
    ])
    // A header wider than every cell sets its column's width.
    expect(table(["subdivision", "n"], [["A", "1"]])).toBe("subdivision  n\n-----------  -\nA            1")
    // A combining mark takes no column: the next cell lines up.
    expect(table(["name", "n"], [["Al \u2018A\u0305\u015fimah", "1"], ["Amman", "2"]]).split("\n")).toEqual([
      "name        n",
      "----------  -",
      "Al \u2018A\u0305\u015fimah  1",
      "Amman       2"
    ])
    // An emoji drawn two columns wide by its presentation selector still takes two.
    expect(table(["name", "n"], [["\u2764\ufe0f", "1"], ["ab", "2"]]).split("\n").slice(2)).toEqual([
      "\u2764\ufe0f    1",
      "ab    2"
    ])
  })

  it("an error's line is its first line: a tagged error's message, an Error's, or the value as text", () => {
    expect(errorLine({ _tag: "ServeError", message: "listen failed\n    at Server.listen" }))
      .toBe("effect-fin: ServeError: listen failed")
    expect(errorLine(new Error("boom\n    at main.ts:1"))).toBe("effect-fin: boom")
    expect(errorLine("plain text")).toBe("effect-fin: plain text")
    // A tagged error saying nothing itself (the platform's ServeError) is said by its cause's first line.
    expect(errorLine({ _tag: "ServeError", message: "", cause: new Error("listen EADDRINUSE\n    at x") }))
      .toBe("effect-fin: ServeError: listen EADDRINUSE")
    // With --json, an error without a tag is still one: "Error".
    expect(JSON.parse(errorJson(new Error("boom\n    at main.ts:1"))))
      .toEqual({ error: { _tag: "Error", message: "boom" } })
  })

  // What the service said (a message, a currency, a name) must not reach the terminal as a command to it.
  it("writes control characters and lone surrogate halves from outside as \\u escapes", () => {
    const escape = "\u001b]8;;https://example.test\u0007Pay here\u001b]8;;\u0007\u001b[2K"
    expect(errorLine(new FinError.ApiError({ status: 500, message: escape })))
      .toBe("effect-fin: ApiError: 500: \\u001b]8;;https://example.test\\u0007Pay here\\u001b]8;;\\u0007\\u001b[2K")
    expect(table(["code", "name"], [["US-NY", "New\u0000York\ud800"]]).split("\n").at(-1))
      .toBe("US-NY  New\\u0000York\\ud800")
    expect(pairs([["send", "100 \u009b31mUSD"]])).toBe("send  100 \\u009b31mUSD")
    expect(pairs([["name", "One\u2028Two\u2029"]])).toBe("name  One\\u2028Two\\u2029")
    expect(pairs([["name", "Flo\u202eadir"]])).toBe("name  Flo\\u202eadir")
    // Text as it is otherwise: accents, emoji (whole surrogate pairs), the no-break space.
    expect(pairs([["name", "S\u00e3o Paulo \u{1f600}\u00a0"]])).toBe("name  S\u00e3o Paulo \u{1f600}\u00a0")
  })

  // A fallback's warning quotes the service's error: its message reaches stderr escaped too.
  it("a log line quoting the service, and the snapshot tool's, write its control characters as \\u escapes", async () => {
    const message = "Down \u001b]0;owned\u0007\u001b[2J\u001b[31mfor maintenance"
    await withStubService((_, response) => {
      response.writeHead(503, { "content-type": "application/json" })
      response.end(JSON.stringify({ message }))
    }, async (env) => {
      const result = await cli(["subdivisions", "CAN"], env)
      expect(result.code).toBe(0)
      expect(result.stderr).toContain("serving the offline snapshot for CAN")
      expect(result.stderr).toContain("Down \\u001b]0;owned\\u0007\\u001b[2J\\u001b[31mfor maintenance")
      expect(result.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/)
      // The snapshot tool writes to the streams itself: its lines quoting the service are escaped on the way.
      const checked = await cli(["cross-check", "--countries", "CAN", "--base-url", env.FIN_BASE_URL!, "--report", join(harness.dir, "r.json")], env)
      expect(checked.code).toBe(2)
      expect(checked.stderr).toContain("Down \\u001b]0;owned\\u0007\\u001b[2J\\u001b[31mfor maintenance")
      expect(checked.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/)
    })
  })

  // A service that answers every fee quote with these figures, the amount asked sent back.
  const quoteStub = (quote: {
    readonly currencies: readonly [string, string]
    readonly exchange_rate: number
    readonly destination_amount: number
    readonly fee: {
      readonly fixed: number
      readonly percentage: number
      readonly total: number
      readonly is_fee_applied?: boolean
    }
    readonly valid_till?: string | null
  }): Http.RequestListener =>
  (request, response) => {
    let text = ""
    request.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")))
    request.on("end", () => {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify(
        request.url === "/v1/oauth/token"
          ? { access_token: "token", access_token_ttl: "2099-01-01 00:00:00+00" }
          : {
            data: {
              source_currency: quote.currencies[0],
              destination_currency: quote.currencies[1],
              source_amount: JSON.parse(text).source_amount,
              exchange_rate: quote.exchange_rate,
              destination_amount: quote.destination_amount,
              valid_till: quote.valid_till === undefined ? "2099-01-01T00:00:00Z" : quote.valid_till,
              fee: { is_fee_applied: true, ...quote.fee }
            }
          }
      ))
    })
  }

  // The library never takes a quote without `valid_till`, or past it, as valid (`FeeQuote.isValidAt`): nor does the
  // line that shows it. --json gives `valid_till` as sent (null for none).
  for (const [validTill, shown] of [
    ["2099-01-01T00:00:00Z", /^valid till\s+2099-01-01T00:00:00\.000Z$/m],
    ["2001-01-01T00:00:00Z", /^valid till\s+2001-01-01T00:00:00\.000Z \(expired\)$/m],
    [null, /^valid till\s+\(not given: not to be taken as valid\)$/m]
  ] as const) {
    it(`quote shows a valid_till of ${validTill} as the library reads it`, async () => {
      await withStubService(quoteStub({
        currencies: ["USD", "CAD"],
        exchange_rate: 1.5,
        destination_amount: 150,
        fee: { fixed: 1, percentage: 0, total: 1 },
        valid_till: validTill
      }), async (env) => {
        const asked = ["quote", "--from", "USD", "--to", "CAD", "--amount", "100"]
        const result = await cli(asked, env)
        expect([result.code, result.stdout]).toEqual([0, expect.stringMatching(shown)])
        const sent = JSON.parse((await cli([...asked, "--json"], env)).stdout)
        expect(sent.valid_till).toBe(validTill === null ? null : validTill.replace("Z", ".000Z"))
      })
    })
  }

  // Amounts are typed in plain decimal; `String` writes a figure under 1e-6 as 1e-7, easy to misread or mis-copy.
  // A fee the service says it did not apply is said so, not shown as if it were taken.
  it("quote shows figures under 1e-6 in plain decimal, as amounts are typed, not as 1e-7", async () => {
    await withStubService(quoteStub({
      currencies: ["BTC", "USD"],
      exchange_rate: 1.5e-7,
      destination_amount: 2,
      // A negative figure (a rebate) too: -0.00000001, not -1e-8.
      fee: { fixed: -1e-8, percentage: 5e-7, total: 1.2e-7, is_fee_applied: false }
    }), async (env) => {
      const result = await cli(["quote", "--from", "BTC", "--to", "USD", "--amount", "0.0000001"], env)
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("send           0.0000001 BTC")
      expect(result.stdout).toContain("exchange rate  0.00000015")
      expect(result.stdout)
        .toContain("fee            0.00000012 (fixed -0.00000001, percentage 0.0000005, not applied)")
      expect(result.stdout).not.toMatch(/\de-\d/)
    })
  })

  // A figure the service worked out in binary floating point (0.1 + 0.2) is shown as the one it stands for, as the
  // client's own check of the quote reads it; --json gives the number as the service sent it.
  it("quote shows a float artefact of the service's as the figure it stands for; --json as sent", async () => {
    await withStubService(quoteStub({
      currencies: ["USD", "CAD"],
      exchange_rate: 0.1 + 0.2,
      destination_amount: 45.00000000000001,
      // The percentage a running sum (0.002 added 30 times, 0.06000000000000004): 6 steps of the double off 0.06.
      fee: {
        fixed: 0.1 + 0.2,
        percentage: Array.from({ length: 30 }, () => 0.002).reduce((sum, each) => sum + each),
        total: 0.1 + 0.2
      }
    }), async (env) => {
      const asked = ["quote", "--from", "USD", "--to", "CAD", "--amount", "150.3"]
      const shown = await cli(asked, env)
      expect(shown.code).toBe(0)
      expect(shown.stdout).toContain("receive        45 CAD")
      expect(shown.stdout).toContain("exchange rate  0.3")
      expect(shown.stdout).toContain("fee            0.3 (fixed 0.3, percentage 0.06)")
      expect(shown.stdout).not.toContain("0000")
      const sent = JSON.parse((await cli([...asked, "--json"], env)).stdout)
      expect([sent.destination_amount, sent.exchange_rate, sent.fee.total])
        .toEqual([45.00000000000001, 0.1 + 0.2, 0.1 + 0.2])
    })
  })

  it("only the emulator command counts as serving until stopped (its signal exits 0), not an argument naming it", () => {
    expect(servesUntilStopped(["emulator"])).toBe(true)
    expect(servesUntilStopped(["--log-level", "debug", "emulator", "--port", "0"])).toBe(true)
    expect(servesUntilStopped(["webhook", "verify", "--signature", "emulator"])).toBe(false)
    expect(servesUntilStopped(["subdivisions", "USA", "--search", "emulator"])).toBe(false)
    expect(servesUntilStopped(["--log-level", "emulator", "quote"])).toBe(false)
  })

  it("without NO_COLOR, output to a pipe is plain text all the same: colour only on a terminal", async () => {
    const help = await cli(["quote", "--help"], { NO_COLOR: "" })
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("USAGE")
    expect(help.stdout).not.toContain("\u001b[")
  })

  it("emulator listens on 127.0.0.1:4010 by default (held busy here: said with that address)", async () => {
    const holder = Http.createServer()
    await new Promise<void>((resolve) => holder.once("error", () => resolve()).listen(4010, "127.0.0.1", resolve))
    try {
      // Stopped after a while should it listen after all (on another port).
      const busy = await cli(["emulator"], {}, undefined, undefined, {
        when: hangGuard(),
        signal: "SIGTERM"
      })
      expect([busy.code, busy.stderr.trim()])
        .toEqual([1, "effect-fin: EmulatorError: listen EADDRINUSE: address already in use 127.0.0.1:4010"])
    } finally {
      holder.close()
    }
  })

  // Digits only, as amounts: `Number` would read "0x10" as 16 and "1e3" as 1000.
  it("emulator --port that is not digits, or past 65535, is a usage error, and nothing listens", async () => {
    for (const port of ["0x10", "1e3", " 4011", "4011.0", "0b11", "65536", "99999"]) {
      const result = await cli(["emulator", "--port", port], {}, undefined, undefined, {
        when: hangGuard(),
        signal: "SIGTERM"
      })
      expect([result.code, result.stdout], port).toEqual([2, ""])
      expect(result.stderr, port).toContain(`--port: expected a port number in digits (0 to 65535), got ${JSON.stringify(port)}`)
    }
  })

  it("--help works on every command", async () => {
    // After the command's options and arguments too, as a shell user types it last (not as an option's value).
    for (
      const args of [
        ["--help"],
        ["quote", "--help"],
        ["subdivisions", "--help"],
        ["webhook", "verify", "--help"],
        ["quote", "--from", "USD", "--amount", "100", "--help"],
        ["--log-level", "debug", "subdivisions", "USA", "--json", "-h"],
        // (The parser reads that -h after a country itself; not after an option's value.)
        ["quote", "--from", "USD", "-h"],
        ["webhook", "verify", "--signature", "ab", "--help"]
      ]
    ) {
      const result = await cli(args)
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("USAGE")
      // Not a terminal here: plain text, no colour codes in a file or a pipe.
      expect(result.stdout, args.join(" ")).not.toContain("\x1b[")
      // The variables a call needs are named where the call is (not only in the "is not set" error).
      if (args[0] !== "webhook") expect(result.stdout, args.join(" ")).toContain("FIN_CLIENT_SECRET")
    }
    // Nor in a usage error on standard error.
    expect((await cli(["quote", "--bogus"])).stderr).not.toContain("\x1b[")
    // The snapshot tool has its own help, which names the installed command.
    for (const sub of ["snapshot", "cross-check"]) {
      const result = await cli([sub, "--help"])
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/^Usage: effect-fin snapshot --from-iso-codes /)
      expect(result.stdout).not.toContain("npm run")
      // Its defaults are the installed command's: the bundled snapshot, no repository paths.
      expect(result.stdout).toContain("effect-fin cross-check [--countries")
      expect(result.stdout).toContain("compare the API with the bundled snapshot (or the one in --out DIR)")
      expect(result.stdout).not.toContain("src/internal")
      expect(result.stdout).not.toContain("committed")
      expect(result.stdout).toContain("required by every snapshot run")
    }
  })
})

describe("the exported command", () => {
  it.effect("mounted in a program, fails with the command's own error, with --json too (printed as JSON as well)", () =>
    Effect.gen(function*() {
      const printed: Array<string> = []
      const recording = {
        log: () => Effect.void,
        error: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void printed.push(args.join(" ")))
      } as unknown as Console.Console
      const mounted = Command.run(command, { name: "my-tool", version: "1" })
      for (const json of [[], ["--json"]]) {
        const error = yield* Effect.flip(
          mounted(["node", "my-tool", "quote", "--from", "US", "--to", "CAD", "--amount", "1", ...json]).pipe(
            Effect.withConsole(recording),
            Effect.provide(NodeContext.layer)
          )
        )
        expect(error, json.join("")).toBeInstanceOf(FinError.RequestValidationError)
      }
      // Only the --json run prints it itself (the program says the other as it likes).
      expect(printed.map((line) => JSON.parse(line).error._tag)).toEqual(["RequestValidationError"])
    }))
})

describe("the CLI's defects", () => {
  // A defect (a bug, or a value no code path expected) would otherwise end the process with exit 1 and not a word.
  it.effect("a defect is one line on stderr, JSON with --json, exit 1", () =>
    Effect.gen(function*() {
      const printed: Array<string> = []
      const breaking = {
        log: () => Effect.dieMessage("the printer broke"),
        error: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void printed.push(args.join(" ")))
      } as unknown as Console.Console
      const exitCode = process.exitCode
      const codes: Array<unknown> = []
      // With --json first: the run after it must print text again (`run` resets what --json set).
      for (const json of [["--json"], []]) {
        yield* run(["node", "effect-fin", "subdivisions", "USA", "--offline", ...json]).pipe(
          Effect.withConsole(breaking),
          Effect.provide(NodeContext.layer),
          Effect.ensuring(Effect.sync(() => {
            codes.push(process.exitCode)
            process.exitCode = exitCode
          }))
        )
      }
      expect(codes).toEqual([1, 1])
      expect(printed).toEqual([
        JSON.stringify({ error: { _tag: "Defect", message: "unexpected failure: the printer broke" } }),
        "effect-fin: unexpected failure: the printer broke"
      ])
    }))
})

describe("the CLI's console", () => {
  // A console of the user's may be a class: its getters (the loggers read `unsafe`) and methods must reach it bound.
  it.effect("takes colour codes out where colour is off, escapes other control characters, and leaves the rest of a class console working", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      class Recording {
        readonly #lines = lines
        get unsafe() {
          return { log: (...args: ReadonlyArray<unknown>) => this.#lines.push(`unsafe ${args.join(" ")}`) }
        }
        log(...args: ReadonlyArray<unknown>) {
          return Effect.sync(() => void this.#lines.push(`log ${args.join(" ")}`))
        }
        error(...args: ReadonlyArray<unknown>) {
          return Effect.sync(() => void this.#lines.push(`error ${args.join(" ")}`))
        }
        info(...args: ReadonlyArray<unknown>) {
          return Effect.sync(() => void this.#lines.push(`info ${args.join(" ")}`))
        }
      }
      const console = printableConsole(new Recording() as unknown as Console.Console, { out: false, err: true })
      yield* console.log("\x1b[0;1mUSAGE\x1b[0m", 2)
      yield* console.error("\x1b[31mred\x1b[0m")
      yield* console.info("as is")
      console.unsafe.log("direct")
      expect(lines).toEqual(["log USAGE 2", "error \x1b[31mred\x1b[0m", "info as is", "unsafe direct"])
      // Anything else that would act on the terminal is escaped, colour on or off; line breaks and tabs are kept.
      yield* console.error("'--x\x1b]0;owned\x07'\u202e\n\tnext\r")
      yield* console.log("\x1b[2J\x1b[1mbold\x1b[0m")
      // The logger writes through `unsafe` (a logged cause is the errors' own text).
      console.unsafe.log("cause\x07")
      expect(lines.slice(4)).toEqual([
        "error '--x\\u001b]0;owned\\u0007'\\u202e\n\tnext\\u000d",
        "log \\u001b[2Jbold",
        "unsafe cause\\u0007"
      ])
      lines.length = 4
      // A frozen console too (a Proxy over it could only hand out its frozen methods unchanged).
      const own = new Recording()
      const frozenConsole = Object.freeze({ log: own.log.bind(own), info: own.info.bind(own) })
      const frozen = printableConsole(frozenConsole as unknown as Console.Console, { out: false, err: false })
      yield* frozen.log("\x1b[1mfrozen\x1b[0m")
      yield* frozen.info("info")
      expect(lines.slice(4)).toEqual(["log frozen", "info info"])
    }))
})

describe("effect-fin against the emulator", () => {
  const scope = Effect.runSync(Scope.make())
  let env: Record<string, string> = {}
  let emulator: Emulator.Service

  beforeAll(async () => {
    emulator = await Effect.runPromise(Scope.extend(Emulator.make(), scope))
    env = {
      FIN_CLIENT_ID: emulator.credentials.clientId,
      FIN_CLIENT_SECRET: emulator.credentials.clientSecret,
      FIN_BASE_URL: emulator.url,
      FIN_TIMEOUT: "2 seconds",
      FIN_MAX_RETRIES: "1"
    }
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  // A scoped loopback address is listened on; its zone id, which `URL` cannot parse, is left out of the URL printed
  // (it changes nothing on loopback): the admin URL is printed, and no note, as on ::1.
  it("emulator --host with a zone id (::1%lo) serves and prints its banner", async () => {
    const { child, started } = startEmulator(["--host", "::1%lo", "--port", "0"])
    try {
      const { banner, url } = await started
      expect(url.startsWith("http://[::1]:")).toBe(true)
      expect(banner).toContain(`admin        ${url}/__emulator`)
      expect(banner).not.toContain("note ")
    } finally {
      child.kill("SIGTERM")
    }
  })

  it("emulator: a busy port is one line naming the address; --production sends events with sandbox_mode false", async () => {
    const busy = await cli(["emulator", "--port", new URL(emulator.url).port])
    expect(busy.code).toBe(1)
    expect(busy.stderr.trim()).toMatch(/^effect-fin: EmulatorError: listen EADDRINUSE: address already in use 127\.0\.0\.1:\d+$/)

    const received: Array<string> = []
    const receiver = Http.createServer((request, response) => {
      let text = ""
      request.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")))
      request.on("end", () => {
        received.push(text)
        response.end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    const { child, started } = startEmulator(["--port", "0", "--production"])
    try {
      const { banner, url } = await started
      const beneficiary = /--beneficiary (\S+) \(paid in CAD, with a developer fee\)/.exec(banner)?.[1]
      const { port } = receiver.address() as AddressInfo
      const sent = await fetch(`${url}/__emulator/webhooks`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook` })
      })
      expect(sent.status).toBe(200)
      expect(received).toHaveLength(1)
      expect(JSON.parse(received[0]!).event.sandbox_mode).toBe(false)
      // The banner names the beneficiary it knows, for `quote --beneficiary`.
      expect(Object.keys(Emulator.defaultBeneficiaries)[0]).toBe(beneficiary)
    } finally {
      child.kill()
      receiver.close()
    }
  })

  it("emulator --options: a JSON file of Emulator.make's options; --port wins over it", async () => {
    const file = join(harness.dir, "emulator-options.json")
    const beneficiary = "0b6c3c52-7e4f-4a43-9a58-2c1f3f0c9d11"
    await writeFile(file, JSON.stringify({
      port: 1,
      accessTokenLifetime: "5 seconds",
      tokenEnvelope: "data",
      beneficiaries: { [beneficiary]: { currency: "EUR" } }
    }))
    const { child, started } = startEmulator(["--options", file, "--port", "0"])
    try {
      const { banner, url } = await started
      expect(new URL(url).port).not.toBe("1")
      // The file's beneficiaries are the ones the banner names.
      expect(banner).toContain(`--beneficiary ${beneficiary} (paid in EUR)`)
      const token = await fetch(`${url}/v1/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client_id: Emulator.defaultCredentials.clientId,
          client_secret: Emulator.defaultCredentials.clientSecret
        })
      })
      const { data } = await token.json() as { data: { access_token_ttl: string; current_time: string } }
      const lifetime = Date.parse(data.access_token_ttl.replace(" ", "T").replace("+00", "Z")) -
        Date.parse(data.current_time.replace(" ", "T").replace("+00", "Z"))
      expect(lifetime).toBe(5000)
    } finally {
      child.kill()
    }
  })

  // `--options <(jq ...)`: the shell gives a pipe's path, which a reader at file offsets (and a regular-file check) refuses.
  it("emulator --options: a pipe is read as a file is", async () => {
    const fifo = join(harness.dir, "emulator-options.fifo")
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0)
    const { child, started } = startEmulator(["--options", fifo, "--port", "0"])
    // Opening a pipe to write waits for its reader: an emulator that exits without reading fails the test at once.
    const written = writeFile(fifo, JSON.stringify({ clientId: "from-a-pipe" }))
    try {
      await Promise.race([written, started])
      expect((await started).banner).toMatch(/FIN_CLIENT_ID=from-a-pipe /)
    } finally {
      child.kill()
      // A reader of our own, so a write still waiting (on a thread of the pool) ends.
      closeSync(openSync(fifo, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK))
      await written.catch(() => undefined)
    }
  })

  // The banner's "use it with" line is there to be pasted into a shell: credentials with a blank or a quote are quoted.
  it("emulator: the banner's 'use it with' line sets the credentials it names when run by a shell", async () => {
    const file = join(harness.dir, "emulator-credentials.json")
    await writeFile(file, JSON.stringify({ clientId: "my id", clientSecret: "s3cr et'x", webhookSecret: "whsec a" }))
    const { child, started } = startEmulator(["--options", file, "--port", "0"])
    try {
      const { banner } = await started
      const line = /^use it with +(.*)$/m.exec(banner)?.[1]
      const print = `node -e 'console.log(JSON.stringify([process.env.FIN_CLIENT_ID, process.env.FIN_CLIENT_SECRET]))'`
      const shell = spawnSync("sh", ["-c", `${line} ${print}`], { encoding: "utf8", env: { PATH: process.env.PATH } })
      expect(shell.stdout.trim()).toBe(JSON.stringify(["my id", "s3cr et'x"]))
      expect(banner).toMatch(/^webhooks +signed with FIN_WEBHOOK_SECRET='whsec a'$/m)
    } finally {
      child.kill()
    }
  })

  it("emulator --options unreadable, or not the emulator's options: a usage error, or one line", async () => {
    const write = async (name: string, text: string) => {
      const path = join(harness.dir, name)
      await writeFile(path, text)
      return path
    }
    const run = (path: string) =>
      cli(["emulator", "--options", path, "--port", "0"], {}, undefined, undefined, {
        when: hangGuard(),
        signal: "SIGTERM"
      })
    const missing = await run(join(harness.dir, "no-such-options.json"))
    expect([missing.code, missing.stdout]).toEqual([2, ""])
    expect(missing.stderr).toContain("no-such-options.json' must exist")
    const directory = await run(harness.dir)
    expect([directory.code, directory.stdout]).toEqual([2, ""])
    expect(directory.stderr).toContain(`--options: ${harness.dir}: could not be read (`)
    // Named, never quoted: the wrong path could be any file.
    const brokenPath = await write("broken-options.json", "aws_secret_access_key = wJalrXUtnFEMI")
    const broken = await run(brokenPath)
    expect([broken.code, broken.stdout]).toEqual([2, ""])
    expect(broken.stderr).toContain(`--options: ${brokenPath}: not JSON`)
    expect(broken.stderr).not.toContain("aws_secret")
    // Read up to 1 MiB, no further: one byte more is refused; 1 MiB is read (then refused by the emulator: "pad").
    const sized = (size: number) => `{"seed": 1, "pad": "${"x".repeat(size - 22)}"}`
    const hugePath = await write("huge-options.json", sized(1024 * 1024 + 1))
    const huge = await run(hugePath)
    expect([huge.code, huge.stdout]).toEqual([2, ""])
    expect(huge.stderr).toContain(`--options: ${hugePath}: larger than 1 MiB`)
    const most = await run(await write("most-options.json", sized(1024 * 1024)))
    expect([most.code, most.stderr.trim()]).toEqual([1, expect.stringMatching(/^effect-fin: EmulatorError: .*pad/)])
    const listPath = await write("list-options.json", "[1]")
    const list = await run(listPath)
    expect([list.code, list.stdout]).toEqual([2, ""])
    expect(list.stderr).toContain(`--options: ${listPath}: expected a JSON object of options`)
    const unknownPath = await write("unknown-options.json", JSON.stringify({ seed: "x", sead: 1 }))
    const unknown = await run(unknownPath)
    expect([unknown.code, unknown.stdout]).toEqual([1, ""])
    // --port 65535, the highest, is taken (the file's options are then refused: not a usage error, 2).
    const highest = await cli(["emulator", "--options", unknownPath, "--port", "65535"], {}, undefined, undefined, {
      when: hangGuard(),
      signal: "SIGTERM"
    })
    expect([highest.code, highest.stderr.trim()]).toEqual([1, expect.stringMatching(/^effect-fin: EmulatorError: /)])
    expect(unknown.stderr.trim()).toMatch(/^effect-fin: EmulatorError: Invalid emulator options: sead: is unexpected, /)
    expect(unknown.stderr.trim()).toMatch(/; seed: Expected number, actual "x"$/)
    // A `null` port in the file is passed on for the emulator to refuse, not read as no port (the default 4010).
    // (Without --port, which would win over it.)
    const nullPort = await cli(
      ["emulator", "--options", await write("null-port-options.json", JSON.stringify({ port: null }))],
      {},
      undefined,
      undefined,
      { when: hangGuard(), signal: "SIGTERM" }
    )
    expect([nullPort.code, nullPort.stdout]).toEqual([1, ""])
    expect(nullPort.stderr.trim()).toMatch(/^effect-fin: EmulatorError: Invalid emulator options: port: /)
  })

  it("quote --amount prints the quote; --receive and --beneficiary with --json", async () => {
    // Currencies in any case, as typed by hand: lower, and mixed.
    const send = await cli(["quote", "--from", "usd", "--to", "Cad", "--amount", "100"], env)
    expect(send.code).toBe(0)
    expect(send.stdout).toMatch(/^send\s+100 USD$/m)
    expect(send.stdout).toMatch(/^exchange rate\s+1\.45$/m)
    // The service does not say whether `percentage` is a percent or a fraction: shown as given, with no unit.
    expect(send.stdout).toMatch(/^fee\s+2 \(fixed 1, percentage 1\)$/m)
    const receive = JSON.parse((await cli(["quote", "--from", "USD", "--to", "CAD", "--receive", "100", "--json"], env)).stdout)
    expect(receive.destination_amount).toBe(100)
    expect(receive.valid_till).toMatch(/Z$/)
    const [beneficiaryId] = Object.keys(Emulator.defaultBeneficiaries)
    const plain = JSON.parse((await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100", "--json"], env)).stdout)
    const beneficiary = await cli(["quote", "--amount", "100", "--beneficiary", beneficiaryId!, "--json"], env)
    expect(beneficiary.code).toBe(0)
    // The beneficiary's developer fee comes on top of the base fee.
    expect(JSON.parse(beneficiary.stdout).fee.total).toBeGreaterThan(plain.fee.total)
    expect(send.stdout + send.stderr).not.toContain(emulator.credentials.clientSecret)
  })

  it("quote refuses --to with --beneficiary, sending nothing: the beneficiary's currency is quoted", async () => {
    const [beneficiaryId] = Object.keys(Emulator.defaultBeneficiaries)
    const before = (await Effect.runPromise(emulator.counters)).requests["POST /v1/fee-calculation"] ?? 0
    // The emulator's beneficiary is paid in CAD: a quote "to EUR" would have come back in CAD, exit 0.
    const args = ["quote", "--to", "EUR", "--beneficiary", beneficiaryId!, "--receive", "100", "--json"]
    const refused = await cli(args, env)
    expect([refused.code, refused.stdout]).toEqual([1, ""])
    expect(JSON.parse(refused.stderr).error).toMatchObject({
      _tag: "RequestValidationError",
      issues: [{ path: "--to", expected: "no --to with --beneficiary (its account's currency is quoted)" }]
    })
    expect((await Effect.runPromise(emulator.counters)).requests["POST /v1/fee-calculation"] ?? 0).toBe(before)
  })

  it("a quote stopped by a signal mid-call exits 128 + the signal's number, never 0", async () => {
    await Effect.runPromise(emulator.setFaults([{ kind: "stall", route: "POST /v1/fee-calculation" }]))
    try {
      for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
        const before = (await Effect.runPromise(emulator.counters)).requests["POST /v1/fee-calculation"]
        // Sent once the quote's request has reached the (stalling) service.
        const when = (async () => {
          while ((await Effect.runPromise(emulator.counters)).requests["POST /v1/fee-calculation"] === before) {
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
        })()
        const stopped = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100", "--json"], env, "", undefined, {
          when,
          signal
        })
        // With --json, the interruption is said as JSON too.
        expect([stopped.code, stopped.stdout, stopped.stderr.trim()]).toEqual([
          code,
          "",
          `{"error":{"_tag":"Interrupted","message":"interrupted (${signal})"}}`
        ])
      }
    } finally {
      await Effect.runPromise(emulator.clearFaults)
    }
  })

  it("subdivisions asks the API; a failing service ends in one line with the tag, exit 75 (try later)", async () => {
    const online = await cli(["subdivisions", "USA"], env)
    expect(online.code).toBe(0)
    expect(online.stdout).toContain("57 subdivisions of USA (from the API)")
    // The API gives no type: no empty column for it.
    expect(online.stdout.split("\n")[0]).toBe("code   name")
    const quote = ["quote", "--from", "USD", "--to", "CAD", "--amount", "100"]
    await Effect.runPromise(emulator.setFaults([{ kind: "status", status: 503, route: "POST /v1/fee-calculation" }]))
    const failing = await cli(quote, env)
    // A service that does not answer in time is as much worth a later try, its own timeout (408) too; not a 404.
    await Effect.runPromise(emulator.setFaults([{ kind: "stall", route: "POST /v1/fee-calculation" }]))
    const slow = await cli(quote, { ...env, FIN_DEADLINE: "300 millis" })
    const once = { ...env, FIN_MAX_RETRIES: "0" }
    await Effect.runPromise(emulator.setFaults([{ kind: "status", status: 408, route: "POST /v1/fee-calculation" }]))
    const timedOut = await cli(quote, once)
    await Effect.runPromise(emulator.setFaults([{ kind: "status", status: 404, route: "POST /v1/fee-calculation" }]))
    const missing = await cli(quote, once)
    await Effect.runPromise(emulator.clearFaults)
    expect([timedOut.code, missing.code]).toEqual([75, 1])
    expect(failing.code).toBe(75)
    expect(failing.stderr.trim().split("\n")).toHaveLength(1)
    expect(failing.stderr).toMatch(/^effect-fin: ApiError: /)
    expect([slow.code, slow.stderr.trim()]).toEqual([
      75,
      "effect-fin: TimeoutError: POST /v1/fee-calculation: the call did not finish within its deadline of 300ms"
    ])
  })

  it("at debug level, under faults and refused tokens, no output carries the secret or a token", async () => {
    const fee = "POST /v1/fee-calculation" as const
    const outputs: Array<string> = []
    // A refused token (401, then a fresh one), a 503 then a retry, a body that is no JSON, a token route failing once.
    const faults: ReadonlyArray<ReadonlyArray<Emulator.FaultRule>> = [
      [{ kind: "status", status: 401, route: fee, times: 1 }],
      [{ kind: "status", status: 503, route: fee, times: 1 }],
      [{ kind: "malformed", route: fee, times: 1 }],
      [{ kind: "status", status: 503, route: "POST /v1/oauth/token", times: 1 }]
    ]
    try {
      for (const rules of faults) {
        await Effect.runPromise(emulator.setFaults(rules))
        const result = await cli(["--log-level", "debug", "quote", "--from", "USD", "--to", "CAD", "--amount", "100"], env)
        outputs.push(result.stdout, result.stderr)
      }
    } finally {
      await Effect.runPromise(emulator.clearFaults)
    }
    const everything = outputs.join("\n")
    // The debug lines were written: the check reads what a user would see with logging up.
    expect(everything).toContain("effect-fin: retrying")
    expect(everything).toContain("got 401")
    expect(everything).not.toContain(emulator.credentials.clientSecret)
    expect(everything).not.toMatch(/eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9\.[\w-]+\.[\w-]+/)
    // Nor the secret parts of any token issued (its claims, its signature), whole or from their start.
    const issued = await Effect.runPromise(emulator.issuedTokens)
    expect(issued.length).toBeGreaterThan(2)
    for (const token of issued) {
      for (const part of token.split(".").slice(1)) expect(everything).not.toContain(part.slice(0, 16))
    }
    // Nor any run of one, encoded or not (see leaks.ts).
    expect(findLeaks(outputs, { secret: emulator.credentials.clientSecret, tokens: issued })).toEqual([])
  })

  it("a refused call's line names the status, the operation and the service's field errors", async () => {
    // A fixed fee of 1 takes the whole of 1.01 once the percentage is added: the service's 422 says so per field.
    const refused = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "1.01"], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr.trim().split("\n")).toHaveLength(1)
    expect(refused.stderr.trim()).toMatch(
      /^effect-fin: ApiError: The service answered 422 on POST \/v1\/fee-calculation: [^(]+ \(source_amount: The fees take [^)]+\)$/
    )
  })

  it("with --json a failure is one line of JSON on stderr: the error with all its fields, as FinError encodes it", async () => {
    const refused = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "1.01", "--json"], env)
    expect([refused.code, refused.stdout]).toEqual([1, ""])
    expect(refused.stderr.trim().split("\n")).toHaveLength(1)
    const { error } = JSON.parse(refused.stderr)
    // Its tag first, as in the text line; decoded back into the error a program would get.
    expect(Object.keys(error)[0]).toBe("_tag")
    const decoded = Schema.decodeUnknownSync(FinError.FinError)(error)
    expect(decoded).toBeInstanceOf(FinError.ApiError)
    expect(decoded).toMatchObject({ status: 422, operation: "POST /v1/fee-calculation", attempts: 1 })
    expect((decoded as FinError.ApiError).fieldErrors?.map((f) => f.field)).toEqual(["source_amount"])
    expect(refused.stderr).not.toContain(emulator.credentials.clientSecret)
    // A time-limited answer keeps its Duration in the schema's form.
    await Effect.runPromise(emulator.setFaults([{ kind: "status", status: 429, route: "POST /v1/fee-calculation", retryAfter: 60 }]))
    try {
      const limited = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100", "--json"], env)
      const rate = Schema.decodeUnknownSync(FinError.FinError)(JSON.parse(limited.stderr).error)
      expect(rate).toBeInstanceOf(FinError.RateLimitError)
      // Limited, not refused: worth running again later (the 422 above is not).
      expect(limited.code).toBe(75)
      expect(Duration.toSeconds((rate as FinError.RateLimitError).retryAfter!)).toBe(60)
    } finally {
      await Effect.runPromise(emulator.clearFaults)
    }
  })

  it("run's dataDir (effect-fin/cli in a program of one's own) is the snapshot cross-check compares with", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "effect-fin-data-"))
    for (const file of ["subdivisions.json", "subdivisions.meta.json"]) {
      copyFileSync(fileURLToPath(new URL(`../data/${file}`, import.meta.url)), join(dataDir, file))
    }
    const report = join(dataDir, "report.json")
    const crossCheck = ["node", "effect-fin", "cross-check", "--countries", "CAN", "--report", report]
    const written: Array<string> = []
    const write = (chunk: string | Uint8Array) => {
      written.push(String(chunk))
      return true
    }
    const stdout = vi.spyOn(process.stdout, "write").mockImplementation(write)
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(write)
    const exitCode = process.exitCode
    try {
      for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value)
      await Effect.runPromise(Effect.provide(run(crossCheck, { dataDir }), NodeContext.layer))
      expect(process.exitCode).toBe(0)
      expect(JSON.parse(readFileSync(report, "utf8"))).toMatchObject({
        agree: true,
        checked: ["CAN"],
        snapshot: join(dataDir, "subdivisions.json").split(sep).join("/")
      })
      // A copy its meta file does not describe is refused, naming that folder's file: it is the one read.
      const data = join(dataDir, "subdivisions.json")
      writeFileSync(data, readFileSync(data, "utf8").replace("\"Alberta\"", "\"Alberta (edited)\""))
      await Effect.runPromise(Effect.provide(run(crossCheck, { dataDir }), NodeContext.layer))
      expect(process.exitCode).toBe(2)
      expect(written.join("")).toContain(join(dataDir, "subdivisions.meta.json"))
      // Never rewritten in place: lookups answer from the built modules, so only cross-check would see the new data.
      const before = readdirSync(dataDir).sort()
      const inputs = fileURLToPath(new URL("../data/iso-codes-4.20", import.meta.url))
      const over = ["node", "effect-fin", "snapshot", "--from-iso-codes", inputs, "--source-version", "4.20"]
      // Nor through a symlink to it, nor as the last of two --out (the one the tool reads).
      const link = join(harness.dir, "bundled-data-link")
      symlinkSync(dataDir, link)
      for (const out of [[`--out=${dataDir}/`], ["--out", link], ["--out", harness.dir, "--out", dataDir]]) {
        process.exitCode = undefined
        written.length = 0
        await Effect.runPromise(Effect.provide(run([...over, ...out], { dataDir }), NodeContext.layer))
        expect([process.exitCode, written.join("")], out.join(" ")).toEqual([
          2,
          expect.stringContaining(
            "effect-fin snapshot: --out is the snapshot bundled with effect-fin, which is not rewritten in place"
          )
        ])
        expect(readdirSync(dataDir).sort()).toEqual(before)
      }
      // Checked or dry-run, it writes nothing: taken (the data/ of a package ships no module, which --check skips).
      for (const file of ["subdivisions.json", "subdivisions.meta.json"]) {
        copyFileSync(fileURLToPath(new URL(`../data/${file}`, import.meta.url)), join(dataDir, file))
      }
      for (const flag of ["--check", "--dry-run"]) {
        process.exitCode = undefined
        await Effect.runPromise(Effect.provide(run([...over, "--out", dataDir, flag], { dataDir }), NodeContext.layer))
        expect(process.exitCode, flag).toBe(0)
        expect(readdirSync(dataDir).sort()).toEqual(before)
      }
    } finally {
      process.exitCode = exitCode
      stdout.mockRestore()
      stderr.mockRestore()
      vi.unstubAllEnvs()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it("cross-check compares the emulator's answers with the bundled snapshot, from any folder", async () => {
    // Run from a folder with no data/ of its own, as an installed command is: the package's snapshot is used.
    const report = join(harness.dir, "cross-check-report.json")
    const agree = await harness.run(["cross-check", "--countries", "USA,CAN,ATA"], env, "", harness.dir)
    expect(agree.code).toBe(0)
    const written = JSON.parse(readFileSync(report, "utf8"))
    expect(written.checked).toEqual(["ATA", "CAN", "USA"])
    expect(written.agree).toBe(true)
    expect(written.baseUrl).toBe(emulator.url)
    const bad = await cli(["cross-check", "--countries", "USA,usa"], env)
    expect(bad.code).toBe(2)
    // Writing a snapshot needs --out: the bundled one is not rewritten in place, and nothing is written here.
    const write = await harness.run(["snapshot", "--from-api"], env, "", harness.dir)
    expect(write.code).toBe(2)
    expect(write.stderr).toMatch(/^effect-fin snapshot: give --out DIR/)
    expect(existsSync(join(harness.dir, "data"))).toBe(false)
    // Into a new folder, the API's lists keep type and parent from the bundled snapshot (the API has neither).
    const out = join(harness.dir, "fresh-snapshot")
    const fresh = await harness.run(["snapshot", "--from-api", "--out", out], env, "", harness.dir)
    expect(fresh.code).toBe(0)
    const data = JSON.parse(readFileSync(join(out, "subdivisions.json"), "utf8"))
    expect(data["USA"].find((s: { code: string }) => s.code === "US-AK")).toEqual({ code: "US-AK", name: "Alaska", type: "State" })
  })

  it("subdivisions falls back to the snapshot when the service is unreachable, warning on stderr", async () => {
    const unreachable = { ...env, FIN_BASE_URL: `http://127.0.0.1:${await Effect.runPromise(closedPort)}` }
    const result = await cli(["subdivisions", "CAN"], unreachable)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("13 subdivisions of CAN (offline snapshot: the API call failed, as logged above)")
    expect(result.stderr).toContain("effect-fin: serving the offline snapshot for CAN (TransportError: POST /v1/oauth/token: could not send the request (ECONNREFUSED))")
    // One lookup per command: no cool-down is announced for lookups that will never come.
    expect(result.stderr).not.toContain("for the next")
    // With --json, stdout is the JSON document alone.
    const asJson = await cli(["subdivisions", "CAN", "--json"], unreachable)
    expect(asJson.code).toBe(0)
    expect(JSON.parse(asJson.stdout)).toMatchObject({ country: "CAN", source: "snapshot" })
    // Its log lines are JSON too, one document each: standard error is JSON lines, as its failure line is.
    const logged = asJson.stderr.trim().split("\n").map((line) => JSON.parse(line))
    expect(logged).toMatchObject([{ logLevel: "WARN", message: expect.stringContaining("serving the offline snapshot") }])
    // A quote has no snapshot to fall back on: exit 75, as for any failure worth trying again later.
    const quote = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100"], unreachable)
    expect([quote.code, quote.stderr.trim()]).toEqual([
      75,
      "effect-fin: TransportError: POST /v1/oauth/token: could not send the request (ECONNREFUSED)"
    ])
  })

  it("goes through the egress proxy HTTP_PROXY names (HTTPS_PROXY for https), except to NO_PROXY's hosts", async () => {
    const proxy = await startConnectProxy()
    try {
      const quote = ["quote", "--from", "USD", "--to", "CAD", "--amount", "100"]
      // One tunnel or more (one per connection) for each command: the quote, then cross-check's own client.
      const proxied = await cli(quote, { ...env, HTTP_PROXY: proxy.url })
      const afterQuote = proxy.tunnels().length
      const crossCheck = ["cross-check", "--countries", "CAN"]
      const lookup = await cli(crossCheck, { ...env, http_proxy: proxy.url }, "", harness.dir)
      const before = proxy.tunnels().length
      expect([proxied.code, lookup.code, afterQuote > 0, before > afterQuote]).toEqual([0, 0, true, true])
      expect(new Set(proxy.tunnels())).toEqual(new Set([new URL(emulator.url).host]))
      const direct = await cli(quote, { ...env, HTTP_PROXY: proxy.url, NO_PROXY: "127.0.0.1" })
      expect([direct.code, proxy.tunnels().length]).toEqual([0, before])
    } finally {
      await proxy.close()
    }
    // A proxy that wants credentials (407): asked once, exit 1, its status in the code; never the proxy's URL.
    const demanding = await startConnectProxy(407)
    try {
      const refused = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100"], {
        ...env,
        HTTP_PROXY: demanding.url.replace("//", "//user:proxy-secret@")
      })
      expect([refused.code, refused.stderr.trim(), demanding.tunnels().length]).toEqual([
        1,
        "effect-fin: TransportError: POST /v1/oauth/token: could not send the request (PROXY_TUNNEL_407)",
        1
      ])
      // The URL's credentials went to the proxy, with the CONNECT.
      expect(demanding.authorizations()).toEqual([`Basic ${Buffer.from("user:proxy-secret").toString("base64")}`])
    } finally {
      await demanding.close()
    }
    // An https service through HTTPS_PROXY (its certificate trusted by NODE_EXTRA_CA_CERTS): the proxy sees the
    // tunnel's host. That service answers `{}` to everything: a ResponseDecodeError shows the tunnel reached it.
    const [tls, secure] = await Promise.all([startRefusedTls(), startConnectProxy()])
    try {
      const trusted = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100"], {
        ...env,
        FIN_BASE_URL: tls.selfSigned,
        HTTPS_PROXY: secure.url,
        NODE_EXTRA_CA_CERTS: fileURLToPath(new URL("./tls/cert.pem", import.meta.url))
      })
      expect(trusted.code).toBe(1)
      expect(trusted.stderr).toMatch(/^effect-fin: ResponseDecodeError: Unexpected response from POST \/v1\/oauth/)
      expect([secure.tunnels(), tls.connections().selfSigned]).toEqual([[new URL(tls.selfSigned).host], 1])
    } finally {
      await Promise.all([tls.close(), secure.close()])
    }
    // A variable that holds no proxy URL is a configuration error naming it, not its value.
    const malformed = await cli(["quote", "--from", "USD", "--to", "CAD", "--amount", "100"], {
      ...env,
      https_proxy: "proxy-secret.internal:3128"
    })
    expect([malformed.code, malformed.stderr.trim()]).toEqual([
      1,
      "effect-fin: ConfigError: https_proxy: is not a proxy URL: give http://host:port or https://host:port " +
      "(http://user:pass@host:port with credentials)"
    ])
  })

  it("a certificate the client refuses is exit 1, not 75: tried once, a person has to mend it", async () => {
    const tls = await startRefusedTls()
    try {
      const quote = ["quote", "--from", "USD", "--to", "CAD", "--amount", "100"]
      const refused = await cli([...quote, "--json"], { ...env, FIN_BASE_URL: tls.selfSigned })
      expect([refused.code, refused.stdout]).toEqual([1, ""])
      expect(JSON.parse(refused.stderr).error).toMatchObject({
        _tag: "TransportError",
        code: "DEPTH_ZERO_SELF_SIGNED_CERT",
        attempts: 1
      })
      const plain = await cli(quote, { ...env, FIN_BASE_URL: tls.plain })
      expect([plain.code, plain.stderr.trim()]).toEqual([
        1,
        "effect-fin: TransportError: POST /v1/oauth/token: could not send the request (ERR_SSL_WRONG_VERSION_NUMBER)"
      ])
      // The snapshot still stands in for a service that cannot be had.
      const lookup = await cli(["subdivisions", "CAN"], { ...env, FIN_BASE_URL: tls.selfSigned })
      expect(lookup.code).toBe(0)
      expect(lookup.stderr).toContain("effect-fin: serving the offline snapshot for CAN (TransportError: ")
      expect(tls.connections()).toEqual({ selfSigned: 2, plain: 1 })
    } finally {
      await tls.close()
    }
  })
})
