/**
 * The OpenAI Agents SDK for JavaScript (`@openai/agents`): run hooks and a model-input
 * filter put a run under loopwarden.
 *
 * ```ts
 * import { Agent } from "@openai/agents";
 * import { LoopGuard } from "loopwarden";
 * import { loopwardenRunner } from "loopwarden/openai-agents";
 *
 * const guard = await LoopGuard.start();
 * const runner = loopwardenRunner({ guard, loopId: "conversation-7" });
 * const result = await runner.run(agent, "Deploy the service");   // LoopStopped at the end
 * ```
 *
 * - every tool call is published (the runner's `agent_tool_end` hook): the tool's name,
 *   its arguments, the result, the call id and the acting agent's name (after a handoff
 *   another agent acts in the same run); the SDK's default tool-error text, and a
 *   timeout's, count as a failure;
 * - the run's input messages are published as the person's turns (`agent_start`), the
 *   run's end as a terminating turn (`agent_end`);
 * - before each model call (`callModelInputFilter`) it waits, bounded
 *   (`verdictWaitMs`), for the verdict on the tool results just published and adds the
 *   run's warnings to that call's instructions; at the ladder's end the filter throws
 *   {@link LoopStopped}, which ends the run (`runner.run` rejects with it).
 */
import { Runner, type RunConfig } from "@openai/agents";

import { LoopStopped } from "../errors.js";
import type { LoopGuard } from "../guard.js";

export { LoopStopped };

const DEFAULT_TOOL_ERROR = "An error occurred while running the tool. Please try again.";
const TIMEOUT = /^Tool '.*' timed out after \d+ms\.$/;

export interface RunnerOptions {
  guard: LoopGuard;
  /** The run's loop id (one per conversation or task run). */
  loopId: string;
  /** Your own runner settings; a `callModelInputFilter` of yours runs first. */
  config?: Partial<RunConfig>;
}

/** A {@link Runner} whose runs are watched by loopwarden (see the module's description). */
export function loopwardenRunner(options: RunnerOptions): Runner {
  const { guard, loopId } = options;
  const ownFilter = options.config?.callModelInputFilter;
  const runner = new Runner({
    ...options.config,
    callModelInputFilter: async (args) => {
      const modelData = ownFilter ? await ownFilter(args) : args.modelData;
      const note = await guard.check(loopId); // throws LoopStopped at the ladder's end
      if (note === undefined) return modelData;
      return { ...modelData, instructions: modelData.instructions ? `${modelData.instructions}\n\n${note}` : note };
    },
  });
  let started = false;
  runner.on("agent_start", (_context, _agent, turnInput) => {
    if (started) return;
    started = true;
    for (const item of turnInput ?? []) {
      const message = item as { role?: string; content?: unknown };
      const text = message.role === "user" ? messageText(message.content) : undefined;
      if (text) guard.heard(loopId, text);
    }
  });
  runner.on("agent_tool_end", (_context, agent, tool, result, details) => {
    const call = details.toolCall as { callId?: string; arguments?: string; name?: string };
    const failed = result === DEFAULT_TOOL_ERROR || TIMEOUT.test(result);
    guard.toolCall(loopId, tool.name ?? call.name ?? "tool", call.arguments, {
      ...(failed ? { error: result } : { result }),
      toolCallId: call.callId,
      agent: agent.name,
    });
  });
  runner.on("agent_end", (_context, agent, output) => {
    guard.said(loopId, typeof output === "string" ? output : JSON.stringify(output), { agent: agent.name, terminated: true });
  });
  return runner;
}

function messageText(content: unknown): string | undefined {
  if (typeof content === "string") return content.trim() ? content : undefined;
  if (!Array.isArray(content)) return undefined;
  const parts = content
    .map((part) => (part as { text?: unknown }).text)
    .filter((text): text is string => typeof text === "string" && Boolean(text.trim()));
  return parts.length ? parts.join("\n\n") : undefined;
}
