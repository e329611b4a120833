/**
 * loopwarden for TypeScript agents: publish an agent's actions, read its loop warnings,
 * and stop it at the end of the ladder. Adapters: `loopwarden/ai-sdk`,
 * `loopwarden/openai-agents`, `loopwarden/langchain`.
 */
export * from "./errors.js";
export * from "./settings.js";
export {
  actionEvent,
  cutLongText,
  epochSeconds,
  newEventId,
  resultDigest,
  MAX_EVENT_BYTES,
  SCHEMA_VERSION,
  TEXT_LIMITS,
  type ActionFields,
  type EnvelopeOptions,
} from "./events.js";
export { Publisher, PublisherUnavailableError } from "./publisher.js";
export {
  decode,
  DeadLetterSubscriber,
  RecordSubscriber,
  schemaReader,
  WarningSubscriber,
  type DeadLetter,
  type RecordReader,
  type SubscriberOptions,
} from "./subscriber.js";
export { WarningInbox } from "./inbox.js";
export { LoopGuard, SAID_ACTION, HEARD_ACTION } from "./guard.js";
export { GuardState, type Due, type Family } from "./guard-state.js";
export { memoriesFor, searchMemories, type FoundMemories } from "./memories.js";
export { contextText, memoryText, stopText, isStop, CONTEXT_HEADER, MEMORY_HEADER, STOP_HEADER } from "./text.js";
export { canonicalArgs, refused, resultText, toolCallFields, type ToolCallDetails } from "./toolcalls.js";
export { partitionFor } from "./kafka.js";
export { topicIndex, validator } from "./contract.js";
export type * from "./generated/contract.js";
