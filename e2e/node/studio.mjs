// End-to-end test of Talon Studio in a real browser: Debian's Chromium
// driven by playwright-core. Run by TestStudioInChromium (../studio_test.go)
// against a fresh `talon serve`; by hand:
//
//	STUDIO_URL=http://127.0.0.1:PORT STUDIO_ADMIN_TOKEN=… STUDIO_SCREENSHOTS=/tmp/shots node studio.mjs
//
// It walks Studio as a person would — sign-in, tenants and the employee
// library, a tenant's own sign-in, the sandbox repair notice, creating an
// agent with the keyboard only, execution roles and the tool table, chat
// with the offline inspect model and an approval card answered from the
// keyboard, /compact and its divider, sessions, a cron job added, run
// and disabled on the Automations page, and every main page at phone
// width — and saves a full-page screenshot of each page it visits
// (NN-step.png). Any failed expectation, page error or console error ends
// it with exit status 1 and a message saying what was expected; on success
// it prints a JSON report ({agent, tenant, job, steps, screenshots}) on stdout.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const chromiumPath = "/usr/bin/chromium"; // Debian's package chromium
const timeout = 30_000; // for each wait; nothing asserts on how long a step takes
const outcomeTimeout = 60_000; // an approved command's outcome reaching the transcript

const base = need("STUDIO_URL").replace(/\/$/, "");
const adminToken = need("STUDIO_ADMIN_TOKEN");
const shotDir = need("STUDIO_SCREENSHOTS");
const tenant = process.env.STUDIO_TENANT || "studio-e2e";
const agentName = "Studio Tester";
const agent = "studio-tester"; // the id Studio makes from agentName

const report = {
  agent,
  tenant,
  // The cron job added on the Automations page; its id is learnt there.
  job: { id: "", name: "Overnight tickets", message: "Summarise the overnight tickets." },
  steps: [],
  screenshots: [],
};
let step = ""; // the step running, named in failure messages
let shotN = 0;
let lastPage = null; // the page a failure's screenshot shows

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`studio.mjs: environment variable ${name} is not set`);
    process.exit(2);
  }
  return v;
}

// ExpectationError is a failed expectation: its message is the report.
class ExpectationError extends Error {}

function fail(msg) {
  throw new ExpectationError(`step "${step}": ${msg}`);
}

function expect(cond, msg) {
  if (!cond) fail(msg);
}

// waitFor waits for what (a description) to become true: fn is polled in
// the page until it returns a truthy value.
async function waitFor(page, what, fn, arg, ms = timeout) {
  try {
    return await page.waitForFunction(fn, arg, { timeout: ms, polling: 100 });
  } catch (err) {
    fail(`waited ${ms / 1000} s for ${what} on ${page.url()}: ${err.message.split("\n")[0]}`);
  }
}

// visible waits for locator to be visible and returns it.
async function visible(locator, what) {
  try {
    await locator.first().waitFor({ state: "visible", timeout });
  } catch {
    fail(`expected ${what} on ${locator.page().url()}; not visible after ${timeout / 1000} s`);
  }
  return locator.first();
}

async function text(locator, what) {
  return (await (await visible(locator, what)).innerText()).trim();
}

function begin(name, page) {
  step = name;
  lastPage = page;
  report.steps.push(name);
  console.error(`studio.mjs: ${name}`);
}

// shot saves a full-page screenshot named NN-name.png.
async function shot(page, name) {
  shotN++;
  const file = `${String(shotN).padStart(2, "0")}-${name}.png`;
  await page.screenshot({ path: join(shotDir, file), fullPage: true });
  report.screenshots.push(file);
}

// watch collects a page's script errors, console errors and 5xx answers.
// A console error for a status the step expects (a 401 sign-in, a 403
// page) is allowed by listing the path in expectedStatus.
const problems = [];
const expectedStatus = new Map(); // path → status
function watch(page, who) {
  page.on("pageerror", (err) => problems.push(`${who}: page error on ${page.url()} (step "${step}"): ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    const at = msg.location().url || page.url();
    // Chromium asks every site for /favicon.ico; Studio has none.
    if (new URL(at, base).pathname === "/favicon.ico") return;
    const m = /status of (\d+)/.exec(msg.text());
    if (m && expectedStatus.get(new URL(at, base).pathname) === Number(m[1])) return;
    problems.push(`${who}: console error on ${at} (step "${step}"): ${msg.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 500) problems.push(`${who}: ${r.status()} from ${r.request().method()} ${r.url()} (step "${step}")`);
  });
}

