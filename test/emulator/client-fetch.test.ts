import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { clientSuite } from "./clientSuite.js"

clientSuite("FetchHttpClient", FetchHttpClient.layer)
