// Writes the key paths of OpenClaw's config schema (OpenClawSchema, a zod
// schema in its dist bundle) to stdout, one a line: "*" stands for any key
// of a record, "[]" for any item of an array, and a last "**" for anything
// below a value the schema leaves open (channel configs, plugin configs). TestUnusedKeys reads the
// result, openclaw-keys.txt, to check that every key Talon reports as "not
// used by Talon yet" is one OpenClaw defines. To regenerate:
//
//   node internal/config/testdata/openclaw-keys.mjs \
//     e2e/openclaw-cli/node_modules/openclaw/dist > internal/config/testdata/openclaw-keys.txt
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const dist = resolve(process.argv[2] ?? ".");
const version = JSON.parse(readFileSync(join(dist, "..", "package.json"), "utf8")).version;
let schema;
for (const f of readdirSync(dist).filter((f) => /^zod-schema-[^.]+\.mjs$/.test(f))) {
  const mod = await import(join(dist, f));
  for (const v of Object.values(mod)) {
    const shape = v?._zod?.def?.shape;
    if (shape && "agents" in shape && "gateway" in shape && "channels" in shape) schema = v;
  }
}
if (!schema) throw new Error(`no OpenClawSchema in ${dist}`);

const out = new Set();
const seen = new Map();
function walk(s, path, depth) {
  if (!s?._zod || depth > 40) return;
  const paths = seen.get(s) ?? new Set();
  seen.set(s, paths);
  if (paths.has(path)) return;
  paths.add(path);
  const d = s._zod.def;
  const add = (p, v) => { out.add(p); walk(v, p, depth + 1); };
  switch (d.type) {
    case "object":
      for (const [k, v] of Object.entries(d.shape)) add(path ? `${path}.${k}` : k, v);
      if (d.catchall && d.catchall._zod.def.type !== "never") add(`${path}.*`, d.catchall);
      break;
    case "record": add(`${path}.*`, d.valueType); break;
    case "array": walk(d.element, `${path}[]`, depth + 1); break;
    case "tuple": for (const it of d.items) walk(it, `${path}[]`, depth + 1); break;
    case "optional": case "nullable": case "default": case "readonly": case "catch":
    case "prefault": case "nonoptional": case "success":
      walk(d.innerType, path, depth); break;
    case "lazy": walk(d.getter(), path, depth); break;
    case "pipe": walk(d.in, path, depth); walk(d.out, path, depth); break;
    case "union": for (const o of d.options) walk(o, path, depth); break;
    case "intersection": walk(d.left, path, depth); walk(d.right, path, depth); break;
    case "unknown": case "any": if (path) out.add(`${path}.**`); break;
  }
}
walk(schema, "", 0);
console.log(`# OpenClaw ${version} config keys, from its OpenClawSchema by openclaw-keys.mjs`);
console.log([...out].sort().join("\n"));
