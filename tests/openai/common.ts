// What the Node suite shares: the gateways tests/openai/run started (one per
// mock script, named in TALON_OPENAI_<NAME>_URL/_TOKEN), clients of the
// official `openai` package pointed at them, and the native API for what
// the OpenAI surface does not show (tokens, sessions). The mock scripts'
// texts and usage are tests/openai/run's.
import assert from "node:assert/strict";

import OpenAI from "openai";

export const MODEL = "talon/main";
export const PLAIN_TEXT = "The answer is 42.";
export const PLAIN_USAGE = usage(120, 6);
export const TOOL_TEXT = "Listed the workspace.";
export const TOOL_USAGE = usage(100 + 150, 10 + 5);
export const CLIENT_TEXT = "It is sunny in Paris.";
export const SLOW_TEXT = "Slow answer.";
export const HI: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "hi" }];

const WEATHER_PARAMETERS = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
};
export const CHAT_WEATHER_TOOL: OpenAI.Chat.ChatCompletionTool = {
  type: "function",
  function: { name: "get_weather", description: "The weather in a city.", parameters: WEATHER_PARAMETERS },
};
export const RESPONSES_WEATHER_TOOL: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city.",
  parameters: WEATHER_PARAMETERS,
  strict: false,
};

export function usage(prompt: number, completion: number) {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export class Gateway {
  readonly url: string;
  readonly token: string;

  constructor(readonly name: string) {
    const upper = name.toUpperCase();
    const url = process.env[`TALON_OPENAI_${upper}_URL`];
    const token = process.env[`TALON_OPENAI_${upper}_TOKEN`];
    assert.ok(url && token, `TALON_OPENAI_${upper}_URL and _TOKEN (tests/openai/run sets them)`);
    this.url = url;
    this.token = token;
  }

  /** No retries: a retried POST would be a second run, and an error must
   * show as the server sent it. */
  client(token?: string): OpenAI {
    return new OpenAI({ baseURL: `${this.url}/v1`, apiKey: token ?? this.token, maxRetries: 0, timeout: 30_000 });
  }

  /** A call of the native API (`POST /v1/<method>`), decoded. */
  async native(method: string, params: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.url}/v1/${method}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${this.token}`, "Content-Type": "application/json" },
      body: JSON.stringify(params),
    });
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(response.status, 200, `${method}: ${JSON.stringify(body)}`);
    return body;
  }

  async tokenWith(...scopes: string[]): Promise<string> {
    const minted = await this.native("tokens.create", {
      name: `openai-node-${Math.random().toString(16).slice(2, 10)}`,
      scopes,
      expiresInMs: 3_600_000,
    });
    return String(minted.token);
  }

  /** The user and assistant text messages of the session named `key`. */
  async sessionTexts(key: string): Promise<[string, string][]> {
    const session = await this.native("sessions.resolve", { key });
    const page = await this.native("sessions.messages", { sessionId: session.id });
    const messages = page.messages as { role: string; text?: string }[];
    return messages
      .filter((m) => (m.role === "user" || m.role === "assistant") && m.text)
      .map((m) => [m.role, m.text ?? ""]);
  }
}

/** Calls `f`, which must throw an APIError of `status` with `code`, in
 * OpenAI's envelope. */
export async function rejectsWith(f: () => Promise<unknown>, status: number, code: string | null): Promise<void> {
  await assert.rejects(f, (error: unknown) => {
    assert.ok(error instanceof OpenAI.APIError, String(error));
    assert.equal(error.status, status, JSON.stringify(error.error));
    assert.equal(error.code, code, JSON.stringify(error.error));
    const envelope = error.error as Record<string, unknown>;
    for (const key of ["message", "type", "param", "code"]) {
      assert.ok(key in envelope, `${key} in ${JSON.stringify(envelope)}`);
    }
    return true;
  });
}

/** An extension field, outside the client's types. */
export function extra(value: object, key: string): unknown {
  return (value as Record<string, unknown>)[key];
}

export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream) items.push(item);
  return items;
}
