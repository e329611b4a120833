/**
 * The AI SDK (`ai`): a language-model middleware puts a `generateText`/`streamText` run
 * under loopwarden.
 *
 * ```ts
 * import { generateText, wrapLanguageModel, stepCountIs } from "ai";
 * import { LoopGuard } from "loopwarden";
 * import { loopwardenMiddleware } from "loopwarden/ai-sdk";
 *
 * const guard = await LoopGuard.start();
 * const model = wrapLanguageModel({ model: yourModel, middleware: loopwardenMiddleware({ guard, loopId: "run-7" }) });
 * const { text } = await generateText({ model, tools, prompt, stopWhen: stepCountIs(50) });
 * ```
 *
 * Before each model call the middleware
 * - publishes what the prompt holds that it has not published yet: each tool call with
 *   its result (or its error: a failed call; a denied one is `rejected`), and the
 *   person's messages as the counterpart's turns;
 * - waits, bounded (`verdictWaitMs`), for the verdict on those steps, and puts the run's
 *   latest warnings into that call's system message (the request only: the
 *   conversation keeps no turn of loopwarden's);
 * - at the ladder's end answers in the model's place with why the run was stopped,
 *   without calling the model: the run ends with that text.
 *
 * A response without a tool call is published as the agent's message turn.
 */
import type { LanguageModelMiddleware } from "ai";

import type { LoopGuard } from "../guard.js";
import { LoopStopped } from "../errors.js";
import type { ActionFields } from "../events.js";
import { toolCallFields } from "../toolcalls.js";

export interface MiddlewareOptions {
  guard: LoopGuard;
  /** The run's loop id (one per conversation or task run). */
  loopId: string;
  /** The acting agent's name, in a multi-agent system. */
  agent?: string;
}

// The prompt parts this adapter reads (the AI SDK's LanguageModelV4 prompt), structurally
interface PromptPart {
  type: string;
  text?: string;
  toolCallId?: string;
  toolName?: string;
  input?: unknown;
  output?: { type: string; value?: unknown; reason?: string };
}
interface PromptMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | PromptPart[];
}
type CallParams = Parameters<NonNullable<LanguageModelMiddleware["wrapGenerate"]>>[0]["params"];
type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["wrapGenerate"]>>>;
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["wrapStream"]>>>;

const NO_USAGE = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

/** The loopwarden middleware of one run (see the module's description). */
export function loopwardenMiddleware(options: MiddlewareOptions): LanguageModelMiddleware {
  const { guard, loopId } = options;
  const published = new Set<string>();
  let usersSeen = 0;

  /** Publish what the prompt holds that was not published yet. */
  function publishNew(prompt: PromptMessage[]): void {
    const calls = new Map<string, PromptPart>();
    let users = 0;
    for (const message of prompt) {
      if (message.role === "user") {
        users++;
        const text = typeof message.content === "string"
          ? message.content
          : message.content.filter((part) => part.type === "text").map((part) => part.text).join("\n\n");
        if (users > usersSeen && text.trim()) guard.heard(loopId, text);
        continue;
      }
      if (typeof message.content === "string") continue;
      for (const part of message.content) {
        if (part.type === "tool-call" && part.toolCallId) calls.set(part.toolCallId, part);
        if (part.type !== "tool-result" || !part.toolCallId || published.has(part.toolCallId)) continue;
        published.add(part.toolCallId);
        const call = calls.get(part.toolCallId);
        guard.publish(loopId, toolResultFields(part, call?.input, options.agent));
      }
    }
    usersSeen = Math.max(usersSeen, users);
  }

  /** The verdict, then the params with the note, or the stop. */
  async function prepare(params: CallParams): Promise<{ params: CallParams; changed: boolean } | LoopStopped> {
    publishNew(params.prompt as unknown as PromptMessage[]);
    let note: string | undefined;
    try {
      note = await guard.check(loopId);
    } catch (error) {
      if (error instanceof LoopStopped) return error;
      throw error;
    }
    if (note === undefined) return { params, changed: false };
    return { params: { ...params, prompt: withNote(params.prompt as unknown as PromptMessage[], note) as unknown as CallParams["prompt"] }, changed: true };
  }

  function publishAnswer(content: readonly { type: string; text?: string }[]): void {
    if (content.some((part) => part.type === "tool-call")) return;
    const text = content.filter((part) => part.type === "text").map((part) => part.text ?? "").join("");
    if (text.trim()) guard.said(loopId, text, options.agent ? { agent: options.agent } : {});
  }

  return {
    specificationVersion: "v4",
    async wrapGenerate({ doGenerate, params, model }): Promise<GenerateResult> {
      const prepared = await prepare(params);
      if (prepared instanceof LoopStopped) {
        return {
          content: [{ type: "text", text: prepared.message }],
          finishReason: { unified: "stop", raw: "loopwarden-stop" },
          usage: NO_USAGE,
          warnings: [],
        } as unknown as GenerateResult;
      }
      const result = prepared.changed ? await model.doGenerate(prepared.params) : await doGenerate();
      publishAnswer(result.content as { type: string; text?: string }[]);
      return result;
    },
    async wrapStream({ doStream, params, model }): Promise<StreamResult> {
      const prepared = await prepare(params);
      if (prepared instanceof LoopStopped) {
        const parts = [
          { type: "stream-start", warnings: [] },
          { type: "text-start", id: "loopwarden-stop" },
          { type: "text-delta", id: "loopwarden-stop", delta: prepared.message },
          { type: "text-end", id: "loopwarden-stop" },
          { type: "finish", finishReason: { unified: "stop", raw: "loopwarden-stop" }, usage: NO_USAGE },
        ];
        return {
          stream: new ReadableStream({
            start(controller) {
              for (const part of parts) controller.enqueue(part);
              controller.close();
            },
          }),
        } as unknown as StreamResult;
      }
      const result = prepared.changed ? await model.doStream(prepared.params) : await doStream();
      let text = "";
      let calledTool = false;
      const watched = result.stream.pipeThrough(
        new TransformStream({
          transform(part, controller) {
            const typed = part as { type: string; delta?: string };
            if (typed.type === "text-delta") text += typed.delta ?? "";
            if (typed.type === "tool-call") calledTool = true;
            if (typed.type === "finish" && !calledTool) publishAnswer([{ type: "text", text }]);
            controller.enqueue(part);
          },
        }),
      );
      return { ...result, stream: watched };
    },
  };
}

/** A tool result of the prompt as action fields: its output, or its error. */
function toolResultFields(part: PromptPart, input: unknown, agent: string | undefined): ActionFields {
  const output = part.output ?? { type: "text", value: "" };
  const failed = output.type === "error-text" || output.type === "error-json" || output.type === "execution-denied";
  const text =
    output.type === "execution-denied"
      ? output.reason ?? "the tool call was denied"
      : typeof output.value === "string"
        ? output.value
        : JSON.stringify(output.value);
  return toolCallFields(part.toolName ?? "tool", input, {
    ...(failed ? { error: text } : { result: text }),
    toolCallId: part.toolCallId,
    rejected: output.type === "execution-denied" || undefined,
    agent,
  });
}

/** The prompt with the note added to its (first) system message, or one put first. */
function withNote(prompt: PromptMessage[], note: string): PromptMessage[] {
  const index = prompt.findIndex((message) => message.role === "system");
  if (index < 0) return [{ role: "system", content: note }, ...prompt];
  return prompt.map((message, i) =>
    i === index ? { ...message, content: `${message.content as string}\n\n${note}` } : message,
  );
}
