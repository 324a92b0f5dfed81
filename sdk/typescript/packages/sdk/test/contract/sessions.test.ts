// Sessions through the high-level layer, against both servers: send,
// messages, fork, compact, abort, artifacts, and a key naming one session.
import assert from "node:assert/strict";
import { it } from "node:test";

import { REPLY, bothServers, withBackend } from "./backend.js";

bothServers("sessions", (kind) => {
  it("a session sends, keeps messages, forks, compacts and aborts", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const session = await talon.agent("main").createSession();
      const result = await (await session.send("first question")).wait();
      assert.deepEqual(
        { status: result.status, sessionId: result.sessionId },
        { status: "completed", sessionId: session.id },
      );
      const { messages } = await session.messages();
      assert.deepEqual(
        messages.map((m) => [m.role, m.text]),
        [
          ["user", "first question"],
          ["assistant", REPLY],
        ],
      );
      const fork = await session.fork({ atMessageId: messages[0]?.id });
      assert.notEqual(fork.id, session.id);
      assert.equal(fork.info?.parentId, session.id);
      assert.deepEqual(
        (await fork.messages()).messages.map((m) => m.text),
        ["first question"],
      );
      assert.equal((await session.compact()).id, session.id);
      assert.deepEqual(await session.abort(), { cancelledRunIds: [] });
      assert.ok((await session.artifacts()).length > 0, "every run leaves its trajectory");
    }));

  it("a key names one session", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const a = await talon.session("user-42");
      const again = await talon.agent("main").session("user-42");
      assert.deepEqual(again.info, a.info);
      assert.equal(a.key, "user-42");
      assert.notEqual((await talon.session("user-43")).id, a.id);
    }));
});
