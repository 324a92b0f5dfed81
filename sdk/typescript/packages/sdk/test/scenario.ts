// One scenario, run in Node by the Node tests and in headless Chromium by
// the browser test (bundled with the SDK): a run, its events followed to
// the end, its result.
import type { Talon } from "@talon/sdk";

/** What the scenario saw. */
export interface Seen {
  status: string;
  text: string | null;
  types: string[];
}

export async function scenario(talon: Talon): Promise<Seen> {
  const run = await talon.agent().run("What do my notes say?");
  const types: string[] = [];
  for await (const event of run.events()) {
    if (!event.type.endsWith(".delta")) types.push(event.type);
  }
  const result = await run.wait();
  return { status: result.status, text: result.output?.text ?? null, types };
}
