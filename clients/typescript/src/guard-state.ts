/**
 * What a guard knows of its loops, with no broker: the guard contract's pure half, as
 * the Python client's `GuardState` (loopwarden/adapters/guard_state.py) keeps it — which
 * loops it watches and their families, what each published event carries, which event a
 * model call waits for, the warnings kept per loop, the note and the stop. The contract
 * (docs/guard-contract.md) is checked scenario by scenario on both, without a broker
 * (tests/fixtures/guard_scenarios.json; test/guard-contract.test.ts here).
 */
import { newEventId, type ActionFields } from "./events.js";
import type { LoopWarning, Verdict } from "./generated/contract.js";
import { WarningInbox } from "./inbox.js";
import { contextText, memoryText } from "./text.js";

/** A loop's place in a family of delegated loops: the fields its events carry (the task
 * on its first event only). */
export interface Family {
  parent_loop_id?: string;
  root_loop_id?: string;
  agent?: string;
  task?: string;
}

/** The event a model call of a loop waits for: when it was handed over, and its id. */
export interface Due {
  at: number;
  eventId: string;
}

export class GuardState {
  readonly inbox: WarningInbox;
  private readonly watchedLoops = new Set<string>();
  private readonly families = new Map<string, Family>();
  private readonly dueEvents = new Map<string, Due>();
  private readonly shownLoops = new Map<string, LoopWarning[]>();
  private readonly memories = new Map<string, string>();

  constructor(
    readonly shownWarnings: number,
    maxLoops = 10_000,
  ) {
    this.inbox = new WarningInbox(maxLoops);
  }

  /** Watch the loop (its warnings are kept from now on), in `family`; true when new. */
  watch(loopId: string, family?: Family): boolean {
    const added = !this.watchedLoops.has(loopId);
    this.watchedLoops.add(loopId);
    if (family && Object.keys(family).length) this.families.set(loopId, { ...family });
    return added;
  }

  /** The loop's warnings are kept. */
  watching(loopId: string): boolean {
    return this.watchedLoops.has(loopId);
  }

  /** Every loop watched now. */
  watched(): string[] {
    return [...this.watchedLoops];
  }

  /** The family fields of a watched loop (empty: it is its own family's root). */
  lineage(loopId: string): Family {
    return { ...(this.families.get(loopId) ?? {}) };
  }

  /** `fields` as the loop's next event carries them: the loop is watched, its family's
   * fields are added (the task on its first event only), and — unless it is the person's
   * turn, which warns nothing — an event id the next model call waits for the verdict on
   * (`eventId`; undefined: the publisher picks one). */
  outgoing(loopId: string, fields: ActionFields): { fields: ActionFields; eventId?: string } {
    this.watchedLoops.add(loopId);
    const family = this.families.get(loopId);
    const carried: ActionFields = family ? { ...family, ...fields } : fields;
    if (family) delete family.task; // the first event carries it
    if (fields.turn === "counterpart") return { fields: carried };
    const eventId = newEventId();
    this.dueEvents.set(loopId, { at: Date.now(), eventId });
    return { fields: carried, eventId };
  }

  /** The event a model call of the loop waits for, taken once; undefined when nothing was
   * published since, or a stop is in force for the loop or its family's root. */
  due(loopId: string): Due | undefined {
    const due = this.dueEvents.get(loopId);
    this.dueEvents.delete(loopId);
    if (due === undefined || this.familyStop(loopId) !== undefined) return undefined;
    return due;
  }

  /** The stop in force for the loop, else for its family's root: a sub-agent stops with
   * its family. */
  familyStop(loopId: string): LoopWarning | undefined {
    const root = this.families.get(loopId)?.root_loop_id;
    return this.stopFor(loopId) ?? (root === undefined ? undefined : this.stopFor(root));
  }

  /** A warning arrived: kept for its loop when watched (false: not ours). */
  add(warning: LoopWarning): boolean {
    if (!this.watching(warning.loop_id)) return false;
    this.inbox.add(warning);
    return true;
  }

  /** A role's verdict arrived: kept when its loop is watched. */
  answer(verdict: Verdict): boolean {
    if (!this.watching(verdict.loop_id)) return false;
    this.inbox.answer(verdict);
    return true;
  }

  /** At a run's start: the memories that fit its task open every note of the run. */
  learned(loopId: string, memories: readonly string[]): void {
    const text = memoryText(memories);
    if (text) this.memories.set(loopId, text);
  }

  /** The note for the loop's next model call: the memories its run started with and its
   * latest `shownWarnings` warnings (new ones included); undefined while both are empty. */
  note(loopId: string): string | undefined {
    const shown = [...(this.shownLoops.get(loopId) ?? []), ...this.inbox.take(loopId)].slice(-this.shownWarnings);
    if (shown.length) this.shownLoops.set(loopId, shown);
    const parts = [this.memories.get(loopId), shown.length ? contextText(shown) : undefined];
    return parts.filter((part) => part).join("\n\n") || undefined;
  }

  /** The loop's warnings not handed out yet, oldest first. */
  take(loopId: string): LoopWarning[] {
    return this.inbox.take(loopId);
  }

  /** The stop recommendation in force for the loop, if any. */
  stopFor(loopId: string): LoopWarning | undefined {
    return this.inbox.stopFor(loopId);
  }

  /** The run is over: nothing of the loop is kept. */
  forget(loopId: string): void {
    this.watchedLoops.delete(loopId);
    this.families.delete(loopId);
    this.dueEvents.delete(loopId);
    this.shownLoops.delete(loopId);
    this.memories.delete(loopId);
    this.inbox.forget(loopId);
  }
}
