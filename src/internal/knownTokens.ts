/**
 * The tokens a token provider of this library got lately (access and refresh tokens, fetched or read from its store),
 * kept by service object as `DeadlineAware` keeps its `get`: every call of its client redacts them all from the
 * service's words, not only the one it sends (an API call's error page that dumps the session's refresh token, a
 * refresh's that quotes the access token it replaces). A provider adds each pair it fetches or reads (`knowPair`).
 *
 * @internal
 */
import * as Redacted from "effect/Redacted"
import * as ByService from "./byService.js"

// The pair in use, the pair before it, and a few more (tokens another process stored, refused ones).
const KEPT = 8

/** A provider's tokens seen last, redacted from every call's error (see `TokenProvider`'s `known`). */
export interface Known {
  /** Adds `token` as the newest (the empty string is no token). */
  readonly add: (token: string) => void
  /** The tokens seen last, the newest last. */
  readonly all: () => ReadonlyArray<string>
}

/** The tokens seen last (at most 8, the newest kept), and a function adding one. */
export const make = (): Known => {
  const seen = new Set<string>()
  // Made again only when a token is added: every call reads it.
  let all: ReadonlyArray<string> = []
  return {
    add: (token) => {
      if (token === "") return
      // One seen again is the newest again: a token still in use (a refresh token that refresh answers keep) is never
      // the one dropped.
      seen.delete(token)
      seen.add(token)
      if (seen.size > KEPT) seen.delete(seen.values().next().value!)
      all = Array.from(seen)
    },
    all: () => all
  }
}

/** Makes `access` and `refresh` known, to be redacted as the session's. */
export const knowPair = (
  known: Known,
  access: Redacted.Redacted<string>,
  refresh: Redacted.Redacted<string> | undefined
) => {
  known.add(Redacted.value(access))
  if (refresh !== undefined) known.add(Redacted.value(refresh))
}

/**
 * The credentials a call sends and the known tokens as one list (duplicates dropped), the same list while none of them
 * changes: the redactors of an error are kept with their list (see `Http`), and making them is most of an error's cost.
 */
export const listWith = (known: () => ReadonlyArray<string>) => {
  let last: { sent: string; secret: string; known: ReadonlyArray<string>; list: ReadonlyArray<string> } | undefined
  return (sent: string, secret: string): ReadonlyArray<string> => {
    const now = known()
    if (last === undefined || last.sent !== sent || last.secret !== secret || last.known !== now) {
      last = { sent, secret, known: now, list: [...new Set([sent, secret, ...now])] }
    }
    return last.list
  }
}

const registry = ByService.make<() => ReadonlyArray<string>>("knownTokens")

/** Records `tokens` as the tokens `service` got lately. */
export const register: <S extends object>(service: S, tokens: () => ReadonlyArray<string>) => S = registry.register

/** The tokens `service` got lately, if this library made it; none otherwise. */
export const of = (service: object): () => ReadonlyArray<string> => registry.of(service) ?? none

const none = (): ReadonlyArray<string> => []
