// The HTTP transport: `POST /v1/<method>` with the params as the JSON
// body and the bearer token in the `Authorization` header (never in a
// URL). It owns the call path's rules: a method the table marks
// `unsupported` throws without a request; a write that takes an
// idempotency key gets one when the caller gave none; reads and keyed
// writes are retried on a retryable error after the gateway's
// `retryAfterMs` (or `Retry-After`) or an exponential backoff with
// jitter; every call has a deadline and honours its `AbortSignal`; an
// answer is checked against the method's result schema.

import { TalonError, aborted, unsupported } from "./errors.js";
import type { CallOptions, Caller } from "./generated/client.js";
import { METHODS, type MethodInfo, type MethodName, type MethodTypes } from "./generated/methods.js";
import { ERROR_HTTP_STATUS, RETRYABLE_CODES, type ApiError, type ErrorCode } from "./generated/types.js";
import { validate } from "./validate.js";

/** How a client reaches its gateway. */
export interface ClientOptions {
  /** The gateway's base URL, e.g. `http://127.0.0.1:7777`. */
  baseUrl: string;
  /** A bearer token (`talon_…`), or a function that gives the current one. */
  token?: string | (() => string | Promise<string>);
  /** Retries of a retryable failure, per call (default 2). */
  maxRetries?: number;
  /** A call's deadline in milliseconds, retries included (default 60 000). */
  timeoutMs?: number;
  /** The first backoff in milliseconds (default 200), doubled per retry up to 5 000. */
  initialBackoffMs?: number;
  /** The longest `Retry-After` the client waits for (default 30 000); longer ones fail. */
  maxRetryAfterMs?: number;
  /** Check answers against the protocol's schemas (default true). */
  validate?: boolean;
  /** The `fetch` to use (default the global one). */
  fetch?: typeof fetch;
  /** Headers sent with every request (an `x-request-id`, a user agent). */
  headers?: Record<string, string>;
  /**
   * Opens the WebSocket to `url` (`ws(s)://…/v1/ws`) for the WebSocket
   * transport and its subscriptions (default `new WebSocket(url)`): a page
   * may hold it back while it is hidden, a test may count or cut it. The
   * client sends the `auth` frame itself once it opens.
   */
  webSocket?: (url: URL) => WebSocket | Promise<WebSocket>;
}

const DEFAULTS = {
  maxRetries: 2,
  timeoutMs: 60_000,
  initialBackoffMs: 200,
  maxBackoffMs: 5_000,
  maxRetryAfterMs: 30_000,
};

/** A fresh idempotency key: `sdk-` and 32 hex digits. */
export function idempotencyKey(): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return `sdk-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Why a request did not reach the gateway at `url`, naming the likely
 * cause: from a page on another origin a refused CORS request looks like
 * a network error, so the page's origin is named with the config key that
 * lets it in.
 */
export function unreachable(url: URL, cause: unknown): string {
  const said = `the gateway at ${url.origin} could not be reached: ${String(cause)}`;
  const page = (globalThis as { location?: { origin?: unknown } }).location?.origin;
  if (typeof page !== "string" || page === "null" || page === url.origin) return said;
  return (
    `${said}. From this page (${page}) the likely cause is the browser's CORS check: ` +
    `the gateway answers pages of another origin only when it is listed in gateway.security.allowedOrigins`
  );
}

/** The gateway's base URL, checked and without a trailing slash. */
export function baseUrlOf(text: string): URL {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch (cause) {
    throw new TalonError(`the gateway URL ${JSON.stringify(text)} is not a URL`, { code: "invalid_request", cause });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TalonError(`the gateway URL must be http or https, not ${url.protocol}`, { code: "invalid_request" });
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new TalonError("the gateway URL must not carry credentials, a query or a fragment", {
      code: "invalid_request",
    });
  }
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  return url;
}

/** Waits `ms`, or rejects when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A deadline: a signal that aborts with the caller's `signal` or after `timeoutMs`. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Stops its timer (the call is over). */
  clear(): void;
}

/**
 * A deadline. Its timer is an ordinary one (unlike `AbortSignal.timeout`'s,
 * it keeps Node's event loop alive while a call waits), cleared by `clear`.
 */
export function deadline(signal: AbortSignal | undefined, timeoutMs: number): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, "TimeoutError"));
  }, timeoutMs);
  const onAbort = () => {
    controller.abort(signal?.reason);
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    },
  };
}

