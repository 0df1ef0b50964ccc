import { describe, expect, it } from "vitest";
import {
  COMMAND_EXECUTE,
  COMMAND_START_GRANT,
  decodePermissionRequest,
  encodePermissionRequest,
  EventEncodeError,
  EventValidationError,
  marshalEvent,
  RequestDecodeError,
  validatePermissionRequest,
  type PermissionRequest,
} from "../../src/index.js";
import { grantRequest, ID, minimalRequest, sample, thrownBy } from "./fixtures.js";

/**
 * The wire form of grantRequest(), written by hand as the runtime writes a request: its
 * field order, zero values omitted except a requirement's `scope`, which Go always writes.
 */
const GRANT_WIRE = {
  tool_name: "bash",
  summary: "run the test suite",
  execution_id: ID.execution,
  command: "npm test",
  working_directory: "/work/app",
  expires_at_unix_milli: 1748781296789,
  requirements: [
    { kind: "command.execute", scope: "", match: "npm test", description: "run npm test", grant_class: "command.start.v1", grant_target: "npm test" },
    {
      kind: "fs.write",
      scope: "workspace",
      match: "/work/app/coverage",
      description: "write coverage reports",
      grant_class: "fs.write.v1",
      grant_target: "/work/app",
      candidates: [
        { kind: "fs.write", match: "/work/app/coverage/**", description: "any coverage file", grant_class: "fs.write.v1", grant_target: "/work/app" },
        { kind: "fs.write", match: "/work/app/**", description: "anywhere in the app", grant_class: "fs.write.v1", grant_target: "/work/app" },
      ],
    },
  ],
};

/** Expects a RequestDecodeError naming `field`; returns it. */
function expectRequestError(fn: () => unknown, field: string, message?: RegExp): RequestDecodeError {
  const e = thrownBy(fn);
  expect(e).toBeInstanceOf(RequestDecodeError);
  const err = e as RequestDecodeError;
  expect(err.code).toBe("REQUEST_INVALID");
  expect(err.name).toBe("RequestDecodeError");
  expect(err.field).toBe(field);
  if (message) expect(err.message).toMatch(message);
  return err;
}

const decode = (wire: unknown) => () => decodePermissionRequest(JSON.stringify(wire));
const validate = (req: unknown) => () => validatePermissionRequest(req);

/** A deep copy of the grant wire with `edit` applied. */
function wireWith(edit: (w: typeof GRANT_WIRE & Record<string, unknown>) => void): unknown {
  const w = structuredClone(GRANT_WIRE) as typeof GRANT_WIRE & Record<string, unknown>;
  edit(w);
  return w;
}
function requestWith(edit: (r: PermissionRequest & Record<string, unknown>) => void): unknown {
  const r = grantRequest() as PermissionRequest & Record<string, unknown>;
  edit(r);
  return r;
}

describe("decodePermissionRequest: valid input", () => {
  /** grantRequest() as it decodes: the `"scope":""` the runtime writes is an absent scope. */
  const decodedGrant = () => grantRequest();

  it("decodes the wire form to the camelCase request", () => {
    expect(decodePermissionRequest(JSON.stringify(GRANT_WIRE))).toEqual(decodedGrant());
    expect(decodePermissionRequest(new TextEncoder().encode(JSON.stringify(GRANT_WIRE)))).toEqual(decodedGrant());
    expect(encodePermissionRequest(decodePermissionRequest(JSON.stringify(GRANT_WIRE)))).toBe(JSON.stringify(GRANT_WIRE));
  });

  it("encodePermissionRequest writes snake_case in the runtime's order, zero values omitted, scope always", () => {
    expect(encodePermissionRequest(grantRequest())).toBe(JSON.stringify(GRANT_WIRE));
    expect(encodePermissionRequest(minimalRequest())).toBe(
      '{"tool_name":"read_file","requirements":[{"kind":"fs.read","scope":"","match":"/etc/hosts","description":"read /etc/hosts"}]}',
    );
    expect(decodePermissionRequest(encodePermissionRequest(minimalRequest()))).toEqual(minimalRequest());
  });

  it("a request may be empty: a pure tool asks with no requirements", () => {
    expect(decodePermissionRequest("{}")).toEqual({ requirements: [] }); // read as none: always a list
    expect(encodePermissionRequest({})).toBe("{}");
    expect(encodePermissionRequest({ requirements: [] })).toBe("{}");
    // An empty list is the wire's zero: absent, and absent reads as the empty list.
    expect(decodePermissionRequest('{"tool_name":"t","requirements":[]}')).toEqual({ toolName: "t", requirements: [] });
  });

  it("escapes text as Go does", () => {
    expect(encodePermissionRequest({ toolName: "<a>&b" })).toBe('{"tool_name":"\\u003ca\\u003e\\u0026b"}');
  });

  it("accepts surrounding whitespace", () => {
    expect(decodePermissionRequest(` \n${JSON.stringify(GRANT_WIRE)}\n\t`)).toEqual(decodedGrant());
  });

  it("execution_id is free text, not necessarily a UUID", () => {
    for (const id of ["00000000-0000-0000-0000-000000000000", "exec-6", "ABC", "0190F2A1-5B3C-7D4E-8F60-00000000000A"]) {
      expect(decodePermissionRequest(JSON.stringify({ tool_name: "t", execution_id: id }))).toEqual({ toolName: "t", executionId: id, requirements: [] });
    }
  });
});

