// Validates an OpenAPI document (a file, or - for stdin) with
// @readme/openapi-parser: the OpenAPI 3.x schema, then its references.
// Prints "valid" or the problems; exits 1 when invalid.
import { readFileSync } from "node:fs";
import { validate } from "@readme/openapi-parser";

const doc = JSON.parse(readFileSync(process.argv[2] === "-" ? 0 : process.argv[2], "utf8"));
const result = await validate(doc);
if (result.valid) {
  console.log("valid");
  for (const w of result.warnings ?? []) console.log("warning:", JSON.stringify(w));
} else {
  console.log(JSON.stringify(result.errors, null, 2));
  process.exit(1);
}
