/**
 * Regenerates the offline ISO 3166-2 snapshot (data/subdivisions.json, its meta file and the generated module the
 * library loads) from an explicit source, printing the diff against the committed snapshot first.
 *
 *   npm run snapshot -- --from-iso-codes data/iso-codes-4.20 --source-version 4.20 [--check | --dry-run]
 *
 * The logic lives in scripts/lib/; this file only wires the command line to it.
 */
import * as Either from "effect/Either"
import { parseCommandLine, usage } from "./lib/cli.js"
import { ExitCode } from "./lib/files.js"

const main = async (): Promise<number> => {
  const parsed = parseCommandLine(process.argv.slice(2), {
    now: new Date(),
    sourceDateEpoch: process.env.SOURCE_DATE_EPOCH
  })
  if (Either.isLeft(parsed)) {
    process.stderr.write(`${parsed.left}\n\n${usage}\n`)
    return ExitCode.trouble
  }
  const command = parsed.right
  if (command._tag === "Help") {
    process.stdout.write(`${usage}\n`)
    return ExitCode.ok
  }
  // Loaded only now: a usage error or --help answers without loading Schema and the pipeline.
  const [Cause, Effect, Exit, Option, { fromIsoCodes, run }] = await Promise.all([
    import("effect/Cause"),
    import("effect/Effect"),
    import("effect/Exit"),
    import("effect/Option"),
    import("./lib/snapshot.js")
  ])
  const exit = await Effect.runPromiseExit(
    run({
      source: fromIsoCodes(command.location, command.version),
      outDir: command.outDir,
      modulePath: command.modulePath,
      generatedAt: command.generatedAt,
      check: command.check,
      dryRun: command.dryRun,
      log: (text) => process.stdout.write(`${text}\n`)
    })
  )
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.failureOption(exit.cause)
  process.stderr.write(
    `${Option.isSome(failure) ? failure.value.message : Cause.pretty(exit.cause)}\nNothing was written.\n`
  )
  return ExitCode.trouble
}

main().then((code) => {
  process.exitCode = code
})
