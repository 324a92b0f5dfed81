// `/tasks`: background tasks as a tree of parents and children
// (`taskTree`), live (`useTasks`, which follows the log's `task.updated`):
// status, progress, result or error; cancel; the notification policy.

import { useMemo, useState } from "preact/hooks";
import { NOTIFY_POLICIES, TASK_TERMINAL_STATUSES } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";
import { useTalon, useTasks } from "@talon/sdk-react";

import { at, Badge, ErrorLine, lacks, useCan, when } from "../kit.js";
import { taskTree, type TaskNode } from "../tasktree.js";

function TaskItem(props: { node: TaskNode; cancel: (t: T.Task) => Promise<unknown> }) {
  const talon = useTalon();
  const t = props.node.task;
  const can = useCan("task.write");
  const [error, setError] = useState<unknown>();
  const ended = TASK_TERMINAL_STATUSES.includes(t.status);
  return (
    <li class="task" data-task-id={t.id}>
      <div class="task-line">
        <Badge status={t.status} /> <strong>{t.label ?? t.description ?? t.command ?? t.id}</strong>{" "}
        <span class="muted">
          {t.kind}, {when(t.createdAt)}
        </span>
        {t.childRunId && (
          <>
            {" "}
            <a href={at(`/runs/${encodeURIComponent(t.childRunId)}`)}>its run</a>
          </>
        )}
        {t.runId && (
          <>
            {" "}
            <a href={at(`/runs/${encodeURIComponent(t.runId)}`)}>started by</a>
          </>
        )}
      </div>
      {t.progressSummary && (
        <pre tabIndex={0} class="code">
          {t.progressSummary}
        </pre>
      )}
      {t.result && <p>Result: {t.result}</p>}
      {t.error && <p class="error">{t.error.message}</p>}
      <div class="actions">
        <label>
          Notify
          <select
            value={t.notifyPolicy}
            disabled={!can || ended}
            title={can ? undefined : lacks("task.write")}
            onChange={(e) => {
              talon.client.tasks
                .notify(t.id, { notifyPolicy: e.currentTarget.value as T.NotifyPolicy })
                .catch((failure: unknown) => {
                  setError(failure);
                });
            }}
          >
            {NOTIFY_POLICIES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        {!ended && (
          <button
            type="button"
            class="danger"
            disabled={!can}
            title={can ? undefined : lacks("task.write")}
            onClick={() => {
              props.cancel(t).catch((failure: unknown) => {
                setError(failure);
              });
            }}
          >
            Cancel
          </button>
        )}
      </div>
      <ErrorLine error={error} />
      {props.node.children.length > 0 && (
        <ul class="tree">
          {props.node.children.map((child) => (
            <TaskItem key={child.task.id} node={child} cancel={props.cancel} />
          ))}
        </ul>
      )}
    </li>
  );
}

export default function Tasks() {
  const tasks = useTasks();
  const tree = useMemo(() => taskTree(tasks.tasks), [tasks.tasks]);
  return (
    <>
      <h1>Tasks</h1>
      <ErrorLine error={tasks.error}>Following the tasks failed: </ErrorLine>
      {tasks.status === "loading" ? (
        <p class="muted">Loading…</p>
      ) : tree.length === 0 ? (
        <p class="muted">No background task.</p>
      ) : (
        <ul class="tree">
          {tree.map((node) => (
            <TaskItem key={node.task.id} node={node} cancel={(t) => tasks.cancel(t)} />
          ))}
        </ul>
      )}
    </>
  );
}
