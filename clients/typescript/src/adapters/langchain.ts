/**
 * LangChain.js (`@langchain/core`): a callback handler puts a chain, an agent or a
 * hand-written tool loop under loopwarden.
 *
 * ```ts
 * import { LoopGuard } from "loopwarden";
 * import { LoopwardenCallbackHandler } from "loopwarden/langchain";
 *
 * const guard = await LoopGuard.start();
 * const handler = new LoopwardenCallbackHandler({ guard, loopId: "thread-7" });
 * const answer = await model.invoke(await handler.prepare(messages), { callbacks: [handler] });
 * const output = await someTool.invoke(answer.tool_calls[0], { callbacks: [handler] });
 * ```
 *
 * - every tool run is published (`handleToolStart` / `handleToolEnd` /
 *   `handleToolError`): the tool's name, its input, its output or error, the call id;
 * - a chat model's answer without a tool call is published as the agent's message turn;
 * - each chat model call waits first, bounded (`verdictWaitMs`), for the verdict on
 *   the tool runs just published, and at the ladder's end the call is refused with
 *   {@link LoopStopped} (the handler awaits and raises: `awaitHandlers`, `raiseError`);
 * - `prepare(messages)` does the same wait and returns the messages with the run's
 *   latest warnings as a system message, for the model call it precedes: callbacks
 *   cannot change a call's input, so an agent that should read its warnings passes
 *   its messages through it.
 */
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { SystemMessage, type BaseMessage } from "@langchain/core/messages";
import type { LLMResult } from "@langchain/core/outputs";
import type { Serialized } from "@langchain/core/load/serializable";

import { LoopStopped } from "../errors.js";
import type { LoopGuard } from "../guard.js";
import { resultText } from "../toolcalls.js";

export { LoopStopped };

export interface HandlerOptions {
  guard: LoopGuard;
  /** The run's loop id (one per conversation thread or task run). */
  loopId: string;
  /** The acting agent's name, in a multi-agent system. */
  agent?: string;
}

interface ToolRun {
  name: string;
  input: string;
  toolCallId: string | undefined;
}

export class LoopwardenCallbackHandler extends BaseCallbackHandler {
  name = "loopwarden";
  override awaitHandlers = true;
  override raiseError = true;
  readonly guard: LoopGuard;
  readonly loopId: string;
  private readonly agent: string | undefined;
  private readonly tools = new Map<string, ToolRun>();

  constructor(options: HandlerOptions) {
    super();
    this.guard = options.guard;
    this.loopId = options.loopId;
    this.agent = options.agent;
  }

  /** Before a model call: the verdict, {@link LoopStopped} at the ladder's end, and
   * `messages` with the run's latest warnings in a system message (as they are when
   * there are none). */
  async prepare(messages: BaseMessage[]): Promise<BaseMessage[]> {
    const note = await this.guard.check(this.loopId);
    return note === undefined ? messages : [new SystemMessage(note), ...messages];
  }

  override async handleChatModelStart(_llm: Serialized, _messages: BaseMessage[][]): Promise<void> {
    await this.guard.check(this.loopId); // throws LoopStopped: the model call is refused
  }

  override async handleLLMEnd(output: LLMResult): Promise<void> {
    const generation = output.generations[0]?.[0] as { message?: { tool_calls?: unknown[]; content?: unknown } } | undefined;
    const message = generation?.message;
    if (!message || (message.tool_calls?.length ?? 0) > 0) return;
    const text = resultText(message.content);
    if (text?.trim()) this.guard.said(this.loopId, text, this.agent ? { agent: this.agent } : {});
  }

  override async handleToolStart(
    tool: Serialized,
    input: string,
    runId: string,
    _parentRunId?: string,
    _tags?: string[],
    _metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ): Promise<void> {
    const name = runName ?? (tool as { name?: string }).name ?? tool.id?.at(-1) ?? "tool";
    this.tools.set(runId, { name, input, toolCallId });
  }

  override async handleToolEnd(output: unknown, runId: string): Promise<void> {
    const run = this.tools.get(runId);
    this.tools.delete(runId);
    if (run === undefined) return;
    const message = output as { content?: unknown; status?: string; tool_call_id?: string } | undefined;
    const failed = message?.status === "error";
    this.guard.toolCall(this.loopId, run.name, run.input, {
      ...(failed ? { error: resultText(message?.content) ?? "error" } : { result: output }),
      toolCallId: run.toolCallId ?? message?.tool_call_id,
      agent: this.agent,
    });
  }

  override async handleToolError(error: Error, runId: string): Promise<void> {
    const run = this.tools.get(runId);
    this.tools.delete(runId);
    if (run === undefined) return;
    this.guard.toolCall(this.loopId, run.name, run.input, { error, toolCallId: run.toolCallId, agent: this.agent });
  }
}
