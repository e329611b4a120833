/** docs/typescript.md runs as written: each `ts` block (but those marked
 * `<!-- not run: why -->`), in order, as a file of this package against the test run's
 * broker and worker, its output compared with the plain block the page shows after it
 * (`<!-- output of the block above -->`; `…` stands for any text). The Python suite
 * runs the page's other blocks (tests/integration/test_readme.py). */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";

import { brokerSettings, packageRoot, repository } from "./support.js";

interface Block {
  language: string;
  code: string;
  line: number;
  notRun?: string;
  shows?: string;
}

/** The fenced blocks of a page, each with the skip reason or the output that follows it. */
export function pageBlocks(text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  let showsNext = false;
  for (let i = 0; i < lines.length; i++) {
    if (/^<!-- output of the block above -->\s*$/.test(lines[i]!)) showsNext = true;
    const opening = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!opening) continue;
    const start = i;
    const code: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) code.push(lines[i]!);
    const notRun = /^<!-- not run: (.+) -->\s*$/.exec(lines[i + 1] ?? "")?.[1];
    const block: Block = { language: opening[1]!, code: code.join("\n"), line: start + 1, notRun };
    if (showsNext && block.language === "") blocks.at(-1)!.shows = block.code;
    else blocks.push(block);
    showsNext = false;
  }
  return blocks;
}

function assertShown(shown: string, printed: string, where: string): void {
  const actual = printed.split("\n").map((line) => line.trimEnd()).filter((line) => line.trim());
  const expected = shown.split("\n").map((line) => line.trimEnd()).filter((line) => line.trim());
  const patterns = expected.map(
    (line) => new RegExp(`^${line.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`),
  );
  const same = actual.length === expected.length && patterns.every((pattern, i) => pattern.test(actual[i]!));
  assert.ok(same, `${where}: the page shows\n${shown}\nbut the block printed\n${printed}`);
}

const page = join(repository, "docs", "typescript.md");
const scratch = join(packageRoot, ".docs-blocks"); // inside the package: `import "loopwarden"` resolves to it

describe("docs/typescript.md", () => {
  after(() => rmSync(scratch, { recursive: true, force: true }));
  const blocks = pageBlocks(readFileSync(page, "utf8")).filter((block) => block.language === "ts");

  it("has ts blocks that run, each showing what it prints", () => {
    const run = blocks.filter((block) => !block.notRun);
    assert.ok(run.length >= 3 && run.every((block) => block.shows !== undefined), "every run block shows its output");
    assert.ok(blocks.filter((block) => block.notRun).length >= 3, "the adapters' blocks say why they are not run");
  });

  for (const block of blocks.filter((b) => !b.notRun)) {
    it(`line ${block.line} runs as written`, () => {
      mkdirSync(scratch, { recursive: true });
      const file = join(scratch, `block_${block.line}.ts`);
      writeFileSync(file, block.code);
      const done = spawnSync(process.execPath, ["--import", "tsx", file], {
        cwd: packageRoot,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS: brokerSettings().bootstrapServers.join(",") },
      });
      assert.equal(done.status, 0, `docs/typescript.md line ${block.line}:\n${done.stdout}\n${done.stderr}`);
      assertShown(block.shows!, done.stdout, `docs/typescript.md line ${block.line}`);
    });
  }
});
