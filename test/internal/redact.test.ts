import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { type Decoded, htmlDecoded, redactor, urlDecoded } from "../../src/internal/redact.js"

describe("redactor", () => {
  const secret = "s3cr+t/v!al=ue~ x*"
  const redact = redactor([secret, "tok"], 1024)

  it("finds a credential however it was echoed: as sent, JSON-escaped, URL- or form-encoded by any encoder", () => {
    const echoes = [
      secret,
      JSON.stringify(secret).slice(1, -1),
      encodeURIComponent(secret),
      encodeURIComponent(secret).toLowerCase(),
      new URLSearchParams({ s: secret }).toString().slice(2),
      encodeURIComponent(secret).replace(/%2F/g, "/"),
      secret.replace(/[^A-Za-z0-9]/g, (c) => `%${c.charCodeAt(0).toString(16)}`),
      secret.replace("+", "%2B").replace(" ", "+")
    ]
    for (const echo of echoes) expect(redact(`before ${echo} after`), echo).toBe("before <redacted> after")
  })

  it("as HTML-escaping code writes it (&amp; &lt; &gt; &quot; &#39;, named, decimal or hex)", () => {
    const symbols = "Kx9&pQ<2>mZ\"r7'Lw4#vB8nT"
    const redactSymbols = redactor([symbols], 1024)
    const named = (apostrophe: string) =>
      symbols.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
        .replace(/'/g, apostrophe)
    const echoes = [
      named("&#39;"),
      named("&#x27;"),
      named("&apos;"),
      symbols.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`),
      symbols.replace(/[&<>"']/g, (c) => `&#x${c.charCodeAt(0).toString(16)};`)
    ]
    for (const echo of echoes) expect(redactSymbols(`before ${echo} after`), echo).toBe("before <redacted> after")
  })

  it("as an HTML escaper that mixes the styles writes it (Go's &amp; with &#34;, PHP's &#039;)", () => {
    const secret = "Kx9pQ2mZr7Lw4vB8nT&a'b\"c<d>-secret-tail-XYZ"
    const redactSecret = redactor([secret], 1024)
    const base = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    const echoes = [
      base(secret).replace(/"/g, "&#34;").replace(/'/g, "&#39;"),
      base(secret).replace(/"/g, "&quot;").replace(/'/g, "&#039;"),
      secret.replace(/[&<>"']/g, (c) => `&#X${c.charCodeAt(0).toString(16)};`)
    ]
    for (const echo of echoes) expect(redactSecret(`before ${echo} after`), echo).toBe("before <redacted> after")
    expect(redactSecret("Tom &amp; Jerry &lt;3 &#34;hi&#34;")).toBe("Tom &amp; Jerry &lt;3 &#34;hi&#34;")
  })

  it("as an HTML escaper that escapes more than &<>\"' writes it (Go's html/template `+`, .NET's HtmlEncoder)", () => {
    const secret = "abc+def/ghiJKLmnoPQRstuVWXyz0123456789+abc=="
    const redactSecret = redactor([secret], 1024)
    expect(redactSecret(`Go: ${secret.replaceAll("+", "&#43;")} end`)).toBe("Go: <redacted> end")
    expect(redactSecret(`.NET: ${secret.replaceAll("+", "&#x2B;")} end`)).toBe(".NET: <redacted> end")
    const accented = "Kx9pQ2mZr7Lw4vB8nTé&zz"
    expect(redactor([accented], 1024)(`x Kx9pQ2mZr7Lw4vB8nT&#xE9;&amp;zz y`)).toBe("x <redacted> y")
    // A JSON body shown in an HTML page: its escapes, HTML-escaped.
    const quoted = 'Kx9pQ2mZr7Lw4vB8nT"tail-secret-xyz'
    const page = JSON.stringify({ token: quoted }).replace(/&/g, "&amp;").replace(/"/g, "&quot;")
    expect(redactor([quoted], 1024)(page)).toBe("{&quot;token&quot;:&quot;<redacted>&quot;}")
    // A reference to another character is not cut into.
    expect(redactor(["&&&&"], 1024)("&amp;&amp;&amp;&amp;&#x1F600;")).toBe("<redacted>&#x1F600;")
    // Escaped twice: a page showing text an escaper already wrote (`&amp;quot;`, `&amp;#43;`), the page's own
    // references left as they were.
    const twice = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;")
    expect(redactor([quoted], 1024)(`<p>${twice(page)}</p>`)).toBe(
      "<p>{&amp;quot;token&amp;quot;:&amp;quot;<redacted>&amp;quot;}</p>"
    )
    expect(redactSecret(`Go twice: ${secret.replaceAll("+", "&amp;#43;")} &amp;amp; end`)).toBe(
      "Go twice: <redacted> &amp;amp; end"
    )
  })

  it("leaves everything else as it was, the other escapes included", () => {
    expect(redact("100%25 of a+b, %zz, tok")).toBe("100%25 of a+b, %zz, <redacted>")
    expect(redact("no credential here")).toBe("no credential here")
  })

  it("a credential with a lone surrogate or of 40,000 characters is found, not a failure", () => {
    expect(redactor(["a\ud800b"], 100)(`x a\ud800b y ${encodeURIComponent("a\ufffdb")}`)).toBe("x <redacted> y <redacted>")
    const long = "k".repeat(40_000)
    expect(redactor([long], 100_000)(`x ${long} y`)).toBe("x <redacted> y")
  })

  it("a credential cut short where it was echoed (a gateway shortening long values) is redacted, at either end", () => {
    const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjbGllbnQtNDIifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    const cut = redactor([token], 1024)
    for (const kept of [token.length - 4, 40, 16]) {
      const echo = token.slice(0, kept)
      expect(cut(`authorization=Bearer ${echo}...`), String(kept)).toBe("authorization=Bearer <redacted>...")
      expect(cut(`authorization=Bearer%20${encodeURIComponent(echo)}...`), String(kept)).toBe("authorization=Bearer%20<redacted>...")
    }
    // Fifteen characters of a long credential are not it (its first sixteen are the least that is).
    expect(cut(`x ${token.slice(0, 15)} y`)).toBe(`x ${token.slice(0, 15)} y`)
    // A shorter credential: half of it, at least 8 characters; one of 8 or fewer only whole.
    const secret = "0123456789abcdefghij"
    expect(redactor([secret], 100)(`${secret.slice(0, 10)}|${secret.slice(0, 9)}`)).toBe(`<redacted>|${secret.slice(0, 9)}`)
    expect(redactor(["12345678"], 100)("1234567 12345678")).toBe("1234567 <redacted>")
    // A run stops where the echo leaves the credential: what follows is kept.
    expect(cut(`${token.slice(0, 30)}...and more`)).toBe("<redacted>...and more")
    // Cut at its start instead (a page or a mask that keeps a value's end): as many of its last characters.
    for (const kept of [token.length - 4, 40, 16]) {
      const echo = token.slice(-kept)
      expect(cut(`authorization=...${echo} end`), String(kept)).toBe("authorization=...<redacted> end")
      expect(cut(`a=...${encodeURIComponent(echo)} end`), String(kept)).toBe("a=...<redacted> end")
    }
    expect(redactor([secret], 100)(`${secret.slice(-10)}|${secret.slice(-9)}`)).toBe(`<redacted>|${secret.slice(-9)}`)
  })

  it("a JWT's claims or signature echoed without its header (the same public text on every token) are redacted", () => {
    const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjbGllbnQtNDIiLCJuIjoxfQ.c2lnbmF0dXJlLXNpZ25hdHVyZS0xMjM0NTY3OA"
    const [, claims, signature] = jwt.split(".")
    const find = redactor([jwt], 1024)
    expect(find(`sig ${signature}`)).toBe("sig <redacted>")
    // Claims and signature together are the token's end: one run.
    expect(find(`claims ${claims}.${signature}`)).toBe("claims <redacted>")
    expect(find(`claims ${claims}`)).toBe("claims <redacted>")
    expect(find(`cut ${signature!.slice(0, 20)}...`)).toBe("cut <redacted>...")
    // Only a JWT's parts: those of another credential with dots are words the service's own text may hold.
    const dotted = redactor(["prod.2024.payments-service-key-7", "com.acme.invalid_client_for_env"], 1024)
    expect(dotted("payments-service unavailable, error: invalid_client")).toBe(
      "payments-service unavailable, error: invalid_client"
    )
  })

  it("a cut echo that starts inside another run of a credential that repeats itself is redacted to its end", () => {
    const periodic = `${"abcd".repeat(5)}SECRETPART0123456789xyz`
    expect(redactor([periodic], 1024)(`x=abcd${periodic.slice(0, 35)}...`)).toBe("x=<redacted>...")
    const runOfA = `${"a".repeat(20)}TOPSECRET-0123456789`
    expect(redactor([runOfA], 1024)(`x=aaaa${runOfA.slice(0, 30)}...`)).toBe("x=<redacted>...")
    // Long repetitive credentials and texts stay cheap (the search is linear): a 40,000-character one, echoed cut.
    const long = "k".repeat(40_000)
    expect(redactor([long], 100_000)(`x ${long.slice(0, 39_000)} y ${long}`)).toBe("x <redacted> y <redacted>")
  })

  it("a credential with `/` escaped as `\\/` (a PHP encoder), in a body cut short, whole or cut, is found", () => {
    const secret = "Ab3/9xQ/zz0123456789/abcdefgh"
    const escaped = secret.replaceAll("/", "\\/")
    const find = redactor([secret], 1024)
    expect(find(`{"client_secret":"${escaped}"}`)).toBe(`{"client_secret":"<redacted>"}`)
    expect(find(`{"client_secret":"${escaped.slice(0, 24)}`)).toBe(`{"client_secret":"<redacted>`)
  })

  it("as other JSON encoders write it (\\uXXXX for &<> or any non-ASCII, either case), and URL-encoded twice", () => {
    const goSecret = "a&b<c>d_0123456789ABCDEFGHIJ"
    const go = goSecret.replace(/[&<>]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    expect(redactor([goSecret], 1024)(`{"secret":"${go}"}`)).toBe(`{"secret":"<redacted>"}`)
    const pySecret = "pässwörd-0123456789-abcdefghij"
    const python = JSON.stringify(pySecret).slice(1, -1).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    expect(redactor([pySecret], 1024)(`{"secret":"${python}"}`)).toBe(`{"secret":"<redacted>"}`)
    const upperHex = python.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) => `\\u${hex.toUpperCase()}`)
    expect(upperHex).toContain("\\u00E4")
    expect(redactor([pySecret], 1024)(`{"secret":"${upperHex}"}`)).toBe(`{"secret":"<redacted>"}`)
    // Python escapes non-ASCII only: a credential with `&<` too keeps those as they are (whole, not only its start).
    const pyBoth = "pässwörd&<0123456789-abcdefghij"
    const pyEcho = pyBoth.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    expect(pyEcho).toContain("d&<0")
    expect(redactor([pyBoth], 1024)(`{"secret":"${pyEcho}"}`)).toBe(`{"secret":"<redacted>"}`)
    const slashy = "Ab3/9xQ/zz0123456789/abcdefgh"
    const find = redactor([slashy], 1024)
    expect(find(`next=${encodeURIComponent(encodeURIComponent(slashy))}&x=1`)).toBe("next=<redacted>&x=1")
    expect(find(`q=${encodeURIComponent(slashy.replaceAll("/", "\\/"))}&x=1`)).toBe("q=<redacted>&x=1")
    // Escapes together, as PHP writes them: `\\/` and `\\u00e4` (its default), `\\/` and `\\u003C` (JSON_HEX_TAG).
    const u = (c: string, upper: boolean) => {
      const hex = c.charCodeAt(0).toString(16).padStart(4, "0")
      return `\\u${upper ? hex.toUpperCase() : hex}`
    }
    const phpSecret = "pässwörd/0123456789/abcdefghij"
    const php = JSON.stringify(phpSecret).slice(1, -1).replaceAll("/", "\\/").replace(/[^\x00-\x7f]/g, (c) => u(c, false))
    expect(redactor([phpSecret], 1024)(`{"secret":"${php}"}`)).toBe(`{"secret":"<redacted>"}`)
    const tagSecret = "a/b<c>d&e_0123456789ABCDEFGHIJ"
    const hexTag = tagSecret.replaceAll("/", "\\/").replace(/[<>&]/g, (c) => u(c, true))
    expect(redactor([tagSecret], 1024)(`{"secret":"${hexTag}"}`)).toBe(`{"secret":"<redacted>"}`)
    // Go escapes &<> but keeps other characters as they are.
    const goMixed = "ä&b_0123456789ABCDEFGHIJ"
    expect(redactor([goMixed], 1024)(`"${goMixed.replace("&", "\\u0026")}"`)).toBe(`"<redacted>"`)
    // Form-encoded twice: a space is `+`, then `%2B`.
    const spaced = "correct horse battery staple 0123456789"
    const twice = new URLSearchParams({ next: `https://x.test/cb?s=${new URLSearchParams({ s: spaced }).toString().slice(2)}` })
      .toString()
    expect(twice).toContain("correct%2Bhorse")
    expect(redactor([spaced], 1024)(twice)).toBe("next=https%3A%2F%2Fx.test%2Fcb%3Fs%3D<redacted>")
    // Partly encoded twice (an IRI encoder: non-ASCII kept as it is, `/` escaped): the raw bytes read as they are.
    const iri = "p\u00e4ssw\u00f6rd/0123456789abcdefghij"
    expect(redactor([iri], 1024)(`x ${iri.replace("/", "%252F")} y`)).toBe("x <redacted> y")
    // A long credential and a page of plus signs (every byte through the form view) stay cheap.
    const long = "k".repeat(65_536)
    expect(redactor([long], 1024)(`${"+".repeat(4 * 1024 * 1024)}`)).toBe("+".repeat(1025))
  })

  // System.Text.Json by default: `+`, the backtick, &<>' and non-ASCII as `\u` with upper-case hex, `"` as `\u0022`.
  it("as .NET writes it (a base64 secret's + as \\u002B), whole or cut short", () => {
    const secret = "q8+Vd3kLr1/XmP0aZt7Yc2NwB5uGhJ4eRs9Tf6=="
    const dotNet = secret.replaceAll("+", "\\u002B")
    const find = redactor([secret], 1024)
    expect(find(`{"message":"Invalid body: {\\"client_secret\\":\\"${dotNet}\\"}"}`))
      .toBe(`{"message":"Invalid body: {\\"client_secret\\":\\"<redacted>\\"}"}`)
    expect(find(`"${dotNet.slice(0, 20)}`)).toBe(`"<redacted>`)
    const quoted = 'pa"ss`wörd&0123456789abcdef'
    const written = 'pa\\u0022ss\\u0060w\\u00F6rd\\u00260123456789abcdef'
    expect(redactor([quoted], 1024)(`{"s":"${written}"}`)).toBe(`{"s":"<redacted>"}`)
  })

  it("credentials that overlap leave nothing of either", () => {
    expect(redactor(["abcX", "Xdef"], 100)("<abcXdef>")).toBe("<<redacted>>")
  })

  it("many echoes of a long credential never bring a part of one from past the searched text into what is kept", () => {
    const long = "ABCDEFGHIJKLMNOPQRSTUVWXYZ".repeat(4)
    for (const echo of [long, encodeURIComponent(long).replace(/[A-Z]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)]) {
      const out = redactor([long], 1024)(`${echo} `.repeat(40))
      expect(out.replace(/<redacted> ?/g, "")).toBe("")
    }
  })

  it("keeps one character past `keep` (so a reader can tell the text was longer), a credential there redacted whole", () => {
    expect(redactor(["tok"], 5)("0123456789")).toBe("012345")
    const text = `${"x".repeat(1020)}${encodeURIComponent(secret)}${"y".repeat(5000)}`
    const out = redact(text)
    expect(out).toBe(`${"x".repeat(1020)}<redacted>`)
    expect(out).not.toContain("s3cr")
  })

  it("a credential that begins right after the kept part adds nothing to it (no <redacted> past keep + 1)", () => {
    // `keep` 5: "012345" is returned; "tok" begins at 6, outside it, so neither it nor a `<redacted>` says so.
    expect(redactor(["tok"], 5)("012345tok789")).toBe("012345")
    expect(redactor(["tok"], 5)("01234tok789")).toBe("01234<redacted>")
  })

  it("with no credential (or only empty ones), still returns only the kept start and one more character", () => {
    expect(redactor([], 5)("0123456789")).toBe("012345")
    expect(redactor([""], 5)("0123456789")).toBe("012345")
  })

  it("a JWT's later part of exactly 16 characters counts as a credential of its own", () => {
    const claims = "eyJzdWIiOiJ4In0x"
    expect(claims).toHaveLength(16)
    const token = `eyJhbGciOiJIUzI1NiJ9.${claims}.c2lnbmF0dXJlLXNpZ25hdHVyZQ`
    expect(redactor([token], 1024)(`claims ${claims} echoed`)).toBe("claims <redacted> echoed")
  })

  it("a character reference to no character (past U+10FFFF, a surrogate) is left as it is, not a failure", () => {
    const none = "x &#9999999; &#x110000; &#xD800;"
    expect(redactor(["tok"], 100)(`${none} tok`)).toBe(`${none} <redacted>`)
    // The bounds: U+D7FF, U+E000 and U+10FFFF are characters; U+D800 to U+DFFF are not.
    const bounds = "&#xD7FF;&#xD800;&#xDFFF;&#xE000;&#x10FFFF;&#x110000;"
    expect(htmlDecoded(bounds).bytes).toBe("\ud7ff&#xD800;&#xDFFF;\ue000\u{10ffff}&#x110000;")
    // Zero-padded past seven digits, as HTML allows: still the character.
    const padded = "x Kx9pQ2mZr7Lw4vB8nT&#00000000039;tail y"
    expect(redactor(["Kx9pQ2mZr7Lw4vB8nT'tail"], 1024)(padded)).toBe("x <redacted> y")
  })

  it("a form-encoded echo with only `+` for its spaces (no `%` anywhere) is found", () => {
    const spaced = "correct horse battery staple 0123456789"
    expect(redactor([spaced], 1024)(`pass=${spaced.replaceAll(" ", "+")}&x=1`)).toBe("pass=<redacted>&x=1")
    // A `+` of its own (`%2B`) and spaces (`+`), neither part long enough to be a cut echo: read as one form.
    const both = "Ab+Cd Ef+Gh 0123456789-abcdefghij-XYZ"
    const form = new URLSearchParams({ s: both }).toString()
    expect(redactor([both], 1024)(`${form}&x=1`)).toBe("s=<redacted>&x=1")
  })

  it("a credential that begins at the last kept character, URL-encoded twice, is redacted whole", () => {
    const euro = "\u20ac\u20ac\u20ac\u20ac"
    const twice = encodeURIComponent(encodeURIComponent(euro))
    expect(twice).toHaveLength(60)
    expect(redactor([euro], 10)(`0123456789${twice} tail`)).toBe("0123456789<redacted>")
    // Two euros (6 bytes, no base64 core to widen the search): 15 characters each, and not one fewer, are searched.
    const two = encodeURIComponent(encodeURIComponent("\u20ac\u20ac"))
    expect(redactor(["\u20ac\u20ac"], 10)(`0123456789${two} tail`)).toBe("0123456789<redacted>")
  })

  it("a cut echo must be half the credential, rounded up, and at least 8 characters", () => {
    // 14 characters: 8 (not 7); 17 characters: 9 (half rounded up, not down).
    expect(redactor(["0123456789abcd"], 100)("0123456|01234567")).toBe("0123456|<redacted>")
    expect(redactor(["0123456789abcdefg"], 100)("01234567|012345678")).toBe("01234567|<redacted>")
  })

  it("a JWT whose parts hold base64url's `-` and `_` is known as one: its signature alone is redacted", () => {
    const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjbGllbnQtNDIi_Q-x.c2lnbmF0dXJl-LXNpZ25h_dHVyZQ"
    expect(redactor([jwt], 1024)(`sig ${jwt.split(".")[2]}`)).toBe("sig <redacted>")
    // Its claims too, which are neither its start nor its end.
    expect(redactor([jwt], 1024)(`claims ${jwt.split(".")[1]} end`)).toBe("claims <redacted> end")
  })

  it("with non-ASCII and &<> escaped together (PHP's default with JSON_HEX_*), and U+0080 partly URL-encoded", () => {
    const both = "p\u00e4ssw\u00f6rd&<0123456789abcdefghij"
    const u = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
    expect(redactor([both], 1024)(`{"s":"${both.replace(/[^\x00-\x7f]|[&<>']/g, u)}"}`)).toBe(`{"s":"<redacted>"}`)
    // The two kinds alternating: no run of either escape alone is long enough to be a cut echo.
    const mixed = "\u00e4&\u00f6<\u00fc>\u00df&\u00e9<\u00e8>"
    expect(redactor([mixed], 1024)(`{"s":"${mixed.replace(/[^\x00-\x7f]|[&<>']/g, u)}"}`)).toBe(`{"s":"<redacted>"}`)
    // U+0080 is two bytes in UTF-8 (the first character that is not its own byte).
    const c80 = "ab\u0080cd+0123456789abcdefgh"
    expect(redactor([c80], 1024)("x ab\u0080cd%2B0123456789abcdefgh y")).toBe("x <redacted> y")
  })
  it("in lower or upper case (a gateway that case-folds what it quotes), a credential of 8 characters or more", () => {
    const credential = "Sup3rSecretClientValue-2026-XYZ"
    const redact = redactor([credential, "Ab1Cd2"], 1024)
    const echoes = [credential.toLowerCase(), credential.toUpperCase(), encodeURIComponent(credential.toLowerCase())]
    for (const echo of echoes) {
      expect(redact(`invalid client_secret ${echo}.`), echo).toBe("invalid client_secret <redacted>.")
    }
    // A shorter one, only as sent: its other cases are words a service's own text may hold.
    expect(redact("Ab1Cd2 ab1cd2 AB1CD2")).toBe("<redacted> ab1cd2 AB1CD2")
    // Eight characters are enough.
    expect(redactor(["Ab1Cd2Ef"], 1024)("ab1cd2ef AB1CD2EF")).toBe("<redacted> <redacted>")
  })

  it("base64- or base64url-encoded, alone or at any of the three places it can have in a longer encoded text", () => {
    const secret = "Sup3r/Secret+Client?Value~2026"
    const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjbGllbnQtMTIzIiwiZXhwIjoxfQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
    const redact = redactor([secret, token], 4096)
    const base64 = (text: string) => btoa(text)
    const base64url = (text: string) => base64(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")
    for (const encode of [base64, base64url]) {
      for (const prefix of ["", "i", "i:", "id:", "client-1:"]) {
        for (const credential of [secret, token]) {
          const echo = encode(`${prefix}${credential}`)
          const out = redact(`basic ${echo} end`)
          expect(out, `${prefix}${credential}`).toMatch(/^basic [\w+/=-]*<redacted>[\w+/=-]* end$/)
          // What is left of the encoded text: the prefix's characters, and at most 4 at each end that hold other bytes
          // (or the padding) too.
          const left = out.slice("basic ".length, -" end".length).replace("<redacted>", "")
          expect(left.length, `${prefix}${credential}`).toBeLessThanOrEqual(Math.floor(prefix.length / 3) * 4 + 8)
        }
      }
    }
    // The encoded text of anything else is left as it is.
    expect(redact(`basic ${base64("client-1:something-else-entirely")} end`)).not.toContain("<redacted>")
  })

  // A short secret's cores are short too (16 to 23 characters for one of 12 to 17 bytes): still looked for.
  it("a short secret base64-encoded in a Basic header is redacted at each of the three places", () => {
    const secret = "s3cret-14chars"
    const redact = redactor([secret], 4096)
    for (const prefix of ["", "i", "i:"]) {
      const out = redact(`basic ${btoa(`${prefix}${secret}`)} end`)
      expect(out, prefix).toContain("<redacted>")
    }
  })
})

// A decoded text's spans are made from the replace's matches, only once a needle is found in it: each unit must come
// from the part of the text that decodes, alone, to it and the units beside it from there, the parts in order and
// covering the whole text, or a credential found would be redacted at another place.
describe("a decoded text's view", () => {
  const piece = FastCheck.constantFrom(
    "%", "+", "2", "5", "B", "f", "a", "é", "\ud83d", "\ude00", "€", " ", "&", "x", ";", "#", "%2B", "%25", "%41",
    "%c3%a9", "\u00ff", "&amp;", "&#43;", "&#x2B;", "&lt;", "&#xD800;", "&amp;amp;", "&#1114112;", "&#0233;",
    "&#X1F600;", "&quot;", "&apos;", "😀", "\ud83d\ude00é", "\uffff", "&#x10FFFF;", "&#xDFFF;"
  )
  const text = FastCheck.array(piece, { maxLength: 40 }).map((pieces) => pieces.join(""))

  // The first way a view departs from that, or undefined: checked in plain code, one `expect` a text (one a unit held
  // the URL property, 12,000 views, 25 to 37 s on a loaded 2-CPU machine: past the 30 s test timeout).
  const finest = /^(?:%[0-9A-Fa-f]{2}|&#?\w+;|[\ud800-\udbff][\udc00-\udfff]|[\s\S])$/
  const spansProblem = (text: string, decoded: Decoded, decode: (part: string) => string): string | undefined => {
    const { bytes, from, to } = decoded.view()
    const quoted = JSON.stringify
    if (bytes !== decoded.bytes) return `the view's bytes ${quoted(bytes)}, not ${quoted(decoded.bytes)}`
    if (from.length !== bytes.length || to.length !== bytes.length) {
      return `${from.length} and ${to.length} span ends for ${bytes.length} units`
    }
    let at = 0
    for (let i = 0; i < bytes.length;) {
      let j = i + 1
      while (j < bytes.length && from[j] === from[i] && to[j] === to[i]) j++
      const unit = `units ${i} to ${j} (text ${from[i]} to ${to[i]})`
      // Parts in order, none skipped: a text's characters left out of every part would be dropped from the view.
      if (from[i] !== at) return `${unit} begin past ${at}`
      if (!(to[i]! > from[i]!)) return `${unit} are of no text`
      const part = text.slice(from[i], to[i])
      const alone = decode(part)
      if (alone !== bytes.slice(i, j)) {
        return `${unit}: ${quoted(part)} decodes to ${quoted(alone)}, not ${quoted(bytes.slice(i, j))}`
      }
      // The finest parts: one escape, one reference or one character, and one that decoded to itself is one unit (a
      // coarser part is a credential's span grown over the characters beside it).
      if (!finest.test(part)) return `${unit}: ${quoted(part)} is more than one escape, reference or character`
      if (alone === part && part.length !== 1) return `${unit}: ${quoted(part)} decoded to itself, not one unit`
      at = to[i]!
      i = j
    }
    return at === text.length ? undefined : `the parts end at ${at}, not at the text's end (${text.length})`
  }
  const expectSpans = (text: string, decoded: Decoded, decode: (part: string) => string) =>
    expect(spansProblem(text, decoded, decode), JSON.stringify(text)).toBeUndefined()

  it.prop("URL-decoded, a form's + read as a space or not, once or twice", [text], ([t]) => {
    for (const plusIsSpace of [false, true]) {
      const once = urlDecoded(t, plusIsSpace)
      expectSpans(t, once, (part) => urlDecoded(part, plusIsSpace).bytes)
      for (const inner of [false, true]) {
        expectSpans(once.bytes, urlDecoded(once.bytes, inner, true), (part) => urlDecoded(part, inner, true).bytes)
      }
    }
  }, { fastCheck: { numRuns: 2000 } })

  it.prop("HTML references decoded", [text], ([t]) => {
    expectSpans(t, htmlDecoded(t), (part) => htmlDecoded(part).bytes)
  }, { fastCheck: { numRuns: 2000 } })
})
