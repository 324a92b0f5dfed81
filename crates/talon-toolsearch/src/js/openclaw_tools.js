// The only API of a tool_search_code body besides `console`: openclaw.tools.
// Run once into Tool Search's own image (a VM of another surface never has
// it): captures the three asynchronous host functions, hides their globals
// and defines `openclaw`.
//   __openclaw_tools_search(query, options)  async: compact hits
//   __openclaw_tools_describe(id)            async: one entry in full
//   __openclaw_tools_call(id, args)          async: a catalog tool call
(() => {
  "use strict";
  const g = globalThis;
  const search = g.__openclaw_tools_search;
  const describe = g.__openclaw_tools_describe;
  const call = g.__openclaw_tools_call;
  delete g.__openclaw_tools_search;
  delete g.__openclaw_tools_describe;
  delete g.__openclaw_tools_call;
  const toText = String;
  const tools = Object.freeze({
    search: (query, options) => search(toText(query), options === undefined ? null : options),
    describe: (id) => describe(toText(id)),
    call: (id, args) => call(toText(id), args === undefined ? {} : args),
  });
  const openclaw = Object.freeze({ tools });
  const defineProperty = Object.defineProperty;
  defineProperty(g, "openclaw", {
    value: openclaw,
    writable: false,
    configurable: false,
    enumerable: false,
  });
})();
