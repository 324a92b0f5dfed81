// Quickstart: run an agent, stream its events as they happen (the
// assistant's text as it is written, each tool call), then wait for the
// result.
//
//   TALON_URL=http://127.0.0.1:7777 TALON_TOKEN=talon_... \
//     node build/quickstart.js "What do my notes say?"
import { Talon } from "@talon/sdk";

const baseUrl = process.env.TALON_URL;
const token = process.env.TALON_TOKEN;
if (!baseUrl || !token) throw new Error("set TALON_URL and TALON_TOKEN (the gateway prints its admin token at start)");
const prompt = process.argv.slice(2).join(" ") || "What do my notes say?";

const talon = new Talon({ baseUrl, token });

// Starting a run returns as soon as the gateway has accepted it.
const run = await talon.agent("main").run(prompt);
console.log(`run ${run.id}`);

// Follow its events to the end. The stream reconnects by itself if the
// connection drops, with no event lost or repeated.
let streamed = "";
for await (const event of run.events()) {
  switch (event.type) {
    case "assistant.delta":
      process.stdout.write(event.data.text);
      streamed += event.data.text;
      break;
    case "tool.call.started":
      console.log(`→ ${event.data.name} ${JSON.stringify(event.data.arguments)}`);
      break;
    case "tool.call.completed":
      console.log(`← ${event.data.name} done in ${event.data.durationMs} ms`);
      break;
    case "tool.call.failed":
      console.log(`← ${event.data.name} failed: ${JSON.stringify(event.data.error)}`);
      break;
  }
}

// The result: status, final text, token usage.
const result = await run.wait();
console.log(`\nstatus: ${result.status}`);
console.log(`answer: ${result.output?.text ?? "(none)"}`);
console.log(`tokens: ${result.usage?.totalTokens ?? "?"}`);

if (result.status !== "completed") {
  console.error(`the run ended ${result.status}: ${JSON.stringify(result.error)}`);
  process.exit(1);
}
// What was streamed is the answer, whole.
if (!streamed || streamed !== result.output?.text) {
  console.error(`streamed ${JSON.stringify(streamed)}, but the result says ${JSON.stringify(result.output?.text)}`);
  process.exit(1);
}
