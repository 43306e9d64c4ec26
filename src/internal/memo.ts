/**
 * Memoises a function of a string key: for values built once per key (tagged metrics, say) on a hot path.
 *
 * @internal
 */
export const memo = <M>(make: (key: string) => M): (key: string) => M => {
  const cache = new Map<string, M>()
  return (key) => {
    let value = cache.get(key)
    if (value === undefined) cache.set(key, value = make(key))
    return value
  }
}
