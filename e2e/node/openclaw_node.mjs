// Drives a running `talon serve` over its WebSocket control plane with the
// npm package openclaw-node (a client nobody here wrote), the way an
// application would, and prints what it saw as one JSON object on stdout.
// The Go test in ../openclaw_node_test.go starts the server, runs this
// script and asserts on its output; this script asserts nothing itself.
//
//   node openclaw_node.mjs WS_URL TOKEN
//
// WS_URL is ws://127.0.0.1:PORT. The server must run the offline inspect
// model, answer "/call exec {json}" with an exec call, and ask an approver
// before exec runs (the Go test writes that config). Steps run in order on
// one connection; a step that throws is recorded and the later ones still
// run. Every frame both ways is kept (cut to 600 characters) so that a
// failure can be read off the output. Exit 0 once the steps ran, 2 on bad
// usage.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket as WsWebSocket } from "ws";
import { OpenClawClient } from "openclaw-node";

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error("usage: node openclaw_node.mjs WS_URL TOKEN");
  process.exit(2);
}

// openclaw-node opens its socket with the global WebSocket and checks
// `WebSocket.OPEN` on the global in send(), so on a Node without one (18,
// 20 and 21 without --experimental-websocket) its documented fallback,
// requiring ws, fails on the first send. Giving it ws as the global is what
// makes it run there at all; Node 22+ keeps its own.
const Base = globalThis.WebSocket ?? WsWebSocket;

// The frames both ways, in order, for the failure report.
const frames = [];
const cut = (s) => (s.length > 600 ? s.slice(0, 600) + `…(${s.length} chars)` : s);
globalThis.WebSocket = class extends Base {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (ev) => frames.push({ dir: "in", frame: cut(String(ev.data)) }));
    this.addEventListener("close", (ev) => frames.push({ dir: "close", frame: `${ev.code} ${ev.reason}` }));
  }
  send(data) {
    frames.push({ dir: "out", frame: cut(String(data)) });
    return super.send(data);
  }
};

