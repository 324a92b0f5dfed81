// Fan out: a run that spawns three sub-agents (its agent needs a
// `subagents` section in the gateway's config), each a background task;
// the app lists the tasks the run started (`run.tasks()`), follows one's
// events, and gathers every answer with `task.wait()` (which follows the
// event stream, never polls).
//
//   TALON_URL=http://127.0.0.1:7777 TALON_TOKEN=talon_... \
//     node build/fan-out.js "Check each part of the notes"
import { Talon, type Task, type protocol as P } from "@talon/sdk";

const baseUrl = process.env.TALON_URL;
const token = process.env.TALON_TOKEN;
if (!baseUrl || !token) throw new Error("set TALON_URL and TALON_TOKEN (the gateway prints its admin token at start)");
const prompt = process.argv.slice(2).join(" ") || "Check each part of the notes";
const wanted = Number(process.env.TALON_FAN_OUT ?? "3");

const talon = new Talon({ baseUrl, token });

// The parent run asks for its helpers (the model calls `sessions_spawn`)
// and goes on; each helper is a child run in a session of its own.
const run = await talon.agent("main").run(prompt);
console.log(`run ${run.id}`);
const parent = await run.wait();
console.log(`parent ${parent.status}: ${parent.output?.text ?? "(no text)"}`);

// The tasks the run started, newest first, every page.
const tasks: Task[] = [];
for await (const task of run.tasks()) tasks.push(task);
console.log(`${tasks.length} sub-agents: ${tasks.map((t) => t.info?.label ?? t.id).join(", ")}`);
if (tasks.length !== wanted) {
  console.error(`expected ${wanted} sub-agents, the run started ${tasks.length}`);
  process.exit(1);
}

// Each task's own events: its changes (`task.updated`) and its child run's.
const [first] = tasks;
if (first) {
  for await (const event of first.events()) {
    if (event.type === "task.updated") console.log(`  ${first.id}: ${(event.data as P.Task).status}`);
  }
}

// Gather: wait for every task to end, at most a minute in all.
const signal = AbortSignal.timeout(60_000);
const ended = await Promise.all(tasks.map((task) => task.wait({ signal })));
for (const task of ended.reverse()) {
  const answer = task.status === "succeeded" ? task.result : task.error?.message;
  console.log(`${task.label ?? task.id} (${task.status}): ${answer ?? "(nothing)"}`);
}

const failed = ended.filter((task) => task.status !== "succeeded");
if (parent.status !== "completed" || failed.length > 0) {
  console.error(`not every helper succeeded: ${failed.map((t) => `${t.id} ${t.status}`).join(", ") || parent.status}`);
  process.exit(1);
}
