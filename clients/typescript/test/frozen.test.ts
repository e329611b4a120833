/** Records of every schema version we shipped, frozen in the repository
 * (tests/fixtures/records/v<N>/<role>.jsonl, written once by
 * tests/support/freeze_records.py), read by this client as the Python suite reads them
 * (tests/unit/test_frozen_records.py): each passes its topic's shipped schema, and a
 * record of a topic the worker writes decodes as a subscriber decodes it. No broker. */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

import { SCHEMA_VERSION } from "../src/events.js";
import { fieldErrors, topicIndex, validator } from "../src/contract.js";
import { decode } from "../src/subscriber.js";
import { repository } from "./support.js";

const frozen = join(repository, "tests", "fixtures", "records");
const versions = readdirSync(frozen)
  .filter((name) => /^v\d+$/.test(name))
  .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));

function lines(version: string, role: string): string[] {
  return readFileSync(join(frozen, version, `${role}.jsonl`), "utf8").split("\n").filter(Boolean);
}

describe("frozen records of every shipped schema version", () => {
  it("has every version up to this client's and every topic of each", () => {
    assert.deepEqual(versions, Array.from({ length: SCHEMA_VERSION }, (_, n) => `v${n + 1}`));
    for (const version of versions) {
      const roles = readdirSync(join(frozen, version)).map((file) => file.replace(/\.jsonl$/, ""));
      assert.deepEqual(roles.sort(), Object.keys(topicIndex.topics).sort(), version);
    }
  });

  for (const version of versions) {
    for (const [role, { direction }] of Object.entries(topicIndex.topics)) {
      it(`reads ${version}/${role} with today's schema`, () => {
        const validate = validator(role);
        const records = lines(version, role);
        assert.ok(records.length > 0);
        for (const line of records) {
          const record: unknown = JSON.parse(line);
          assert.ok(validate(record), `${version}/${role}: ${JSON.stringify(fieldErrors(validate.errors))}`);
          if (direction === "out") assert.deepEqual(decode(role, Buffer.from(line)), record);
        }
      });
    }
  }
});
