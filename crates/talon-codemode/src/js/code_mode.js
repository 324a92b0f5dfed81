// Code Mode's guest API, run once into Code Mode's own image (a VM of
// another surface never has it). It captures the host functions, hides
// their globals, and installs exactly the seed's globals: ALL_TOOLS,
// tools, MCP, API, namespaces, text, json, yield_control (plus each
// visible plugin namespace under its globalName, through
// `__openclaw_setup`, which the host calls before each fresh cell).
//
// Run data (the catalog, MCP servers, namespace descriptors) differs per
// run, so the globals are built lazily, on first use, from the synchronous
// host function `__openclaw_data(part)`. A built global is kept in guest
// memory, so it survives snapshots as is.
//
// Host functions take JSON-compatible values and answer with JSON text,
// which the wrappers below parse with the engine's own JSON.parse
// (captured here, before any guest code runs): one string crosses the
// bridge instead of a value built property by property.
//   __openclaw_data(part)                      sync: "tools" | "convenience" | "mcp" | "namespaces"
//   __openclaw_search(query, limit)            sync: compact entries
//   __openclaw_describe(id)                    sync: entry with parameters
//   __openclaw_api(op, arg)                    sync: "list" | "read"
//   __openclaw_mcp_api(server, tool, schema)   sync: $api()
//   __openclaw_call(id, input)                 async: a catalog tool call
//   __openclaw_mcp(server, kind, name, input)  async: kind "tool" | "resource" | "prompt"
//   __openclaw_ns(namespaceId, path, args)     async: a namespace call
//   __openclaw_yield(reason)                   async: suspends the cell
//   __talon_print(stream, text)                sync: 3 = a text item, 4 = a json item
(() => {
  "use strict";
  const g = globalThis;
  const parse = JSON.parse;
  const apply = Reflect.apply;
  const then = Promise.prototype.then;
  const sync = (fn) => function () { return parse(apply(fn, undefined, arguments)); };
  const async = (fn) => function () { return apply(then, apply(fn, undefined, arguments), [parse]); };
  const data = sync(g.__openclaw_data);
  const search = sync(g.__openclaw_search);
  const describe = sync(g.__openclaw_describe);
  const api = sync(g.__openclaw_api);
  const mcpApi = sync(g.__openclaw_mcp_api);
  const call = async(g.__openclaw_call);
  const mcp = async(g.__openclaw_mcp);
  const ns = async(g.__openclaw_ns);
  const yieldHost = g.__openclaw_yield;
  const print = g.__talon_print;
  for (const name of [
    "__openclaw_data", "__openclaw_search", "__openclaw_describe", "__openclaw_api",
    "__openclaw_mcp_api", "__openclaw_call", "__openclaw_mcp", "__openclaw_ns",
    "__openclaw_yield", "__talon_print",
  ]) {
    delete g[name];
  }

  const defineProperty = Object.defineProperty;
  const hasOwn = Object.hasOwn;
  const ProxyCtor = Proxy;
  const freeze = Object.freeze;
  const create = Object.create;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const stringify = JSON.stringify;
  const toText = String;
  const resolved = (value) => Promise.resolve(value);
  // Synchronous host functions throw plain errors; async API surfaces turn
  // them into rejections, as the seed's Promise-returning signatures say.
  const later = (fn) => {
    try {
      return resolved(fn());
    } catch (error) {
      return Promise.reject(error);
    }
  };

  function deepFreeze(value) {
    if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
      for (const key of keys(value)) deepFreeze(value[key]);
      freeze(value);
    }
    return value;
  }

  // A global that is built on first read and can never be replaced.
  function lazyGlobal(name, build) {
    let built = false;
    let value;
    defineProperty(g, name, {
      get() {
        if (!built) {
          value = build();
          built = true;
        }
        return value;
      },
      configurable: false,
      enumerable: false,
    });
  }

  function fixed(target, name, value, enumerable) {
    defineProperty(target, name, { value, writable: false, configurable: false, enumerable: enumerable !== false });
  }

  // --- ALL_TOOLS and tools -------------------------------------------------

  lazyGlobal("ALL_TOOLS", () => deepFreeze(data("tools")));

  lazyGlobal("tools", () => {
    const catalog = create(null);
    fixed(catalog, "search", function search_(query, options) {
      const limit = options !== null && typeof options === "object" ? options.limit : undefined;
      return later(() => search(toText(query), limit === undefined ? null : limit));
    });
    fixed(catalog, "describe", function describe_(id) {
      return later(() => describe(toText(id)));
    });
    fixed(catalog, "call", function call_(id, input) {
      return call(toText(id), input === undefined ? {} : input);
    });
    const convenience = data("convenience");
    for (const name of keys(convenience)) {
      const id = convenience[name];
      fixed(catalog, name, function (input) {
        return call(id, input === undefined ? {} : input);
      });
    }
    return freeze(catalog);
  });

  // --- MCP -----------------------------------------------------------------

  lazyGlobal("MCP", () => {
    const servers = data("mcp");
    const root = create(null);
    for (const server of servers) {
      const api = create(null);
      fixed(api, "$api", function $api(toolName, options) {
        const schema = options !== null && typeof options === "object" && options.schema === true;
        return later(() => mcpApi(server.name, toolName === undefined ? null : toText(toolName), schema));
      });
      if (server.resources) {
        fixed(api, "resources", freeze({
          read(request) {
            const uri = request !== null && typeof request === "object" ? request.uri : request;
            return mcp(server.name, "resource", toText(uri), {});
          },
        }));
      }
      if (server.prompts) {
        fixed(api, "prompts", freeze({
          get(request) {
            const req = request !== null && typeof request === "object" ? request : {};
            const args = req.arguments === undefined ? {} : req.arguments;
            return mcp(server.name, "prompt", toText(req.name), args);
          },
        }));
      }
      freeze(api);
      // Tool functions are made when the cell first names them, so a
      // server with hundreds of tools costs nothing until used. The host
      // lists each tool's names: its camelCase name and, when that differs,
      // its exact MCP name (the only name of tools without a safe form);
      // none collides with $api, resources or prompts. The view is
      // read-only: writes and definitions are refused.
      let byKey;
      const made = create(null);
      const toolFor = (key) => {
        if (byKey === undefined) {
          byKey = create(null);
          for (const tool of server.tools) {
            for (let i = 0; i < tool.keys.length; i++) byKey[tool.keys[i]] = tool.name;
          }
        }
        return byKey[key];
      };
      const view = new ProxyCtor(api, {
        get(target, key) {
          if (typeof key !== "string" || hasOwn(target, key)) return target[key];
          let fn = made[key];
          if (fn === undefined) {
            const name = toolFor(key);
            if (name === undefined) return undefined;
            fn = function (input) {
              return mcp(server.name, "tool", name, input === undefined ? {} : input);
            };
            made[key] = fn;
          }
          return fn;
        },
        has(target, key) {
          return hasOwn(target, key) || (typeof key === "string" && toolFor(key) !== undefined);
        },
        set() { return false; },
        defineProperty() { return false; },
        deleteProperty() { return false; },
      });
      for (const alias of server.aliases) {
        if (!(alias in root)) fixed(root, alias, view);
      }
    }
    return freeze(root);
  });

  // --- API: the virtual, read-only declaration files ------------------------

  fixed(g, "API", freeze({
    list(prefix) {
      return later(() => api("list", prefix === undefined ? null : toText(prefix)));
    },
    read(path) {
      return later(() => api("read", toText(path)));
    },
  }), false);

  // --- namespaces ------------------------------------------------------------

  let namespaceMap;
  function namespaces() {
    if (namespaceMap !== undefined) return namespaceMap;
    const map = create(null);
    for (const descriptor of data("namespaces")) {
      map[descriptor.globalName] = materialize(descriptor);
    }
    namespaceMap = freeze(map);
    return namespaceMap;
  }

  // A descriptor is plain data plus the paths of its callable members;
  // each becomes a function that asks the host to run the backing tool.
  function materialize(descriptor) {
    const root = descriptor.value;
    for (const path of descriptor.callables) {
      let target = root;
      for (let i = 0; i < path.length - 1; i++) target = target[path[i]];
      const joined = path.join("\u001f");
      target[path[path.length - 1]] = function () {
        const args = [];
        for (let i = 0; i < arguments.length; i++) args.push(arguments[i] === undefined ? null : arguments[i]);
        return ns(descriptor.id, joined, args);
      };
    }
    return deepFreeze(root);
  }

  lazyGlobal("namespaces", namespaces);
  // The host runs `__openclaw_setup([...globalNames])` before each cell: it
  // installs the run's namespace globals and removes itself.
  defineProperty(g, "__openclaw_setup", {
    value: function (names) {
      for (const name of names) {
        if (!(name in g)) lazyGlobal(name, () => namespaces()[name]);
      }
      delete g.__openclaw_setup;
    },
    writable: false,
    configurable: true,
    enumerable: false,
  });

  // --- output and control -----------------------------------------------------

  function render(value) {
    if (typeof value === "string") return value;
    if (value === undefined) return "undefined";
    if (typeof value === "function") return "[Function]";
    if (typeof value === "bigint" || typeof value === "symbol") return toText(value);
    try {
      const text = stringify(value);
      return text === undefined ? toText(value) : text;
    } catch (error) {
      return toText(value);
    }
  }

  fixed(g, "text", function text(value) {
    print(3, render(value));
  }, false);

  fixed(g, "json", function json(value) {
    let text;
    try {
      text = stringify(value);
    } catch (error) {
      // Not serializable (a cycle, a BigInt): the plain-string form.
      text = stringify(render(value));
    }
    print(4, text === undefined ? "null" : text);
  }, false);

  fixed(g, "yield_control", function yield_control(reason) {
    return apply(then, yieldHost(reason === undefined ? null : toText(reason)), [() => undefined]);
  }, false);
})();