describe("decodePermissionRequest: unknown fields fail closed", () => {
  it.each([
    ["grant_token", "grant_token"],
    ["arguments", "arguments"],
    ["raw_arguments", "raw_arguments"],
    ["toolName", "toolName"], // camelCase is not the wire
  ])("top level %s", (key, field) => {
    expectRequestError(decode(wireWith((w) => (w[key] = "x"))), field, /is not a known field/);
  });

  it.each(["Tool_name", "TOOL_NAME", "Requirements"])("a letter-case variant of a field, %s (Go would read it as that field)", (key) => {
    expectRequestError(decode({ [key]: "x" }), key, /only in letter case/);
    // Beside the field itself, the two keys are refused as a pair.
    expectRequestError(decode(wireWith((w) => (w[key] = "x"))), "", /differ only in letter case/);
  });

  it("a __proto__ key (JSON.parse makes it an own key; it must not slip through)", () => {
    const text = `{"__proto__":{"grant_token":"secret"},${JSON.stringify(GRANT_WIRE).slice(1)}`;
    expectRequestError(() => decodePermissionRequest(text), "__proto__", /is not a known field/);
    const nested = JSON.stringify(GRANT_WIRE).replace('{"kind":"command.execute"', '{"__proto__":{"x":1},"kind":"command.execute"');
    expectRequestError(() => decodePermissionRequest(nested), "requirements.0.__proto__", /is not a known field/);
  });

  it("inside a requirement", () => {
    expectRequestError(decode(wireWith((w) => Object.assign(w.requirements[0]!, { grant_token: "secret" }))), "requirements.0.grant_token");
    expectRequestError(decode(wireWith((w) => Object.assign(w.requirements[1]!, { arguments: { cmd: "rm -rf /" } }))), "requirements.1.arguments");
  });

  it("inside a candidate", () => {
    expectRequestError(decode(wireWith((w) => Object.assign(w.requirements[1]!.candidates![1]!, { grant_token: "secret" }))), "requirements.1.candidates.1.grant_token");
  });

  it("validatePermissionRequest refuses unknown camelCase keys too", () => {
    expectRequestError(validate(requestWith((r) => (r.grantToken = "secret"))), "", /grantToken/);
    expectRequestError(validate(requestWith((r) => ((r.requirements[0] as unknown as Record<string, unknown>).rawArguments = "{}"))), "requirements.0", /rawArguments/);
  });
});

