/**
 * The gateway's agent Store from TypeScript: conversations, messages, state and session
 * bindings over `/v1/store/`, the same methods, records and errors as the Python client.
 * The framework adapters are the subpaths `/openai`, `/langgraph` and `/claude`.
 */

export { allMessages, createStore, RETRIES, Store } from "./client.js";
export type { StateAccess, StoreOptions } from "./client.js";
export { ContextStore, createContextStore } from "./context.js";
export type { ContextStoreOptions } from "./context.js";
export { toAnthropicMessages, toOpenAIInput } from "./converters.js";
export { STATUS, StoreError } from "./errors.js";
export type { StoreErrorJSON } from "./errors.js";
export type * from "./types.js";
