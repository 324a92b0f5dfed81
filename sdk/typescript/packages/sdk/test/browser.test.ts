// The same scenario in Node and in headless Chromium (Debian's package,
// driven over the DevTools protocol by puppeteer-core). The page's backend
// (this test) mints a short-lived token and hands it to the page in a
// response body; the page's streams open with single-use tickets, so no
// token ever travels in a URL.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { dirname } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";
import puppeteer, { type Browser } from "puppeteer-core";

import { Talon } from "@talon/sdk";
import { startGateway, type RunningGateway } from "@talon/sdk-testing";

import { scenario, type Seen } from "./scenario.js";

const CHROMIUM = process.env.TALON_CHROMIUM ?? "/usr/bin/chromium";
const REPLY = "The notes say the answer is 42.";
const expected: Seen = {
  status: "completed",
  text: REPLY,
  types: ["run.created", "run.started", "assistant.message", "run.completed"],
};

/** The page's script: the scenario and the SDK, bundled for the browser. */
async function bundle(): Promise<string> {
  const here = dirname(fileURLToPath(import.meta.url));
  const out = await build({
    stdin: {
      contents: `
        import { Talon } from "@talon/sdk";
        import { scenario } from "./scenario.js";
        const { baseUrl, token } = await (await fetch("/token", { method: "POST" })).json();
        const talon = new Talon({ baseUrl, token, streamAuth: "ticket" });
        try { window.__talon = { seen: await scenario(talon) }; }
        catch (e) { window.__talon = { error: String(e && e.stack || e) }; }
      `,
      resolveDir: here,
      sourcefile: "page.js",
    },
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
  });
  const [file] = out.outputFiles;
  assert.ok(file, "esbuild wrote the bundle");
  return file.text;
}

describe("in the browser", () => {
  // Each set by before(), which may stop part way (after() closes what it opened).
  let gateway: RunningGateway | undefined;
  let page: Server | undefined;
  let browser: Browser | undefined;
  let origin: string;
  let script: string;
  const minted: string[] = [];

  before(async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `${CHROMIUM} is missing: scripts/setup.sh --test-servers installs Debian's chromium`,
    );
    script = await bundle();
    const serve = async (request: IncomingMessage, response: ServerResponse) => {
      if (request.url === "/token" && request.method === "POST") {
        // The page's backend: a short-lived token with what the page needs.
        assert.ok(gateway, "the gateway started");
        const admin = new Talon({ baseUrl: gateway.url, token: gateway.token });
        const created = await admin.createToken({
          name: "browser page",
          expiresInMs: 10 * 60_000,
          scopes: ["agent.run", "session.read"],
        });
        minted.push(created.token);
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ baseUrl: gateway.url, token: created.token }));
      } else if (request.url === "/page.js") {
        response.writeHead(200, { "content-type": "text/javascript" });
        response.end(script);
      } else {
        response.writeHead(200, { "content-type": "text/html" });
        response.end('<!doctype html><script type="module" src="/page.js"></script>');
      }
    };
    const server = createServer((request, response) => {
      void serve(request, response);
    });
    page = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    gateway = await startGateway({
      script: { replay: "perRun", turns: [{ text: REPLY }] },
      config: { gateway: { security: { allowedOrigins: [origin] } } },
    });
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
  });

  after(async () => {
    await browser?.close();
    await gateway?.stop();
    await new Promise((resolve) => page?.close(resolve));
  });

  it("sees in Node what the page sees in Chromium", async () => {
    assert.ok(gateway && browser, "before() started the gateway and the browser");
    const adminToken = gateway.token;
    const node = await scenario(new Talon({ baseUrl: gateway.url, token: gateway.token, streamAuth: "ticket" }));
    assert.deepEqual(node, expected);

    const tab = await browser.newPage();
    const urls: string[] = [];
    tab.on("request", (request) => urls.push(request.url()));
    await tab.goto(origin);
    await tab.waitForFunction(() => (window as unknown as { __talon?: unknown }).__talon !== undefined, {
      timeout: 60_000,
    });
    const outcome = (await tab.evaluate(() => (window as unknown as { __talon: unknown }).__talon)) as {
      seen?: Seen;
      error?: string;
    };
    assert.deepEqual(outcome, { seen: expected });
    assert.equal(minted.length, 1);
    const [token] = minted;
    assert.ok(token !== undefined);
    assert.deepEqual(
      urls.filter((url) => url.includes(token) || url.includes(adminToken)),
      [],
      "no token in any URL",
    );
    assert.ok(
      urls.some((url) => url.includes("/events?") && url.includes("ticket=tkt_")),
      `the stream opened with a ticket: ${urls.join("\n")}`,
    );
  });
});
