// A real `talon gateway` for integration tests: a fresh state directory
// and workspace, the mock model speaking a script, an admin token, and a
// `stop()` that ends the process. Node only (it spawns a process).

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

/** One scripted model turn: text, tool calls, or both. */
export interface ScriptTurn {
  text?: string;
  toolCalls?: { name: string; arguments: unknown }[];
  [key: string]: unknown;
}

/** What the mock model says (`talon gateway --mock-script`). */
export interface MockScript {
  /** `perRun` replays the turns for every run; `once` plays them in order across runs. */
  replay?: "perRun" | "once";
  turns: ScriptTurn[];
  [key: string]: unknown;
}

/** How to start a gateway. */
export interface GatewayOptions {
  /** The mock model's script (default: one turn that says "Hello from the mock."). */
  script?: MockScript;
  /** Extra config (JSON), merged into the config's top level; `agents.defaults` keeps the workspace beside what it sets. */
  config?: Record<string, unknown>;
  /** Files to put in the agent's workspace, by relative path. */
  files?: Record<string, string>;
  /** The `talon` binary (default `$TALON_BIN`, else the workspace's debug build). */
  bin?: string;
  /** How long to wait for it to listen, in milliseconds (default 30 000). */
  startTimeoutMs?: number;
}

/** A running gateway. */
export interface RunningGateway {
  /** Its base URL (`http://127.0.0.1:PORT`). */
  readonly url: string;
  /** The admin token it printed. */
  readonly token: string;
  /**
   * The dashboard's one-time sign-in link it printed on stderr
   * (`http://127.0.0.1:PORT/login#code=lgn_…`), if it printed one.
   */
  readonly loginLink: string | undefined;
  /** Its config file (for `talon dashboard --config`). */
  readonly config: string;
  /** The `talon` binary it runs. */
  readonly bin: string;
  /** Its state directory, workspace and files. */
  readonly dir: string;
  /** The agent's workspace. */
  readonly workspace: string;
  /**
   * Ends it (SIGTERM, then SIGKILL after 5 s) and starts it again on the
   * same port with the same state (a gateway restart, as clients see one);
   * `loginLink` is then the new start's link.
   */
  restart(): Promise<void>;
  /** Ends it (SIGTERM, then SIGKILL after 5 s) and removes its directory. */
  stop(): Promise<void>;
}

/** The `talon` binary: `$TALON_BIN`, else `<target>/debug/talon` of the Cargo workspace above `from`. */
export function talonBinary(from = process.cwd()): string {
  const explicit = process.env.TALON_BIN;
  if (explicit) return explicit;
  let dir = resolve(from);
  for (;;) {
    if (existsSync(join(dir, "Cargo.lock")) && existsSync(join(dir, "crates"))) {
      const target = process.env.CARGO_TARGET_DIR ?? join(dir, "target");
      return join(resolve(dir, target), "debug", "talon");
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error("no talon binary: set TALON_BIN or run inside the Talon repository after `cargo build`");
}

/** Starts `talon gateway --mock-script` on a free loopback port. */
export async function startGateway(options: GatewayOptions = {}): Promise<RunningGateway> {
  const bin = options.bin ?? talonBinary();
  if (!existsSync(bin))
    throw new Error(`${bin} does not exist: build it with cargo build -p talon-cli --features mock-model`);
  const dir = mkdtempSync(join(tmpdir(), "talon-gateway-"));
  const workspace = join(dir, "workspace");
  mkdirSync(workspace, { recursive: true });
  for (const [path, text] of Object.entries(options.files ?? {})) {
    const file = join(workspace, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  const script = options.script ?? { replay: "perRun", turns: [{ text: "Hello from the mock." }] };
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  const agents = (options.config?.agents ?? {}) as { defaults?: object };
  const config = { ...options.config, agents: { ...agents, defaults: { workspace, ...agents.defaults } } };
  writeFileSync(join(dir, "talon.json"), JSON.stringify(config));
  const launch = (listen: string) =>
    spawn(
      bin,
      ["gateway", "--listen", listen, "--config", join(dir, "talon.json"), "--mock-script", join(dir, "script.json")],
      { env: { ...process.env, HOME: dir, TALON_STATE_DIR: join(dir, "state") }, stdio: ["ignore", "pipe", "pipe"] },
    );
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  let child = launch("127.0.0.1:0");
  const first = await listening(child, timeoutMs);
  const { url, token } = first;
  let loginLink = first.loginLink;
  let stopped: Promise<void> | undefined;
  return {
    url,
    token,
    get loginLink() {
      return loginLink;
    },
    config: join(dir, "talon.json"),
    bin,
    dir,
    workspace,
    async restart() {
      await stop(child);
      // The admin token is printed on the first start only: the restart knows it.
      child = launch(new URL(url).host);
      loginLink = (await listening(child, timeoutMs, token)).loginLink;
    },
    stop() {
      stopped ??= stop(child).finally(() => {
        rmSync(dir, { recursive: true, force: true });
      });
      return stopped;
    },
  };
}

/** How long to wait, once it listens, for the dashboard's sign-in line (a gateway without one prints none). */
const LINK_GRACE_MS = 1_000;

function listening(
  child: ChildProcess,
  timeoutMs: number,
  knownToken?: string,
): Promise<{ url: string; token: string; loginLink: string | undefined }> {
  return new Promise((resolvePromise, reject) => {
    let stdout = "";
    let stderr = "";
    let url: string | undefined;
    let token: string | undefined = knownToken;
    let loginLink: string | undefined;
    let grace: ReturnType<typeof setTimeout> | undefined;
    let graceOver = false;
    const timer = setTimeout(() => {
      fail(new Error(`talon gateway did not listen within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    const done = () => {
      if (url && token && !loginLink && !graceOver) {
        grace ??= setTimeout(() => {
          graceOver = true;
          done();
        }, LINK_GRACE_MS);
        return;
      }
      if (url && token) {
        clearTimeout(timer);
        clearTimeout(grace);
        child.stdout?.removeAllListeners("data");
        child.stderr?.removeAllListeners("data");
        child.removeListener("exit", onExit);
        // Keep draining, so a chatty gateway never blocks on a full pipe.
        child.stdout?.resume();
        child.stderr?.resume();
        resolvePromise({ url, token, loginLink });
      }
    };
    const fail = (error: Error) => {
      clearTimeout(timer);
      clearTimeout(grace);
      child.kill("SIGKILL");
      reject(error);
    };
    const onExit = (code: number | null) => {
      fail(new Error(`talon gateway exited (${String(code)}) before listening:\n${stderr}`));
    };
    child.once("exit", onExit);
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split("\n")[0];
      if (knownToken === undefined && stdout.includes("\n") && line) token = line.trim();
      done();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      // Only a whole line: a chunk may end in the middle of the URL.
      const match = /talon gateway: listening on (\S+)\r?\n/.exec(stderr);
      if (match?.[1]) url = match[1];
      const link = /talon gateway: dashboard \(this link signs in once, within 15 minutes\): (\S+)\r?\n/.exec(stderr);
      if (link?.[1]) loginLink = link[1];
      done();
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolvePromise) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolvePromise();
      return;
    }
    const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolvePromise();
    });
    child.kill("SIGTERM");
  });
}
