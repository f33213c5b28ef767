/**
 * The Claude Agent SDK's `SessionStore` contracts on the gateway. The SDK's TypeScript package
 * ships no conformance suite: these are the 14 contracts its Python package's
 * `run_session_store_conformance` asserts (the checklist of its docs), each a test, then the
 * round trips with the Python adapter.
 */

import { foldSessionSummary, type SessionKey } from "@anthropic-ai/claude-agent-sdk";
import { describe, expect, it } from "vitest";

import { createSessionStore, type ClaudeSessionStore } from "../src/claude.js";
import { StoreError } from "../src/index.js";
import { keyOf, pythonSide } from "./gateway.js";
import { gatewayUrls, storeOf, unique } from "./helpers.js";

const KEY: SessionKey = { projectKey: "proj", sessionId: "sess" };
const e = (fields: Record<string, unknown>) => ({ type: "x", ...fields });

describe.each(gatewayUrls())("the Claude SessionStore on %s", (_backend, url) => {
  /** A store no other test sees (a namespace of its own). */
  const fresh = (): ClaudeSessionStore => createSessionStore({ store: storeOf(url), namespace: unique("claude") });

  it("1. loads what was appended, in order", async () => {
    const store = fresh();
    await store.append(KEY, [e({ uuid: "b", n: 1 }), e({ uuid: "a", n: 2 })]);
    expect(await store.load(KEY)).toEqual([e({ uuid: "b", n: 1 }), e({ uuid: "a", n: 2 })]);
  });

  it("2. loads null for a key never written", async () => {
    const store = fresh();
    expect(await store.load({ projectKey: "proj", sessionId: "nope" })).toBeNull();
    await store.append(KEY, [e({ uuid: "x", n: 1 })]);
    expect(await store.load({ ...KEY, subpath: "nope" })).toBeNull();
  });

  it("3. keeps the order of several appends", async () => {
    const store = fresh();
    await store.append(KEY, [e({ uuid: "z", n: 1 })]);
    await store.append(KEY, [e({ uuid: "a", n: 2 }), e({ uuid: "m", n: 3 })]);
    await store.append(KEY, [e({ uuid: "b", n: 4 })]);
    expect(await store.load(KEY)).toEqual([
      e({ uuid: "z", n: 1 }),
      e({ uuid: "a", n: 2 }),
      e({ uuid: "m", n: 3 }),
      e({ uuid: "b", n: 4 }),
    ]);
  });

  it("4. takes an empty append as nothing", async () => {
    const store = fresh();
    await store.append(KEY, [e({ uuid: "a", n: 1 })]);
    await store.append(KEY, []);
    expect(await store.load(KEY)).toEqual([e({ uuid: "a", n: 1 })]);
  });

  it("5. keeps subpath keys apart from the main transcript", async () => {
    const store = fresh();
    const sub = { ...KEY, subpath: "subagents/agent-1" };
    await store.append(KEY, [e({ uuid: "m", n: 1 })]);
    await store.append(sub, [e({ uuid: "s", n: 1 })]);
    expect(await store.load(KEY)).toEqual([e({ uuid: "m", n: 1 })]);
    expect(await store.load(sub)).toEqual([e({ uuid: "s", n: 1 })]);
  });

  it("6. keeps project keys apart", async () => {
    const store = fresh();
    await store.append({ projectKey: "A", sessionId: "s1" }, [e({ from: "A" })]);
    await store.append({ projectKey: "B", sessionId: "s1" }, [e({ from: "B" })]);
    expect(await store.load({ projectKey: "A", sessionId: "s1" })).toEqual([e({ from: "A" })]);
    expect(await store.load({ projectKey: "B", sessionId: "s1" })).toEqual([e({ from: "B" })]);
    expect((await store.listSessions("A")).length).toBe(1);
    expect((await store.listSessions("B")).length).toBe(1);
  });

  it("7. lists a project's sessions with mtimes in Unix ms", async () => {
    const store = fresh();
    await store.append({ projectKey: "proj", sessionId: "a" }, [e({ n: 1 })]);
    await store.append({ projectKey: "proj", sessionId: "b" }, [e({ n: 1 })]);
    await store.append({ projectKey: "other", sessionId: "c" }, [e({ n: 1 })]);
    const sessions = await store.listSessions("proj");
    expect(sessions.map((s) => s.sessionId).sort()).toEqual(["a", "b"]);
    expect(sessions.every((s) => Number.isInteger(s.mtime) && s.mtime > 1e12)).toBe(true);
    expect(await store.listSessions("never-appended-project")).toEqual([]);
  });

  it("8. lists no subagent transcripts as sessions", async () => {
    const store = fresh();
    await store.append({ projectKey: "proj", sessionId: "main" }, [e({ n: 1 })]);
    await store.append({ projectKey: "proj", sessionId: "main", subpath: "subagents/agent-1" }, [e({ n: 1 })]);
    expect((await store.listSessions("proj")).map((s) => s.sessionId)).toEqual(["main"]);
  });

  it("9. loads null after a delete", async () => {
    const store = fresh();
    await store.delete({ projectKey: "proj", sessionId: "never-written" });
    await store.append(KEY, [e({ n: 1 })]);
    await store.delete(KEY);
    expect(await store.load(KEY)).toBeNull();
  });

  it("10. deletes a main transcript's subagent transcripts with it", async () => {
    const store = fresh();
    const [sub1, sub2] = [{ ...KEY, subpath: "subagents/agent-1" }, { ...KEY, subpath: "subagents/agent-2" }];
    const other = { projectKey: "proj", sessionId: "sess2" };
    const otherProject = { projectKey: "other-proj", sessionId: KEY.sessionId };
    for (const key of [KEY, sub1, sub2, other, otherProject]) await store.append(key, [e({ n: 1 })]);
    await store.delete(KEY);
    expect(await store.load(KEY)).toBeNull();
    expect(await store.load(sub1)).toBeNull();
    expect(await store.load(sub2)).toBeNull();
    expect((await store.load(other))?.length).toBe(1);
    expect((await store.load(otherProject))?.length).toBe(1);
    expect(await store.listSubkeys(KEY)).toEqual([]);
    expect((await store.listSessions("proj")).map((s) => s.sessionId)).not.toContain(KEY.sessionId);
  });

  it("11. deletes only the subkey a delete names", async () => {
    const store = fresh();
    const [sub1, sub2] = [{ ...KEY, subpath: "subagents/agent-1" }, { ...KEY, subpath: "subagents/agent-2" }];
    for (const key of [KEY, sub1, sub2]) await store.append(key, [e({ n: 1 })]);
    await store.delete(sub1);
    expect(await store.load(sub1)).toBeNull();
    expect((await store.load(sub2))?.length).toBe(1);
    expect((await store.load(KEY))?.length).toBe(1);
    expect(await store.listSubkeys(KEY)).toEqual(["subagents/agent-2"]);
  });

  it("12. lists a session's subpaths", async () => {
    const store = fresh();
    await store.append(KEY, [e({ n: 1 })]);
    await store.append({ ...KEY, subpath: "subagents/agent-1" }, [e({ n: 1 })]);
    await store.append({ ...KEY, subpath: "subagents/agent-2" }, [e({ n: 1 })]);
    await store.append({ projectKey: KEY.projectKey, sessionId: "other-sess", subpath: "subagents/agent-x" }, [e({ n: 1 })]);
    const subkeys = await store.listSubkeys(KEY);
    expect([...subkeys].sort()).toEqual(["subagents/agent-1", "subagents/agent-2"]);
  });

  it("13. lists no main transcript among the subkeys", async () => {
    const store = fresh();
    await store.append(KEY, [e({ n: 1 })]);
    expect(await store.listSubkeys(KEY)).toEqual([]);
    expect(await store.listSubkeys({ projectKey: "proj", sessionId: "never-appended" })).toEqual([]);
  });

  it("14. keeps each session's folded summary, untouched by subagents", async () => {
    const store = fresh();
    const key = { projectKey: "proj", sessionId: "summ-sess" };
    await store.append(key, [
      e({ timestamp: "2024-01-01T00:00:00.000Z", customTitle: "first" }),
      e({ timestamp: "2024-01-01T00:00:01.000Z" }),
    ]);
    await store.append(key, [e({ timestamp: "2024-01-01T00:00:02.000Z", customTitle: "second" })]);
    await store.append({ projectKey: "other", sessionId: "elsewhere" }, [e({ timestamp: "2024-01-01T00:00:00.000Z" })]);
    const summaries = await store.listSessionSummaries("proj");
    expect(summaries.map((s) => s.sessionId)).toEqual(["summ-sess"]);
    const [summary] = summaries;
    expect(summary!.mtime).toBeGreaterThan(1e12);
    const listed = await store.listSessions("proj");
    expect(summary!.mtime).toBeGreaterThanOrEqual(listed[0]!.mtime);
    const refolded = foldSessionSummary(summary, key, [e({ timestamp: "2024-01-01T00:00:03.000Z" })]);
    expect([refolded.sessionId, refolded.mtime]).toEqual(["summ-sess", summary!.mtime]);
    await store.append({ ...key, subpath: "subagents/agent-1" }, [e({ timestamp: "2024-01-01T00:00:09.000Z", customTitle: "subagent" })]);
    expect((await store.listSessionSummaries("proj"))[0]!.data).toEqual(summary!.data);
    expect(await store.listSessionSummaries("never-appended-project")).toEqual([]);
    await store.delete(key);
    expect(await store.listSessionSummaries("proj")).toEqual([]);
  });

  it("stores a retried batch once, and refuses a subpath that leaves its folder", async () => {
    const store = fresh();
    await store.append(KEY, [e({ uuid: "u1", n: 1 }), e({ n: 2 })]);
    await store.append(KEY, [e({ uuid: "u1", n: 1 })]);
    expect(await store.load(KEY)).toEqual([e({ uuid: "u1", n: 1 }), e({ n: 2 })]);
    for (const subpath of ["../escape", "/abs", "a//b", "./x"]) {
      const error = await store.load({ ...KEY, subpath }).catch((x: unknown) => x);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).code).toBe("BadRequest");
    }
  });

  it("shares sessions with the Python adapter, both ways", async () => {
    const project = unique("proj");
    const session = await storeOf(url).claudeSessionBinding(unique("ticket"));
    const store = createSessionStore({ store: storeOf(url) });
    const key = { projectKey: project, sessionId: session };
    const first = e({ uuid: "ts-1", timestamp: "2024-01-01T00:00:00.000Z", customTitle: "from ts", message: { role: "user", content: "Hi" } });
    await store.append(key, [first]);
    const second = e({ uuid: "py-1", timestamp: "2024-01-01T00:00:01.000Z", customTitle: "from py" });
    const python = pythonSide("claude", url, keyOf("team"), project, session, JSON.stringify([second]));
    expect(python.loaded).toEqual([first, second]);
    expect(python.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([session]);
    expect(python.summaries[0].session_id).toBe(session);
    expect(await store.load(key)).toEqual([first, second]);
    const [summary] = await store.listSessionSummaries(project);
    expect(summary!.data).toEqual(python.summaries[0].data);
    expect(summary!.mtime).toBe(python.summaries[0].mtime);
  });
});
