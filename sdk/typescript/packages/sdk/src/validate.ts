// The runtime validator: checks what arrives from outside (results, event
// payloads, error bodies) against the protocol's schemas, generated from
// the gateway's types (`generated/schemas.ts`). It reads the subset of JSON
// Schema those schemas use, tolerates what a newer gateway may add
// (unknown fields where the type allows them, an enum value or event type
// this client does not know), and is bounded: nesting deeper than
// `MAX_DEPTH` fails instead of overflowing the stack.

import { SCHEMAS } from "./generated/schemas.js";

/** How deep a value may nest before it is refused. */
export const MAX_DEPTH = 128;

/** Where a value fails its schema, and why. */
export interface ValidationIssue {
  /** A JSON Pointer to the failing part (`/events/3/data/callId`). */
  path: string;
  /** What is wrong there. */
  message: string;
}

type Schema = Readonly<Record<string, unknown>> | boolean;

function schemaOf(name: string): Schema | undefined {
  return SCHEMAS[name] as Schema | undefined;
}

/** Whether the protocol has a schema called `name` (`RunResult`, `TalonEvent`). */
export function hasSchema(name: string): boolean {
  return schemaOf(name) !== undefined;
}

/** How strictly to read a value. */
export interface ValidateOptions {
  /**
   * Refuse properties a type does not declare where its schema closes it
   * (a server reading params). Off by default: a client reading a newer
   * server's answer lets what it does not know through.
   */
  closed?: boolean;
}

/**
 * The first way `value` fails the protocol's schema `name`, or `undefined`
 * when it conforms.
 */
