/** The TypeScript examples of docs/agent-store.md run, printing what the page says they print. */

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import ts from "typescript";
import { describe, expect, it } from "vitest";

import { keyOf, REPO } from "./gateway.js";
import { gatewayUrls } from "./helpers.js";

interface Example {
  line: number;
  code: string;
  prints: string | null;
}

/** The `ts` blocks of a page not marked `<!-- not run: ... -->`, with the `text` block after
 * a line "prints". */
function examples(page: string): Example[] {
  const lines = readFileSync(page, "utf8").split("\n");
  const found: Example[] = [];
  for (let n = 0; n < lines.length; n++) {
    if (lines[n] !== "```ts") continue;
    const before = lines.slice(0, n).filter((l) => l.trim()).at(-1) ?? "";
    const end = lines.indexOf("```", n + 1);
    const code = lines.slice(n + 1, end).join("\n");
    let prints: string | null = null;
    const said = lines.slice(end + 1).findIndex((l) => l.trim() !== "");
    if (lines[end + 1 + said] === "prints" && lines[end + 3 + said] === "```text") {
      const start = end + 4 + said;
      prints = lines.slice(start, lines.indexOf("```", start)).join("\n");
    }
    if (!/^<!-- not run: .+ -->$/.test(before.trim())) found.push({ line: n + 1, code, prints });
    n = end;
  }
  return found;
}

const PAGE = join(REPO, "docs", "agent-store.md");
const FOLDER = join(import.meta.dirname, "..", ".docs-examples"); // inside the package: its name resolves

describe.each(gatewayUrls())("docs/agent-store.md on %s", (backend, url) => {
  const found = examples(PAGE);
  it("has TypeScript examples, each showing what it prints", () => {
    expect(found.length).toBeGreaterThanOrEqual(3);
    expect(found.every((e) => e.prints !== null)).toBe(true);
  });
  for (const example of found) {
    it(`runs the example of line ${example.line}`, () => {
      mkdirSync(FOLDER, { recursive: true });
      const code = example.code.replaceAll("http://127.0.0.1:8080", url);
      const js = ts.transpileModule(code, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      }).outputText;
      const file = join(FOLDER, `${backend}-${example.line}.mjs`);
      writeFileSync(file, js);
      const ran = spawnSync(process.execPath, [file], {
        encoding: "utf8",
        env: { ...process.env, GATEWAY_API_KEY: keyOf("docs"), GATEWAY_URL: "" },
      });
      expect(ran.stderr).toBe("");
      expect(ran.status).toBe(0);
      if (example.prints !== null) expect(ran.stdout.trim()).toBe(example.prints.trim());
    });
  }
});
