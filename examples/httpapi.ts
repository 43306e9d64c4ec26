import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Config, Duration, Effect, Layer, Schema } from "effect"
import { CountryCode, FeeService, type FinError, SubdivisionService, Webhooks } from "effect-fin"

// What your frontend may see. effect-fin's errors are safe to log, not to hand on: they name the service's routes,
// its request ids and up to 1 KiB of its answers. Map them to errors of your own.
export class QuoteRefused extends Schema.TaggedError<QuoteRefused>()("QuoteRefused", {
  fields: Schema.Array(Schema.String)
}, HttpApiSchema.annotations({ status: 422 })) {}

export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", {
  retryAfterSeconds: Schema.optional(Schema.Number)
}, HttpApiSchema.annotations({ status: 503 })) {}

const alpha3 = HttpApiSchema.param("alpha3", CountryCode.CountryCode)

export class Api extends HttpApi.make("payments").add(
  HttpApiGroup.make("fin")
    .add(
      HttpApiEndpoint.post("quote", "/quotes")
        .setPayload(FeeService.FeeCalculationRequestSchema) // a misspelt key is a 400, never dropped
        .addSuccess(FeeService.FeeQuote)
        .addError(QuoteRefused)
        .addError(Unavailable)
    )
    .add(
      HttpApiEndpoint.get("subdivisions")`/countries/${alpha3}/subdivisions`
        .addSuccess(SubdivisionService.SubdivisionList)
        .addError(Unavailable)
    )
) {}

const unavailable = (error: FinError.FinError) =>
  new Unavailable("retryAfter" in error && error.retryAfter !== undefined
    ? { retryAfterSeconds: Math.ceil(Duration.toSeconds(error.retryAfter)) }
    : {})

const refusal = (error: FinError.FinError) =>
  error._tag === "RequestValidationError"
    ? new QuoteRefused({ fields: error.issues.map((issue) => issue.path) })
    // The quote's own refusal only: a token call's error (`operation` the token route's) says nothing of the quote.
    // A 404 is one too (no such beneficiary): sent again, it fails again, so not a 503 to retry.
    : error._tag === "ApiError" && error.operation === "POST /v1/fee-calculation" &&
        (error.status === 422 || error.status === 404)
    ? new QuoteRefused({ fields: (error.fieldErrors ?? []).map((field) => field.field) })
    : unavailable(error)

const FinGroup = HttpApiBuilder.group(Api, "fin", (handlers) =>
  handlers
    .handle("quote", ({ payload }) => Effect.mapError(FeeService.calculate(payload), refusal))
    .handle("subdivisions", ({ path }) => Effect.mapError(SubdivisionService.list(path.alpha3), unavailable)))

// On the API's own router: HttpApi reads the bodies of its endpoints only, so a delivery reaches the handler unread,
// as its signature check needs. Made in the server's scope: its shutdown waits for the handlers still running.
const WebhookRoute = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const app = yield* Webhooks.makeHandler({
      secrets: yield* Config.redacted("FIN_WEBHOOK_SECRET"),
      handlers: { "transaction.status": (event) => Effect.log(event.event_reference_id, event.data) }
    })
    yield* router.post("/webhooks/fin", app)
  }))

// Served with HttpApiBuilder.serve(), given FinClient.layerFromEnv() on your HttpClient and a server layer.
export const ApiLive = Layer.merge(HttpApiBuilder.api(Api).pipe(Layer.provide(FinGroup)), WebhookRoute)
