// Downloading artifacts: run an agent, then save every artifact it left
// (the files it wrote, their diffs, its trajectory) into a directory
// ($TALON_ARTIFACTS_DIR, else a new temporary one). Each download is a
// stream written to disk as it arrives, never held whole in memory; the SDK
// checks it against the length the gateway announced, so a cut download
// fails instead of leaving a short file.
//
//   TALON_URL=... TALON_TOKEN=... node build/artifacts.js "Write a summary"
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";

import { Talon } from "@talon/sdk";

const baseUrl = process.env.TALON_URL;
const token = process.env.TALON_TOKEN;
if (!baseUrl || !token) throw new Error("set TALON_URL and TALON_TOKEN (the gateway prints its admin token at start)");
const prompt = process.argv.slice(2).join(" ") || "Write a summary";
const dir = process.env.TALON_ARTIFACTS_DIR ?? mkdtempSync(join(tmpdir(), "talon-artifacts-"));
mkdirSync(dir, { recursive: true });

const talon = new Talon({ baseUrl, token });
const run = await talon.agent("main").run(prompt);
const result = await run.wait();
console.log(`run ${run.id} ended ${result.status}`);

const artifacts = await run.artifacts.list();
const problems: string[] = [];
if (result.status !== "completed") problems.push(`the run ended ${result.status}`);
if (artifacts.length === 0) problems.push("the run left no artifact");

for (const artifact of artifacts) {
  const { id, type, title, mimeType, sizeBytes } = artifact.info;
  // The id is the gateway's; keep only safe characters in the file name.
  const path = join(dir, id.replace(/[^A-Za-z0-9_-]/g, "_"));
  // Web stream (what the SDK gives in every runtime) → Node stream → file.
  const body = await artifact.download();
  await pipeline(Readable.fromWeb(body as NodeReadableStream<Uint8Array>), createWriteStream(path));
  const written = statSync(path).size;
  console.log(`${type} "${title ?? ""}" (${mimeType ?? "?"}) → ${path}: ${written} bytes`);
  if (sizeBytes != null && written !== sizeBytes) problems.push(`${id}: wrote ${written} bytes of ${sizeBytes}`);
  // A text file the agent wrote: show it.
  if (type === "file" && mimeType?.startsWith("text/") && written <= 200) {
    console.log(`  ${JSON.stringify(readFileSync(path, "utf8"))}`);
  }
}

// Besides its trajectory, the run left the file it wrote (and its diff).
if (!artifacts.some((a) => a.info.type === "file")) problems.push("the run left no file, only its trajectory");
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`saved ${artifacts.length} artifacts in ${dir}`);
