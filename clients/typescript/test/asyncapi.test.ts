/** The AsyncAPI document shipped with the schemas, read by AsyncAPI's own parser. */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, it } from "node:test";

import { topicIndex } from "../src/contract.js";
import { loadSettings } from "../src/settings.js";
import { packageRoot } from "./support.js";

const require = createRequire(import.meta.url);
const { Parser, fromFile } = require("@asyncapi/parser") as typeof import("@asyncapi/parser");

describe("the AsyncAPI document", () => {
  it("is valid AsyncAPI 3 with every topic, its address, key and payload schema", async () => {
    const { document, diagnostics } = await fromFile(new Parser(), join(packageRoot, "schemas", "asyncapi.json")).parse();
    const problems = diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.code}: ${d.message} at ${d.path.join(".")}`);
    assert.deepEqual(problems, []);
    assert.ok(document);
    const roles = Object.keys(topicIndex.topics);
    assert.deepEqual(document.channels().all().map((channel) => channel.id()).sort(), [...roles].sort());
    const topics = loadSettings({}, {}).topics;
    assert.equal(document.channels().get("actions")?.address(), topics.actions);
    assert.equal(document.channels().get("warnings")?.address(), topics.warnings);
    const warning = document.channels().get("warnings")!.messages().all()[0]!;
    const payload = (warning.payload()!.json() as { schema: { required?: string[] } }).schema;
    assert.ok(payload.required?.includes("timeline_message"), "the payload is the warnings schema, resolved");
    const key = (warning.bindings().get("kafka")!.value() as { key: { description: string } }).key;
    assert.match(key.description, /loop id/);
    const receives = document.operations().filterByReceive().map((operation) => operation.channels().all()[0]!.id());
    assert.ok(receives.includes("actions") && !receives.includes("warnings"), "the worker receives actions, sends warnings");
  });
});
