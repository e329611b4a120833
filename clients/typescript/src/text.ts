/**
 * What an agent reads: the note put in front of its next model call, and why its run
 * was stopped. The same words as the Python adapters' (schemas/tool_calls.py), checked
 * by the cross-language tests.
 */
import type { LoopWarning } from "./generated/contract.js";

export const CONTEXT_HEADER = "[loopwarden] Loop warning — read before your next step:";
export const STOP_HEADER = "[loopwarden] This run was stopped: it kept repeating itself.";

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
