/**
 * Texts cut to a length an error or a log line should carry, never inside a surrogate pair.
 *
 * @internal
 */

/**
 * The first `max` UTF-16 units of `text`, one fewer where the cut would split a surrogate pair (an emoji): half a
 * character is none, shown as U+FFFD, or refused by a strict UTF-8 encoder.
 */
export const upTo = (text: string, max: number): string => {
  const last = text.charCodeAt(max - 1)
  return text.slice(0, last >= 0xd800 && last <= 0xdbff && text.length > max ? max - 1 : max)
}

/** `text`, or its first `max` units (see `upTo`) and `...` when it is longer. */
export const short = (text: string, max: number): string => text.length > max ? `${upTo(text, max)}...` : text
