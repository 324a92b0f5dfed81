// The methods that answer from what the test set or the runs asked:
// `approvals.respond` and `questions.respond` (the first answer wins, the
// others get `conflict` with the winner; a question's answer is checked
// against its choices first), `tools.invoke` (the result the test set for
// the tool), `environments.*` (the `local` provider, `ready` at once) and
// `agents.create`/`update` (API agents beside the config's `main`).

import { caps, type protocol as P, refusals } from "@talon/sdk";

import { fail, notFound } from "./errors.js";
import { State, now, scopedKey, sha256, type Caller } from "./state.js";
import { copy, json } from "./wire.js";

/** The longest tool reference `tools.invoke` takes, in bytes. */
const MAX_TOOL_BYTES = caps.MAX_TOOL_REF_BYTES;

/** `approvals.respond`: a decision the approval offers, taken once. */
export function respondApproval(state: State, p: P.ApprovalsRespondParams): P.Approval {
  const approval = state.approvals.find((a) => a.id === p.approvalId);
  if (!approval) throw notFound("approval", p.approvalId);
  if (!approval.decisions.includes(p.decision)) {
    throw fail(refusals.decisionNotOffered(approval.decisions.join(", ")));
  }
  if (approval.status !== "pending") throw fail(refusals.approvalResolved({ approval: copy(approval) }));
  approval.status = p.decision === "deny" ? "denied" : "approved";
  approval.decision = p.decision;
  if (p.reason !== undefined && p.reason !== null) approval.reason = p.reason;
  approval.resolvedAt = now();
  state.touch();
  return copy(approval);
}

/** `questions.respond`: an answer that fits the question, taken once. */
export function answerQuestion(state: State, p: P.QuestionsRespondParams): P.Question {
  const question = state.questions.find((q) => q.id === p.questionId);
  if (!question) throw notFound("question", p.questionId);
  const choices = question.choices;
  if (question.status === "pending" && choices && !(typeof p.answer === "string" && choices.includes(p.answer))) {
    const errors = [`the answer must be one of [${choices.map((c) => JSON.stringify(c)).join(", ")}]`];
    throw fail(refusals.answerUnfit(errors.join("; "), { errors }));
  }
  if (question.status !== "pending") throw fail(refusals.questionAnswered({ question: copy(question) }));
  question.status = "answered";
  question.answer = copy(p.answer ?? null);
  question.answeredAt = now();
  state.touch();
  return copy(question);
}

/** `tools.invoke`: the result the test set for the tool (by catalog id or name), else `not_found`. */
export function invoke(state: State, caller: Caller, p: P.ToolsInvokeParams): P.ToolsInvokeResult {
  if (p.tool.trim() === "" || Buffer.byteLength(p.tool) > MAX_TOOL_BYTES) {
    throw fail(refusals.toolRefInvalid(MAX_TOOL_BYTES));
  }
  const args = p.arguments;
  if (!(args === undefined || args === null || (typeof args === "object" && !Array.isArray(args)))) {
    throw fail(refusals.argumentsNotObject());
  }
  const keys = state.invokeKeys;
  const { idempotencyKey: given, ...rest } = p;
  const key = given ? scopedKey(caller, "invoke", given) : undefined;
  const hash = sha256(json(rest));
  if (key) {
    const first = keys.get(key);
    if (first) {
      if (first.hash !== hash) throw fail(refusals.idempotencyReused(given ?? ""));
      return { result: copy(first.result) };
    }
  }
  // The session is the one the gateway would run the call in.
  state.resolveSession(p.sessionKey);
  // A result set for the tool's name or its catalog id answers a call by either.
  const entry = state.tools.find((t) => t.id === p.tool || t.name === p.tool);
  const names = [p.tool, entry?.id, entry?.name].filter((n): n is string => n !== undefined);
  const found = names.find((n) => state.invokeResults.has(n));
  if (found === undefined) {
    throw fail(refusals.noDirectTool(p.tool));
  }
  const result = copy(state.invokeResults.get(found) ?? null);
  if (key) keys.set(key, { hash, result });
  return { result: copy(result) };
}

/** `environments.create`: a `local` environment, `ready` at once (an idempotency key names the same one). */
export function createEnvironment(state: State, caller: Caller, p: P.EnvironmentsCreateParams): P.Environment {
  if (p.provider !== "local") {
    throw fail(refusals.noEnvironmentProvider(p.provider, JSON.stringify(["local"]), { providers: ["local"] }));
  }
  const settings = p.settings ?? {};
  if (typeof settings !== "object" || Array.isArray(settings)) throw fail(refusals.settingsNotObject());
  let id: string;
  if (p.idempotencyKey) {
    id = `env_${sha256(scopedKey(caller, "environment", p.idempotencyKey)).slice(0, 24)}`;
    const first = state.environments.find((e) => e.id === id);
    if (first) {
      if (first.provider === p.provider && json(first.settings) === json(settings)) return copy(first);
      throw fail(refusals.idempotencyReused(p.idempotencyKey));
    }
  } else {
    id = state.newId("env");
  }
  const environment: P.Environment = {
    capabilities: {
      artifacts: true,
      checkout: true,
      logs: true,
      longRunning: true,
      networkPolicy: true,
      pullRequests: false,
      sandbox: false,
      secrets: true,
    },
    createdAt: now(),
    id,
    provider: p.provider,
    settings: copy(settings),
    status: "ready",
    workspace: `/fake-gateway/environments/${id}/workspace`,
  };
  state.environments.push(environment);
  state.touch();
  return copy(environment);
}

/** `environments.delete`: `deleted`, saying what became of its workspace. */
export function deleteEnvironment(state: State, p: P.EnvironmentsDeleteParams): P.Environment {
  const environment = state.environments.find((e) => e.id === p.environmentId);
  if (!environment) throw notFound("environment", p.environmentId);
  if (environment.status !== "deleted") {
    const retain = (environment.settings as { retain?: unknown } | undefined)?.retain === true;
    environment.detail = retain ? "the workspace was kept (retain)" : "the workspace was removed";
    environment.status = "deleted";
    state.touch();
  }
  return copy(environment);
}

/** `agents.create`: an API agent with a new id. */
export function createAgent(state: State, p: P.AgentsCreateParams): P.Agent {
  const found = state.agent(p.id);
  if (found) {
    throw fail(found.source === "config" ? refusals.agentInConfig(p.id) : refusals.alreadyExists("agent", p.id));
  }
  const at = now();
  const agent: P.Agent = { createdAt: at, id: p.id, source: "api", updatedAt: at };
  if (p.name !== undefined && p.name !== null) agent.name = p.name;
  if (p.description !== undefined && p.description !== null) agent.description = p.description;
  if (p.model !== undefined && p.model !== null) agent.model = p.model;
  state.agents.push(agent);
  state.touch();
  return copy(agent);
}

/** `agents.update`: the fields given replace an API agent's. */
export function updateAgent(state: State, p: P.AgentsUpdateParams): P.Agent {
  const agent = state.agent(p.agentId);
  if (agent?.source === "config") {
    throw fail(refusals.agentEditInConfig(p.agentId));
  }
  if (!agent) throw notFound("agent", p.agentId);
  if (p.name !== undefined && p.name !== null) agent.name = p.name;
  if (p.description !== undefined && p.description !== null) agent.description = p.description;
  if (p.model !== undefined && p.model !== null) agent.model = p.model;
  agent.updatedAt = now();
  state.touch();
  return copy(agent);
}