export function validate(name: string, value: unknown, options: ValidateOptions = {}): ValidationIssue | undefined {
  const schema = schemaOf(name);
  if (schema === undefined) return { path: "", message: `no schema named ${name}` };
  return check(schema, value, "", 0, options.closed === true);
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function matchesType(kind: string, actual: string): boolean {
  return kind === actual || (kind === "number" && actual === "integer");
}

function escape(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** An enum with a decoder's catch-all accepts any string (a newer server's value). */
function openEnum(values: readonly unknown[]): boolean {
  return values.includes("unknown") || values.includes("Unknown");
}

function check(
  schema: Schema,
  value: unknown,
  path: string,
  depth: number,
  closed: boolean,
): ValidationIssue | undefined {
  if (depth > MAX_DEPTH) return { path, message: `nested deeper than ${MAX_DEPTH}` };
  if (schema === true) return undefined;
  if (schema === false) return { path, message: "not allowed" };
  const ref = schema.$ref;
  if (typeof ref === "string") {
    const target = schemaOf(ref);
    if (target === undefined) return { path, message: `unknown schema ${ref}` };
    return check(target, value, path, depth + 1, closed);
  }
  if ("const" in schema && schema.const !== value) {
    return { path, message: `expected ${JSON.stringify(schema.const)}` };
  }
  const values = schema.enum;
  if (Array.isArray(values) && !values.includes(value)) {
    if (!(typeof value === "string" && openEnum(values))) {
      return { path, message: `expected one of ${values.map((v) => JSON.stringify(v)).join(", ")}` };
    }
  }
  const all = schema.allOf;
  if (Array.isArray(all)) {
    for (const part of all as Schema[]) {
      const issue = check(part, value, path, depth + 1, closed);
      if (issue) return issue;
    }
  }
  const any = schema.anyOf;
  if (Array.isArray(any)) {
    let first: ValidationIssue | undefined;
    for (const branch of any as Schema[]) {
      const issue = check(branch, value, path, depth + 1, closed);
      if (!issue) {
        first = undefined;
        break;
      }
      first ??= issue;
    }
    if (first) return first;
  }
  const one = schema.oneOf;
  if (Array.isArray(one)) {
    const issue = checkOneOf(one as Schema[], value, path, depth, closed);
    if (issue) return issue;
  }
  return checkShape(schema, value, path, depth, closed);
}

/**
 * A `oneOf`: exactly one branch must hold. A union discriminated by a
 * `type` constant (the event union) picks its branch by that constant, and
 * lets a type it does not list through (a newer server's event).
 */
function checkOneOf(
  branches: Schema[],
  value: unknown,
  path: string,
  depth: number,
  closed: boolean,
): ValidationIssue | undefined {
  const tags: unknown[] = branches.map((b): unknown => {
    if (typeof b !== "object") return undefined;
    const props = b.properties as Record<string, unknown> | undefined;
    const tag = props?.type;
    return typeof tag === "object" && tag !== null && "const" in tag ? tag.const : undefined;
  });
  if (tags.every((t) => t !== undefined) && value !== null && typeof value === "object") {
    const kind = (value as { type?: unknown }).type;
    const branch = branches[tags.findIndex((t) => t === kind)];
    if (branch === undefined) {
      return typeof kind === "string" ? undefined : { path: `${path}/type`, message: "expected a string" };
    }
    return check(branch, value, path, depth + 1, closed);
  }
  let held = 0;
  let first: ValidationIssue | undefined;
  for (const branch of branches) {
    const issue = check(branch, value, path, depth + 1, closed);
    if (issue) first ??= issue;
    else held += 1;
  }
  if (held === 1) return undefined;
  return held === 0 ? first : { path, message: "matches more than one alternative" };
}

function checkShape(
  schema: Readonly<Record<string, unknown>>,
  value: unknown,
  path: string,
  depth: number,
  closed: boolean,
): ValidationIssue | undefined {
  const actual = typeOf(value);
  const declared = schema.type;
  if (declared !== undefined) {
    const kinds = Array.isArray(declared) ? (declared as string[]) : [declared as string];
    if (!kinds.some((k) => matchesType(k, actual))) {
      return { path, message: `expected ${kinds.join(" or ")}, got ${actual}` };
    }
  }
  if (typeof value === "number") {
    const min = schema.minimum;
    const max = schema.maximum;
    if (typeof min === "number" && value < min) return { path, message: `below the minimum ${min}` };
    if (typeof max === "number" && value > max) return { path, message: `above the maximum ${max}` };
  }
  if (typeof value === "string") {
    const maxLength = schema.maxLength;
    const minLength = schema.minLength;
    // JSON Schema counts code points.
    const length = maxLength === undefined && minLength === undefined ? 0 : [...value].length;
    if (typeof maxLength === "number" && length > maxLength) {
      return { path, message: `longer than ${maxLength} characters` };
    }
    if (typeof minLength === "number" && length < minLength) {
      return { path, message: `shorter than ${minLength} characters` };
    }
  }
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    if (items !== undefined) {
      for (let i = 0; i < value.length; i++) {
        const issue = check(items, value[i], `${path}/${i}`, depth + 1, closed);
        if (issue) return issue;
      }
    }
  } else if (actual === "object") {
    return checkObject(schema, value as Record<string, unknown>, path, depth, closed);
  }
  return undefined;
}

function checkObject(
  schema: Readonly<Record<string, unknown>>,
  value: Record<string, unknown>,
  path: string,
  depth: number,
  closed: boolean,
): ValidationIssue | undefined {
  const required = schema.required;
  if (Array.isArray(required)) {
    for (const key of required as string[]) {
      if (!Object.prototype.hasOwnProperty.call(value, key)) {
        return { path: `${path}/${escape(key)}`, message: "missing" };
      }
    }
  }
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const extra = schema.additionalProperties as Schema | undefined;
  for (const key of Object.keys(value)) {
    const inner = Object.prototype.hasOwnProperty.call(properties, key) ? properties[key] : extra;
    if (inner === undefined || (inner === false && !closed)) continue;
    const issue = check(inner, value[key], `${path}/${escape(key)}`, depth + 1, closed);
    if (issue) return issue;
  }
  return undefined;
}
