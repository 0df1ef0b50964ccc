/**
 * Reads the suite's own test files (the TypeScript compiler's syntax tree, no type check)
 * for the kinds of test that count as passed without proving their claim:
 *
 * - a test whose body reaches no assertion: no `expect…`, `assert…` or `fc.assert` call in
 *   it, nor in a helper it calls (a function of the same file, or one imported from a
 *   relative module, followed transitively);
 * - a `return` in a test's body before its first assertion (the test ends, passed, having
 *   checked nothing);
 * - a wait by the clock: `sleep(` or `setTimeout` (counted per file; test-tree.test.ts keeps
 *   the allow-list, each entry with why);
 * - silence taken as proof: `.extra(` (harness/reader.ts: "nothing came within N ms");
 *   counted per file, allow-listed likewise;
 * - the clock as a seed: `Date.now()` or `Math.random()` in a `seed` (a property, a variable
 *   or a parameter named so).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

export interface Finding {
  readonly file: string;
  readonly line: number;
  readonly kind: "no-assertion" | "return-before-assertion" | "clock-seed";
  readonly what: string;
}

export interface FileCounts {
  /** `sleep(` calls and `setTimeout` references. */
  readonly waits: number;
  /** `.extra(` calls: a read that passes when nothing came within a time. */
  readonly silences: number;
}

const TEST_CALLEES = new Set(["it", "test"]);
/** it.each(table)(name, fn), it.skipIf(c)(name, fn), it.concurrent(name, fn), … */
function isTestCall(call: ts.CallExpression): boolean {
  let callee: ts.Expression = call.expression;
  if (ts.isCallExpression(callee)) callee = callee.expression; // it.each(…)( … )
  while (ts.isPropertyAccessExpression(callee)) callee = callee.expression;
  return ts.isIdentifier(callee) && TEST_CALLEES.has(callee.text);
}

function testBody(call: ts.CallExpression): ts.FunctionLikeDeclaration | undefined {
  for (const a of call.arguments) if (ts.isArrowFunction(a) || ts.isFunctionExpression(a)) return a;
  return undefined;
}

function testName(call: ts.CallExpression, sf: ts.SourceFile): string {
  const first = call.arguments[0];
  return first === undefined ? "(unnamed)" : first.getText(sf).slice(0, 100);
}

/** The name a call is made by: `expect`, `assert`, `fc.assert` → "assert", `checkMerged`. */
function calleeName(call: ts.CallExpression): string | undefined {
  let e: ts.Expression = call.expression;
  // expect(x).toBe(y): the innermost call is expect(x).
  while (ts.isPropertyAccessExpression(e)) e = e.expression;
  if (ts.isCallExpression(e)) return calleeName(e);
  return ts.isIdentifier(e) ? e.text : undefined;
}

function isAssertionCall(call: ts.CallExpression): boolean {
  const e = call.expression;
  const name = calleeName(call);
  if (name === "expect" || name === "expectTypeOf" || name === "assert" || (name !== undefined && /^assert[A-Z]/.test(name))) return true;
  // fc.assert(…), assert.equal(…)
  return ts.isPropertyAccessExpression(e) && e.name.text === "assert";
}

/** Functions a module defines at its top level, by name (declarations and const arrows). */
function topLevelFunctions(sf: ts.SourceFile): Map<string, ts.Node> {
  const out = new Map<string, ts.Node>();
  const visit = (n: ts.Node) => {
    if (ts.isFunctionDeclaration(n) && n.name) out.set(n.name.text, n);
    else if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer && (ts.isArrowFunction(n.initializer) || ts.isFunctionExpression(n.initializer))) out.set(n.name.text, n.initializer);
    else if (ts.isClassDeclaration(n) && n.name) out.set(n.name.text, n);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Relative imports of a module: local name → the imported file and its exported name. */
function relativeImports(sf: ts.SourceFile, file: string): Map<string, { file: string; name: string }> {
  const out = new Map<string, { file: string; name: string }>();
  for (const st of sf.statements) {
    if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier)) continue;
    const spec = st.moduleSpecifier.text;
    if (!spec.startsWith(".")) continue;
    const target = resolve(dirname(file), spec.replace(/\.js$/, ".ts"));
    const bindings = st.importClause?.namedBindings;
    if (bindings && ts.isNamedImports(bindings)) for (const el of bindings.elements) out.set(el.name.text, { file: target, name: (el.propertyName ?? el.name).text });
  }
  return out;
}

/** The test tree's reader: parses each module once, answers whether a node reaches an assertion. */
export class TestTree {
  readonly #parsed = new Map<string, { sf: ts.SourceFile; fns: Map<string, ts.Node>; imports: Map<string, { file: string; name: string }> }>();
  readonly #asserts = new Map<ts.Node, boolean>();
  readonly #sources: Map<string, string>;

  /** `sources` overrides what is read from disk (the checker's own tests give it text). */
  constructor(sources: Map<string, string> = new Map()) {
    this.#sources = sources;
  }

  module(file: string) {
    let m = this.#parsed.get(file);
    if (!m) {
      const text = this.#sources.get(file) ?? (existsSync(file) ? readFileSync(file, "utf8") : "");
      const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
      m = { sf, fns: topLevelFunctions(sf), imports: relativeImports(sf, file) };
      this.#parsed.set(file, m);
    }
    return m;
  }

