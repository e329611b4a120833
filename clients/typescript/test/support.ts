/** What the tests share: the Python side of the cross-language vectors, and settings
 * for the broker that scripts/run-tests.mjs started. */
import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { after, before } from "node:test";

import { LoopGuard } from "../src/guard.js";
import { kafkaClient } from "../src/kafka.js";
import { loadSettings, type Settings } from "../src/settings.js";

export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const repository = resolve(packageRoot, "..", "..");
const python = process.env.LOOPWARDEN_PYTHON ?? join(repository, ".venv", "bin", "python");
const vectorsScript = join(repository, "tests", "support", "ts_vectors.py");

function runPython(args: string[], input?: string): string {
  const run = spawnSync(python, [vectorsScript, ...args], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  if (run.status !== 0) throw new Error(`${python} ${vectorsScript} ${args.join(" ")} failed:\n${run.stderr}`);
  return run.stdout;
}

let cached: Vectors | undefined;

export interface Vectors {
  loop_id: string;
  events: { fields: Record<string, unknown>; event_id: string; occurred_at: number; record: string }[];
  digests: { text: string; digest: string }[];
  cuts: { payload: Record<string, unknown>; cut: Record<string, unknown> }[];
  partitions: { key: string; partitions: number; partition: number }[];
  texts: { context: string; stop: string; warnings: unknown[] };
  tool_calls: { tool: string; args: unknown; result: unknown; error: string | null; fields: Record<string, unknown> }[];
  records: Record<string, unknown[]>;
  keys: { event: unknown; key: string }[];
}

/** What Python makes of the shared cases (tests/support/ts_vectors.py cases). */
export function vectors(): Vectors {
  cached ??= JSON.parse(runPython(["cases"])) as Vectors;
  return cached;
}

/** Each sequence of record values run through the worker's own record processor. */
export function workerReads(sequences: Record<string, string[]>): Record<string, { outputs: unknown[]; dead_letters: string[] }> {
  return JSON.parse(runPython(["read"], JSON.stringify(sequences)));
}

/** Settings for the broker the test run started (LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS). */
export function brokerSettings(): Settings {
  if (!process.env.LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS) {
    throw new Error("no broker: run the tests with `npm test` (scripts/run-tests.mjs starts one)");
  }
  return loadSettings();
}

/** The partitions of `topic` on the test broker. */
export async function partitionsOf(topic: string): Promise<number[]> {
  const admin = kafkaClient(brokerSettings()).admin();
  await admin.connect();
  try {
    const [found] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
    return found!.partitions.map((partition) => partition.partitionId).sort((a, b) => a - b);
  } finally {
    await admin.disconnect();
  }
}

/** One guard for the tests of a `describe`: started before them, closed after; call the
 * returned function inside a test. */
export function sharedGuard(): () => LoopGuard {
  let guard: LoopGuard | undefined;
  before(async () => {
    guard = await LoopGuard.start(brokerSettings());
  });
  after(async () => {
    await guard?.close();
  });
  return () => {
    if (guard === undefined) throw new Error("the shared guard has not started");
    return guard;
  };
}

/** A loop id of its own for one test. */
export function loopId(name: string): string {
  return `ts-${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
}
