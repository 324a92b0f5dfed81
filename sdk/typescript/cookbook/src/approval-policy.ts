// An approval policy: the app answers a run's approval requests itself.
// Writes inside the workspace are approved (this once), writes anywhere
// else are denied, and anything else (here, a shell command) is left to a
// person, who answers from elsewhere: a dashboard, a chat message. The
// person is simulated below by a second client. It checks the outcome of
// the script scripts/cookbook gives the mock model (three calls: a write
// inside, a write outside, a shell command).
//
//   TALON_URL=... TALON_TOKEN=... node build/approval-policy.js "Write a summary to summary.txt"
import { posix } from "node:path";

import { Talon, type ApprovalAction, type ApprovalRequest } from "@talon/sdk";

const baseUrl = process.env.TALON_URL;
const token = process.env.TALON_TOKEN;
if (!baseUrl || !token) throw new Error("set TALON_URL and TALON_TOKEN (the gateway prints its admin token at start)");
const prompt = process.argv.slice(2).join(" ") || "Write a summary to summary.txt";

/** A path the model gave, if it stays inside the workspace (relative, no `..` out of it). */
function insideWorkspace(path: unknown): path is string {
  if (typeof path !== "string" || path === "") return false;
  const normal = posix.normalize(path);
  return !posix.isAbsolute(normal) && normal !== ".." && !normal.startsWith("../");
}

/**
 * The app's policy, in the seed's shape: it reads the tool's name
 * (`request.toolName`, as the model calls it); `request.toolId` is the
 * catalog id (`openclaw:core:write`) for a policy that must tell apart two
 * tools of one name.
 */
function policy(request: ApprovalRequest): ApprovalAction {
  const path = (request.approval.arguments as { path?: unknown } | null | undefined)?.path;
  console.log(`asked: ${request.summary}`);
  if (request.kind === "tool" && (request.toolName === "write" || request.toolName === "edit")) {
    return insideWorkspace(path)
      ? request.approveOnce({ reason: "a write inside the workspace" })
      : request.deny({ reason: `${String(path)} is outside the workspace` });
  }
  // Anything else: ask a person. The request stays pending until someone
  // answers it; here the app notifies them and moves on.
  notifyPerson(request.id);
  return request.askUser();
}

/** The reason the person gives (how the outcome below tells their decisions apart). */
const PERSON = "a person looked at it";
/** What went wrong outside the run, if anything: this example's failure. */
let failed: unknown;

/**
 * The person, at a dashboard with a client of their own: they see the
 * pending requests and decide. (A real app would send a notification and
 * let a person click; this one answers at once, so the example runs alone.)
 */
const dashboard = new Talon({ baseUrl, token });
async function personApproves(approvalId: string): Promise<void> {
  try {
    for (const approval of await dashboard.approvals({ status: "pending" })) {
      if (approval.id !== approvalId) continue;
      console.log(`person: approving ${approval.info.summary}`);
      await approval.approveOnce({ reason: PERSON });
    }
  } catch (error) {
    failed = error;
  }
}
function notifyPerson(approvalId: string): void {
  setTimeout(() => {
    void personApproves(approvalId);
  }, 100);
}

const talon = new Talon({ baseUrl, token });
const run = await talon.agent("main").run(prompt);
console.log(`run ${run.id}`);

// Answer the run's requests with the policy until it ends (a failure of
// the watch itself, not a decision, is this example's failure). A run
// waiting on a person waits as long as they take: give up after a minute.
const stop = run.onApproval(policy, { onError: (error) => (failed = error) });
const result = await run.wait({ timeoutMs: 60_000 });
stop();
if (result.status === "accepted") await run.cancel({ reason: "no decision within a minute" });

// What happened: every request, how it was decided and by whom; then what
// each tool call did.
const approvals = await run.approvals();
for (const { info } of approvals) {
  console.log(`${info.summary} → ${info.status} (${info.decision ?? "-"}: ${info.reason ?? ""})`);
}
for await (const event of run.events()) {
  if (event.type === "tool.call.completed") {
    console.log(`${event.data.name} ran: ${JSON.stringify(event.data.result)}`);
  } else if (event.type === "tool.call.failed") {
    console.log(`${event.data.name} did not run: ${JSON.stringify(event.data.error)}`);
  }
}
console.log(`status: ${result.status}`);

// The outcome this example expects from its script: one write inside the
// workspace approved by the policy, one outside denied by it, and one
// shell command approved by the person.
const decided = approvals
  .map(({ info }) => {
    const path = (info.arguments as { path?: unknown } | null | undefined)?.path;
    const tool = info.toolName ?? "?";
    const where = path === undefined ? "" : ` ${typeof path === "string" ? path : JSON.stringify(path)}`;
    const who = info.reason === PERSON ? "person" : info.decision ? "policy" : "nobody";
    return `${tool}${where}: ${info.status} by ${who}`;
  })
  .sort();
const expected = [
  "exec: approved by person",
  "write ../outside.txt: denied by policy",
  "write summary.txt: approved by policy",
];
const problems: string[] = [];
if (failed !== undefined) {
  const error = failed instanceof Error ? String(failed) : JSON.stringify(failed);
  problems.push(`answering approvals failed: ${error}`);
}
if (result.status === "accepted") {
  problems.push("the run was still waiting after a minute (cancelled)");
} else if (result.status !== "completed") {
  problems.push(`the run ended ${result.status}: ${JSON.stringify(result.error)}`);
}
if (decided.join("\n") !== expected.join("\n")) {
  problems.push(`expected ${JSON.stringify(expected)}, got ${JSON.stringify(decided)}`);
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
