import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globals: true, // LangGraph's validation suite calls describe, it and beforeAll as globals
    // LangGraph's validation suite skips this one for its own SQLite and in-memory savers,
    // which keep whole checkpoints as the gateway's does (both languages read them).
    testNamePattern: /^(?!.*should only store channel_values that have changed)/,
    globalSetup: ["test/setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
