/**
 * The workspace rules behind "Approve always for this workspace": the rule writer and
 * matcher the Go runtime's interactive evaluator requires (harness `gate.RuleWriter`,
 * `gate.RuleMatcher`), on a NATS KV bucket, one per namespace (a namespace is the
 * workspace). An answer "always" persists the displayed candidates of the gate's unmet
 * requirements before the approval is journaled; a later permission request whose every
 * requirement a rule covers is approved without a gate. A rule covers a requirement when
 * its kind and match equal the requirement's exactly (Go's SessionRules: never a prefix or
 * a pattern). Allow rules only.
 *
 * The bucket is created on the first rule written (R1, one value per key); an operator may
 * create it beforehand with more replicas (`nats kv add`), and it is used as it is.
 * Anyone the server lets publish on `$KV.<bucket>.>` can write a rule, so grant it to the
 * loop actors and the operators only (SECURITY.md).
 */
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { type KV, Kvm } from "@nats-io/kv";
import { z } from "zod";
import { CommandError } from "../errors.js";
import { checkNamespace } from "../subjects/subjects.js";

/** A reusable allow candidate a permission request displays (its requirement's `candidates`). */
export interface RuleCandidate {
  readonly kind: string;
  readonly match: string;
  readonly description?: string | undefined;
}

/** A stored workspace rule: the candidate, and the gate whose "always" answer wrote it. */
export interface WorkspaceRule {
  /** The rule's key: sha256 of its kind and match (hex). */
  readonly id: string;
  readonly kind: string;
  readonly match: string;
  readonly description?: string | undefined;
  readonly approvedAt: string;
  readonly sessionId: string;
  readonly loopId: string;
  readonly gateId: string;
}

/** Where the answer that wrote a rule came from. */
export interface RuleProvenance {
  readonly sessionId: string;
  readonly loopId: string;
  readonly gateId: string;
}

/** The namespace's rules bucket: `jetloop` → `jetloop_rules` (KV stream `KV_jetloop_rules`). */
export function rulesBucketName(namespace: string): string {
  return `${checkNamespace(namespace).replaceAll(".", "_")}_rules`;
}

/** How many rules `list` reads at most: the workspace's rules are a person's answers, not a data set. */
export const MAX_RULES_LISTED = 10_000;

const storedRule = z.strictObject({
  kind: z.string().min(1),
  match: z.string().min(1),
  description: z.string().optional(),
  approved_at: z.string(),
  session_id: z.string(),
  loop_id: z.string(),
  gate_id: z.string(),
});

/** A rule's key: its kind and match, hashed (a KV key admits only `[-/_=.a-zA-Z0-9]`; a match is any text). */
export function ruleId(kind: string, match: string): string {
  return createHash("sha256").update(JSON.stringify([kind, match])).digest("hex");
}

const RULE_ID = /^[0-9a-f]{64}$/;

/** The bucket's "stream not found": no rule was ever written (reads as no rules). */
function bucketMissing(e: unknown): boolean {
  return e instanceof Error && /stream not found/i.test(e.message);
}

/** The namespace's workspace rules (`bus.rules`): what "Approve always for this workspace" persisted. */
export interface WorkspaceRules {
  /** The KV bucket holding them: `{namespace}_rules`. */
  readonly bucket: string;
  /** For each requirement, whether a stored rule covers it (kind and match equal); a bucket never written is no rules. */
  covers(requirements: readonly { readonly kind: string; readonly match: string }[]): Promise<boolean[]>;
  /** Persists every candidate or none (CommandError COMMAND_FAILED), creating the bucket on first use. */
  write(candidates: readonly RuleCandidate[], from: RuleProvenance): Promise<void>;
  /** Every stored rule by id, at most MAX_RULES_LISTED (`more` when the bucket holds more). */
  list(): Promise<{ rules: WorkspaceRule[]; more: boolean }>;
  /** Removes a rule by its id (64 hex digits); false when there was none. */
  remove(id: string): Promise<boolean>;
}

export class WorkspaceRuleStore implements WorkspaceRules {
  readonly #nc: NatsConnection;
  readonly bucket: string;
  #bound: KV | undefined;

  constructor(nc: NatsConnection, namespace: string) {
    this.#nc = nc;
    this.bucket = rulesBucketName(namespace);
  }

