// `/environments`: the managed environments (`environments.list`): provider,
// status, sandbox and network policy (from its capabilities and settings),
// and its workspace (kept after the environment is deleted when the
// provider retains it). Environments have no events; Refresh reads again.

import type { protocol as T } from "@talon/sdk";
import { useTalon } from "@talon/sdk-react";

import { Badge, ErrorLine, json, useAsync, when } from "../kit.js";

function network(settings: unknown): string {
  if (typeof settings !== "object" || settings === null) return "–";
  const s = settings as { network?: unknown; networkPolicy?: unknown };
  const policy = s.networkPolicy ?? s.network;
  return policy === undefined ? "–" : json(policy);
}

export default function Environments() {
  const talon = useTalon();
  const list = useAsync(async (signal) => {
    const out: T.Environment[] = [];
    for await (const e of talon.client.environments.list({}, { signal })) out.push(e);
    return out;
  }, "environments");
  return (
    <>
      <h1>Environments</h1>
      <button type="button" onClick={list.reload} disabled={list.loading}>
        Refresh
      </button>
      <ErrorLine error={list.error} />
      {list.value?.length === 0 && <p class="muted">No environment.</p>}
      {list.value && list.value.length > 0 && (
        <table>
          <caption class="visually-hidden">Environments</caption>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Provider</th>
              <th scope="col">Status</th>
              <th scope="col">Sandbox</th>
              <th scope="col">Network policy</th>
              <th scope="col">Workspace</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.value.map((e) => (
              <tr key={e.id}>
                <td>
                  <code>{e.id}</code>
                </td>
                <td>{e.provider}</td>
                <td>
                  <Badge status={e.status} />
                  {e.detail && <div class="muted">{e.detail}</div>}
                </td>
                <td>{e.capabilities.sandbox ? "yes" : "no"}</td>
                <td>{e.capabilities.networkPolicy ? network(e.settings) : "not enforced"}</td>
                <td>{e.workspace ? <code>{e.workspace}</code> : "–"}</td>
                <td>{when(e.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
