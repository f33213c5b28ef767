/** A real gateway for the tests: `python -m gateway serve` on a temporary config and port. */

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dirname, "..", "..");
// A path given relative to where the tests were started (the gateways run in folders of their own).
const GIVEN = process.env.GATEWAY_PYTHON;
export const PYTHON = GIVEN?.includes("/") ? resolve(GIVEN) : (GIVEN ?? resolve(REPO, ".venv", "bin", "python"));
export const PROJECTS = ["team", "a", "b", "lists", "cursors", "same-ms", "docs", "agents"];

/** The API key of a project the test gateways serve. */
export function keyOf(project: string): string {
  return `sk-store-ts-${project}-0123456789abcdef`;
}

export interface Gateway {
  url: string;
  backend: string;
  stop(): Promise<void>;
}

/** Run `code` with the gateway's Python; its stdout. */
export function python(code: string, args: string[] = [], env: Record<string, string> = {}): string {
  const ran = spawnSync(PYTHON, ["-c", code, ...args], {
    cwd: REPO,
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  if (ran.status !== 0) throw new Error(`python failed (${ran.status}):\n${ran.stderr}`);
  return ran.stdout;
}

const SCHEMA = `
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    conn.execute(sys.argv[2])
`;

function yamlConfig(dir: string, session: string): string {
  const keys = PROJECTS.map((p) => `    - {key: "${keyOf(p)}", project: ${p}}`).join("\n");
  return [
    "server: {host: 127.0.0.1, port: 0}",
    "auth:",
    "  mode: keys",
    "  keys:",
    keys,
    session,
    `providers: {echo: {wire_api: echo}}`,
    `models: {echo: {provider: echo}}`,
    "",
  ].join("\n");
}

/** Start a gateway on `backend` (`sqlite`, or `postgres` on `GATEWAY_TEST_POSTGRES_DSN`). */
export async function startGateway(backend: "sqlite" | "postgres"): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), "store-ts-"));
  let session = `session: {backend: sqlite, sqlite: {path: "${join(dir, "s.db")}"}}`;
  let dropSchema = (): void => {};
  if (backend === "postgres") {
    const dsn = process.env.GATEWAY_TEST_POSTGRES_DSN as string;
    const schema = `store_ts_${Math.random().toString(16).slice(2, 14)}`;
    python(SCHEMA, [dsn, `CREATE SCHEMA ${schema}`]);
    dropSchema = () => void python(SCHEMA, [dsn, `DROP SCHEMA ${schema} CASCADE`]);
    const url = new URL(dsn);
    url.searchParams.set("options", `-csearch_path=${schema}`);
    session = `session: {backend: postgres, postgres: {dsn: "${url.toString()}"}}`;
  }
  const config = join(dir, "config.yaml");
  writeFileSync(config, yamlConfig(dir, session));
  const child = spawn(PYTHON, ["-m", "gateway", "serve", "--config", config, "--port", "0"], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const url = await listening(child);
  await healthy(url);
  return {
    url,
    backend,
    async stop() {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      await exited;
      dropSchema();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function listening(child: ChildProcess): Promise<string> {
  return new Promise((done, fail) => {
    let log = "";
    const timer = setTimeout(() => fail(new Error(`the gateway did not start:\n${log}`)), 30_000);
    const read = (chunk: Buffer): void => {
      log += chunk.toString();
      const found = /Uvicorn running on \S+:(\d+) /.exec(log);
      if (found) {
        clearTimeout(timer);
        done(`http://127.0.0.1:${found[1]}`);
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`the gateway exited (${code}):\n${log}`));
    });
  });
}

async function healthy(url: string): Promise<void> {
  for (let n = 0; n < 300; n++) {
    try {
      await fetch(`${url}/healthz`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error("the gateway did not answer /healthz");
}

/** The backends the tests run on: SQLite, and PostgreSQL when its DSN is given. */
export function backends(): ("sqlite" | "postgres")[] {
  return process.env.GATEWAY_TEST_POSTGRES_DSN ? ["sqlite", "postgres"] : ["sqlite"];
}

/** Run a command of `python_side.py` against a gateway; its JSON answer. */
export function pythonSide(command: string, url: string, apiKey: string, ...args: string[]): any {
  const ran = spawnSync(PYTHON, [join(import.meta.dirname, "python_side.py"), command, url, apiKey, ...args], {
    cwd: REPO,
    encoding: "utf8",
  });
  if (ran.status !== 0) throw new Error(`python_side.py ${command} failed:\n${ran.stderr}`);
  return JSON.parse(ran.stdout);
}
