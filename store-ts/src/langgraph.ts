/**
 * LangGraph on the gateway's Store: a checkpointer and a long-term memory `BaseStore`.
 *
 *     const checkpointer = createCheckpointer();  // GATEWAY_URL, GATEWAY_API_KEY
 *     const graph = builder.compile({ checkpointer, store: createStore() });
 *
 * The same records as the Python `GatewayCheckpointer` (each value as `[kind, base64]` of the
 * serializer's bytes; LangGraph Python's `"msgpack"` ones are read too) and `GatewayStore`.
 */

import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  compareWritesSortKeys,
  getCheckpointId,
  JsonPlusSerializer,
  maxChannelVersion,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";

import { Store, type StoreOptions } from "./client.js";
import { decodeMsgpack } from "./msgpack.js";

export { GatewayStore, createMemoryStore, NotImplementedError } from "./langgraph-store.js";

export interface CheckpointerOptions extends StoreOptions {
  /** Partitions everything this checkpointer keeps. */
  namespace?: string;
  store?: Store;
}

type Dumped = [string, string];

interface Row {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_id: string | null;
  checkpoint: Dumped;
  metadata: Dumped;
  writes: [string, number, string, string, Dumped][];
}

/** LangGraph JS's serializer, which also reads what LangGraph Python's writes. */
export class CrossLanguageSerializer implements SerializerProtocol {
  constructor(private readonly inner: SerializerProtocol = new JsonPlusSerializer()) {}

  dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    return this.inner.dumpsTyped(value);
  }

  async loadsTyped(type: string, data: Uint8Array | string): Promise<any> {
    if (type === "null") return undefined;
    if (type === "msgpack") {
      const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
      return this.inner.loadsTyped("json", JSON.stringify(decodeMsgpack(bytes)));
    }
    return this.inner.loadsTyped(type, data);
  }
}

function configurable(config: RunnableConfig | undefined): Record<string, any> {
  return { ...(config?.configurable ?? {}) };
}

function jsonSafe(metadata: Record<string, unknown>): Record<string, unknown> {
  const safe: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(metadata)) {
    try {
      const text = JSON.stringify(value);
      if (text !== undefined) safe[name] = JSON.parse(text);
    } catch {
      continue;
    }
  }
  return safe;
}

/** A `BaseCheckpointSaver`: checkpoints and pending writes, serialised with `serde`. */
export class GatewayCheckpointer extends BaseCheckpointSaver<number> {
  readonly store: Store;
  readonly namespace: string;

  constructor(options: CheckpointerOptions = {}, serde?: SerializerProtocol) {
    super(serde ?? new CrossLanguageSerializer());
    this.store = options.store ?? new Store(options);
    this.namespace = options.namespace ?? "";
  }

  private call<T>(name: string, args: Record<string, unknown>): Promise<T> {
    return this.store.call<T>(name, { namespace: this.namespace, ...args });
  }

  private async dump(value: unknown): Promise<Dumped> {
    const [kind, data] = await this.serde.dumpsTyped(value);
    return [kind, Buffer.from(data).toString("base64")];
  }

  private load(dumped: Dumped): Promise<any> {
    return this.serde.loadsTyped(dumped[0], new Uint8Array(Buffer.from(dumped[1], "base64")));
  }

  private async tuple(row: Row): Promise<CheckpointTuple> {
    const where = { thread_id: row.thread_id, checkpoint_ns: row.checkpoint_ns };
    const writes = [...row.writes].sort((a, b) =>
      compareWritesSortKeys(writesSortKey(a[3], a[0], a[1]), writesSortKey(b[3], b[0], b[1])),
    );
    const checkpoint: Checkpoint = await this.load(row.checkpoint);
    if (checkpoint.v < 4 && row.parent_id) await this.migratePendingSends(checkpoint, row);
    const tuple: CheckpointTuple = {
      config: { configurable: { ...where, checkpoint_id: row.checkpoint_id } },
      checkpoint,
      metadata: await this.load(row.metadata),
      pendingWrites: await Promise.all(
        writes.map(async (w) => [w[0], w[2], await this.load(w[4])] as [string, string, unknown]),
      ),
    };
    if (row.parent_id) {
      tuple.parentConfig = { configurable: { ...where, checkpoint_id: row.parent_id } };
    }
    return tuple;
  }

