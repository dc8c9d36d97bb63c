// Loads the package's browser files (src/seqviz/widgets/static) into node for the unit tests beside this file. The
// files are parts of larger ES modules (seqviz.widgets._common.esm puts the prelude, _random.js and _live.js in front
// of a widget; scripts/vendor_js.py joins _random.js, live_decode.js and live.js), so each test names the parts it
// needs, in that order, and the top-level names it wants back; their own export lines are dropped.
// fixtures(): what Python computed for the same inputs (tests/test_js_units.py writes it and runs `node --test`).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const STATIC = new URL("../../src/seqviz/widgets/static/", import.meta.url);
const TMP = mkdtempSync(join(tmpdir(), "seqviz-js-"));
process.on("exit", () => rmSync(TMP, { recursive: true, force: true }));
let loaded = 0;

export async function loadStatic(parts, names) {
  const source = parts.map((name) => readFileSync(new URL(name, STATIC), "utf8")).join("\n")
    .replace(/^export \{[^}]*\};?$/gm, "")
    .replace(/^export default .*$/gm, "")
    .replace(/^export (?=(async )?function|const|class)/gm, "");
  const code = `${source}\nexport { ${names.join(", ")} };\n`;
  const file = join(TMP, `${++loaded}-${parts.map((p) => p.replace(/\W/g, "")).join("+")}.mjs`);
  writeFileSync(file, code); // a file, so a failure's stack names a line
  return import(pathToFileURL(file).href);
}

// The Python side's expectations, or null when node runs these tests alone (the comparisons are then skipped).
export function fixtures() {
  const path = process.env.SEQVIZ_JS_FIXTURES;
  return path ? JSON.parse(readFileSync(path, "utf8")) : null;
}

export const NO_FIXTURES = "needs what Python computed: run it through pytest tests/test_js_units.py";
