/** Registers bench/lib/loader.mjs: `node --import ./bench/lib/register.mjs bench/<file>.ts`. */
import { register } from "node:module"

register("./loader.mjs", import.meta.url)
