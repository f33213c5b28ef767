/** LangGraph graphs on the gateway: a thread resumed from either language, long-term memory. */

import { AIMessage } from "@langchain/core/messages";
import { Annotation, messagesStateReducer, START, StateGraph } from "@langchain/langgraph";
import type { BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";

import { createCheckpointer, GatewayStore, NotImplementedError } from "../src/langgraph.js";
import { keyOf, pythonSide } from "./gateway.js";
import { gatewayUrls, storeOf, unique } from "./helpers.js";

const Notes = Annotation.Root({
  notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
});

/** The graph `python_side.py` builds too. */
function notesGraph(url: string) {
  return new StateGraph(Notes)
    .addNode("take_note", (state) => {
      const note = `ts note ${state.notes.length + 1}`;
      return { notes: [note], messages: [new AIMessage(note)] };
    })
    .addEdge(START, "take_note")
    .compile({ checkpointer: createCheckpointer(undefined, { store: storeOf(url) }) });
}

function said(messages: BaseMessage[]): [string, unknown][] {
  return messages.map((m) => [m.constructor.name, m.content]);
}

describe.each(gatewayUrls())("LangGraph on %s", (_backend, url) => {
  it("resumes a thread from TypeScript, then Python, then TypeScript", async () => {
    const thread = { configurable: { thread_id: unique("thread") } };
    const graph = notesGraph(url);
    expect((await graph.invoke({ notes: [] }, thread)).notes).toEqual(["ts note 1"]);
    const fromPython = pythonSide("graph", url, keyOf("team"), thread.configurable.thread_id);
    expect(fromPython).toEqual({
      notes: ["ts note 1", "py note 2"],
      messages: [["AIMessage", "ts note 1"], ["AIMessage", "py note 2"]],
    });
    const resumed = await notesGraph(url).invoke({ notes: [] }, thread);
    expect(resumed.notes).toEqual(["ts note 1", "py note 2", "ts note 3"]);
    expect(said(resumed.messages)).toEqual([
      ["AIMessage", "ts note 1"],
      ["AIMessage", "py note 2"],
      ["AIMessage", "ts note 3"],
    ]);
    const history = [];
    for await (const state of graph.getStateHistory(thread)) history.push(state);
    expect(history.length).toBeGreaterThanOrEqual(6);
  });

  it("deletes, copies and prunes threads", async () => {
    const checkpointer = createCheckpointer(undefined, { store: storeOf(url), namespace: unique("ns") });
    const graph = new StateGraph(Notes)
      .addNode("take_note", (state) => ({ notes: [`n${state.notes.length + 1}`] }))
      .addEdge(START, "take_note")
      .compile({ checkpointer });
    const [a, b] = [unique("a"), unique("b")];
    await graph.invoke({ notes: [] }, { configurable: { thread_id: a } });
    await graph.invoke({ notes: [] }, { configurable: { thread_id: a } });
    await checkpointer.copyThread(a, b);
    expect((await graph.getState({ configurable: { thread_id: b } })).values.notes).toEqual(["n1", "n2"]);
    await checkpointer.prune([b]);
    const kept = [];
    for await (const t of checkpointer.list({ configurable: { thread_id: b } })) kept.push(t);
    expect(kept.length).toBe(1);
    await checkpointer.deleteThread(a);
    expect(await checkpointer.getTuple({ configurable: { thread_id: a } })).toBeUndefined();
    expect(await checkpointer.getTuple({ configurable: { thread_id: b } })).toBeDefined();
    const run = { configurable: { thread_id: a, checkpoint_ns: "" }, metadata: { run_id: "run-1" } };
    const checkpoint = { v: 4, id: "1f000000-0000-6000-8000-000000000001", ts: new Date().toISOString(),
      channel_values: { notes: ["x"] }, channel_versions: { notes: 1 }, versions_seen: {} };  // prettier-ignore
    await checkpointer.put(run, checkpoint, { source: "input", step: -1, parents: {} }, {});
    expect(await checkpointer.getTuple({ configurable: { thread_id: a } })).toBeDefined();
    await checkpointer.deleteForRuns(["run-1"]);
    expect(await checkpointer.getTuple({ configurable: { thread_id: a } })).toBeUndefined();
    expect(await checkpointer.getTuple({ configurable: { thread_id: b } })).toBeDefined();
  });

  it("keeps long-term memory, shared with Python", async () => {
    const namespace = unique("ns");
    const memory = new GatewayStore({ store: storeOf(url) });
    await memory.put(["users", namespace], "ts", { language: "en", n: 1 });
    await memory.put(["users", namespace, "deep"], "x", { language: "fr", n: 2 });
    const item = await memory.get(["users", namespace], "ts");
    expect(item?.value).toEqual({ language: "en", n: 1 });
    expect(item?.createdAt).toBeInstanceOf(Date);
    const found = await memory.search(["users", namespace], { filter: { language: "fr" } });
    expect(found.map((i) => i.key)).toEqual(["x"]);
    expect((await memory.search(["users", namespace], { limit: 1, offset: 1 })).length).toBe(1);
    const spaces = await memory.listNamespaces({ prefix: ["users", namespace] });
    expect(spaces.sort()).toEqual([["users", namespace], ["users", namespace, "deep"]]);
    const fromPython = pythonSide("memory", url, keyOf("team"), JSON.stringify(["users", namespace]), '{"language": "de"}');
    expect(fromPython).toEqual({ ts: { language: "en", n: 1 }, x: { language: "fr", n: 2 }, py: { language: "de" } });
    expect((await memory.get(["users", namespace], "py"))?.value).toEqual({ language: "de" });
    await memory.delete(["users", namespace], "ts");
    expect(await memory.get(["users", namespace], "ts")).toBeNull();
    const other = new GatewayStore({ store: storeOf(url), namespace: unique("other") });
    expect(await other.get(["users", namespace], "py")).toBeNull();
  });

  it("refuses a search by query, as the Python store does", async () => {
    const memory = new GatewayStore({ store: storeOf(url) });
    const error = await memory.search(["users"], { query: "who speaks French?" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotImplementedError);
    expect((error as Error).message).toMatch(/no vector index/);
  });
});
