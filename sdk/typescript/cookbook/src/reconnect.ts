// Reconnecting from a saved cursor: follow a run's events, saving the id of
// the last one handled (the cursor) as you go; "crash" in the middle of
// the run; then, as a process that starts afresh would, read the saved
// cursor and resume with `events({ after })`, with no event lost and none
// repeated. (`run.events()` already reconnects by itself when a connection
// drops; a saved cursor is for carrying on after a restart.)
//
//   TALON_URL=... TALON_TOKEN=... node build/reconnect.js "Tell me a story"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Talon, type TalonEvent } from "@talon/sdk";

const baseUrl = process.env.TALON_URL;
const token = process.env.TALON_TOKEN;
if (!baseUrl || !token) throw new Error("set TALON_URL and TALON_TOKEN (the gateway prints its admin token at start)");
const prompt = process.argv.slice(2).join(" ") || "Tell me a story";

/** Where the app keeps what it needs to carry on: the run and the cursor. */
interface Saved {
  runId: string;
  cursor: string | undefined;
}
const dir = mkdtempSync(join(tmpdir(), "talon-reconnect-"));
const file = join(dir, "cursor.json");
const save = (saved: Saved) => {
  writeFileSync(file, JSON.stringify(saved));
};
const load = (): Saved => JSON.parse(readFileSync(file, "utf8")) as Saved;

const show = (event: TalonEvent) => {
  const text = event.type === "assistant.delta" ? ` ${JSON.stringify(event.data.text)}` : "";
  console.log(`  ${event.id} ${event.type}${text}`);
};

// 1. Follow the run, saving the cursor after each event handled; after
//    three events, "crash" mid-run: the connection is cut (here by an
//    abort; a killed process does the same) and only the saved file is
//    left.
const before: string[] = [];
{
  const talon = new Talon({ baseUrl, token });
  const run = await talon.agent("main").run(prompt);
  console.log(`run ${run.id}:`);
  const crash = new AbortController();
  const stream = run.events({ signal: crash.signal });
  for await (const event of stream) {
    show(event);
    before.push(event.id);
    save({ runId: run.id, cursor: stream.cursor });
    if (before.length === 3) {
      // The crash: the connection is cut, and nothing after it runs.
      crash.abort(new Error("crashed"));
      break;
    }
  }
  console.log(`crashed after ${before.length} events; saved ${readFileSync(file, "utf8")}`);
}

// 2. After the restart (here, a new client in the same process): read the
//    file and resume after the saved cursor (the run may still be going:
//    the stream follows it to its end).
const talon = new Talon({ baseUrl, token });
const saved = load();
const run = await talon.run(saved.runId);
console.log(`restarted: resuming run ${run.id} after ${saved.cursor ?? "the start"}:`);
const after: string[] = [];
for await (const event of run.events({ after: saved.cursor })) {
  show(event);
  after.push(event.id);
}
const result = await run.wait();
rmSync(dir, { recursive: true });

// 3. Check against the whole log, read from the start: what was seen
//    before and after the crash is every event, once each, in order.
const whole: string[] = [];
for await (const event of run.events()) whole.push(event.id);
const seen = [...before, ...after];
console.log(`before ${before.length} + resumed ${after.length} = ${seen.length} events; the log has ${whole.length}`);
console.log(`status: ${result.status}`);

const problems: string[] = [];
if (result.status !== "completed") problems.push(`the run ended ${result.status}`);
if (before.length !== 3 || after.length === 0) problems.push("the crash did not come in the middle of the run");
if (new Set(seen).size !== seen.length) problems.push(`an event came twice: ${seen.join(" ")}`);
if (seen.join(" ") !== whole.join(" ")) problems.push(`saw ${seen.join(" ")}; the log has ${whole.join(" ")}`);
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log("no event lost, none repeated");
