/**
 * The topics' JSON Schemas (shipped in `schemas/`, copied from what the Python models
 * export) compiled once with Ajv: the same contract the worker validates with, so an
 * event this client sends is one the worker reads, and a record it reads is what the
 * generated types say.
 */
import { readFileSync } from "node:fs";

import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

import type { FieldError } from "./errors.js";

// ajv-formats is CommonJS: its default export is the function under ESM and TS alike
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const schemasFolder = new URL("../schemas/", import.meta.url);

/** The topic roles and their schema files, as `loopwarden schema --out` wrote them. */
export const topicIndex: { topics: Record<string, { file: string; direction: "in" | "out" }> } =
  JSON.parse(readFileSync(new URL("index.json", schemasFolder), "utf8"));

interface SchemaObject {
  properties?: Record<string, unknown>;
  $defs?: Record<string, SchemaObject>;
  [key: string]: unknown;
}

const raw = new Map<string, SchemaObject>();

/** A topic's schema as shipped (parsed once). */
export function topicSchema(role: string): SchemaObject {
  let schema = raw.get(role);
  if (schema === undefined) {
    const entry = topicIndex.topics[role];
    if (entry === undefined) throw new Error(`no schema for topic role ${role}`);
    schema = JSON.parse(readFileSync(new URL(entry.file, schemasFolder), "utf8")) as SchemaObject;
    raw.set(role, schema);
  }
  return schema;
}

/** One definition of a topic's schema (`ActionPayload` of `actions`). */
export function definition(role: string, name: string): SchemaObject {
  const found = topicSchema(role).$defs?.[name];
  if (found === undefined) throw new Error(`no definition ${name} in the ${role} schema`);
  return found;
}

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

function schemas(): Ajv2020 {
  if (ajv === undefined) {
    ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
    addFormats(ajv);
    for (const role of Object.keys(topicIndex.topics)) ajv.addSchema(topicSchema(role));
  }
  return ajv;
}

/** The validator of one topic's records, or of one of its definitions (`ActionEvent`). */
export function validator(role: string, definition?: string): ValidateFunction {
  const key = `${role}#${definition ?? ""}`;
  let validate = compiled.get(key);
  if (validate === undefined) {
    if (!(role in topicIndex.topics)) throw new Error(`no schema for topic role ${role}`);
    const id = `urn:loopwarden:topic:${role}`;
    validate = schemas().compile({ $ref: definition ? `${id}#/$defs/${definition}` : id });
    compiled.set(key, validate);
  }
  return validate;
}

/** Ajv's errors as `path: message` pairs (paths written `payload.params[0]`), the
 * alternatives of an `anyOf` folded into one message per field. */
export function fieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  const byPath = new Map<string, string[]>();
  for (const error of errors ?? []) {
    if (error.keyword === "anyOf" || error.keyword === "if") continue;
    let path = error.instancePath
      .split("/")
      .slice(1)
      .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part.replace(/~1/g, "/").replace(/~0/g, "~")}`))
      .join("")
      .replace(/^\./, "");
    let message = error.message ?? error.keyword;
    if (error.keyword === "required") {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      path = path ? `${path}.${missing}` : missing;
      message = "required field missing";
    }
    const messages = byPath.get(path) ?? [];
    if (!messages.includes(message)) messages.push(message);
    byPath.set(path, messages);
  }
  return [...byPath].map(([path, messages]) => ({ path, message: messages.join(" or ") }));
}
