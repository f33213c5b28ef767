/** A gateway that is down, slow or answers 5xx: the error's code, and what is retried. */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { Store, StoreError } from "../src/index.js";
import { keyOf } from "./gateway.js";
import { gatewayUrls, storeOf, unique } from "./helpers.js";

const [[, gateway]] = gatewayUrls() as [[string, string]];

/** In front of the gateway: forwards each request, then answers the next `failures` statuses
 * in its place (the gateway did the work; the client sees a failure). */
class FlakyProxy {
  requests: string[] = [];
  failures: number[] = [];
  private server: Server = createServer((req, res) => void this.handle(req, res));
  url = "";

  async start(): Promise<void> {
    await new Promise<void>((done) => this.server.listen(0, "127.0.0.1", done));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((done) => this.server.close(() => done()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.requests.push(`${req.method} ${req.url}`);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([k]) => ["authorization", "content-type"].includes(k)),
    ) as Record<string, string>;
    const answer = await fetch(gateway + req.url, { method: req.method, headers, body });
    const text = await answer.text();
    const failure = this.failures.shift();
    if (failure === 502 || failure === 504) {
      res.writeHead(failure, { "content-type": "text/plain" }); // a proxy's own page
      res.end(failure === 502 ? "Bad Gateway" : "Gateway Timeout");
      return;
    }
    if (failure !== undefined) {
      res.writeHead(failure, { "content-type": "application/json" });
      const code = { 429: "TooManyRequests", 500: "UnknownError" }[failure] ?? "Unavailable";
      res.end(JSON.stringify({ error: { message: "try later", type: "server_error", param: null, code } }));
      return;
    }
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "text/plain" });
    res.end(text);
  }
}

async function refusal(promise: Promise<unknown>): Promise<StoreError> {
  const error = await promise.then(() => new Error("no error"), (e: unknown) => e);
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe("a gateway that fails", () => {
  const proxy = new FlakyProxy();
  let store: Store;
  beforeAll(async () => {
    await proxy.start();
    store = new Store({ baseUrl: proxy.url, apiKey: keyOf("team"), backoffMs: 5 });
  });
  afterAll(() => proxy.stop());

  it("retries an append whose messages all have ids, stored once", async () => {
    const c = unique("c");
    proxy.requests = [];
    proxy.failures = [502, 503];
    const appended = await store.appendMessages(c, [
      { payload: "one", messageId: `${c}-1` },
      { payload: "two", messageId: `${c}-2` },
    ]);
    expect(proxy.requests.length).toBe(3);
    expect(appended.map((m) => m.seq)).toEqual(["1", "2"]);
    const listed = await storeOf(gateway).listMessages(c);
    expect(listed.items.map((m) => m.payload)).toEqual(["one", "two"]);
  });

  it("gives up after three attempts with the last error's code", async () => {
    const c = unique("c");
    proxy.requests = [];
    proxy.failures = [503, 503, 503];
    const error = await refusal(store.appendMessage(c, { payload: "x", messageId: `${c}-1` }));
    expect([error.code, error.status]).toEqual(["Unavailable", 503]);
    expect(proxy.requests.length).toBe(3);
    expect((await storeOf(gateway).listMessages(c)).items.length).toBe(1);
  });

  it("sends an append without ids once", async () => {
    const c = unique("c");
    proxy.requests = [];
    proxy.failures = [503];
    const error = await refusal(store.appendMessage(c, { payload: "x" }));
    expect(error.code).toBe("Unavailable");
    expect(proxy.requests.length).toBe(1);
    expect((await storeOf(gateway).listMessages(c)).items.length).toBe(1);
  });

  it("sends a create and a pop once", async () => {
    const c = unique("c");
    proxy.requests = [];
    proxy.failures = [502];
    expect((await refusal(store.createConversation({ conversationId: c }))).code).toBe("NetworkError");
    await storeOf(gateway).appendMessages(c, [{ payload: "a" }, { payload: "b" }]);
    proxy.failures = [504];
    expect((await refusal(store.popMessage(c))).code).toBe("TimeoutError");
    expect(proxy.requests.length).toBe(2);
    expect((await storeOf(gateway).listMessages(c)).items.map((m) => m.payload)).toEqual(["a"]);
  });

  it("retries reads on 429, and does not retry a 500", async () => {
    const c = unique("c");
    proxy.requests = [];
    proxy.failures = [429];
    expect(await store.getConversation(c)).toBeNull();
    expect(proxy.requests.length).toBe(2);
    proxy.requests = [];
    proxy.failures = [500];
    const error = await refusal(store.state.get(c, "k"));
    expect([error.code, error.status]).toEqual(["UnknownError", 500]);
    expect(proxy.requests.length).toBe(1);
  });

  it("sends the Claude adapter's append once, its reads retried", async () => {
    proxy.requests = [];
    proxy.failures = [503];
    const key = { project_key: unique("p"), session_id: "s" };
    const error = await refusal(store.call("claude.append", { key, entries: [{ type: "user", uuid: "u1" }] }));
    expect(error.code).toBe("Unavailable");
    proxy.failures = [503];
    expect(await store.call("claude.load", { key })).toEqual([{ type: "user", uuid: "u1" }]);
    expect(proxy.requests.length).toBe(3);
  });
});

describe("a gateway that is down", () => {
  it("is a NetworkError, with status 502 and the detail", async () => {
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const port = (server.address() as AddressInfo).port;
    await new Promise((done) => server.close(done));
    const store = new Store({ baseUrl: `http://127.0.0.1:${port}`, backoffMs: 1 });
    const error = await refusal(store.listConversations());
    expect([error.code, error.status]).toEqual(["NetworkError", 502]);
    expect(error.toJSON()).toMatchObject({ code: "NetworkError", status: 502, param: null });
    expect(JSON.parse(JSON.stringify(error)).code).toBe("NetworkError");
  });

  it("is a TimeoutError when it does not answer in time", async () => {
    const hung = createServer(() => {});
    await new Promise<void>((done) => hung.listen(0, "127.0.0.1", done));
    const port = (hung.address() as AddressInfo).port;
    const store = new Store({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 100, backoffMs: 1 });
    const error = await refusal(store.getMessage("m"));
    expect([error.code, error.status]).toEqual(["TimeoutError", 504]);
    hung.closeAllConnections();
    await new Promise((done) => hung.close(done));
  });

  it("needs a base URL, from the options or GATEWAY_URL", () => {
    const saved = process.env.GATEWAY_URL;
    delete process.env.GATEWAY_URL;
    expect(() => new Store()).toThrow(StoreError);
    process.env.GATEWAY_URL = "http://127.0.0.1:9/";
    process.env.GATEWAY_API_KEY = "sk-from-env";
    expect(new Store().baseUrl).toBe("http://127.0.0.1:9");
    if (saved === undefined) delete process.env.GATEWAY_URL;
    else process.env.GATEWAY_URL = saved;
    delete process.env.GATEWAY_API_KEY;
  });
});
