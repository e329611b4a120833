/** On Apache Kafka's SASL_SSL listener (SCRAM-SHA-256 over TLS, the CA file of a
 * certificate made for the run): the client connects with the Python client's security
 * variables, a loop is warned and stopped over it, and a wrong password is refused by
 * name. Run by `make test-typescript-kafka` (scripts/run-tests.mjs adds this folder on
 * Apache Kafka). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { LoopStopped } from "../../src/errors.js";
import { LoopGuard } from "../../src/guard.js";
import { ConfigurationError } from "../../src/errors.js";
import { Publisher } from "../../src/publisher.js";
import { WarningSubscriber } from "../../src/subscriber.js";
import { loadSettings } from "../../src/settings.js";
import { loopId } from "../support.js";

function securedEnvironment(): Record<string, string> {
  const text = process.env.LOOPWARDEN_TS_SECURED;
  assert.ok(text, "the run's SASL_SSL listener (LOOPWARDEN_TS_SECURED, set by scripts/run-tests.mjs on Apache Kafka)");
  return { ...process.env, ...JSON.parse(text) } as Record<string, string>;
}

describe("over SASL_SSL", () => {
  it("reads the security variables and takes a loop to its stop over TLS and SCRAM", async () => {
    const settings = loadSettings({}, securedEnvironment());
    assert.equal(settings.security.protocol, "SASL_SSL");
    assert.equal(settings.security.saslMechanism, "SCRAM-SHA-256");
    const guard = await LoopGuard.start(settings);
    const loop = loopId("secured");
    let stopped: LoopStopped | undefined;
    try {
      for (let step = 0; step < 25 && !stopped; step++) {
        try {
          await guard.check(loop);
          guard.toolCall(loop, "deploy", { env: "prod" }, { error: "permission denied: ./deploy.sh" });
        } catch (error) {
          if (!(error instanceof LoopStopped)) throw error;
          stopped = error;
        }
      }
    } finally {
      await guard.close();
    }
    assert.ok(stopped, "stopped over the secured listener");
    assert.ok(guard.publisher.idempotent);
  });

  it("says the credentials were refused, naming the variables, not the password", async () => {
    const env = { ...securedEnvironment(), LOOPWARDEN_KAFKA__SECURITY__SASL_PASSWORD: "not-the-password" };
    for (const connect of [() => Publisher.connect(loadSettings({}, env)), () => WarningSubscriber.start({ settings: loadSettings({}, env) })]) {
      await assert.rejects(connect(), (error: Error) => {
        assert.ok(error instanceof ConfigurationError, `${error.name}: ${error.message}`);
        assert.match(error.message, /the broker at 127\.0\.0\.1:\d+ refused the SASL credentials of "agent" \(LOOPWARDEN_KAFKA__SECURITY__SASL_USERNAME/);
        assert.ok(!error.message.includes("not-the-password"), "the password is not repeated");
        return true;
      });
    }
  });

  it("says TLS failed when the CA file is not the broker's", async () => {
    const env = { ...securedEnvironment(), LOOPWARDEN_KAFKA__SECURITY__SSL_CAFILE: "/etc/ssl/certs/ca-certificates.crt" };
    await assert.rejects(Publisher.connect(loadSettings({}, env)), (error: Error) => {
      assert.ok(error instanceof ConfigurationError, `${error.name}: ${error.message}`);
      assert.match(error.message, /TLS with the broker at 127\.0\.0\.1:\d+ failed \(LOOPWARDEN_KAFKA__SECURITY__SSL_CAFILE/);
      return true;
    });
  });
});
