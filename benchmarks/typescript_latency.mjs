// The TypeScript half of benchmarks/typescript_client.py: for each loop id given, publish
// the same failing call `calls` times with the package's Publisher and time the first
// warning of that loop from the moment its triggering event was handed to `publish`.
// One WarningSubscriber for every loop (started first), its fetch wait `maxWaitMs`.
// Reads {"loops": [...], "calls": N, "maxWaitMs": M} on stdin, prints JSON latencies (ms).
import { readFileSync } from "node:fs";

const { Publisher, WarningSubscriber } = await import(
  new URL("../clients/typescript/dist/index.js", import.meta.url).href
);

const job = JSON.parse(readFileSync(0, "utf8"));
const warnings = await WarningSubscriber.start({ maxWaitMs: job.maxWaitMs });
const publisher = await Publisher.connect();
const sentAt = new Map();
const latencies = [];
const waiting = new Map();
warnings.onRecord = (warning) => {
  const sent = sentAt.get(warning.trigger_event_id);
  const done = waiting.get(warning.loop_id);
  if (sent !== undefined && done) {
    waiting.delete(warning.loop_id);
    done(performance.now() - sent);
  }
};
for (const loopId of job.loops) {
  const first = new Promise((resolve) => waiting.set(loopId, resolve));
  for (let n = 0; n < job.calls; n++) {
    const id = publisher.publish(loopId, {
      action_type: "deploy",
      params: { env: "prod" },
      success: false,
      error_message: "permission denied: ./deploy.sh",
    });
    sentAt.set(id, performance.now());
  }
  const timeout = new Promise((resolve) => setTimeout(() => resolve(null), 30_000));
  latencies.push(await Promise.race([first, timeout]));
}
await publisher.close();
await warnings.close();
process.stdout.write(JSON.stringify({ latencies_ms: latencies }));
