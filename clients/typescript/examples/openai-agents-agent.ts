/**
 * An OpenAI Agents SDK agent that keeps retrying a deploy that fails, under loopwarden:
 * the warnings go into its instructions, and the run is ended at the ladder's end.
 *
 *   loopwarden dev                       # another terminal: broker + worker
 *   export LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS=127.0.0.1:<port it printed>
 *   npm run example:openai-agents
 *
 * The model is a scripted implementation of the SDK's own Model interface, so the
 * example needs no API key; leave `model` out to use OpenAI's.
 */
import { Agent, tool, Usage, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { z } from "zod";

import { LoopGuard, LoopStopped } from "loopwarden";
import { loopwardenRunner } from "loopwarden/openai-agents";

/** A model that calls `deploy` at every turn, printing the warnings it is shown. */
class StubbornModel implements Model {
  private turn = 0;

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.turn += 1;
    const warning = (request.systemInstructions ?? "").split("\n").filter((line) => line.startsWith("- (")).pop();
    console.log(`turn ${this.turn}: calling deploy${warning ? `  | the model read: ${warning.slice(0, 110)}…` : ""}`);
    return {
      usage: new Usage(),
      responseId: `response-${this.turn}`,
      output: [
        { type: "function_call", callId: `call-${this.turn}`, name: "deploy", arguments: JSON.stringify({ env: "prod" }), status: "completed" },
      ],
    };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("this scripted model does not stream");
  }
}

const deploy = tool({
  name: "deploy",
  description: "Deploy the service",
  parameters: z.object({ env: z.string() }),
  execute: async (): Promise<string> => {
    throw new Error("permission denied: ./deploy.sh");
  },
});

const agent = new Agent({ name: "deployer", instructions: "You deploy services.", model: new StubbornModel(), tools: [deploy] });
const loopId = `openai-agents-example-${Date.now()}`;
const guard = await LoopGuard.start();
try {
  const runner = loopwardenRunner({ guard, loopId, config: { tracingDisabled: true } });
  await runner.run(agent, "Deploy the service to prod.", { maxTurns: 30 });
  console.log("the run ended by itself");
} catch (error) {
  if (!(error instanceof LoopStopped)) throw error;
  console.log(`\nthe run was ended:\n${error.message}`);
} finally {
  await guard.close();
}
