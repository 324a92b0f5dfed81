// The only API of a tool_search_code body besides `console`: openclaw.tools.
// Captures the three asynchronous host functions and hides their globals.
(() => {
  "use strict";
  const search = globalThis.__openclaw_search;
  const describe = globalThis.__openclaw_describe;
  const call = globalThis.__openclaw_call;
  delete globalThis.__openclaw_search;
  delete globalThis.__openclaw_describe;
  delete globalThis.__openclaw_call;
  const toText = String;
  const tools = Object.freeze({
    search: (query, options) => search(toText(query), options === undefined ? null : options),
    describe: (id) => describe(toText(id)),
    call: (id, args) => call(toText(id), args === undefined ? {} : args),
  });
  Object.defineProperty(globalThis, "openclaw", {
    value: Object.freeze({ tools }),
    writable: false,
    configurable: false,
    enumerable: false,
  });
})();
