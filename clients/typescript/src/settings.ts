/**
 * Connection and topic settings, read from the same `LOOPWARDEN_*` environment variables
 * as the Python client (`LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS`, `LOOPWARDEN_TOPICS__WARNINGS`,
 * `LOOPWARDEN_KAFKA__SECURITY__*`, `LOOPWARDEN_PUBLISHER__*`), so one environment serves
 * agents in both languages.
 */
import { readFileSync } from "node:fs";

import { ConfigurationError } from "./errors.js";

export type SecurityProtocol = "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL";
export type SaslMechanism = "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512";

export interface KafkaSecurity {
  protocol: SecurityProtocol;
  sslCafile?: string;
  sslCertfile?: string;
  sslKeyfile?: string;
  sslPassword?: string;
  sslCheckHostname: boolean;
  saslMechanism?: SaslMechanism;
  saslUsername?: string;
  saslPassword?: string;
}

export interface Topics {
  actions: string;
  warnings: string;
  deadLetter: string;
  loopCompletions: string;
  advice: string;
  verdicts: string;
}

export interface PublisherOptions {
  /** Events of one loop gathered into one record for at most this long (ms). */
  lingerMs: number;
  /** At most this many events in one record. */
  batchMaxEvents: number;
  /** Acknowledgements a send waits for: "all" in-sync replicas (durable), "1" or "0". */
  acks: "all" | "1" | "0";
  /** Idempotent producer: "auto" (on, off with one notice where the broker lacks it). */
  idempotence: "auto" | "on" | "off";
}

export interface Settings {
  bootstrapServers: string[];
  clientId: string;
  security: KafkaSecurity;
  topics: Topics;
  publisher: PublisherOptions;
  /** How long a guard waits at most, after a published event, for its verdict (ms). */
  verdictWaitMs: number;
  /** Follow the worker's verdict on every event (ends a healthy step's wait at once). */
  verdicts: boolean;
  /** The run's latest warnings repeated in every later note. */
  shownWarnings: number;
  /** Put the memories of this scope that fit a run's task in front of its model calls
   * (asked once per run of the worker's API, `LoopGuard.recall`); undefined: off. */
  memoryScope?: string;
  /** Bytes of memories put in front of a run. */
  memoryBudgetBytes: number;
  /** The worker API the memories are asked from (default: this machine's web port, 6066
   * as `loopwarden dev` serves it). */
  workerUrl: string;
  /** The worker API's bearer token (`LOOPWARDEN_API__TOKEN`), when it asks for one. */
  apiToken?: string;
}

/** Settings overridable field by field; anything left out comes from the environment. */
export type SettingsInput = Partial<Omit<Settings, "security" | "topics" | "publisher">> & {
  security?: Partial<KafkaSecurity>;
  topics?: Partial<Topics>;
  publisher?: Partial<PublisherOptions>;
};

type Env = Record<string, string | undefined>;

function envName(path: string): string {
  return `LOOPWARDEN_${path}`;
}

function text(env: Env, path: string): string | undefined {
  const value = env[envName(path)];
  return value === undefined || value === "" ? undefined : value;
}

function number(env: Env, path: string, fallback: number, min = 0): number {
  const raw = text(env, path);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) {
    throw new ConfigurationError(`${envName(path)}=${raw}: expected a number >= ${min}`);
  }
  return value;
}

function choice<T extends string>(env: Env, path: string, allowed: readonly T[], fallback: T): T {
  const raw = text(env, path);
  if (raw === undefined) return fallback;
  const found = allowed.find((item) => item.toLowerCase() === raw.toLowerCase());
  if (found === undefined) {
    throw new ConfigurationError(`${envName(path)}=${raw}: expected one of ${allowed.join(", ")}`);
  }
  return found;
}

function flag(env: Env, path: string, fallback: boolean): boolean {
  const raw = text(env, path);
  if (raw === undefined) return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigurationError(`${envName(path)}=${raw}: expected true or false`);
}

/** The settings of `env` (default: `process.env`) with `overrides` on top; wrong values
 * and incomplete security settings raise {@link ConfigurationError} naming the variable. */
