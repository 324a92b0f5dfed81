// `GET /v1/artifacts/{id}/content`: an artifact's bytes, as the gateway
// serves them: its MIME type (guessed from its name as the gateway guesses
// a written file's), `Content-Length`, `Accept-Ranges`, an `ETag` (the
// SHA-256, quoted) and one `Range` (`bytes=a-b`, `bytes=a-`, `bytes=-n`)
// answered `206` with `Content-Range`; a range outside the content is
// `416`; several ranges, another unit or a malformed header get the whole.

import { refusals } from "@talon/sdk";
import type { ServerResponse } from "node:http";

import type { State } from "./state.js";
import { sendError } from "./wire.js";

/** A MIME type for a file by its name's extension (text when it is UTF-8 and the extension says nothing). */
export function mimeOf(name: string, bytes: Uint8Array): string {
  const dot = name.lastIndexOf(".");
  const ext = dot < 0 ? "" : name.slice(dot + 1).toLowerCase();
  const known: Record<string, string> = {
    json: "application/json",
    md: "text/markdown",
    markdown: "text/markdown",
    html: "text/html",
    htm: "text/html",
    css: "text/css",
    js: "text/javascript",
    mjs: "text/javascript",
    csv: "text/csv",
    svg: "image/svg+xml",
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    pdf: "application/pdf",
    diff: "text/x-diff",
    patch: "text/x-diff",
  };
  const mime = known[ext];
  if (mime) return mime;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return "text/plain; charset=utf-8";
  } catch {
    return "application/octet-stream";
  }
}

/** A byte span, inclusive at both ends. */
interface Span {
  start: number;
  end: number;
}

/** The span a `Range` header asks of `len` bytes: `undefined` for the whole, `"unsatisfiable"` for one outside it. */
export function parseRange(header: string | undefined, len: number): Span | undefined | "unsatisfiable" {
  const spec = header?.trim();
  if (!spec?.startsWith("bytes=")) return undefined;
  const range = spec.slice("bytes=".length);
  if (range.includes(",")) return undefined;
  const dash = range.indexOf("-");
  if (dash < 0) return undefined;
  const first = range.slice(0, dash).trim();
  const last = range.slice(dash + 1).trim();
  const number = (text: string) => (/^\d+$/.test(text) ? Number(text) : undefined);
  if (first === "") {
    const n = number(last);
    if (n === undefined) return undefined;
    if (n === 0 || len === 0) return "unsatisfiable";
    return { start: Math.max(0, len - n), end: len - 1 };
  }
  const start = number(first);
  if (start === undefined) return undefined;
  let end: number;
  if (last === "") end = Math.max(0, len - 1);
  else {
    const asked = number(last);
    if (asked === undefined || asked < start) return undefined;
    end = Math.min(asked, Math.max(0, len - 1));
  }
  if (start >= len) return "unsatisfiable";
  return { start, end };
}

/** Serves an artifact's bytes (the caller is authenticated). */
export function serveContent(state: State, id: string, range: string | undefined, res: ServerResponse): void {
  const stored = state.artifacts.find((a) => a.summary.id === id);
  if (!stored) {
    sendError(res, refusals.notFound("artifact", id));
    return;
  }
  const len = stored.bytes.length;
  const span = parseRange(range, len);
  if (span === "unsatisfiable") {
    sendError(res, refusals.rangeOutside(len), 416, {
      "content-range": `bytes */${len}`,
    });
    return;
  }
  const body = span ? stored.bytes.subarray(span.start, span.end + 1) : stored.bytes;
  const headers: Record<string, string> = {
    "content-type": stored.summary.mimeType ?? "application/octet-stream",
    "content-length": String(body.length),
    "accept-ranges": "bytes",
    etag: `"${stored.sha256}"`,
  };
  if (span) headers["content-range"] = `bytes ${span.start}-${span.end}/${len}`;
  res.writeHead(span ? 206 : 200, headers);
  res.end(Buffer.from(body));
}
