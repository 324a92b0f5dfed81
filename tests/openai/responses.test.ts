// /v1/responses through the official Node client (openai 6.49.0): a plain
// response, a server-side tool's mcp_call item, the stream helper, a client
// tool through previous_response_id, a background stream cut and resumed
// with starting_after, and cancel.
import assert from "node:assert/strict";
import { test } from "node:test";

import type OpenAI from "openai";

import {
  CLIENT_TEXT,
  Gateway,
  MODEL,
  PLAIN_TEXT,
  RESPONSES_WEATHER_TOOL,
  SLOW_TEXT,
  TOOL_TEXT,
  collect,
  rejectsWith,
} from "./common.js";

type Event = OpenAI.Responses.ResponseStreamEvent;

const plain = new Gateway("plain");
const tool = new Gateway("tool");
const client = new Gateway("client");
const slow = new Gateway("slow");

const keys = (events: Event[]) => events.map((e) => [e.sequence_number, e.type] as const);

function checkOrder(events: Event[]) {
  const numbers = events.map((e) => e.sequence_number);
  assert.deepEqual(numbers, [...new Set(numbers)].sort((a, b) => a - b), "strictly increasing sequence numbers");
}

test("responses: a response and its usage", async () => {
  const response = await plain.client().responses.create({ model: MODEL, input: "hi" });
  assert.match(response.id, /^resp_/);
  assert.deepEqual(
    [response.object, response.status, response.model, response.output_text],
    ["response", "completed", MODEL, PLAIN_TEXT],
  );
  assert.deepEqual(response.output.map((item) => item.type), ["message"]);
  const { input_tokens, output_tokens, total_tokens } = response.usage!;
  assert.deepEqual([input_tokens, output_tokens, total_tokens], [120, 6, 126]);
  await rejectsWith(
    () => plain.client().responses.create({ model: MODEL, input: "hi", previous_response_id: "resp_nothing" }),
    404,
    "previous_response_not_found",
  );
});

test("responses: a server-side tool is an mcp_call item", async () => {
  const response = await tool.client().responses.create({ model: MODEL, input: "hi" });
  assert.equal(response.output_text, TOOL_TEXT);
  const items = response.output.filter((item) => item.type !== "reasoning");
  assert.deepEqual(items.map((item) => item.type), ["mcp_call", "message"]);
  const call = items[0] as OpenAI.Responses.ResponseOutputItem.McpCall;
  assert.deepEqual([call.server_label, call.name, call.status], ["talon", "list", "completed"]);
  assert.deepEqual(JSON.parse(call.arguments), { path: "." });
});

test("responses: a stream and the stream helper", async () => {
  const events = await collect(await tool.client().responses.create({ model: MODEL, input: "hi", stream: true }));
  checkOrder(events);
  assert.equal(events[0]?.type, "response.created");
  assert.equal(events[events.length - 1]?.type, "response.completed");
  const text = events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("");
  assert.equal(text, TOOL_TEXT);

  const stream = tool.client().responses.stream({ model: MODEL, input: "hi" });
  const seen = await collect(stream);
  checkOrder(seen);
  const final = await stream.finalResponse();
  assert.deepEqual([final.status, final.output_text], ["completed", TOOL_TEXT]);
});

test("responses: a function call answered through previous_response_id", async () => {
  const openai = client.client();
  const first = await openai.responses.create({
    model: MODEL,
    input: "What is the weather in Paris?",
    tools: [RESPONSES_WEATHER_TOOL],
  });
  assert.equal(first.status, "completed");
  const calls = first.output.filter((item) => item.type === "function_call");
  assert.equal(calls.length, 1, JSON.stringify(first.output));
  const call = calls[0] as OpenAI.Responses.ResponseFunctionToolCall;
  assert.ok(call.call_id);
  assert.equal(call.name, "get_weather");
  assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });
  const final = await openai.responses.create({
    model: MODEL,
    previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
    tools: [RESPONSES_WEATHER_TOOL],
  });
  assert.deepEqual([final.status, final.output_text], ["completed", CLIENT_TEXT]);
});

test("responses: a background stream cut, then resumed after its last event", async () => {
  const openai = slow.client();
  const stream = await openai.responses.create({ model: MODEL, input: "hi", background: true, stream: true });
  const before: Event[] = [];
  for await (const event of stream) {
    before.push(event);
    if (before.length === 3) break; // closes the stream
  }
  assert.equal(before.length, 3);
  assert.equal(before[0]!.type, "response.created");
  const id = (before[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
  const cut = before[2]!.sequence_number;
  const snapshot = await openai.responses.retrieve(id);
  assert.ok(["queued", "in_progress"].includes(snapshot.status ?? ""), snapshot.status);

  const after = await collect(await openai.responses.retrieve(id, { stream: true, starting_after: cut }));
  assert.ok(after.length > 0 && after.every((e) => e.sequence_number > cut), JSON.stringify(keys(after)));
  assert.equal(after[after.length - 1]?.type, "response.completed");
  const whole = await collect(await openai.responses.retrieve(id, { stream: true }));
  assert.deepEqual([...keys(before), ...keys(after)], keys(whole));
  const text = after.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("");
  assert.equal(text, SLOW_TEXT);

  const resumed = openai.responses.stream({ response_id: id, starting_after: cut });
  const again = await collect(resumed);
  assert.deepEqual(keys(again), keys(after));
  const final = await resumed.finalResponse();
  assert.deepEqual([final.id, final.status, final.output_text], [id, "completed", SLOW_TEXT]);
});

test("responses: cancel a background response", async () => {
  const openai = slow.client();
  const created = await openai.responses.create({ model: MODEL, input: "hi", background: true });
  assert.ok(["queued", "in_progress"].includes(created.status ?? ""), created.status);
  const cancelled = await openai.responses.cancel(created.id);
  assert.deepEqual([cancelled.id, cancelled.status], [created.id, "cancelled"]);
  assert.equal((await openai.responses.retrieve(created.id)).status, "cancelled");
});
