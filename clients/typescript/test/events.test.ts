/** Events refused before they leave the process, and settings read as the Python client
 * reads them (no broker needed). */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";

import { ConfigurationError, EventValidationError } from "../src/errors.js";
import { actionEvent, MAX_TIMESTAMP } from "../src/events.js";
import { Publisher, PublisherUnavailableError } from "../src/publisher.js";
import { loadSettings } from "../src/settings.js";
import { packageRoot, repository } from "./support.js";

function refusal(run: () => unknown): EventValidationError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof EventValidationError, String(error));
    return error;
  }
  assert.fail("the event was not refused");
}

describe("action events", () => {
  it("fills the envelope: an id, the schema version, the time in epoch seconds", () => {
    const before = Date.now() / 1000;
    const event = actionEvent("loop-1", { action_type: "shell", params: { cmd: "ls" } });
    assert.match(event.event_id, /^[0-9a-f]{32}$/);
    assert.equal(event.schema_version, 1);
    assert.equal(event.type, "action");
    assert.ok((event.occurred_at as number) >= before - 1 && (event.occurred_at as number) <= Date.now() / 1000 + 1);
  });

  it("refuses a millisecond timestamp, saying it looks like milliseconds", () => {
    const error = refusal(() => actionEvent("l", { action_type: "x" }, { occurredAt: Date.now() }));
    assert.equal(error.errors[0]!.path, "occurred_at");
    assert.match(error.message, /looks like milliseconds.*Date\.now\(\) \/ 1000/);
    const fine = actionEvent("l", { action_type: "x" }, { occurredAt: new Date("2026-11-21T10:00:00Z") });
    assert.equal(fine.occurred_at, 1_795_255_200);
    assert.ok(MAX_TIMESTAMP > 1e11);
  });

  it("names every wrong field, with the closest known name for a typo", () => {
    const error = refusal(() =>
      actionEvent("", { action_type: "", succes: false, duration_ms: -1 } as never),
    );
    const byPath = Object.fromEntries(error.errors.map((e) => [e.path, e.message]));
    assert.match(byPath["payload.succes"]!, /unknown field, did you mean 'success'\?/);
    assert.match(byPath["payload.action_type"]!, /must NOT have fewer than 1 characters/);
    assert.match(byPath["payload.duration_ms"]!, /must be >= 0/);
    assert.match(byPath["loop_id"]!, /must NOT have fewer than 1 characters/);
  });

  it("refuses a rejected call said to have succeeded, and control characters in a loop id", () => {
    assert.match(refusal(() => actionEvent("l", { action_type: "x", rejected: true, success: true })).message, /rejected call did not succeed/);
    assert.match(refusal(() => actionEvent("l\n2", { action_type: "x" })).message, /^loop_id: must match pattern/);
  });

  it("cuts a long result, keeping its digest and naming the cut", () => {
    const event = actionEvent("l", { action_type: "x", result: "y".repeat(5000) });
    assert.equal(Array.from(event.payload.result!).length, 2000);
    assert.deepEqual(event.payload.truncated, ["result"]);
    assert.match(event.payload.result!, /\[3000 characters cut\]/);
    assert.match(event.payload.result_digest!, /^[0-9a-f]{40}$/);
  });
});

describe("settings", () => {
  it("reads the Python client's environment variables", () => {
    const settings = loadSettings({}, {
      LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS: "a:9092, b:9093",
      LOOPWARDEN_TOPICS__WARNINGS: "team.warnings",
      LOOPWARDEN_PUBLISHER__LINGER_MS: "5",
      LOOPWARDEN_PUBLISHER__ACKS: "1",
      LOOPWARDEN_KAFKA__SECURITY__PROTOCOL: "SASL_SSL",
      LOOPWARDEN_KAFKA__SECURITY__SASL_MECHANISM: "SCRAM-SHA-512",
      LOOPWARDEN_KAFKA__SECURITY__SASL_USERNAME: "agent",
      LOOPWARDEN_KAFKA__SECURITY__SASL_PASSWORD: "s3cret",
    });
    assert.deepEqual(settings.bootstrapServers, ["a:9092", "b:9093"]);
    assert.equal(settings.topics.warnings, "team.warnings");
    assert.equal(settings.topics.actions, "loopwarden.actions");
    assert.equal(settings.publisher.lingerMs, 5);
    assert.equal(settings.publisher.acks, "1");
    assert.equal(settings.security.saslMechanism, "SCRAM-SHA-512");
  });

  it("says which variable is wrong or missing", () => {
    assert.throws(() => loadSettings({}, { LOOPWARDEN_PUBLISHER__LINGER_MS: "soon" }), (error: Error) =>
      error instanceof ConfigurationError && /LOOPWARDEN_PUBLISHER__LINGER_MS=soon: expected a number/.test(error.message));
    assert.throws(() => loadSettings({}, { LOOPWARDEN_KAFKA__SECURITY__PROTOCOL: "SASL_PLAINTEXT" }), (error: Error) =>
      error instanceof ConfigurationError && /SASL_PLAINTEXT needs sasl_mechanism, sasl_username, sasl_password/.test(error.message));
    assert.throws(() => loadSettings({}, { LOOPWARDEN_KAFKA__SECURITY__PROTOCOL: "TLS" }), /expected one of PLAINTEXT, SSL/);
  });

  it("names the bootstrap servers when no broker answers, within seconds", async () => {
    const started = Date.now();
    await assert.rejects(
      Publisher.connect({ bootstrapServers: ["127.0.0.1:1"] }),
      (error: Error) => error instanceof PublisherUnavailableError && /no Kafka broker answered at 127\.0\.0\.1:1 \(LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS\)/.test(error.message),
    );
    assert.ok(Date.now() - started < 30_000);
  });
});

describe("the contract", () => {
  it("is generated from the schemas the Python models export, and up to date", () => {
    const check = spawnSync(process.execPath, ["scripts/generate-types.mjs", "--check"], { cwd: packageRoot, encoding: "utf8" });
    assert.equal(check.status, 0, check.stderr);
    assert.match(check.stdout, /contract up to date/);
  });

  it("notices a schema that drifted from the generated types", () => {
    const drifted = mkdtempSync(join(tmpdir(), "drifted-schemas-"));
    cpSync(join(repository, "docs", "schemas"), drifted, { recursive: true });
    const warnings = JSON.parse(readFileSync(join(drifted, "warnings.json"), "utf8"));
    warnings.properties.iteration = { type: "string" }; // a model changed a field's type
    writeFileSync(join(drifted, "warnings.json"), JSON.stringify(warnings, null, 2));
    const check = spawnSync(process.execPath, ["scripts/generate-types.mjs", "--check"], {
      cwd: packageRoot,
      encoding: "utf8",
      env: { ...process.env, LOOPWARDEN_SCHEMAS: drifted },
    });
    rmSync(drifted, { recursive: true });
    assert.equal(check.status, 1);
    assert.match(check.stderr, /out of date .*schemas\/warnings\.json.*src\/generated\/contract\.ts/);
  });
});
