/**
 * The stop ladder in an agent's loop. A guard publishes the agent's steps and keeps the
 * warnings the worker sends back for its loops; between two steps the agent calls
 * {@link LoopGuard.check}: it waits (at most `verdictWaitMs`) for the verdict on the step
 * just published, throws {@link LoopStopped} once the ladder reached `stop`, and
 * otherwise returns the note to put in front of the next model call (the latest
 * warnings, or undefined while there are none).
 *
 * The loops' state (families, the note, the stop, the step a model call waits for) is a
 * {@link GuardState}, the same contract as the Python guard's (docs/guard-contract.md).
 *
 * ```ts
 * const guard = await LoopGuard.start();
 * await guard.recall("run-7", task);                  // with memoryScope: what fits the task
 * for (;;) {
 *   const note = await guard.check("run-7");          // throws LoopStopped at the end
 *   const step = await model(note ? [note, ...history] : history);
 *   guard.toolCall("run-7", step.tool, step.args, { result: await run(step) });
 * }
 * ```
 */
import { LoopStopped, LoopwardenError } from "./errors.js";
import type { LoopWarning, Verdict } from "./generated/contract.js";
import { GuardState, type Family } from "./guard-state.js";
import type { WarningInbox } from "./inbox.js";
import { memoriesFor } from "./memories.js";
import { Publisher } from "./publisher.js";
import { resolveSettings, type Settings, type SettingsInput } from "./settings.js";
import { VerdictSubscriber, WarningSubscriber, type RecordSubscriber } from "./subscriber.js";
import { stopText } from "./text.js";
import { toolCallFields, type ToolCallDetails } from "./toolcalls.js";
import type { ActionFields } from "./events.js";

/** The action type of the agent's own message turn, and of the person's turn. */
export const SAID_ACTION = "message";
export const HEARD_ACTION = "user";

export class LoopGuard {
  /** What the guard knows of its loops, with no broker (the guard contract's pure half). */
  readonly state: GuardState;
  readonly inbox: WarningInbox;
  private saidNoMemories = false;

  private constructor(
    readonly settings: Settings,
    readonly publisher: Publisher,
    readonly warnings: RecordSubscriber<LoopWarning>,
    readonly verdicts: RecordSubscriber<Verdict> | undefined,
  ) {
    this.state = new GuardState(settings.shownWarnings);
    this.inbox = this.state.inbox;
    warnings.onRecord = (warning) => {
      this.state.add(warning);
    };
    if (verdicts !== undefined) {
      verdicts.onRecord = (verdict) => {
        this.state.answer(verdict);
      };
    }
  }

  /** A guard connected to the broker, reading warnings (and the worker's verdicts, unless
   * `verdicts` is off) from now on. */
  static async start(settings: SettingsInput | Settings = {}): Promise<LoopGuard> {
    const resolved = resolveSettings(settings);
    const warnings = await WarningSubscriber.start({ settings: resolved });
    let verdicts: RecordSubscriber<Verdict> | undefined;
    try {
      if (resolved.verdicts) verdicts = await VerdictSubscriber.start({ settings: resolved });
      return new LoopGuard(resolved, await Publisher.connect(resolved), warnings, verdicts);
    } catch (error) {
      await warnings.close();
      await verdicts?.close();
      throw error;
    }
  }

  /** Keep the loop's warnings from now on (publishing for it does this too), in
   * `family` (`parent_loop_id`, `root_loop_id`, `agent`, `task`): its place in a family of
   * delegated loops, put on each of its events (the task on the first only), so that the
   * fleet role sees the family. */
  watch(loopId: string, family?: Family): void {
    this.state.watch(loopId, family);
  }

  /** The family fields of a watched loop (empty: it is its own family's root). */
  lineage(loopId: string): Family {
    return this.state.lineage(loopId);
  }

  /** At a run's start: the memories of `memoryScope` that fit `task`, kept in the loop's
   * note; how many (0 when off, nothing fits, or no worker answers: said once on the
   * console, the run goes on). */
  async recall(loopId: string, task: string | undefined): Promise<number> {
    let contents: string[];
    try {
      contents = await memoriesFor(this.settings, task);
    } catch (error) {
      if (!(error instanceof LoopwardenError)) throw error;
      if (!this.saidNoMemories) {
        this.saidNoMemories = true;
        console.warn(`loopwarden: no memories for this agent's runs: ${error.message}`);
      }
      return 0;
    }
    this.state.learned(loopId, contents);
    return contents.length;
  }

  /** Publish one action of `loopId` (validated now, sent within milliseconds); its id.
   * The loop's family fields go with it (see {@link watch}). */
  publish(loopId: string, fields: ActionFields): string {
    const { fields: carried, eventId } = this.state.outgoing(loopId, fields);
    return this.publisher.publish(loopId, carried, eventId === undefined ? {} : { eventId });
  }

  /** Publish one tool call: its name, arguments, result or error. */
  toolCall(loopId: string, tool: string, args: unknown, details: ToolCallDetails = {}): string {
    return this.publish(loopId, toolCallFields(tool, args, details));
  }

  /** The agent's answer without a tool call (restating it in other words is a loop too). */
  said(loopId: string, text: string, fields: Partial<ActionFields> = {}): string {
    return this.publish(loopId, { action_type: SAID_ACTION, turn: "message", result: text, ...fields });
  }

  /** What the person said to the agent: heard, never counted as the agent's action. */
  heard(loopId: string, text: string): string {
    return this.publish(loopId, { action_type: HEARD_ACTION, turn: "counterpart", result: text });
  }

  /** The run ended: a terminating message turn. */
  end(loopId: string, options: { reason?: string; success?: boolean } = {}): string {
    return this.publish(loopId, {
      action_type: "loop_end",
      turn: "message",
      terminated: true,
      success: options.success ?? null,
      result: options.reason ?? "finalized",
    });
  }

  /** Wait for the verdict on the loop's latest published step: until the worker answered
   * it (every answering role's verdict and the warnings they announced), a stop is in
   * force, or `verdictWaitMs` passed since it was published; ms waited. */
  async awaitVerdict(loopId: string): Promise<number> {
    const due = this.state.due(loopId);
    if (due === undefined) return 0;
    const remaining = due.at + this.settings.verdictWaitMs - Date.now();
    if (remaining <= 0) return 0;
    const started = Date.now();
    await this.publisher.sent(); // the step must be out to be answered (failures: close())
    await this.inbox.waitAnswer(loopId, due.eventId, Math.max(0, remaining - (Date.now() - started)));
    return Date.now() - started;
  }

  /** The note for the loop's next model call (the memories its run started with, its
   * latest warnings), or undefined. */
  note(loopId: string): string | undefined {
    return this.state.note(loopId);
  }

  /** The stop recommendation in force for the loop, if any. */
  stopFor(loopId: string): LoopWarning | undefined {
    return this.state.stopFor(loopId);
  }

  /** Between two steps: the verdict on the last one, {@link LoopStopped} when the ladder
   * reached its end, else the note for the next model call (undefined: none). */
  async check(loopId: string): Promise<string | undefined> {
    this.state.watch(loopId);
    await this.awaitVerdict(loopId);
    const stop = this.stopFor(loopId);
    if (stop) throw new LoopStopped(stopText(stop), stop);
    return this.note(loopId);
  }

  /** The run is over: stop keeping its warnings. */
  forget(loopId: string): void {
    this.state.forget(loopId);
  }

  /** Deliver what was published, then disconnect. */
  async close(): Promise<void> {
    try {
      await this.publisher.close();
    } finally {
      await this.warnings.close();
      await this.verdicts?.close();
    }
  }
}
