// A run's artifacts: listed (`artifacts.list`), each with a download link
// (the URL `artifacts.download` gives; the browser's cookie authorises it),
// and text, logs, diffs and patches shown inline (diff lines coloured).

import { useState } from "preact/hooks";
import type { protocol as T } from "@talon/sdk";
import { useTalon } from "@talon/sdk-react";

import { at, ErrorLine, useAsync, when } from "../kit.js";

const INLINE = new Set<T.ArtifactType>(["diff", "patch", "log", "file"]);
const INLINE_MAX = 256 * 1024;

/** Whether an artifact is text worth showing inline. */
function inline(a: T.ArtifactSummary): boolean {
  if ((a.sizeBytes ?? 0) > INLINE_MAX) return false;
  const mime = a.mimeType ?? "";
  if (mime.startsWith("text/") || /diff|patch|json/.test(mime)) return true;
  return INLINE.has(a.type) && !/image|video|audio|zip|octet/.test(mime);
}

/** A diff's lines, each with the class of its kind. */
export function diffLines(text: string): { kind: "add" | "del" | "hunk" | "meta" | "same"; text: string }[] {
  return text.split("\n").map((line) => {
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") || line.startsWith("index "))
      return { kind: "meta", text: line };
    if (line.startsWith("@@")) return { kind: "hunk", text: line };
    if (line.startsWith("+")) return { kind: "add", text: line };
    if (line.startsWith("-")) return { kind: "del", text: line };
    return { kind: "same", text: line };
  });
}

function Inline(props: { url: string; type: T.ArtifactType }) {
  const text = useAsync(async (signal) => {
    const response = await fetch(props.url, { signal, credentials: "same-origin" });
    if (!response.ok) throw new Error(`the gateway answered ${response.status}`);
    return response.text();
  }, props.url);
  if (text.error) return <ErrorLine error={text.error} />;
  if (text.value === undefined) return <p class="muted">Loading…</p>;
  if (props.type === "diff" || props.type === "patch") {
    return (
      <pre tabIndex={0} class="code diff">
        {diffLines(text.value).map((l, i) => (
          <span key={i} class={`diff-${l.kind}`}>
            {l.text}
            {"\n"}
          </span>
        ))}
      </pre>
    );
  }
  return (
    <pre tabIndex={0} class={props.type === "log" ? "code log" : "code"}>
      {text.value}
    </pre>
  );
}

function ArtifactRow(props: { artifact: T.ArtifactSummary; url: string }) {
  const a = props.artifact;
  const [open, setOpen] = useState(false);
  return (
    <li class="artifact">
      <a href={props.url} download={a.title ?? a.id}>
        Download {a.title ?? a.id}
      </a>{" "}
      <span class="muted">
        {a.type}
        {a.mimeType ? `, ${a.mimeType}` : ""}
        {typeof a.sizeBytes === "number" ? `, ${a.sizeBytes} B` : ""}, {when(a.createdAt)}
      </span>{" "}
      {inline(a) && (
        <button
          type="button"
          class="link"
          aria-expanded={open}
          onClick={() => {
            setOpen(!open);
          }}
        >
          {open ? "Hide" : "Show"}
        </button>
      )}
      {open && <Inline url={props.url} type={a.type} />}
    </li>
  );
}

export function Artifacts(props: { runId: string; version: number }) {
  const talon = useTalon();
  const listed = useAsync(async (signal) => {
    const out: { artifact: T.ArtifactSummary; url: string }[] = [];
    for await (const a of talon.client.artifacts.list({ runId: props.runId }, { signal })) {
      const where = await talon.client.artifacts.download(a.id, { runId: props.runId }, { signal });
      out.push({ artifact: a, url: at(where.url) });
    }
    return out;
  }, `${props.runId}:${props.version}`);
  if (listed.error) return <ErrorLine error={listed.error}>Listing the artifacts failed: </ErrorLine>;
  if (!listed.value) return <p class="muted">Loading…</p>;
  if (listed.value.length === 0) return <p class="muted">None yet.</p>;
  return (
    <ul class="artifacts">
      {listed.value.map(({ artifact, url }) => (
        <ArtifactRow key={artifact.id} artifact={artifact} url={url} />
      ))}
    </ul>
  );
}