  /** Whether `node`, or a helper it calls (followed transitively), makes an assertion. */
  reachesAssertion(node: ts.Node, file: string): boolean {
    const known = this.#asserts.get(node);
    if (known !== undefined) return known;
    this.#asserts.set(node, false); // a cycle asserts nothing by itself
    let found = false;
    const visit = (n: ts.Node): void => {
      if (found) return;
      // An assertion: expect/assert, or a throw (a helper such as waitFor fails the test by throwing).
      if ((ts.isCallExpression(n) && isAssertionCall(n)) || ts.isThrowStatement(n)) found = true;
      // A helper called by name, or a class constructed: followed into its body.
      else if (ts.isCallExpression(n) && ts.isIdentifier(n.expression)) found = this.#helperAsserts(n.expression.text, file);
      else if (ts.isNewExpression(n) && ts.isIdentifier(n.expression)) found = this.#helperAsserts(n.expression.text, file);
      if (!found) ts.forEachChild(n, visit);
    };
    visit(node);
    this.#asserts.set(node, found);
    return found;
  }

  #helperAsserts(name: string, file: string): boolean {
    const m = this.module(file);
    const local = m.fns.get(name);
    if (local) return this.reachesAssertion(local, file);
    const imported = m.imports.get(name);
    if (imported) {
      const target = this.module(imported.file).fns.get(imported.name);
      if (target) return this.reachesAssertion(target, imported.file);
    }
    return false;
  }

  /** The findings of one test file. */
  findings(file: string, root: string): Finding[] {
    const { sf } = this.module(file);
    const out: Finding[] = [];
    const where = (n: ts.Node) => ({ file: relative(root, file), line: sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1 });
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && isTestCall(n)) {
        const body = testBody(n);
        if (body?.body) {
          if (!this.reachesAssertion(body.body, file)) out.push({ ...where(n), kind: "no-assertion", what: testName(n, sf) });
          const early = this.#returnBeforeAssertion(body.body, file);
          if (early) out.push({ ...where(early), kind: "return-before-assertion", what: testName(n, sf) });
        }
      }
      if (clockSeed(n)) out.push({ ...where(n), kind: "clock-seed", what: n.getText(sf).slice(0, 100) });
      ts.forEachChild(n, visit);
    };
    visit(sf);
    return out;
  }

  /** The first `return` of a test body (outside nested functions) with no assertion before it in the text. */
  #returnBeforeAssertion(body: ts.Node, file: string): ts.ReturnStatement | undefined {
    let firstAssertion = Number.POSITIVE_INFINITY;
    let early: ts.ReturnStatement | undefined;
    const visit = (n: ts.Node, nested: boolean): void => {
      const asserts =
        (ts.isCallExpression(n) && (isAssertionCall(n) || (ts.isIdentifier(n.expression) && this.#helperAsserts(n.expression.text, file)))) || ts.isThrowStatement(n);
      if (asserts) firstAssertion = Math.min(firstAssertion, n.getStart());
      if (!nested && ts.isReturnStatement(n) && early === undefined) early = n;
      const inner = nested || ts.isFunctionLike(n);
      ts.forEachChild(n, (c) => visit(c, inner));
    };
    ts.forEachChild(body, (c) => visit(c, false));
    return early !== undefined && early.getStart() < firstAssertion ? early : undefined;
  }

  /** The file's waits by the clock and its silences. */
  counts(file: string): FileCounts {
    const { sf } = this.module(file);
    let waits = 0;
    let silences = 0;
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === "sleep") waits++;
      if (ts.isIdentifier(n) && n.text === "setTimeout" && !(ts.isPropertyAccessExpression(n.parent) && n.parent.name === n && !isTimersGlobal(n.parent))) waits++;
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === "extra") silences++;
      ts.forEachChild(n, visit);
    };
    visit(sf);
    return { waits, silences };
  }
}

/** globalThis.setTimeout / timers.setTimeout count as setTimeout; obj.setTimeout of another kind not. */
function isTimersGlobal(p: ts.PropertyAccessExpression): boolean {
  return ts.isIdentifier(p.expression) && /^(globalThis|timers|global|window)$/.test(p.expression.text);
}

/** `seed: Date.now()…`, `const seed = Math.random()…`, `(seed = Date.now())`. */
function clockSeed(n: ts.Node): boolean {
  const named = (name: ts.Node | undefined) => name !== undefined && (ts.isIdentifier(name) || ts.isStringLiteral(name)) && /seed/i.test(name.text);
  let value: ts.Node | undefined;
  if (ts.isPropertyAssignment(n) && named(n.name)) value = n.initializer;
  else if (ts.isVariableDeclaration(n) && named(n.name)) value = n.initializer;
  else if (ts.isParameter(n) && named(n.name)) value = n.initializer;
  if (value === undefined) return false;
  return /\b(Date\.now|Math\.random|performance\.now)\s*\(/.test(value.getText());
}

/** Every test file under `dir` (`*.test.ts`), sorted. */
export function testFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith(".test.ts")) out.push(join(d, e.name));
    }
  };
  walk(dir);
  return out.sort();
}
