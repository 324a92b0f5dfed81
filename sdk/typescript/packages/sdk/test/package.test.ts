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

/** The registry packages `dir`'s package needs (dependencies and peers,
 * not `@talon/*`, which are packed themselves), and theirs in turn, as the
 * workspace installed them: name → directory. */
function registryDeps(dir: string, found = new Map<string, string>()): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  const optional = manifest.peerDependenciesMeta ?? {};
  const names = [
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}).filter((name) => !optional[name]?.optional),
  ];
  const from = createRequire(join(dir, "package.json"));
  for (const name of names) {
    if (name.startsWith("@talon/") || found.has(name)) continue;
    const at = dirname(from.resolve(`${name}/package.json`));
    found.set(name, at);
    registryDeps(at, found);
  }
  return found;
}

describe("the tarballs", () => {
  it("`npm pack` of each package installs into a fresh project, which loads them", () => {
    const packages = join(root, "..");
    const work = mkdtempSync(join(tmpdir(), "talon-pack-"));
    // npm's cache for this test alone, empty: the install below must need
    // nothing but the tarballs, whatever the machine's cache holds.
    const env = { ...process.env, npm_config_cache: join(work, "npm-cache") };
    const pack = (dir: string) => {
      const out = execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", work], {
        cwd: dir,
        encoding: "utf8",
        env,
      });
      const [packed] = JSON.parse(out) as { filename: string; files: { path: string }[] }[];
      assert.ok(packed, dir);
      return packed;
    };
    try {
      const dirs = ["sdk", "sdk-testing", "sdk-react"].map((name) => join(packages, name));
      const tarballs = dirs.map((dir) => {
        const packed = pack(dir);
        const paths = packed.files.map((f) => f.path);
        assert.ok(
          paths.includes("dist/esm/index.js") &&
            paths.includes("dist/cjs/index.js") &&
            paths.includes("dist/esm/index.d.ts"),
          `${dir}: ${paths.join(", ")}`,
        );
        assert.ok(!paths.some((p) => p.startsWith("test/") || p.startsWith("build/")), `${dir} ships no tests`);
        return join(work, packed.filename);
      });
      // What they need from the registry (ws, and react as sdk-react's
      // peer), packed from the copies `npm ci` checked against the lock
      // file, so the install reaches no registry and reads no cache.
      const deps = new Map<string, string>();
      for (const dir of dirs) registryDeps(dir, deps);
      assert.deepEqual([...deps.keys()].sort(), ["react", "ws"]);
      const depTarballs = [...deps.values()].map((dir) => join(work, pack(dir).filename));
      const app = join(work, "app");
      mkdirSync(app);
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
      execFileSync(
        "npm",
        ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", ...depTarballs, ...tarballs],
        {
          cwd: app,
          stdio: "pipe",
          env,
        },
      );
      const loaded = execFileSync(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          `const sdk = await import("@talon/sdk"); const testing = await import("@talon/sdk-testing"); const react = await import("@talon/sdk-react");
           const { createRequire } = await import("node:module"); const require = createRequire(process.cwd() + "/x.js");
           const cjs = require("@talon/sdk"); const cjsTesting = require("@talon/sdk-testing"); const cjsReact = require("@talon/sdk-react");
           console.log(JSON.stringify([typeof sdk.Talon, typeof testing.FakeGateway, typeof testing.startGateway, typeof react.TalonProvider,
             typeof cjs.Talon, typeof cjsTesting.FakeGateway, typeof cjsReact.TalonProvider]));`,
        ],
        { cwd: app, encoding: "utf8" },
      );
      assert.deepEqual(JSON.parse(loaded), [
        "function",
        "function",
        "function",
        "function",
        "function",
        "function",
        "function",
      ]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