/** The error a non-success answer carries: the protocol's, or one made from the status. */
export async function errorOf(response: Response, method: string): Promise<TalonError> {
  const requestId = response.headers.get("x-request-id") ?? undefined;
  const header = response.headers.get("retry-after");
  const seconds = header === null ? NaN : Number(header.trim());
  const retryAfterMs = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
  let text = "";
  try {
    text = await response.text();
  } catch {
    // A body cut off: the status says what happened.
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = (body as { error?: unknown } | undefined)?.error;
  if (error !== undefined && validate("ApiError", error) === undefined) {
    const api = error as ApiError;
    return TalonError.fromApiError(
      { ...api, retryAfterMs: api.retryAfterMs ?? retryAfterMs ?? null },
      { status: response.status, method, requestId },
    );
  }
  const code = codeOfStatus(response.status);
  return new TalonError(`HTTP ${response.status}: ${text.slice(0, 512).trim()}`, {
    code,
    retryable: RETRYABLE_CODES.includes(code),
    retryAfterMs,
    status: response.status,
    method,
    requestId,
  });
}

function codeOfStatus(status: number): ErrorCode {
  const found = (Object.keys(ERROR_HTTP_STATUS) as ErrorCode[]).find(
    (code) => code !== "unknown" && ERROR_HTTP_STATUS[code] === status,
  );
  return found ?? (status >= 500 ? "unavailable" : "invalid_request");
}

/** Calls the gateway's methods over HTTP. */
export class HttpCaller implements Caller {
  readonly base: URL;
  readonly #options: ClientOptions;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.base = baseUrlOf(options.baseUrl);
    this.#options = options;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The headers of a request: the bearer token and the client's own. */
  async headers(extra: Record<string, string> = {}): Promise<Record<string, string>> {
    const token = typeof this.#options.token === "function" ? await this.#options.token() : this.#options.token;
    return {
      ...this.#options.headers,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...extra,
    };
  }

  /** `path` under the gateway's base, refusing one that would leave its origin. */
  url(path: string): URL {
    const url = new URL(path.replace(/^\/+/, ""), this.base);
    if (url.origin !== this.base.origin) {
      throw new TalonError(`refusing ${url.origin}: the token goes to the gateway's origin only`, {
        code: "invalid_request",
      });
    }
    return url;
  }

  /** The fetch this client uses. */
  get fetch(): typeof fetch {
    return this.#fetch;
  }

  /** How long to wait before retry number `retry` (1-based), or undefined to give up. */
  delay(retry: number, error: unknown, maxRetries: number): number | undefined {
    if (!(error instanceof TalonError) || !error.retryable || retry > maxRetries) return undefined;
    const maxAfter = this.#options.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs;
    if (error.retryAfterMs !== undefined) return error.retryAfterMs <= maxAfter ? error.retryAfterMs : undefined;
    const first = this.#options.initialBackoffMs ?? DEFAULTS.initialBackoffMs;
    const capped = Math.min(first * 2 ** Math.min(retry - 1, 16), DEFAULTS.maxBackoffMs);
    // Up to a quarter of jitter, so that clients cut off together do not come back together.
    return capped + Math.random() * capped * 0.25;
  }

  async call<M extends MethodName>(
    method: M,
    params: MethodTypes[M]["params"],
    options: CallOptions = {},
  ): Promise<MethodTypes[M]["result"]> {
    // Any row of the table: the rules below hold for every method, not just today's.
    const info: MethodInfo = METHODS[method];
    if (info.stability === "unsupported") throw unsupported(method);
    let body = params as { idempotencyKey?: string | null };
    if (info.effect === "write" && info.idempotencyKey && !body.idempotencyKey) {
      body = { ...body, idempotencyKey: idempotencyKey() };
    }
    const safe = info.effect === "read" || info.idempotencyKey;
    const maxRetries = safe ? (options.maxRetries ?? this.#options.maxRetries ?? DEFAULTS.maxRetries) : 0;
    const limit = deadline(options.signal, options.timeoutMs ?? this.#options.timeoutMs ?? DEFAULTS.timeoutMs);
    const signal = limit.signal;
    const text = JSON.stringify(body);
    try {
      for (let retry = 1; ; retry++) {
        try {
          return (await this.send(method, info.result, text, signal)) as MethodTypes[M]["result"];
        } catch (error) {
          if (signal.aborted) throw this.#abortError(method, options.signal, signal.reason);
          const wait = this.delay(retry, error, maxRetries);
          if (wait === undefined) throw error;
          try {
            await sleep(wait, signal);
          } catch (reason) {
            throw this.#abortError(method, options.signal, reason);
          }
        }
      }
    } finally {
      limit.clear();
    }
  }

  #abortError(method: string, callers: AbortSignal | undefined, reason: unknown): unknown {
    // The caller's own abort rejects with its reason, as `fetch` does.
    return callers?.aborted ? callers.reason : aborted(method, reason);
  }

  /**
   * Sends one call and gives its checked result (the transport's part; the
   * rules around it are `call`'s). `POST /v1/<method>` here.
   */
  protected async send(method: string, resultSchema: string, body: string, signal: AbortSignal): Promise<unknown> {
    let response: Response;
    try {
      const headers = await this.headers({ "content-type": "application/json", accept: "application/json" });
      signal.throwIfAborted();
      response = await this.#fetch(this.url(`v1/${method}`), {
        method: "POST",
        headers,
        body,
        signal,
      });
    } catch (cause) {
      if (signal.aborted || cause instanceof TalonError) throw cause;
      throw new TalonError(unreachable(this.base, cause), {
        code: "unavailable",
        retryable: true,
        method,
        cause,
      });
    }
    if (!response.ok) throw await errorOf(response, method);
    let value: unknown;
    try {
      value = await response.json();
    } catch (cause) {
      if (signal.aborted) throw cause;
      throw new TalonError(`the answer to ${method} is not JSON`, { code: "internal", method, cause });
    }
    return this.checked(method, resultSchema, value);
  }

  /** `value` if it follows the protocol's `resultSchema` (when validation is on). */
  protected checked(method: string, resultSchema: string, value: unknown): unknown {
    if (this.#options.validate !== false) {
      const issue = validate(resultSchema, value);
      if (issue) {
        throw new TalonError(
          `the answer to ${method} does not follow the protocol at ${issue.path || "/"}: ${issue.message}`,
          {
            code: "internal",
            method,
            details: { field: issue.path || "/", detail: issue.message },
          },
        );
      }
    }
    return value;
  }
}
