/**
 * What earlier runs learned that fits a run's task, asked of a worker once per run: the
 * worker that runs the memory role answers `GET /memory/search` with the very search the
 * analyst's memory context uses (as the Python client's `search_memories` asks it). The
 * guard puts the memories in front of the run's model calls ({@link LoopGuard.recall}).
 */
import { LoopwardenError } from "./errors.js";
import type { Settings } from "./settings.js";

/** How long a run's start waits for the worker's answer at most (as the Python guard). */
export const RECALL_TIMEOUT_MS = 2_000;

/** A worker's answer: the memories ranked for the question, within the budget. */
export interface FoundMemories {
  query: string;
  scope: string;
  intent?: string | null;
  content_bytes: number;
  memories: { content?: string; [field: string]: unknown }[];
  text: string;
}

/** The memories the worker at `settings.workerUrl` ranks for `question` in `scope`;
 * {@link LoopwardenError} naming the worker when it cannot answer. */
export async function searchMemories(
  settings: Settings,
  question: string,
  scope = settings.memoryScope ?? "default",
  budgetBytes = settings.memoryBudgetBytes,
  timeoutMs = RECALL_TIMEOUT_MS,
): Promise<FoundMemories> {
  const base = settings.workerUrl.replace(/\/+$/, "");
  const query = new URLSearchParams({ q: question, scope, budget: String(budgetBytes) });
  const headers: Record<string, string> = {};
  if (settings.apiToken) headers.Authorization = `Bearer ${settings.apiToken}`;
  let answer: Response;
  try {
    answer = await fetch(`${base}/memory/search?${query}`, { headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new LoopwardenError(
      `cannot reach a worker's API at ${base} (${(error as Error).message}): start \`loopwarden dev\`, or ` +
        "give the URL of a worker that runs the memory role with its web port set",
    );
  }
  if (!answer.ok) {
    const body = (await answer.json().catch(() => undefined)) as { message?: string } | undefined;
    const said = body?.message ? `${body.message} (HTTP ${answer.status})` : `HTTP ${answer.status}`;
    throw new LoopwardenError(`memory search at ${base}: ${said}`);
  }
  return (await answer.json()) as FoundMemories;
}

/** The contents of the memories that fit `task`, best first ([] when off or no task). */
export async function memoriesFor(settings: Settings, task: string | undefined): Promise<string[]> {
  if (settings.memoryScope === undefined || !task?.trim()) return [];
  const found = await searchMemories(settings, task);
  return found.memories.map((memory) => memory.content).filter((content): content is string => Boolean(content));
}
