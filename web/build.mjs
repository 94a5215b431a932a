// Builds web/src into src/pyk8s/dashboard/static/ (committed: installing pyk8s needs no Node).
// build-info.json records a hash of the sources; tests/unit/test_dashboard_bundle.py fails when the
// committed bundle was built from other sources (run `make dashboard`).
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const out = join(here, "..", "src", "pyk8s", "dashboard", "static");
const SOURCES = ["package.json", "package-lock.json", "build.mjs", "index.html", "tsconfig.json", "src"];

function files(p) {
  const st = statSync(p);
  if (!st.isDirectory()) return [p];
  return readdirSync(p).flatMap((n) => files(join(p, n)));
}

// sha256 over "sha256(content) path\n" lines, paths relative to web/ with "/", sorted
export function sourceHash() {
  const paths = SOURCES.flatMap((s) => files(join(here, s))).map((p) => relative(here, p).split(sep).join("/"));
  paths.sort();
  const lines = paths.map((p) => createHash("sha256").update(readFileSync(join(here, p))).digest("hex") + " " + p + "\n");
  return createHash("sha256").update(lines.join("")).digest("hex");
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: join(here, "src", "main.tsx") },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: out,
  legalComments: "linked",
  logLevel: "warning",
});
copyFileSync(join(here, "index.html"), join(out, "index.html"));
writeFileSync(join(out, "build-info.json"), JSON.stringify({ sourceHash: sourceHash() }, null, 2) + "\n");
console.log("built", out);
