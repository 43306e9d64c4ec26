import { describe, expect, it } from "@effect/vitest"
import * as Printable from "../../src/internal/printable.js"

describe("internal/printable", () => {
  it("json escapes what JSON.stringify leaves raw, stays the same JSON, and has a text for what JSON has none", () => {
    const text = "S\u00e3o \u{1f600} \u0085\u009b\u2028\u202e\u2066\u007f"
    const json = Printable.json({ text })
    expect(json).toBe(`{"text":"S\u00e3o \u{1f600} \\u0085\\u009b\\u2028\\u202e\\u2066\\u007f"}`)
    expect(JSON.parse(json)).toEqual({ text })
    // With `space`, the same document indented, as JSON.stringify indents it (the command line's --json).
    expect(Printable.json({ text: "\u2028" }, 2)).toBe(`{\n  "text": "\\u2028"\n}`)
    expect(Printable.json(undefined)).toBe("null")
    expect(Printable.json(() => 1)).toBe("null")
  })

  it("compactJson takes out white space between tokens only, keeps numbers as written, escapes as json does", () => {
    const text = ' {\r\n\t"a b" : [ 1e400 , 9007199254740993 ],\n "q\\" \\\\" : "x \u2028 \\" y" , "e": { } } \n'
    expect(Printable.compactJson(text)).toBe('{"a b":[1e400,9007199254740993],"q\\" \\\\":"x \\u2028 \\" y","e":{}}')
    expect(JSON.parse(Printable.compactJson(text))).toEqual(JSON.parse(text))
  })

  it("screen keeps line feeds, tabs and (with colour on) colour codes; escapes the rest", () => {
    const text = "\u001b[1mUsage\u001b[0m\n\tx\r\u0007\u001b]0;t"
    expect(Printable.screen(text, true)).toBe("\u001b[1mUsage\u001b[0m\n\tx\\u000d\\u0007\\u001b]0;t")
    expect(Printable.screen(text, false)).toBe("Usage\n\tx\\u000d\\u0007\\u001b]0;t")
  })

  it("quoting escapes the quoted arguments whole (a colour code of their own too); lines keeps a leading \\r", () => {
    const argument = "--x\u001b[8mhidden"
    expect(Printable.quoting(`unknown '${argument}' \u001b[1m\n\t`, [argument, "plain", "", "\n", "\t"]))
      .toBe("unknown '--x\\u001b[8mhidden' \u001b[1m\n\t")
    // An escape character alone (a prefix of every colour code) is escaped where it stands alone, not in the codes.
    expect(Printable.quoting("\u001b[0;1mUSAGE\u001b[0m '\u001b' \u001b[31", ["\u001b"]))
      .toBe("\u001b[0;1mUSAGE\u001b[0m '\\u001b' \\u001b[31")
    expect(Printable.lines("\rbar [##--]\u001b[2K\n")).toBe("\rbar [##--]\\u001b[2K\n")
    expect(Printable.lines("a\rb\tc")).toBe("a\\u000db\tc")
  })

  it("quoting: an argument that is a colour code exactly is escaped (it cannot be told from the text's own)", () => {
    // A code that hides what follows, given as an argument: shown, never acting on the terminal.
    expect(Printable.screen(Printable.quoting("unknown '\u001b[8m' secret", ["\u001b[8m"]), true))
      .toBe("unknown '\\u001b[8m' secret")
    // Of two arguments starting at one place the longer is taken whole, whichever order they were given in.
    expect(Printable.quoting("x \u001bxy\u001b[1m y", ["\u001bxy", "\u001bxy\u001b[1m"])).toBe("x \\u001bxy\\u001b[1m y")
  })

  it("escapes the edges of each range: U+000B, U+001F, U+2029, U+2069, a lone surrogate half", () => {
    expect(Printable.lines("a\u001fb")).toBe("a\\u001fb")
    expect(Printable.screen("a\u001fb", true)).toBe("a\\u001fb")
    expect(Printable.printable("\u2069")).toBe("\\u2069")
    // The first past the line feed `lines` and `screen` keep: a vertical tab.
    expect([Printable.lines("a\u000bb"), Printable.screen("a\u000bb", true)]).toEqual(["a\\u000bb", "a\\u000bb"])
    expect([Printable.printable("\u2029"), Printable.json("\u2029")]).toEqual(["\\u2029", `"\\u2029"`])
    // Half of a character (text cut inside an emoji), either half, in each function; a whole pair is kept.
    expect([Printable.printable("\ud83d"), Printable.lines("\ude00"), Printable.screen("\ud83d", false)])
      .toEqual(["\\ud83d", "\\ude00", "\\ud83d"])
    expect(Printable.printable("\ud83d\ude00")).toBe("\ud83d\ude00")
  })

  it("escapes every bidirectional embedding, override and isolate, and a backspace, in each function", () => {
    const bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    const escaped = "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069"
    expect(Printable.printable(bidi)).toBe(escaped)
    expect(Printable.lines(bidi)).toBe(escaped)
    // A backspace rewrites what was shown before it.
    expect(Printable.lines("paid\b\b\b\bdue")).toBe("paid\\u0008\\u0008\\u0008\\u0008due")
    expect(Printable.screen("a\bb", true)).toBe("a\\u0008b")
  })

  it("screen lets through only colour codes (SGR, ending in m), no other control sequence", () => {
    // A device status report (answered on the terminal's input), a printer control, cursor hiding.
    expect(Printable.screen("\u001b[6n\u001b[5i\u001b[?25l\u001b[1mok\u001b[0m", true))
      .toBe("\\u001b[6n\\u001b[5i\\u001b[?25l\u001b[1mok\u001b[0m")
    // A reset with no parameter is a colour code too: kept with colour on, taken out with it off.
    expect([Printable.screen("\u001b[1mok\u001b[m", true), Printable.screen("\u001b[1mok\u001b[m", false)])
      .toEqual(["\u001b[1mok\u001b[m", "ok"])
  })
})
