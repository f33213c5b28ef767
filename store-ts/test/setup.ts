/** Starts one gateway per backend for the whole run; tests find them with `inject("gateways")`. */

import type { TestProject } from "vitest/node";

import { backends, startGateway, type Gateway } from "./gateway.js";

declare module "vitest" {
  export interface ProvidedContext {
    gateways: Record<string, string>;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: Gateway[] = await Promise.all(backends().map((b) => startGateway(b)));
  project.provide("gateways", Object.fromEntries(started.map((g) => [g.backend, g.url])));
  return async () => {
    await Promise.all(started.map((g) => g.stop()));
  };
}
