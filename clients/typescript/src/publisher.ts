/**
 * Publishing action events: validated before they leave the process, keyed by loop (the
 * worker's partitioning), a loop's events gathered for `publisher.lingerMs` into one
 * record (a JSON array, as the Python client sends them; a delegated loop's events are
 * keyed by their family's root loop, as the Python client keys them), sent one batch after another
 * so that a loop's events keep their order, durable by default (acks from every in-sync
 * replica, idempotent where the broker supports it).
 */
import type { Kafka, Producer } from "kafkajs";

import { EventValidationError, LoopwardenError, PublishError } from "./errors.js";
import { actionEvent, MAX_EVENT_BYTES, type ActionFields, type EnvelopeOptions } from "./events.js";
import type { ActionEvent } from "./generated/contract.js";
import { describe, kafkaClient, Partitioners, refusedConnection } from "./kafka.js";
import { resolveSettings, type Settings, type SettingsInput } from "./settings.js";

const ACKS = { all: -1, "1": 1, "0": 0 } as const;

/** No broker answered at the bootstrap servers. */
export class PublisherUnavailableError extends LoopwardenError {
  override name = "PublisherUnavailableError";
}

interface Pending {
  key: string;
  ids: string[];
  /** Each event's JSON, serialized once when it was published. */
  texts: string[];
}

/** The key of an action's record, as the Python client and the worker key it: the
 * family's root loop (`root_loop_id`, else `parent_loop_id`), else the loop itself, so
 * a family of delegated loops travels on one partition, in order. */
export function recordKey(event: ActionEvent): string {
  return event.payload.root_loop_id ?? event.payload.parent_loop_id ?? event.loop_id;
}

export class Publisher {
  /** Events sent and acknowledged so far. */
  delivered = 0;
  private readonly pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failed: string[] = [];
  private lastError: unknown;
  private closed = false;

  private constructor(
    readonly settings: Settings,
    private readonly producer: Producer,
    /** Whether the producer is idempotent (false where the broker lacks it, with auto). */
    readonly idempotent: boolean,
  ) {}

  /** A connected publisher. `settings`: overrides of the `LOOPWARDEN_*` environment. */
  static async connect(settings: SettingsInput | Settings = {}): Promise<Publisher> {
    const resolved = resolveSettings(settings);
    const kafka = kafkaClient(resolved);
    const mode = resolved.publisher.idempotence;
    const servers = resolved.bootstrapServers.join(",");
    const wanted = mode !== "off" && resolved.publisher.acks === "all" && !(mode === "auto" && refusedIdempotence.has(servers));
    try {
      return new Publisher(resolved, await connected(kafka, wanted), wanted);
    } catch (error) {
      if (!(wanted && mode === "auto" && lacksIdempotence(error))) throw unavailable(resolved, error);
      refusedIdempotence.add(servers);
      // said on a real cluster; on loopback it is the embedded broker, as expected
      if (!resolved.bootstrapServers.every((server) => /^(127\.|localhost:|\[::1\]:)/.test(server))) console.error(
        `loopwarden: ${servers} does not support idempotent producers; publishing without ` +
          "(events carry ids: the worker skips a duplicate anyway; LOOPWARDEN_PUBLISHER__IDEMPOTENCE=off silences this)",
      );
      try {
        return new Publisher(resolved, await connected(kafka, false), false);
      } catch (retryError) {
        throw unavailable(resolved, retryError);
      }
    }
  }

  /**
   * Validate one action and queue it; returns its event id at once. A wrong or unknown
   * field raises {@link EventValidationError} here, before anything is sent.
   */
  publish(loopId: string, fields: ActionFields, options: EnvelopeOptions = {}): string {
    if (this.closed) throw new LoopwardenError("this publisher is closed");
    const event = actionEvent(loopId, fields, options);
    const text = JSON.stringify(event);
    const size = Buffer.byteLength(text);
    if (size > MAX_EVENT_BYTES) {
      throw new EventValidationError([
        { path: "", message: `the event is ${size} bytes, over the worker's ${MAX_EVENT_BYTES} (limits.max_event_bytes)` },
      ]);
    }
    const key = recordKey(event);
    const pending = this.pending.get(key) ?? { key, ids: [], texts: [] };
    pending.ids.push(event.event_id);
    pending.texts.push(text);
    this.pending.set(key, pending);
    if (pending.texts.length >= this.settings.publisher.batchMaxEvents) this.sendPending();
    else this.timer ??= setTimeout(() => this.sendPending(), this.settings.publisher.lingerMs);
    return event.event_id;
  }

