/** Against the broker and worker that scripts/run-tests.mjs started: publishing, the
 * ladder, subscriptions of one loop, batched records and dead letters. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Kafka, logLevel, Partitioners } from "kafkajs";

import { LoopStopped } from "../src/errors.js";
import { LoopGuard } from "../src/guard.js";
import type { LoopWarning } from "../src/generated/contract.js";
import { partitionFor } from "../src/kafka.js";
import { Publisher } from "../src/publisher.js";
import { DeadLetterSubscriber, WarningSubscriber, type RecordSubscriber } from "../src/subscriber.js";
import { stopText } from "../src/text.js";
import { brokerSettings, loopId, partitionsOf, sharedGuard } from "./support.js";

const FAILING = { action_type: "deploy", params: { env: "prod" }, success: false, error_message: "permission denied: ./deploy.sh" };

/** The next `count` records of `subscriber`, or a failure after `ms`. */
async function take<T>(subscriber: RecordSubscriber<T>, count: number, ms = 30_000): Promise<T[]> {
  const found: T[] = [];
  const deadline = setTimeout(() => void subscriber.close(), ms);
  for await (const record of subscriber) {
    found.push(record);
    if (found.length >= count) break;
  }
  clearTimeout(deadline);
  assert.equal(found.length, count, `${count} records within ${ms} ms`);
  return found;
}

describe("on a real broker and worker", () => {
  const started = sharedGuard();

  it("warns a loop that keeps failing, escalates, and stops it at the ladder's end", async () => {
    const guard = started();
    const loop = loopId("ladder");
    const watcher = await WarningSubscriber.start({ settings: brokerSettings(), loopId: loop });
    const notes: string[] = [];
    let stopped: LoopStopped | undefined;
    for (let step = 0; step < 25 && !stopped; step++) {
      try {
        const note = await guard.check(loop);
        if (note) notes.push(note);
        guard.toolCall(loop, "deploy", { env: "prod" }, { error: new Error("permission denied: ./deploy.sh"), toolCallId: `c-${step}` });
      } catch (error) {
        assert.ok(error instanceof LoopStopped, String(error));
        stopped = error;
      }
    }
    assert.ok(stopped, "the loop was stopped");
    assert.equal(stopped.warning.step, "stop");
    assert.equal(stopped.message, stopText(stopped.warning));
    assert.ok(notes.length >= 3, "the agent read warnings before its stop");
    assert.match(notes[0]!, /^\[loopwarden\] Loop warning — read before your next step:\n- \(critical\) .*deploy/);
    const warnings = await take(watcher, 1);
    await watcher.close();
    assert.equal(warnings[0]!.loop_id, loop);
    assert.equal(watcher.partitions.length, 1, "a subscriber of one loop reads one partition");
  });

  it("ends a healthy step's wait on the worker's verdicts, and a warning's with it in the inbox", async () => {
    const guard = await LoopGuard.start({ ...brokerSettings(), verdictWaitMs: 60_000 });
    try {
      const loop = loopId("verdicts");
      for (let step = 0; step < 4; step++) {
        const eventId = guard.publish(loop, { ...FAILING, params: { env: "prod" } });
        const waited = await guard.awaitVerdict(loop);
        assert.ok(waited < 30_000, `step ${step}: the wait ran out (${waited} ms) instead of ending on a verdict`);
        const answers = guard.inbox.answers(loop, eventId);
        assert.deepEqual([...answers.keys()].sort(), ["fleet", "monitor"]);
        const told = guard.inbox.take(loop);
        const announced = answers.get("monitor")! + answers.get("fleet")!;
        assert.equal(told.length, announced, "every warning announced is in the inbox");
        for (const warning of told) assert.equal(warning.trigger_event_id, eventId);
      }
    } finally {
      await guard.close();
    }
  });

  it("gives a subscriber of one loop that loop's warnings only, even on a shared partition", async () => {
    const mine = loopId("mine");
    const all = await partitionsOf(brokerSettings().topics.warnings);
    let neighbour = loopId("neighbour");
    while (partitionFor(neighbour, all) !== partitionFor(mine, all)) neighbour = loopId("neighbour");
    const watcher = await WarningSubscriber.start({ settings: brokerSettings(), loopId: mine });
    const publisher = await Publisher.connect(brokerSettings());
    for (let n = 0; n < 4; n++) {
      publisher.publish(neighbour, FAILING);
      publisher.publish(mine, { ...FAILING, action_type: "migrate" });
    }
    await publisher.close();
    const warnings = await take(watcher, 1);
    await watcher.close();
    assert.equal(warnings[0]!.loop_id, mine);
    assert.match(warnings[0]!.timeline_message, /migrate/);
  });

  it("sends a loop's events in batches the worker reads, and keeps their order", async () => {
    const loop = loopId("batched");
    const watcher = await WarningSubscriber.start({ settings: brokerSettings(), loopId: loop });
    const publisher = await Publisher.connect({ ...brokerSettings(), publisher: { ...brokerSettings().publisher, lingerMs: 50 } });
    const ids = Array.from({ length: 6 }, (_, n) => publisher.publish(loop, FAILING, { eventId: `${loop}-${n}` }));
    await publisher.close();
    assert.equal(publisher.delivered, 6);
    // durable by default: idempotent on Apache Kafka; the embedded broker refuses it
    assert.equal(publisher.idempotent, process.env.LOOPWARDEN_TEST_BROKER === "kafka");
    const [warning] = await take(watcher, 1);
    await watcher.close();
    assert.deepEqual(warning!.event_ids, ids.slice(0, warning!.event_ids.length), "the events, in their order");
  });

  it("lets a producer see its dead letters, with the worker's reason", async () => {
    const loop = loopId("dead");
    const letters = await DeadLetterSubscriber.start({ settings: brokerSettings(), loopId: loop });
    const kafka = new Kafka({ brokers: brokerSettings().bootstrapServers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const record = JSON.stringify({ loop_id: loop, occurred_at: Date.now(), payload: { action_type: "shell" } });
    await producer.send({ topic: brokerSettings().topics.actions, messages: [{ key: loop, value: record }] });
    await producer.disconnect();
    const [letter] = await take(letters, 1);
    await letters.close();
    assert.equal(letter!.reason, "validation");
    assert.equal(letter!.value, record, "the record, byte for byte");
    assert.equal(letter!.key, loop);
    const paths = letter!.errors.map((error) => error.path);
    assert.ok(paths.includes("event_id"), letter!.message);
    assert.match(letter!.message, /occurred_at: .*looks like milliseconds/);
    assert.equal(letter!.source.topic, brokerSettings().topics.actions);
  });

  it("replays a loop's warnings from the beginning", async () => {
    const loop = loopId("replay");
    const live = await WarningSubscriber.start({ settings: brokerSettings(), loopId: loop });
    const publisher = await Publisher.connect(brokerSettings());
    for (let n = 0; n < 4; n++) publisher.publish(loop, FAILING);
    await publisher.close();
    const [first] = await take(live, 1);
    await live.close();
    const replay = await WarningSubscriber.start({ settings: brokerSettings(), loopId: loop, fromBeginning: true });
    const [again]: LoopWarning[] = await take(replay, 1);
    await replay.close();
    assert.equal(again!.warning_id, first!.warning_id, "the warning sent before the replay began");
  });
});