// The client keeps an ed25519 device identity in a file (default under
// $HOME/.openclaw); a scratch one per run keeps the machine clean.
const scratch = mkdtempSync(join(tmpdir(), "talon-openclaw-node-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));

// within fails a step that the server leaves unanswered (openclaw-node's
// chat() has no timeout of its own).
function within(ms, what, p) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000}s: ${what}`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// collect runs one chat() stream to its end and returns its chunks.
async function collect(client, message, opts) {
  const chunks = [];
  try {
    await within(30_000, `chat stream of ${JSON.stringify(message)}`, (async () => {
      for await (const c of client.chat(message, opts)) chunks.push({ type: c.type, text: c.text, runId: c.runId });
    })());
  } catch (err) {
    err.partial = chunks;
    throw err;
  }
  return chunks;
}

// textOf is a transcript message's content as text.
function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((p) => p?.type === "text").map((p) => p.text).join("\n");
}

// finished tells the system event of an approved command that ran: it
// starts "Exec finished (" (spec §4.5: "Exec finished (gateway id=…,
// session=…, code N)" and the output's tail) and has the marker the
// command echoed as a line of its own. The tool's approval-pending text
// names "Exec finished …" and the command "echo MARKER", which must not
// count.
function finished(text, marker) {
  return text.includes("Exec finished (") && text.split("\n").some((l) => l.trim() === marker);
}

// cases are the steps' outcomes, shaped like client.mjs's cases.
const cases = {};
async function step(name, fn) {
  try {
    cases[name] = { ok: true, result: await fn() };
  } catch (err) {
    cases[name] = { ok: false, error: String(err?.message ?? err), stack: err?.stack ?? "", partial: err?.partial ?? null };
  }
}

const pkg = JSON.parse(readFileSync(new URL("./node_modules/openclaw-node/package.json", import.meta.url)));
const events = []; // every event the client emitted, with its payload
const client = new OpenClawClient({
  url,
  token,
  autoReconnect: false,
  deviceIdentityPath: join(scratch, "device.json"),
  // The default is read and write; approval events go only to approvers.
  scopes: ["operator.read", "operator.write", "operator.approvals"],
});
client.on("error", (err) => events.push({ event: "client-error", payload: String(err?.message ?? err) }));
client.on("event", (ev) => events.push({ event: ev.event, payload: ev.payload ?? null }));

await step("connect", async () => {
  const hello = await within(10_000, "connect (hello-ok)", client.connect());
  return {
    type: hello.type,
    protocol: hello.protocol,
    server: hello.server ?? null,
    methods: hello.features?.methods ?? null,
    events: hello.features?.events ?? null,
    auth: hello.auth ?? null,
    policy: hello.policy ?? null,
    isConnected: client.isConnected,
  };
});

if (cases.connect.ok) {
  await step("health", () => within(10_000, "health", client.health()));

  await step("config.get", async () => {
    const c = await within(10_000, "config.get", client.config.get());
    return { keys: Object.keys(c ?? {}), hash: c?.hash ?? null, config: c?.config ?? null, raw: typeof c?.raw };
  });

  await step("sessions.list", () => within(10_000, "sessions.list", client.sessions.list({ limit: 50 })));

  const chatKey = "agent:main:e2e-openclaw-node";
  await step("chat", () => collect(client, "hello from openclaw-node", { sessionKey: chatKey }));
  await step("chat.history", () => within(10_000, "chat.history", client.sessions.history(chatKey)));

  // Exec approval: the inspect model calls exec; the server asks; this
  // client allows it once as soon as it is asked, whether or not the
  // turn is still running, then looks for the outcome in the transcript.
  const approvalKey = "agent:main:e2e-approval";
  const marker = `talon-e2e-approved-${process.pid}`;
  const command = `echo ${marker}`;
  let requested = null;
  let resolveResult = null;
  let resolvedEvent = null;
  let onResolved;
  const resolved = new Promise((r) => (onResolved = r));
  client.on("event", (ev) => {
    if (ev.event === "exec.approval.requested" && !requested) {
      requested = ev.payload ?? null;
      client
        .request("exec.approval.resolve", { id: requested?.id, decision: "allow-once" })
        .then((res) => (resolveResult = { ok: true, payload: res.payload ?? null }))
        .catch((err) => (resolveResult = { ok: false, error: String(err?.message ?? err) }));
    }
    if (ev.event === "exec.approval.resolved") {
      resolvedEvent = ev.payload ?? null;
      onResolved();
    }
  });
  await step("approval.chat", () =>
    collect(client, `/call exec ${JSON.stringify({ command })}`, { sessionKey: approvalKey }));
  await step("approval.resolved", async () => {
    // A turn that failed asked nobody: do not wait for it.
    const turn = cases["approval.chat"];
    if (!requested && (!turn.ok || turn.result.some((c) => c.type === "error"))) {
      throw new Error("no exec.approval.requested, and the turn failed");
    }
    await within(20_000, "exec.approval.resolved event", resolved);
    // The gateway broadcasts the resolved event before it answers the
    // resolve request: wait for the answer too.
    await within(20_000, "exec.approval.resolve's answer", (async () => {
      while (!resolveResult) await new Promise((r) => setTimeout(r, 10));
    })());
    return { requested, resolveResult, resolvedEvent };
  });
  await step("approval.history", async () => {
    // The command runs after the approval, in the background: wait for
    // its system event to reach the transcript.
    let last = null;
    const deadline = cases["approval.resolved"].ok ? Date.now() + 20_000 : 0; // one look when nothing was approved
    do {
      last = (await within(10_000, "chat.history", client.sessions.history(approvalKey)))?.messages ?? null;
      const event = (last ?? []).find((m) => finished(textOf(m.content), marker));
      if (event) return { marker, found: true, event, messages: last };
      await new Promise((r) => setTimeout(r, 200));
    } while (Date.now() < deadline);
    return { marker, found: false, messages: last };
  });
}

await client.disconnect();

// A wrong token: the connect promise must reject (the server closes the
// socket), not hang.
await step("badToken", async () => {
  const bad = new OpenClawClient({
    url, token: token + "-wrong", autoReconnect: false, deviceIdentityPath: join(scratch, "device-bad.json"),
  });
  const errors = [];
  bad.on("error", (err) => errors.push(String(err?.message ?? err)));
  try {
    await within(10_000, "connect with a wrong token", bad.connect());
    return { connected: true, errors };
  } catch (err) {
    return { connected: false, error: String(err?.message ?? err), errors };
  } finally {
    await bad.disconnect();
  }
});

// Exit only once the report is out: a pipe is written asynchronously, and
// exiting at once would cut a long report short.
process.stdout.write(JSON.stringify({ node: process.version, openclawNode: pkg.version, cases, events, frames }) + "\n", () =>
  process.exit(0));
