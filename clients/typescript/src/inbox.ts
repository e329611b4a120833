/** Per loop, the warnings waiting for its next model call, the stop in force, and the
 * worker's verdicts on its latest events (the same rules as the Python inbox: a wait
 * ends when every answering role heard of in the last 10 minutes has answered and the
 * warnings they announced have arrived; with no verdict ever heard, on a warning). */
import type { LoopWarning, Verdict } from "./generated/contract.js";
import { isStop } from "./text.js";

const TRIGGERS_KEPT = 64;
const ROLES_KEPT_MS = 600_000;

interface LoopBox {
  pending: LoopWarning[];
  stop: LoopWarning | undefined;
  /** Event id → warnings arrived about it. */
  triggers: Map<string, number>;
  /** Event id → role → warnings that role announced about it. */
  answers: Map<string, Map<string, number>>;
}

function bounded(kept: Map<string, unknown>): void {
  if (kept.size > TRIGGERS_KEPT) kept.delete(kept.keys().next().value!);
}

export class WarningInbox {
  private readonly boxes = new Map<string, LoopBox>();
  private readonly listeners = new Set<() => void>();
  private readonly roles = new Map<string, number>();

  constructor(private readonly maxLoops = 10_000) {}

  /** Keep `warning` for its loop. */
  add(warning: LoopWarning): void {
    const box = this.box(warning.loop_id);
    box.pending.push(warning);
    box.triggers.set(warning.trigger_event_id, (box.triggers.get(warning.trigger_event_id) ?? 0) + 1);
    bounded(box.triggers);
    if (isStop(warning) && box.stop === undefined) box.stop = warning;
    this.changed();
  }

  /** Keep a role's verdict on events of its loop. */
  answer(verdict: Verdict): void {
    const now = Date.now();
    for (const role of [verdict.role, ...(verdict.roles ?? [])]) this.roles.set(role, now);
    const box = this.box(verdict.loop_id);
    for (const [eventId, warnings] of Object.entries(verdict.answers)) {
      let answers = box.answers.get(eventId);
      if (answers === undefined) {
        answers = new Map();
        box.answers.set(eventId, answers);
        bounded(box.answers);
      }
      answers.set(verdict.role, warnings);
    }
    this.changed();
  }

  /** The verdicts on `eventId` of the loop so far: role → warnings it announced. */
  answers(loopId: string, eventId: string): Map<string, number> {
    return new Map(this.boxes.get(loopId)?.answers.get(eventId) ?? []);
  }

  private liveRoles(): string[] {
    const since = Date.now() - ROLES_KEPT_MS;
    return [...this.roles].filter(([, heard]) => heard >= since).map(([role]) => role);
  }

  private changed(): void {
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

  /** The stop recommendation in force for the loop, if any. */
  stopFor(loopId: string): LoopWarning | undefined {
    return this.boxes.get(loopId)?.stop;
  }

  /** Resolves true once `eventId` of the loop is answered (or a stop is in force),
   * false after `timeoutMs`. */
  waitAnswer(loopId: string, eventId: string, timeoutMs: number): Promise<boolean> {
    const answered = () => {
      const box = this.boxes.get(loopId);
      if (box === undefined) return false;
      if (box.stop !== undefined) return true;
      const roles = this.liveRoles();
      if (!roles.length) return box.triggers.has(eventId);
      const answers = box.answers.get(eventId);
      if (answers === undefined || roles.some((role) => !answers.has(role))) return false;
      let announced = 0;
      for (const count of answers.values()) announced += count;
      return (box.triggers.get(eventId) ?? 0) >= announced;
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
      box = { pending: [], stop: undefined, triggers: new Map(), answers: new Map() };
      this.boxes.set(loopId, box);
      if (this.boxes.size > this.maxLoops) this.boxes.delete(this.boxes.keys().next().value!);
    }
    return box;
  }
}
