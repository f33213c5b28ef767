/**
 * The agent Store through a gateway's `/v1/store/` HTTP API.
 *
 * Reads and idempotent writes (appends of messages that all carry ids, updates, deletes,
 * clears, state, bindings, the adapters' calls but `claude.append`) are retried with backoff
 * on network errors, 429, 502, 503 and 504; a write that is not idempotent (a create, an
 * append without ids, a pop) is sent once.
 */

import { errorOf, StoreError, transportError } from "./errors.js";
import type {
  Conversation,
  CreateConversation,
  ListConversations,
  ListMessages,
  Message,
  MessageUpdate,
  NewMessage,
  Page,
} from "./types.js";

export const RETRIES = 3;
const RETRIED_STATUS = new Set([429, 502, 503, 504]);
/** The adapters' operations safe to send again (`session/agent_store/calls.py`): all but
 * `claude.append`, whose entries need not have a `uuid`. */
const RETRIED_CALLS = new Set([
  "claude.load",
  "claude.list_sessions",
  "claude.summary",
  "claude.put_summary",
  "claude.list_summaries",
  "claude.delete",
  "claude.list_subkeys",
  "langgraph.put",
  "langgraph.put_writes",
  "langgraph.get",
  "langgraph.list",
  "langgraph.delete_thread",
  "langgraph.delete_for_runs",
  "langgraph.copy_thread",
  "langgraph.prune",
  "langgraph.store",
]);

export interface StoreOptions {
  /** The gateway's root, e.g. `http://127.0.0.1:8080`; default `GATEWAY_URL`. */
  baseUrl?: string;
  /** The gateway's API key, sent as a bearer token; default `GATEWAY_API_KEY` (none if unset). */
  apiKey?: string | null;
  /** Per request, default 30 s. */
  timeoutMs?: number;
  /** The wait before the first retry, doubled for each next one; default 200 ms. */
  backoffMs?: number;
  fetch?: typeof fetch;
}

