// The package's surface is a list of decisions: no `export *`, no internals, one form of
// each thing.
import { readFileSync } from "node:fs";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as api from "../../src/index.js";

/** The declarations of `file`, parsed. */
function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(new URL(`../../src/${file}`, import.meta.url), "utf8"), ts.ScriptTarget.ES2022, true);
}

interface Member {
  name: string;
  hidden: boolean;
  isStatic: boolean;
  internal: boolean;
}

/** The members of the class `className` declared in `file`, as its source has them. */
function members(file: string, className: string): Member[] {
  const source = parse(file);
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

/** The member names of the interface `name` declared in `file` (with those of the interfaces it extends there). */
function interfaceMembers(file: string, name: string): string[] {
  const source = parse(file);
  const decl = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name);
  if (!decl) throw new Error(`no interface ${name} in ${file}`);
  return [...new Set(decl.members.map((m) => m.name?.getText(source) ?? "?"))].sort();
}

/** Whether `file` exports a class (a value users could construct or extend). */
function exportedClasses(file: string): string[] {
  return parse(file)
    .statements.filter((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && (ts.getModifiers(s) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
    .map((c) => c.name?.text ?? "?");
}

/**
 * The handles the package hands out, each an exported interface over an internal class,
 * and the class's seams: public members the layers inside call, not on the interface.
 * `ifaceFile`: where the interface is declared, when not beside its class.
 */
const HANDLES: readonly { file: string; ifaceFile?: string; iface: string; impl: string; seams: readonly string[] }[] = [
  { file: "bus.ts", ifaceFile: "jetloop.ts", iface: "Jetloop", impl: "BusImpl", seams: ["context"] },
  { file: "subscribe/subscription.ts", iface: "Subscription", impl: "SubscriptionImpl", seams: ["start", "owns", "fail"] },
  { file: "session.ts", iface: "SessionHandle", impl: "SessionHandleImpl", seams: [] },
  { file: "commands/gate-server.ts", iface: "GateServer", impl: "GateServerImpl", seams: ["serve"] },
  { file: "commands/controls-server.ts", iface: "ControlServer", impl: "ControlServerImpl", seams: ["serve"] },
];

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

  it("a bus's members are exactly these", () => {
    expect(interfaceMembers("jetloop.ts", "Jetloop")).toEqual(
      [
        "close", "consumer", "consumers", "jetstreamManager", "journalOf", "journals", "log", "namespace", "nc", "parked", "provision", "publish", "publishAll",
        "registry", "removeDurable", "replay", "rules", "serveGates", "serverVersion", "session", "settings", "shards", "storedEvents", "stream", "subscribeEvents", "supports",
      ].sort(),
    );
  });

  it("interfaces out, classes in: each handle is an exported interface; its class is neither exported nor a value of the package", () => {
    for (const { file, ifaceFile = file, iface, impl } of HANDLES) {
      expect(exportedClasses(file), file).toEqual([]);
      expect(Object.keys(api), iface).not.toContain(iface);
      expect(Object.keys(api), impl).not.toContain(impl);
      expect(interfaceMembers(ifaceFile, iface).length, iface).toBeGreaterThan(0);
    }
  });

  it("a handle's class shows nothing beyond its interface but its named seams, and marks nothing @internal", () => {
    for (const { file, ifaceFile = file, iface, impl, seams } of HANDLES) {
      const all = members(file, impl);
      expect(all.filter((m) => m.internal).map((m) => m.name), impl).toEqual([]);
      expect(all.filter((m) => m.isStatic && !m.hidden), impl).toEqual([]);
      const visible = new Set(all.filter((m) => !m.hidden && m.name !== "constructor").map((m) => m.name));
      const allowed = new Set([...interfaceMembers(ifaceFile, iface), ...seams, "[Symbol.asyncIterator]"]);
      expect([...visible].filter((n) => !allowed.has(n)), impl).toEqual([]);
      // A seam is a seam only while the class has it: a stale entry here is dead.
      for (const seam of seams) expect(visible.has(seam), `${impl}.${seam}`).toBe(true);
    }
  });

  it("no class static blocks hand out constructors: a handle comes from a factory (connect, fromConnection, the bus's methods)", () => {
    for (const { file } of HANDLES) expect(readFileSync(new URL(`../../src/${file}`, import.meta.url), "utf8"), file).not.toMatch(/\bstatic \{/);
    expect(typeof api.connect).toBe("function");
    expect(typeof api.fromConnection).toBe("function");
    expect(interfaceMembers("subscribe/subscription.ts", "Subscription")).not.toContain("events");
  });
});
