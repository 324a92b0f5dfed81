// What the entry and every view share, imported through this one module
// so that esbuild puts all of it in the one chunk the entry loads at
// startup: esbuild splits code by which entry points (the entry, and each
// view's dynamic import) reach a file, so a file reached by the entry and
// only some views would become a chunk of its own, one more request at
// startup. Every view imports from here (and only from here, of these).

export * from "./auth.js";
export * from "./live.js";
export * from "./router.js";
export * from "./ui.js";
export { lazy, Suspense } from "preact/compat";
export { TalonProvider, useApprovals, useTalon } from "@talon/sdk-react";
export { Talon } from "@talon/sdk";
