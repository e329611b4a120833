/**
 * What an agent reads: the note put in front of its next model call, and why its run
 * was stopped. The headers are the Python adapters' own (schemas/tool_calls.py), read
 * from the constants the Python package exports.
 */
import { shared } from "./constants.js";
import type { LoopWarning } from "./generated/contract.js";

export const CONTEXT_HEADER: string = shared.context_header;
export const STOP_HEADER: string = shared.stop_header;
export const MEMORY_HEADER: string = shared.memory_header;

/** The memories block a run's note opens with (undefined without memories). */
export function memoryText(contents: readonly string[]): string | undefined {
  return contents.length ? [MEMORY_HEADER, ...contents.map((content) => `- ${content}`)].join("\n") : undefined;
}

/** The text injected into the model's next request: each warning's timeline message. */
export function contextText(warnings: readonly LoopWarning[]): string {
  return [CONTEXT_HEADER, ...warnings.map((warning) => `- (${warning.level}) ${warning.timeline_message}`)].join("\n");
}

/** Why the run was stopped: the header and the warning's reason as a sentence. */
export function stopText(warning: LoopWarning): string {
  const reason = warning.reason.trim();
  let sentence = reason.slice(0, 1).toUpperCase() + reason.slice(1);
  if (sentence && !".!?。".includes(sentence.slice(-1))) sentence += ".";
  return `${STOP_HEADER} ${sentence}`;
}

/** The warning recommends ending the run (the ladder's last step, or a guardrail halt). */
export function isStop(warning: LoopWarning): boolean {
  return warning.step === "stop" || (warning.next_actions ?? []).includes("stop");
}
