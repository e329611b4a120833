/** Memory recall at a run's start, against the worker scripts/run-tests.mjs started (its
 * web API answers the memory search): a memory written to the memory-writes topic is
 * found for a run whose task it fits, and opens the run's note, as the Python guard's
 * recall does; a worker that cannot be reached costs the run nothing but a warning. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { LoopGuard } from "../src/guard.js";
import { kafkaClient } from "../src/kafka.js";
import { searchMemories } from "../src/memories.js";
import { MEMORY_HEADER } from "../src/text.js";
import { brokerSettings, loopId } from "./support.js";

const CONTENT = "deploys to staging need the vault token before the first push";

describe("memory recall at a run's start", () => {
  it("puts the memories that fit the task in front of the run's model calls", async () => {
    const scope = loopId("scope");
    const settings = { ...brokerSettings(), memoryScope: scope };
    const producer = kafkaClient(settings).producer();
    await producer.connect();
    try {
      const write = {
        event_id: loopId("memory").replace(/[^a-z0-9]/g, ""),
        schema_version: 1,
        occurred_at: Date.now() / 1000,
        type: "memory_write",
        payload: { scope, content: CONTENT },
      };
      const topic = process.env.LOOPWARDEN_TOPICS__MEMORY_WRITES;
      assert.ok(topic, "the stack names the memory-writes topic");
      await producer.send({ topic, messages: [{ key: scope, value: JSON.stringify(write) }] });
    } finally {
      await producer.disconnect();
    }
    // stored when the worker's memory role has written it: found by the search
    const deadline = Date.now() + 90_000;
    while (!(await searchMemories(settings, "deploying to staging")).memories.length) {
      assert.ok(Date.now() < deadline, "the memory was not searchable within 90 s");
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const guard = await LoopGuard.start(settings);
    try {
      const run = loopId("recall");
      assert.equal(await guard.recall(run, "deploying to staging"), 1);
      const note = guard.note(run);
      assert.ok(note?.startsWith(`${MEMORY_HEADER}\n- ${CONTENT}`), note);
      assert.equal(await guard.recall(loopId("off"), "   "), 0); // no task: nothing asked
    } finally {
      await guard.close();
    }
  });

  it("goes on without memories when no worker answers, saying so once", async () => {
    const guard = await LoopGuard.start({ ...brokerSettings(), memoryScope: "any", workerUrl: "http://127.0.0.1:9" });
    const said: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void said.push(args.join(" "));
    try {
      assert.equal(await guard.recall(loopId("a"), "deploy"), 0);
      assert.equal(await guard.recall(loopId("b"), "deploy"), 0);
      assert.equal(said.length, 1);
      assert.match(String(said[0]), /cannot reach a worker's API at http:\/\/127\.0\.0\.1:9/);
    } finally {
      console.warn = warn;
      await guard.close();
    }
  });
});
