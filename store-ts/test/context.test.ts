/** `context.store` and the cross-language round trip of a conversation, with its converters. */

import { describe, expect, it } from "vitest";

import { createContextStore } from "../src/index.js";
import { keyOf, pythonSide } from "./gateway.js";
import { gatewayUrls, storeOf, unique } from "./helpers.js";

const PAYLOADS = [
  { role: "system", content: "Be brief." },
  { role: "developer", content: [{ type: "input_text", text: "Say é." }] },
  "plain text",
  [{ type: "input_text", text: "look: " }, { type: "input_image", image_url: "https://x/y.png" }],
  { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"a": 1}' } }] },
  { type: "function_call", call_id: "c2", name: "g", arguments: "not json" },
  { type: "function_call_output", call_id: "c2", output: { ok: true, "ü": [1, 2.5] } },
  { type: "reasoning", summary: [] },
  { role: "user", content: [{ type: "output_text", text: "a" }, "b"] },
];

describe.each(gatewayUrls())("context.store on %s", (_backend, url) => {
  it("reads from Python what TypeScript wrote, and back, converting alike", async () => {
    const context = createContextStore({ store: storeOf(url) });
    const id = unique("cross");
    await context.store.appendMessages(
      id,
      PAYLOADS.map((payload, n) => ({
        payload,
        role: n === 2 ? "assistant" : null,
        messageId: `${id}-ts-${n}`,
        metadata: { n },
      })),
    );
    await context.state.set(id, "shared", { from: "ts", steps: [1, 2] });
    const binding = await context.claudeSessionBinding(id);
    pythonSide("append", url, keyOf("team"), id, JSON.stringify(["from python", { content: "too" }]));
    const python = pythonSide("messages", url, keyOf("team"), id);
    const messages = await context.getMessages(id);
    expect(messages.length).toBe(PAYLOADS.length + 2);
    expect(messages).toEqual(python.items);
    expect(messages.slice(-2).map((m) => [m.payload, m.role, m.messageId])).toEqual([
      ["from python", "user", `${id}-py-0`],
      [{ content: "too" }, "user", `${id}-py-1`],
    ]);
    expect(context.toOpenAIInput(messages)).toEqual(python.openai);
    expect(context.toAnthropicMessages(messages)).toEqual(python.anthropic);
    expect(python.state).toEqual({ from: "ts", steps: [1, 2] });
    expect(python.binding).toBe(binding);
    const newestFirst = await context.getMessages(id, "desc");
    expect(newestFirst.map((m) => m.seq)).toEqual(messages.map((m) => m.seq).reverse());
  });

  it("hands out each framework's storage and the conversation's state", async () => {
    const context = createContextStore({ store: storeOf(url), namespace: unique("ctx") });
    const id = unique("c");
    expect(await context.state.get(id, "k")).toBeNull();
    await context.state.set(id, "k", [1]);
    expect(await context.state.get(id, "k")).toEqual([1]);
    await context.state.delete(id, "k");
    expect(await context.state.get(id, "k")).toBeNull();
    const session = await context.openaiSession(id);
    await session.addItems([{ role: "user", content: "hi" }]);
    expect(session.conversationId).toBe(`${context.namespace}/${id}`);
    expect((await context.getMessages(session.conversationId)).map((m) => m.payload)).toEqual([
      { role: "user", content: "hi" },
    ]);
    const claude = await context.claudeSessionStore();
    const key = { projectKey: "p", sessionId: await context.claudeSessionBinding(id) };
    await claude.append(key, [{ type: "user", uuid: "u" }]);
    expect(await claude.load(key)).toEqual([{ type: "user", uuid: "u" }]);
    const checkpointer = await context.langgraphCheckpointer();
    expect(await checkpointer.getTuple({ configurable: { thread_id: id } })).toBeUndefined();
    const memory = await context.langgraphStore();
    await memory.put(["a"], "k", { v: 1 });
    expect((await memory.get(["a"], "k"))?.value).toEqual({ v: 1 });
    const elsewhere = await createContextStore({ store: storeOf(url) }).langgraphStore();
    expect(await elsewhere.get(["a"], "k")).toBeNull();
  });
});
