/**
 * Whether a URL's hostname is this machine's loopback: the one place plain http is allowed (the emulator, a local
 * copy of a source), since nothing sent there crosses a network.
 *
 * @internal
 */
export const isLoopback = (hostname: string): boolean =>
  hostname === "localhost" || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname)

/** Whether `url` is https, or plain http on loopback: what may be read from, or sent credentials. */
export const isSecureOrLocal = (url: URL): boolean =>
  url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))