function checkProblems() {
  if (problems.length === 0) return;
  const all = problems.splice(0);
  fail(`the browser reported problems:\n  ${all.join("\n  ")}`);
}

// goto opens path and checks the answer's status.
async function goto(page, path, status = 200) {
  const r = await page.goto(base + path);
  expect(r && r.status() === status, `GET ${path} answered ${r?.status()}, want ${status}`);
}

// submitted clicks button and waits for the page its form leads to.
async function submitted(page, button, what) {
  await visible(button, what);
  await Promise.all([page.waitForEvent("load", { timeout }), button.click()]);
}

function pathOf(page) {
  const u = new URL(page.url());
  return u.pathname + u.search;
}

async function signIn(page, token, tenantID = "") {
  await goto(page, "/signin");
  await page.fill("#token", token);
  if (tenantID) await page.fill("#tenant", tenantID);
  await submitted(page, page.getByRole("button", { name: "Sign in" }), "the Sign in button");
}

// toolRow is the tool table's row for name: its class and cell texts.
async function toolRow(page, name) {
  const row = await visible(page.locator(`#tools-table tr[data-tool="${name}"]`), `the tool table's row for ${name}`);
  return {
    cls: (await row.getAttribute("class")) || "",
    cells: (await row.locator("th, td").allInnerTexts()).map((s) => s.trim()),
  };
}

async function applyRole(page, id) {
  await page.check(`#role-${id}`);
  await submitted(page, page.getByRole("button", { name: "Apply role" }), "the Apply role button");
  expect(pathOf(page).startsWith(`/agents/${agent}`), `applying role ${id} led to ${pathOf(page)}, want the agent page`);
  const err = page.locator("p.error");
  if ((await err.count()) > 0) fail(`applying role ${id} failed: ${await err.first().innerText()}`);
}

// pageFits checks, at the current viewport, that the page does not scroll
// sideways and that every visible form control has a label.
async function pageFits(page, path) {
  const { scrollWidth, innerWidth, unlabelled, wide } = await page.evaluate(() => {
    // wide names the innermost elements that reach past the viewport.
    const wide = [];
    for (const el of document.body.querySelectorAll("*")) {
      if (el.getBoundingClientRect().right <= window.innerWidth + 1) continue;
      if ([...el.children].some((c) => c.getBoundingClientRect().right > window.innerWidth + 1)) continue;
      if (wide.length < 5) wide.push(`${el.outerHTML.slice(0, 100)} (right edge ${Math.round(el.getBoundingClientRect().right)} px)`);
    }
    const unlabelled = [];
    for (const el of document.querySelectorAll("input, select, textarea")) {
      if (el.type === "hidden" || el.offsetParent === null) continue;
      if (el.labels.length === 0 && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby")) {
        unlabelled.push(el.outerHTML.slice(0, 120));
      }
    }
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, unlabelled, wide };
  });
  expect(scrollWidth <= innerWidth + 1, `${path} scrolls sideways at ${innerWidth} px: the page is ${scrollWidth} px wide; reaching past the edge: ${wide.join(", ") || "(no element's box)"}`);
  expect(unlabelled.length === 0, `${path} has form controls without a label: ${unlabelled.join(", ")}`);
}

async function main() {
  mkdirSync(shotDir, { recursive: true });
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    await run(browser);
  } catch (err) {
    if (lastPage && !lastPage.isClosed()) {
      await lastPage.screenshot({ path: join(shotDir, "FAIL.png"), fullPage: true }).catch(() => {});
      report.screenshots.push("FAIL.png");
    }
    throw err;
  } finally {
    await browser.close();
  }
}

