// Captures the answers the overhead benchmark's canned server gives
// (bench/fixtures/runs.create.json, bench/fixtures/runs.wait.json) from a
// real `talon gateway` (the mock model): one `runs.create` result and the
// completed `runs.wait` result of the same run, exactly as the gateway
// wrote them, each checked against the SDK's schema. Run at sdk/typescript
// after `npm run build`, with a `talon` binary (TALON_BIN, else the
// workspace's debug build):
//
//   node packages/sdk/bench/capture.mjs
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

import { validate } from "@talon/sdk";

// The CommonJS build of the testing package (its `require` export).
const { startGateway } = createRequire(import.meta.url)("@talon/sdk-testing");

const fixtures = new URL("./fixtures/", import.meta.url);
const gateway = await startGateway({
  script: { replay: "perRun", turns: [{ text: "Hello from the benchmark." }] },
  config: { gateway: { limits: { callsPerSecond: 1e6, burst: 1000000 } } },
});
try {
  const post = async (method, body) => {
    const response = await fetch(`${gateway.url}/v1/${method}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${gateway.token}`,
        "content-type": "application/json",
        accept: "application/json",
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method}: ${response.status} ${text}`);
    return text;
  };
  const created = await post("runs.create", { input: "hi", agentId: "main", idempotencyKey: `capture-${Date.now()}` });
  const run = JSON.parse(created);
  const waited = await post("runs.wait", { runId: run.id, timeoutMs: 30000 });
  const result = JSON.parse(waited);
  if (result.status !== "completed") throw new Error(`the run did not complete: ${waited}`);
  for (const [schema, value] of [
    ["RunAccepted", run],
    ["RunResult", result],
  ]) {
    const issue = validate(schema, value);
    if (issue) throw new Error(`${schema} does not follow the protocol at ${issue.path}: ${issue.message}`);
  }
  writeFileSync(new URL("runs.create.json", fixtures), created.endsWith("\n") ? created : `${created}\n`);
  writeFileSync(new URL("runs.wait.json", fixtures), waited.endsWith("\n") ? waited : `${waited}\n`);
  console.log(`captured from ${gateway.url} into ${fileURLToPath(fixtures)}:`);
  console.log(`runs.create (${Buffer.byteLength(created)} bytes): ${created.trim()}`);
  console.log(`runs.wait (${Buffer.byteLength(waited)} bytes): ${waited.trim()}`);
} finally {
  await gateway.stop();
}
