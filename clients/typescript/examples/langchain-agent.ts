/**
 * A LangChain.js tool loop that keeps retrying a deploy that fails, under loopwarden: the
 * handler publishes every tool run, `prepare` puts the warnings in front of the model,
 * and the model call after the ladder's end is refused.
 *
 *   loopwarden dev                       # another terminal: broker + worker
 *   export LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS=127.0.0.1:<port it printed>
 *   npm run example:langchain
 *
 * The model is LangChain's own fake chat model, scripted to call the tool every time,
 * so the example needs no API key.
 */
import { AIMessageChunk, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { FakeStreamingChatModel } from "@langchain/core/utils/testing";
import { z } from "zod";

import { LoopGuard, LoopStopped } from "loopwarden";
import { LoopwardenCallbackHandler } from "loopwarden/langchain";

const deploy = tool(
  async () => {
    throw new Error("permission denied: ./deploy.sh");
  },
  { name: "deploy", description: "Deploy the service", schema: z.object({ env: z.string() }) },
);
const model = new FakeStreamingChatModel({
  chunks: [new AIMessageChunk({ content: "", tool_calls: [{ id: "call-deploy", name: "deploy", args: { env: "prod" }, type: "tool_call" }] })],
});

const loopId = `langchain-example-${Date.now()}`;
const guard = await LoopGuard.start();
const handler = new LoopwardenCallbackHandler({ guard, loopId });
const messages: BaseMessage[] = [new SystemMessage("You deploy services."), new HumanMessage("Deploy the service to prod.")];
try {
  for (let step = 1; step <= 30; step++) {
    const prompt = await handler.prepare(messages);
    const warning = prompt[0] !== messages[0] ? String(prompt[0]!.content).split("\n").filter((line) => line.startsWith("- (")).pop() : undefined;
    console.log(`step ${step}: calling deploy${warning ? `  | the model read: ${warning.slice(0, 110)}…` : ""}`);
    const answer = await model.invoke(prompt, { callbacks: [handler] });
    messages.push(answer);
    for (const call of answer.tool_calls ?? []) {
      try {
        messages.push(await deploy.invoke(call, { callbacks: [handler] }));
      } catch (error) {
        messages.push(new ToolMessage({ content: String(error), tool_call_id: call.id!, status: "error" }));
      }
    }
  }
  console.log("the loop ran out of steps");
} catch (error) {
  if (!(error instanceof LoopStopped)) throw error;
  console.log(`\nthe run was ended:\n${error.message}`);
} finally {
  await guard.close();
}
