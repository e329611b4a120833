/**
 * The stop ladder in an agent's loop. A guard publishes the agent's steps and keeps the
 * warnings the worker sends back for its loops; between two steps the agent calls
 * {@link LoopGuard.check}: it waits (at most `verdictWaitMs`) for the verdict on the step
 * just published, throws {@link LoopStopped} once the ladder reached `stop`, and
 * otherwise returns the note to put in front of the next model call (the latest
 * warnings, or undefined while there are none).
 *
 * ```ts
 * const guard = await LoopGuard.start();
 * for (;;) {
 *   const note = await guard.check("run-7");          // throws LoopStopped at the end
 *   const step = await model(note ? [note, ...history] : history);
 *   guard.toolCall("run-7", step.tool, step.args, { result: await run(step) });
 * }
 * ```
 */
import { LoopStopped } from "./errors.js";
import type { LoopWarning, Verdict } from "./generated/contract.js";
import { WarningInbox } from "./inbox.js";
import { Publisher } from "./publisher.js";
import { resolveSettings, type Settings, type SettingsInput } from "./settings.js";
import { VerdictSubscriber, WarningSubscriber, type RecordSubscriber } from "./subscriber.js";
import { contextText, stopText } from "./text.js";
import { toolCallFields, type ToolCallDetails } from "./toolcalls.js";
import type { ActionFields } from "./events.js";

/** The action type of the agent's own message turn, and of the person's turn. */
export const SAID_ACTION = "message";
export const HEARD_ACTION = "user";

export class LoopGuard {
  readonly inbox = new WarningInbox();
  private readonly watched = new Set<string>();
  private readonly due = new Map<string, { at: number; eventId: string }>();

  private constructor(
    readonly settings: Settings,
    readonly publisher: Publisher,
    readonly warnings: RecordSubscriber<LoopWarning>,
    readonly verdicts: RecordSubscriber<Verdict> | undefined,
  ) {
    warnings.onRecord = (warning) => {
      if (this.watched.has(warning.loop_id)) this.inbox.add(warning);
    };
    if (verdicts !== undefined) {
      verdicts.onRecord = (verdict) => {
        if (this.watched.has(verdict.loop_id)) this.inbox.answer(verdict);
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

  /** Publish one action of `loopId` (validated now, sent within milliseconds); its id. */
  publish(loopId: string, fields: ActionFields): string {
    this.watched.add(loopId);
    const eventId = this.publisher.publish(loopId, fields);
    if (fields.turn !== "counterpart") this.due.set(loopId, { at: Date.now(), eventId });
    return eventId;
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
    const due = this.due.get(loopId);
    this.due.delete(loopId);
    if (due === undefined || this.inbox.stopFor(loopId)) return 0;
    const remaining = due.at + this.settings.verdictWaitMs - Date.now();
    if (remaining <= 0) return 0;
    const started = Date.now();
    await this.publisher.sent(); // the step must be out to be answered (failures: close())
    await this.inbox.waitAnswer(loopId, due.eventId, Math.max(0, remaining - (Date.now() - started)));
    return Date.now() - started;
  }

  /** The note for the loop's next model call (its latest warnings), or undefined. */
  note(loopId: string): string | undefined {
    const shown = this.inbox.shown(loopId, this.settings.shownWarnings);
    return shown.length ? contextText(shown) : undefined;
  }

  /** The stop recommendation in force for the loop, if any. */
  stopFor(loopId: string): LoopWarning | undefined {
    return this.inbox.stopFor(loopId);
  }

  /** Between two steps: the verdict on the last one, {@link LoopStopped} when the ladder
   * reached its end, else the note for the next model call (undefined: none). */
  async check(loopId: string): Promise<string | undefined> {
    this.watched.add(loopId);
    await this.awaitVerdict(loopId);
    const stop = this.stopFor(loopId);
    if (stop) throw new LoopStopped(stopText(stop), stop);
    return this.note(loopId);
  }

  /** The run is over: stop keeping its warnings. */
  forget(loopId: string): void {
    this.watched.delete(loopId);
    this.due.delete(loopId);
    this.inbox.forget(loopId);
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
