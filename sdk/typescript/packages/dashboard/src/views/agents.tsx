// `/agents`: each agent (`agents.list`) with its model and config, and its
// ToolSpace (`tools.list`): each tool's source, owner, approval policy,
// reach and flags. Agents and tools have no events; Refresh reads again.

import type { protocol as T } from "@talon/sdk";
import { useTalon } from "@talon/sdk-react";

import { ErrorLine, useAsync, when } from "../kit.js";

function flags(t: T.ToolSummary): string {
  const out: string[] = [t.effect];
  if (t.hostCapable) out.push("host");
  if (t.hidden) out.push("hidden");
  if (t.requiresApproval) out.push("asks");
  return out.join(", ");
}

function Tools(props: { agentId: string }) {
  const talon = useTalon();
  const list = useAsync(async (signal) => {
    const out: T.ToolSummary[] = [];
    for await (const t of talon.client.tools.list({ agentId: props.agentId }, { signal })) out.push(t);
    return out;
  }, props.agentId);
  if (list.error) return <ErrorLine error={list.error}>Listing the tools failed: </ErrorLine>;
  if (!list.value) return <p class="muted">Loading…</p>;
  return (
    <table>
      <caption>ToolSpace of {props.agentId}</caption>
      <thead>
        <tr>
          <th scope="col">Tool</th>
          <th scope="col">Source</th>
          <th scope="col">Approval</th>
          <th scope="col">Reach</th>
          <th scope="col">Flags</th>
        </tr>
      </thead>
      <tbody>
        {list.value.map((t) => (
          <tr key={t.id}>
            <td>
              <strong>{t.name}</strong>
              <div class="muted">
                <code>{t.id}</code>
              </div>
            </td>
            <td>
              {t.source} ({t.owner})
            </td>
            <td>{t.approval}</td>
            <td>{t.reach.join(", ")}</td>
            <td>{flags(t)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export default function Agents() {
  const talon = useTalon();
  const list = useAsync(async (signal) => {
    const out: T.Agent[] = [];
    for await (const a of talon.client.agents.list({}, { signal })) out.push(a);
    return out;
  }, "agents");
  return (
    <>
      <h1>Agents and tools</h1>
      <button type="button" onClick={list.reload} disabled={list.loading}>
        Refresh
      </button>
      <ErrorLine error={list.error} />
      {list.value?.map((a) => (
        <section key={a.id} class="agent" aria-labelledby={`agent-${a.id}`}>
          <h2 id={`agent-${a.id}`}>{a.name ?? a.id}</h2>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{a.id}</code>
            </dd>
            <dt>Model</dt>
            <dd>{a.model ?? "the default"}</dd>
            <dt>Defined in</dt>
            <dd>{a.source}</dd>
            <dt>Description</dt>
            <dd>{a.description ?? "–"}</dd>
            <dt>Updated</dt>
            <dd>{when(a.updatedAt)}</dd>
          </dl>
          <details>
            <summary>ToolSpace</summary>
            <Tools agentId={a.id} />
          </details>
        </section>
      ))}
    </>
  );
}
