/**
 * The entry of `scripts/snapshot-subdivisions.ts` as a function, so other command lines (`effect-fin snapshot ...`,
 * `effect-fin cross-check ...`) and tests can run it in-process: arguments in, exit code out, with the environment,
 * the output streams and the platform `HttpClient` as parameters.
 *
 * Only the command line parser is loaded up front: a usage error or `--help` answers without loading Schema, the
 * pipeline or the client.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import { type Command, parseCommandLine, usage, type WriteOptions } from "./cli.js"
import { ExitCode, sameFolder } from "./files.js"

/** Where the entry reads its settings and writes its output; every field has the process's own as default. */
export interface MainOptions {
  /** `FIN_*` client settings and `SOURCE_DATE_EPOCH`. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Diff, tables, results. Default: `process.stdout`. */
  readonly stdout?: (text: string) => void
  /** Usage and other errors, progress. Default: `process.stderr`. */
  readonly stderr?: (text: string) => void
  /** A progress bar when true, plain progress lines otherwise. Default: `process.stderr.isTTY`. */
  readonly isTTY?: boolean
  /** The default generation time (no `--generated-at`, no `SOURCE_DATE_EPOCH`). Default: now. */
  readonly now?: Date
  /** How the tool was started, for its usage text. Default: `npm run snapshot --`. */
  readonly program?: string
  /**
   * Where `--from-api` takes `type` and `parent` from when `--out` holds no snapshot yet: the installed command's
   * bundled data, which a run that writes is refused as its `--out` (a usage error). Default: nowhere (they stay
   * empty).
   */
  readonly bundledDir?: string | undefined
  /**
   * Where `--from-api` takes `type` and `parent` from, and counts an emptied country against, when `--out` holds no
   * snapshot yet, if not `bundledDir` (the repository's data/ for `npm run snapshot`). Default: `bundledDir`.
   */
  readonly baselineDir?: string | undefined
  /**
   * The platform client for `--from-api` and `--cross-check`. Default: `NodeHttpClient.layerUndici`'s, through the
   * egress proxy `HTTPS_PROXY` names (with `NO_PROXY`: `UndiciHttpClient.layerDispatcherFromEnvProxy`).
   */
  readonly httpClient?: Layer.Layer<HttpClient.HttpClient, ConfigError.ConfigError>
}

// The default client, loaded only by the commands that call the service.
const proxiedClient = async (): Promise<Layer.Layer<HttpClient.HttpClient, ConfigError.ConfigError>> => {
  const [NodeHttpClient, UndiciHttpClient, { provide }] = await Promise.all([
    import("@effect/platform-node/NodeHttpClient"),
    import("../../src/node/UndiciHttpClient.js"),
    import("effect/Layer")
  ])
  return provide(NodeHttpClient.layerUndiciWithoutDispatcher, UndiciHttpClient.layerDispatcherFromEnvProxy)
}

/**
 * Runs the snapshot command line on `argv` (the arguments only, without `node` and the script) and resolves to its
 * exit code: 0 done, up to date, or (cross-check) all agree; 1 differences (`--check`, `--cross-check`); 2 usage or
 * configuration error, unusable source or failed API call, with nothing written. Never rejects.
 */
export const main = async (argv: ReadonlyArray<string>, options: MainOptions = {}): Promise<number> => {
  const env = options.env ?? process.env
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text))
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text))
  const parsed = parseCommandLine(argv, { now: options.now ?? new Date(), sourceDateEpoch: env["SOURCE_DATE_EPOCH"] })
  if (Either.isLeft(parsed)) {
    stderr(`${parsed.left}\n\n${usage(options.program, options.bundledDir !== undefined)}\n`)
    return ExitCode.trouble
  }
  const command = parsed.right
  if (command._tag === "Help") {
    stdout(`${usage(options.program, options.bundledDir !== undefined)}\n`)
    return ExitCode.ok
  }
  // The library answers from its built modules, not from data/: a snapshot written over the bundled one would change
  // only what `cross-check` and `effect-fin/data/subdivisions.json` read, never what lookups serve.
  if (
    command._tag !== "CrossCheck" && !command.check && !command.dryRun && options.bundledDir !== undefined &&
    sameFolder(command.outDir, options.bundledDir)
  ) {
    stderr(
      `${options.program ?? "snapshot"}: --out is the snapshot bundled with effect-fin, which is not rewritten in ` +
        "place (the library's lookups answer from its built modules, not from this folder): give another --out DIR\n"
    )
    return ExitCode.trouble
  }
  try {
    return await execute(command, { ...options, env, stdout, stderr })
  } catch (e) {
    stderr(`${e instanceof Error ? e.stack ?? e.message : String(e)}\nNothing was written.\n`)
    return ExitCode.trouble
  }
}

