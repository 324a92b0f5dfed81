// ESLint for the SDK's workspace (`npm run lint`): typescript-eslint's strict
// and stylistic type-checked rules over every package's src/ and test/ and
// the cookbook, each file typed by the tsconfig that builds it (so lint runs
// after `npm run build`: the packages, their tests and the cookbook import
// @talon/sdk's dist/). The .mjs build scripts and benchmarks get ESLint's
// recommended rules. Formatting is prettier's (`npm run format:check`).
import eslint from "@eslint/js";
import { defineConfig, globalIgnores } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  globalIgnores([
    "**/node_modules/",
    // Build output, and build.mjs's half-written copies of it.
    "**/build/",
    "**/build.new-*/",
    "**/build.old-*/",
    "**/dist/",
    "**/dist.new-*/",
    "**/dist.old-*/",
  ]),
  // An `eslint-disable` comment that no longer silences anything fails too.
  { linterOptions: { reportUnusedDisableDirectives: "error" } },
  {
    files: ["**/*.ts", "**/*.tsx"],
    extends: [eslint.configs.recommended, tseslint.configs.strictTypeChecked, tseslint.configs.stylisticTypeChecked],
    languageOptions: {
      parserOptions: {
        // Not `projectService`: it only reads files named tsconfig.json, and
        // the tests are typed by each package's tsconfig.test.json.
        project: ["./packages/*/tsconfig.json", "./packages/*/tsconfig.test.json", "./cookbook/tsconfig.json"],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // node:test's `describe` and `it` return promises the runner awaits
      // itself; every other promise must still be awaited or `void`ed.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "package", package: "node:test", name: ["describe", "it", "suite", "test"] },
          ],
        },
      ],
      // strictTypeChecked's options, except that numbers may be interpolated
      // (as recommendedTypeChecked allows): `${n} ms` needs no String(n).
      // Booleans, nullish values, objects and `any` stay errors.
      "@typescript-eslint/restrict-template-expressions": [
        "error",
        {
          allowAny: false,
          allowBoolean: false,
          allowNever: false,
          allowNullish: false,
          allowNumber: true,
          allowRegExp: false,
        },
      ],
      // `[...text]` splits a string into code points, which is what the SDK
      // and the fake count on purpose: the gateway's length limits (and JSON
      // Schema's maxLength) are in code points, not UTF-16 units or graphemes.
      // Spreading anything else the rule objects to is still an error.
      "@typescript-eslint/no-misused-spread": ["error", { allow: ["string"] }],
      // A rejection may pass on a value typed `any` or `unknown`, as a
      // `throw` may (only-throw-error's defaults): an aborted call rejects
      // with its AbortSignal's `reason`, as `fetch` does. Rejecting with a
      // value known not to be an Error is still an error.
      "@typescript-eslint/prefer-promise-reject-errors": [
        "error",
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // A binding named `_…` is unused on purpose (a key left out of a rest).
      "@typescript-eslint/no-unused-vars": ["error", { varsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["**/*.mjs"],
    extends: [eslint.configs.recommended],
    languageOptions: { globals: globals.node },
    rules: {
      "no-unused-vars": ["error", { varsIgnorePattern: "^_" }],
    },
  },
);