async function run(browser) {
  const admin = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  admin.setDefaultTimeout(timeout);
  const page = await admin.newPage();
  watch(page, "admin");

  begin("a wrong token is refused on the sign-in page", page);
  expectedStatus.set("/signin", 401);
  await signIn(page, "not-the-admin-token");
  expect(new URL(page.url()).pathname === "/signin", `a wrong token led to ${pathOf(page)}, want to stay on /signin`);
  const signinErr = await text(page.locator('p.error[role="alert"]'), "an error (p.error, role=alert) after a wrong token");
  expect(signinErr !== "", "the sign-in error is empty");
  await shot(page, "signin-refused");
  expectedStatus.delete("/signin");

  begin("the admin token signs in to the tenants page", page);
  await signIn(page, adminToken);
  expect(pathOf(page) === "/tenants", `the admin token led to ${pathOf(page)}, want /tenants`);
  await shot(page, "tenants");

  begin(`create tenant ${tenant}`, page);
  await page.fill("#tenant-id", tenant);
  await page.fill("#tenant-name", "Studio E2E");
  await submitted(page, page.getByRole("button", { name: "Create tenant" }), "the Create tenant button");
  const tenantToken = await text(page.locator("#new-token"), "the new tenant's one-time token (#new-token)");
  expect(tenantToken.length >= 16, `the tenant token ${JSON.stringify(tenantToken)} is too short`);
  await visible(page.locator(`li.tenant[data-tenant="${tenant}"]`), `tenant ${tenant} in the list`);
  await shot(page, "tenant-created");

  const tenantItem = page.locator(`li.tenant[data-tenant="${tenant}"]`);
  const installed = (slug) => tenantItem.locator(":scope > ul > li").filter({ hasText: slug });
  for (const slug of ["researcher", "coder"]) {
    begin(`install ${slug} for ${tenant}`, page);
    await page.selectOption(`select#install-${tenant}`, slug);
    await submitted(page, tenantItem.getByRole("button", { name: "Install", exact: true }), `the Install button of ${tenant}`);
    const err = page.locator("p.error");
    if ((await err.count()) > 0) fail(`installing ${slug} failed: ${await err.first().innerText()}`);
    await visible(installed(slug), `${slug} listed under tenant ${tenant}`);
  }
  await shot(page, "installed");

  begin("preview a sync of researcher, then apply it", page);
  await submitted(page, page.locator('li[data-slug="researcher"]').getByRole("button", { name: "Preview a sync of researcher" }), "researcher's Sync: preview changes button");
  const preview = await text(page.locator("#sync-result"), "the dry-run diff (#sync-result)");
  expect(preview.includes("What a sync of researcher would change"), `#sync-result does not say it is a preview: ${preview}`);
  expect(preview.includes(`Tenant ${tenant}`), `the sync preview does not name tenant ${tenant}: ${preview}`);
  await shot(page, "sync-preview");
  await submitted(page, page.locator("#sync-result").getByRole("button", { name: "Apply this sync" }), "the Apply this sync button");
  const applied = await text(page.locator("#sync-result"), "the sync's outcome (#sync-result)");
  expect(applied.includes("Sync of researcher") && !applied.includes("would change"), `after Apply this sync, #sync-result reads: ${applied}`);
  expect((await page.locator("#sync-result p.error").count()) === 0, `the sync reports an error: ${applied}`);
  await shot(page, "sync-applied");

  begin(`uninstall coder from ${tenant}`, page);
  await submitted(page, page.getByRole("button", { name: `Uninstall coder from ${tenant}` }), "coder's Uninstall button");
  await visible(installed("researcher"), `researcher still listed under ${tenant}`);
  expect((await installed("coder").count()) === 0, `coder is still listed under ${tenant} after Uninstall`);
  await shot(page, "uninstalled");

  begin(`the tenant's own token signs in to ${tenant}'s agents`, page);
  const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  other.setDefaultTimeout(timeout);
  const tpage = await other.newPage();
  watch(tpage, "tenant");
  lastPage = tpage;
  await signIn(tpage, tenantToken, tenant);
  expect(pathOf(tpage) === `/t/${tenant}/agents`, `the tenant token led to ${pathOf(tpage)}, want /t/${tenant}/agents`);
  await visible(tpage.locator("ul.agents li.agent-row").filter({ hasText: "researcher" }), `the installed researcher in ${tenant}'s agents`);
  await shot(tpage, "tenant-agents");

  begin("a tenant's token may not open /tenants", tpage);
  expectedStatus.set("/tenants", 403);
  await goto(tpage, "/tenants", 403);
  await text(tpage.locator("p.error"), "the refusal (p.error) on /tenants");
  await shot(tpage, "tenant-refused");
  expectedStatus.delete("/tenants");
  await other.close();

  begin("the agents page tells what the sandbox repair changed", page);
  await goto(page, "/agents");
  const notices = (await page.locator('p.notice[role="status"]').allInnerTexts()).join("\n");
  expect(notices.includes('"boxed"') && notices.includes('["*"]'), `no repair notice naming agent "boxed" and ["*"]; notices: ${notices || "(none)"}`);
  await shot(page, "agents-repaired");

  begin("create an agent with the keyboard only", page);
  await page.focus("#agent-name");
  await page.keyboard.type(agentName);
  const focused = () => page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent.trim());
  await page.keyboard.press("Tab");
  expect((await focused()) === "avatar-seed", `Tab from the name went to ${await focused()}, want #avatar-seed`);
  await page.keyboard.press("Tab");
  expect((await focused()) === "shuffle-seed", `Tab from the seed went to ${await focused()}, want #shuffle-seed`);
  await page.keyboard.press("Enter");
  await waitFor(page, "Shuffle to fill the avatar seed", () => /^[A-Za-z0-9_-]{1,64}$/.test(document.getElementById("avatar-seed").value));
  await page.keyboard.press("Tab");
  expect((await focused()) === "Create agent", `Tab from Shuffle went to ${await focused()}, want the Create agent button`);
  await Promise.all([page.waitForURL(`**/agents/${agent}?created=1`, { timeout }), page.keyboard.press("Enter")]);
  await text(page.locator("p.notice").filter({ hasText: `Agent ${agent} created` }), "the created notice");
  const first = await toolRow(page, "exec");
  expect(/\b(ok|removed)\b/.test(first.cls), `the exec row's class is ${JSON.stringify(first.cls)}, want ok or removed`);
  if (first.cls.includes("removed")) {
    expect(first.cells[2] && first.cells[3] && first.cells[4], `the removed exec row lacks its layer, key or fix: ${JSON.stringify(first.cells)}`);
  }
  await shot(page, "agent-created");

  begin("the Conservative role removes exec, naming layer, key and fix", page);
  await applyRole(page, "conservative");
  const denied = await toolRow(page, "exec");
  expect(denied.cls.includes("removed"), `after Conservative the exec row is ${JSON.stringify(denied.cls)}, want removed`);
  expect(denied.cells[2] !== "", `the removed exec row names no layer: ${JSON.stringify(denied.cells)}`);
  expect(denied.cells[3].includes("tools.deny"), `the removed exec row's key is ${JSON.stringify(denied.cells[3])}, want one with tools.deny`);
  expect(denied.cells[4].includes("group:runtime"), `the removed exec row's fix is ${JSON.stringify(denied.cells[4])}, want one mentioning group:runtime`);
  await shot(page, "agent-conservative");

  begin("the Collaborative role gives exec back", page);
  await applyRole(page, "collaborative");
  const allowed = await toolRow(page, "exec");
  expect(allowed.cls.includes("ok"), `after Collaborative the exec row is ${JSON.stringify(allowed.cls)}, want ok`);
  const changes = await page.locator('div.notice[role="status"] li').allInnerTexts();
  expect(changes.length === 3, `the role notice lists ${changes.length} changes, want 3: ${JSON.stringify(changes)}`);
  await shot(page, "agent-collaborative");

  begin("chat: /tools lists the agent's tools", page);
  await goto(page, `/agents/${agent}/chat`);
  await page.fill("#message", "/tools");
  await page.click("#send");
  await visible(page.locator("#transcript li.msg-assistant").filter({ hasText: /^exec$/m }), "the inspect model's reply listing exec");
  await shot(page, "chat-tools");

  begin("chat: a command waits for approval and is allowed from the keyboard", page);
  await page.fill("#message", '/call exec {"command":"echo studio-ok"}');
  await page.click("#send");
  const card = await visible(page.locator("#approvals article.approval").filter({ hasText: "echo studio-ok" }), "an approval card for echo studio-ok");
  const cardID = await card.getAttribute("data-approval");
  await shot(page, "chat-approval");
  await card.getByRole("button", { name: "Allow once" }).focus();
  await page.keyboard.press("Enter");
  await visible(page.locator(`#approval-${cardID}.approval.answered[data-decision="allow-once"]`), "the card answered allow-once");
  await waitFor(
    page,
    "the command's outcome (li.msg-system with studio-ok) in the transcript",
    () => [...document.querySelectorAll("#transcript li.msg-system")].some((li) => li.textContent.includes("studio-ok")),
    undefined,
    outcomeTimeout,
  );
  await shot(page, "chat-approved");

  begin("chat: /compact answers with the sizes and leaves a divider in the history", page);
  // Enough text that the 20,000 most recent tokens kept verbatim leave
  // older turns to summarise (the inspect model writes the summary).
  for (let i = 0; i < 3; i++) {
    await page.fill("#message", `Long notes ${i}: ` + "the quarterly plan and its numbers. ".repeat(1000));
    await page.click("#send");
    await waitFor(
      page,
      `long message ${i} answered and in the history`,
      (m) => document.querySelector("#live").children.length === 0 && !document.querySelector("#send").disabled && [...document.querySelectorAll("#transcript li.msg-user")].some((li) => li.textContent.includes(m)),
      `Long notes ${i}:`,
    );
  }
  await page.fill("#message", "/compact");
  await page.click("#send");
  await visible(page.locator("#transcript li.notice").filter({ hasText: /Compacted \(/ }), "the /compact answer (⚙️ Compacted (…))");
  await shot(page, "chat-compacted");
  await goto(page, `/agents/${agent}/chat`);
  const divider = await text(page.locator('#transcript li.divider[role="separator"]'), "the compaction divider in the history");
  expect(/summarised/.test(divider), `the divider says ${JSON.stringify(divider)}, want it to say the earlier messages are summarised`);
  const above = await page.locator("#transcript li.divider ~ li.msg-user").count();
  const all = await page.locator("#transcript li.msg-user").count();
  expect(all - above >= 3, `${all - above} user messages above the divider, want the long ones still shown`);

  begin("the sessions page lists the main session", page);
  await goto(page, `/agents/${agent}/sessions`);
  await visible(page.locator("table").getByText(`agent:${agent}:main`), `session agent:${agent}:main`);
  await shot(page, "sessions");

  await automations(page);

  for (const [name, path] of [
    ["tenants", "/tenants"],
    ["agents", "/agents"],
    ["agent", `/agents/${agent}`],
    ["chat", `/agents/${agent}/chat`],
    ["automations", `/agents/${agent}/automations`],
  ]) {
    begin(`${path} at phone width: no sideways scrolling, every control labelled`, page);
    await page.setViewportSize({ width: 390, height: 844 });
    await goto(page, path);
    await pageFits(page, path);
    await shot(page, `phone-${name}`);
  }

  begin("no page or console errors", page);
  checkProblems();
}

