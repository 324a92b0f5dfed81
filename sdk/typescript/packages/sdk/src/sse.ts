// Server-Sent Events: the frame decoder over a response body. Frames are
// `id:`, `event:` and `data:` lines ended by a blank line; comments (`:`
// lines, the gateway's heartbeat) are skipped. A frame longer than
// `MAX_FRAME` characters ends the stream with an error instead of growing
// without bound.

import { TalonError } from "./errors.js";

/** The longest frame accepted (64 MiB of text). */
export const MAX_FRAME = 64 * 1024 * 1024;

/** One decoded frame. */
export interface Frame {
  /** The `id:` field (the event's cursor). */
  id?: string;
  /** The `event:` field (the event's type, or `error`). */
  event?: string;
  /** The `data:` lines, joined by line breaks. */
  data: string;
}

/** Decodes the frames of `body`, in order, until it ends. */
export async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let frame: Frame = { data: "" };
  let hasData = false;
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let start = 0;
      for (;;) {
        const end = lineEnd(buffer, start);
        if (end === undefined) break;
        const line = buffer.slice(start, end.at);
        start = end.next;
        if (line === "") {
          if (hasData || frame.id !== undefined || frame.event !== undefined) yield frame;
          frame = { data: "" };
          hasData = false;
          size = 0;
          continue;
        }
        size += line.length;
        if (size > MAX_FRAME) {
          throw new TalonError(`an event frame exceeds ${MAX_FRAME} characters`, { code: "internal" });
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? "" : line.slice(colon + 1);
        if (text.startsWith(" ")) text = text.slice(1);
        if (field === "data") {
          frame.data = hasData ? `${frame.data}\n${text}` : text;
          hasData = true;
        } else if (field === "id") {
          frame.id = text;
        } else if (field === "event") {
          frame.event = text;
        }
      }
      buffer = buffer.slice(start);
      if (buffer.length > MAX_FRAME) {
        throw new TalonError(`an event frame exceeds ${MAX_FRAME} characters`, { code: "internal" });
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Where the line starting at `from` ends (`\n`, `\r\n` or `\r`), if it is whole. */
function lineEnd(text: string, from: number): { at: number; next: number } | undefined {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) return { at: i, next: i + 1 };
    if (c === 13) {
      // A `\r` at the buffer's end may be the first half of `\r\n`.
      if (i + 1 >= text.length) return undefined;
      return { at: i, next: text.charCodeAt(i + 1) === 10 ? i + 2 : i + 1 };
    }
  }
  return undefined;
}
