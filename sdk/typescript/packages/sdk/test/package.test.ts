// The package as an app installs it: ESM and CommonJS through the exports
// map, and nothing from Node in what browsers and edge runtimes load.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
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
