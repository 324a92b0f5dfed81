// What only a real `talon gateway` has, configured: event retention (a
// cursor older than what is kept ends the stream with `cursor_expired`,
// never silence), the default approval policy as the ToolSpace shows it,
// and the gateway's own request id on an error.
// Everything else runs against both servers in contract/.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Talon, TalonError } from "@talon/sdk";
import { startGateway, type RunningGateway } from "@talon/sdk-testing";

import { collect, until } from "./contract/backend.js";

describe("retention (real gateway)", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({
      script: { replay: "perRun", turns: [{ text: "Hello." }] },
      config: { store: { retention: { maxEvents: 3 } } },
    });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("a cursor older than retention ends the stream with cursor_expired, never silence", async () => {
    const run = await talon.agent().run("hello");
    assert.equal((await run.wait()).status, "completed");
    const expired = await until("the run's first events to be pruned", async () => {
      try {
        await collect(run.events({ after: "1" }));
        return undefined; // Events still there: not pruned yet.
      } catch (error) {
        if (!(error instanceof TalonError)) throw error;
        return error;
      }
    });
    const details = expired.details as { cursor: string; oldestId: string };
    assert.deepEqual(
      { code: expired.code, retryable: expired.retryable, cursor: details.cursor },
      { code: "cursor_expired", retryable: false, cursor: "1" },
    );
    const kept = await collect(run.events({ after: String(BigInt(details.oldestId) - 1n) }));
    assert.equal(kept.at(-1)?.type, "run.completed");
  });
});

describe("the default approval policy (real gateway)", () => {
  let gateway: RunningGateway;
  before(async () => {
    gateway = await startGateway({ script: { replay: "perRun", turns: [{ text: "Hello." }] } });
  });
  after(() => gateway.stop());

  it("a run's ToolSpace says which tools need approval", async () => {
    const talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
    const run = await talon.agent().run("tools?");
    const tools = (await run.toolSpace()).list();
    const pick = (name: string) => {
      const tool = tools.find((t) => t.name === name);
      return tool && { name: tool.name, source: tool.source, requiresApproval: tool.requiresApproval };
    };
    assert.deepEqual(
      [pick("read"), pick("write")],
      [
        { name: "read", source: "core", requiresApproval: false },
        { name: "write", source: "core", requiresApproval: true },
      ],
    );
    await run.wait();
  });

  it("an error carries the gateway's request id, which its log names", async () => {
    const talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
    await assert.rejects(talon.client.runs.get("run_missing"), (e: unknown) => {
      assert.ok(e instanceof TalonError);
      assert.equal(e.code, "not_found");
      assert.match(String(e.requestId), /^req_[0-9a-f]{24}$/);
      return true;
    });
  });
});
