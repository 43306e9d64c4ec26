/**
 * One turn of the event loop.
 *
 * @internal
 */

/**
 * Calls `resume` on the next turn of the event loop, after the I/O and microtasks of this one: `setImmediate` where
 * there is one (Node, Bun, Deno), else a timer (a browser). Returns what cancels it.
 */
export const next = (resume: () => void): () => void => {
  if (typeof globalThis.setImmediate === "function") {
    const immediate = globalThis.setImmediate(resume)
    return () => globalThis.clearImmediate(immediate)
  }
  const timer = setTimeout(resume, 0)
  return () => clearTimeout(timer)
}
