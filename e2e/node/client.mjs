// Drives a running `talon serve` with the official openai npm package, the
// way an application would, and prints what it saw as one JSON object on
// stdout. The Go tests in ../openai_test.go start the server, run this
// script and assert on its output; this script asserts nothing itself.
//
//   node client.mjs BASE_URL TOKEN [TENANT_ID TENANT_TOKEN]
//
// BASE_URL is http://127.0.0.1:PORT/v1. The server must run the offline
// inspect model (the default when no model is configured), which answers
// "/tools" with its tool names and "/call TOOL {json}" with that tool call.
// Set E2E_CASES=a,b to run only some cases. Exit 0 once the cases ran (each
// case's failure is in its result), 2 on bad usage.
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, token, tenantID, tenantToken] = process.argv.slice(2);
if (!baseURL || !token) {
  console.error("usage: node client.mjs BASE_URL TOKEN [TENANT_ID TENANT_TOKEN]");
  process.exit(2);
}

// maxRetries 0: a retried request would hide what the server answered first.
const opts = { baseURL, maxRetries: 0, timeout: 15_000 };
const client = new OpenAI({ ...opts, apiKey: token });

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } } },
  },
};

// What a failed call looked like to the SDK.
function describeError(err) {
  return {
    class: err?.constructor?.name,
    authentication: err instanceof OpenAI.AuthenticationError,
    badRequest: err instanceof OpenAI.BadRequestError,
    apiError: err instanceof OpenAI.APIError,
    status: err?.status ?? null,
    message: String(err?.message ?? err),
    error: err?.error ?? null,
  };
}

function summary(c) {
  const choice = c.choices?.[0];
  return {
    id: c.id,
    object: c.object,
    model: c.model,
    content: choice?.message?.content ?? null,
    role: choice?.message?.role ?? null,
    tool_calls: choice?.message?.tool_calls ?? null,
    finish_reason: choice?.finish_reason ?? null,
    usage: c.usage ?? null,
  };
}

const cases = {
  // Non-streaming: the agent's tool names, one per line.
  async nonstream() {
    const c = await client.chat.completions.create({
      model: "openclaw/main",
      messages: [{ role: "user", content: "/tools" }],
    });
    return summary(c);
  },

  // Streaming through the SDK's async iterator.
  async stream() {
    const s = await client.chat.completions.create({
      model: "openclaw/main",
      messages: [{ role: "user", content: "/tools" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas = [];
    let role = null, finish = null, usage = null, chunks = 0, object = null;
    const ids = new Set();
    for await (const chunk of s) {
      chunks++;
      object = chunk.object;
      ids.add(chunk.id);
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      if (choice.delta?.role) role = choice.delta.role;
      if (typeof choice.delta?.content === "string") deltas.push(choice.delta.content);
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    return { ended: true, chunks, ids: ids.size, object, role, deltas, content: deltas.join(""), finish_reason: finish, usage };
  },

  // A client tool: the model calls it, the caller runs it and sends the
  // result back, the model answers with it.
  async client_tools() {
    const messages = [{ role: "user", content: '/call get_weather {"city":"Oslo"}' }];
    const first = await client.chat.completions.create({ model: "openclaw/main", messages, tools: [weatherTool] });
    const msg = first.choices[0].message;
    const call = msg.tool_calls?.[0];
    if (!call) return { first: summary(first), second: null };
    const second = await client.chat.completions.create({
      model: "openclaw/main",
      tools: [weatherTool],
      messages: [
        ...messages,
        { role: "assistant", content: msg.content ?? null, tool_calls: msg.tool_calls },
        { role: "tool", tool_call_id: call.id, content: "sunny" },
      ],
    });
    return { first: summary(first), second: summary(second) };
  },

  // The same client tool streamed, accumulated by the SDK's stream helper
  // (which checks that the delta.tool_calls chunks fit together).
  async client_tools_stream() {
    const runner = client.chat.completions.stream({
      model: "openclaw/main",
      messages: [{ role: "user", content: '/call get_weather {"city":"Oslo"}' }],
      tools: [weatherTool],
    });
    return summary(await runner.finalChatCompletion());
  },

  // A gateway tool, run by the server in the agent's workspace; `user`
  // keeps both turns in one session.
  async server_tools() {
    const write = await client.chat.completions.create({
      model: "openclaw/main",
      user: "e2e",
      messages: [{ role: "user", content: '/call write {"path":"hello.txt","content":"hi"}' }],
    });
    const read = await client.chat.completions.create({
      model: "openclaw/main",
      user: "e2e",
      messages: [{ role: "user", content: '/call read {"path":"hello.txt"}' }],
    });
    return { write: summary(write), read: summary(read) };
  },

  async error_auth() {
    const bad = new OpenAI({ ...opts, apiKey: "not-the-token" });
    try {
      const c = await bad.chat.completions.create({ model: "openclaw/main", messages: [{ role: "user", content: "hi" }] });
      return { threw: false, result: summary(c) };
    } catch (err) {
      return { threw: true, ...describeError(err) };
    }
  },

  async error_model() {
    try {
      const c = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] });
      return { threw: false, result: summary(c) };
    } catch (err) {
      return { threw: true, ...describeError(err) };
    }
  },

  async models() {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    return { ids };
  },

  // A tenant, selected with X-Tenant-ID and its own token.
  async tenant() {
    if (!tenantID) return { skipped: "no tenant given" };
    const t = new OpenAI({ ...opts, apiKey: tenantToken, defaultHeaders: { "X-Tenant-ID": tenantID } });
    const c = await t.chat.completions.create({ model: "openclaw/somi", messages: [{ role: "user", content: "/tools" }] });
    const ids = [];
    for await (const m of t.models.list()) ids.push(m.id);
    return { ...summary(c), models: ids };
  },
};

const only = (process.env.E2E_CASES ?? "").split(",").map((s) => s.trim()).filter(Boolean);
const out = {
  node: process.version,
  openai: JSON.parse(readFileSync(new URL("./node_modules/openai/package.json", import.meta.url), "utf8")).version,
  cases: {},
};
for (const [name, run] of Object.entries(cases)) {
  if (only.length && !only.includes(name)) continue;
  try {
    out.cases[name] = { ok: true, result: await run() };
  } catch (err) {
    out.cases[name] = { ok: false, error: describeError(err), stack: err?.stack ?? null };
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