  /** Wait until every event published so far is acknowledged; {@link PublishError} with
   * the ids of those that were not. */
  async flush(): Promise<void> {
    await this.sent();
    if (this.failed.length) {
      const ids = this.failed;
      this.failed = [];
      throw new PublishError(
        `${ids.length} event(s) not delivered to ${this.settings.topics.actions}: ${describe(this.lastError)}`,
        ids,
        this.lastError,
      );
    }
  }

  /** Send what is queued and wait until every send so far has ended, delivered or not;
   * unlike {@link flush} it raises nothing and keeps the failures for `flush`/`close`. */
  async sent(): Promise<void> {
    this.sendPending();
    await this.chain;
  }

  /** Flush, then disconnect. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.flush();
    } finally {
      this.closed = true;
      await this.producer.disconnect();
    }
  }

  private sendPending(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.pending.size) return;
    const batches = [...this.pending.values()];
    this.pending.clear();
    const messages = batches.flatMap((batch) => loopRecords(batch.key, batch.texts));
    const ids = batches.flatMap((batch) => batch.ids);
    this.chain = this.chain.then(async () => {
      try {
        await this.producer.send({
          topic: this.settings.topics.actions,
          acks: ACKS[this.settings.publisher.acks],
          messages,
        });
        this.delivered += ids.length;
      } catch (error) {
        this.failed.push(...ids);
        this.lastError = error;
      }
    });
  }
}

/** Events that share a record key, each as its JSON text, as records under the size
 * limit: one event as an object, more as a JSON array of them. */
export function loopRecords(key: string, texts: readonly string[]): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  let group: string[] = [];
  let size = 2;
  const emit = () => {
    if (!group.length) return;
    out.push({ key, value: group.length === 1 ? group[0]! : `[${group.join(",")}]` });
    group = [];
    size = 2;
  };
  for (const text of texts) {
    const bytes = Buffer.byteLength(text) + 1;
    if (size + bytes > MAX_EVENT_BYTES) emit();
    group.push(text);
    size += bytes;
  }
  emit();
  return out;
}

async function connected(kafka: Kafka, idempotent: boolean): Promise<Producer> {
  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    idempotent,
    // an idempotent producer sends one request at a time (kafkajs's rule); its retries
    // are bounded (a send that gives up raises PublishError with its ids, never silently)
    ...(idempotent && { maxInFlightRequests: 1, retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 3000 } }),
    allowAutoTopicCreation: false,
  });
  try {
    await producer.connect();
    return producer;
  } catch (error) {
    await producer.disconnect().catch(() => undefined);
    throw error;
  }
}

/** The broker refused the idempotent producer's InitProducerId (as the embedded Tansu
 * does: an unknown server error), or does not know the request. */
function lacksIdempotence(error: unknown): boolean {
  // kafkajs wraps the broker's answer when its retries ran out (originalError, cause)
  for (let found = error as Record<string, unknown> | undefined, depth = 0; found && depth < 4; depth++) {
    if (["UNKNOWN", "UNKNOWN_SERVER_ERROR", "UNSUPPORTED_VERSION"].includes(found.type as string)) return true;
    found = (found.originalError ?? found.cause) as Record<string, unknown> | undefined;
  }
  return false;
}

/** Brokers that refused idempotence in this process: asked once, not at every connect. */
const refusedIdempotence = new Set<string>();

function unavailable(settings: Settings, error: unknown): LoopwardenError {
  if (error instanceof LoopwardenError) return error;
  const refused = refusedConnection(settings, error);
  if (refused) return refused;
  return new PublisherUnavailableError(
    `no Kafka broker answered at ${settings.bootstrapServers.join(",")} ` +
      `(LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS): ${describe(error)}`,
  );
}
