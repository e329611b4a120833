/**
 * Reading a loopwarden output topic (warnings by default) from a fixed point: the end
 * of the topic when {@link RecordSubscriber.start} returns (or its beginning), for one
 * loop or all. kafkajs reads through a consumer group only, so a subscriber joins a
 * group of its own (unique, nothing committed) whose assignor gives it just the
 * partition its loop's records are keyed to; `groupId` shares the work instead
 * (committed offsets, every partition).
 */
import { randomUUID } from "node:crypto";

import {
  AssignerProtocol,
  type Admin,
  type Assigner,
  type Consumer,
  type EachMessagePayload,
  type KafkaMessage,
  type PartitionAssigner,
} from "kafkajs";

import { fieldErrors, validator } from "./contract.js";
import { LoopwardenError, RecordDecodeError } from "./errors.js";
import type { LoopWarning, Verdict } from "./generated/contract.js";
import { kafkaClient, partitionFor, refusedConnection } from "./kafka.js";
import { resolveSettings, type Settings, type SettingsInput } from "./settings.js";

export interface SubscriberOptions {
  settings?: SettingsInput | Settings;
  /** Only this loop's records (the one partition they are keyed to); default: all. */
  loopId?: string;
  /** Read the topic from its beginning instead of from its end at start. */
  fromBeginning?: boolean;
  /** Share the work with other members of this group (resumes from its commits). */
  groupId?: string;
  /** How long a fetch waits for new records (ms). kafkajs's 5 s default would delay
   * each record by half that on average; 100 ms by default here. */
  maxWaitMs?: number;
  /** How long `start` waits to join its group and fix its position (ms). */
  startTimeoutMs?: number;
}

const SEEN_IDS_KEPT = 10_000;

/** How one topic's records are read: its topic, a record's decoding, its id (repeats
 * are dropped) and its loop (the `loopId` filter). */
export interface RecordReader<T> {
  topic: (settings: Settings) => string;
  parse: (message: KafkaMessage, partition: number, topic: string) => T;
  id?: (record: T) => string | undefined;
  loop?: (record: T) => string | undefined;
}

/** A loopwarden output topic's JSON records, checked against its schema (`role`). */
export function schemaReader<T extends { loop_id?: string }>(
  role: string,
  topic: (settings: Settings) => string,
  id: (record: T) => string | undefined,
): RecordReader<T> {
  return { topic, parse: (message) => decode<T>(role, message.value), id, loop: (record) => record.loop_id };
}

/** A subscriber of one output topic's records, decoded and validated against its schema. */
export class RecordSubscriber<T> implements AsyncIterable<T> {
  /** Records skipped: not valid against the schema (counted, the first one logged). */
  invalid = 0;
  /** Records skipped: an id already delivered (a warning re-sent after a restart). */
  duplicates = 0;
  private readonly queue: T[] = [];
  private readonly waiting: ((result: IteratorResult<T>) => void)[] = [];
  private readonly seen = new Set<string>();
  private done = false;
  /** The partitions this subscriber reads. */
  partitions: number[] = [];

  protected constructor(
    readonly settings: Settings,
    readonly topic: string,
    private readonly reader: RecordReader<T>,
    private readonly consumer: Consumer,
    readonly loopId: string | undefined,
  ) {}

  /** Join, fix the position, and start reading; resolves once records published from
   * now on are sure to be read. */
  static async open<T>(reader: RecordReader<T>, options: SubscriberOptions = {}): Promise<RecordSubscriber<T>> {
    const settings = resolveSettings(options.settings);
    const topic = reader.topic(settings);
    const kafka = kafkaClient(settings);
    const admin = kafka.admin();
    const shared = options.groupId !== undefined;
    let start: Map<number, string>;
    try {
      await admin.connect();
      start = await positions(admin, topic, Boolean(options.fromBeginning));
    } catch (error) {
      throw (
        refusedConnection(settings, error) ??
        new LoopwardenError(
          `cannot read ${topic} at ${settings.bootstrapServers.join(",")} (LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS): ${
            (error as Error).message
          }`,
        )
      );
    } finally {
      await admin.disconnect();
    }
    const all = [...start.keys()];
    const wanted = options.loopId === undefined ? all : [partitionFor(options.loopId, all)];
    const consumer = kafka.consumer({
      groupId: options.groupId ?? `loopwarden-subscriber-${randomUUID()}`,
      sessionTimeout: 6000,
      heartbeatInterval: 1000,
      rebalanceTimeout: 6000,
      maxWaitTimeInMs: options.maxWaitMs ?? 100,
      allowAutoTopicCreation: false,
      ...(!shared && { partitionAssigners: [onlyPartitions(topic, wanted)] }),
    });
    const subscriber = new RecordSubscriber<T>(settings, topic, reader, consumer, options.loopId);
    const joined = new Promise<number[]>((resolve, reject) => {
      const timeout = setTimeout(
        () => reject(new LoopwardenError(`no partitions of ${topic} assigned within ${options.startTimeoutMs ?? 30_000} ms`)),
        options.startTimeoutMs ?? 30_000,
      );
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        clearTimeout(timeout);
        resolve(payload.memberAssignment[topic] ?? []);
      });
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: Boolean(options.fromBeginning) });
    await consumer.run({
      autoCommit: shared,
      eachMessage: async (payload) => subscriber.receive(payload),
    });
    try {
      subscriber.partitions = await joined;
    } catch (error) {
      await consumer.disconnect();
      throw error;
    }
    if (!shared) {
      for (const partition of subscriber.partitions) {
        consumer.seek({ topic, partition, offset: start.get(partition) ?? "0" });
      }
    }
    return subscriber;
  }

  /** The next record (the iterator ends when the subscriber is closed). */
  next(): Promise<IteratorResult<T>> {
    const record = this.queue.shift();
    if (record !== undefined) return Promise.resolve({ value: record, done: false });
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return { next: () => this.next(), return: async () => (await this.close(), { value: undefined, done: true }) };
  }

  /** Leave the group and end the iteration. */
  async close(): Promise<void> {
    if (this.done) return;
    this.done = true;
    for (const resolve of this.waiting.splice(0)) resolve({ value: undefined, done: true });
    await this.consumer.disconnect();
  }

  /** Called with each record as it is read (before it is queued for the iterator). */
  onRecord: ((record: T) => void) | undefined;

  private receive({ message, partition }: EachMessagePayload): void {
    let record: T;
    try {
      record = this.reader.parse(message, partition, this.topic);
    } catch (error) {
      if (this.invalid++ === 0) {
        console.error(`loopwarden: skipped a record of ${this.topic}[${partition}]@${message.offset}: ${(error as Error).message}`);
      }
      return;
    }
    const id = this.reader.id?.(record);
    if (id !== undefined) {
      if (this.seen.has(id)) {
        this.duplicates++;
        return;
      }
      this.seen.add(id);
      if (this.seen.size > SEEN_IDS_KEPT) this.seen.delete(this.seen.values().next().value!);
    }
    if (this.loopId !== undefined && this.reader.loop?.(record) !== this.loopId) return;
    this.onRecord?.(record);
    const resolve = this.waiting.shift();
    if (resolve) resolve({ value: record, done: false });
    else this.queue.push(record);
  }
}

