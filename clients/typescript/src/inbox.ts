/** Per loop, the warnings waiting for its next model call, and the stop in force. */
import type { LoopWarning } from "./generated/contract.js";
import { isStop } from "./text.js";

const TRIGGERS_KEPT = 64;

interface LoopBox {
  pending: LoopWarning[];
  shown: LoopWarning[];
  stop: LoopWarning | undefined;
  triggers: Set<string>;
}

export class WarningInbox {
  private readonly boxes = new Map<string, LoopBox>();
  private readonly listeners = new Set<() => void>();

  constructor(private readonly maxLoops = 10_000) {}

  /** Keep `warning` for its loop. */
  add(warning: LoopWarning): void {
    const box = this.box(warning.loop_id);
    box.pending.push(warning);
    box.triggers.add(warning.trigger_event_id);
    if (box.triggers.size > TRIGGERS_KEPT) box.triggers.delete(box.triggers.values().next().value!);
    if (isStop(warning) && box.stop === undefined) box.stop = warning;
    for (const listener of [...this.listeners]) listener();
  }

  /** The loop's warnings not handed out yet, oldest first; each is handed out once. */
  take(loopId: string): LoopWarning[] {
    const box = this.boxes.get(loopId);
    if (!box?.pending.length) return [];
    const pending = box.pending;
    box.pending = [];
    return pending;
  }

  /** The latest `keep` warnings shown to the loop, with those not shown yet added. */
  shown(loopId: string, keep: number): LoopWarning[] {
    const box = this.boxes.get(loopId);
    if (box === undefined) return [];
    box.shown = [...box.shown, ...this.take(loopId)].slice(-keep);
    return box.shown;
  }

  /** The stop recommendation in force for the loop, if any. */
  stopFor(loopId: string): LoopWarning | undefined {
    return this.boxes.get(loopId)?.stop;
  }

  /** Resolves true once a warning about `eventId` (or a stop) arrived for the loop,
   * false after `timeoutMs`. */
  waitAnswer(loopId: string, eventId: string, timeoutMs: number): Promise<boolean> {
    const answered = () => {
      const box = this.boxes.get(loopId);
      return box !== undefined && (box.stop !== undefined || box.triggers.has(eventId));
    };
    if (answered()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (result: boolean) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve(result);
      };
      const check = () => answered() && done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.listeners.add(check);
    });
  }

  /** Drop what is kept for the loop (its run is over). */
  forget(loopId: string): void {
    this.boxes.delete(loopId);
  }

  private box(loopId: string): LoopBox {
    let box = this.boxes.get(loopId);
    if (box === undefined) {
      box = { pending: [], shown: [], stop: undefined, triggers: new Set() };
      this.boxes.set(loopId, box);
      if (this.boxes.size > this.maxLoops) this.boxes.delete(this.boxes.keys().next().value!);
    }
    return box;
  }
}