export function loadSettings(overrides: SettingsInput = {}, env: Env = process.env): Settings {
  const servers = text(env, "KAFKA__BOOTSTRAP_SERVERS") ?? "127.0.0.1:9092";
  const security: KafkaSecurity = {
    protocol: choice(
      env,
      "KAFKA__SECURITY__PROTOCOL",
      ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const,
      "PLAINTEXT",
    ),
    sslCafile: text(env, "KAFKA__SECURITY__SSL_CAFILE"),
    sslCertfile: text(env, "KAFKA__SECURITY__SSL_CERTFILE"),
    sslKeyfile: text(env, "KAFKA__SECURITY__SSL_KEYFILE"),
    sslPassword: text(env, "KAFKA__SECURITY__SSL_PASSWORD"),
    sslCheckHostname: flag(env, "KAFKA__SECURITY__SSL_CHECK_HOSTNAME", true),
    saslMechanism: text(env, "KAFKA__SECURITY__SASL_MECHANISM")
      ? choice(env, "KAFKA__SECURITY__SASL_MECHANISM", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] as const, "PLAIN")
      : undefined,
    saslUsername: text(env, "KAFKA__SECURITY__SASL_USERNAME"),
    saslPassword: text(env, "KAFKA__SECURITY__SASL_PASSWORD"),
    ...overrides.security,
  };
  const settings: Settings = {
    bootstrapServers: servers.split(",").map((server) => server.trim()).filter(Boolean),
    clientId: text(env, "KAFKA__CLIENT_ID") ?? "loopwarden-ts",
    verdictWaitMs: number(env, "ADAPTERS__VERDICT_WAIT_MS", 200),
    verdicts: (text(env, "ADAPTERS__VERDICTS") ?? "true").toLowerCase() !== "false",
    shownWarnings: number(env, "ADAPTERS__SHOWN_WARNINGS", 3, 1),
    memoryScope: text(env, "ADAPTERS__MEMORY_SCOPE"),
    memoryBudgetBytes: number(env, "ADAPTERS__MEMORY_BUDGET_BYTES", 2048, 1),
    workerUrl:
      text(env, "ADAPTERS__WORKER_URL") ??
      `http://${text(env, "WEB_HOST") ?? "127.0.0.1"}:${Number(text(env, "WEB_PORT") ?? 0) || 6066}`,
    apiToken: text(env, "API__TOKEN"),
    ...overrides,
    security,
    topics: {
      actions: text(env, "TOPICS__ACTIONS") ?? "loopwarden.actions",
      warnings: text(env, "TOPICS__WARNINGS") ?? "loopwarden.warnings",
      deadLetter: text(env, "TOPICS__DEAD_LETTER") ?? "loopwarden.dead-letter",
      loopCompletions: text(env, "TOPICS__LOOP_COMPLETIONS") ?? "loopwarden.loop-completions",
      advice: text(env, "TOPICS__ADVICE") ?? "loopwarden.advice",
      verdicts: text(env, "TOPICS__VERDICTS") ?? "loopwarden.verdicts",
      ...overrides.topics,
    },
    publisher: {
      lingerMs: number(env, "PUBLISHER__LINGER_MS", 2),
      batchMaxEvents: number(env, "PUBLISHER__BATCH_MAX_EVENTS", 50, 1),
      acks: choice(env, "PUBLISHER__ACKS", ["all", "1", "0"] as const, "all"),
      idempotence: choice(env, "PUBLISHER__IDEMPOTENCE", ["auto", "on", "off"] as const, "auto"),
      ...overrides.publisher,
    },
  };
  checkSecurity(settings.security);
  return settings;
}

function checkSecurity(security: KafkaSecurity): void {
  const problems: string[] = [];
  const usesTls = security.protocol === "SSL" || security.protocol === "SASL_SSL";
  const usesSasl = security.protocol.startsWith("SASL_");
  if (!usesTls && (security.sslCafile || security.sslCertfile || security.sslKeyfile)) {
    problems.push("ssl_* settings need protocol SSL or SASL_SSL");
  }
  if (Boolean(security.sslCertfile) !== Boolean(security.sslKeyfile)) {
    problems.push("ssl_certfile and ssl_keyfile go together (client certificate)");
  }
  const sasl = {
    sasl_mechanism: security.saslMechanism,
    sasl_username: security.saslUsername,
    sasl_password: security.saslPassword,
  };
  if (usesSasl) {
    const missing = Object.entries(sasl).filter(([, value]) => !value).map(([name]) => name);
    if (missing.length) problems.push(`${security.protocol} needs ${missing.join(", ")}`);
  } else if (Object.values(sasl).some(Boolean)) {
    problems.push("sasl_* settings need protocol SASL_PLAINTEXT or SASL_SSL");
  }
  if (problems.length) {
    throw new ConfigurationError(
      `incomplete Kafka security settings (LOOPWARDEN_KAFKA__SECURITY__*): ${problems.join("; ")}`,
    );
  }
}

/** A PEM file's text; a missing file is named with its variable. */
export function readPem(path: string, name: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigurationError(
      `kafka.security.${name} ${JSON.stringify(path)} is not a readable file ` +
        `(LOOPWARDEN_KAFKA__SECURITY__${name.toUpperCase()}): ${(error as Error).message}`,
    );
  }
}

/** `input` as complete settings: already complete ones as they are, else loaded from the
 * environment with `input` on top. */
export function resolveSettings(input: SettingsInput | Settings = {}): Settings {
  const complete =
    Array.isArray(input.bootstrapServers) &&
    typeof input.publisher?.lingerMs === "number" &&
    typeof input.topics?.actions === "string" &&
    typeof input.security?.protocol === "string";
  return complete ? (input as Settings) : loadSettings(input);
}
