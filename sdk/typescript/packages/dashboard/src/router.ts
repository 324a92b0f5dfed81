// Client-side routing by `location.pathname`: which view a path names
// (`routeOf`, pure), the current path as a hook (`usePath`), and
// `navigate`, which pushes a history entry. Links are plain `<a href>`s
// made by `at`: `interceptLinks` turns their clicks into `navigate` (a
// modified click, a download or another origin's link is left to the
// browser). The views speak of app paths (`/runs/run_1`); under a base path
// (`gateway.controlUi.basePath`, which the gateway puts in the page's
// `<meta name="talon-base">`) the location is `BASE` + the app path.

import { useEffect, useState } from "preact/hooks";

/** A route: the view, and the id a path carries. */
export type Route =
  | { view: "runs" }
  | { view: "login" }
  | { view: "run"; id: string }
  | { view: "inbox" }
  | { view: "approve"; id: string }
  | { view: "sessions" }
  | { view: "session"; id: string }
  | { view: "tasks" }
  | { view: "agents" }
  | { view: "environments" }
  | { view: "health" }
  | { view: "usage" }
  | { view: "missing" };

const SIMPLE: Record<string, Route> = {
  "/": { view: "runs" },
  "/login": { view: "login" },
  "/inbox": { view: "inbox" },
  "/sessions": { view: "sessions" },
  "/tasks": { view: "tasks" },
  "/agents": { view: "agents" },
  "/environments": { view: "environments" },
  "/health": { view: "health" },
  "/usage": { view: "usage" },
};

/** The route a path names. */
export function routeOf(path: string): Route {
  const simple = SIMPLE[path];
  if (simple) return simple;
  const match = /^\/(runs|approve|sessions)\/([^/]+)$/.exec(path);
  if (match?.[1] && match[2]) {
    const id = decodeURIComponent(match[2]);
    if (match[1] === "runs") return { view: "run", id };
    if (match[1] === "approve") return { view: "approve", id };
    return { view: "session", id };
  }
  return { view: "missing" };
}

/** A base path as the page names it: `""`, or `/` and segments of unreserved characters. */
export function basePathOf(content: string | null | undefined): string {
  return content && /^(\/[A-Za-z0-9._~-]+)+$/.test(content) ? content : "";
}

/** The path prefix the gateway serves the dashboard under (`""` at the root). */
export const BASE: string = basePathOf(
  typeof document === "undefined"
    ? undefined
    : document.querySelector('meta[name="talon-base"]')?.getAttribute("content"),
);

/** Where an app path (or a gateway path, `/v1/…`) is, as a link or a request: under the base path. */
export function at(path: string): string {
  return BASE + path;
}

/** The app path of a location's path under `base`: the base taken off (`/` for the base itself). */
export function appPath(pathname: string, base: string = BASE): string {
  if (!base) return pathname;
  if (pathname === base) return "/";
  return pathname.startsWith(base + "/") ? pathname.slice(base.length) : pathname;
}

const listeners = new Set<() => void>();

function changed(): void {
  for (const listener of listeners) listener();
}

/** Goes to app path `path` (a new history entry), or replaces the current one. */
export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, "", at(path));
  else history.pushState(null, "", at(path));
  changed();
  if (!replace) window.scrollTo(0, 0);
}

/** The current path; the component renders again when it changes. */
export function usePath(): string {
  const [path, setPath] = useState(appPath(location.pathname));
  useEffect(() => {
    const update = () => {
      setPath(appPath(location.pathname));
    };
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return path;
}

/** Handles clicks on same-origin `<a href="/…">` links in the page. */
export function interceptLinks(root: Document): void {
  root.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const target = event.target instanceof Element ? event.target.closest("a") : null;
    if (!target || target.hasAttribute("download") || (target.target && target.target !== "_self")) return;
    const href = target.getAttribute("href");
    if (!href?.startsWith("/") || href.startsWith("//")) return;
    const path = appPath(new URL(href, location.href).pathname);
    if (path.startsWith("/v1/") || path === "/healthz" || path === "/metrics") return;
    event.preventDefault();
    const search = new URL(href, location.href).search;
    if (href !== location.pathname + location.search) navigate(path + search);
  });
}
