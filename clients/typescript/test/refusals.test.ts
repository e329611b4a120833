/** Which failed calls are refusals (`rejected`): the Python client's rule and names
 * (schemas/refusals.py, read from constants.json), applied to the errors this client's
 * frameworks raise. No broker. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { ToolInputParsingException } from "@langchain/core/tools";
import { InvalidToolInputError, NoSuchToolError } from "ai";
import { z } from "zod";

import { refused, toolCallFields } from "../src/toolcalls.js";

function zodError(): unknown {
  try {
    z.object({ q: z.string() }).parse({ q: 3 });
  } catch (error) {
    return error;
  }
  assert.fail("zod accepted a number for a string");
}

function withStatus(status: number, field: "status" | "statusCode" | "response" = "status"): Error {
  const error = new Error(`HTTP ${status}`);
  Object.assign(error, field === "response" ? { response: { status } } : { [field]: status });
  return error;
}

describe("refused calls", () => {
  it("takes the frameworks' refusals for what they are", () => {
    assert.ok(refused(zodError()));
    assert.ok(refused(new ToolInputParsingException("not the tool's input", "{")));
    assert.ok(refused(new InvalidToolInputError({ toolName: "search", toolInput: "{", cause: new Error("bad") })));
    assert.ok(refused(new NoSuchToolError({ toolName: "made_up" })));
  });

  it("takes a 4xx answer as a refusal, not a timeout, a rate limit or a server error", () => {
    for (const status of [400, 401, 403, 404, 422]) assert.ok(refused(withStatus(status)), String(status));
    assert.ok(refused(withStatus(404, "statusCode")) && refused(withStatus(409, "response")));
    for (const status of [408, 429, 500, 503]) assert.ok(!refused(withStatus(status)), String(status));
  });

  it("does not take a plain failure, or a message alone, for a refusal", () => {
    assert.ok(!refused(new Error("permission denied: ./deploy.sh")));
    assert.ok(!refused("ValidationError: q is not a string"));
    assert.ok(!refused(undefined));
  });

  it("marks the call rejected unless the caller says otherwise", () => {
    assert.equal(toolCallFields("search", { q: 3 }, { error: zodError() as Error }).rejected, true);
    assert.equal(toolCallFields("search", { q: 3 }, { error: zodError() as Error, rejected: false }).rejected, undefined);
    assert.equal(toolCallFields("deploy", {}, { error: new Error("exit 1") }).rejected, undefined);
    assert.equal(toolCallFields("deploy", {}, { error: "exit 1", rejected: true }).rejected, true);
  });
});
