// `/sessions`: the sessions, most recently updated first (`sessions.list`,
// a page at a time), kept current by the log's `session.created` and
// `session.updated` events.

import { useMemo } from "preact/hooks";
import type { Talon, TalonError } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";
import { useTalon } from "@talon/sdk-react";

import { at, ErrorLine, Live, nowCursor, useLive, when } from "../kit.js";

interface SessionsState {
  readonly sessions: readonly T.Session[];
  readonly loading: boolean;
  readonly more: boolean;
  readonly error: TalonError | undefined;
}

class SessionsStore extends Live<SessionsState> {
  readonly #talon: Talon;
  #cursor: string | undefined;
  #next: string | undefined;

  constructor(talon: Talon) {
    super({ sessions: [], loading: true, more: false, error: undefined });
    this.#talon = talon;
  }

  protected async run(signal: AbortSignal): Promise<void> {
    if (this.#cursor === undefined) {
      this.#cursor = await nowCursor(this.#talon, signal);
      const page = await this.#talon.client.sessions.list({ limit: 100 }, { signal });
      this.#next = page.nextCursor ?? undefined;
      this.update({ sessions: page.sessions, loading: false, more: this.#next !== undefined, error: undefined });
    } else if (this.state.error) this.update({ error: undefined });
    this.connected();
    const types: T.EventType[] = ["session.created", "session.updated"];
    for await (const event of this.#talon.events({ after: this.#cursor, types, signal })) {
      if (signal.aborted) return;
      this.#cursor = event.id;
      if (event.type === "session.created" || event.type === "session.updated") {
        const rest = this.state.sessions.filter((s) => s.id !== event.data.id);
        this.update({ sessions: [event.data, ...rest] });
      }
    }
  }

  async more(): Promise<void> {
    if (this.#next === undefined) return;
    const page = await this.#talon.client.sessions.list({ limit: 100, cursor: this.#next });
    this.#next = page.nextCursor ?? undefined;
    const known = new Set(this.state.sessions.map((s) => s.id));
    this.update({
      sessions: [...this.state.sessions, ...page.sessions.filter((s) => !known.has(s.id))],
      more: this.#next !== undefined,
    });
  }

  protected failed(error: TalonError): void {
    this.update({ error, loading: false });
  }
}

export default function Sessions() {
  const talon = useTalon();
  const store = useMemo(() => new SessionsStore(talon), [talon]);
  const state = useLive(store);
  return (
    <>
      <h1>Sessions</h1>
      <ErrorLine error={state.error}>Following the sessions failed: </ErrorLine>
      {state.loading ? (
        <p class="muted">Loading…</p>
      ) : state.sessions.length === 0 ? (
        <p class="muted">No session.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Sessions, most recently updated first</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Agent</th>
              <th scope="col">Updated</th>
              <th scope="col">Forked from</th>
            </tr>
          </thead>
          <tbody>
            {state.sessions.map((s) => (
              <tr key={s.id}>
                <td>
                  <a href={at(`/sessions/${encodeURIComponent(s.id)}`)}>{s.key}</a>
                </td>
                <td>{s.agentId}</td>
                <td>{when(s.updatedAt)}</td>
                <td>
                  {s.parentId ? <a href={at(`/sessions/${encodeURIComponent(s.parentId)}`)}>{s.parentId}</a> : "–"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {state.more && (
        <button type="button" onClick={() => void store.more()}>
          Show more
        </button>
      )}
    </>
  );
}
