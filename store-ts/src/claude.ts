/**
 * The Claude Agent SDK's `SessionStore` on the gateway's Store.
 *
 *     const sessionStore = createSessionStore({ baseUrl: "http://127.0.0.1:8080" });
 *     for await (const m of query({ prompt, options: { sessionStore } })) ...
 *
 * The same records as the Python `ClaudeSessionStore`: entries keep their append order per
 * key and are deduplicated by `uuid`; `mtime` is the store's clock in Unix ms; deleting a main
 * transcript deletes its subagents' transcripts; each main transcript keeps the SDK's folded
 * summary, so `listSessionSummaries` needs no transcript reads.
 */

import {
  foldSessionSummary,
  type SessionKey,
  type SessionStore,
  type SessionStoreEntry,
  type SessionSummaryEntry,
} from "@anthropic-ai/claude-agent-sdk";

import { Store, type StoreOptions } from "./client.js";
import { StoreError } from "./errors.js";

const MAX_ENTRIES = 1000;
const SUMMARY_ATTEMPTS = 10;

export interface SessionStoreOptions extends StoreOptions {
  /** Partitions everything this store keeps: two namespaces never see each other's. */
  namespace?: string;
  store?: Store;
}

interface WireKey {
  project_key: string;
  session_id: string;
  subpath?: string;
}

interface WireSummary {
  session_id: string;
  mtime: number;
  data: Record<string, unknown>;
}

interface Pending {
  summary: WireSummary | null;
  version: number;
  through: number;
  pending: SessionStoreEntry[];
}

/** `""` for the main transcript; a relative path of plain segments (as the Python adapter). */
function checkSubpath(subpath: string): string {
  const segments = subpath.replace(/\\/g, "/").split("/");
  const bad =
    subpath.startsWith("/") ||
    subpath.startsWith("\\") ||
    (segments[0] ?? "").includes(":") ||
    segments.includes(".") ||
    segments.includes("..") ||
    segments.includes("");
  if (bad) {
    throw new StoreError("BadRequest", `subpath '${subpath}' is not a relative path of plain segments.`);
  }
  return subpath;
}

function wireKey(key: { projectKey: string; sessionId: string; subpath?: string }): WireKey {
  const plain: WireKey = { project_key: key.projectKey, session_id: key.sessionId };
  if (key.subpath !== undefined) plain.subpath = checkSubpath(key.subpath);
  return plain;
}

function fromWire(summary: WireSummary): SessionSummaryEntry {
  return { sessionId: summary.session_id, mtime: summary.mtime, data: summary.data };
}

/** The Claude Agent SDK's `SessionStore`, with every optional method. */
export class ClaudeSessionStore implements SessionStore {
  readonly store: Store;
  readonly namespace: string;

  constructor(options: SessionStoreOptions = {}) {
    this.store = options.store ?? new Store(options);
    this.namespace = options.namespace ?? "";
  }

  private call<T>(name: string, args: Record<string, unknown>): Promise<T> {
    return this.store.call<T>(name, { namespace: this.namespace, ...args });
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const plain = wireKey(key);
    const batch = JSON.parse(JSON.stringify(entries)) as SessionStoreEntry[];
    for (let start = 0; start < batch.length; start += MAX_ENTRIES) {
      const chunk = batch.slice(start, start + MAX_ENTRIES);
      await this.call("claude.append", { key: plain, entries: chunk });
    }
    if (plain.subpath === undefined) await this.foldSummary(key, plain);
  }

  /** Fold the entries appended since the stored summary, in append order, whoever appended
   * them; a concurrent writer's fold wins and this one is redone on top. */
  private async foldSummary(key: SessionKey, plain: WireKey): Promise<void> {
    for (let attempt = 0; attempt < SUMMARY_ATTEMPTS; attempt++) {
      const current = await this.call<Pending>("claude.summary", { key: plain });
      if (current.version < 0 || current.pending.length === 0) return;
      const previous = current.summary === null ? undefined : fromWire(current.summary);
      const folded = foldSessionSummary(previous, key, current.pending);
      const value = { session_id: folded.sessionId, mtime: folded.mtime, data: folded.data };
      const stored = await this.call<boolean>("claude.put_summary", {
        key: plain,
        value,
        version: current.version,
        through: current.through,
      });
      if (stored) return;
    }
  }

  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    return this.call("claude.load", { key: wireKey(key) });
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const listed = await this.call<Array<{ session_id: string; mtime: number }>>(
      "claude.list_sessions",
      { project_key: projectKey },
    );
    return listed.map((s) => ({ sessionId: s.session_id, mtime: s.mtime }));
  }

  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    const listed = await this.call<WireSummary[]>("claude.list_summaries", {
      project_key: projectKey,
    });
    return listed.map(fromWire);
  }

  async delete(key: SessionKey): Promise<void> {
    await this.call("claude.delete", { key: wireKey(key) });
  }

  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    return this.call("claude.list_subkeys", { key: wireKey(key) });
  }
}

/** A `SessionStore` for `query({ options: { sessionStore } })`. */
export function createSessionStore(options: SessionStoreOptions = {}): ClaudeSessionStore {
  return new ClaudeSessionStore(options);
}
