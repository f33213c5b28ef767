/** LangGraph long-term memory (`BaseStore`) on the gateway's Store, as the Python `GatewayStore`. */

import {
  BaseStore,
  type Item,
  type Operation,
  type OperationResults,
  type SearchItem,
} from "@langchain/langgraph-checkpoint";

import { Store, type StoreOptions } from "./client.js";

export interface MemoryStoreOptions extends StoreOptions {
  /** Partitions everything this store keeps. */
  namespace?: string;
  store?: Store;
}

/** What the store cannot do: a search by `query` (it has no vector index). */
export class NotImplementedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NotImplementedError";
  }
}

interface WireItem {
  namespace: string[];
  key: string;
  value: Record<string, any>;
  created_at: number;
  updated_at: number;
}

function plain(value: unknown): unknown {
  return value === undefined || value === null ? null : JSON.parse(JSON.stringify(value));
}

function encode(op: Operation): Record<string, unknown> {
  if ("namespacePrefix" in op) {
    if (op.query) {
      throw new NotImplementedError(
        "GatewayStore has no vector index: search by namespace prefix and filter, " +
          "without a query string.",
      );
    }
    return {
      op: "search",
      namespace_prefix: op.namespacePrefix,
      filter: op.filter ? plain(op.filter) : null,
      limit: op.limit ?? 10,
      offset: op.offset ?? 0,
    };
  }
  if ("value" in op) {
    return { op: "put", namespace: op.namespace, key: op.key, value: plain(op.value) };
  }
  if ("key" in op) return { op: "get", namespace: op.namespace, key: op.key };
  if ("limit" in op || "matchConditions" in op) {
    return {
      op: "list_namespaces",
      match_conditions: (op.matchConditions ?? []).map((c) => ({
        match_type: c.matchType,
        path: c.path,
      })),
      max_depth: op.maxDepth ?? null,
      limit: op.limit ?? 100,
      offset: op.offset ?? 0,
    };
  }
  throw new Error(`Unknown operation: ${JSON.stringify(op)}`);
}

function item(data: WireItem): Item {
  return {
    value: data.value,
    key: data.key,
    namespace: data.namespace,
    createdAt: new Date(data.created_at * 1000),
    updatedAt: new Date(data.updated_at * 1000),
  };
}

function decode(op: Operation, result: unknown): unknown {
  if ("namespacePrefix" in op) return (result as WireItem[]).map((d) => item(d) as SearchItem);
  if ("value" in op) return undefined;
  if ("key" in op) return result === null ? null : item(result as WireItem);
  return result as string[][];
}

/**
 * Namespaced JSON documents: `put`, `get`, `delete`, `search` by namespace prefix with
 * `filter`/`limit`/`offset`, `listNamespaces`. No vector index. A batch is one transaction.
 */
export class GatewayStore extends BaseStore {
  readonly store: Store;
  readonly namespace: string;

  constructor(options: MemoryStoreOptions = {}) {
    super();
    this.store = options.store ?? new Store(options);
    this.namespace = options.namespace ?? "";
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    if (operations.length === 0) return [] as OperationResults<Op>;
    const ops = operations.map(encode);
    const results = await this.store.call<unknown[]>("langgraph.store", {
      namespace: this.namespace,
      ops,
    });
    return operations.map((op, n) => decode(op, results[n])) as OperationResults<Op>;
  }
}

/** A `BaseStore` for `builder.compile({ store })`. */
export function createMemoryStore(options: MemoryStoreOptions = {}): GatewayStore {
  return new GatewayStore(options);
}
