// One run of an Agents SDK agent on the gateway's echo model, its session in the Store:
//   node openai_run.mjs BASE_URL API_KEY SESSION_ID PROMPT
// prints {"output", "items"} as JSON.
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";

import { createSession } from "../dist/openai.js";

const [baseUrl, apiKey, sessionId, prompt] = process.argv.slice(2);
setTracingDisabled(true); // the SDK would send traces to OpenAI
setOpenAIAPI("responses");
setDefaultOpenAIClient(new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey }));
const agent = new Agent({ name: "support", model: "echo" });
const session = createSession(sessionId, { baseUrl, apiKey });
const result = await run(agent, prompt, { session });
const items = await session.getItems();
console.log(JSON.stringify({ output: result.finalOutput, items: items.length }));
