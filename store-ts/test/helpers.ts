/** Stores on the test gateways, each test under ids of its own. */

import { randomUUID } from "node:crypto";
import { inject } from "vitest";

import { Store } from "../src/index.js";
import { keyOf } from "./gateway.js";

export function gatewayUrls(): [string, string][] {
  return Object.entries(inject("gateways"));
}

export function storeOf(url: string, project = "team"): Store {
  return new Store({ baseUrl: url, apiKey: keyOf(project), backoffMs: 10 });
}

/** A prefix no other test uses. */
export function unique(name = "t"): string {
  return `${name}-${randomUUID().slice(0, 12)}`;
}
