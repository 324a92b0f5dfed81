// /v1/models and /v1/chat/completions through the official Node client
// (openai 6.49.0): models per token, plain and streamed completions with
// usage, tool progress of a server-side tool, a client tool's round trip.
import assert from "node:assert/strict";
import { test } from "node:test";

import OpenAI from "openai";

import {
  CHAT_WEATHER_TOOL,
  CLIENT_TEXT,
  Gateway,
  HI,
  MODEL,
  PLAIN_TEXT,
  PLAIN_USAGE,
  TOOL_TEXT,
  TOOL_USAGE,
  collect,
  extra,
  rejectsWith,
  usage,
} from "./common.js";

const plain = new Gateway("plain");
const tool = new Gateway("tool");
const client = new Gateway("client");

function model(id: string, created: number) {
  return { id, object: "model", created, owned_by: "talon" };
}

test("models: one per agent the token may run", async () => {
  const page = await plain.client().models.list();
  const data = [...page.data].sort((a, b) => a.id.localeCompare(b.id));
  for (const entry of data) {
    assert.ok(entry.created >= 1_700_000_000 && entry.created < 10_000_000_000, `seconds: ${JSON.stringify(data)}`);
  }
  assert.deepEqual(data, [model("talon/main", data[0]?.created ?? 0), model("talon/reviewer", data[1]?.created ?? 0)]);
  const main = await plain.client().models.retrieve(MODEL);
  assert.deepEqual(main, model(MODEL, main.created));
  const readOnly = await plain.tokenWith("agent.read");
  assert.deepEqual((await plain.client(readOnly).models.list()).data, []);
  await assert.rejects(plain.client(`talon_${"0".repeat(64)}`).models.list(), OpenAI.AuthenticationError);
});

test("chat: a completion, its usage and headers", async () => {
  const { data, response } = await plain
    .client()
    .chat.completions.create({ model: MODEL, messages: HI })
    .withResponse();
  assert.match(response.headers.get("x-talon-run-id") ?? "", /^run_/);
  assert.ok(response.headers.get("x-talon-session-key"));
  assert.equal(data.object, "chat.completion");
  assert.equal(data.model, MODEL);
  assert.equal(data.choices.length, 1);
  const choice = data.choices[0]!;
  assert.deepEqual(
    [choice.index, choice.finish_reason, choice.message.role, choice.message.content],
    [0, "stop", "assistant", PLAIN_TEXT],
  );
  assert.ok(!choice.message.tool_calls?.length);
  assert.deepEqual(data.usage, PLAIN_USAGE);
});

