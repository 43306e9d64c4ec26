/**
 * Reading a `Redacted` that may have been wiped (`Redacted.unsafeWipe`: a layer built again after a shutdown that
 * wiped it), which `Redacted.value` throws for: its callers refuse it as no value, not as a defect.
 *
 * @internal
 */
import * as Redacted from "effect/Redacted"

/** The value of `redacted`; undefined once it has been wiped. */
export const valueOf = (redacted: Redacted.Redacted<unknown>): unknown => {
  try {
    return Redacted.value(redacted)
  } catch {
    return undefined
  }
}
