// Builds the cookbook (sdk/typescript/cookbook): type-checks every example
// with tsc (strict, cookbook/tsconfig.json) and compiles it into
// cookbook/build/<name>.js for Node; then bundles the browser page
// (src/browser/page.ts, with @talon/sdk) into build/browser/page.js with
// esbuild and copies its HTML beside it. Needs @talon/sdk built (its dist/).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const cookbook = join(dirname(fileURLToPath(import.meta.url)), "..", "cookbook");
const out = join(cookbook, "build");
const require = createRequire(import.meta.url);

if (!existsSync(join(dirname(require.resolve("@talon/sdk/package.json")), "dist", "esm", "index.js"))) {
  console.error("build-cookbook: @talon/sdk is not built: cd sdk/typescript/packages/sdk && npm run build");
  process.exit(1);
}

rmSync(out, { recursive: true, force: true });
const tsc = require.resolve("typescript/bin/tsc");
try {
  execFileSync(process.execPath, [tsc, "-p", join(cookbook, "tsconfig.json")], { stdio: "inherit" });
} catch {
  process.exit(1);
}

// tsc emitted the page as an ES module that imports "@talon/sdk", which a
// browser cannot resolve: replace it with one file holding the SDK too.
await build({
  entryPoints: [join(cookbook, "src", "browser", "page.ts")],
  outfile: join(out, "browser", "page.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  logLevel: "warning",
});
copyFileSync(join(cookbook, "src", "browser", "index.html"), join(out, "browser", "index.html"));
