// Runs the package's tests against a real broker and worker, started once for every
// test file the way the Python suite's fixtures start them (tests/support/ts_stack.py:
// the embedded broker, or Apache Kafka with LOOPWARDEN_TEST_BROKER=kafka; topics of
// their own, one `loopwarden worker`), then node's test runner with the worker's
// LOOPWARDEN_* settings in its environment (the client reads the same variables).
// LOOPWARDEN_PYTHON names the Python with loopwarden installed (default: the
// repository's .venv). Bounded: the stack is stopped after RUN_LIMIT_S whatever happens,
// by the pid this script started.
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repository = resolve(packageRoot, "..", "..");
process.env.LOOPWARDEN_PYTHON ??= join(repository, ".venv", "bin", "python");
const python = process.env.LOOPWARDEN_PYTHON;
const RUN_LIMIT_S = Number(process.env.RUN_LIMIT_S ?? 900);
const READY_LIMIT_S = 240;
const broker = process.env.LOOPWARDEN_TEST_BROKER ?? "embedded";

const stack = spawn(python, [join(repository, "tests", "support", "ts_stack.py")], {
  env: { ...process.env, PYTHONUNBUFFERED: "1" },
  detached: true, // a process group of its own: the broker's and the worker's
  stdio: ["pipe", "pipe", "inherit"],
});
let stopped = false;

/** Close its standard input (it stops the worker, then the broker; `failed`: it prints
 * the worker's last lines first); kill its group by the pid started here if it is
 * still there 30 s later. */
function stop(failed = false) {
  if (stopped) return;
  stopped = true;
  stack.stdin.end(failed ? "failed\n" : "");
  setTimeout(() => {
    try {
      process.kill(-stack.pid, "SIGKILL");
    } catch {}
  }, 30_000).unref();
}
const limit = setTimeout(() => {
  console.error(`run-tests: over ${RUN_LIMIT_S} s, stopping the broker and worker`);
  stop();
  process.exit(124);
}, RUN_LIMIT_S * 1000);
limit.unref();
process.on("SIGINT", () => (stop(), process.exit(130)));
process.on("SIGTERM", () => (stop(), process.exit(143)));

const securedEnv = {};
const settings = await new Promise((resolveReady, reject) => {
  const found = {};
  const timer = setTimeout(() => reject(new Error(`no worker ready within ${READY_LIMIT_S} s`)), READY_LIMIT_S * 1000);
  createInterface({ input: stack.stdout }).on("line", (line) => {
    if (line === "ready") {
      clearTimeout(timer);
      resolveReady(found);
    }
    const match = /^(LOOPWARDEN_[A-Z0-9_]+)=(.*)$/.exec(line);
    if (match) found[match[1]] = match[2];
    const secured = /^secured (LOOPWARDEN_[A-Z0-9_]+)=(.*)$/.exec(line); // Apache Kafka's SASL_SSL listener
    if (secured) securedEnv[secured[1]] = secured[2];
  });
  stack.on("exit", (code) => reject(new Error(`tests/support/ts_stack.py exited (${code}) before it was ready`)));
}).catch((error) => {
  console.error(`run-tests: ${error.message}`);
  stop();
  process.exit(1);
});
const described = broker === "kafka" ? "Apache Kafka" : "the embedded broker";
console.log(`run-tests: ${described} on ${settings.LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS} and a worker ready`);

// test/*.test.ts, and on Apache Kafka test/kafka/*.test.ts (its SASL_SSL listener)
const testFiles = (folder) =>
  readdirSync(join(packageRoot, folder)).filter((name) => name.endsWith(".test.ts")).map((name) => join(folder, name));
const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : [...testFiles("test"), ...(broker === "kafka" ? testFiles(join("test", "kafka")) : [])];
if (Object.keys(securedEnv).length) settings.LOOPWARDEN_TS_SECURED = JSON.stringify(securedEnv);
const tests = spawn(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=1", ...files], {
  cwd: packageRoot,
  env: { ...process.env, ...settings },
  stdio: "inherit",
});
const code = await new Promise((done) => tests.on("exit", (exitCode, signal) => done(exitCode ?? (signal ? 1 : 0))));
stop(code !== 0);
await new Promise((done) => (stack.exitCode !== null ? done() : stack.on("exit", done)));
process.exit(code);
