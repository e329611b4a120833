/** A framework's tool call as action fields (the same mapping as the Python adapters'). */
import { shared } from "./constants.js";
import type { ActionFields } from "./events.js";

/** Tool arguments as a JSON object: an object as it is, a JSON object string parsed,
 * anything else under `input`. */
export function canonicalArgs(args: unknown): Record<string, unknown> {
  if (typeof args === "string") {
    if (!args.trim()) return {};
    try {
      const parsed: unknown = JSON.parse(args);
      return isObject(parsed) ? parsed : { input: parsed };
    } catch {
      return { input: args };
    }
  }
  if (args === undefined || args === null) return {};
  const safe: unknown = JSON.parse(JSON.stringify(args) ?? "null");
  return isObject(safe) ? safe : { input: safe };
}

/** What a tool returned, as text: a string as it is, anything else as JSON with sorted keys. */
export function resultText(result: unknown): string | undefined {
  if (result === undefined || result === null) return undefined;
  if (typeof result === "string") return result;
  if (result instanceof Uint8Array) return Buffer.from(result).toString("utf8");
  const content = (result as { content?: unknown }).content;
  if (typeof content === "string") return content;
  try {
    return JSON.stringify(sortedKeys(result));
  } catch {
    return String(result);
  }
}

export interface ToolCallDetails {
  result?: unknown;
  /** The tool's error: the call failed, and the agent must read this text intact. */
  error?: unknown;
  toolCallId?: string;
  responseId?: string;
  durationMs?: number;
  /** The acting agent, in a multi-agent system. */
  agent?: string;
  /** The tool refused the call before it had any effect (implies failure); default: the
   * error is a refusal ({@link refused}). */
  rejected?: boolean;
}

/** The action fields of one tool call. */
export function toolCallFields(tool: string, args: unknown, details: ToolCallDetails = {}): ActionFields {
  const fields: ActionFields = { action_type: tool, params: canonicalArgs(args), success: details.error === undefined };
  if (details.error !== undefined) {
    const error = details.error;
    const text = error instanceof Error ? error.message || error.name : String(error);
    fields.error_message = text.slice(0, 2000);
    if (details.rejected ?? refused(error)) fields.rejected = true;
  }
  const result = resultText(details.result);
  if (result !== undefined) fields.result = result;
  if (details.toolCallId) fields.tool_call_id = details.toolCallId;
  if (details.responseId) fields.response_id = details.responseId;
  if (details.durationMs !== undefined) fields.duration_ms = details.durationMs;
  if (details.agent) fields.agent = details.agent;
  return fields;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys(value[key])]),
  );
}

const REFUSAL_TYPES: ReadonlySet<string> = new Set(shared.refusal_types);
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set(shared.transient_statuses);

/** The error turned the call away before it had any effect — the same rule and names as
 * the Python client's (schemas/refusals.py, exported in constants.json): its class, one it
 * derives from, or its `name` (the AI SDK's `AI_…`) is a refusal type (argument
 * validation, a framework's "retry with other arguments"), or it carries an HTTP status
 * from 400 to 499 other than 408 and 429. A message alone (a string) is not. */
export function refused(error: unknown): boolean {
  if (error === null || typeof error !== "object") return false;
  const names: string[] = [];
  for (let proto = Object.getPrototypeOf(error); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    if (typeof proto.constructor?.name === "string") names.push(proto.constructor.name);
  }
  const own = (error as { name?: unknown }).name;
  if (typeof own === "string") names.push(own.replace(/^AI_/, ""));
  if (names.some((name) => REFUSAL_TYPES.has(name))) return true;
  const carried = error as { status?: unknown; statusCode?: unknown; response?: { status?: unknown } };
  const status = Number(carried.status ?? carried.statusCode ?? carried.response?.status);
  return Number.isInteger(status) && status >= 400 && status <= 499 && !TRANSIENT_STATUSES.has(status);
}
