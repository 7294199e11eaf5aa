// Talon Studio's one script: the chat's streaming (a POST answered with
// server-sent events, read with fetch), approval cards arriving while a
// turn runs, compaction notices, the poll that brings a command's
// outcome after approval, and the avatar seed's Shuffle button.
// Everything else is plain forms, some enhanced by htmx.

const csrf = document.body.dataset.csrf || "";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Shuffle: a random avatar seed.
const shuffle = document.getElementById("shuffle-seed");
if (shuffle) {
  shuffle.addEventListener("click", () => {
    const b = new Uint8Array(6);
    crypto.getRandomValues(b);
    document.getElementById("avatar-seed").value = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  });
}

const chat = document.getElementById("chat");
const form = document.getElementById("chat-form");
if (chat && form) {
  const transcript = document.getElementById("transcript");
  const live = document.getElementById("live");
  const approvals = document.getElementById("approvals");
  const status = document.getElementById("chat-status");
  const input = document.getElementById("message");
  const send = document.getElementById("send");
  let lastSeq = Number(chat.dataset.lastSeq || "0");
  let pollUntil = 0;
  let polling = false;

  // since appends the messages after lastSeq, rendered by the server.
  async function since() {
    const r = await fetch(chat.dataset.since + "&after=" + lastSeq, { headers: { "X-CSRF-Token": csrf } });
    if (!r.ok) return false;
    const html = await r.text();
    lastSeq = Number(r.headers.get("X-Last-Seq") || lastSeq);
    if (html.trim() !== "") {
      transcript.insertAdjacentHTML("beforeend", html);
      transcript.lastElementChild?.scrollIntoView({ block: "nearest" });
      return true;
    }
    return false;
  }

  // poll looks for new messages (an approved command's outcome lands in
  // the session after the turn) until pollUntil.
  async function poll() {
    if (polling) return;
    polling = true;
    try {
      while (Date.now() < pollUntil) {
        await new Promise((res) => setTimeout(res, 1000));
        await since();
      }
    } finally {
      polling = false;
    }
  }
  function watch() {
    pollUntil = Date.now() + 150000;
    poll();
  }
  if (approvals.children.length > 0) watch();
  document.body.addEventListener("htmx:afterSwap", (e) => {
    if (e.target.closest && e.target.closest("#approvals")) watch();
  });

  function addCard(id, html) {
    if (document.getElementById("approval-" + id)) return;
    approvals.insertAdjacentHTML("beforeend", html);
    const card = document.getElementById("approval-" + id);
    if (window.htmx) window.htmx.process(card);
    card.querySelector("button")?.focus();
    watch();
  }
  function cardResolved(a) {
    const card = document.getElementById("approval-" + a.id);
    if (!card || card.classList.contains("answered")) return;
    card.classList.add("answered");
    card.dataset.decision = a.decision || "expired";
    const form = card.querySelector("form");
    if (form) form.remove();
    card.append(el("p", "", a.decision ? "Answered: " + a.decision + "." : "Expired: nobody answered in time, so the command did not run."));
  }

  // notice keeps a line in the transcript that the history does not hold
  // (a chat command's answer).
  function notice(text) {
    transcript.append(el("li", "notice", text));
  }

  async function submit() {
    const text = input.value;
    const command = /^\/(compact|status)(\s|$)/.test(text.trim());
    if (text.trim() === "") {
      status.textContent = "Type a message first.";
      input.focus();
      return;
    }
    send.disabled = true;
    status.textContent = "Sending…";
    const mine = el("li", "msg msg-user");
    mine.append(el("span", "who", "You"), el("div", "text", text));
    live.append(mine);
    const reply = el("li", "msg msg-assistant");
    const replyText = el("div", "text", "");
    reply.append(el("span", "who", "Agent"), replyText);
    live.append(reply);
    input.value = "";
    const body = new URLSearchParams(new FormData(form));
    body.set("message", text);
    let ended = false;
    try {
      const r = await fetch(form.action, { method: "POST", body, headers: { "X-CSRF-Token": csrf } });
      if (!r.ok || !(r.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
        status.textContent = (await r.text()).trim() || "The message was not sent (" + r.status + ").";
        input.value = text;
        live.replaceChildren();
        return;
      }
      status.textContent = "The agent is answering…";
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = "message";
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          const d = data ? JSON.parse(data) : {};
          if (event === "delta") {
            replyText.textContent = d.text;
          } else if (event === "tool") {
            const t = el("li", "msg msg-tool live-tool");
            t.append(el("span", "who", "Tool " + d.name), el("div", "call", d.phase === "start" ? "started" : d.isError ? "failed: " + (d.result || "") : "returned: " + (d.result || "")));
            live.insertBefore(t, reply);
          } else if (event === "compaction") {
            // The history's divider replaces it after the turn.
            live.insertBefore(el("li", "notice", d.text), reply);
          } else if (event === "approval") {
            addCard(d.id, d.html);
          } else if (event === "approval-resolved") {
            cardResolved(d);
          } else if (event === "end") {
            ended = true;
            // A command's answer is not in the history: keep it.
            if (command && d.kind === "final" && d.text) notice(d.text);
            status.textContent = d.kind === "final" ? "" : d.kind === "aborted" ? "The run was aborted." : "The run failed: " + (d.error || "unknown error");
          }
        }
      }
      if (!ended) status.textContent = "The connection ended before the reply; it will be in the history.";
    } catch (err) {
      status.textContent = "The connection failed: " + err.message + ". The reply, if any, will be in the history.";
    } finally {
      send.disabled = false;
      // The server's rendering of the turn replaces the live one.
      await since();
      live.replaceChildren();
      // A command waiting for an answer comes first; else back to typing.
      const waiting = approvals.querySelector("article.approval:not(.answered) button");
      (waiting || input).focus();
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    submit();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (!send.disabled) submit();
    }
  });
}