/** A record's value decoded and checked against its topic's schema. */
export function decode<T>(role: string, value: Buffer | string | null): T {
  if (value === null) throw new RecordDecodeError("empty record");
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString());
  } catch (error) {
    throw new RecordDecodeError(`not JSON: ${(error as Error).message}`);
  }
  const validate = validator(role);
  if (!validate(parsed)) {
    const errors = fieldErrors(validate.errors).map((error) => `${error.path}: ${error.message}`);
    throw new RecordDecodeError(`not a valid ${role} record: ${errors.join("; ")}`);
  }
  return parsed as T;
}

/** Loop warnings: `for await (const warning of subscriber)`. */
export class WarningSubscriber {
  /** Start reading warnings (of `loopId`, or all) from now, or from the beginning. */
  static start(options: SubscriberOptions = {}): Promise<RecordSubscriber<LoopWarning>> {
    return RecordSubscriber.open(
      schemaReader<LoopWarning>("warnings", (settings) => settings.topics.warnings, (warning) => warning.warning_id),
      options,
    );
  }
}

/** The worker's verdicts: its answer to every action event (see the Python docs). */
export class VerdictSubscriber {
  /** Start reading verdicts (of `loopId`, or all) from now. */
  static start(options: SubscriberOptions = {}): Promise<RecordSubscriber<Verdict>> {
    return RecordSubscriber.open(
      schemaReader<Verdict>("verdicts", (settings) => settings.topics.verdicts, () => undefined),
      options,
    );
  }
}

async function positions(admin: Admin, topic: string, fromBeginning: boolean): Promise<Map<number, string>> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return new Map(offsets.map((item) => [item.partition, fromBeginning ? item.low : item.high]));
}

/** An assignor that gives the group's one member just `partitions` of `topic`. */
function onlyPartitions(topic: string, partitions: number[]): PartitionAssigner {
  return (): Assigner => ({
    name: "LoopwardenOneLoop",
    version: 1,
    async assign({ members }) {
      return members.map((member, index) => ({
        memberId: member.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1,
          assignment: index === 0 ? { [topic]: partitions } : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: "LoopwardenOneLoop",
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }),
      };
    },
  });
}

/** A record the worker could not process, as the dead-letter topic keeps it: the
 * original value byte for byte (text here), why, and where it came from. */
export interface DeadLetter {
  /** decode | validation | too_large */
  reason: string;
  /** A readable explanation, e.g. "payload.action_type: Field required". */
  message: string;
  errors: { path: string; message: string }[];
  /** The original record's key (the loop id) and value. */
  key: string | undefined;
  value: string;
  source: { topic: string; partition: number; offset: number };
  /** The element's position inside a batched record (absent for a single event). */
  batchIndex: number | undefined;
}

const DLQ = "lw.dlq.";

function header(message: KafkaMessage, name: string): string | undefined {
  const value = message.headers?.[DLQ + name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
}

/** Dead letters: what the worker refused, and why (the headers of Kafka Connect's style). */
export class DeadLetterSubscriber {
  /** Start reading dead letters (of records keyed `loopId`, or all). */
  static start(options: SubscriberOptions = {}): Promise<RecordSubscriber<DeadLetter>> {
    return RecordSubscriber.open<DeadLetter>(
      {
        topic: (settings) => settings.topics.deadLetter,
        parse: (message) => {
          const index = header(message, "batch_index");
          return {
            reason: header(message, "reason") ?? "unknown",
            message: header(message, "message") ?? "",
            errors: JSON.parse(header(message, "errors") ?? "[]"),
            key: message.key?.toString(),
            value: message.value?.toString() ?? "",
            source: {
              topic: header(message, "topic") ?? "",
              partition: Number(header(message, "partition") ?? -1),
              offset: Number(header(message, "offset") ?? -1),
            },
            batchIndex: index === undefined ? undefined : Number(index),
          };
        },
        loop: (letter) => letter.key,
      },
      options,
    );
  }
}
