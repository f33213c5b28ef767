/** The Store API reference's behaviours, as the Python contract suite checks them. */

import { describe, expect, it } from "vitest";

import { Store, StoreError } from "../src/index.js";
import { gatewayUrls, storeOf, unique } from "./helpers.js";

async function refusal(promise: Promise<unknown>): Promise<StoreError> {
  const error = await promise.then(
    () => new Error("no error"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe.each(gatewayUrls())("the Store on %s", (_backend, url) => {
  const store = storeOf(url);

  it("creates conversations once and merges their metadata", async () => {
    const id = unique("c");
    const created = await store.createConversation({ conversationId: id, metadata: { a: 1, b: { x: 1 } } });
    expect(created).toMatchObject({ conversationId: id, messageCount: 0, lastMessageAt: null });
    expect(created.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const taken = await refusal(store.createConversation({ conversationId: id }));
    expect([taken.code, taken.status]).toEqual(["Conflict", 409]);
    const generated = await store.createConversation();
    expect(generated.conversationId).toMatch(/^conv_/);
    expect(generated.metadata).toEqual({});
    const unchanged = await store.updateConversation(id, { metadata: {} });
    expect(unchanged.updatedAt).toBe(created.updatedAt);
    const merged = await store.updateConversation(id, { metadata: { a: null, b: { y: 2 }, c: [1] } });
    expect(merged.metadata).toEqual({ b: { y: 2 }, c: [1] });
    const missing = await refusal(store.updateConversation(unique("nope"), { metadata: {} }));
    expect(missing.code).toBe("NotFound");
    expect(missing.message).toMatch(/not found/);
    expect(await store.getConversation(unique("nope"))).toBeNull();
    const long = await refusal(store.createConversation({ conversationId: "é".repeat(129) }));
    expect(long.code).toBe("BadRequest");
    expect(long.toJSON()).toMatchObject({ code: "BadRequest", status: 400 });
  });

  it("lists conversations newest first by cursor", async () => {
    const mine = storeOf(url, "lists");
    for (const c of (await mine.listConversations({ limit: 100 })).items) {
      await mine.deleteConversation(c.conversationId);
    }
    for (let n = 0; n < 5; n++) {
      await mine.createConversation({ conversationId: `c${n}` });
      await new Promise((r) => setTimeout(r, 3));
    }
    const first = await mine.listConversations({ limit: 2 });
    expect(first.items.map((c) => c.conversationId)).toEqual(["c4", "c3"]);
    const second = await mine.listConversations({ limit: 2, cursor: first.nextCursor });
    const third = await mine.listConversations({ limit: 2, cursor: second.nextCursor });
    expect([...second.items, ...third.items].map((c) => c.conversationId)).toEqual(["c2", "c1", "c0"]);
    expect(third.nextCursor).toBeNull();
    const tooMany = await refusal(mine.listConversations({ limit: 101 }));
    expect(tooMany.code).toBe("BadRequest");
  });

  it("numbers messages, and a retried append with the same ids is stored once", async () => {
    const c1 = unique("c");
    const [m1, m2, d] = [unique("m"), unique("m"), unique("d")];
    const first = await store.appendMessage(c1, { payload: { text: "hi" }, role: "user", messageId: m1 });
    expect(first).toMatchObject({ seq: "1", type: null, role: "user", conversationId: c1 });
    expect((await store.getConversation(c1))?.messageCount).toBe(1);
    const again = await store.appendMessage(c1, { payload: { text: "hi" }, role: "user", messageId: m1 });
    expect(again).toEqual(first);
    const changed = await refusal(store.appendMessage(c1, { payload: { text: "other" }, role: "user", messageId: m1 }));
    expect(changed.code).toBe("Conflict");
    const c2 = unique("c");
    const elsewhere = await refusal(store.appendMessage(c2, { payload: { text: "hi" }, role: "user", messageId: m1 }));
    expect(elsewhere.code).toBe("Conflict");
    expect(await store.getConversation(c2)).toBeNull();
    const batch = [{ payload: "a", messageId: m2 }, { payload: "b" }];
    const mixed = await refusal(
      store.appendMessages(c1, [{ payload: { text: "hi" }, role: "user", messageId: m1 }, ...batch]),
    );
    expect(mixed.code).toBe("BadRequest");
    await refusal(store.appendMessages(c1, [{ payload: "x", messageId: d }, { payload: "y", messageId: d }]));
    const appended = await store.appendMessages(c1, batch);
    expect(appended.map((m) => m.seq)).toEqual(["2", "3"]);
    await store.deleteMessage(m2);
    await store.deleteMessage(m2);
    expect((await store.appendMessage(c1, { payload: "a", messageId: m2 })).seq).toBe("4");
  });

  it("takes batches of 1 to 100 messages", async () => {
    const c = unique("c");
    const hundred = Array.from({ length: 100 }, (_, n) => ({ payload: n }));
    expect((await store.appendMessages(c, hundred)).length).toBe(100);
    const over = await refusal(store.appendMessages(c, [...hundred, { payload: 100 }]));
    expect([over.code, over.status]).toEqual(["BadRequest", 400]);
    const none = await refusal(store.appendMessages(c, []));
    expect(none.code).toBe("BadRequest");
    expect((await store.getConversation(c))?.messageCount).toBe(100);
    const page = await refusal(store.listMessages(c, { limit: 1001 }));
    expect(page.code).toBe("BadRequest");
    expect((await store.listMessages(c, { limit: 1000 })).items.length).toBe(100);
  });

  it("refuses ids with NUL characters alike, naming them", async () => {
    for (const [attempt, param] of [
      [() => store.createConversation({ conversationId: "a\u0000b" }), "conversationId"],
      [() => store.getConversation("a\u0000b"), "conversationId"],
      [() => store.appendMessage("a\u0000b", { payload: "x" }), "conversationId"],
      [() => store.listMessages("a\u0000b"), "conversationId"],
      [() => store.deleteConversation("a\u0000b"), "conversationId"],
      [() => store.getMessage("m\u0000"), "messageId"],
      [() => store.deleteMessage("m\u0000"), "messageId"],
    ] as [() => Promise<unknown>, string][]) {
      const refused = await refusal(attempt());
      expect([refused.code, refused.param]).toEqual(["BadRequest", param]);
    }
  });

  it("checks a named call's arguments before using them", async () => {
    const refused = await refusal(store.call("claude.list_sessions", { project_key: 1 }));
    expect([refused.code, refused.param]).toEqual(["BadRequest", "project_key"]);
    const unknown = await refusal(store.call("claude.nothing", {}));
    expect([unknown.code, unknown.param]).toEqual(["BadRequest", "name"]);
    expect(await store.call("claude.list_sessions", { project_key: unique("p") })).toEqual([]);
  });

  it("clears messages, keeping the conversation, its state and its seq", async () => {
    const c = unique("c");
    await store.appendMessages(c, [0, 1, 2].map((n) => ({ payload: n })));
    await store.state.set(c, "run", { step: 2 });
    const before = await store.getConversation(c);
    await store.clearMessages(c);
    const after = await store.getConversation(c);
    expect(after?.messageCount).toBe(0);
    expect(Date.parse(after!.updatedAt)).toBeGreaterThan(Date.parse(before!.updatedAt));
    expect((await store.appendMessage(c, { payload: "next" })).seq).toBe("4");
    expect(await store.state.get(c, "run")).toEqual({ step: 2 });
    const absent = unique("absent");
    await store.clearMessages(absent);
    expect(await store.getConversation(absent)).toBeNull();
    await store.deleteConversation(c);
    expect(await store.state.get(c, "run")).toBeNull();
    await store.deleteConversation(c);
  });

  it("pins message pages to their first read", async () => {
    const c = unique("c");
    await store.appendMessages(c, [0, 1, 2, 3, 4].map((n) => ({ payload: n })));
    const first = await store.listMessages(c, { limit: 2 });
    await store.appendMessage(c, { payload: "late" });
    const second = await store.listMessages(c, { limit: 2, cursor: first.nextCursor });
    const third = await store.listMessages(c, { limit: 2, cursor: second.nextCursor });
    expect([...first.items, ...second.items, ...third.items].map((m) => m.payload)).toEqual([0, 1, 2, 3, 4]);
    expect(third.nextCursor).toBeNull();
    const newest = await store.listMessages(c, { order: "desc", limit: 3 });
    expect(newest.items.map((m) => m.payload)).toEqual(["late", 4, 3]);
    expect((await store.listMessages(unique("absent"))).items).toEqual([]);
    const wrong = await refusal(store.listMessages(c, { order: "asc", cursor: newest.nextCursor }));
    expect([wrong.code, wrong.param]).toEqual(["BadRequest", "cursor"]);
    const forged = await refusal(store.listMessages(c, { cursor: "eyJhIjoxfQ.AAAA" }));
    expect([forged.code, forged.param]).toEqual(["BadRequest", "cursor"]);
  });

  it("updates whole message fields, and tells 404 from null", async () => {
    const c = unique("c");
    const m = unique("m");
    const message = await store.appendMessage(c, { payload: { a: 1 }, metadata: { k: 1 }, messageId: m });
    const updated = await store.updateMessage(m, { payload: [1, 2], metadata: { j: 2 } });
    expect([updated.payload, updated.metadata, updated.seq]).toEqual([[1, 2], { j: 2 }, message.seq]);
    expect((await store.getMessage(m))?.payload).toEqual([1, 2]);
    const empty = await refusal(store.updateMessage(m, {}));
    expect(empty.code).toBe("BadRequest");
    const missing = await refusal(store.updateMessage(unique("nope"), { role: "user" }));
    expect([missing.code, missing.status]).toEqual(["NotFound", 404]);
    expect(await store.getMessage(unique("nope"))).toBeNull();
    const field = await refusal(store.updateMessage(m, { seq: 5 } as never));
    expect([field.code, field.param]).toEqual(["BadRequest", "seq"]);
  });

  it("pops the latest message, or null", async () => {
    const c = unique("c");
    expect(await store.popMessage(c)).toBeNull();
    await store.appendMessages(c, [{ payload: "a" }, { payload: "b" }]);
    expect((await store.popMessage(c))?.payload).toBe("b");
    expect((await store.listMessages(c)).items.map((m) => m.payload)).toEqual(["a"]);
  });

  it("keeps state per conversation and key", async () => {
    const c = unique("c");
    expect(await store.state.get(c, "k")).toBeNull();
    await store.state.set(c, "k", { deep: [1, "x", null] });
    expect(await store.stateGet(c, "k")).toEqual({ deep: [1, "x", null] });
    expect(await store.state.get(unique("other"), "k")).toBeNull();
    await store.state.delete(c, "k");
    expect(await store.state.get(c, "k")).toBeNull();
    const nul = await refusal(store.state.set(c, "k\u0000", 1));
    expect([nul.code, nul.param]).toEqual(["BadRequest", "key"]);
  });

  it("binds a business id to one stable UUID", async () => {
    const id = unique("ticket");
    const bound = await store.claudeSessionBinding(id);
    expect(bound).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(await store.claudeSessionBinding(id)).toBe(bound);
    expect(await store.claudeSessionBinding(unique("ticket"))).not.toBe(bound);
    const given = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
    expect(await store.claudeSessionBinding(given)).toBe(given);
    const together = await Promise.all(Array.from({ length: 8 }, () => store.claudeSessionBinding(`${id}-new`)));
    expect(new Set(together).size).toBe(1);
  });

  it("keeps projects apart, and ids with slashes are kept as they are", async () => {
    const [mine, theirs] = [storeOf(url, "a"), storeOf(url, "b")];
    const c = `${unique("ns")}/session 1`;
    const m = unique("m");
    await mine.appendMessage(c, { payload: "secret", messageId: m });
    expect(await theirs.getConversation(c)).toBeNull();
    expect(await theirs.getMessage(m)).toBeNull();
    expect((await mine.getConversation(c))?.conversationId).toBe(c);
    const bad = new Store({ baseUrl: url, apiKey: "sk-wrong-0123456789abcdef" });
    const refused = await refusal(bad.getConversation(c));
    expect(refused.status).toBe(401);
  });

  it("gives concurrent appends distinct gapless seqs", async () => {
    const c = unique("c");
    const results = await Promise.all(Array.from({ length: 16 }, (_, n) => store.appendMessage(c, { payload: n })));
    expect(results.map((m) => Number(m.seq)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 16 }, (_, n) => n + 1),
    );
  });
});
