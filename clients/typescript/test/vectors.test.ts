/** One contract, two languages: what the TypeScript client encodes is what the Python
 * client encodes, read the same by the worker, and every output kind parses here. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { contextText, stopText } from "../src/text.js";
import { actionEvent, cutLongText, resultDigest, type ActionFields } from "../src/events.js";
import { partitionFor } from "../src/kafka.js";
import { loopRecords, recordKey } from "../src/publisher.js";
import { decode } from "../src/subscriber.js";
import { toolCallFields } from "../src/toolcalls.js";
import type { LoopWarning } from "../src/generated/contract.js";
import { definition, topicIndex } from "../src/contract.js";
import { vectors, workerReads } from "./support.js";

describe("cross-language vectors", () => {
  it("digests results as Python does (whitespace as str.split sees it)", () => {
    for (const { text, digest } of vectors().digests) assert.equal(resultDigest(text), digest, JSON.stringify(text));
  });

  it("cuts long text as every Python entry point does", () => {
    for (const { payload, cut } of vectors().cuts) assert.deepEqual(cutLongText(payload), cut);
  });

  it("puts a loop's records on the partition aiokafka and the worker compute", () => {
    for (const { key, partitions, partition } of vectors().partitions) {
      const all = Array.from({ length: partitions }, (_, i) => i);
      assert.equal(partitionFor(key, all), partition, `${key} of ${partitions}`);
    }
  });

  it("keys a record as the Python client does: by the family's root loop", () => {
    for (const { event, key } of vectors().keys) assert.equal(recordKey(event as never), key, JSON.stringify(event));
  });

  it("writes the note and the stop text with the Python adapters' words", () => {
    const { context, stop, warnings } = vectors().texts;
    assert.equal(contextText(warnings as LoopWarning[]), context);
    assert.equal(stopText(warnings.at(-1) as LoopWarning), stop);
  });

  it("maps a tool call to the same action fields", () => {
    for (const { tool, args, result, error, fields } of vectors().tool_calls) {
      const mine = toolCallFields(tool, args, { result: result ?? undefined, error: error ?? undefined }) as Record<string, unknown>;
      delete mine.action_type;
      assert.deepEqual(mine, fields, JSON.stringify(args));
    }
  });

  it("encodes events the worker reads exactly as it reads the Python client's", () => {
    const { events } = vectors();
    const mine = events.map(({ fields, event_id, occurred_at }) =>
      actionEvent(vectors().loop_id, fields as unknown as ActionFields, { eventId: event_id, occurredAt: occurred_at }),
    );
    // one record per event, as the Python vectors, and the same events as batched arrays
    const single = mine.map((event) => JSON.stringify(event));
    const batched = loopRecords(vectors().loop_id, single).map((record) => record.value);
    assert.ok(batched.length < single.length, "the events were batched");
    const read = workerReads({ python: events.map((event) => event.record), typescript: single, batched });
    assert.deepEqual(read.typescript!.dead_letters, []);
    assert.ok(read.python!.outputs.length >= 5, "the sequence warns and asks for reflections");
    assert.deepEqual(read.typescript, read.python);
    // and what the worker wrote of them parses here (the default profile's own kinds)
    for (const [role, record] of read.typescript!.outputs as [string, unknown][]) decode(role, JSON.stringify(record));
    const kinds = (read.typescript!.outputs as [string, LoopWarning][]).filter(([role]) => role === "warnings").map(([, w]) => w.kind);
    assert.ok(kinds.includes("repeated_outcome"), kinds.join(", "));
    // a record of many events yields its outputs grouped by kind (as the Python
    // publisher's batches do): the same outputs, in another order
    const sorted = (outputs: unknown[]) => outputs.map((output) => JSON.stringify(output)).sort();
    assert.deepEqual(read.batched!.dead_letters, []);
    assert.deepEqual(sorted(read.batched!.outputs), sorted(read.python!.outputs));
  });

  it("parses every output kind the worker writes, on every topic it writes", () => {
    const records = vectors().records;
    const outTopics = Object.entries(topicIndex.topics).filter(([, entry]) => entry.direction === "out").map(([role]) => role);
    for (const role of outTopics) assert.ok(records[role]?.length, `a ${role} record from Python`);
    for (const [role, found] of Object.entries(records)) {
      for (const record of found) decode(role, JSON.stringify(record));
    }
    const kinds = new Set((records.warnings as LoopWarning[]).map((warning) => warning.kind));
    const every = definition("warnings", "WarningKind").enum as string[];
    assert.deepEqual(every.filter((kind) => !kinds.has(kind)), [], "a warning of every kind the schema names");
  });

  it("refuses a record that is not its topic's, naming the field", () => {
    const warning = { ...(vectors().records.warnings![0] as LoopWarning), level: "loud" };
    assert.throws(() => decode("warnings", JSON.stringify(warning)), /level: must be equal to one of the allowed values/);
    assert.throws(() => decode("warnings", "{oops"), /not JSON/);
  });
});
