// The task tree: background tasks as parents and children (a sub-agent's
// run that spawned another: the child's `runId` is the parent's
// `childRunId`), newest root first, children oldest first. Pure.

import type { protocol as T } from "@talon/sdk";

export interface TaskNode {
  readonly task: T.Task;
  readonly children: readonly TaskNode[];
}

/** `tasks` as a forest: roots are tasks whose starting run no listed task tracks. */
export function taskTree(tasks: readonly T.Task[]): TaskNode[] {
  const byChildRun = new Map<string, T.Task>();
  for (const t of tasks) if (t.childRunId) byChildRun.set(t.childRunId, t);
  const children = new Map<string, T.Task[]>();
  const roots: T.Task[] = [];
  for (const t of tasks) {
    const parent = t.runId ? byChildRun.get(t.runId) : undefined;
    if (parent && parent.id !== t.id) {
      const list = children.get(parent.id) ?? [];
      list.push(t);
      children.set(parent.id, list);
    } else roots.push(t);
  }
  const seen = new Set<string>();
  const node = (task: T.Task): TaskNode => {
    seen.add(task.id);
    const kids = (children.get(task.id) ?? [])
      .filter((k) => !seen.has(k.id))
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    return { task, children: kids.map(node) };
  };
  return [...roots].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map(node);
}
