// Reports @talon/sdk's size as an app's bundler would ship it: the ESM
// build bundled, minified and gzipped, whole and without the validators
// (the runtime schema checker and its schema table replaced by no-ops).
// Run after `npm run build`: node scripts/size.mjs
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

const entry = fileURLToPath(new URL("../packages/sdk/dist/esm/index.js", import.meta.url));

async function measure(withValidators) {
  const plugins = withValidators
    ? []
    : [
        {
          name: "no-validators",
          setup(b) {
            b.onResolve({ filter: /(^|\/)(validate|generated\/schemas)\.js$/ }, (args) => ({
              path: args.path,
              namespace: "stub",
            }));
            b.onLoad({ filter: /.*/, namespace: "stub" }, (args) => ({
              contents: args.path.endsWith("schemas.js")
                ? "export const SCHEMAS = {};"
                : "export const MAX_DEPTH = 0; export function validate() { return undefined; } export function hasSchema() { return false; }",
            }));
          },
        },
      ];
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    plugins,
  });
  const code = out.outputFiles[0].contents;
  return { min: code.length, gzip: gzipSync(code, { level: 9 }).length };
}

const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
for (const [label, withValidators] of [
  ["without validators", false],
  ["with validators", true],
]) {
  const { min, gzip } = await measure(withValidators);
  console.log(`@talon/sdk ${label}: ${kb(min)} minified, ${kb(gzip)} min+gzip`);
}
