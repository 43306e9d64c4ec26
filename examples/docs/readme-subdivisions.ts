// README.md, Offline subdivisions (verbatim; test/readme.test.ts checks it).
import { Subdivisions } from "effect-fin"

Subdivisions.forCountry("USA")          // Right([{ code: "US-AK", name: "Alaska", type: "State" }, ...])
const code: string = "US"               // a code from outside: checked when run
Subdivisions.forCountry(code)           // Left(RequestValidationError): alpha-3 codes only
Subdivisions.byCode("AZ-BAB")           // Some({ code: "AZ-BAB", name: "Babək", type: "Rayon", parent: "AZ-NX" })
Subdivisions.isValid("CAN", "US-CA")    // Right(false)
Subdivisions.search("BRA", "sao paulo") // Right([{ code: "BR-SP", name: "São Paulo", ... }])
Subdivisions.countriesWithout()         // ["ABW", "AIA", ...] (49)
