/** A framework's tool call as action fields (the same mapping as the Python adapters'). */
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
  /** The tool refused the call before it had any effect (implies failure). */
  rejected?: boolean;
}

/** The action fields of one tool call. */
export function toolCallFields(tool: string, args: unknown, details: ToolCallDetails = {}): ActionFields {
  const fields: ActionFields = { action_type: tool, params: canonicalArgs(args), success: details.error === undefined };
  if (details.error !== undefined) {
    const error = details.error;
    const text = error instanceof Error ? error.message || error.name : String(error);
    fields.error_message = text.slice(0, 2000);
    if (details.rejected) fields.rejected = true;
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
