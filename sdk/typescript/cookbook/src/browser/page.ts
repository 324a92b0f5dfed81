// The browser page of the browser example (served by ../browser.ts, bundled
// with @talon/sdk by esbuild): it asks its own backend for a short-lived
// token, runs the agent with it, and renders the reply as it streams. The
// page never sees the backend's long-lived token; its event streams open
// with single-use tickets (`streamAuth: "ticket"`), so no token is ever in
// a URL either.
import { Talon } from "@talon/sdk";

/** The page's element `selector`, a `kind` (index.html has each one). */
function element<T extends HTMLElement>(selector: string, kind: new () => T): T {
  const found = document.querySelector(selector);
  if (!(found instanceof kind)) throw new Error(`the page has no ${selector}`);
  return found;
}
const form = element("#ask", HTMLFormElement);
const status = element("#status", HTMLElement);
const reply = element("#reply", HTMLElement);

/** What the backend's `POST /token` answers. */
interface PageToken {
  baseUrl: string;
  token: string;
  expiresAt: number;
}

// One client while the token lasts; a fresh token (and client) after.
let client: { talon: Talon; expiresAt: number } | undefined;
async function talon(): Promise<Talon> {
  if (client && client.expiresAt - Date.now() > 30_000) return client.talon;
  // The token comes in a response body (same origin, no URL, no storage).
  const response = await fetch("/token", { method: "POST" });
  if (!response.ok) throw new Error(`the backend gave no token: ${response.status}`);
  const { baseUrl, token, expiresAt } = (await response.json()) as PageToken;
  client = { talon: new Talon({ baseUrl, token, streamAuth: "ticket" }), expiresAt };
  return client.talon;
}

async function ask(prompt: string): Promise<void> {
  reply.textContent = "";
  status.textContent = "starting…";
  status.dataset.state = "running";
  const run = await (await talon()).agent("main").run(prompt);
  status.dataset.runId = run.id;
  status.textContent = `run ${run.id}`;
  for await (const event of run.events()) {
    if (event.type === "assistant.delta") reply.textContent += event.data.text;
    if (event.type === "tool.call.started") status.textContent = `using ${event.data.name}…`;
  }
  const result = await run.wait();
  status.textContent = result.status;
  status.dataset.state = result.status;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const prompt = new FormData(form).get("prompt");
  ask(typeof prompt === "string" ? prompt : "").catch((error: unknown) => {
    status.textContent = `failed: ${error instanceof Error ? error.message : String(error)}`;
    status.dataset.state = "error";
  });
});
