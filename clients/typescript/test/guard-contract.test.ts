/** The guard contract, scenario by scenario, with no broker (docs/guard-contract.md):
 * tests/fixtures/guard_scenarios.json is shared with the Python suite
 * (tests/unit/test_guard_contract.py); here it runs on this client's GuardState. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

import type { ActionFields } from "../src/events.js";
import type { LoopWarning } from "../src/generated/contract.js";
import { GuardState, type Family } from "../src/guard-state.js";
import { contextText, memoryText } from "../src/text.js";
import { repository } from "./support.js";

type Step = Record<string, unknown> & { expect?: unknown };
interface Scenario {
  name: string;
  shown_warnings: number;
  steps: Step[];
}
const shared = JSON.parse(readFileSync(join(repository, "tests", "fixtures", "guard_scenarios.json"), "utf8")) as {
  warning_base: Record<string, unknown>;
  scenarios: Scenario[];
};

function expectedNote(expect: { memories: string[]; warnings: string[] } | null, warnings: Map<string, LoopWarning>) {
  if (expect === null) return undefined;
  const shown = expect.warnings.map((id) => warnings.get(id)!);
  return [memoryText(expect.memories), shown.length ? contextText(shown) : undefined].filter(Boolean).join("\n\n");
}

function run(scenario: Scenario, state: GuardState): void {
  const warnings = new Map<string, LoopWarning>();
  scenario.steps.forEach((step, number) => {
    const where = `${scenario.name}, step ${number}: ${JSON.stringify(step)}`;
    if ("watch" in step) state.watch(step.watch as string, step.family as Family | undefined);
    else if ("warning" in step) {
      const warning = { ...shared.warning_base, ...(step.warning as object) } as unknown as LoopWarning;
      warnings.set(warning.warning_id, warning);
      assert.equal(state.add(warning), step.kept, where);
    } else if ("publish" in step) {
      const { fields } = state.outgoing(step.publish as string, { ...(step.payload as ActionFields) });
      const { carries, lacks } = step.expect as { carries: Record<string, unknown>; lacks: string[] };
      for (const [name, value] of Object.entries(carries)) assert.equal((fields as Record<string, unknown>)[name], value, where);
      for (const name of lacks) assert.ok(!(name in fields), where);
    } else if ("due" in step) assert.equal(state.due(step.due as string) !== undefined, step.expect, where);
    else if ("note" in step) {
      const expect = step.expect as { memories: string[]; warnings: string[] } | null;
      assert.equal(state.note(step.note as string), expectedNote(expect, warnings), where);
    } else if ("stop" in step) assert.equal(state.stopFor(step.stop as string)?.warning_id ?? null, step.expect, where);
    else if ("learned" in step) state.learned(step.learned as string, step.memories as string[]);
    else if ("lineage" in step) assert.deepEqual(state.lineage(step.lineage as string), step.expect, where);
    else if ("forget" in step) state.forget(step.forget as string);
    else assert.fail(`unknown step ${JSON.stringify(step)}`);
  });
}

describe("the guard contract (shared scenarios)", () => {
  for (const scenario of shared.scenarios) {
    it(scenario.name, () => run(scenario, new GuardState(scenario.shown_warnings)));
  }
});
