/**
 * An AI SDK agent that keeps retrying a deploy that fails, under loopwarden: it reads the
 * warnings in its system message and is stopped at the ladder's end.
 *
 *   loopwarden dev                       # another terminal: broker + worker
 *   export LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS=127.0.0.1:<port it printed>
 *   npm run example:ai-sdk
 *
 * The model is the AI SDK's own mock (ai/test), scripted to call the tool again and
 * again, so the example needs no API key; put your provider's model in its place.
 */
import { generateText, stepCountIs, tool, wrapLanguageModel } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";

import { LoopGuard } from "loopwarden";
import { loopwardenMiddleware } from "loopwarden/ai-sdk";

/** A model that calls `deploy` at every step, printing the warnings it is shown. */
function stubbornModel(): MockLanguageModelV4 {
  let step = 0;
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      step += 1;
      const system = prompt.find((message) => message.role === "system");
      const warning = typeof system?.content === "string" ? system.content.split("\n").filter((line) => line.startsWith("- (")).pop() : undefined;
      console.log(`step ${step}: calling deploy${warning ? `  | the model read: ${warning.slice(0, 110)}…` : ""}`);
      return {
        content: [{ type: "tool-call", toolCallId: `call-${step}`, toolName: "deploy", input: JSON.stringify({ env: "prod" }) }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 5, text: 5, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
}

const deploy = tool({
  description: "Deploy the service",
  inputSchema: z.object({ env: z.string() }),
  execute: async (): Promise<string> => {
    throw new Error("permission denied: ./deploy.sh");
  },
});

const loopId = `ai-sdk-example-${Date.now()}`;
const guard = await LoopGuard.start();
try {
  const model = wrapLanguageModel({ model: stubbornModel(), middleware: loopwardenMiddleware({ guard, loopId }) });
  const result = await generateText({
    model,
    system: "You deploy services.",
    prompt: "Deploy the service to prod.",
    tools: { deploy },
    stopWhen: stepCountIs(30),
  });
  console.log(`\nthe run ended after ${result.steps.length} steps with:\n${result.text}`);
} finally {
  await guard.close();
}
