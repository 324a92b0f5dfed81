// A browser for React Testing Library in Node: a jsdom window whose
// globals are copied onto `globalThis` where Node has none of its own
// (Node's fetch, AbortController, URL and streams stay, so the SDK uses
// what it uses in Node). Import it before @testing-library/react.
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>", {
  url: "http://localhost/",
  pretendToBeVisual: true,
});
const global = globalThis as Record<string, unknown>;
const window = dom.window as unknown as Record<string, unknown>;
for (const key of Object.getOwnPropertyNames(window)) {
  if (key in global) continue;
  try {
    global[key] = window[key];
  } catch {
    // A getter that only works on the window itself.
  }
}
global.IS_REACT_ACT_ENVIRONMENT = true;
