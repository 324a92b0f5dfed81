// `/sessions/{id}`: one session's messages (`useSession`, kept fresh from
// the log), and, when the sign-in may write sessions, send, fork, compact
// and abort. The session is found by id in `sessions.list` (for its key,
// which the log is filtered by).

import { useEffect, useMemo, useState } from "preact/hooks";
import type { protocol as T } from "@talon/sdk";
import { useEvents, useSession, useTalon } from "@talon/sdk-react";

import { at, ErrorLine, lacks, navigate, useAsync, useCan, when } from "../kit.js";

function Messages(props: { info: T.Session }) {
  const talon = useTalon();
  const canWrite = useCan("session.write");
  const handle = useMemo(() => talon.sessionById(props.info.id), [talon, props.info.id]);
  const session = useSession(handle);
  // A session known by id is not followed by useSession: its log (by key) says when to list again.
  const log = useEvents({
    sessionKey: props.info.key,
    agentId: props.info.agentId,
    types: ["run.started", "assistant.message", "run.completed", "run.failed", "run.cancelled", "session.compacted"],
    limit: 1,
  });
  const last = log.events.at(-1)?.id;
  useEffect(() => {
    if (last !== undefined) void session.refresh();
  }, [last]);
  const [input, setInput] = useState("");
  const [error, setError] = useState<unknown>();
  const act = (what: () => Promise<unknown>) => {
    setError(undefined);
    what().catch((e: unknown) => {
      setError(e);
    });
  };
  return (
    <>
      <ErrorLine error={session.error ?? log.error} />
      <ol class="messages" aria-live="polite">
        {session.messages.map((m) => (
          <li key={m.id} class={`message message-${m.role}`}>
            <span class="role">{m.role}</span> <span class="muted">{when(m.createdAt)}</span>
            {m.text && <p>{m.text}</p>}
            {m.toolCalls?.map((c) => (
              <p key={c.id} class="muted">
                calls {c.name}
              </p>
            ))}
            {m.runId && (
              <a class="muted" href={at(`/runs/${encodeURIComponent(m.runId)}`)}>
                its run
              </a>
            )}
          </li>
        ))}
      </ol>
      {canWrite ? (
        <>
          <form
            class="send"
            onSubmit={(e) => {
              e.preventDefault();
              if (!input.trim()) return;
              act(async () => {
                await session.send(input);
                setInput("");
              });
            }}
          >
            <label class="grow">
              Message
              <textarea
                rows={2}
                value={input}
                onInput={(e) => {
                  setInput(e.currentTarget.value);
                }}
              />
            </label>
            <button type="submit" disabled={!input.trim()}>
              Send
            </button>
          </form>
          <div class="actions">
            <button
              type="button"
              onClick={() => {
                act(async () => {
                  const fork = await talon.client.sessions.fork(props.info.id, {});
                  navigate(`/sessions/${encodeURIComponent(fork.id)}`);
                });
              }}
            >
              Fork
            </button>
            <button
              type="button"
              onClick={() => {
                act(() => talon.client.sessions.compact(props.info.id, {}));
              }}
            >
              Compact
            </button>
            <button
              type="button"
              class="danger"
              onClick={() => {
                act(() => talon.client.sessions.abort(props.info.id, {}));
              }}
            >
              Abort its runs
            </button>
          </div>
        </>
      ) : (
        <p class="muted">{lacks("session.write")} Sending, forking, compacting and aborting are not offered.</p>
      )}
      <ErrorLine error={error} />
    </>
  );
}

export default function SessionDetail(props: { id: string }) {
  const talon = useTalon();
  const found = useAsync(async (signal) => {
    for await (const s of talon.client.sessions.list({}, { signal })) if (s.id === props.id) return s;
    return null;
  }, props.id);
  const info = found.value;
  return (
    <>
      <h1>Session {info ? <code>{info.key}</code> : <code>{props.id}</code>}</h1>
      <ErrorLine error={found.error} />
      {info === null && <p>No session has this id (or this sign-in may not see it).</p>}
      {info && (
        <>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{info.id}</code>
            </dd>
            <dt>Agent</dt>
            <dd>{info.agentId}</dd>
            <dt>Created</dt>
            <dd>{when(info.createdAt)}</dd>
            <dt>Runs</dt>
            <dd>
              <a href={at(`/?session=${encodeURIComponent(info.id)}`)}>Filter the runs by this session</a>
            </dd>
          </dl>
          <Messages info={info} />
        </>
      )}
    </>
  );
}
