/** The errors the client raises: each says what was wrong and, where it can, what to do. */

/** Base class of every loopwarden error. */
export class LoopwardenError extends Error {
  override name = "LoopwardenError";
}

/** A setting (an environment variable or an option) has a wrong or missing value. */
export class ConfigurationError extends LoopwardenError {
  override name = "ConfigurationError";
}

/** One wrong field of an event: its path (`payload.params`) and what was wrong. */
export interface FieldError {
  path: string;
  message: string;
}

/** An event was refused before it left the process; `errors` names every wrong field. */
export class EventValidationError extends LoopwardenError {
  override name = "EventValidationError";
  constructor(readonly errors: FieldError[]) {
    super(errors.map((error) => (error.path ? `${error.path}: ${error.message}` : error.message)).join("; "));
  }
}

/** Events the broker did not acknowledge; `eventIds` are theirs. */
export class PublishError extends LoopwardenError {
  override name = "PublishError";
  constructor(
    message: string,
    readonly eventIds: string[],
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/** A record on a loopwarden topic that is not what its schema says. */
export class RecordDecodeError extends LoopwardenError {
  override name = "RecordDecodeError";
}

/** The loop was stopped by loopwarden's ladder: `message` is what the agent is told. */
export class LoopStopped extends LoopwardenError {
  override name = "LoopStopped";
  constructor(
    message: string,
    readonly warning: import("./generated/contract.js").LoopWarning,
  ) {
    super(message);
  }
}
