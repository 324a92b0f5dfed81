// The wire, against both servers: generated calls over HTTP and the
// WebSocket, a subscription's replay and live tail, typed errors, stream
// tickets, idempotency keys, and a request's Host named once.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { it } from "node:test";

import { Talon, TalonError, type TalonEvent } from "@talon/sdk";

import { REPLY, bothServers, collect, withBackend } from "./backend.js";

const isError =
  (code: string, retryable = false) =>
  (e: unknown) => {
    assert.ok(e instanceof TalonError, String(e));
    assert.deepEqual({ code: e.code, retryable: e.retryable }, { code, retryable });
    return true;
  };

/** `head` sent as it is over a new connection to `host` (with `Connection: close`): the whole answer. */
function rawRequest(host: string, head: string): Promise<string> {
  const { hostname, port } = new URL(`http://${host}`);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => socket.write(`${head}Connection: close\r\n\r\n`));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => {
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    socket.on("error", reject);
  });
}

bothServers("the wire", (kind) => {
  it("a request naming two Hosts, or a target naming another host, is refused", () =>
    withBackend(kind, "reply", async (b) => {
      const { host } = new URL(b.url);
      for (const head of [
        `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nHost: evil.example\r\n`,
        `GET http://evil.example/healthz HTTP/1.1\r\nHost: ${host}\r\n`,
      ]) {
        const answer = await rawRequest(host, head);
        assert.match(answer, /^HTTP\/1\.1 400 /, head);
        assert.match(answer, /"reason":"host"/, head);
      }
      const same = await rawRequest(host, `GET http://${host}/healthz HTTP/1.1\r\nHost: ${host}\r\n`);
      assert.match(same, /^HTTP\/1\.1 200 /);
    }));

  it("every list pages with a cursor and a bounded limit; a cursor naming nothing is cursor_expired", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const whole = await talon.client.tools.list({ limit: 100_000 });
      assert.ok(whole.tools.length > 2 && whole.nextCursor === undefined);
      const paged: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await talon.client.tools.list(cursor ? { limit: 2, cursor } : { limit: 2 });
        assert.ok(page.tools.length <= 2);
        paged.push(...page.tools.map((t) => t.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      assert.deepEqual(
        paged,
        whole.tools.map((t) => t.id),
      );
      await assert.rejects(talon.client.tools.list({ cursor: "openclaw:core:nothing" }), isError("cursor_expired"));
      await assert.rejects(talon.client.environments.list({ cursor: "env_gone" }), isError("cursor_expired"));
      const agents = await talon.client.agents.list({ limit: 1 });
      assert.deepEqual([agents.agents.length, agents.nextCursor], [1, undefined]);
      assert.equal((await talon.client.models.list({ limit: 0 })).models.length, 1);
    }));

  it("generated calls work over HTTP and over the WebSocket", () =>
    withBackend(kind, "reply", async (b) => {
      for (const transport of ["http", "websocket"] as const) {
        const talon = b.talon({ transport });
        try {
          const { agents } = await talon.client.agents.list();
          assert.ok(
            agents.some((a) => a.id === "main"),
            transport,
          );
          const accepted = await talon.client.runs.create({ input: "hello" });
          assert.equal(accepted.runId, accepted.id);
          const result = await talon.client.runs.wait(accepted.runId, { timeoutMs: 30_000 });
          assert.equal(result.output?.text, REPLY, transport);
          assert.ok((await talon.client.models.list()).models.length > 0);
          // The run spawned nothing: no task.
          assert.deepEqual((await talon.client.tasks.list()).tasks, []);
          await assert.rejects(talon.client.runs.get("run_000000000000000000000000"), isError("not_found"));
        } finally {
          await talon.close();
        }
      }
    }));

  it("a WebSocket subscription replays, then follows", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon({ transport: "websocket" });
      try {
        const first = await talon.client.runs.create({ input: "one" });
        await talon.client.runs.wait(first.runId, { timeoutMs: 30_000 });
        const subscription = await talon.subscribe({ types: ["run.completed"] });
        const seen: (string | undefined)[] = [];
        let second: string | undefined;
        for await (const event of subscription) {
          seen.push(event.runId ?? undefined);
          // The replay holds the first run's end; the live tail the second's.
          if (seen.length === 1) second = (await talon.client.runs.create({ input: "two" })).runId;
          else break;
        }
        assert.deepEqual(seen, [first.runId, second]);
      } finally {
        await talon.close();
      }
      // Over HTTP a subscription is refused by the client itself.
      await assert.rejects(b.talon().subscribe(), isError("invalid_request"));
    }));

  it("errors carry the protocol's code and retryability", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      await assert.rejects(talon.run("run_000000000000000000000000"), (e: unknown) => {
        assert.ok(e instanceof TalonError);
        assert.deepEqual(
          { code: e.code, retryable: e.retryable, retryAfterMs: e.retryAfterMs, status: e.status },
          { code: "not_found", retryable: false, retryAfterMs: undefined, status: 404 },
        );
        return true;
      });
      const stranger = b.talon({ token: "talon_not_a_token" });
      await assert.rejects(stranger.client.agents.list(), isError("unauthenticated"));
      await assert.rejects(
        b.talon({ token: "talon_not_a_token", transport: "websocket" }).client.agents.list(),
        (e: unknown) => e instanceof TalonError && e.code === "unauthenticated",
      );
      const run = await talon.agent("main").run("x");
      assert.throws(() => run.events({ after: "not-a-cursor" }), isError("invalid_request"));
      await assert.rejects(talon.client.runs.events("run_000000000000000000000000", {}), isError("not_found"));
      // Nothing listens here.
      const nowhere = b.talon({ baseUrl: "http://127.0.0.1:9", maxRetries: 0 });
      await assert.rejects(nowhere.client.agents.list(), isError("unavailable", true));
    }));

  it("streams open with a single-use ticket instead of the token", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon({ streamAuth: "ticket" });
      const run = await talon.agent("main").run("via a ticket");
      const events: TalonEvent[] = await collect(run.events());
      assert.equal(events.at(-1)?.type, "run.completed");
      const controller = new AbortController();
      const seen: string[] = [];
      for await (const event of talon.events({ signal: controller.signal, types: ["run.completed"] })) {
        seen.push(event.type);
        if (event.runId === run.id) break;
      }
      assert.ok(seen.includes("run.completed"));
      const { ticket, stream, scopes } = await talon.client.tokens.ticket({ stream: { run: { runId: run.id } } });
      assert.deepEqual([stream, scopes], [{ run: { runId: run.id } }, ["session.read"]]);
      const url = `${b.url}/v1/runs/${run.id}/events?ticket=${encodeURIComponent(ticket)}`;
      assert.equal((await fetch(url)).status, 200);
      assert.equal((await fetch(url)).status, 401, "a ticket is single use");
      // It opens that stream and nothing else: not the log, not a socket, and it calls nothing.
      const other = await talon.client.tokens.ticket({ stream: { run: { runId: run.id } } });
      const log = await fetch(`${b.url}/v1/events?ticket=${encodeURIComponent(other.ticket)}`);
      assert.deepEqual(
        [log.status, ((await log.json()) as { error: { details: unknown } }).error.details],
        [403, { reason: "ticket" }],
      );
      await assert.rejects(talon.client.tokens.ticket({ scopes: ["agent.run"] }), isError("invalid_request"));
      const socket = await talon.client.tokens.ticket({ stream: { socket: { types: ["run.completed"] } } });
      const ws = new WebSocket(`${b.url.replace("http", "ws")}/v1/ws?ticket=${encodeURIComponent(socket.ticket)}`);
      await new Promise((resolve) => {
        ws.addEventListener("open", resolve, { once: true });
      });
      const answers: unknown[] = [];
      ws.addEventListener("message", (m) => answers.push(JSON.parse(String(m.data))));
      ws.send(JSON.stringify({ type: "req", id: 1, method: "agents.list", params: {} }));
      ws.send(JSON.stringify({ type: "req", id: 2, method: "events.subscribe", params: { types: ["run.completed"] } }));
      while (answers.length < 2) await new Promise((r) => setTimeout(r, 10));
      ws.close();
      const byId = (id: number) =>
        answers.find((a) => (a as { id: number }).id === id) as { ok: boolean; error?: { details?: unknown } };
      assert.deepEqual([byId(1).ok, byId(1).error?.details, byId(2).ok], [false, { reason: "ticket" }, true]);
    }));

  it("an idempotency key returns the first run", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const first = await talon.agent("main").run({ input: "once", idempotencyKey: "sdk-key-1" });
      const again = await talon.agent("main").run({ input: "once", idempotencyKey: "sdk-key-1" });
      assert.equal(again.id, first.id);
      assert.notEqual((await talon.agent("main").run("other")).id, first.id);
    }));

  it("a minted token stays within its minter's life and dies with it", () =>
    withBackend(kind, "reply", async (b) => {
      const admin = b.talon();
      const hour = 3_600_000;
      const a = await admin.createToken({ name: "a", preset: "admin", expiresInMs: hour });
      const asA = new Talon({ baseUrl: b.url, token: a.token });
      await assert.rejects(
        asA.createToken({ name: "longer", preset: "admin", expiresInMs: 2 * hour }),
        isError("invalid_request"),
      );
      const child = await asA.createToken({ name: "b", preset: "viewer", expiresInMs: hour / 2 });
      const listed = await admin.client.tokens.list({ includeRevoked: true });
      assert.equal(listed.tokens.find((t) => t.id === child.id)?.parentId, a.id);
      assert.deepEqual(await admin.revokeToken(a.id), [a.id, child.id]);
      assert.deepEqual(await admin.revokeToken(a.id), [a.id, child.id], "a retry answers the same");
      await assert.rejects(
        new Talon({ baseUrl: b.url, token: child.token }).client.agents.list(),
        isError("unauthenticated"),
      );
    }));

  it("another token's idempotency key is a new key: never its run, never a conflict", () =>
    withBackend(kind, "reply", async (b) => {
      const admin = b.talon();
      const mint = async (name: string) => {
        const { token } = await admin.createToken({
          name,
          scopes: ["agent.run", "session.read"],
          expiresInMs: 600_000,
        });
        return new Talon({ baseUrl: b.url, token });
      };
      const [a, other] = [await mint("a"), await mint("b")];
      const first = await a.client.runs.create({ input: "once", idempotencyKey: "shared" });
      assert.equal((await a.client.runs.create({ input: "once", idempotencyKey: "shared" })).id, first.id);
      const theirs = await other.client.runs.create({ input: "once", idempotencyKey: "shared" });
      assert.notEqual(theirs.id, first.id);
      // Other params under another token's key: no conflict to confirm what it sent.
      const registered = await other.client.runs.create({ input: "mine", idempotencyKey: "first-by-b" });
      const later = await a.client.runs.create({ input: "theirs", idempotencyKey: "first-by-b" });
      assert.notEqual(later.id, registered.id);
      await assert.rejects(a.client.runs.create({ input: "changed", idempotencyKey: "shared" }), isError("conflict"));
    }));
});
