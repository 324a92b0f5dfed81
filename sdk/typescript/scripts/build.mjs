// Builds the package in the current directory: ESM into dist/esm,
// CommonJS into dist/cjs (with a package.json that marks it CommonJS),
// and, with --tests, its tests for Node's test runner into build/.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const here = process.cwd();
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const run = (project) => execFileSync(process.execPath, [tsc, "-p", join(here, project)], { stdio: "inherit" });

if (process.argv.includes("--tests")) {
  rmSync(join(here, "build"), { recursive: true, force: true });
  if (existsSync(join(here, "tsconfig.test.json"))) run("tsconfig.test.json");
} else {
  rmSync(join(here, "dist"), { recursive: true, force: true });
  run("tsconfig.json");
  run("tsconfig.cjs.json");
  mkdirSync(join(here, "dist/cjs"), { recursive: true });
  writeFileSync(join(here, "dist/cjs/package.json"), '{\n  "type": "commonjs"\n}\n');
}
