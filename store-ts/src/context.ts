/**
 * The helpers an agent's code reaches as `context.store`: its framework's storage and its
 * conversation's messages, state and Claude session binding, on one gateway.
 *
 * The adapters come from the subpath modules, loaded when first asked for, so only the
 * framework an agent uses needs to be installed.
 */

import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";

import type { ClaudeSessionStore } from "./claude.js";
import { allMessages, Store, type StateAccess, type StoreOptions } from "./client.js";
import { toAnthropicMessages, toOpenAIInput } from "./converters.js";
import type { GatewayCheckpointer, GatewayStore } from "./langgraph.js";
import type { StoreSession } from "./openai.js";
import type { Message } from "./types.js";

export interface ContextStoreOptions extends StoreOptions {
  /** Partitions what the framework adapters keep (as the Python adapters' `namespace`). */
  namespace?: string;
  store?: Store;
}

export class ContextStore {
  readonly store: Store;
  readonly state: StateAccess;
  readonly namespace: string;
  readonly toOpenAIInput = toOpenAIInput;
  readonly toAnthropicMessages = toAnthropicMessages;

  constructor(options: ContextStoreOptions = {}) {
    this.store = options.store ?? new Store(options);
    this.state = this.store.state;
    this.namespace = options.namespace ?? "";
  }

  /** The Claude Agent SDK's `SessionStore` on this gateway. */
  async claudeSessionStore(): Promise<ClaudeSessionStore> {
    const { ClaudeSessionStore } = await import("./claude.js");
    return new ClaudeSessionStore({ store: this.store, namespace: this.namespace });
  }

  /** The Claude session id (a UUID) bound to a business id: the same from every language. */
  claudeSessionBinding(conversationId: string): Promise<string> {
    return this.store.claudeSessionBinding(conversationId);
  }

  /** The Agents SDK `Session` of conversation `id`. */
  async openaiSession(id: string): Promise<StoreSession> {
    const { StoreSession } = await import("./openai.js");
    return new StoreSession(id, { store: this.store, namespace: this.namespace });
  }

  /** A LangGraph checkpointer on this gateway. */
  async langgraphCheckpointer(serde?: SerializerProtocol): Promise<GatewayCheckpointer> {
    const { GatewayCheckpointer } = await import("./langgraph.js");
    return new GatewayCheckpointer({ store: this.store, namespace: this.namespace }, serde);
  }

  /** A LangGraph `BaseStore` (long-term memory) on this gateway. */
  async langgraphStore(): Promise<GatewayStore> {
    const { GatewayStore } = await import("./langgraph.js");
    return new GatewayStore({ store: this.store, namespace: this.namespace });
  }

  /** Every message of a conversation, oldest first (`"desc"`: newest first). */
  getMessages(conversationId: string, order: "asc" | "desc" = "asc"): Promise<Message[]> {
    return allMessages(this.store, conversationId, order);
  }
}

/** `context.store`: from options, else `GATEWAY_URL` and `GATEWAY_API_KEY`. */
export function createContextStore(options: ContextStoreOptions = {}): ContextStore {
  return new ContextStore(options);
}
