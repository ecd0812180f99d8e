// Run once while typescript.blob is built (snapshot.js): V8 compiles the
// compiler's code the first time it runs, and the snapshot keeps it, so
// this transpiles, with transpile.js's options, a program that uses much
// of the language, and one that does not parse.
const ts = require("typescript");
const options = require("./transpile.js").options(ts, "main.ts");
const program = `import * as fs from "fs";
import { join } from "path";
interface Shape { area(): number; readonly name?: string }
abstract class Base<T> implements Shape {
  constructor(protected value: T, private tag = "") {}
  abstract area(): number;
}
class Square extends Base<number> {
  static count = 0;
  #secret = 1;
  area() { return this.value ** 2; }
  get side(): number { return this.value; }
}
enum Color { Red, Green = "green" }
namespace NS { export const x = 1; }
type Pair<A, B> = [A, B] | { a: A; b?: B };
declare const ambient: unknown;
export default async function* gen<T extends object>(items: T[], ...rest: Array<keyof T>): AsyncGenerator<T> {
  for await (const item of items) { if ((item as any) satisfies object) yield item!; }
}
export const f = (x: number = 1, { a, ...others }: any = {}): string => \`\${x}\${a}\${others?.b ?? ""}\`;
try {
  console.log(new Square(2).area(), Color.Green, NS.x, join("a", "b"), fs.existsSync("."), [1, 2].map((v) => v * 2));
} catch (e: unknown) {
  throw e;
} finally {
  label: for (;;) break label;
}
`;
for (let i = 0; i < 3; i++) ts.transpileModule(program, options);
const broken = ts.transpileModule("const x: = ;", options);
for (const d of broken.diagnostics) {
  d.file.getLineAndCharacterOfPosition(d.start);
  ts.flattenDiagnosticMessageText(d.messageText, "\n");
}
