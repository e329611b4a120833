// Runs the package's tests against a real broker and worker: `loopwarden dev` (the
// embedded broker and one worker, as the Python suite starts them) on a free loopback
// port, with a memory store of its own, started once for every test file and stopped by
// its pid; then node's test runner. `LOOPWARDEN_BIN` names the loopwarden command
// (default: the repository's .venv), `LOOPWARDEN_PYTHON` its Python (the cross-language
// vectors). Bounded: the stack is stopped after RUN_LIMIT_S whatever happens.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repository = resolve(packageRoot, "..", "..");
const bin = process.env.LOOPWARDEN_BIN ?? join(repository, ".venv", "bin", "loopwarden");
process.env.LOOPWARDEN_PYTHON ??= join(dirname(bin), "python");
const RUN_LIMIT_S = Number(process.env.RUN_LIMIT_S ?? 900);
const READY_LIMIT_S = 120;

const scratch = mkdtempSync(join(tmpdir(), "loopwarden-ts-tests-"));
const env = { ...process.env, LOOPWARDEN_MEMORY__URI: join(scratch, "memory"), PYTHONUNBUFFERED: "1" };
delete env.LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS;
const stack = spawn(bin, ["dev", "--web-port", "0"], { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
let log = "";
let stopped = false;

function stop() {
  if (stopped) return;
  stopped = true;
  try {
    process.kill(-stack.pid, "SIGTERM"); // its process group: the broker and the worker
  } catch {}
  setTimeout(() => {
    try {
      process.kill(-stack.pid, "SIGKILL");
    } catch {}
  }, 10_000).unref();
}
const limit = setTimeout(() => {
  console.error(`run-tests: over ${RUN_LIMIT_S} s, stopping the broker and worker`);
  stop();
  process.exit(124);
}, RUN_LIMIT_S * 1000);
limit.unref();
process.on("SIGINT", () => (stop(), process.exit(130)));
process.on("SIGTERM", () => (stop(), process.exit(143)));

const bootstrap = await new Promise((resolveReady, reject) => {
  const timer = setTimeout(() => reject(new Error(`no worker ready within ${READY_LIMIT_S} s:\n${log}`)), READY_LIMIT_S * 1000);
  let broker;
  const read = (chunk) => {
    log += chunk;
    broker ??= /broker on (127\.0\.0\.1:\d+)/.exec(log)?.[1];
    if (broker && log.includes("worker ready")) {
      clearTimeout(timer);
      resolveReady(broker);
    }
  };
  stack.stdout.setEncoding("utf8").on("data", read);
  stack.stderr.setEncoding("utf8").on("data", read);
  stack.on("exit", (code) => reject(new Error(`loopwarden dev exited (${code}) before it was ready:\n${log}`)));
}).catch((error) => {
  console.error(`run-tests: ${error.message}`);
  stop();
  process.exit(1);
});
console.log(`run-tests: broker ${bootstrap} and a worker ready (${bin} dev)`);

const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : readdirSync(join(packageRoot, "test")).filter((name) => name.endsWith(".test.ts")).map((name) => join("test", name));
const tests = spawn(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=1", ...files], {
  cwd: packageRoot,
  env: { ...process.env, LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS: bootstrap },
  stdio: "inherit",
});
const code = await new Promise((done) => tests.on("exit", (exitCode, signal) => done(exitCode ?? (signal ? 1 : 0))));
stop();
await new Promise((done) => (stack.exitCode !== null ? done() : stack.on("exit", done)));
rmSync(scratch, { recursive: true, force: true });
if (code !== 0) console.error(`run-tests: the tests failed; the worker's last lines:\n${log.split("\n").slice(-15).join("\n")}`);
process.exit(code);
