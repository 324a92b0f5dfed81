// A nightly schedule: the main agent writes a report every night at 03:00
// Berlin time, each night a run of its own. The example makes it (once:
// under an idempotency key, a second start finds the same schedule), tries
// it at once with `schedules.run` (the firing is a background task whose
// run it waits for, then the task itself), then pauses it, or deletes it with `--delete`.
//
//   TALON_URL=http://127.0.0.1:7777 TALON_TOKEN=talon_... \
//     node build/nightly-schedule.js [--delete]
import { Talon } from "@talon/sdk";

const baseUrl = process.env.TALON_URL;
const token = process.env.TALON_TOKEN;
if (!baseUrl || !token) throw new Error("set TALON_URL and TALON_TOKEN (the gateway prints its admin token at start)");
const remove = process.argv.includes("--delete");

const talon = new Talon({ baseUrl, token });

const schedule = await talon.client.schedules.create({
  name: "nightly report",
  agentId: "main",
  schedule: { kind: "cron", expr: "0 3 * * *", tz: "Europe/Berlin" },
  payload: { kind: "agentTurn", message: "Write the nightly report from my notes.", timeoutSeconds: 600 },
  // A gateway that was down at 03:00 runs it once when it is back.
  catchUp: "run_once",
  idempotencyKey: "nightly-report",
});
const next = schedule.state.nextRunAt;
console.log(`schedule ${schedule.id}: next at ${next == null ? "(paused)" : new Date(next).toISOString()}`);

// Try it now. The firing is a background task (kind "cron") that tracks
// the run it started.
const firing = await talon.client.schedules.run({ scheduleId: schedule.id });
console.log(`fired: task ${firing.id} (${firing.kind}), run ${firing.childRunId ?? "?"}`);
if (!firing.childRunId) {
  console.error(`the firing has no run: ${JSON.stringify(firing.error)}`);
  process.exit(1);
}
const result = await (await talon.run(firing.childRunId)).wait();
console.log(`report: ${result.output?.text ?? "(none)"}`);
// The task follows its run to the end (it subscribes, never polls).
const task = await talon.task(firing.id).wait({ signal: AbortSignal.timeout(30_000) });
console.log(`task ${task.id}: ${task.status}`);

// Every schedule this token may see.
for await (const each of talon.client.schedules.list()) {
  console.log(`- ${each.name}: ${each.enabled ? "enabled" : "paused"}, fired ${each.state.firings} time(s)`);
}

if (remove) {
  await talon.client.schedules.delete({ scheduleId: schedule.id });
  console.log("deleted");
} else {
  const paused = await talon.client.schedules.update({ scheduleId: schedule.id, enabled: false });
  console.log(`paused: next at ${paused.state.nextRunAt ?? "(none while paused)"}`);
}

if (result.status !== "completed" || task.status !== "succeeded" || task.scheduleId !== schedule.id) {
  console.error(`the firing ended ${result.status} / ${task.status}`);
  process.exit(1);
}
