// The HTTP transport, as the gateway serves it: `POST /v1/<method>` (the
// params object as the JSON body, an empty body being `{}`, `Authorization:
// Bearer <token>`, bodies up to 4 MiB), `GET /healthz`, the SSE streams, the
// WebSocket's upgrade and artifact bytes; `405` with `Allow` for a wrong
// verb and `404` for a path no route serves. Every response carries
// `x-request-id`; before any route, a request must name one Host (`400`
// for several, or for an absolute-form target naming another), a loopback
// one (`421` otherwise), and any `Origin` it sends must be the gateway's
// own (`403`), as the gateway's guard has it.

import { caps, refusals, type ApiError } from "@talon/sdk";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

import { serveCall } from "./api.js";
import { serveContent } from "./content.js";
import { Failure, errorOf } from "./errors.js";
import { parseBody } from "./params.js";
import type { State } from "./state.js";
import { serveStream } from "./stream.js";
import { authenticate } from "./tokens.js";
import { WsTransport, refuse } from "./ws.js";
import { json, mintRequestId, sendError, sendJson, sendMethodNotAllowed, sendNoRoute } from "./wire.js";

/** The largest body taken (the gateway's default). */
export const MAX_BODY_BYTES = caps.DEFAULT_MAX_BODY_BYTES;
/** How much of a refused body is read (and dropped) so the refusal reaches the client (Node's, where hyper drains by itself). */
const MAX_DRAIN_BYTES = 64 << 20; // not a protocol cap

/** The host name of a `Host` header (`127.0.0.1:80` is `127.0.0.1`), if it is well formed. */
function hostName(raw: string): string | undefined {
  const text = raw.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(text);
  if (v6) return v6[1];
  const plain = /^([a-z0-9._-]+)(?::\d{1,5})?$/.exec(text);
  return plain?.[1]?.replace(/\.$/, "");
}

function portOf(authority: string, fallback: number): number {
  const match = /:(\d{1,5})$/.exec(authority.trim());
  return match ? Number(match[1]) : fallback;
}

/** A port written in an authority (`host:8080`), if there is one. */
function explicitPort(authority: string): number | undefined {
  const match = /:(\d{1,5})$/.exec(authority.trim());
  return match ? Number(match[1]) : undefined;
}

/**
 * Why a request names its host ambiguously (`400`), if it does: more than one `Host` header, or an
 * absolute-form target (`GET http://name/path`) naming another host or port than its `Host`.
 */
function ambiguousHost(req: IncomingMessage): ApiError | undefined {
  const raw = req.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === "host") hosts += 1;
  if (hosts > 1) return refusals.hostSeveral();
  const url = req.url ?? "/";
  if (url.startsWith("/")) return undefined;
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url)?.[1];
  const given = req.headers.host ?? "";
  const same =
    authority !== undefined &&
    hostName(authority) !== undefined &&
    hostName(authority) === hostName(given) &&
    explicitPort(authority) === explicitPort(given);
  return same ? undefined : refusals.hostAmbiguous();
}

/** The gateway's guard: one unambiguous, loopback Host, and an `Origin` (when sent) that is the gateway's own. */
function guard(req: IncomingMessage): { status: number; error: ApiError } | undefined {
  const ambiguous = ambiguousHost(req);
  if (ambiguous !== undefined) {
    return { status: 400, error: ambiguous };
  }
  const host = hostName(req.headers.host ?? "");
  if (host === undefined) {
    return {
      status: 421,
      error: refusals.hostMalformed(),
    };
  }
  const loopback = host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === "::1";
  if (!loopback) {
    return {
      status: 421,
      error: refusals.hostRefused([...host].slice(0, 64).join("")),
    };
  }
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  const text = origin.trim();
  const [scheme, authority] = text.split("://", 2);
  const fallback = scheme === "https" ? 443 : 80;
  const same =
    (scheme === "http" || scheme === "https") &&
    authority !== undefined &&
    hostName(authority) === host &&
    portOf(authority, fallback) === portOf(req.headers.host ?? "", fallback);
  if (same) return undefined;
  return {
    status: 403,
    error: refusals.originRefused(text.slice(0, 100)),
  };
}

/** Reads a body of at most `MAX_BODY_BYTES`, or `undefined` when it is longer (or cut off). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > MAX_BODY_BYTES) {
      resolve(undefined);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        cleanup();
        resolve(undefined);
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = () => {
      cleanup();
      resolve(undefined);
    };
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onError);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onError);
  });
}

/** Drops what is left of a refused body (up to a cap), so the answer reaches a client still sending; an oversized one closes the connection after. */
function drain(req: IncomingMessage, res: ServerResponse, oversized: boolean): void {
  if (oversized) res.setHeader("connection", "close");
  let dropped = 0;
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > MAX_DRAIN_BYTES) req.socket.destroy();
  });
  req.resume();
}

