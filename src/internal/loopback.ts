/**
 * Whether a URL's hostname is this machine's loopback: the one place plain http is allowed (the emulator, a local
 * copy of a source), since nothing sent there crosses a network.
 *
 * @internal
 */
export const isLoopback = (hostname: string): boolean =>
  hostname === "localhost" || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname) ||
  // IPv4 loopback mapped into IPv6 (`[::ffff:127.0.0.1]`, which the URL parser writes `[::ffff:7f00:1]`): an address,
  // not a name, so nothing resolves it elsewhere. The emulator prints it as its URL when told to listen there.
  /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname)

/** Whether `url` is https, or plain http on loopback: what may be read from, or sent credentials. */
export const isSecureOrLocal = (url: URL): boolean =>
  url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))

/**
 * Whether the URL written `url` is on loopback; false for one `URL` cannot parse, as a scoped IPv6 address
 * (`http://[fe80::1%eth0]:4010`, which the emulator listens on and prints) is: no client can be given it either.
 */
export const urlIsLoopback = (url: string): boolean => URL.canParse(url) && isLoopback(new URL(url).hostname)

/**
 * Whether `host` is the address of every interface (`0.0.0.0`, `::`): the emulator listening there prints loopback's
 * URL, but its API answers other machines too.
 */
export const isEveryInterface = (host: string | undefined): boolean => {
  if (host === undefined) return false
  // As the system reads it: "0" and "0.0" are 0.0.0.0 too, and a zone id (`::%lo`) does not narrow `::`.
  const url = host.includes(":") ? `http://[${host.replace(/%.*$/, "")}]` : `http://${host}`
  return URL.canParse(url) && ["0.0.0.0", "[::]", "[::ffff:0:0]"].includes(new URL(url).hostname)
}
