// `/approve/{id}`: one approval on a page of its own, for a phone (the
// link a notification carries: it names the approval, never a credential).
// The approval is found among the pending ones (`useApprovals`, live) or,
// once decided, read with `approvals.get`.

import { useState } from "preact/hooks";
import { TalonError, type protocol as T } from "@talon/sdk";
import { useApprovals, useTalon } from "@talon/sdk-react";

import { at, ErrorLine, useAsync } from "../kit.js";
import { ApprovalCard } from "./decide.js";

export default function Approve(props: { id: string }) {
  const talon = useTalon();
  const inbox = useApprovals();
  const [decided, setDecided] = useState<T.Approval | undefined>();
  const pending = inbox.approvals.find((a) => a.id === props.id);
  const lookup = useAsync(
    async (signal) => {
      if (inbox.status === "loading" || pending) return undefined;
      try {
        return await talon.client.approvals.get(props.id, { signal });
      } catch (error) {
        if (error instanceof TalonError && error.code === "not_found") return null;
        throw error;
      }
    },
    `${props.id}:${inbox.status}:${String(pending === undefined)}`,
  );
  const approval = decided ?? pending ?? lookup.value ?? undefined;
  return (
    <>
      <h1>Approval</h1>
      <ErrorLine error={inbox.error ?? lookup.error} />
      {approval ? (
        <ApprovalCard
          approval={approval}
          decide={async (a, decision, reason) => {
            const done =
              decision === "deny"
                ? await inbox.deny(a, reason === undefined ? {} : { reason })
                : await inbox.approve(a, { decision });
            setDecided(done);
          }}
        />
      ) : lookup.value === null ? (
        <p>No approval has this id (or this sign-in may not see it).</p>
      ) : (
        <p class="muted">Loading…</p>
      )}
      <p>
        <a href={at("/inbox")}>Open the inbox</a>
      </p>
    </>
  );
}
