// Extracts the real model chat templates (and their example contexts) that
// @huggingface/jinja's end-to-end test keeps, into
// tests/golden/template/templates/hf_js/ and hf_js/manifest.json.
//
// Usage: node tools/template/extract_hfjs_templates.mjs <huggingface.js checkout>/packages/jinja/test/e2e.test.js
// (the templates are JavaScript template literals: evaluating the file's
// TEST_CUSTOM_TEMPLATES object yields the exact strings).
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

const e2e = process.argv[2];
if (!e2e) {
  console.error("usage: extract_hfjs_templates.mjs path/to/e2e.test.js");
  process.exit(2);
}
const lines = fs.readFileSync(e2e, "utf8").split("\n");
const end = lines.findIndex((l, i) => i > 0 && l.startsWith("const TEST_CUSTOM_FORMATTING"));
const body = lines.slice(0, end).filter((l) => !l.startsWith("import")).join("\n");
const mod = await import(
  "data:text/javascript;base64," + Buffer.from(body + "\nexport { TEST_CUSTOM_TEMPLATES };").toString("base64")
);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const dest = path.join(root, "tests", "golden", "template", "templates", "hf_js");
fs.mkdirSync(dest, { recursive: true });
const manifest = [];
let i = 0;
for (const [name, v] of Object.entries(mod.TEST_CUSTOM_TEMPLATES)) {
  const slug = String(i++).padStart(2, "0") + "_" + name.replace(/[^A-Za-z0-9.]+/g, "_").replace(/_+$/, "");
  fs.writeFileSync(path.join(dest, slug + ".jinja"), v.chat_template);
  manifest.push({ name, file: "hf_js/" + slug + ".jinja", data: v.data });
}
fs.writeFileSync(path.join(dest, "manifest.json"), JSON.stringify(manifest, null, 1) + "\n");
console.log(`wrote ${manifest.length} templates to ${path.relative(root, dest)}`);