describe("decodePermissionRequest: malformed JSON fails closed", () => {
  const body = JSON.stringify(GRANT_WIRE);
  it.each([
    ["a duplicate top-level key", `{"tool_name":"a","tool_name":"b","requirements":[{"kind":"k","match":"m","description":"d"}]}`],
    ["a duplicate key in a requirement", `{"tool_name":"a","requirements":[{"kind":"k","match":"m","match":"n","description":"d"}]}`],
    ["a duplicate key in a candidate", `{"tool_name":"a","requirements":[{"kind":"k","match":"m","description":"d","candidates":[{"kind":"k","kind":"k","match":"m","description":"d"}]}]}`],
    ["keys equal after unescaping", `{"tool_name":"a","tool\\u005fname":"b","requirements":[{"kind":"k","match":"m","description":"d"}]}`],
  ])("%s", (_, text) => {
    expectRequestError(() => decodePermissionRequest(text), "", /duplicate key/);
  });

  it.each([
    ["trailing object", `${body} {}`],
    ["trailing garbage", `${body}x`],
    ["trailing bracket", `${body}]`],
    ["two objects", `${body}${body}`],
    ["truncated", body.slice(0, -1)],
    ["empty", ""],
    ["whitespace", "   "],
    ["single quotes", "{'tool_name':'a'}"],
    ["a comment", `/* hi */${body}`],
    ["a BOM", `\ufeff${body}`],
  ])("%s", (_, text) => {
    expectRequestError(() => decodePermissionRequest(text), "", /malformed JSON/);
  });

  it.each([["null"], ["[]"], [JSON.stringify([GRANT_WIRE])], ['"x"'], ["1"], ["true"], ["false"]])("%s is not an object", (text) => {
    expectRequestError(() => decodePermissionRequest(text), "", /must be a JSON object/);
  });

  it("invalid UTF-8 and a BOM in bytes", () => {
    expectRequestError(() => decodePermissionRequest(new Uint8Array([0x7b, 0xff, 0x7d])), "", /UTF-8/);
    expectRequestError(() => decodePermissionRequest(new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(body)])), "", /malformed JSON/);
  });

  it("too deep nesting", () => {
    const deep = `{"tool_name":"a","requirements":${"[".repeat(10_000)}${"]".repeat(10_000)}}`;
    expectRequestError(() => decodePermissionRequest(deep), "", /nesting deeper/);
    // Within the limit, the schema speaks.
    const nested = `{"tool_name":"a","requirements":${"[".repeat(100)}${"]".repeat(100)}}`;
    expectRequestError(() => decodePermissionRequest(nested), "requirements.0");
  });

  it("null or wrong types for fields", () => {
    expectRequestError(decode(wireWith((w) => ((w as Record<string, unknown>).summary = null))), "summary");
    expectRequestError(decode(wireWith((w) => ((w as Record<string, unknown>).requirements = null))), "requirements");
    expectRequestError(decode(wireWith((w) => ((w as Record<string, unknown>).requirements = {}))), "requirements");
    expectRequestError(decode(wireWith((w) => ((w as Record<string, unknown>).requirements = [null]))), "requirements.0");
    expectRequestError(decode(wireWith((w) => ((w as Record<string, unknown>).expires_at_unix_milli = "1748781296789"))), "expiresAtUnixMilli");
    expectRequestError(decode(wireWith((w) => ((w as Record<string, unknown>).execution_id = 7))), "executionId");
  });

  it("inexact numbers", () => {
    for (const n of ["1.0", "1e3", "9007199254740993"]) {
      expectRequestError(() => decodePermissionRequest(`{"expires_at_unix_milli":${n}}`), "", /cannot be read exactly/);
    }
  });
});

