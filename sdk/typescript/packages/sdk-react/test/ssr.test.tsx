// Server rendering: the package imports and renders with
// `react-dom/server` where there is no `window`, makes no request, and
// renders each hook's initial state.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { renderToString } from "react-dom/server";

import { Talon } from "@talon/sdk";
import { TalonProvider, useApprovals, useEvents, useRun, useSession, useTalon, webCursorStore } from "@talon/sdk-react";

function Page() {
  const talon = useTalon();
  const run = useRun("run_1");
  const idle = useRun(null);
  const session = useSession("user-42");
  const inbox = useApprovals();
  const feed = useEvents({ types: ["run.completed"] });
  return (
    <pre>
      {JSON.stringify({
        client: talon instanceof Talon,
        run: [run.runId, run.status, run.events.length, run.text, run.following, run.detached],
        idle: [idle.runId, idle.status],
        session: [session.status, session.messages.length],
        inbox: [inbox.status, inbox.approvals.length],
        feed: [feed.events.length, feed.following],
      })}
    </pre>
  );
}

const INITIAL =
  '<pre>{"client":true,"run":["run_1",null,0,"",false,false],"idle":[null,null],' +
  '"session":["loading",0],"inbox":["loading",0],"feed":[0,false]}</pre>';

describe("server rendering", () => {
  it("renders the initial state without a window or a request", () => {
    assert.equal(typeof (globalThis as { window?: unknown }).window, "undefined");
    const requests: string[] = [];
    const fetch = ((input: RequestInfo | URL) => {
      requests.push(input instanceof Request ? input.url : String(input));
      return Promise.reject(new Error("no request on a server render"));
    }) as typeof globalThis.fetch;
    const html = renderToString(
      <TalonProvider baseUrl="http://gateway.invalid" token="talon_x" fetch={fetch} cursorStore={webCursorStore()}>
        <Page />
      </TalonProvider>,
    );
    assert.equal(html.replaceAll("&quot;", '"'), INITIAL);
    assert.deepEqual(requests, []);
  });

  it("renders a given client the same way", () => {
    const talon = new Talon({ baseUrl: "http://gateway.invalid" });
    const html = renderToString(
      <TalonProvider talon={talon}>
        <Page />
      </TalonProvider>,
    );
    assert.equal(html.replaceAll("&quot;", '"'), INITIAL);
  });

  it("a hook outside a provider says so", () => {
    assert.throws(() => renderToString(<Page />), {
      message: "useTalon must be used inside <TalonProvider> (none is above this component)",
    });
  });
});

describe("the client boundary", () => {
  it("marks both builds' entry a client module, its first statement", () => {
    const cjs = createRequire(import.meta.url).resolve("@talon/sdk-react");
    const esm = fileURLToPath(import.meta.resolve("@talon/sdk-react"));
    for (const file of [esm, cjs]) {
      const statements = readFileSync(file, "utf8")
        .split("\n")
        .map((line) => line.trim())
        .filter((line) => line !== "" && !line.startsWith("//") && line !== '"use strict";');
      assert.equal(statements[0], '"use client";', file);
    }
  });
});
