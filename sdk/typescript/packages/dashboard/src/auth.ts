// Signing in and out: the one-time code of a login link exchanged for the
// gateway's HttpOnly cookie (`POST /v1/dashboard/login`), the session the
// cookie stands for (`GET /v1/dashboard/session`), signing out (`POST
// /v1/dashboard/logout`), where to go after signing in (`safeNext`), and
// what the session's scopes allow (`GrantContext`, `useCan`). The page never
// sees, stores or sends a token: the browser sends the cookie.

import { createContext } from "preact";
import { useContext } from "preact/hooks";

import { at } from "./router.js";

/** What the gateway says about the browser's credential. */
export interface Grant {
  readonly tokenId: string;
  readonly scopes: readonly string[];
  readonly expiresAt: number;
}

/** Why signing in (or reading the session) failed, as the gateway said it. */
export class SignInError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(message: string, status: number, code: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * Where to go after signing in: `next` when it is a path on this origin
 * (`/…`, but not `//host` or `/\host`, which browsers read as another
 * host), else `/`.
 */
export function safeNext(next: string | null | undefined): string {
  if (typeof next !== "string" || !next.startsWith("/")) return "/";
  if (next.startsWith("//") || next.startsWith("/\\")) return "/";
  // No control characters (a tab or newline inside `//` would be dropped by URL parsing).
  for (const char of next) {
    const code = char.charCodeAt(0);
    if (code < 0x20 || code === 0x7f) return "/";
  }
  return next;
}

/** The code and `next` of a login link's fragment (`#code=lgn_…&next=/runs/run_x`). */
export function loginFragment(hash: string): { code: string | undefined; next: string } {
  const params = new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash);
  const code = params.get("code") ?? undefined;
  return { code: code === "" ? undefined : code, next: safeNext(params.get("next")) };
}

async function grantOf(response: Response): Promise<Grant> {
  if (!response.ok) {
    let message = `the gateway answered ${response.status}`;
    let code = "unknown";
    try {
      const body = (await response.json()) as { error?: { code?: unknown; message?: unknown } };
      if (typeof body.error?.message === "string") message = body.error.message;
      if (typeof body.error?.code === "string") code = body.error.code;
    } catch {
      // Not JSON: the status says it.
    }
    throw new SignInError(message, response.status, code);
  }
  const body = (await response.json()) as Partial<Grant>;
  return {
    tokenId: typeof body.tokenId === "string" ? body.tokenId : "",
    scopes: Array.isArray(body.scopes) ? body.scopes.filter((s): s is string => typeof s === "string") : [],
    expiresAt: typeof body.expiresAt === "number" ? body.expiresAt : 0,
  };
}

/** Exchanges a login code for the cookie. */
export async function signIn(code: string): Promise<Grant> {
  const response = await fetch(at("/v1/dashboard/login"), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ code }),
    credentials: "same-origin",
  });
  return grantOf(response);
}

/** The session the cookie stands for; `SignInError` with status 401 when there is none. */
export async function currentGrant(): Promise<Grant> {
  const response = await fetch(at("/v1/dashboard/session"), {
    headers: { accept: "application/json" },
    credentials: "same-origin",
  });
  return grantOf(response);
}

/** Signs out: the gateway revokes the credential and clears the cookie. */
export async function signOut(): Promise<void> {
  await fetch(at("/v1/dashboard/logout"), { method: "POST", credentials: "same-origin" });
}

/** Whether `grant` holds `scope` (`admin` holds every scope). */
export function allows(grant: Grant | null, scope: string): boolean {
  if (!grant) return false;
  return grant.scopes.includes("admin") || grant.scopes.includes(scope);
}

/** The signed-in session, for the views. */
export const GrantContext = createContext<Grant | null>(null);

/** Whether the session may use methods that need `scope`. */
export function useCan(scope: string): boolean {
  return allows(useContext(GrantContext), scope);
}

/** Why a button is missing or disabled, for its title. */
export function lacks(scope: string): string {
  return `This sign-in lacks the ${scope} scope.`;
}