/** The fake gateway's server. */
export class HttpTransport {
  readonly server: Server;
  readonly #state: State;
  readonly #ws: WsTransport;
  readonly #streams = new Set<ServerResponse>();

  constructor(state: State) {
    this.#state = state;
    this.#ws = new WsTransport(state);
    this.server = createServer({ requestTimeout: 0 }, (req, res) => {
      this.#handle(req, res).catch((thrown: unknown) => {
        // A bug of the fake answers `internal`, never a crash.
        if (!res.headersSent) sendError(res, errorOf(thrown));
        else res.destroy();
      });
    });
    this.server.on("upgrade", (req: IncomingMessage, socket, head: Buffer) => {
      const refused = guard(req);
      if (refused) {
        refuse(socket, refused.status, json({ error: refused.error }), {
          "content-type": "application/json",
          "x-request-id": mintRequestId(),
        });
        return;
      }
      this.#ws.upgrade(req, socket, head);
    });
    this.server.on("clientError", (_error, socket) => {
      if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n");
      else socket.destroy();
    });
  }

  /** Ends open streams and sockets and stops listening. */
  async close(): Promise<void> {
    this.#ws.close();
    for (const res of this.#streams) res.destroy();
    this.#streams.clear();
    await new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
      this.server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    res.setHeader("x-request-id", mintRequestId());
    res.on("error", () => undefined);
    const refused = guard(req);
    if (refused) {
      sendError(res, refused.error, refused.status);
      req.resume();
      return;
    }
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
      // A CORS preflight: answered, allowing nothing (no origins are listed).
      res.writeHead(204);
      res.end();
      return;
    }
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    const verb = req.method === "HEAD" ? "GET" : (req.method ?? "GET");
    const segments = url.pathname.split("/").slice(1);
    // A segment that is not valid percent-encoding stays as sent (the gateway's router does the same).
    const decoded = segments.map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    });
    const [first, second, third, fourth] = decoded;
    const get = (serve: () => unknown) => {
      req.resume();
      if (verb !== "GET") {
        sendMethodNotAllowed(res, "GET");
        return;
      }
      return serve();
    };
    if (decoded.length === 1 && first === "healthz") {
      return get(() => {
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8", "content-length": "3" });
        res.end("ok\n");
      });
    }
    if (first !== "v1" || second === undefined || second === "") {
      req.resume();
      sendNoRoute(res);
      return;
    }
    if (decoded.length === 2 && second === "events") {
      return get(() => serveStream(this.#state, req, res, url.searchParams, undefined, this.#streams));
    }
    if (decoded.length === 2 && second === "ws") {
      return get(() => {
        res.writeHead(400, { "content-type": "text/plain; charset=utf-8" });
        res.end("Connection header did not include 'upgrade'");
      });
    }
    if (decoded.length === 4 && second === "runs" && third && fourth === "events") {
      return get(() => serveStream(this.#state, req, res, url.searchParams, third, this.#streams));
    }
    if (decoded.length === 4 && second === "artifacts" && third && fourth === "content") {
      return get(() => {
        try {
          authenticate(this.#state, req.headers.authorization);
          serveContent(this.#state, third, req.headers.range, res);
        } catch (thrown) {
          sendError(res, errorOf(thrown));
        }
      });
    }
    if (decoded.length !== 2) {
      req.resume();
      sendNoRoute(res);
      return;
    }
    if (verb !== "POST") {
      req.resume();
      sendMethodNotAllowed(res, "POST");
      return;
    }
    await this.#call(req, res, second);
  }

  /** `POST /v1/<method>`: the token, the body, then the call. */
  async #call(req: IncomingMessage, res: ServerResponse, method: string): Promise<unknown> {
    const requestId = String(res.getHeader("x-request-id"));
    let caller;
    try {
      caller = authenticate(this.#state, req.headers.authorization);
    } catch (thrown) {
      drain(req, res, false);
      sendError(res, errorOf(thrown));
      return;
    }
    const body = await readBody(req);
    if (body === undefined) {
      drain(req, res, true);
      sendError(res, refusals.bodyTooLarge(MAX_BODY_BYTES));
      return;
    }
    let params: unknown;
    try {
      params = parseBody(body);
    } catch (thrown) {
      sendError(res, thrown instanceof Failure ? thrown.error : errorOf(thrown));
      return;
    }
    const outcome = await serveCall(this.#state, caller, method, params, "http", requestId);
    if (outcome.ok) sendJson(res, 200, outcome.result);
    else sendError(res, outcome.error);
  }
}
