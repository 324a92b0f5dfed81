// The sandbox's own prelude, run once into every image (the bare one and
// each surface's, before the surface's prelude).
// It captures the two host functions every VM has and hides their globals:
//   __talon_print(stream, text)  stream 1 = stdout, 2 = stderr
//   __talon_random()             a double in [0, 1) from the host's CSPRNG
//   __talon_now()                milliseconds on the host's monotonic clock
// and installs `console`, a host-backed `Math.random` (so that VMs restored
// from one snapshot never share a random sequence) and `performance.now`
// (so that the clock is the host's choice across snapshots).
(function () {
  "use strict";
  const print = globalThis.__talon_print;
  const random = globalThis.__talon_random;
  const now = globalThis.__talon_now;
  delete globalThis.__talon_print;
  delete globalThis.__talon_random;
  delete globalThis.__talon_now;

  const stringify = JSON.stringify;
  const toString = String;
  const apply = Reflect.apply;
  const push = Array.prototype.push;
  const join = Array.prototype.join;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;

  function render(value) {
    if (typeof value === "string") return value;
    if (value === undefined) return "undefined";
    if (typeof value === "function") return "[Function]";
    if (typeof value === "bigint" || typeof value === "symbol") return toString(value);
    if (value instanceof Error) {
      return value.stack ? toString(value.name) + ": " + toString(value.message) + "\n" + toString(value.stack)
                         : toString(value.name) + ": " + toString(value.message);
    }
    try {
      const text = stringify(value);
      return text === undefined ? toString(value) : text;
    } catch (e) {
      return toString(value);
    }
  }

  function writer(stream) {
    return function () {
      const parts = [];
      for (let i = 0; i < arguments.length; i++) apply(push, parts, [render(arguments[i])]);
      print(stream, apply(join, parts, [" "]) + "\n");
    };
  }

  // The engine calls these hooks while it builds any error, including the
  // errors the host creates: pin them so guest code can never run there.
  defineProperty(Error, "prepareStackTrace", { value: undefined, writable: false, configurable: false, enumerable: false });
  defineProperty(Error, "stackTraceLimit", { value: 10, writable: false, configurable: false, enumerable: false });

  const console = freeze({
    log: writer(1),
    info: writer(1),
    debug: writer(1),
    warn: writer(2),
    error: writer(2),
  });
  defineProperty(globalThis, "console", { value: console, writable: true, configurable: true, enumerable: false });
  defineProperty(Math, "random", {
    value: function random_() { return random(); },
    writable: true,
    configurable: true,
    enumerable: false,
  });
  defineProperty(globalThis, "performance", {
    value: freeze({ now: function now_() { return now(); } }),
    writable: true,
    configurable: true,
    enumerable: false,
  });
})();
