// A stand-in for the gateway's dashboard routes, for working on the
// dashboard without a gateway build: serves the built assets with the
// gateway's CSP, answers /v1/dashboard/{login,session,logout} with a cookie,
// and forwards every other request (HTTP and SSE) to an upstream (a
// `FakeGateway`) with its token. The WebSocket (`/v1/ws`) is relayed too:
// its upgrade, from this origin with the cookie, goes on with the token
// instead, and the page's first frame (`auth` with an empty token, for the
// cookie to stand in) is answered `authenticated` here, as the gateway
// would. Not the real thing: `walk.test.ts` and `socket.test.ts` run
// against a real `talon gateway`.
import { readFileSync } from "node:fs";
import { createServer, request as forward, type IncomingMessage, type ServerResponse } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import type { Duplex } from "node:stream";

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export interface Served {
  readonly url: string;
  /** A fresh one-time login link. */
  link(next?: string): string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = { js: "text/javascript", css: "text/css", html: "text/html" };

export async function serveDashboard(assets: string, upstream: { url: string; token: string }): Promise<Served> {
  const codes = new Set<string>();
  let n = 0;
  const target = new URL(upstream.url);
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    const signedIn = (req.headers.cookie ?? "").includes("talon_dashboard=ok");
    const grant = { tokenId: "tok_fake", scopes: ["admin"], expiresAt: Date.now() + 3_600_000 };
    if (url.pathname === "/v1/dashboard/login" && req.method === "POST") {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const code = (JSON.parse(body) as { code?: string }).code ?? "";
        if (!codes.delete(code)) {
          res.writeHead(401, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { code: "unauthenticated", message: "the login code is unknown or used" } }));
          return;
        }
        res.writeHead(200, {
          "content-type": "application/json",
          "set-cookie": "talon_dashboard=ok; Path=/; HttpOnly; SameSite=Strict",
        });
        res.end(JSON.stringify(grant));
      });
      return;
    }
    if (url.pathname === "/v1/dashboard/session") {
      res.writeHead(signedIn ? 200 : 401, { "content-type": "application/json" });
      res.end(JSON.stringify(signedIn ? grant : { error: { code: "unauthenticated", message: "signed out" } }));
      return;
    }
    if (url.pathname === "/v1/dashboard/logout") {
      res.writeHead(204, { "set-cookie": "talon_dashboard=; Path=/; Max-Age=0" });
      res.end();
      return;
    }
    if (url.pathname.startsWith("/assets/")) {
      const name = url.pathname.slice("/assets/".length);
      try {
        const bytes = readFileSync(join(assets, name.replace(/[^A-Za-z0-9._-]/g, "")));
        res.writeHead(200, { "content-type": TYPES[name.split(".").pop() ?? ""] ?? "application/octet-stream" });
        res.end(bytes);
      } catch {
        res.writeHead(404);
        res.end();
      }
      return;
    }
    if (url.pathname.startsWith("/v1/") || url.pathname === "/healthz" || url.pathname === "/metrics") {
      const { origin: _origin, referer: _referer, cookie: _cookie, ...rest } = req.headers;
      const headers = { ...rest, host: target.host, authorization: `Bearer ${upstream.token}` };
      const out = forward(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      out.on("error", () => res.destroy());
      req.pipe(out);
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-security-policy": CSP });
    res.end(readFileSync(join(assets, "index.html")));
  };
  const server = createServer(handle);
  let url = "";
  const relayed = new Set<Duplex>();
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    relayed.add(socket);
    socket.on("close", () => relayed.delete(socket));
    relaySocket(req, socket, head, { origin: url, target, token: upstream.token });
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    url,
    link(next) {
      const code = `lgn_${String(++n).padStart(64, "0")}`;
      codes.add(code);
      return `${url}/login#code=${code}${next ? `&next=${next}` : ""}`;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        for (const socket of relayed) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** The answer to the page's `auth` frame, as a server's (unmasked) text frame. */
const AUTHENTICATED = Buffer.from([0x81, 24, ...Buffer.from('{"type":"authenticated"}')]);

/** The length of the (masked) frame at the start of `bytes`, once its header is in. */
function frameSize(bytes: Buffer): number | undefined {
  if (bytes.length < 2) return undefined;
  const short = (bytes[1] ?? 0) & 0x7f;
  const extra = short === 126 ? 2 : short === 127 ? 8 : 0;
  if (bytes.length < 2 + extra) return undefined;
  const length = short === 126 ? bytes.readUInt16BE(2) : short === 127 ? Number(bytes.readBigUInt64BE(2)) : short;
  return 2 + extra + ((bytes[1] ?? 0) & 0x80 ? 4 : 0) + length;
}

/** Relays a signed-in page's `/v1/ws` to the upstream, authenticated by its token. */
function relaySocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  to: { origin: string; target: URL; token: string },
): void {
  const signedIn = (req.headers.cookie ?? "").includes("talon_dashboard=ok");
  if (new URL(req.url ?? "/", "http://x").pathname !== "/v1/ws" || !signedIn || req.headers.origin !== to.origin) {
    socket.end("HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    return;
  }
  const upstream = connect(Number(to.target.port), to.target.hostname, () => {
    const lines = [
      `GET ${req.url ?? "/v1/ws"} HTTP/1.1`,
      `host: ${to.target.host}`,
      `authorization: Bearer ${to.token}`,
    ];
    const skip = new Set(["host", "origin", "cookie", "sec-websocket-extensions"]);
    for (const [name, value] of Object.entries(req.headers)) {
      if (!skip.has(name) && value !== undefined)
        lines.push(`${name}: ${Array.isArray(value) ? value.join(", ") : value}`);
    }
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
  });
  // The page's first frame is its `auth` frame: answered here, not passed on.
  let first: Buffer | undefined = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    if (first === undefined) {
      upstream.write(chunk);
      return;
    }
    first = Buffer.concat([first, chunk]);
    const size = frameSize(first);
    if (size === undefined || first.length < size) return;
    const rest = first.subarray(size);
    first = undefined;
    socket.write(AUTHENTICATED);
    if (rest.length > 0) upstream.write(rest);
  });
  upstream.on("data", (chunk: Buffer) => socket.write(chunk));
  const end = () => {
    socket.destroy();
    upstream.destroy();
  };
  socket.on("close", end).on("error", end);
  upstream.on("close", end).on("error", end);
}