describe("validatePermissionRequest: shape", () => {
  it("accepts the samples", () => {
    expect(validatePermissionRequest(grantRequest())).toEqual(grantRequest());
    expect(validatePermissionRequest(minimalRequest())).toEqual(minimalRequest());
  });

  it.each([[null], [undefined], ["{}"], [[]], [[grantRequest()]], [42]])("%j is not an object", (v) => {
    expectRequestError(validate(v), "", /must be an object/);
  });

  it("every field is optional, and there is no cap on the requirements", () => {
    expect(validatePermissionRequest({})).toEqual({ requirements: [] });
    expect(validatePermissionRequest(requestWith((r) => delete (r as Record<string, unknown>).toolName))).not.toHaveProperty("toolName");
    const many = Array.from({ length: 200 }, (_, i) => ({ kind: "k", match: `m${i}`, description: "d" }));
    expect(validatePermissionRequest({ toolName: "t", requirements: many }).requirements).toHaveLength(200);
    // Text has no cap either.
    expect(validatePermissionRequest({ summary: "x".repeat(100_000) }).summary).toHaveLength(100_000);
  });

  it("requires kind, match and description of requirements and candidates", () => {
    for (const f of ["kind", "match", "description"]) {
      expectRequestError(validate(requestWith((r) => delete (r.requirements[1] as unknown as Record<string, unknown>)[f])), `requirements.1.${f}`);
      expectRequestError(validate(requestWith((r) => ((r.requirements[1] as unknown as Record<string, unknown>)[f] = ""))), `requirements.1.${f}`, /must not be empty/);
      expectRequestError(validate(requestWith((r) => delete (r.requirements[1]!.candidates![0] as unknown as Record<string, unknown>)[f])), `requirements.1.candidates.0.${f}`);
    }
    expectRequestError(validate(requestWith((r) => (r.requirements[1]!.candidates![0]!.match = ""))), "requirements.1.candidates.0.match", /must not be empty/);
    expectRequestError(validate(requestWith((r) => (r.requirements[1]!.candidates![0]!.description = ""))), "requirements.1.candidates.0.description", /must not be empty/);
    // An empty list of candidates is no candidates.
    expect(validatePermissionRequest(requestWith((r) => (r.requirements[1]!.candidates = []))).requirements[1]!.candidates).toEqual([]);
  });

  it("expiresAtUnixMilli is a positive safe integer", () => {
    for (const bad of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1, Infinity]) {
      expectRequestError(validate(requestWith((r) => (r.expiresAtUnixMilli = bad))), "expiresAtUnixMilli");
    }
  });

  it("checked text is trimmed (Go's white space) with no NUL", () => {
    const cases: [string, (r: PermissionRequest) => void][] = [
      ["summary", (r) => (r.summary = "run the tests\n")],
      [
        "command",
        (r) => {
          // Without the command.execute requirement, whose own rule would speak first.
          r.requirements.shift();
          r.command = "npm test ";
        },
      ],
      ["workingDirectory", (r) => (r.workingDirectory = "\t/work/app")],
      ["requirements.1.kind", (r) => (r.requirements[1]!.kind = "fs.write ")],
      ["requirements.1.scope", (r) => (r.requirements[1]!.scope = " workspace")],
      ["requirements.1.match", (r) => (r.requirements[1]!.match = "/work/app/coverage\u00a0")],
      ["requirements.1.description", (r) => (r.requirements[1]!.description = "\u2028write")],
      ["requirements.1.grantTarget", (r) => {
        r.requirements[1]!.grantTarget = "/work/app ";
        for (const c of r.requirements[1]!.candidates!) c.grantTarget = "/work/app ";
      }],
      ["requirements.1.candidates.0.match", (r) => (r.requirements[1]!.candidates![0]!.match = " /x")],
      ["requirements.0.description", (r) => (r.requirements[0]!.description = "a\u0000b")],
    ];
    for (const [field, edit] of cases) expectRequestError(validate(requestWith(edit)), field, /surrounding white space/);
  });

  it("other text is free: the tool name, a candidate's description, non-NFC and inner control characters", () => {
    expect(validatePermissionRequest({ ...minimalRequest(), toolName: " bash " }).toolName).toBe(" bash ");
    expect(validatePermissionRequest({ ...minimalRequest(), summary: "Cafe\u0301 \u001b[1m" }).summary).toBe("Cafe\u0301 \u001b[1m");
    // U+FEFF and U+200B are not white space to Go.
    expect(validatePermissionRequest({ ...minimalRequest(), summary: "\ufeffx\u200b" }).summary).toBe("\ufeffx\u200b");
    const r = requestWith((q) => (q.requirements[1]!.candidates![0]!.description = "  any coverage file  "));
    expect(validatePermissionRequest(r)).toEqual(r);
  });
});

