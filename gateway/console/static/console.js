// The gateway console: plain DOM code. Every stored string is set as textContent (or as
// an <img> element's src property, for data: URLs only); nothing is parsed as HTML.
"use strict";
(function () {
  const API = "/v1/gateway/console";
  const main = document.getElementById("main");
  let me = null;

  // -- small DOM helpers -----------------------------------------------------------------
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (name === "dataset") Object.assign(el.dataset, value);
      else if (name in el) el[name] = value;
      else el.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }
  function show(...nodes) {
    main.replaceChildren(...nodes);
  }
  function when(seconds) {
    if (seconds === null || seconds === undefined) return "-";
    return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }
  function secs(value) {
    return value === null || value === undefined ? "-" : value.toFixed(3) + " s";
  }
  function usd(value) {
    return value === null || value === undefined ? "-" : "$" + Number(value).toFixed(6);
  }
  function link(text, hash) {
    return h("a", { href: hash }, text);
  }
  function turnHash(id, project) {
    return "#/turn/" + encodeURIComponent(id) + (project ? "?project=" + encodeURIComponent(project) : "");
  }
  function pretty(value) {
    if (typeof value === "string") {
      try { return JSON.stringify(JSON.parse(value), null, 2); } catch (e) { return value; }
    }
    return JSON.stringify(value, null, 2);
  }

  // -- talking to the gateway ------------------------------------------------------------
  class Failure extends Error {
    constructor(status, body) {
      super((body && body.error && body.error.message) || "HTTP " + status);
      this.status = status;
    }
  }
  async function api(path, options) {
    const answer = await fetch(API + path, Object.assign({ credentials: "same-origin" }, options));
    const body = await answer.json().catch(() => null);
    if (!answer.ok) throw new Failure(answer.status, body);
    return body;
  }
  function query(params) {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") search.set(k, v);
    const text = search.toString();
    return text ? "?" + text : "";
  }

  // -- rendering stored items ------------------------------------------------------------
  function textBlock(text) {
    return h("pre", { className: "text" }, text);
  }
  function part(p) {
    if (typeof p === "string") return textBlock(p);
    if (!p || typeof p !== "object") return textBlock(String(p));
    if (typeof p.text === "string") return textBlock(p.text);
    if (p.type === "refusal") return textBlock("Refusal: " + (p.refusal || ""));
    if (p.type === "input_image") {
      const url = typeof p.image_url === "string" ? p.image_url : p.image_url && p.image_url.url;
      if (typeof url === "string" && url.startsWith("data:image/")) {
        const img = h("img", { className: "shown", alt: "input image" });
        img.src = url; // a DOM property: a data: URL only, never another host
        return img;
      }
      return h("p", { className: "muted" }, "Image not loaded (only data: URLs are shown): ", url || p.file_id || "-");
    }
    if (p.type === "input_file") return h("p", { className: "muted" }, "File: ", p.filename || p.file_id || "-");
    return h("pre", { className: "code" }, pretty(p));
  }
  function content(value) {
    if (typeof value === "string") return [textBlock(value)];
    if (Array.isArray(value)) return value.map(part);
    return [];
  }
  function itemView(item) {
    const type = item.type || "message";
    if (type === "message") {
      const role = item.role || "user";
      return h("div", { className: "item " + role }, h("div", { className: "item-label" }, role), content(item.content));
    }
    if (type === "function_call" || type === "custom_tool_call") {
      return h("div", { className: "item tool" },
        h("div", { className: "item-label" }, "tool call: ", item.name || "-", " (", item.call_id || "-", ")"),
        h("pre", { className: "code" }, pretty(item.arguments !== undefined ? item.arguments : item.input)));
    }
    if (type === "function_call_output" || type === "custom_tool_call_output") {
      return h("div", { className: "item tool" },
        h("div", { className: "item-label" }, "tool output (", item.call_id || "-", ")"),
        h("pre", { className: "code" }, pretty(item.output)));
    }
    if (type === "reasoning") {
      const texts = [].concat(item.summary || [], item.content || []).map((p) => (p && p.text) || "").filter(Boolean);
      return h("div", { className: "item reasoning" }, h("div", { className: "item-label" }, "reasoning"),
        texts.length ? texts.map(textBlock) : h("p", { className: "muted" }, "(no text kept)"));
    }
    return h("div", { className: "item" }, h("div", { className: "item-label" }, type), h("pre", { className: "code" }, pretty(item)));
  }
  function instructionsView(instructions) {
    if (!instructions) return null;
    if (typeof instructions === "string") {
      return h("div", { className: "item instructions" }, h("div", { className: "item-label" }, "instructions"), textBlock(instructions));
    }
    return h("div", { className: "item instructions" }, h("div", { className: "item-label" }, "instructions"), instructions.map(itemView));
  }
  function fact(label, value) {
    return h("span", {}, label + " ", h("b", {}, value === null || value === undefined ? "-" : String(value)));
  }
  function routeView(route) {
    if (!route) return null;
    const attempts = (route.attempts || []).map((a) =>
      h("li", {}, a.deployment + " / " + a.key + ": " + a.outcome + " (" + a.seconds + " s)"));
    const affinity = route.affinity;
    const sticky = affinity ? h("span", { className: "affinity" }, "affinity (" + affinity.source + ") ",
      h("b", {}, affinity.outcome || "-"),
      affinity.outcome === "moved" ? " from " + affinity.target + ": " + affinity.reason : "") : null;
    return h("div", { className: "facts" }, fact("answered by", route.answered_by), fact("key", route.key), sticky,
      attempts.length ? h("ul", { className: "attempts", "aria-label": "attempts" }, attempts) : null);
  }
  // A turn's steps as a waterfall: each a bar from its start to its end on one scale, an
  // attempt's first token a tick inside its bar, a save stored before it ended a tick alone.
  function ms(seconds) {
    return (seconds * 1000).toFixed(seconds < 0.01 ? 2 : 0) + " ms";
  }
  function stepLabel(step) {
    const parts = [step.kind, step.name];
    if (step.key) parts.push(step.key);
    if (step.outcome || step.status) parts.push("(" + (step.outcome || step.status) + ")");
    if (typeof step.depth === "number") parts.push("depth " + step.depth);
    if (step.source) parts.push(step.source === "store" ? "from the store" : "from the cache");
    return parts.join(" ");
  }
  function timelineView(steps) {
    if (!steps || !steps.length) return null;
    const origin = Math.min(...steps.map((s) => s.start));
    const last = Math.max(...steps.map((s) => Math.max(s.end || s.start, s.first_token || 0)));
    const total = Math.max(last - origin, 0.001);
    const at = (t) => ((t - origin) / total * 100).toFixed(2) + "%";
    const rows = steps.map((step) => {
      const ended = typeof step.end === "number";
      const took = ended ? step.end - step.start : null;
      const bar = h("span", { className: "bar" + (ended ? "" : " open") });
      bar.style.left = at(step.start);
      bar.style.width = ended ? "max(2px, " + ((took / total) * 100).toFixed(2) + "%)" : "2px";
      const track = h("span", { className: "track" }, bar);
      let first = null;
      if (typeof step.first_token === "number") {
        const tick = h("span", { className: "first-token", title: "first token" });
        tick.style.left = at(step.first_token);
        track.append(tick);
        first = "first token " + ms(step.first_token - step.start);
      }
      const timing = [ "+" + ms(step.start - origin), ended ? ms(took) : "stored as it ended", first ].filter(Boolean).join(", ");
      const bad = step.outcome && step.outcome !== "answered";
      return h("li", { className: "step step-" + step.kind + (bad ? " failed" : ""), dataset: { kind: step.kind } },
        h("span", { className: "step-label" }, stepLabel(step)),
        track,
        h("span", { className: "step-time muted" }, timing));
    });
    return h("section", { className: "timeline" },
      h("div", { className: "item-label" }, "timeline (" + ms(total) + ")"),
      h("ol", { className: "steps", "aria-label": "timeline" }, rows));
  }
  function turnView(turn, nextInChain) {
    const u = turn.usage || {};
    const card = h("article", { className: "turn", id: "turn-" + turn.id, dataset: { id: turn.id } },
      h("div", { className: "turn-head" },
        h("a", { className: "id", href: turnHash(turn.id, turn.project) }, turn.id),
        h("span", { className: "status-" + turn.status }, turn.status),
        h("span", { className: "muted" }, when(turn.created_at))),
      h("div", { className: "facts" },
        fact("model", turn.model), fact("project", turn.project), fact("by", turn.edge),
        fact("tokens in", u.input_tokens), fact("cached", u.cached_tokens), fact("out", u.output_tokens),
        fact("cost", usd(turn.cost_usd)), fact("latency", secs(turn.latency_seconds)),
        fact("first token", turn.time_to_first_token_seconds === null ? "not stored" : secs(turn.time_to_first_token_seconds)),
        fact("request", turn.request_id), fact("key", turn.key_id),
        turn.conversation_id ? h("span", {}, "conversation ", link(turn.conversation_id, "#/conversation/" + encodeURIComponent(turn.conversation_id) + "?project=" + encodeURIComponent(turn.project))) : null),
      routeView(turn.route),
      timelineView(turn.timeline),
      turn.error ? h("p", { className: "error" }, "Error: ", [turn.error.code, turn.error.message].filter(Boolean).join(": ")) : null,
      instructionsView(turn.instructions),
      (turn.input || []).map(itemView),
      (turn.output || []).map(itemView));
    const kids = turn.children || [];
    if (kids.length > 1 || (kids.length === 1 && kids[0].id !== nextInChain)) {
      card.append(h("div", { className: "branches" },
        h("strong", {}, kids.length === 1 ? "1 turn continues this one" : kids.length + " turns continue this one (branches)"),
        h("ul", {}, kids.map((c) => h("li", {},
          h("a", { href: turnHash(c.id, c.project) }, c.id), " ", h("span", { className: "muted" }, c.preview || ""),
          c.id === nextInChain ? h("span", { className: "muted" }, " (shown below)") : null)))));
    }
    return card;
  }

  // The header stays at the top of the window: a card scrolled to starts below it.
  function scrollBelowHeader(el) {
    const header = document.querySelector("header.top");
    const offset = header ? header.getBoundingClientRect().height + 8 : 0;
    window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - offset);
  }

  // -- pages -----------------------------------------------------------------------------
  async function turnsPage(params) {
    const filters = ["project", "model", "status", "key"];
    const form = h("form", { className: "filters", id: "filters" },
      filters.map((name) => h("label", {}, name, h("input", { name, value: params.get(name) || "", size: 14 }))),
      h("label", {}, "since", h("input", { name: "since", type: "datetime-local", value: params.get("since") || "" })),
      h("label", {}, "until", h("input", { name: "until", type: "datetime-local", value: params.get("until") || "" })),
      h("button", { type: "submit" }, "Filter"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = {};
      for (const [k, v] of new FormData(form)) if (v) values[k] = v;
      location.hash = "#/" + query(values);
    });
    const toSeconds = (v) => (v ? String(Date.parse(v + "Z") / 1000) : null);
    const filter = {};
    for (const name of filters) filter[name] = params.get(name);
    filter.since = toSeconds(params.get("since"));
    filter.until = toSeconds(params.get("until"));
    const body = h("tbody", {});
    const more = h("button", { type: "button", id: "older", hidden: true }, "Older turns");
    const columns = [["created", "Created (UTC)"], ["turn", "Turn"], ["project", "Project"], ["model", "Model"],
      ["status", "Status"], ["tokens", "Tokens"], ["latency", "Latency"], ["request", "Request"], ["key", "Key"],
      ["preview", "First words"]];
    const table = h("div", { className: "table-wrap" }, h("table", { id: "turns", className: "fit" },
      h("thead", {}, h("tr", {}, columns.map(([name, title]) => h("th", { className: "col-" + name, title }, title)))), body));
    show(h("h1", {}, "Recent turns"), form, table, h("div", { className: "pager" }, more));
    let after = null;
    // A cell shows what fits and ellipsizes the rest; its title holds the whole value.
    const cell = (name, text, extra) => h("td", { className: "col-" + name + (extra ? " " + extra : ""), title: text }, text);
    async function load() {
      const page = await api("/responses" + query(Object.assign({ limit: 50, after }, filter)));
      for (const t of page.data) {
        body.append(h("tr", {},
          cell("created", when(t.created_at)),
          h("td", { className: "col-turn", title: t.id }, link(t.id, turnHash(t.id, t.project))),
          cell("project", t.project), cell("model", t.model),
          cell("status", t.status, "status-" + t.status),
          cell("tokens", t.usage.input_tokens + " / " + t.usage.output_tokens, "num"),
          cell("latency", secs(t.latency_seconds), "num"),
          cell("request", t.request_id || "-"),
          cell("key", t.key_id || "-"),
          cell("preview", t.preview)));
      }
      if (!page.data.length && !after) body.append(h("tr", {}, h("td", { colSpan: 10, className: "muted" }, "No turns.")));
      after = page.last_id;
      more.hidden = !page.has_more;
    }
    more.addEventListener("click", () => load().catch(failed));
    await load();
  }

  async function chainPage(id, params) {
    const project = params.get("project");
    const list = h("div", { id: "chain" });
    const older = h("button", { type: "button", id: "older", hidden: true }, "Load older turns");
    const note = h("p", { className: "muted", id: "chain-count" }, "");
    const cache = h("p", { id: "chain-cache" }, "");
    show(h("h1", {}, "Chain ending at ", id), note, cache, h("div", { className: "pager" }, older), list);
    let next = null;
    let shown = 0;
    let inputTokens = 0;
    let cachedTokens = 0;
    let oldestShown = null;
    async function load(from) {
      const page = await api("/responses/" + encodeURIComponent(from) + "/chain" + query({ project, limit: 50 }));
      const cards = [];
      const turns = page.data.slice().reverse(); // oldest first
      for (let i = 0; i < turns.length; i++) {
        const following = i + 1 < turns.length ? turns[i + 1].id : oldestShown;
        const card = turnView(turns[i], following === null ? undefined : following);
        if (turns[i].id === id) card.classList.add("head");
        cards.push(card);
      }
      list.prepend(...cards);
      if (turns.length) oldestShown = turns[0].id;
      shown += turns.length;
      for (const t of turns) {
        inputTokens += (t.usage && t.usage.input_tokens) || 0;
        cachedTokens += (t.usage && t.usage.cached_tokens) || 0;
      }
      cache.textContent = "prompt cache hit rate " +
        (inputTokens ? (100 * cachedTokens / inputTokens).toFixed(1) + "%" : "-") +
        " (" + cachedTokens + " of " + inputTokens + " input tokens cached, turns shown)";
      next = page.next;
      older.hidden = !page.has_more;
      note.textContent = shown + " turns shown" + (page.has_more ? "; older turns remain" : ", from the root");
    }
    older.addEventListener("click", () => load(next).catch(failed));
    await load(id);
    const head = document.getElementById("turn-" + id);
    if (head) scrollBelowHeader(head);
  }

  async function conversationPage(id, params) {
    const project = params.get("project");
    const list = h("div", { id: "timeline" });
    const more = h("button", { type: "button", id: "older", hidden: true }, "More items");
    let after = null;
    let header = null;
    async function load() {
      const found = await api("/conversations/" + encodeURIComponent(id) + query({ project, after, limit: 50 }));
      if (!header) {
        header = h("div", {}, h("h1", {}, "Conversation ", found.id),
          h("div", { className: "facts" }, fact("project", found.project), fact("created", when(found.created_at))),
          h("pre", { className: "code" }, "metadata: " + JSON.stringify(found.metadata, null, 2)));
        show(header, list, h("div", { className: "pager" }, more));
      }
      found.items.data.forEach((item) => list.append(itemView(item)));
      after = found.items.last_id;
      more.hidden = !found.items.has_more;
    }
    more.addEventListener("click", () => load().catch(failed));
    await load();
  }

  async function storePage() {
    const listed = await api("/store/conversations" + query({ limit: 50 }));
    const rows = [];
    for (const group of listed.data) {
      for (const c of group.items) {
        rows.push(h("tr", {},
          h("td", {}, link(c.conversationId, "#/store/" + encodeURIComponent(c.conversationId) + "?project=" + encodeURIComponent(group.project))),
          h("td", {}, group.project), h("td", { className: "num" }, c.messageCount),
          h("td", {}, c.updatedAt || "-")));
      }
    }
    show(h("h1", {}, "Agent Store conversations"), h("div", { className: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Conversation", "Project", "Messages", "Updated"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colSpan: 4, className: "muted" }, "No conversations."))))));
  }

  async function storeMessagesPage(id, params) {
    const project = params.get("project");
    const list = h("div", { id: "messages" });
    const more = h("button", { type: "button", id: "older", hidden: true }, "More messages");
    let cursor = null;
    let first = true;
    async function load() {
      const found = await api("/store/conversations/" + encodeURIComponent(id) + query({ project, cursor, limit: 50 }));
      if (first) {
        first = false;
        show(h("h1", {}, "Agent Store conversation ", id),
          h("div", { className: "facts" }, fact("project", found.project), fact("messages", found.conversation.messageCount)),
          h("pre", { className: "code" }, "metadata: " + JSON.stringify(found.conversation.metadata, null, 2)),
          list, h("div", { className: "pager" }, more));
      }
      for (const m of found.items) {
        const payload = m.payload;
        const asItem = payload && typeof payload === "object" && (payload.content !== undefined || payload.type)
          ? Object.assign({ role: m.role || undefined }, payload) : { type: "message", role: m.role || "message", content: typeof payload === "string" ? payload : pretty(payload) };
        list.append(h("div", {}, h("div", { className: "muted" }, "#" + m.seq + " " + (m.type || "") + " " + m.createdAt), itemView(asItem)));
      }
      cursor = found.nextCursor;
      more.hidden = !cursor;
    }
    more.addEventListener("click", () => load().catch(failed));
    await load();
  }

  function localInput(seconds) {
    return new Date(seconds * 1000).toISOString().slice(0, 16);
  }

  async function usagePage(params) {
    const now = Date.now() / 1000;
    const bucket = params.get("bucket") || "hour";
    const since = params.get("since") ? Date.parse(params.get("since") + "Z") / 1000 : now - (bucket === "day" ? 30 * 86400 : 86400);
    const until = params.get("until") ? Date.parse(params.get("until") + "Z") / 1000 : now;
    const by = params.get("by") || "model";
    const select = (name, options, value) => h("select", { name }, options.map((o) => h("option", { value: o, selected: o === value }, o)));
    const form = h("form", { className: "filters", id: "usage-form" },
      h("label", {}, "since (UTC)", h("input", { name: "since", type: "datetime-local", value: localInput(since) })),
      h("label", {}, "until (UTC)", h("input", { name: "until", type: "datetime-local", value: localInput(until) })),
      h("label", {}, "bucket", select("bucket", ["hour", "day"], bucket)),
      h("label", {}, "by", select("by", ["project", "model", "key"], by)),
      ["project", "model", "key"].map((n) => h("label", {}, n, h("input", { name: n, value: params.get(n) || "", size: 12 }))),
      h("button", { type: "submit" }, "Show"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = {};
      for (const [k, v] of new FormData(form)) if (v) values[k] = v;
      location.hash = "#/usage" + query(values);
    });
    const data = await api("/usage" + query({ since, until, bucket, by, project: params.get("project"), model: params.get("model"), key: params.get("key") }));
    const t = data.totals;
    const totals = h("div", { className: "totals", id: "usage-totals" },
      [["requests", t.requests], ["errors", t.errors], ["input tokens", t.input_tokens], ["cached", t.cached_tokens],
        ["output tokens", t.output_tokens], ["reasoning", t.reasoning_tokens], ["cost", usd(t.cost_usd)],
        ["latency p50", secs(t.latency_p50)], ["p90", secs(t.latency_p90)], ["p99", secs(t.latency_p99)]]
        .map(([label, value]) => h("div", { dataset: { total: label } }, label, h("b", {}, value))));
    const charts = h("div", { className: "charts" });
    const columns = [["requests", "Requests"], ["errors", "Errors"], ["input_tokens", "Input tokens"],
      ["cached_tokens", "Cached tokens"], ["output_tokens", "Output tokens"], ["reasoning_tokens", "Reasoning tokens"],
      ["cost_usd", "Cost (USD)"]];
    const byName = { project: "Project", model: "Model", key: "Key" }[by] || by;
    const groups = h("div", { className: "table-wrap" }, h("table", { id: "usage-groups" },
      h("thead", {}, h("tr", {}, h("th", {}, byName), columns.map(([, title]) => h("th", { className: "num" }, title)))),
      h("tbody", {}, data.groups.map((g) => h("tr", {}, h("td", {}, g.group),
        columns.map(([c]) => h("td", { className: "num" }, c === "cost_usd" ? g[c].toFixed(6) : g[c])))))));
    show(h("h1", {}, "Usage"), form, totals, charts, h("h2", {}, "By " + byName.toLowerCase()), groups);
    const xs = data.buckets.map((b) => b.start);
    const series = (name) => data.buckets.map((b) => b[name]);
    const plots = [
      ["Requests and errors", [["requests", "#0b5cad", "Requests"], ["errors", "#b42318", "Errors"]]],
      ["Tokens", [["uncached_input_tokens", "#3b82f6", "Input, not cached"], ["cached_tokens", "#22c55e", "Input, cached"],
        ["output_tokens", "#f59e0b", "Output"]]],
      ["Cost (USD)", [["cost_usd", "#7c3aed", "Cost (USD)"]]],
      ["Latency (s)", [["latency_p50", "#0ea5e9", "p50"], ["latency_p90", "#f97316", "p90"], ["latency_p99", "#dc2626", "p99"]]],
    ];
    // A value with no value either side of it draws no line: it is drawn as a point.
    const isolated = (values) => values.flatMap((v, i) =>
      v !== null && (i === 0 || values[i - 1] === null) && (i === values.length - 1 || values[i + 1] === null) ? [i] : []);
    if (typeof uPlot === "undefined") {
      charts.append(h("p", { className: "error" }, "The chart library did not load."));
      return;
    }
    const boxes = plots.map(([title]) => h("div", { className: "chart" }, h("h3", {}, title)));
    charts.append(...boxes); // laid out first, so that each chart takes its box's width
    plots.forEach(([, lines], n) => {
      const width = Math.max(240, boxes[n].clientWidth - 16);
      const data = [xs].concat(lines.map(([name]) => series(name)));
      const alone = data.map(isolated);
      new uPlot({
        width, height: 200,
        series: [{}].concat(lines.map(([, stroke, label]) => ({
          label, stroke, width: 2,
          points: { show: false, size: 8, fill: stroke, filter: (u, i) => (alone[i].length ? alone[i] : null) },
        }))),
        axes: [{}, { size: 72 }],
      }, data, boxes[n]);
    });
  }

  function limits(k) {
    const parts = [];
    if (k.requests_per_minute) parts.push(`${k.requests_per_minute} requests/min`);
    if (k.budget_usd) parts.push(`$${k.budget_usd}/month`);
    if (k.budget_tokens) parts.push(`${k.budget_tokens.toLocaleString("en")} tokens/month`);
    return parts.join(", ") || "none";
  }

  // What a key used against each of its limits: a figure, and a bar where there is a limit.
  function used(label, value, limit, shown) {
    const share = limit ? Math.min(1, value / limit) : null;
    const text = shown(value) + (limit ? " of " + shown(limit) : "");
    return h("div", { className: "used", dataset: { used: label } },
      h("span", {}, label + " ", h("b", {}, text)),
      share === null ? null : h("meter", { min: 0, max: 1, value: share, high: 0.8, optimum: 0, title: Math.round(share * 100) + "%" }));
  }

  function keyUsage(k) {
    const u = k.usage || {};
    return h("td", { className: "col-usage" },
      used(u.month + " spend", u.spent_usd || 0, k.budget_usd, (v) => "$" + Number(v).toFixed(2)),
      u.tokens === null || u.tokens === undefined ? null : used(u.month + " tokens", u.tokens, k.budget_tokens, (v) => v.toLocaleString("en")),
      u.turns_last_minute === null || u.turns_last_minute === undefined ? null
        : used("last minute", u.turns_last_minute, k.requests_per_minute, (v) => v + " turns"));
  }

  async function keysPage() {
    const listed = await api("/keys");
    show(h("h1", {}, "Managed keys"), h("div", { className: "table-wrap" }, h("table", { id: "keys" },
      h("thead", {}, h("tr", {}, ["Id", "Name", "Project", "Created", "Last used", "Revoked", "Limits", "Used"].map((t) => h("th", {}, t)))),
      h("tbody", {}, listed.data.length ? listed.data.map((k) => h("tr", {},
        h("td", {}, k.id), h("td", {}, k.name || "-"), h("td", {}, k.project), h("td", {}, when(k.created_at)),
        h("td", {}, when(k.last_used_at)), h("td", {}, k.revoked_at ? when(k.revoked_at) : "no"),
        h("td", {}, limits(k)), keyUsage(k))) :
        h("tr", {}, h("td", { colSpan: 8, className: "muted" }, "No managed keys."))))));
  }

  async function conversationsPage(params) {
    const project = params.get("project");
    const body = h("tbody", {});
    const more = h("button", { type: "button", id: "older", hidden: true }, "More conversations");
    show(h("h1", {}, "Conversations"),
      h("p", { className: "muted" }, "The Responses API's conversations (/v1/conversations), oldest first in each project."),
      h("div", { className: "table-wrap" }, h("table", { id: "conversations", className: "fit" },
        h("thead", {}, h("tr", {}, [["conversation", "Conversation"], ["project", "Project"], ["created", "Created (UTC)"],
          ["created", "Changed (UTC)"], ["metadata", "Metadata"]].map(([name, title]) => h("th", { className: "col-" + name }, title)))),
        body)),
      h("div", { className: "pager" }, more));
    let cursor = null;
    async function load() {
      const page = await api("/conversations" + query({ project, cursor, limit: 50 }));
      for (const c of page.data) {
        const metadata = JSON.stringify(c.metadata);
        body.append(h("tr", {},
          h("td", { className: "col-conversation", title: c.id },
            link(c.id, "#/conversation/" + encodeURIComponent(c.id) + "?project=" + encodeURIComponent(c.project))),
          h("td", { className: "col-project", title: c.project }, c.project),
          h("td", { className: "col-created" }, when(c.created_at)),
          h("td", { className: "col-created" }, when(c.updated_at)),
          h("td", { className: "col-metadata", title: metadata }, metadata)));
      }
      if (!page.data.length && !cursor) body.append(h("tr", {}, h("td", { colSpan: 5, className: "muted" }, "No conversations.")));
      cursor = page.next_cursor;
      more.hidden = !page.has_more;
    }
    more.addEventListener("click", () => load().catch(failed));
    await load();
  }

  function loginPage(message) {
    const input = h("input", { id: "login-key", type: "password", autocomplete: "off", required: true });
    const form = h("form", { className: "login", id: "login" },
      h("h1", {}, "Log in"),
      h("p", { className: "muted" }, "This gateway asks for an API key. The admin key sees every project; a project key its own."),
      message ? h("p", { className: "error" }, message) : null,
      h("label", {}, "API key", input),
      h("button", { type: "submit" }, "Log in"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await api("/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ key: input.value }) });
        me = null;
        route();
      } catch (error) {
        loginPage(error.message);
      }
    });
    show(form);
    input.focus();
  }

  function failed(error) {
    if (error instanceof Failure && error.status === 401) return loginPage();
    show(h("h1", {}, error.status === 404 ? "Not found" : "Something went wrong"), h("p", { className: "error", id: "failure" }, error.message));
  }

  // -- routing ---------------------------------------------------------------------------
  async function whoami() {
    if (me) return me;
    me = await api("/whoami");
    document.getElementById("who").textContent = me.admin ? "admin" : "project " + me.project;
    document.getElementById("nav-keys").hidden = !me.admin;
    document.getElementById("logout").hidden = me.auth !== "keys";
    return me;
  }

  async function route() {
    const hash = location.hash.slice(1) || "/";
    const [path, search] = hash.split("?");
    const params = new URLSearchParams(search || "");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    try {
      await whoami();
      if (parts[0] === "turn" && parts[1]) await chainPage(parts[1], params);
      else if (parts[0] === "conversation" && parts[1]) await conversationPage(parts[1], params);
      else if (parts[0] === "conversations") await conversationsPage(params);
      else if (parts[0] === "store" && parts[1]) await storeMessagesPage(parts[1], params);
      else if (parts[0] === "store") await storePage();
      else if (parts[0] === "usage") await usagePage(params);
      else if (parts[0] === "keys") await keysPage();
      else await turnsPage(params);
    } catch (error) {
      failed(error);
    }
  }

  document.getElementById("search").addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = document.getElementById("search-q").value.trim();
    if (!q) return;
    try {
      const found = await api("/search" + query({ q }));
      const project = "?project=" + encodeURIComponent(found.project);
      if (found.kind === "response") location.hash = "#/turn/" + encodeURIComponent(found.id) + project;
      else if (found.kind === "conversation") location.hash = "#/conversation/" + encodeURIComponent(found.id) + project;
      else location.hash = "#/store/" + encodeURIComponent(found.id) + project;
    } catch (error) {
      failed(error);
    }
  });
  document.getElementById("logout").addEventListener("click", async () => {
    await api("/logout", { method: "POST" }).catch(() => null);
    me = null;
    document.getElementById("who").textContent = "";
    loginPage();
  });
  window.addEventListener("hashchange", route);
  route();
})();
