/** The Kafka client (kafkajs) made from the settings: brokers, TLS, SASL, quiet logs. */
import { Kafka, logLevel, Partitioners, type KafkaConfig, type LogEntry, type SASLOptions } from "kafkajs";

import { ConfigurationError } from "./errors.js";
import { readPem, type Settings } from "./settings.js";

/** kafkajs's log lines at warn and above, prefixed, on stderr (its own default is info). */
function logCreator() {
  return ({ namespace, level, log }: LogEntry) => {
    if (level > logLevel.WARN) return;
    const { message, error } = log as { message: string; error?: string };
    // the publisher handles a broker's refusal of idempotence itself and says so once;
    // bounded retries are its choice (a send that gives up is reported, not lost)
    if (/InitProducerId|Limiting retries for the idempotent producer/.test(message)) return;
    // a broker that cannot be reached at connect time is one clear error from the client
    // (PublisherUnavailableError…), not a line per retry and seed broker
    if (/^Failed to connect to seed broker|^Connection error: connect ECONNREFUSED/.test(message)) return;
    // refused credentials: the client raises ConfigurationError naming the variables (a
    // running consumer that crashes on them still logs its crash)
    if (/SaslAuthenticate|SASL .* authentication failed/.test(message)) return;
    console.error(`loopwarden (kafkajs ${namespace}): ${message}${error ? `: ${error}` : ""}`);
  };
}

/** kafkajs's options for `settings`: its brokers, TLS files read, SASL mechanism. */
export function kafkaConfig(settings: Settings): KafkaConfig {
  const { security } = settings;
  const config: KafkaConfig = {
    clientId: settings.clientId,
    brokers: settings.bootstrapServers,
    connectionTimeout: 3000,
    logLevel: logLevel.WARN,
    logCreator,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 3000 },
  };
  if (security.protocol === "SSL" || security.protocol === "SASL_SSL") {
    config.ssl = {
      rejectUnauthorized: true,
      ...(security.sslCafile && { ca: [readPem(security.sslCafile, "ssl_cafile")] }),
      ...(security.sslCertfile && { cert: readPem(security.sslCertfile, "ssl_certfile") }),
      ...(security.sslKeyfile && { key: readPem(security.sslKeyfile, "ssl_keyfile") }),
      ...(security.sslPassword && { passphrase: security.sslPassword }),
      ...(!security.sslCheckHostname && { checkServerIdentity: () => undefined }),
    };
  }
  if (security.protocol.startsWith("SASL_")) {
    const mechanism = security.saslMechanism!.toLowerCase() as "plain" | "scram-sha-256" | "scram-sha-512";
    config.sasl = {
      mechanism,
      username: security.saslUsername!,
      password: security.saslPassword!,
    } as SASLOptions;
  }
  return config;
}

export function kafkaClient(settings: Settings): Kafka {
  return new Kafka(kafkaConfig(settings));
}

const partitioner = Partitioners.DefaultPartitioner();

/** The partition a record keyed `key` goes to among `partitions`: Kafka's default
 * (murmur2 of the key, as Java, aiokafka and the worker compute it). */
export function partitionFor(key: string, partitions: number[]): number {
  const partitionMetadata = partitions.map((partitionId) => ({
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
    partitionErrorCode: 0,
  }));
  return partitioner({ topic: "", partitionMetadata, message: { key, value: null } });
}

export { Partitioners };

/** An error's message, with its cause's (kafkajs wraps the broker's answer). */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

/** A broker that answered but refused the client's credentials or certificate, named as
 * a settings problem (the password is never repeated); undefined for anything else. */
export function refusedConnection(settings: Settings, error: unknown): ConfigurationError | undefined {
  const servers = settings.bootstrapServers.join(",");
  const name = (error as { name?: string } | undefined)?.name ?? "";
  const text = describe(error);
  if (name === "KafkaJSSASLAuthenticationError" || /SASL .*authentication failed/i.test(text)) {
    return new ConfigurationError(
      `the broker at ${servers} refused the SASL credentials of ${JSON.stringify(settings.security.saslUsername)} ` +
        `(LOOPWARDEN_KAFKA__SECURITY__SASL_USERNAME, …__SASL_PASSWORD, …__SASL_MECHANISM): ${text}`,
    );
  }
  if (/certificate|self[- ]signed|SSL routines|Hostname\/IP does not match/i.test(text)) {
    return new ConfigurationError(
      `TLS with the broker at ${servers} failed (LOOPWARDEN_KAFKA__SECURITY__SSL_CAFILE, …__SSL_CHECK_HOSTNAME): ${text}`,
    );
  }
  return undefined;
}