describe("validatePermissionRequest: invariants", () => {
  it("no duplicate requirements (by kind, scope, match, grant class, grant target)", () => {
    const req = { kind: "fs.read", match: "/a", description: "one" };
    expectRequestError(validate({ toolName: "t", requirements: [req, { ...req, description: "another description" }] }), "requirements.1", /duplicates an earlier requirement/);
    // A different scope, match or grant makes it a different requirement.
    expect(validatePermissionRequest({ toolName: "t", requirements: [req, { ...req, scope: "s" }] }).requirements).toHaveLength(2);
    expect(validatePermissionRequest({ toolName: "t", requirements: [req, { ...req, match: "/b" }] }).requirements).toHaveLength(2);
    expect(
      validatePermissionRequest({
        toolName: "t",
        executionId: ID.execution,
        command: "c",
        workingDirectory: "/w",
        expiresAtUnixMilli: 1,
        requirements: [req, { ...req, grantClass: "g", grantTarget: "/a" }],
      }).requirements,
    ).toHaveLength(2);
  });

  it("no duplicate candidates of one requirement", () => {
    const cand = { kind: "fs.read", match: "/a/**", description: "one" };
    expectRequestError(
      validate({ toolName: "t", requirements: [{ kind: "fs.read", match: "/a/b", description: "d", candidates: [cand, { ...cand, description: "two" }] }] }),
      "requirements.0.candidates.1",
      /duplicates an earlier candidate/,
    );
    // The same candidate under two requirements is fine.
    expect(
      validatePermissionRequest({
        toolName: "t",
        requirements: [
          { kind: "fs.read", match: "/a/b", description: "d", candidates: [cand] },
          { kind: "fs.read", match: "/a/c", description: "d", candidates: [cand] },
        ],
      }).requirements,
    ).toHaveLength(2);
  });

  it("grant class and grant target of a requirement are set together", () => {
    expectRequestError(validate(requestWith((r) => delete r.requirements[0]!.grantTarget)), "requirements.0.grantClass", /set together/);
    expectRequestError(validate(requestWith((r) => delete r.requirements[1]!.grantClass)), "requirements.1.grantClass", /set together/);
    expectRequestError(validate(requestWith((r) => delete r.requirements[1]!.grantTarget)), "requirements.1.grantClass", /set together/);
  });

  it("a candidate carries its requirement's grant exactly", () => {
    expectRequestError(validate(requestWith((r) => delete r.requirements[1]!.candidates![1]!.grantClass)), "requirements.1.candidates.1.grantClass", /grant exactly/);
    expectRequestError(validate(requestWith((r) => (r.requirements[1]!.candidates![0]!.grantTarget = "/work"))), "requirements.1.candidates.0.grantClass", /grant exactly/);
    expectRequestError(
      validate(
        requestWith((r) => {
          delete r.requirements[1]!.candidates![0]!.grantClass;
          delete r.requirements[1]!.candidates![0]!.grantTarget;
        }),
      ),
      "requirements.1.candidates.0.grantClass",
      /grant exactly/,
    );
    // A grant on a candidate alone is not its requirement's grant.
    expectRequestError(
      validate({ toolName: "t", requirements: [{ kind: "k", match: "m", description: "d", candidates: [{ kind: "k", match: "m*", description: "d", grantClass: "g", grantTarget: "m" }] }] }),
      "requirements.0.candidates.0.grantClass",
      /grant exactly/,
    );
  });

  it("a candidate's kind is its requirement's kind", () => {
    expectRequestError(validate(requestWith((r) => (r.requirements[1]!.candidates![1]!.kind = "fs.read"))), "requirements.1.candidates.1.kind", /requirement's kind/);
  });

  it.each(["executionId", "command", "workingDirectory", "expiresAtUnixMilli"] as const)("a grant requirement needs %s", (field) => {
    // The command.execute requirement needs `command` for its own rule; use a plain grant.
    const req: Record<string, unknown> = {
      toolName: "write_file",
      executionId: ID.execution,
      command: "write",
      workingDirectory: "/w",
      expiresAtUnixMilli: 1748781296789,
      requirements: [{ kind: "fs.write", match: "/w/a", description: "write a", grantClass: "fs.write.v1", grantTarget: "/w" }],
    };
    expect(validatePermissionRequest(req).requirements).toHaveLength(1);
    delete req[field];
    expectRequestError(validate(req), field, /must be set when a requirement asks for a grant/);
  });

  it("no grant, no execution fields needed", () => {
    const req = {
      toolName: "t",
      requirements: [{ kind: "k", match: "m", description: "d", candidates: [{ kind: "k", match: "m*", description: "d" }] }],
    };
    expect(validatePermissionRequest(req)).toEqual(req);
  });

  describe(`${COMMAND_EXECUTE} rules`, () => {
    it("has an empty scope", () => {
      expectRequestError(validate(requestWith((r) => (r.requirements[0]!.scope = "shell"))), "requirements.0.scope", /must be empty/);
    });
    it(`has grant class ${COMMAND_START_GRANT}`, () => {
      expectRequestError(
        validate(requestWith((r) => Object.assign(r.requirements[0]!, { grantClass: "command.start.v2" }))),
        "requirements.0.grantClass",
        /command\.start\.v1/,
      );
      // Without any grant it is half of nothing, but still not command.start.v1.
      expectRequestError(
        validate(
          requestWith((r) => {
            delete r.requirements[0]!.grantClass;
            delete r.requirements[0]!.grantTarget;
          }),
        ),
        "requirements.0.grantClass",
        /command\.start\.v1/,
      );
    });
    it("grant target equals its match and the request's command", () => {
      expectRequestError(validate(requestWith((r) => (r.requirements[0]!.grantTarget = "npm test -- --watch"))), "requirements.0.grantTarget", /match/);
      expectRequestError(validate(requestWith((r) => (r.command = "npm run build"))), "requirements.0.grantTarget", /command/);
      expectRequestError(
        validate(
          requestWith((r) => {
            r.requirements[0]!.match = "npm ci";
            r.requirements[0]!.grantTarget = "npm ci";
          }),
        ),
        "requirements.0.grantTarget",
        /command/,
      );
    });
  });

  it("decodePermissionRequest enforces the invariants too", () => {
    expectRequestError(decode(wireWith((w) => (w.requirements[1]!.candidates![0]!.kind = "fs.read"))), "requirements.1.candidates.0.kind");
    expectRequestError(decode(wireWith((w) => delete (w as Record<string, unknown>).working_directory)), "workingDirectory");
    expectRequestError(decode(wireWith((w) => (w.requirements[0]!.grant_class = "x"))), "requirements.0.grantClass");
    expectRequestError(decode(wireWith((w) => w.requirements.push(structuredClone(w.requirements[0]!)))), "requirements.2", /duplicates/);
  });
});

describe("marshalEvent fails closed on a request the codec rejects", () => {
  it.each<[string, (r: PermissionRequest & Record<string, unknown>) => void]>([
    ["a half-set grant", (r) => delete r.requirements[0]!.grantTarget],
    ["a smuggled grant token", (r) => (r.grantToken = "secret")],
    ["smuggled raw arguments", (r) => ((r.requirements[1] as unknown as Record<string, unknown>).rawArguments = '{"path":"/"}')],
    ["untrimmed text", (r) => (r.summary = "run the tests ")],
    ["a duplicate candidate", (r) => r.requirements[1]!.candidates!.push({ ...r.requirements[1]!.candidates![0]! })],
  ])("%s → EventEncodeError request_rejected", (_, edit) => {
    const event = { ...sample("PermissionRequested"), request: requestWith(edit) };
    const e = thrownBy(() => marshalEvent(event));
    expect(e).toBeInstanceOf(EventEncodeError);
    const err = e as EventEncodeError;
    expect([err.code, err.name, err.eventType, err.reason]).toEqual(["EVENT_ENCODE", "EventEncodeError", "PermissionRequested", "request_rejected"]);
    // The cause names the request's field that broke the runtime's rules.
    expect(err.cause).toBeInstanceOf(EventValidationError);
    expect((err.cause as EventValidationError).field).toMatch(/^request(\.|$)/);
  });

  it("a missing request is the empty one; a null or non-object request is request_rejected", () => {
    const wire = new TextDecoder().decode(marshalEvent({ ...sample("PermissionRequested"), request: undefined }));
    expect((JSON.parse(wire) as { request: unknown }).request).toEqual({});
    for (const request of [null, "{}", []]) {
      const e = thrownBy(() => marshalEvent({ ...sample("PermissionRequested"), request }));
      expect(e).toBeInstanceOf(EventEncodeError);
      expect((e as EventEncodeError).reason).toBe("request_rejected");
    }
  });
});
