// The dashboard's entry: signing in from a login link (`/login#code=…`),
// the session check on every start, the shell (navigation, the inbox's
// live count, signing out) and the route's view, each loaded on demand
// (one chunk per view). Everything reaches the gateway through @talon/sdk
// with no token: the browser sends the gateway's HttpOnly cookie, on the
// calls (HTTP) and on the upgrade of the one WebSocket the streams ride.

import "./style.css";
import { render, type ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

import {
  allows,
  at,
  BASE,
  closeStreams,
  currentGrant,
  type Grant,
  GrantContext,
  interceptLinks,
  lazy,
  loginFragment,
  navigate,
  openStreams,
  pageSocket,
  type Route,
  routeOf,
  signIn,
  SignInError,
  signOut,
  Suspense,
  Talon,
  TalonProvider,
  useApprovals,
  usePath,
  useQuestions,
  useTalon,
} from "./kit.js";

// Calls are plain HTTP requests; every live list's stream is a subscription
// on the page's one WebSocket (`pageSocket`), not an SSE response of its own.
const talon = new Talon({ baseUrl: location.origin + BASE, streams: "websocket", webSocket: pageSocket });

const Runs = lazy(() => import("./views/runs.js"));
const RunDetail = lazy(() => import("./views/run.js"));
const Inbox = lazy(() => import("./views/inbox.js"));
const Approve = lazy(() => import("./views/approve.js"));
const Sessions = lazy(() => import("./views/sessions.js"));
const SessionDetail = lazy(() => import("./views/session.js"));
const Tasks = lazy(() => import("./views/tasks.js"));
const Agents = lazy(() => import("./views/agents.js"));
const Environments = lazy(() => import("./views/environments.js"));
const Health = lazy(() => import("./views/health.js"));
const Usage = lazy(() => import("./views/usage.js"));

const TITLES: Record<Route["view"], string> = {
  runs: "Runs",
  login: "Sign in",
  run: "Run",
  inbox: "Inbox",
  approve: "Approval",
  sessions: "Sessions",
  session: "Session",
  tasks: "Tasks",
  agents: "Agents and tools",
  environments: "Environments",
  health: "Health",
  usage: "Usage",
  missing: "Not found",
};

type Auth = { state: "checking" } | { state: "in"; grant: Grant } | { state: "out"; message?: string };

function App() {
  const path = usePath();
  const route = routeOf(path);
  const [auth, setAuth] = useState<Auth>({ state: "checking" });
  useEffect(() => {
    document.title = `${TITLES[route.view]} · Talon`;
  }, [route.view]);
  useEffect(() => {
    if (route.view === "login") return;
    let live = true;
    currentGrant().then(
      (grant) => {
        if (live) setAuth({ state: "in", grant });
      },
      (error: unknown) => {
        if (!live) return;
        const message = error instanceof SignInError && error.status === 401 ? undefined : String(error);
        setAuth(message === undefined ? { state: "out" } : { state: "out", message });
      },
    );
    return () => {
      live = false;
    };
  }, [route.view === "login"]);

  if (route.view === "login") {
    return (
      <Login
        onSignedIn={(grant, next) => {
          setAuth({ state: "in", grant });
          navigate(next, true);
        }}
      />
    );
  }
  if (auth.state === "checking") {
    return (
      <main class="center">
        <p>Checking the sign-in…</p>
      </main>
    );
  }
  if (auth.state === "out") return <SignedOut message={auth.message} />;
  return (
    <GrantContext.Provider value={auth.grant}>
      <TalonProvider talon={talon}>
        {route.view === "approve" ? (
          <main class="phone">
            <Suspense fallback={<p>Loading…</p>}>
              <Approve id={route.id} />
            </Suspense>
          </main>
        ) : (
          <Shell
            grant={auth.grant}
            current={route.view}
            onSignOut={() => {
              void signOut().finally(() => {
                setAuth({ state: "out", message: "You signed out." });
              });
            }}
          >
            <Suspense fallback={<p>Loading…</p>}>
              <View route={route} />
            </Suspense>
          </Shell>
        )}
      </TalonProvider>
    </GrantContext.Provider>
  );
}

function View(props: { route: Route }) {
  const route = props.route;
  switch (route.view) {
    case "runs":
      return <Runs />;
    case "run":
      return <RunDetail key={route.id} id={route.id} />;
    case "inbox":
      return <Inbox />;
    case "sessions":
      return <Sessions />;
    case "session":
      return <SessionDetail key={route.id} id={route.id} />;
    case "tasks":
      return <Tasks />;
    case "agents":
      return <Agents />;
    case "environments":
      return <Environments />;
    case "health":
      return <Health />;
    case "usage":
      return <Usage />;
    default:
      return (
        <>
          <h1>Not found</h1>
          <p>
            Nothing lives at this address. <a href={at("/")}>See the runs.</a>
          </p>
        </>
      );
  }
}

const NAV: [string, Route["view"], string][] = [
  ["/", "runs", "Runs"],
  ["/inbox", "inbox", "Inbox"],
  ["/sessions", "sessions", "Sessions"],
  ["/tasks", "tasks", "Tasks"],
  ["/agents", "agents", "Agents"],
  ["/environments", "environments", "Environments"],
  ["/usage", "usage", "Usage"],
  ["/health", "health", "Health"],
];

const SECTION: Partial<Record<Route["view"], Route["view"]>> = { run: "runs", session: "sessions" };

function Shell(props: { grant: Grant; current: Route["view"]; onSignOut: () => void; children: ComponentChildren }) {
  const section = SECTION[props.current] ?? props.current;
  return (
    <>
      <a class="skip" href="#main">
        Skip to the content
      </a>
      <header class="top">
        <span class="brand">Talon</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([href, view, label]) => (
              <li key={href}>
                <a href={at(href)} aria-current={section === view ? "page" : undefined}>
                  {label}
                  {view === "inbox" && <InboxCount />}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who" title={props.grant.scopes.join(", ")}>
          {allows(props.grant, "agent.run") ? "Signed in" : "Signed in (read-only)"}
        </span>
        <button type="button" class="link" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {props.children}
      </main>
    </>
  );
}

/** The inbox's live count: pending approvals and questions. */
function InboxCount() {
  const approvals = useApprovals();
  const questions = useQuestions(useTalon());
  const count = approvals.approvals.length + questions.questions.length;
  return (
    <span class={count > 0 ? "count count-on" : "count"} aria-live="polite" aria-atomic="true">
      <span class="visually-hidden"> (pending: </span>
      {count}
      <span class="visually-hidden">)</span>
    </span>
  );
}

function Login(props: { onSignedIn: (grant: Grant, next: string) => void }) {
  const [failure, setFailure] = useState<string | undefined>();
  useEffect(() => {
    const { code, next } = loginFragment(location.hash);
    // The code leaves the address bar (and history) at once.
    history.replaceState(null, "", "/login");
    if (!code) {
      setFailure("This sign-in link has no code.");
      return;
    }
    signIn(code).then(
      (grant) => {
        props.onSignedIn(grant, next);
      },
      (error: unknown) => {
        setFailure(error instanceof Error ? error.message : String(error));
      },
    );
  }, []);
  return (
    <main class="center">
      <h1>Sign in to Talon</h1>
      {failure === undefined ? (
        <p aria-live="polite">Signing in…</p>
      ) : (
        <>
          <p class="error" role="alert">
            Signing in failed: {failure}
          </p>
          <p>
            A sign-in link works once, for 15 minutes. Run <code>talon dashboard</code> on the gateway's host for a new
            one.
          </p>
        </>
      )}
    </main>
  );
}

function SignedOut(props: { message: string | undefined }) {
  return (
    <main class="center">
      <h1>Signed out</h1>
      {props.message && <p>{props.message}</p>}
      <p>
        This dashboard opens with a sign-in link. <code>talon gateway</code> prints one when it starts, and{" "}
        <code>talon dashboard</code> prints a new one (<code>talon dashboard --preset observer</code> for a read-only
        sign-in).
      </p>
    </main>
  );
}

interceptLinks(document);
window.addEventListener("pagehide", () => {
  closeStreams(talon);
});
window.addEventListener("pageshow", openStreams);
const root = document.getElementById("app");
if (root) render(<App />, root);