  /** The bucket, bound without a round trip; reads of a bucket never created fail as "stream not found". */
  async #kv(): Promise<KV> {
    this.#bound ??= await new Kvm(this.#nc).open(this.bucket);
    return this.#bound;
  }

  /**
   * For each requirement, whether a stored rule covers it (kind and match equal). A value
   * stored under its key that does not parse, or names another kind or match, covers
   * nothing: anyone who may write the bucket could have put it there. Throws what a read
   * failed with, except a bucket never created (no rules).
   */
  async covers(requirements: readonly { readonly kind: string; readonly match: string }[]): Promise<boolean[]> {
    const kv = await this.#kv();
    const out: boolean[] = [];
    for (const r of requirements) {
      let entry;
      try {
        entry = await kv.get(ruleId(r.kind, r.match));
      } catch (e) {
        if (bucketMissing(e)) return requirements.map(() => false);
        throw e;
      }
      const rule = entry?.operation === "PUT" ? parseRule(entry.key, entry.value) : undefined;
      out.push(rule !== undefined && rule.kind === r.kind && rule.match === r.match);
    }
    return out;
  }

  /**
   * Persists every candidate, or none (Go's RuleWriter): a batch with an empty kind or match
   * is refused whole; a write that fails takes back the ones this batch added, then throws
   * CommandError COMMAND_FAILED. Creates the bucket on first use.
   */
  async write(candidates: readonly RuleCandidate[], from: RuleProvenance): Promise<void> {
    for (const [i, c] of candidates.entries()) {
      if (!c.kind || !c.match) throw new CommandError("COMMAND_FAILED", `workspace rule candidate ${i} needs a kind and a match: nothing was persisted`);
    }
    if (candidates.length === 0) return;
    let kv: KV;
    try {
      kv = await new Kvm(this.#nc).create(this.bucket, { history: 1 });
      this.#bound = kv;
    } catch (e) {
      throw new CommandError("COMMAND_FAILED", `could not open the workspace rules bucket ${this.bucket}: nothing was persisted`, { cause: e });
    }
    const approvedAt = new Date().toISOString();
    const added: string[] = [];
    try {
      for (const c of candidates) {
        const id = ruleId(c.kind, c.match);
        const had = await kv.get(id);
        const value = { kind: c.kind, match: c.match, description: c.description, approved_at: approvedAt, session_id: from.sessionId, loop_id: from.loopId, gate_id: from.gateId };
        await kv.put(id, JSON.stringify(value));
        if (had?.operation !== "PUT") added.push(id);
      }
    } catch (e) {
      // Best effort: a rule this batch added is taken back; one that stays is still a rule the user chose "always" for.
      await Promise.allSettled(added.map((id) => kv.purge(id)));
      throw new CommandError("COMMAND_FAILED", `could not persist the workspace rules: the answer was not taken`, { cause: e });
    }
  }

  /** Every stored rule, oldest key order, at most MAX_RULES_LISTED; `more` when the bucket holds more. */
  async list(): Promise<{ rules: WorkspaceRule[]; more: boolean }> {
    const kv = await this.#kv();
    const keys: string[] = [];
    let more = false;
    try {
      for await (const k of await kv.keys()) {
        if (keys.length === MAX_RULES_LISTED) {
          more = true;
          break;
        }
        keys.push(k);
      }
    } catch (e) {
      if (bucketMissing(e)) return { rules: [], more: false };
      throw e;
    }
    const rules: WorkspaceRule[] = [];
    for (const k of keys.sort()) {
      const entry = await kv.get(k);
      const rule = entry?.operation === "PUT" ? parseRule(k, entry.value) : undefined;
      if (rule) rules.push(rule);
    }
    return { rules, more };
  }

  /** Removes a rule by its id; false when there was none. A later request it covered is asked again. */
  async remove(id: string): Promise<boolean> {
    if (!RULE_ID.test(id)) throw new CommandError("COMMAND_INVALID", `${JSON.stringify(id)} is not a rule id (64 hex digits, from jetloop rules list)`);
    const kv = await this.#kv();
    let had;
    try {
      had = await kv.get(id);
    } catch (e) {
      if (bucketMissing(e)) return false;
      throw e;
    }
    if (had?.operation !== "PUT") return false;
    await kv.purge(id);
    return true;
  }
}

/** A stored value as a rule, or undefined when it is not one written under its own key. */
function parseRule(key: string, value: Uint8Array): WorkspaceRule | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(value));
  } catch {
    return undefined;
  }
  const r = storedRule.safeParse(raw);
  if (!r.success || ruleId(r.data.kind, r.data.match) !== key) return undefined;
  const d = r.data;
  return { id: key, kind: d.kind, match: d.match, description: d.description, approvedAt: d.approved_at, sessionId: d.session_id, loopId: d.loop_id, gateId: d.gate_id };
}