function segment(value: string): string {
  return encodeURIComponent(value);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface Sent {
  method: string;
  path: string;
  retry: boolean;
  body?: unknown;
  query?: Record<string, string | number | null | undefined>;
}

/** Per-conversation JSON values, by key. */
export interface StateAccess {
  get(conversationId: string, key: string): Promise<unknown>;
  set(conversationId: string, key: string, value: unknown): Promise<void>;
  delete(conversationId: string, key: string): Promise<void>;
}

/** The Store of the project the API key belongs to (`default` on a gateway without keys). */
export class Store {
  readonly baseUrl: string;
  readonly state: StateAccess;
  private readonly root: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly backoffMs: number;
  private readonly fetcher: typeof fetch;

  constructor(options: StoreOptions = {}) {
    const baseUrl = options.baseUrl ?? process.env.GATEWAY_URL;
    if (!baseUrl) {
      throw new StoreError("BadRequest", "Give baseUrl or set GATEWAY_URL.", {
        param: "baseUrl",
      });
    }
    const apiKey = options.apiKey === undefined ? process.env.GATEWAY_API_KEY : options.apiKey;
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.root = `${this.baseUrl}/v1/store`;
    this.headers = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.backoffMs = options.backoffMs ?? 200;
    this.fetcher = options.fetch ?? fetch;
    this.state = {
      get: (conversationId, key) => this.stateGet(conversationId, key),
      set: (conversationId, key, value) => this.stateSet(conversationId, key, value),
      delete: (conversationId, key) => this.stateDelete(conversationId, key),
    };
  }

  private async send<T>(request: Sent): Promise<T> {
    const url = new URL(this.root + request.path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== null && value !== undefined) url.searchParams.set(name, String(value));
    }
    const init: RequestInit = { method: request.method, headers: { ...this.headers } };
    if (request.body !== undefined) {
      init.body = JSON.stringify(request.body);
      (init.headers as Record<string, string>)["content-type"] = "application/json";
    }
    const attempts = request.retry ? RETRIES : 1;
    let failure: StoreError = new StoreError("UnknownError", "no attempt was made");
    for (let attempt = 0; attempt < attempts; attempt++) {
      let response: Response | undefined;
      try {
        response = await this.fetcher(url, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (error) {
        failure = transportError(error);
      }
      if (response !== undefined) {
        if (response.status < 400) {
          if (response.status === 204) return undefined as T;
          return (await response.json()) as T;
        }
        failure = await errorOf(response);
        if (!RETRIED_STATUS.has(response.status)) throw failure;
      }
      if (attempt + 1 < attempts) await sleep(this.backoffMs * 2 ** attempt);
    }
    throw failure;
  }

  private async orNull<T>(request: Sent): Promise<T | null> {
    try {
      return await this.send<T>(request);
    } catch (error) {
      if (error instanceof StoreError && error.code === "NotFound") return null;
      throw error;
    }
  }

  // -- conversations -------------------------------------------------------------------

  /** A new conversation (a `conv_…` id is made if none is given); Conflict if the id is taken. */
  createConversation(args: CreateConversation = {}): Promise<Conversation> {
    const body = { conversationId: args.conversationId ?? null, metadata: args.metadata ?? null };
    return this.send({ method: "POST", path: "/conversations", retry: false, body });
  }

  /** The conversation, or `null` if there is none. */
  getConversation(conversationId: string): Promise<Conversation | null> {
    const path = `/conversations/${segment(conversationId)}`;
    return this.orNull({ method: "GET", path, retry: true });
  }

  /** Most recently updated first; `cursor` is the `nextCursor` of the page before. */
  listConversations(args: ListConversations = {}): Promise<Page<Conversation>> {
    const query = { limit: args.limit, cursor: args.cursor };
    return this.send({ method: "GET", path: "/conversations", retry: true, query });
  }

  /** Merge `metadata`'s top-level keys (a `null` one is removed); NotFound if there is none. */
  updateConversation(
    conversationId: string,
    args: { metadata: Record<string, unknown> },
  ): Promise<Conversation> {
    const path = `/conversations/${segment(conversationId)}`;
    return this.send({ method: "PATCH", path, retry: true, body: { metadata: args.metadata } });
  }

  /** Delete it with its messages and state (absent is success). */
  async deleteConversation(conversationId: string): Promise<void> {
    const path = `/conversations/${segment(conversationId)}`;
    await this.send({ method: "DELETE", path, retry: true });
  }

  // -- messages ------------------------------------------------------------------------

  /** Append 1 to 100 messages (the conversation is created if need be), each with its `seq`. */
  async appendMessages(conversationId: string, messages: NewMessage[]): Promise<Message[]> {
    const body = {
      messages: messages.map((m) => ({
        payload: m.payload,
        role: m.role ?? null,
        type: m.type ?? null,
        metadata: m.metadata ?? null,
        messageId: m.messageId ?? null,
      })),
    };
    const retry = messages.every((m) => typeof m.messageId === "string" && m.messageId !== "");
    const path = `/conversations/${segment(conversationId)}/messages`;
    const data = await this.send<{ items: Message[] }>({ method: "POST", path, retry, body });
    return data.items;
  }

  /** Append one message. */
  async appendMessage(conversationId: string, message: NewMessage): Promise<Message> {
    const [appended] = await this.appendMessages(conversationId, [message]);
    return appended as Message;
  }

  /** The message, or `null` if there is none. */
  getMessage(messageId: string): Promise<Message | null> {
    return this.orNull({ method: "GET", path: `/messages/${segment(messageId)}`, retry: true });
  }

  /** Oldest first (`order: "desc"` newest first); pages pinned to the first page's read. */
  listMessages(conversationId: string, args: ListMessages = {}): Promise<Page<Message>> {
    const path = `/conversations/${segment(conversationId)}/messages`;
    const query = { order: args.order, limit: args.limit, cursor: args.cursor };
    return this.send({ method: "GET", path, retry: true, query });
  }

  /** Replace the given fields (`role`, `type`, `payload`, `metadata`) whole. */
  updateMessage(messageId: string, fields: MessageUpdate): Promise<Message> {
    const path = `/messages/${segment(messageId)}`;
    return this.send({ method: "PATCH", path, retry: true, body: fields });
  }

  /** Delete a message (absent is success). */
  async deleteMessage(messageId: string): Promise<void> {
    await this.send({ method: "DELETE", path: `/messages/${segment(messageId)}`, retry: true });
  }

  /** Remove and return the latest message, atomically; `null` if there is none. Sent once. */
  async popMessage(conversationId: string): Promise<Message | null> {
    const path = `/conversations/${segment(conversationId)}/pop`;
    const data = await this.send<{ message: Message | null }>({ method: "POST", path, retry: false });
    return data.message;
  }

  /** Delete every message; the conversation, its metadata and state stay, `seq`s are not reused. */
  async clearMessages(conversationId: string): Promise<void> {
    const path = `/conversations/${segment(conversationId)}/clear`;
    await this.send({ method: "POST", path, retry: true });
  }

  // -- state and bindings --------------------------------------------------------------

  private statePath(conversationId: string, key: string): string {
    return `/conversations/${segment(conversationId)}/state/${segment(key)}`;
  }

  /** The value kept under `key`, `null` if none. */
  async stateGet(conversationId: string, key: string): Promise<unknown> {
    const path = this.statePath(conversationId, key);
    const data = await this.send<{ value: unknown }>({ method: "GET", path, retry: true });
    return data.value;
  }

  async stateSet(conversationId: string, key: string, value: unknown): Promise<void> {
    const path = this.statePath(conversationId, key);
    await this.send({ method: "PUT", path, retry: true, body: { value } });
  }

  async stateDelete(conversationId: string, key: string): Promise<void> {
    await this.send({ method: "DELETE", path: this.statePath(conversationId, key), retry: true });
  }

  /** A stable UUID session id for the conversation (a UUID is its own). */
  async claudeSessionBinding(conversationId: string): Promise<string> {
    const body = { conversationId };
    const data = await this.send<{ sessionId: string }>({
      method: "POST",
      path: "/claude-bindings",
      retry: true,
      body,
    });
    return data.sessionId;
  }

  /** Run a framework adapter's named operation (`claude.*`, `langgraph.*`). */
  async call<T = unknown>(name: string, args: Record<string, unknown>): Promise<T> {
    const path = `/calls/${segment(name)}`;
    const retry = RETRIED_CALLS.has(name);
    const data = await this.send<{ result: T }>({ method: "POST", path, retry, body: args });
    return data.result;
  }
}

/** A {@link Store} from options, else `GATEWAY_URL` and `GATEWAY_API_KEY`. */
export function createStore(options: StoreOptions = {}): Store {
  return new Store(options);
}

/** Every message of a conversation, following the cursors. */
export async function allMessages(
  store: Store,
  conversationId: string,
  order: "asc" | "desc" = "asc",
): Promise<Message[]> {
  const messages: Message[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<Message> = await store.listMessages(conversationId, {
      order,
      limit: 1000,
      cursor,
    });
    messages.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return messages;
}
