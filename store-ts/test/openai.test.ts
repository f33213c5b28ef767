/** The Agents SDK's `run()` with a Store session, on the gateway's echo model. */

import { spawnSync } from "node:child_process";
import { join } from "node:path";

import { Agent, run, RunState, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";

import { createSession } from "../src/openai.js";
import { keyOf } from "./gateway.js";
import { gatewayUrls, storeOf, unique } from "./helpers.js";

function runElsewhere(url: string, sessionId: string, prompt: string): { output: string; items: number } {
  const script = join(import.meta.dirname, "openai_run.mjs");
  const ran = spawnSync(process.execPath, [script, url, keyOf("agents"), sessionId, prompt], { encoding: "utf8" });
  if (ran.status !== 0) throw new Error(ran.stderr);
  return JSON.parse(ran.stdout);
}

describe.each(gatewayUrls())("the Agents SDK session on %s", (_backend, url) => {
  it("runs, and resumes in another process", async () => {
    setTracingDisabled(true);
    setOpenAIAPI("responses");
    setDefaultOpenAIClient(new OpenAI({ baseURL: `${url}/v1`, apiKey: keyOf("agents") }));
    const agent = new Agent({ name: "support", model: "echo" });
    const id = unique("agents");
    const session = createSession(id, { baseUrl: url, apiKey: keyOf("agents") });
    const first = await run(agent, "My order A-17 is late.", { session });
    expect(first.finalOutput).toBe("echo: My order A-17 is late.");
    expect((await session.getItems()).length).toBe(2);
    await session.saveRunState(first.state);
    const saved = await session.loadRunState();
    expect(saved).not.toBeNull();
    expect(JSON.parse(saved as string)).toEqual(JSON.parse(JSON.stringify(first.state.toJSON())));
    const restored = (await RunState.fromString(agent, saved as string)).toJSON();
    const original = first.state.toJSON();
    for (const field of ["currentStep", "currentTurn", "originalInput", "generatedItems"] as const) {
      expect(restored[field]).toEqual(original[field]);
    }
    await session.forgetRunState();
    expect(await session.loadRunState()).toBeNull();
    const second = runElsewhere(url, id, "Which order was it?");
    expect(second).toEqual({ output: "echo: Which order was it? | earlier: My order A-17 is late.", items: 4 });
    const stored = await storeOf(url, "agents").listMessages(id);
    expect(stored.items.map((m) => [m.role, m.type])).toEqual([
      ["user", "message"],
      ["assistant", "message"],
      ["user", "message"],
      ["assistant", "message"],
    ]);
  });

  it("gets the latest items, pops and clears, keeping the seq", async () => {
    const id = unique("items");
    const session = createSession(id, { store: storeOf(url), namespace: "tenant-1" });
    expect(session.conversationId).toBe(`tenant-1/${id}`);
    expect(await session.getSessionId()).toBe(id);
    const items = [1, 2, 3].map((n) => ({ role: "user" as const, content: `m${n}` }));
    await session.addItems(items);
    expect(await session.getItems(2)).toEqual(items.slice(1));
    expect(await session.getItems(0)).toEqual([]);
    expect(await session.popItem()).toEqual(items[2]);
    expect(await session.getItems()).toEqual(items.slice(0, 2));
    await session.clearSession();
    expect(await session.popItem()).toBeUndefined();
    await session.addItems([{ role: "user", content: "again" }]);
    const [message] = (await storeOf(url).listMessages(`tenant-1/${id}`)).items;
    expect(message?.seq).toBe("4");
  });

  it("pages through more than one page of items", async () => {
    const id = unique("long");
    const session = createSession(id, { store: storeOf(url) });
    const items = Array.from({ length: 1005 }, (_, n) => ({ role: "user" as const, content: `m${n}` }));
    await session.addItems(items);
    const all = await session.getItems();
    expect(all.length).toBe(1005);
    expect(all[1004]).toEqual(items[1004]);
    expect((await session.getItems(1003))[0]).toEqual(items[2]);
  });
});
