// The TypeScript client generated from the served document
// (openapi-typescript types, openapi-fetch calls) drives a real gateway
// serving the mock model: create a run (with an x-request-id, which the
// gateway logs but does not adopt), wait for it, read its events.
// tests/openapi/run generates the types, type-checks this file and runs it.
import assert from "node:assert/strict";
import { test } from "node:test";

import createClient from "openapi-fetch";

import type { components, paths } from "./.generated/ts/schema.js";

type TypedEvent = components["schemas"]["TypedEvent"];

const baseUrl = process.env.TALON_URL ?? "";
const token = process.env.TALON_TOKEN ?? "";
const client = createClient<paths>({
  baseUrl,
  headers: { Authorization: `Bearer ${token}` },
});

test("a run of the mock model, through the generated client", async () => {
  const created = await client.POST("/v1/runs.create", {
    body: { input: "What is the answer?", sessionKey: "ts-client" },
    headers: { "x-request-id": "ts-client-req" },
  });
  // The gateway's own request id, never the client's.
  const requestId = created.response.headers.get("x-request-id") ?? "";
  assert.match(requestId, /^req_[0-9a-f]{24}$/);
  assert.equal(created.response.status, 200);
  assert.ok(created.data, JSON.stringify(created.error));
  const runId: string = created.data.runId;
  assert.deepEqual(
    { ...created.data, runId: "", id: "", createdAt: 0, sessionId: "" },
    {
      runId: "",
      id: "",
      agentId: "main",
      sessionId: "",
      sessionKey: "ts-client",
      status: "queued",
      summary: "What is the answer?",
      createdAt: 0,
    },
  );
  assert.equal(created.data.id, runId);

  const waited = await client.POST("/v1/runs.wait", {
    body: { runId, timeoutMs: 20_000 },
  });
  assert.ok(waited.data, JSON.stringify(waited.error));
  const result = waited.data;
  assert.equal(typeof result.startedAt, "number");
  assert.equal(typeof result.endedAt, "number");
  assert.deepEqual(
    { ...result, startedAt: 0, endedAt: 0, usage: undefined },
    {
      runId,
      status: "completed",
      sessionId: created.data.sessionId,
      sessionKey: "ts-client",
      output: result.output,
      startedAt: 0,
      endedAt: 0,
      usage: undefined,
      artifacts: result.artifacts,
    },
  );
  assert.equal(result.output?.text, "The answer is 42.");

  const events = await client.POST("/v1/runs.events", { body: { runId } });
  assert.ok(events.data, JSON.stringify(events.error));
  assert.equal(events.data.done, true);
  const list = events.data.events as TypedEvent[];
  const types = list.map((event) => event.type);
  assert.deepEqual(types.slice(0, 2), ["run.created", "run.started"]);
  assert.equal(types.at(-1), "run.completed");
  const message = list.find((event) => event.type === "assistant.message");
  assert.ok(message, JSON.stringify(types));
  // An admin token reads the provider's native reply too.
  const { raw, ...envelope } = message;
  assert.ok(raw, JSON.stringify(message));
  assert.deepEqual(
    { ...envelope, id: "", ts: 0, sessionId: "" },
    {
      version: 1,
      id: "",
      ts: 0,
      type: "assistant.message",
      runId,
      sessionId: "",
      sessionKey: "ts-client",
      agentId: "main",
      requestId,
      data: message.data,
    },
  );
  for (const event of list) {
    assert.equal(typeof event.ts, "number", JSON.stringify(event));
    assert.equal(event.runId, runId);
    // Every event of the run names the call that created it.
    assert.equal(event.requestId, requestId);
  }
});

test("an error comes back as the one ErrorResponse", async () => {
  const missing = await client.POST("/v1/runs.get", { body: { runId: "run_nope" } });
  assert.equal(missing.response.status, 404);
  const error: components["schemas"]["ErrorResponse"] | undefined = missing.error;
  assert.deepEqual(error, {
    error: { code: "not_found", message: error?.error.message, retryable: false },
  });
});
