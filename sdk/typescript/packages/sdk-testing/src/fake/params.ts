// What arrives as text becomes JSON, then a method's typed params, with
// the gateway's refusals: a body nested as deep as the gateway's JSON
// reader refuses (128) or not JSON is `invalid_request` ("the body is not
// JSON: …"); params that are not an object, or that fail the method's
// schema (read closed: an unknown field is refused), are `invalid_request`
// naming the field as the gateway does (`runs.create: input[0].content:
// …`, with `details.field`). What follows the field is @talon/sdk's
// validator's wording, not the gateway's decoder's (docs/fake-differences.md).

import { METHODS, validate, type MethodName, type MethodTypes, refusals } from "@talon/sdk";

import { fail } from "./errors.js";

/** The gateway's JSON reader's nesting limit: this many open brackets at once is refused. */
const RECURSION_LIMIT = 128;

/** Whether nesting reaches the limit, and where. */
function tooDeep(text: string): string | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth >= RECURSION_LIMIT) return `nested ${RECURSION_LIMIT} deep at byte ${i}`;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return undefined;
}

/** Parses JSON text, or says why not (JSON.parse's words). */
export function parseJson(text: string): { value: unknown } | { error: string } {
  const deep = tooDeep(text);
  if (deep) return { error: deep };
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** A request body as params: `undefined` for an empty (or blank) body, else its JSON. */
export function parseBody(body: Buffer): unknown {
  const text = body.toString("utf8");
  if (text.trim() === "") return undefined;
  const parsed = parseJson(text);
  if ("error" in parsed) throw fail(refusals.bodyNotJson(parsed.error));
  return parsed.value;
}

/** A JSON Pointer (`/input/0/content`) as the gateway's field (`input[0].content`). */
function fieldOf(pointer: string): string {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(part) ? `[${part}]` : out === "" ? part : `.${part}`;
  }
  return out;
}

function at(value: unknown, pointer: string): unknown {
  let here = value;
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (here === null || typeof here !== "object") return undefined;
    here = (here as Record<string, unknown>)[part];
  }
  return here;
}

/** A method's params, checked against its schema (closed), or `invalid_request` naming what is wrong. */
export function decodeParams<M extends MethodName>(method: M, raw: unknown): MethodTypes[M]["params"] {
  const params = raw ?? {};
  if (typeof params !== "object" || Array.isArray(params)) throw fail(refusals.paramsNotObject(method));
  let issue = validate(METHODS[method].params, params, { closed: true });
  // The gateway's decoder checks types, not the ranges its schema documents
  // (`expiresInMs` is checked by the method): look past a range on a whole number.
  let patched: unknown;
  for (let tries = 0; issue && tries < 8; tries++) {
    const range = /^(below the minimum|above the maximum) (\d+)$/.exec(issue.message);
    const value = at(params, issue.path);
    if (!range || range[2] === "0" || typeof value !== "number" || value < 0 || !Number.isInteger(value)) break;
    patched = structuredClone(patched ?? params);
    const parts = issue.path.split("/").slice(1);
    const key = parts.pop() ?? "";
    const holder = at(patched, parts.length ? `/${parts.join("/")}` : "") as Record<string, unknown>;
    holder[key] = Number(range[2]);
    issue = validate(METHODS[method].params, patched, { closed: true });
  }
  // A union reports its first branch's complaint; a run's messages input is better named by the message at fault.
  const input = (params as { input?: unknown }).input;
  if (issue?.path === "/input" && Array.isArray(input)) {
    for (let i = 0; i < input.length && issue.path === "/input"; i++) {
      const inner = validate("InputMessage", input[i], { closed: true });
      if (inner) issue = { path: `/input/${i}${inner.path}`, message: inner.message };
    }
  }
  if (issue) {
    const parts = issue.path.split("/");
    const last = (parts.at(-1) ?? "").replace(/~1/g, "/").replace(/~0/g, "~");
    // A missing key is the object's fault, as the gateway names it.
    const missing = issue.message === "missing";
    const field = fieldOf(missing ? parts.slice(0, -1).join("/") : issue.path);
    let text = missing ? `\`${last}\` is missing` : issue.message;
    if (text.startsWith("longer than ")) {
      const value = at(params, issue.path);
      const count = typeof value === "string" ? [...value].length : 0;
      text = `${count} characters long; the cap is ${text.slice("longer than ".length).replace(" characters", "")}`;
    }
    throw fail(field === "" ? refusals.badParams(method, text) : refusals.badParam(method, field, text));
  }
  return params;
}

/**
 * A query string's parameters, refusing unknown and repeated ones as the
 * gateway does (in this fake's words, not the gateway's decoder's).
 */
export function queryOf(search: URLSearchParams, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const refused = (why: string) => fail(refusals.badQuery(why));
  for (const [key, value] of search) {
    if (!allowed.includes(key)) {
      throw refused(`${key}: not a parameter of this stream (it takes ${allowed.map((a) => `\`${a}\``).join(", ")})`);
    }
    if (key in out) throw refused(`${key}: given twice`);
    const cap = key === "types" ? 2048 : key === "sessionKey" ? 256 : 128;
    if ([...value].length > cap) throw refused(`${key}: longer than ${cap} characters`);
    out[key] = value;
  }
  return out;
}