// What `Snapshot.run` takes of a command that writes a snapshot. Installed, `--out` may be the package's data/, which
// has no generated module: `--check` of it does not ask for one unless `--module` names it. Any other folder's missing
// module is still a difference.
const writeOptions = (
  { allowEmptied, check, dryRun, generatedAt, moduleNamed, modulePath, outDir }: WriteOptions,
  bundledDir: string | undefined
) => ({
  outDir,
  modulePath,
  generatedAt,
  check,
  dryRun,
  allowEmptied,
  moduleOptional: !moduleNamed && bundledDir !== undefined && sameFolder(outDir, bundledDir)
})

const execute = async (
  command: Exclude<Command, { readonly _tag: "Help" }>,
  options: MainOptions & Required<Pick<MainOptions, "env" | "stdout" | "stderr">>
): Promise<number> => {
  const [Cause, Effect, Exit, Option, Snapshot, { errorLine }] = await Promise.all([
    import("effect/Cause"),
    import("effect/Effect"),
    import("effect/Exit"),
    import("effect/Option"),
    import("./snapshot.js"),
    import("../../src/cli/render.js")
  ])
  const { stderr, stdout } = options
  const log = (text: string) => stdout(`${text}\n`)
  const nothingWritten = command._tag === "CrossCheck" ? "No report was written." : "Nothing was written."

  const report = <E>(exit: import("effect/Exit").Exit<number, E>): number => {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    const message = Option.isNone(failure)
      ? Cause.pretty(exit.cause)
      : failure.value instanceof Snapshot.SnapshotError
      ? failure.value.message
      : errorLine(failure.value)
    stderr(`${message}\n${nothingWritten}\n`)
    return ExitCode.trouble
  }

  if (command._tag === "FromIsoCodes") {
    return report(
      await Effect.runPromiseExit(Snapshot.run({
        source: Snapshot.fromIsoCodes(command.location, command.version),
        ...writeOptions(command, options.bundledDir),
        log
      }))
    )
  }

  const Api = await import("./api.js")
  let countries: ReadonlyArray<import("../../src/CountryCode.js").CountryCode> = (
    await import("../../src/CountryCode.js")
  ).alpha3Codes
  if (command._tag === "CrossCheck" && command.countries !== undefined) {
    // Checked before the client is even configured: an invalid code sends nothing.
    const checked = Api.parseCountries(command.countries)
    if (Either.isLeft(checked)) {
      stderr(`${checked.left}\n\n${usage(options.program, options.bundledDir !== undefined)}\n`)
      return ExitCode.trouble
    }
    countries = checked.right
  }
  const httpClient = options.httpClient ?? (await proxiedClient())
  const progress = Api.makeProgress({
    isTTY: options.isTTY ?? process.stderr.isTTY === true,
    write: stderr,
    label: "Subdivisions from the API"
  })

  const program = Effect.gen(function*() {
    const settings = yield* Api.clientSettings(options.env, command.baseUrl)
    const service = Api.serviceLayer(settings, httpClient)
    if (command._tag === "FromApi") {
      const inOut = yield* Api.readPrevious(command.outDir)
      const baselineDir = options.baselineDir ?? options.bundledDir
      const previous = Object.keys(inOut).length === 0 && baselineDir !== undefined
        ? yield* Api.readPrevious(baselineDir)
        : inOut
      return yield* Snapshot.run({
        source: Snapshot.fromApi({
          location: settings.baseUrl,
          version: command.version,
          list: Api.listOnline,
          previous,
          describeError: Api.describeFinError,
          concurrency: command.concurrency,
          onProgress: progress.update
        }),
        ...writeOptions(command, options.bundledDir),
        baseline: previous,
        baselineName: options.baselineDir === undefined ? undefined : "the committed snapshot",
        log
      }).pipe(Effect.provide(service))
    }
    return yield* Api.runCrossCheck({
      countries,
      snapshotDir: command.outDir,
      reportPath: command.reportPath,
      baseUrl: settings.baseUrl,
      generatedAt: command.generatedAt,
      concurrency: command.concurrency,
      list: Api.listAsSent,
      describeError: Api.describeFinError,
      onProgress: progress.update,
      log
    }).pipe(Effect.provide(service))
  })
  return report(await Effect.runPromiseExit(program.pipe(Effect.ensuring(Effect.sync(progress.finish)))))
}
