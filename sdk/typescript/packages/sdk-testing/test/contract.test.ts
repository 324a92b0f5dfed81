// The protocol's contract (crates/talon-protocol/contract/cases.json), run
// against the TypeScript fake: every case's call, over HTTP as an admin,
// after its setup, answers as the case expects. The real gateway and the
// Rust fake run the same cases (talon-sdk's suite/contract.rs), and
// talon-protocol's tests fail when a method of the table has no case.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { post, until as waitUntil, withFake, type Raw } from "./helpers.js";
import { FakeRun, FakeTask, type FakeGateway } from "@talon/sdk-testing";

interface Step {
  method: string;
  params: unknown;
  save?: Record<string, string>;
  /** Called again until the answer holds each pointer's value. */
  until?: Record<string, unknown>;
  /** A `runs.create` whose run spawns a sub-agent with these `sessions_spawn` arguments. */
  spawns?: { task: string; label?: string };
}

interface Case {
  name: string;
  method: string;
  params: unknown;
  setup?: Step[];
  as?: string;
  headers?: Record<string, string>;
  expect: { ok?: unknown; error?: unknown };
  differs?: Record<string, string>;
}

/** This file is build/test/contract.test.js; the cases are the repository's. */
const CASES = join(
  dirname(fileURLToPath(import.meta.url)),
  "../../../../../../crates/talon-protocol/contract/cases.json",
);

function cases(): Case[] {
  return (JSON.parse(readFileSync(CASES, "utf8")) as { cases: Case[] }).cases;
}

/** `value` with every `"$name"` replaced by what was saved, and every `{"$keys": N}` expanded. */
function fill(value: unknown, saved: Map<string, unknown>): unknown {
  if (typeof value === "string") {
    if (value.startsWith("$") && saved.has(value.slice(1))) return saved.get(value.slice(1));
    // `${name}` inside a string: the saved value (a string as it is, else as JSON).
    return value.replace(/\$\{(\w+)\}/g, (whole, name: string) => {
      if (!saved.has(name)) return whole;
      const found = saved.get(name);
      return typeof found === "string" ? found : JSON.stringify(found);
    });
  }
  if (Array.isArray(value)) return value.map((v) => fill(v, saved));
  if (value !== null && typeof value === "object") {
    const map = value as Record<string, unknown>;
    const keys = map.$keys;
    if (typeof keys === "number") {
      return Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${String(i).padStart(2, "0")}`, 0]));
    }
    return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, fill(v, saved)]));
  }
  return value;
}

/** Whether `got` matches `pattern`: an object's listed keys, an array's items one by one, `"$any"` for any value, everything else equal. */
function matches(pattern: unknown, got: unknown): boolean {
  if (pattern === "$any") return got !== undefined;
  if (Array.isArray(pattern)) {
    return Array.isArray(got) && got.length === pattern.length && pattern.every((p, i) => matches(p, got[i]));
  }
  if (pattern !== null && typeof pattern === "object" && !Array.isArray(pattern)) {
    if (got === null || typeof got !== "object" || Array.isArray(got)) return false;
    const have = got as Record<string, unknown>;
    return Object.entries(pattern as Record<string, unknown>).every(([k, v]) => matches(v, have[k]));
  }
  try {
    assert.deepStrictEqual(got, pattern);
    return true;
  } catch {
    return false;
  }
}

/** The value at a JSON Pointer. */
function at(value: unknown, pointer: string): unknown {
  let here = value;
  for (const part of pointer.split("/").slice(1)) here = (here as Record<string, unknown> | undefined)?.[part];
  return here;
}

/** `POST /v1/<method>` with headers fetch may not set (`host`, `origin`), over node:http. */
function postWith(
  fake: FakeGateway,
  method: string,
  body: unknown,
  token: string,
  headers: Record<string, string>,
): Promise<Raw> {
  const url = new URL(`${fake.url}/v1/${method}`);
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
      },
      (res) => {
        let data = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (data += chunk));
        res.on("end", () => {
          resolve({ status: res.statusCode ?? 0, headers: {}, body: JSON.parse(data) as unknown });
        });
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

describe("the protocol's contract", () => {
  it("holds for the TypeScript fake, case by case", async () => {
    await withFake(async (fake) => {
      const failures: string[] = [];
      for (const c of cases()) {
        // A case this fake answers otherwise on purpose still holds in all but an error's message.
        const differs = c.differs?.["typescript-fake"] !== undefined;
        if (differs && c.expect.ok !== undefined) continue;
        const saved = new Map<string, unknown>();
        for (const step of c.setup ?? []) {
          if (step.spawns) {
            const task = FakeTask.of(step.spawns.task);
            if (step.spawns.label !== undefined) task.label(step.spawns.label);
            fake.scriptRun(FakeRun.reply("ok").spawn(task));
          }
          const until = fill(step.until ?? {}, saved) as Record<string, unknown>;
          const params = fill(step.params, saved);
          const answer = await waitUntil(`${c.name}: setup ${step.method}`, async () => {
            const got = await post(fake, step.method, params);
            const holds = Object.entries(until).every(([pointer, want]) => matches(want, at(got.body, pointer)));
            return got.status !== 200 || holds ? got : undefined;
          });
          assert.equal(answer.status, 200, `${c.name}: setup ${step.method}: ${JSON.stringify(answer.body)}`);
          for (const [key, pointer] of Object.entries(step.save ?? {})) saved.set(key, at(answer.body, pointer));
        }
        const token = c.as === undefined ? fake.token : (fill(c.as, saved) as string);
        const params = fill(c.params, saved);
        const answer =
          c.headers === undefined
            ? await post(fake, c.method, params, token)
            : await postWith(fake, c.method, params, token, c.headers);
        const expect = fill(c.expect, saved) as Case["expect"];
        const body = answer.body as { error?: unknown };
        if (differs && expect.error !== undefined && typeof body.error === "object" && body.error !== null) {
          expect.error = { ...(expect.error as object), message: (body.error as { message?: unknown }).message };
        }
        const held =
          expect.ok !== undefined
            ? answer.status === 200 && matches(expect.ok, answer.body)
            : answer.status !== 200 && matches(expect.error, body.error) && matches(body.error, expect.error);
        if (!held)
          failures.push(
            `${c.name}: expected ${JSON.stringify(expect)}, got ${answer.status} ${JSON.stringify(answer.body)}`,
          );
      }
      assert.deepEqual(failures, []);
    });
  });
});
