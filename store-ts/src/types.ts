/** The Store's records, as its HTTP API answers them (camelCase JSON). */

/** Any JSON value. */
export type JSONValue =
  | string
  | number
  | boolean
  | null
  | JSONValue[]
  | { [key: string]: JSONValue };

export interface Conversation {
  conversationId: string;
  metadata: Record<string, unknown>;
  /** ISO 8601, in whole milliseconds, UTC. */
  createdAt: string;
  updatedAt: string;
  messageCount: number;
  lastMessageAt: string | null;
}

export interface Message {
  messageId: string;
  conversationId: string;
  /** A decimal string, per conversation, never reused. */
  seq: string;
  role: string | null;
  type: string | null;
  payload: unknown;
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

/** A message to append: `payload` is any JSON; a `messageId` makes the append idempotent. */
export interface NewMessage {
  payload: unknown;
  role?: string | null;
  type?: string | null;
  metadata?: Record<string, unknown> | null;
  messageId?: string | null;
}

/** One page of a listing; `nextCursor` is `null` on the last one. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface CreateConversation {
  conversationId?: string | null;
  metadata?: Record<string, unknown> | null;
}

export interface ListConversations {
  /** 1 to 100, default 20. */
  limit?: number;
  cursor?: string | null;
}

export interface ListMessages {
  order?: "asc" | "desc";
  /** 1 to 1000, default 50. */
  limit?: number;
  cursor?: string | null;
}

/** The fields of a message to replace whole. */
export interface MessageUpdate {
  role?: string | null;
  type?: string | null;
  payload?: unknown;
  metadata?: Record<string, unknown>;
}
