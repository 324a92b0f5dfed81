// The contract suite's two servers. Every test in this directory runs
// against both: the in-process `FakeGateway` of @talon/sdk-testing and a
// real `talon gateway --mock-script` (behind a `StreamCutter` that can cut
// its streams), with the same scenario, so the fake cannot drift from the
// real thing (the TypeScript twin of crates/talon-sdk/tests/suite/mod.rs).
// `TALON_CONTRACT=fake` or `=real` runs one side only.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe } from "node:test";

import { Talon, type TalonOptions } from "@talon/sdk";
import { FakeGateway, FakeRun, FakeTask, startGateway, type MockScript, type RunningGateway } from "@talon/sdk-testing";

import { StreamCutter } from "./cutter.js";

export type Kind = "fake" | "real";

/** What the model (or the fake's script) does in every run. */
export type Scenario = "reply" | "approvedWrite" | "question" | "spawn";

export const REPLY = "Hello from the SDK suite.";
export const DONE = "Done.";
/** The write tool's catalog id, as approvals name it. */
export const WRITE = "openclaw:core:write";
export const WRITE_ARGS = { path: "note.txt", content: "approved text" };
export const QUESTION = { prompt: "Which branch?", choices: ["main", "dev"] };
/**
 * What the "spawn" scenario's run asks a sub-agent (`sessions_spawn`), and its label. The real
 * gateway's child run replays the same script: at depth 1 it is offered no spawning tool, and says
 * `DONE` after the unknown tool's error, so the task's result is `DONE`, as the fake's.
 */
export const SPAWNED = { task: "find the answer", label: "finder" };
/** How many runs a fake is scripted for. */
const FAKE_RUNS = 8;

function script(scenario: Scenario): MockScript {
  switch (scenario) {
    case "reply":
      return { replay: "perRun", turns: [{ text: REPLY }] };
    case "approvedWrite":
      return { replay: "perRun", turns: [{ toolCalls: [{ name: "write", arguments: WRITE_ARGS }] }, { text: DONE }] };
    case "question":
      return { replay: "perRun", turns: [{ toolCalls: [{ name: "ask_user", arguments: QUESTION }] }, { text: DONE }] };
    case "spawn":
      return {
        replay: "perRun",
        turns: [{ toolCalls: [{ name: "sessions_spawn", arguments: SPAWNED }] }, { text: DONE }],
      };
  }
}

function fakeRun(scenario: Scenario): FakeRun {
  switch (scenario) {
    case "reply":
      return FakeRun.reply(REPLY);
    case "approvedWrite":
      return FakeRun.reply(DONE).approval(WRITE, WRITE_ARGS);
    case "question":
      return FakeRun.reply(DONE).question(QUESTION.prompt, QUESTION.choices);
    case "spawn":
      return FakeRun.reply(DONE).spawn(FakeTask.of(SPAWNED.task).label(SPAWNED.label).result(DONE).takes(50));
  }
}

/** A gateway of either kind. */
export class Backend {
  private constructor(
    readonly kind: Kind,
    readonly url: string,
    readonly token: string,
    readonly fake: FakeGateway | undefined,
    private readonly real: { gateway: RunningGateway; cutter: StreamCutter } | undefined,
  ) {}

  static async start(kind: Kind, scenario: Scenario): Promise<Backend> {
    if (kind === "fake") {
      const fake = await FakeGateway.start();
      for (let i = 0; i < FAKE_RUNS; i++) fake.scriptRun(fakeRun(scenario));
      return new Backend(kind, fake.url, fake.token, fake, undefined);
    }
    const config = scenario === "spawn" ? { agents: { defaults: { subagents: {} } } } : undefined;
    const gateway = await startGateway(config ? { script: script(scenario), config } : { script: script(scenario) });
    const cutter = await StreamCutter.start(gateway.url);
    return new Backend(kind, cutter.url, gateway.token, undefined, { gateway, cutter });
  }

  talon(options: Partial<TalonOptions> = {}): Talon {
    return new Talon({ baseUrl: this.url, token: this.token, ...options });
  }

  /** Cuts the next event stream after `frames` events. */
  cutNextStream(frames: number): void {
    if (this.fake) this.fake.inject({ kind: "dropStream", afterEvents: frames });
    else this.real?.cutter.cutNextStream(frames);
  }

  /** How many streams the proxy cut (the real gateway only). */
  get cuts(): number | undefined {
    return this.real?.cutter.cutCount;
  }

  /** The file the approved write makes, where the backend has one (the real gateway's workspace). */
  note(): string | undefined {
    if (!this.real) return undefined;
    try {
      return readFileSync(join(this.real.gateway.workspace, "note.txt"), "utf8");
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    await this.fake?.close();
    if (this.real) {
      await this.real.cutter.close();
      await this.real.gateway.stop();
    }
  }
}

/** The kinds this process runs (`TALON_CONTRACT` narrows them). */
export function kinds(): Kind[] {
  const only = process.env.TALON_CONTRACT;
  return only === "fake" || only === "real" ? [only] : ["fake", "real"];
}

/** Declares `body` once per kind, as a `describe` block named after it. */
export function bothServers(name: string, body: (kind: Kind) => void): void {
  for (const kind of kinds())
    describe(`${name} (${kind})`, () => {
      body(kind);
    });
}

/** Starts a backend for one test and closes it after `test`, whatever happens. */
export async function withBackend(kind: Kind, scenario: Scenario, test: (b: Backend) => Promise<void>): Promise<void> {
  const b = await Backend.start(kind, scenario);
  try {
    await test(b);
  } finally {
    await b.close();
  }
}

/** Polls `check` until it gives a value, failing after `ms` and naming what it waited for. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every item of an async iterable. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
