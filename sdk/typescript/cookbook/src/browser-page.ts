// A browser page and its backend. The backend (this file, node:http) holds
// the long-lived admin token and never hands it out: it serves the page
// (browser/index.html, and browser/page.ts bundled with @talon/sdk) and a
// `POST /token` endpoint that mints a short-lived token scoped to what the
// page needs (`tokens.create`). The page runs the agent with that token and
// streams with single-use tickets, so no token is ever in a URL.
//
// The gateway must let the page's origin call it:
//   gateway: { security: { allowedOrigins: ["http://127.0.0.1:8787"] } }
//
//   TALON_URL=... TALON_TOKEN=... PAGE_PORT=8787 node build/browser-page.js
//
// Then it checks itself: it loads the page in headless Chromium (Debian's
// /usr/bin/chromium, or $TALON_CHROMIUM, driven by puppeteer-core), clicks
// Ask, and compares what the page rendered with the run's result. With
// `--serve` it only serves the page, for you to open.
import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import puppeteer from "puppeteer-core";

import { Talon } from "@talon/sdk";

const baseUrl = process.env.TALON_URL;
const adminToken = process.env.TALON_TOKEN;
if (!baseUrl || !adminToken) {
  throw new Error("set TALON_URL and TALON_TOKEN (the gateway prints its admin token at start)");
}
const port = Number(process.env.PAGE_PORT ?? 8787);
const origin = `http://127.0.0.1:${port}`;
const chromium = process.env.TALON_CHROMIUM ?? "/usr/bin/chromium";

// --- The backend -----------------------------------------------------------

const admin = new Talon({ baseUrl, token: adminToken });
const pageDir = join(dirname(fileURLToPath(import.meta.url)), "browser");
const files: Record<string, [string, string]> = {
  "/": ["index.html", "text/html; charset=utf-8"],
  "/page.js": ["page.js", "text/javascript; charset=utf-8"],
};
/** The tokens minted, to check below that none went into a URL. */
const minted: string[] = [];

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (request.method === "POST" && request.url === "/token") {
    // A real backend checks its own user's session (a cookie) here, and may
    // name the token after the user. The page gets what it needs and no
    // more: starting runs and reading their events, for five minutes. (No
    // CORS headers: a page of another origin cannot read the answer.)
    const created = await admin.createToken({
      name: "browser page",
      expiresInMs: 5 * 60_000,
      scopes: ["agent.run", "session.read"],
    });
    minted.push(created.token);
    response.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
    response.end(JSON.stringify({ baseUrl, token: created.token, expiresAt: created.expiresAt }));
    return;
  }
  const file = request.method === "GET" ? files[request.url ?? ""] : undefined;
  if (!file) {
    response.writeHead(404).end();
    return;
  }
  response.writeHead(200, { "content-type": file[1] });
  response.end(readFileSync(join(pageDir, file[0])));
}

// Before serving: would the gateway let a page at this origin call it? (A
// browser's preflight, made by hand: a refusal is easier to read here than
// as a failed fetch in the page.)
const preflight = await fetch(new URL("v1/runs.create", baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`), {
  method: "OPTIONS",
  headers: { origin, "access-control-request-method": "POST" },
});
if (preflight.headers.get("access-control-allow-origin") !== origin) {
  console.error(`the gateway does not let ${origin} call it: add it to gateway.security.allowedOrigins`);
  process.exit(1);
}

const server = createServer((request, response) => {
  handle(request, response).catch((error: unknown) => {
    console.error(`${request.method ?? "?"} ${request.url ?? "?"}:`, error);
    if (!response.headersSent) response.writeHead(500);
    response.end();
  });
});
await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
console.log(`serving the page at ${origin}`);
if (process.argv.includes("--serve")) {
  await new Promise(() => {
    // Never settles: the page is served until Ctrl-C.
  });
}

// --- The check: the page in headless Chromium ------------------------------

if (!existsSync(chromium)) {
  console.error(`no browser at ${chromium}: install Debian's chromium, or set TALON_CHROMIUM`);
  process.exit(1);
}

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const problems: string[] = [];
let shown: { state: string; runId: string; text: string };
const urls: string[] = [];
try {
  const tab = await browser.newPage();
  tab.on("request", (request) => urls.push(request.url()));
  tab.on("console", (message) => {
    console.log(`page console: ${message.text()}`);
  });
  await tab.goto(origin);
  await tab.click("#ask button");
  // Wait for the page to say the run ended (or failed).
  await tab.waitForFunction(
    () => {
      const state = document.querySelector<HTMLElement>("#status")?.dataset.state;
      return state !== undefined && state !== "running";
    },
    { timeout: 60_000 },
  );
  shown = await tab.evaluate(() => {
    const status = document.querySelector<HTMLElement>("#status");
    return {
      state: status?.dataset.state ?? "",
      runId: status?.dataset.runId ?? "",
      text: document.querySelector("#reply")?.textContent ?? "",
    };
  });
  console.log(`the page says: ${shown.state}, run ${shown.runId}`);
  console.log(`it rendered: ${JSON.stringify(shown.text)}`);
} finally {
  await browser.close();
  server.close();
}

// What the page showed is the run's result, as the backend (with its own
// token) reads it from the gateway.
if (shown.state !== "completed") problems.push(`the page's run did not complete: ${shown.state}`);
if (shown.runId) {
  const result = await (await admin.run(shown.runId)).wait();
  if (!shown.text || shown.text !== result.output?.text) {
    const answer = JSON.stringify(result.output?.text);
    problems.push(`the page rendered ${JSON.stringify(shown.text)}; the run answered ${answer}`);
  }
}
// The page got one short-lived token, and no token (its own or the admin's)
// was ever in a URL; its event stream opened with a ticket.
if (minted.length !== 1) problems.push(`the backend minted ${minted.length} tokens, not 1`);
const leaked = urls.filter((url) => [adminToken, ...minted].some((t) => url.includes(t)));
if (leaked.length > 0) problems.push(`a token went into a URL: ${leaked.join(" ")}`);
const ticketed = urls.filter((url) => url.includes("/events?") && url.includes("ticket="));
console.log(`the page's requests: ${urls.length}, ${ticketed.length} event stream(s) opened with a ticket`);
if (ticketed.length === 0) problems.push(`no event stream opened with a ticket:\n${urls.join("\n")}`);
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
