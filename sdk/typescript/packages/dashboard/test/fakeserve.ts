// A stand-in for the gateway's dashboard routes, for working on the
// dashboard without a gateway build: serves the built assets with the
// gateway's CSP, answers /v1/dashboard/{login,session,logout} with a cookie,
// and forwards every other request (HTTP and SSE) to an upstream (a
// `FakeGateway`) with its token. Not the real thing: `walk.test.ts` runs
// against a real `talon gateway`.
import { readFileSync } from "node:fs";
import { createServer, request as forward, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";

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

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
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
        server.close(() => {
          resolve();
        });
      }),
  };
}