test("chat: an unknown model is not found, and not to be retried", async () => {
  await rejectsWith(
    () => plain.client().chat.completions.create({ model: "talon/nobody", messages: HI }),
    404,
    "model_not_found",
  );
  const raw = await fetch(`${plain.url}/v1/chat/completions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${plain.token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "talon/nobody", messages: HI }),
  });
  assert.equal(raw.status, 404);
  assert.equal(raw.headers.get("x-should-retry"), "false");
  const body = (await raw.json()) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.deepEqual([body.error.type, body.error.code], ["invalid_request_error", "model_not_found"]);
});

async function chunks(gateway: Gateway, includeUsage: boolean) {
  const stream = await gateway.client().chat.completions.create({
    model: MODEL,
    messages: HI,
    stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });
  const all = await collect(stream);
  assert.ok(all.length > 0);
  assert.deepEqual(new Set(all.map((c) => c.id)), new Set([all[0]!.id]), "one id on every chunk");
  assert.deepEqual(new Set(all.map((c) => c.object)), new Set(["chat.completion.chunk"]));
  return all;
}

test("chat: a stream says what the completion says", async () => {
  const all = await chunks(plain, false);
  const choices = all.map((c) => c.choices[0]!);
  assert.equal(choices[0]!.delta.role, "assistant");
  assert.equal(choices.map((c) => c.delta.content ?? "").join(""), PLAIN_TEXT);
  assert.deepEqual(choices.filter((c) => c.finish_reason).map((c) => c.finish_reason), ["stop"]);
  assert.ok(all.every((c) => c.usage == null));
});

test("chat: include_usage ends the stream with a usage chunk", async () => {
  const all = await chunks(plain, true);
  const last = all[all.length - 1]!;
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, PLAIN_USAGE);
  assert.ok(all.slice(0, -1).every((c) => c.usage == null));
  const final = await plain.client().chat.completions.stream({ model: MODEL, messages: HI }).finalChatCompletion();
  assert.deepEqual([final.choices[0]?.message.content, final.choices[0]?.finish_reason], [PLAIN_TEXT, "stop"]);
});

test("chat: a server-side tool's progress", async () => {
  const all = await chunks(tool, true);
  const deltas = all.filter((c) => c.choices.length).map((c) => c.choices[0]!.delta);
  const progress = deltas.map((d) => String(extra(d, "reasoning_content") ?? "")).join("").split("\n").filter(Boolean);
  assert.equal(progress.length, 2, JSON.stringify(progress));
  assert.ok(progress[0]!.startsWith("→ list") && progress[1]!.startsWith("✓ list"), JSON.stringify(progress));
  const talon = all.map((c) => extra(c, "talon") as { type: string; name: string; callId: string } | undefined);
  const marks = talon.filter((t) => t !== undefined && t !== null);
  assert.deepEqual(
    marks.map((t) => [t!.type, t!.name]),
    [["tool.call.started", "list"], ["tool.call.completed", "list"]],
  );
  assert.ok(marks[0]!.callId && marks[0]!.callId === marks[1]!.callId);
  assert.deepEqual(deltas.filter((d) => d.tool_calls?.length), []);
  assert.equal(deltas.map((d) => d.content ?? "").join(""), TOOL_TEXT);
  assert.deepEqual(all[all.length - 1]!.usage, TOOL_USAGE);

  const completion = await tool.client().chat.completions.create({ model: MODEL, messages: HI });
  const message = completion.choices[0]!.message;
  assert.equal(message.content, TOOL_TEXT);
  assert.ok(!message.tool_calls?.length);
  const lines = String(extra(message, "reasoning_content") ?? "").split("\n").filter(Boolean);
  assert.deepEqual(lines.map((l) => l.split(" ").slice(0, 2)), [["→", "list"], ["✓", "list"]]);
});

test("chat: a client tool's round trip in one session", async () => {
  const question: OpenAI.Chat.ChatCompletionMessageParam = { role: "user", content: "What is the weather in Paris?" };
  const openai = client.client();
  const first = await openai.chat.completions
    .create({ model: MODEL, messages: [question], tools: [CHAT_WEATHER_TOOL] })
    .withResponse();
  const key = first.response.headers.get("x-talon-session-key") ?? "";
  assert.ok(key);
  const choice = first.data.choices[0]!;
  assert.equal(choice.finish_reason, "tool_calls");
  assert.deepEqual(first.data.usage, usage(80, 8));
  const calls = choice.message.tool_calls ?? [];
  assert.equal(calls.length, 1);
  const call = calls[0]!;
  assert.ok(call.type === "function" && call.id);
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });

  const final = await openai.chat.completions
    .create(
      {
        model: MODEL,
        messages: [question, choice.message, { role: "tool", tool_call_id: call.id, content: "sunny" }],
        tools: [CHAT_WEATHER_TOOL],
      },
      { headers: { "x-talon-session-key": key } },
    )
    .withResponse();
  assert.equal(final.response.headers.get("x-talon-session-key"), key);
  assert.deepEqual(
    [final.data.choices[0]?.message.content, final.data.choices[0]?.finish_reason],
    [CLIENT_TEXT, "stop"],
  );
  assert.deepEqual(final.data.usage, usage(90, 7));
});

test("chat: a session key carries a conversation, each message once", async () => {
  const key = `node-session-${Math.random().toString(16).slice(2)}`;
  const openai = plain.client();
  const headers = { "x-talon-session-key": key };
  const first = await openai.chat.completions.create({ model: MODEL, messages: HI }, { headers });
  const reply = first.choices[0]?.message.content ?? "";
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
    ...HI,
    { role: "assistant", content: reply },
    { role: "user", content: "again" },
  ];
  const second = await openai.chat.completions.create({ model: MODEL, messages }, { headers });
  assert.equal(second.choices[0]?.message.content, PLAIN_TEXT);
  assert.deepEqual(await plain.sessionTexts(key), [
    ["user", "hi"],
    ["assistant", PLAIN_TEXT],
    ["user", "again"],
    ["assistant", PLAIN_TEXT],
  ]);
});
