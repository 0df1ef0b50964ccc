// The package's surface is a list of decisions: no `export *`, no internals, one form of
// each thing.
import { readFileSync } from "node:fs";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as api from "../../src/index.js";

/** The members of `className` declared in `file`, as its source has them. */
function members(file: string, className: string): { name: string; hidden: boolean; isStatic: boolean; internal: boolean }[] {
  const path = new URL(`../../src/${file}`, import.meta.url);
  const source = ts.createSourceFile(file, readFileSync(path, "utf8"), ts.ScriptTarget.ES2022, true);
  const cls = source.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === className);
  if (!cls) throw new Error(`no class ${className} in ${file}`);
  return cls.members
    .filter((m) => !ts.isClassStaticBlockDeclaration(m))
    .map((m) => {
      const modifiers = ts.canHaveModifiers(m) ? (ts.getModifiers(m) ?? []) : [];
      const has = (kind: ts.SyntaxKind) => modifiers.some((x) => x.kind === kind);
      return {
        name: ts.isConstructorDeclaration(m) ? "constructor" : (m.name?.getText(source) ?? "?"),
        hidden: (m.name !== undefined && ts.isPrivateIdentifier(m.name)) || has(ts.SyntaxKind.PrivateKeyword),
        isStatic: has(ts.SyntaxKind.StaticKeyword),
        internal: ts.getJSDocTags(m).some((t) => t.tagName.text === "internal"),
      };
    });
}

describe("the public surface (src/index.ts)", () => {
  it("lists each export by name", () => {
    const index = readFileSync(new URL("../../src/index.ts", import.meta.url), "utf8");
    expect(index).not.toMatch(/export \*/);
  });

  it("keeps internals inside: filter resolution, consumer templates, the many guards, the bus's context", () => {
    for (const name of ["resolveFilter", "MANY_FILTER_SUBJECTS", "declaredConsumerTemplates", "isEventValidationError", "isCommandError", "isPublishConflictError", "busContext"]) {
      expect(Object.keys(api)).not.toContain(name);
    }
    expect(typeof api.isJetloopError).toBe("function");
  });

  it("the Jetloop class has no @internal member, and exactly these public ones", () => {
    const all = members("bus.ts", "Jetloop");
    expect(all.filter((m) => m.internal).map((m) => m.name)).toEqual([]);
    const visible = [...new Set(all.filter((m) => !m.hidden).map((m) => m.name))].sort();
    expect(visible).toEqual(
      [
        "close", "consumer", "consumers", "jetstreamManager", "log", "namespace", "nc", "parked", "provision", "publish", "publishAll",
        "registry", "replay", "serveGates", "serverVersion", "session", "settings", "storedEvents", "stream", "subscribeEvents", "supports",
      ].sort(),
    );
    // The same at run time: what the prototype carries, and no static factory.
    expect(Object.getOwnPropertyNames(api.Jetloop.prototype).filter((n) => n !== "constructor").every((n) => visible.includes(n))).toBe(true);
    expect(Object.getOwnPropertyNames(api.Jetloop).filter((n) => !["length", "name", "prototype"].includes(n))).toEqual([]);
  });

  it("the bus's handles have no @internal member either: a subscription, a session handle and a gate server come from the bus", () => {
    for (const [file, name] of [["subscribe/subscription.ts", "Subscription"], ["session.ts", "SessionHandle"], ["commands/gate-server.ts", "GateServer"]] as const) {
      const all = members(file, name);
      expect(all.filter((m) => m.internal).map((m) => m.name), name).toEqual([]);
      expect(all.filter((m) => m.name === "constructor").map((m) => m.hidden), name).toEqual([true]);
    }
  });

  it("one form of each thing: a bus comes from connect() or fromConnection(), the class's constructor is private", () => {
    expect(members("bus.ts", "Jetloop").filter((m) => m.name === "constructor").map((m) => m.hidden)).toEqual([true]);
    expect(members("bus.ts", "Jetloop").filter((m) => m.isStatic && !m.hidden)).toEqual([]);
    expect(typeof api.connect).toBe("function");
    expect(typeof api.fromConnection).toBe("function");
    expect(members("subscribe/subscription.ts", "Subscription").map((m) => m.name)).not.toContain("events");
    // A gate server comes from bus.serveGates(): no public static on the class users receive.
    expect(members("commands/gate-server.ts", "GateServer").filter((m) => m.isStatic && !m.hidden)).toEqual([]);
  });
});
