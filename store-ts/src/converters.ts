/**
 * Stored messages -> model inputs: Chat Completions messages, or Anthropic Messages, the same
 * as the Python `to_openai_input` and `to_anthropic_messages`.
 *
 * A message's `payload` is a string, a list of content parts, or an object: a chat message
 * (`content`, `tool_calls`), a Responses item (`function_call`, `function_call_output`), or
 * anything else, which is sent as its JSON text.
 */

import type { Message } from "./types.js";

type Item = Record<string, any>;
const TEXT_PARTS = new Set(["text", "input_text", "output_text"]);

function isObject(value: unknown): value is Item {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Python's `json.dumps(value, ensure_ascii=False)`: `", "` and `": "` separators. */
export function pythonJSON(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJSON).join(", ")}]`;
  if (isObject(value)) {
    const fields = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pythonJSON(v)}`);
    return `{${fields.join(", ")}}`;
  }
  if (value === undefined) return "null";
  return JSON.stringify(value);
}

function parts(content: unknown[]): Item[] {
  const result: Item[] = [];
  for (const part of content) {
    if (typeof part === "string") {
      result.push({ type: "text", text: part });
    } else if (isObject(part) && TEXT_PARTS.has(part.type)) {
      result.push({ type: "text", text: part.text ?? "" });
    } else if (isObject(part) && (part.type === "image_url" || part.type === "input_image")) {
      const url = isObject(part.image_url) ? part.image_url.url : part.image_url;
      result.push({ type: "image_url", image_url: { url: url ?? null } });
    }
  }
  return result;
}

function text(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return parts(content)
      .filter((p) => p.type === "text")
      .map((p) => p.text)
      .join("");
  }
  return pythonJSON(content);
}

function openai(message: Message): Item {
  const { payload, role } = message;
  if (typeof payload === "string") return { role: role || "user", content: payload };
  if (Array.isArray(payload)) return { role: role || "user", content: parts(payload) };
  if (isObject(payload)) {
    const kind = payload.type || message.type;
    if (kind === "function_call") {
      const call = { name: payload.name ?? null, arguments: payload.arguments ?? "{}" };
      return {
        role: "assistant",
        content: null,
        tool_calls: [{ id: payload.call_id ?? null, type: "function", function: call }],
      };
    }
    if (kind === "function_call_output") {
      return {
        role: "tool",
        tool_call_id: payload.call_id ?? null,
        content: text(payload.output ?? ""),
      };
    }
    if ("content" in payload || "tool_calls" in payload) {
      const chat: Item = {};
      for (const [key, value] of Object.entries(payload)) if (key !== "type") chat[key] = value;
      chat.role = payload.role || role || "user";
      if (Array.isArray(chat.content)) chat.content = parts(chat.content);
      return chat;
    }
  }
  return { role: role || "user", content: pythonJSON(payload) };
}

/** Chat Completions `messages`, in order. */
export function toOpenAIInput(messages: Message[]): Item[] {
  return messages.map(openai);
}

/**
 * `{system, messages}` for Anthropic's Messages API: system messages lifted out, tool calls
 * and results mapped, consecutive turns of one role merged.
 */
export function toAnthropicMessages(messages: Message[]): {
  system: string | null;
  messages: Item[];
} {
  const system: string[] = [];
  const turns: Item[] = [];
  for (const chat of toOpenAIInput(messages)) {
    let role: string = chat.role;
    if (role === "system" || role === "developer") {
      system.push(text(chat.content ?? null));
      continue;
    }
    const blocks: Item[] = [];
    if (role === "tool") {
      role = "user";
      blocks.push({
        type: "tool_result",
        tool_use_id: chat.tool_call_id ?? null,
        content: text(chat.content ?? null),
      });
    } else {
      const said = chat.content !== null && chat.content !== undefined ? text(chat.content) : "";
      if (said) blocks.push({ type: "text", text: said });
      for (const call of chat.tool_calls || []) {
        const fn = call.function || {};
        let input: unknown;
        try {
          input = JSON.parse(fn.arguments || "{}");
        } catch {
          input = { input: fn.arguments ?? null };
        }
        blocks.push({ type: "tool_use", id: call.id ?? null, name: fn.name ?? null, input });
      }
    }
    role = role === "assistant" ? "assistant" : "user";
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else if (blocks.length) turns.push({ role, content: blocks });
  }
  return { system: system.join("\n\n") || null, messages: turns };
}
