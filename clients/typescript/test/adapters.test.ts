/** Each adapter with its framework's own package and a scripted model of the framework's
 * own kind, against the real broker and worker: the agent reads the warnings and is
 * stopped at the ladder's end. Then each example, run as a user runs it. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";

import { AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool as langchainTool } from "@langchain/core/tools";
import { FakeStreamingChatModel } from "@langchain/core/utils/testing";
import { Agent, tool as agentsTool, Usage, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { generateText, stepCountIs, streamText, tool as aiTool, wrapLanguageModel } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";

import { loopwardenMiddleware } from "../src/adapters/ai-sdk.js";
import { LoopwardenCallbackHandler } from "../src/adapters/langchain.js";
import { loopwardenRunner } from "../src/adapters/openai-agents.js";
import { LoopStopped } from "../src/errors.js";
import { CONTEXT_HEADER, STOP_HEADER } from "../src/text.js";
import { brokerSettings, loopId, packageRoot, sharedGuard } from "./support.js";

const USAGE = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const failing = async (): Promise<string> => {
  throw new Error("permission denied: ./deploy.sh");
};

describe("adapters", () => {
  const started = sharedGuard();

  it("AI SDK: publishes each tool result, shows the warnings, answers with the stop", async () => {
    const guard = started();
    const loop = loopId("ai-sdk");
    const systems: string[] = [];
    let calls = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        calls++;
        systems.push(prompt.filter((m) => m.role === "system").map((m) => m.content).join("\n"));
        return {
          content: [{ type: "tool-call", toolCallId: `call-${calls}`, toolName: "deploy", input: '{"env":"prod"}' }],
          finishReason: { unified: "tool-calls", raw: undefined },
          usage: USAGE,
          warnings: [],
        };
      },
    });
    const result = await generateText({
      model: wrapLanguageModel({ model, middleware: loopwardenMiddleware({ guard, loopId: loop }) }),
      system: "You deploy.",
      prompt: "Deploy to prod.",
      tools: { deploy: aiTool({ inputSchema: z.object({ env: z.string() }), execute: failing }) },
      stopWhen: stepCountIs(30),
    });
    assert.ok(result.text.startsWith(STOP_HEADER), result.text);
    assert.ok(result.steps.length < 30, "stopped by loopwarden, not by the step limit");
    assert.equal(result.steps.length, calls + 1, "the last step is loopwarden's answer, not the model's");
    const warned = systems.filter((system) => system.includes(CONTEXT_HEADER));
    assert.ok(warned.length >= 2, "the model read warnings in its system message");
    assert.ok(systems.every((system) => system.startsWith("You deploy.")), "the system message is kept");
  });

  it("AI SDK: a streamed run is stopped the same way", async () => {
    const guard = started();
    const loop = loopId("ai-sdk-stream");
    let calls = 0;
    const model = new MockLanguageModelV4({
      doStream: async () => {
        calls++;
        const parts = [
          { type: "stream-start", warnings: [] },
          { type: "tool-call", toolCallId: `s-${calls}`, toolName: "deploy", input: '{"env":"prod"}' },
          { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage: USAGE },
        ];
        return { stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) } as never;
      },
    });
    const result = streamText({
      model: wrapLanguageModel({ model, middleware: loopwardenMiddleware({ guard, loopId: loop }) }),
      prompt: "Deploy to prod.",
      tools: { deploy: aiTool({ inputSchema: z.object({ env: z.string() }), execute: failing }) },
      stopWhen: stepCountIs(30),
    });
    const text = await result.text;
    assert.ok(text.startsWith(STOP_HEADER), text);
    assert.ok(calls < 29);
  });

  it("OpenAI Agents SDK: the run rejects with LoopStopped after the warnings reached its instructions", async () => {
    const guard = started();
    const loop = loopId("openai-agents");
    const instructions: string[] = [];
    let turn = 0;
    const model: Model = {
      async getResponse(request: ModelRequest): Promise<ModelResponse> {
        turn++;
        instructions.push(request.systemInstructions ?? "");
        return {
          usage: new Usage(),
          output: [{ type: "function_call", callId: `call-${turn}`, name: "deploy", arguments: '{"env":"prod"}', status: "completed" }],
        };
      },
      // eslint-disable-next-line require-yield
      async *getStreamedResponse() {
        throw new Error("not streamed");
      },
    };
    const deploy = agentsTool({ name: "deploy", description: "deploy", parameters: z.object({ env: z.string() }), execute: failing });
    const agent = new Agent({ name: "deployer", instructions: "You deploy.", model, tools: [deploy] });
    const runner = loopwardenRunner({ guard, loopId: loop, config: { tracingDisabled: true } });
    await assert.rejects(runner.run(agent, "Deploy to prod.", { maxTurns: 30 }), (error: Error) => {
      assert.ok(error instanceof LoopStopped, `${error.name}: ${error.message}`);
      assert.ok(error.message.startsWith(STOP_HEADER));
      return true;
    });
    assert.ok(turn < 29);
    assert.ok(instructions.some((text) => text.startsWith("You deploy.\n\n" + CONTEXT_HEADER)));
  });

  it("LangChain.js: the handler publishes tool runs and refuses the model call after the ladder", async () => {
    const guard = started();
    const loop = loopId("langchain");
    const handler = new LoopwardenCallbackHandler({ guard, loopId: loop });
    const deploy = langchainTool(failing, { name: "deploy", description: "deploy", schema: z.object({ env: z.string() }) });
    const model = new FakeStreamingChatModel({
      chunks: [new AIMessageChunk({ content: "", tool_calls: [{ id: "c", name: "deploy", args: { env: "prod" }, type: "tool_call" }] })],
    });
    const messages: BaseMessage[] = [new HumanMessage("Deploy to prod.")];
    let steps = 0;
    await assert.rejects(
      (async () => {
        for (; steps < 30; steps++) {
          // no prepare(): the handler alone must stop the run
          const answer = await model.invoke(messages, { callbacks: [handler] });
          for (const call of answer.tool_calls ?? []) {
            await deploy.invoke(call, { callbacks: [handler] }).then(
              (output) => messages.push(output),
              (error) => messages.push(new ToolMessage({ content: String(error), tool_call_id: call.id!, status: "error" })),
            );
          }
        }
      })(),
      (error: Error) => error instanceof LoopStopped && error.message.startsWith(STOP_HEADER),
    );
    assert.ok(steps < 29);
    const note = await handler.prepare(messages).catch((error: Error) => error);
    assert.ok(note instanceof LoopStopped, "prepare refuses too, once stopped");
  });
});

describe("examples", () => {
  for (const name of ["ai-sdk-agent", "openai-agents-agent", "langchain-agent"]) {
    it(`${name} loops until loopwarden stops it, with the warning's words`, () => {
      const run = spawnSync(process.execPath, ["--import", "tsx", `examples/${name}.ts`], {
        cwd: packageRoot,
        encoding: "utf8",
        timeout: 120_000,
        env: { ...process.env, LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS: brokerSettings().bootstrapServers.join(",") },
      });
      assert.equal(run.status, 0, run.stderr);
      const lines = run.stdout.trimEnd().split("\n");
      assert.ok(lines.some((line) => line.includes("the model read: - (critical) ⚠️")), run.stdout);
      assert.match(lines.at(-1)!, /^\[loopwarden\] This run was stopped: it kept repeating itself\. .*deploy/);
    });
  }
});
