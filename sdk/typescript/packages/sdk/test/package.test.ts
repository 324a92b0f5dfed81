// The package as an app installs it: ESM and CommonJS through the exports
// map, nothing from Node in what browsers and edge runtimes load, and the
// three packages' `npm pack` tarballs installed into a fresh project.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";

import * as esm from "@talon/sdk";

const require = createRequire(import.meta.url);
const root = dirname(require.resolve("@talon/sdk/package.json"));

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

describe("the package", () => {
  it("loads as ESM and as CommonJS with the same exports", () => {
    const cjs = require("@talon/sdk") as typeof esm;
    assert.equal(typeof esm.Talon, "function");
    assert.equal(typeof cjs.Talon, "function");
    const names = (m: object) => Object.keys(m).sort();
    assert.deepEqual(names(cjs), names(esm));
    assert.equal(new cjs.TalonError("x", { code: "conflict" }).code, "conflict");
  });

  it("imports nothing from Node", () => {
    const code = [...files(join(root, "dist/esm")), ...files(join(root, "dist/cjs"))].filter((f) => f.endsWith(".js"));
    assert.ok(code.length > 10);
    const offenders = code.filter((file) => {
      const text = readFileSync(file, "utf8");
      return /from\s+["']node:|require\(["']node:|from\s+["'](fs|path|crypto|http|https|stream|events|os|child_process|util)["']|require\(["'](fs|path|crypto|http|https|stream|events|os|child_process|util)["']\)/.test(
        text,
      );
    });
    assert.deepEqual(offenders, []);
  });
});

describe("the tarballs", () => {
  it("`npm pack` of each package installs into a fresh project, which loads them", () => {
    const packages = join(root, "..");
    const work = mkdtempSync(join(tmpdir(), "talon-pack-"));
    try {
      const tarballs = ["sdk", "sdk-testing", "sdk-react"].map((name) => {
        const out = execFileSync("npm", ["pack", "--json", "--pack-destination", work], { cwd: join(packages, name), encoding: "utf8" });
        const [packed] = JSON.parse(out) as Array<{ filename: string; files: Array<{ path: string }> }>;
        assert.ok(packed, name);
        const paths = packed.files.map((f) => f.path);
        assert.ok(paths.includes("dist/esm/index.js") && paths.includes("dist/cjs/index.js") && paths.includes("dist/esm/index.d.ts"), `${name}: ${paths.join(", ")}`);
        assert.ok(!paths.some((p) => p.startsWith("test/") || p.startsWith("build/")), `${name} ships no tests`);
        return join(work, packed.filename);
      });
      const app = join(work, "app");
      mkdirSync(app);
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
      // Offline: everything they need is in npm's cache after `npm ci`.
      execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", ...tarballs], { cwd: app, stdio: "pipe" });
      const loaded = execFileSync(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          `const sdk = await import("@talon/sdk"); const testing = await import("@talon/sdk-testing"); const react = await import("@talon/sdk-react");
           const { createRequire } = await import("node:module"); const cjs = createRequire(process.cwd() + "/x.js")("@talon/sdk");
           console.log(JSON.stringify([typeof sdk.Talon, typeof testing.FakeGateway, typeof testing.startGateway, typeof react.TalonProvider, typeof cjs.Talon]));`,
        ],
        { cwd: app, encoding: "utf8" },
      );
      assert.deepEqual(JSON.parse(loaded), ["function", "function", "function", "function", "function"]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