  /** A checkpoint of format 3 or older: its parent's pending sends become its `TASKS` channel,
   * as LangGraph's own savers read them. */
  private async migratePendingSends(checkpoint: Checkpoint, row: Row): Promise<void> {
    const parent = await this.call<Row | null>("langgraph.get", {
      thread_id: row.thread_id,
      checkpoint_ns: row.checkpoint_ns,
      checkpoint_id: row.parent_id,
    });
    const sends = (parent?.writes ?? []).filter((w) => w[2] === TASKS);
    const values = checkpoint.channel_values as Record<string, unknown>;
    values[TASKS] = await Promise.all(sends.map((w) => this.load(w[4])));
    const versions = checkpoint.channel_versions as Record<string, number | string>;
    versions[TASKS] = Object.keys(versions).length
      ? maxChannelVersion(...Object.values(versions))
      : this.getNextVersion(undefined);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const conf = configurable(config);
    if (conf.thread_id === undefined) return undefined;
    const row = await this.call<Row | null>("langgraph.get", {
      thread_id: conf.thread_id,
      checkpoint_ns: conf.checkpoint_ns ?? "",
      checkpoint_id: getCheckpointId(config) || null,
    });
    return row === null ? undefined : this.tuple(row);
  }

  async *list(
    config: RunnableConfig,
    options: CheckpointListOptions = {},
  ): AsyncGenerator<CheckpointTuple> {
    const conf = configurable(config);
    const rows = await this.call<Row[]>("langgraph.list", {
      thread_id: conf.thread_id ?? null,
      checkpoint_ns: conf.checkpoint_ns ?? null,
      checkpoint_id: conf.checkpoint_id ?? null,
      before: options.before ? getCheckpointId(options.before) || null : null,
      filter: options.filter ? jsonSafe(options.filter) : null,
      limit: options.limit ?? null,
    });
    for (const row of rows) yield await this.tuple(row);
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    _newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const conf = configurable(config);
    const where = {
      thread_id: conf.thread_id,
      checkpoint_ns: conf.checkpoint_ns ?? "",
      checkpoint_id: checkpoint.id,
    };
    const full = metadata as Record<string, unknown>;
    const runId = full.run_id ?? (config.metadata as Record<string, unknown> | undefined)?.run_id;
    await this.call("langgraph.put", {
      checkpoint: {
        ...where,
        parent_id: conf.checkpoint_id ?? null,
        run_id: typeof runId === "string" ? runId : null,
        checkpoint: await this.dump(checkpoint),
        metadata: await this.dump(metadata),
        filter: jsonSafe(full),
      },
    });
    return { configurable: where };
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath = "",
  ): Promise<void> {
    const conf = configurable(config);
    const indexed = await Promise.all(
      writes.map(async ([channel, value], idx) => [
        (WRITES_IDX_MAP as Record<string, number>)[channel] ?? idx,
        channel,
        await this.dump(value),
      ]),
    );
    await this.call("langgraph.put_writes", {
      thread_id: conf.thread_id,
      checkpoint_ns: conf.checkpoint_ns ?? "",
      checkpoint_id: conf.checkpoint_id,
      task_id: taskId,
      task_path: taskPath,
      writes: indexed,
    });
  }

  /** Delete a thread's checkpoints and writes. */
  async deleteThread(threadId: string): Promise<void> {
    await this.call("langgraph.delete_thread", { thread_id: threadId });
  }

  /** Delete the checkpoints (and their writes) of these runs. */
  async deleteForRuns(runIds: string[]): Promise<void> {
    await this.call("langgraph.delete_for_runs", { run_ids: runIds });
  }

  /** Copy a thread's checkpoints and writes to another thread id. */
  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    await this.call("langgraph.copy_thread", { source: sourceThreadId, target: targetThreadId });
  }

  /** Keep only each thread's latest checkpoint (`keep_latest`), or none (`delete`). */
  async prune(threadIds: string[], strategy: "keep_latest" | "delete" = "keep_latest"): Promise<void> {
    await this.call("langgraph.prune", { thread_ids: threadIds, strategy });
  }
}

/** A checkpointer for `builder.compile({ checkpointer })`; `serde` defaults to LangGraph's. */
export function createCheckpointer(
  serde?: SerializerProtocol,
  options: CheckpointerOptions = {},
): GatewayCheckpointer {
  return new GatewayCheckpointer(options, serde);
}
