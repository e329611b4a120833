/**
 * Action events as the worker reads them: the envelope, the payload, long text cut the
 * way every loopwarden entry point cuts it, and validation against the actions topic's
 * schema before anything leaves the process.
 */
import { createHash, randomUUID } from "node:crypto";

import { shared } from "./constants.js";
import { definition, fieldErrors, validator } from "./contract.js";
import { EventValidationError, type FieldError } from "./errors.js";
import type { ActionEvent, ActionPayload } from "./generated/contract.js";

/** The schema version this client writes. */
export const SCHEMA_VERSION = 1;
/** The latest timestamp the worker reads (9999-12-31T23:59:59Z), in epoch seconds. */
export const MAX_TIMESTAMP: number = shared.max_timestamp;
/** Long text is cut, never refused (the same limits as the Python client's), in
 * characters (code points). */
export const TEXT_LIMITS: Readonly<Record<string, number>> = Object.freeze({ ...shared.text_limits });
/** The end of a cut result that is kept (the last lines of a traceback say why). */
export const RESULT_TAIL_CHARS: number = shared.result_tail_chars;
/** A record over this size is refused by the worker (limits.max_event_bytes). */
export const MAX_EVENT_BYTES: number = shared.max_event_bytes;

/** What an agent says of one action; `action_type` is required, the rest optional. */
export type ActionFields = Omit<ActionPayload, "truncated">;

/** An action event's envelope fields a caller may set (all have defaults). */
export interface EnvelopeOptions {
  /** Your own id makes re-publishing idempotent (default: a fresh random id). */
  eventId?: string;
  /** When it happened: a Date, or epoch **seconds** (default: now). */
  occurredAt?: Date | number;
  traceContext?: Record<string, string>;
}

// Python's str.split() whitespace (JavaScript's \s differs: it has U+FEFF, lacks U+001C–1F and U+0085)
const WHITESPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/gu;

/** A result's digest as the worker computes it: sha1 of the text, whitespace runs collapsed. */
export function resultDigest(text: string): string {
  const collapsed = text.split(WHITESPACE).filter(Boolean).join(" ");
  return createHash("sha1").update(collapsed, "utf8").digest("hex");
}

/** A fresh event id (32 hex digits, like the Python client's). */
export function newEventId(): string {
  return randomUUID().replace(/-/g, "");
}

function cutMarker(cut: number): string {
  return shared.cut_marker.replace("{cut}", String(cut));
}

/** `payload` with each text over its limit cut as the worker cuts it: the first part (a
 * result: its start and last 600 characters), a cut result's digest of the whole in
 * `result_digest`, and `truncated` naming what was cut. */
export function cutLongText<T extends Record<string, unknown>>(payload: T): T {
  let cut: string[] | undefined;
  let out: Record<string, unknown> = payload;
  for (const [name, limit] of Object.entries(TEXT_LIMITS)) {
    const value = payload[name];
    if (typeof value !== "string" || value.length <= limit) continue; // UTF-16 length ≥ code points
    const chars = Array.from(value);
    if (chars.length <= limit) continue;
    if (cut === undefined) {
      out = { ...payload };
      cut = Array.isArray(payload.truncated) ? [...(payload.truncated as string[])] : [];
    }
    if (name === "result") {
      if (!payload.result_digest) out.result_digest = resultDigest(value);
      const marker = cutMarker(chars.length - limit);
      const head = limit - RESULT_TAIL_CHARS - Array.from(marker).length;
      out.result = chars.slice(0, head).join("") + marker + chars.slice(-RESULT_TAIL_CHARS).join("");
    } else {
      out[name] = chars.slice(0, limit).join("");
    }
    if (!cut.includes(name)) cut.push(name);
  }
  if (cut !== undefined) out.truncated = cut;
  return out as T;
}

/** Epoch seconds of a Date or a number of seconds; a number that can only be
 * milliseconds (`Date.now()`) is refused with a message that says so. */
export function epochSeconds(value: Date | number, field = "occurred_at"): number {
  const seconds = value instanceof Date ? value.getTime() / 1000 : value;
  if (typeof seconds === "number" && seconds > MAX_TIMESTAMP && seconds <= MAX_TIMESTAMP * 1000) {
    throw new EventValidationError([
      {
        path: field,
        message: `${seconds} looks like milliseconds since the epoch; timestamps are epoch seconds (Date.now() / 1000) or a Date`,
      },
    ]);
  }
  return seconds;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

let payloadFields: string[] | undefined;

function knownPayloadFields(): string[] {
  payloadFields ??= Object.keys(definition("actions", "ActionPayload").properties ?? {});
  return payloadFields;
}

/** Fields the schema does not know, each with the closest known name (a typo such as
 * `succes: false` would otherwise drop a failure unseen: the worker ignores unknown fields). */
export function unknownFields(payload: Record<string, unknown>): FieldError[] {
  const known = knownPayloadFields();
  return Object.keys(payload)
    .filter((name) => !known.includes(name))
    .map((name) => {
      const closest = known
        .map((candidate) => [candidate, editDistance(name, candidate)] as const)
        .sort((x, y) => x[1] - y[1])[0];
      const hint = closest && closest[1] <= Math.max(2, name.length / 3) ? `, did you mean '${closest[0]}'?` : "";
      return { path: `payload.${name}`, message: `unknown field${hint}` };
    });
}

/** A complete, validated action event for `loopId`: refused with
 * {@link EventValidationError} (every wrong field named) before it leaves the process. */
export function actionEvent(loopId: string, fields: ActionFields, options: EnvelopeOptions = {}): ActionEvent {
  const payload = cutLongText(dropUndefined({ ...fields }) as Record<string, unknown>);
  const event: Record<string, unknown> = {
    event_id: options.eventId ?? newEventId(),
    schema_version: SCHEMA_VERSION,
    type: "action",
    loop_id: loopId,
    occurred_at: epochSeconds(options.occurredAt ?? new Date()),
    payload,
  };
  if (options.traceContext) event.trace_context = options.traceContext;
  const errors = unknownFields(payload);
  if (payload.rejected === true && payload.success === true) {
    errors.push({ path: "payload.success", message: "a rejected call did not succeed: leave success out or false" });
  }
  const validate = validator("actions", "ActionEvent");
  if (!validate(event)) errors.push(...fieldErrors(validate.errors));
  if (errors.length) throw new EventValidationError(errors);
  return event as unknown as ActionEvent;
}

/** `value` without its undefined entries (JSON has no undefined; the schema's optional
 * fields are absent or null). */
export function dropUndefined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as T;
}
