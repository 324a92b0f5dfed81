// Builds the package in the current directory: ESM into dist/esm,
// CommonJS into dist/cjs (with a package.json that marks it CommonJS),
// and, with --tests, its tests for Node's test runner into build/.
// Each output is written beside the old one and swapped in by a rename, so
// a test of another package that reads this one's dist/ meanwhile never
// finds it half written.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const here = process.cwd();
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const run = (project, outDir) =>
  execFileSync(process.execPath, [tsc, "-p", join(here, project), "--outDir", outDir], { stdio: "inherit" });

/** Builds into `<dir>.new-<pid>` with `build`, then replaces `dir` with it. */
function swap(dir, build) {
  const fresh = join(here, `${dir}.new-${process.pid}`);
  rmSync(fresh, { recursive: true, force: true });
  try {
    build(fresh);
    const old = join(here, `${dir}.old-${process.pid}`);
    if (existsSync(join(here, dir))) renameSync(join(here, dir), old);
    renameSync(fresh, join(here, dir));
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
}

if (process.argv.includes("--tests")) {
  if (existsSync(join(here, "tsconfig.test.json")))
    swap("build", (out) => run("tsconfig.test.json", join(out, "test")));
} else {
  swap("dist", (out) => {
    run("tsconfig.json", join(out, "esm"));
    run("tsconfig.cjs.json", join(out, "cjs"));
    mkdirSync(join(out, "cjs"), { recursive: true });
    writeFileSync(join(out, "cjs/package.json"), '{\n  "type": "commonjs"\n}\n');
  });
}
