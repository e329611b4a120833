/**
 * The limits and texts this client shares with the Python one, read from what the Python
 * package exports beside the topics' schemas (`loopwarden schema --out` writes
 * `constants.json`; `npm run generate` copies it into `schemas/`), never copied by hand:
 * how long text is cut, the latest timestamp and the largest record the worker reads,
 * and the headers of the note an agent reads (its warnings, the memories its run started
 * with) and of why its run was stopped, and which failures are refusals.
 */
import { readFileSync } from "node:fs";

interface SharedConstants {
  text_limits: Record<string, number>;
  result_tail_chars: number;
  cut_marker: string;
  max_timestamp: number;
  max_event_bytes: number;
  context_header: string;
  stop_header: string;
  memory_header: string;
  refusal_types: string[];
  transient_statuses: number[];
}

/** What `constants.json` holds (parsed once). */
export const shared: SharedConstants = JSON.parse(
  readFileSync(new URL("../schemas/constants.json", import.meta.url), "utf8"),
);