// automations walks the agent's Automations page: a job added with the
// form, listed with its next run, run now until its history shows the
// run (the inspect model answers offline), and disabled. The job goes in
// the report for the Go test to find through the gateway.
async function automations(page) {
  const path = `/agents/${agent}/automations`;
  const notice = async (want) => {
    const errs = await page.locator("p.error").allInnerTexts();
    expect(errs.length === 0, `the page reports an error: ${errs.join(" ")}`);
    const got = await text(page.locator('p.notice[role="status"]'), `the notice "${want}"`);
    expect(got.startsWith(want), `the notice reads ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  };

  begin("automations: the agent page links to the agent's Automations page", page);
  await goto(page, `/agents/${agent}`);
  await submitted(page, page.locator(`main a[href$="${path}"]`), "the agent page's Automations link");
  expect(pathOf(page) === path, `the Automations link led to ${pathOf(page)}, want ${path}`);
  await text(page.locator("td").filter({ hasText: "No cron job runs" }), "the empty job list");

  begin("automations: add an every job with an agent message through the form", page);
  await page.locator("summary").filter({ hasText: "Add a job for" }).click();
  await page.fill("#name-add", report.job.name);
  await page.check("#kind-every-add");
  await page.fill("#every-add", "1h");
  await page.check("#payload-agent");
  await page.fill("#text-add", report.job.message);
  await page.check("#deliv-none");
  expect(await page.isChecked("#enabled-add"), "the add form's Enabled box is not checked by default");
  const added = Date.now();
  await submitted(page, page.getByRole("button", { name: "Add job" }), "the Add job button");
  expect(pathOf(page) === `${path}?did=added`, `adding the job led to ${pathOf(page)}, want ${path}?did=added`);
  await notice("Job added.");

  begin("automations: the job is listed with its schedule and next run", page);
  const row = await visible(page.locator('tr[id^="job-"]').filter({ hasText: report.job.name }), `the job row of ${report.job.name}`);
  report.job.id = (await row.getAttribute("id")).slice("job-".length);
  const jobRow = () => page.locator(`tr[id="job-${report.job.id}"]`);
  const cells = async () => (await jobRow().locator("td").allInnerTexts()).map((c) => c.trim());
  let c = await cells();
  expect(c[1] === "every 1h", `the schedule cell reads ${JSON.stringify(c[1])}, want "every 1h"`);
  // Next run: an hour after the add, to the minute the page shows.
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d) UTC$/.exec(c[2]);
  expect(m, `the next-run cell reads ${JSON.stringify(c[2])}, want a time such as 2027-01-01 07:00 UTC`);
  const next = Date.parse(`${m[1]}T${m[2]}:00Z`);
  const hour = 3600_000;
  expect(next > added + hour - 2 * 60_000 && next < Date.now() + hour + 60_000, `the next run ${c[2]} is not an hour after the job was added (${new Date(added).toISOString()})`);
  expect(c[3] === "not run yet" && c[4] === "yes", `the last-run and enabled cells read ${JSON.stringify(c.slice(3, 5))}, want "not run yet" and "yes"`);
  await shot(page, "automations-added");

  begin("automations: run now puts an ok run in the job's history", page);
  await submitted(page, jobRow().getByRole("button", { name: `Run now ${report.job.name}` }), "the job's Run now button");
  await notice("Run started");
  // The run ends in the background: reload until the history has it.
  const history = page.locator(`tr[id="job-${report.job.id}"] + tr ul.runs li`);
  const deadline = Date.now() + outcomeTimeout;
  let runs = [];
  for (;;) {
    runs = (await history.allTextContents()).map((t) => t.trim()).filter((t) => t !== "No run yet.");
    if (runs.length > 0 || Date.now() > deadline) break;
    await page.waitForTimeout(250);
    await goto(page, path);
  }
  expect(runs.length === 1, `the job's history lists ${JSON.stringify(runs)} ${outcomeTimeout / 1000} s after Run now, want one run`);
  expect(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC · \d+ ms · ok: \S/.test(runs[0]), `the run reads ${JSON.stringify(runs[0])}, want "<time> · <n> ms · ok: <the answer's summary>"`);
  c = await cells();
  expect(c[3].startsWith("ok"), `the last-run cell reads ${JSON.stringify(c[3])} after the run, want ok`);
  await page.locator(`tr[id="job-${report.job.id}"] + tr summary`).filter({ hasText: "History of" }).click();
  await visible(history.filter({ hasText: " · ok" }), "the run in the opened history");
  await shot(page, "automations-ran");

  begin("automations: disable the job", page);
  await submitted(page, jobRow().getByRole("button", { name: `Disable ${report.job.name}` }), "the job's Disable button");
  await notice("Job disabled");
  c = await cells();
  expect(c[2] === "none" && c[4] === "disabled", `the next-run and enabled cells read ${JSON.stringify([c[2], c[4]])}, want "none" and "disabled"`);
  await visible(jobRow().getByRole("button", { name: `Enable ${report.job.name}` }), "the job's Enable button");
  await shot(page, "automations-disabled");
}

try {
  await main();
  checkProblems();
  process.stdout.write(JSON.stringify(report) + "\n");
} catch (err) {
  if (err instanceof ExpectationError) {
    console.error(`studio.mjs: FAIL ${err.message}`);
  } else {
    console.error(`studio.mjs: FAIL step "${step}": ${err.stack || err}`);
  }
  if (problems.length > 0) console.error(`studio.mjs: the browser also reported:\n  ${problems.join("\n  ")}`);
  console.error(`studio.mjs: screenshots so far in ${shotDir}: ${report.screenshots.join(" ")}`);
  process.exit(1);
}
