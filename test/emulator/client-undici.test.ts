import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { clientSuite } from "./clientSuite.js"

clientSuite("NodeHttpClient.layerUndici", NodeHttpClient.layerUndici)
