/**
 * An OpenAI Agents SDK `Session` over the Store's messages of one conversation.
 *
 *     const session = createSession("c1", { baseUrl: "http://127.0.0.1:8080" });
 *     const result = await run(agent, "Hello", { session });
 *
 * The conversation id is the session id (`namespace/id` with a namespace), as in the Python
 * `StoreSession`, so any machine that names the session resumes it.
 */

import type { AgentInputItem, RunState, Session } from "@openai/agents";

import { Store, type StoreOptions } from "./client.js";
import type { NewMessage } from "./types.js";

const PAGE = 1000;
const MAX_BATCH = 100;
/** The state key the Python `StoreSession` keeps an interrupted run under. */
export const RUN_STATE_KEY = "openai_agents.run_state";

export interface SessionOptions extends StoreOptions {
  /** A prefix partitioning sessions: the conversation is `namespace/conversationId`. */
  namespace?: string;
  /** A Store to use rather than one made from the options. */
  store?: Store;
}

function message(item: unknown): NewMessage {
  const object = typeof item === "object" && item !== null ? (item as Record<string, unknown>) : {};
  const role = typeof object.role === "string" ? object.role : null;
  const kind = typeof object.type === "string" ? object.type : role ? "message" : null;
  return { payload: item, role, type: kind };
}

/** The Agents SDK's `Session` on the gateway's Store. */
export class StoreSession implements Session {
  readonly sessionId: string;
  readonly conversationId: string;
  readonly store: Store;

  constructor(sessionId: string, options: SessionOptions = {}) {
    this.sessionId = sessionId;
    this.conversationId = options.namespace ? `${options.namespace}/${sessionId}` : sessionId;
    this.store = options.store ?? new Store(options);
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  /** All items oldest first, or the latest `limit` of them (`0` gives none). */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit === 0) return [];
    if (limit !== undefined && limit > 0 && limit <= PAGE) {
      const page = await this.store.listMessages(this.conversationId, { order: "desc", limit });
      return page.items.reverse().map((m) => m.payload as AgentInputItem);
    }
    const items: AgentInputItem[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.store.listMessages(this.conversationId, {
        order: "asc",
        limit: PAGE,
        cursor,
      });
      items.push(...page.items.map((m) => m.payload as AgentInputItem));
      cursor = page.nextCursor;
    } while (cursor !== null);
    return limit !== undefined && limit > 0 ? items.slice(-limit) : items;
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    const batch = items.map(message);
    for (let start = 0; start < batch.length; start += MAX_BATCH) {
      await this.store.appendMessages(this.conversationId, batch.slice(start, start + MAX_BATCH));
    }
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    const popped = await this.store.popMessage(this.conversationId);
    return popped === null ? undefined : (popped.payload as AgentInputItem);
  }

  async clearSession(): Promise<void> {
    await this.store.clearMessages(this.conversationId);
  }

  /** Keep an interrupted run (pending approvals included) with this session. */
  async saveRunState(state: RunState<any, any>): Promise<void> {
    await this.store.stateSet(this.conversationId, RUN_STATE_KEY, state.toJSON());
  }

  /** The run kept by {@link saveRunState}, as the text `RunState.fromString` takes; `null` if none. */
  async loadRunState(): Promise<string | null> {
    const saved = await this.store.stateGet(this.conversationId, RUN_STATE_KEY);
    return saved === null ? null : JSON.stringify(saved);
  }

  async forgetRunState(): Promise<void> {
    await this.store.stateDelete(this.conversationId, RUN_STATE_KEY);
  }
}

/** A `Session` for conversation `conversationId`. */
export function createSession(conversationId: string, options: SessionOptions = {}): StoreSession {
  return new StoreSession(conversationId, options);
}
