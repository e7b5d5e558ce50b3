// End to end in real VS Code: code-server with the .vsix installed, Chromium via playwright-core.
// Open the sidebar, send a message, see the streamed reply with its roles told apart (labels, DOM,
// computed style), a code block copied ("Copied", the clipboard) and inserted at the cursor; Save puts
// a checkpoint in the timeline; reload with a draft typed, change the spec, answer Resume: the draft and
// transcript come back and the banner says "Resumed session · last active … · 1 file changed since" with
// the file's link, its diff against the checkpoint and "What I remember" with the decision turn 1
// recorded. Up recalls the last message; Shift+Enter adds a line, Enter sends; the next reply is aware
// of the earlier turn. Screenshots in the light, dark and high-contrast themes; the banner dismissed
// (the focus to the input). Withdraw a chat waiting behind the running one (back into the input),
// Stop with a chat queued behind ("1 waiting"), a chatRetry redraw, a restore from the timeline behind its confirmation.
// New session keeps the old one byte-identical; search in the view opens it at the turn; the sessions
// list forks and opens, and with more sessions than a page (250 copies) lists the newest 200, says so,
// and shows the older ones on request; Reset Session (delete it)…: the modal asks, Cancel keeps the session, Cancel at
// the server's question is an info, Delete session + Keep files deletes its log. The model's
// write_file is applied in the editor unsaved; Ctrl+S saves it there and no drift is reported
// (the session log has none for it), while a template changed outside VS Code is drift. Set API Key
// reaches the running server: the next model request carries the key, the server is not restarted.
// History of This File on the template the model wrote in two turns: the newest change's diff
// (before ↔ after) opens; its item button restores the version before it, through the editor.
/* global window, getComputedStyle, MutationObserver -- in the callbacks evaluated in the browser */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE);
const ROOT = path.resolve(import.meta.dirname, "..");
const REPO = process.env.AGENT_ASSIST_REPO;
const RESULTS = path.join(ROOT, "test-results");
const FIRST =
  "Streaming reply about **bananas**, sent to the sidebar in small chunks so it can be watched.\n\n" +
  "```python\nprint('banana')\n```\nDone.";
const DECISION = "Keep the banana examples in Python.";
const REPLIES = [
  { tool_calls: [{ name: "record_decision", arguments: { decision: DECISION }, id: "call_0" }] },
  { text: FIRST, chunk: 6, delay: 0.06 },
  { tool_calls: [{ name: "read_file", arguments: { path: "agent_spec.md" }, id: "call_1" }] },
  { text: "Echo: what did I ask before?" },
  { hang: "This reply will be stopped" },
  { text: "Queued answer." },
  { cut: "Half an answer " },
  { text: "The whole answer.", chunk: 5, delay: 0.05 },
];
const GREETING_BEFORE = "Hello {name},\n";
const GREETING = "Dear {name},\nthe assistant wrote this line.\n";
const GREETING_SIGNED = `${GREETING}Kind regards\n`;
REPLIES.push(
  { tool_calls: [{ name: "write_file", arguments: { path: "templates/greeting.md", content: GREETING }, id: "call_2" }] },
  { text: "Greeting updated." },
  // written again in the next turn: the file's history has two changes
  { tool_calls: [{ name: "write_file", arguments: { path: "templates/greeting.md", content: GREETING_SIGNED }, id: "call_3" }] },
  { text: "Greeting signed." },
);

fs.mkdirSync(RESULTS, { recursive: true });
// what an earlier failed run left must not pass for this run's
fs.rmSync(path.join(RESULTS, "vscode-e2e-failure.png"), { force: true });
fs.rmSync(path.join(RESULTS, "user-logs"), { recursive: true, force: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "aa-vscode-e2e-"));
const workspace = path.join(tmp, "project");
const userData = path.join(tmp, "user-data");
const extensions = path.join(tmp, "extensions");
fs.mkdirSync(workspace);
fs.writeFileSync(path.join(workspace, "agent_spec.md"), "# Spec\n");
fs.writeFileSync(path.join(workspace, "notes.py"), "\n");
fs.mkdirSync(path.join(workspace, "templates")); // tracked (trackedFiles: templates/**)
fs.writeFileSync(path.join(workspace, "templates", "greeting.md"), GREETING_BEFORE);
fs.writeFileSync(path.join(workspace, "templates", "signature.md"), "Regards\n");
const step = (text) => console.log(`-- ${text}`);

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startModel() {
  const script = path.join(tmp, "script.json");
  const record = path.join(tmp, "requests.json");
  fs.writeFileSync(script, JSON.stringify(REPLIES));
  const proc = spawn(process.env.AGENT_ASSIST_PYTHON, [path.join(ROOT, "test/fake_model.py"), script, record], {
    env: { ...process.env, PYTHONPATH: REPO },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const baseUrl = await new Promise((resolve, reject) => {
    readline.createInterface({ input: proc.stdout }).once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`fake model exited ${code}`)));
  });
  return { proc, baseUrl, requests: () => (fs.existsSync(record) ? JSON.parse(fs.readFileSync(record, "utf-8")) : []) };
}

async function waitHealthy(port, proc) {
  for (let i = 0; i < 240; i++) {
    if (proc.exitCode !== null) throw new Error(`code-server exited ${proc.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error("code-server did not become healthy");
}

async function poll(what, fn, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

const model = await startModel();
step(`fake model at ${model.baseUrl}`);
fs.mkdirSync(path.join(userData, "User"), { recursive: true });
fs.writeFileSync(
  path.join(userData, "User", "settings.json"),
  JSON.stringify({
    "security.workspace.trust.enabled": false,
    "workbench.startupEditor": "none",
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoUpdate": false,
    "chat.disableAIFeatures": true,
    "workbench.tips.enabled": false,
    // as desktop VS Code (the web's default saves after a second): the model's edits stay unsaved
    "files.autoSave": "off",
    "agentAssist.server.command": [process.env.AGENT_ASSIST_SERVER, "serve"],
    "agentAssist.model.name": "fake-model",
    "agentAssist.model.baseUrl": model.baseUrl,
  }),
);
const codeServer = process.env.CODE_SERVER;
const common = ["--user-data-dir", userData, "--extensions-dir", extensions];
const install = spawnSync(codeServer, ["--install-extension", path.join(ROOT, "agent-assist.vsix"), ...common], { encoding: "utf-8" });
if (install.status !== 0) throw new Error(`install failed: ${install.stdout}${install.stderr}`);
step("extension installed");

const port = await freePort();
const log = fs.openSync(path.join(RESULTS, "code-server.log"), "w");
const server = spawn(
  codeServer,
  ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check",
   "--disable-workspace-trust", ...common, workspace],
  { detached: true, stdio: ["ignore", log, log], env: { ...process.env, AGENT_ASSIST_HOME: path.join(tmp, "home") } },
);
let context;
let page;
let ok = false;
try {
  await waitHealthy(port, server);
  step(`code-server on ${port}`);
  context = await chromium.launchPersistentContext(path.join(tmp, "chromium-profile"), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height: 900 },
    permissions: ["clipboard-read", "clipboard-write"], // Copy goes through VS Code to the browser's clipboard
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });

  const activity = page.locator('.activitybar a[aria-label^="Agent Assist"]');
  const view = () => page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  async function openSidebar() {
    await activity.waitFor({ timeout: 30_000 });
    const checked = await activity.evaluate((a) => a.closest("li")?.classList.contains("checked") ?? false);
    if (!checked) await activity.click();
    await view().locator("#input").waitFor({ timeout: 30_000 });
  }
  async function assistantTexts() {
    return view().locator(".item.assistant .item-body").allTextContents();
  }
  const userTexts = () => view().locator(".item.user .item-body").allTextContents();
  const notice = (text) => page.locator(".notifications-toasts .notification-toast", { hasText: text }).last();
  const titleAction = (label) => page.locator(`.part.sidebar .title-actions a.action-label[aria-label^="${label}"]`);
  async function runCommand(title) {
    await page.locator(".part.statusbar").click({ position: { x: 5, y: 5 } });
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget .quick-input-box input");
    await input.waitFor({ timeout: 10_000 });
    await input.fill(`>${title}`);
    const item = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
    await item.waitFor({ timeout: 10_000 });
    await item.click();
  }
  async function quickOpen(file) {
    await page.locator(".part.statusbar").click({ position: { x: 5, y: 5 } });
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget .quick-input-box input");
    await input.waitFor({ timeout: 10_000 });
    await input.fill(file);
    const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: file }).first();
    await row.waitFor({ timeout: 10_000 });
    await row.click();
    await page.locator(`.tabs-container .tab.active[aria-label^="${file}"]`).waitFor({ timeout: 10_000 });
  }
  /** The roles told apart: labels and accessible names in the DOM, and different computed styles. */
  async function checkRoles(theme) {
    const user = view().locator(".item.user").first();
    const reply = view().locator(".item.assistant").first();
    const [u, a] = await Promise.all([user, reply].map((el) =>
      el.evaluate((node) => {
        const s = getComputedStyle(node);
        const avatar = getComputedStyle(node.querySelector(".avatar"));
        return {
          label: node.getAttribute("aria-label"),
          author: node.querySelector(".author")?.textContent,
          role: node.dataset.role,
          background: s.backgroundColor,
          borderTop: `${s.borderTopWidth} ${s.borderTopStyle}`,
          borderLeft: `${s.borderLeftWidth} ${s.borderLeftStyle} ${s.borderLeftColor}`,
          avatar: avatar.backgroundColor,
        };
      }),
    ));
    const problems = [];
    if (u.author !== "You" || u.label !== "You" || u.role !== "user") problems.push(`user label ${JSON.stringify(u)}`);
    if (a.author !== "Agent Assist" || !a.label?.startsWith("Agent Assist") || a.role !== "assistant") problems.push(`assistant label ${JSON.stringify(a)}`);
    if (!/^1px solid/.test(u.borderTop)) problems.push(`the user's message is not boxed: ${u.borderTop}`);
    if (!/^0px/.test(a.borderTop) || !/^3px (solid|dashed)/.test(a.borderLeft)) problems.push(`the reply is not on a rule: ${a.borderTop} / ${a.borderLeft}`);
    if (u.avatar === a.avatar) problems.push(`same avatar colour ${u.avatar}`);
    if (u.background === a.background && u.borderLeft === a.borderLeft) problems.push("same background and border");
    if (problems.length) throw new Error(`${theme}: roles not distinguishable: ${problems.join("; ")}`);
    step(`${theme}: roles distinct (user ${u.background} ${u.borderTop}, reply ${a.borderLeft}, avatars ${u.avatar} / ${a.avatar})`);
  }
  async function setTheme(theme, bodyClass) {
    await runCommand("Preferences: Color Theme");
    const input = page.locator(".quick-input-widget .quick-input-box input");
    await input.fill(theme);
    const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: theme }).first();
    await row.waitFor({ timeout: 10_000 });
    await row.click();
    await poll(`the ${theme} theme`, async () =>
      ((await view().locator("body").getAttribute("class")) ?? "").split(" ").includes(bodyClass), 20_000);
    await new Promise((r) => setTimeout(r, 500)); // the workbench repaints
  }
  /** The transcript as rows: `user:1`, `assistant:1`, `checkpoint:1`… */
  const rows = () => view().locator("#log").evaluate((log) =>
    [...log.children].map((el) => el.classList.contains("checkpoint") ? `checkpoint:${el.dataset.checkpoint}` : `${el.dataset.role}:${el.dataset.turn ?? "-"}`));

  await openSidebar();
  step("sidebar open");
  // the server starts, finds no previous session: the status bar shows an idle session
  await page.locator(".statusbar-item", { hasText: "idle" }).first().waitFor({ timeout: 30_000 });
  await view().locator("#input").fill("first question about bananas");
  await view().locator("#input").press("Enter");
  const partials = new Set();
  await poll("the streamed reply", async () => {
    const [text = ""] = await assistantTexts();
    const busy = await view().locator(".item.assistant[aria-busy='true']").count();
    if (text && !text.includes("Done.")) partials.add(text);
    return text.includes("Done.") && busy === 0 && !(await view().locator("#working").isVisible());
  });
  step(`reply complete after ${partials.size} partial renders`);
  if (partials.size < 2) throw new Error(`the reply did not stream (partials: ${[...partials]})`);
  if ((await view().locator(".item.assistant strong").allTextContents())[0] !== "bananas") {
    throw new Error("Markdown was not rendered");
  }
  await checkRoles("default theme");
  const copy = view().locator(".item.assistant .code-block button.copy");
  const insert = view().locator(".item.assistant .code-block button.insert");
  if ((await copy.getAttribute("aria-label")) !== "Copy code" || (await insert.getAttribute("aria-label")) !== "Insert code at cursor") {
    throw new Error("the code block's actions have no accessible names");
  }
  await page.screenshot({ path: path.join(RESULTS, "1-first-reply.png") });

  // -- Copy: the button says "Copied" (and tells screen readers), the code is on the clipboard
  await page.evaluate(() => window.navigator.clipboard.writeText("nothing copied yet"));
  await copy.click();
  await poll("the Copy feedback", async () =>
    (await copy.textContent()) === "Copied" && (await view().locator("#announce").textContent()) === "Copied", 5000);
  const clipboard = await poll("the code on the clipboard", async () => {
    const text = await page.evaluate(() => window.navigator.clipboard.readText());
    return text.includes("print('banana')") && text;
  }, 10_000);
  if (clipboard.trim() !== "print('banana')") throw new Error(`Copy put ${JSON.stringify(clipboard)} on the clipboard`);
  await poll("the Copy label back", async () => (await copy.textContent()) === "Copy", 5000);
  step(`Copy: "Copied" shown and announced, the clipboard holds ${JSON.stringify(clipboard)}`);

  // -- Insert at cursor: into the editor last used
  await quickOpen("notes.py");
  await insert.click();
  await poll("the code inserted into notes.py", async () =>
    ((await page.locator(".editor-instance .monaco-editor .view-lines").first().textContent()) ?? "").includes("print('banana')"));
  // the focus is in the view after its Insert button: Ctrl+S in the editor (nothing saves it otherwise)
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+S");
  await poll("notes.py saved with the code", () => fs.readFileSync(path.join(workspace, "notes.py"), "utf-8").startsWith("print('banana')"));
  step("Insert put the code block at the cursor");

  // -- Save: a checkpoint in the timeline after turn 1
  await titleAction("Save").click();
  await notice("(checkpoint 1)").waitFor({ timeout: 30_000 });
  await poll("the checkpoint in the timeline", async () => JSON.stringify(await rows()) === JSON.stringify(["user:1", "tool:1", "assistant:1", "checkpoint:1"]));
  step("Save: checkpoint 1 after turn 1");

  // -- a draft, a reload, the spec changed meanwhile, Resume: the banner
  const DRAFT = "a draft kept across reloads";
  await view().locator("#input").fill(DRAFT);
  await new Promise((r) => setTimeout(r, 500));
  step("reload the window");
  await page.reload();
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "Resume previous session?" });
  await toast.waitFor({ timeout: 60_000 });
  await page.screenshot({ path: path.join(RESULTS, "2-resume-question.png") });
  fs.writeFileSync(path.join(workspace, "agent_spec.md"), "# Spec\nchanged while the window was away\n");
  await toast.getByRole("button", { name: "Resume", exact: true }).click();
  step("answered Resume");
  await openSidebar();
  await poll("the transcript redrawn", async () => {
    const replies = await assistantTexts();
    return (await userTexts()).includes("first question about bananas") && replies.some((r) => r.includes("Done."));
  });
  step("transcript back");
  const draft = await view().locator("#input").inputValue();
  if (draft !== DRAFT) throw new Error(`the draft was not kept across the reload: ${JSON.stringify(draft)}`);
  step("draft kept");
  const bannerText = view().locator(".banner .banner-text");
  await bannerText.waitFor({ timeout: 30_000 });
  const headline = await bannerText.textContent();
  if (!/^Resumed session · last active .+ · 1 file changed since$/.test(headline)) throw new Error(`banner: ${headline}`);
  const fileLink = view().locator(".banner button.open-file", { hasText: "agent_spec.md" });
  const diffLink = view().locator(".banner button.diff-file");
  if ((await diffLink.textContent()) !== "diff with checkpoint 1") throw new Error(`diff link: ${await diffLink.textContent()}`);
  await view().locator(".banner details.memory summary").click();
  const memory = await view().locator(".banner .memory-summary").textContent();
  if (!memory.includes("bananas")) throw new Error(`What I remember lacks the summary: ${memory}`);
  // the decision recorded in turn 1 (the model's record_decision call), listed under "Key decisions"
  const decisionsTitle = view().locator(".banner details.memory .decisions-title");
  if ((await decisionsTitle.textContent()) !== "Key decisions") throw new Error("no Key decisions in What I remember");
  const decisions = await view().locator(".banner details.memory .decisions-title + ul.decisions li").allTextContents();
  if (!decisions.includes(DECISION)) throw new Error(`Key decisions lacks the recorded decision: ${JSON.stringify(decisions)}`);
  await page.screenshot({ path: path.join(RESULTS, "3-resume-banner.png") });
  step(`banner: ${headline}; remembers: ${memory.slice(0, 80)}; key decisions: ${JSON.stringify(decisions)}`);
  await fileLink.click();
  await page.locator('.tabs-container .tab.active[aria-label^="agent_spec.md"]').waitFor({ timeout: 15_000 });
  await diffLink.click();
  await page.locator(".tabs-container .tab.active", { hasText: "checkpoint 1" }).waitFor({ timeout: 15_000 });
  await page.locator(".monaco-diff-editor").first().waitFor({ timeout: 15_000 });
  await page.screenshot({ path: path.join(RESULTS, "4-diff-with-checkpoint.png") });
  step("the changed file opened, and its diff against checkpoint 1");

  // -- Up recalls the last message; the next reply knows the earlier turn
  await view().locator("#input").fill("");
  await view().locator("#input").press("ArrowUp");
  const recalled = await view().locator("#input").inputValue();
  if (recalled !== "first question about bananas") throw new Error(`Up recalled ${JSON.stringify(recalled)}`);
  step("Up recalled the last message");
  // -- Shift+Enter: a new line in the draft, nothing sent; then Enter sends both lines
  const before = model.requests().length;
  const usersBefore = (await userTexts()).length;
  const SECOND = "what did I ask\nbefore?";
  await view().locator("#input").fill("what did I ask");
  await view().locator("#input").press("Shift+Enter");
  await view().locator("#input").pressSequentially("before?");
  await new Promise((r) => setTimeout(r, 1000)); // a send, had there been one, would show by now
  const twoLines = await view().locator("#input").inputValue();
  if (twoLines !== SECOND) throw new Error(`Shift+Enter did not put a new line in the draft: ${JSON.stringify(twoLines)}`);
  if ((await userTexts()).length !== usersBefore || model.requests().length !== before) throw new Error("Shift+Enter sent the message");
  step("Shift+Enter: a new line in the draft, nothing sent");
  await view().locator("#input").press("Enter");
  await poll("the second reply", async () => (await assistantTexts()).includes("Echo: what did I ask before?"));
  if (!(await userTexts()).includes(SECOND)) throw new Error(`the two-line message is not in the transcript: ${JSON.stringify(await userTexts())}`);
  if ((await view().locator("#input").inputValue()) !== "") throw new Error("Enter sent, but the draft was not cleared");
  const request = await poll("the model's second request", () => model.requests()[before]);
  const sent = JSON.stringify(request.messages);
  if (!sent.includes("first question about bananas") || !sent.includes("bananas")) {
    throw new Error(`the second request lacks the earlier turn: ${sent.slice(0, 500)}`);
  }
  if (!sent.includes(JSON.stringify(SECOND).slice(1, -1))) throw new Error(`the model did not get both lines: ${sent.slice(-500)}`);
  step("Enter sent the two-line message");
  await poll("checkpoint 1 between turns 1 and 2", async () =>
    JSON.stringify(await rows()) === JSON.stringify(["user:1", "tool:1", "assistant:1", "checkpoint:1", "user:2", "tool:2", "assistant:2"]));
  step("the model saw the earlier turn; the checkpoint sits between the turns");
  // tool activity: one compact line, expandable to its arguments
  const tool = view().locator('details.item.tool[data-turn="2"]').first();
  const toolLine = await tool.locator("summary").textContent();
  if (!/read_file.*agent_spec\.md.*done/.test(toolLine)) throw new Error(`tool line: ${toolLine}`);
  if (await tool.locator(".tool-detail").isVisible()) throw new Error("the tool line is not compact");
  await tool.locator("summary").click();
  await tool.locator(".tool-detail").waitFor({ timeout: 5000 });
  step(`tool line "${toolLine}" expands`);

  // -- themes: light, high contrast, dark
  for (const [theme, bodyClass, name] of [
    ["Light Modern", "vscode-light", "light"],
    ["Dark High Contrast", "vscode-high-contrast", "high-contrast"],
    ["Dark Modern", "vscode-dark", "dark"],
  ]) {
    await setTheme(theme, bodyClass);
    await checkRoles(name);
    await page.screenshot({ path: path.join(RESULTS, `theme-${name}.png`) });
  }

  // -- the keyboard: every control reachable with Tab, each with a visible focus ring
  await view().locator("#show-sessions").focus();
  const visited = [];
  for (let i = 0; i < 60 && visited.at(-1)?.id !== "send"; i++) {
    await page.keyboard.press("Tab");
    visited.push(await view().locator(":focus").evaluate((el) => {
      const s = getComputedStyle(el);
      return {
        id: el.id,
        what: `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${el.className ? `.${String(el.className).split(" ")[0]}` : ""}`,
        name: el.getAttribute("aria-label") || el.textContent.trim().slice(0, 40),
        ring: s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 1,
      };
    }));
  }
  const reached = visited.map((v) => v.what);
  const noRing = visited.filter((v) => !v.ring).map((v) => v.what);
  const unnamed = visited.filter((v) => !v.name && v.id !== "input" && v.id !== "log").map((v) => v.what);
  for (const want of ["button#show-search", "button#new-session", "button.icon-button", "button.link", "summary",
    "main#log", "button.copy", "button.insert", "button.secondary", "textarea#input", "button#send"]) {
    if (!reached.some((r) => r.startsWith(want))) throw new Error(`Tab never reached ${want}: ${reached.join(", ")}`);
  }
  if (noRing.length) throw new Error(`no visible focus ring on ${noRing.join(", ")}`);
  if (unnamed.length) throw new Error(`controls without a name: ${unnamed.join(", ")}`);
  step(`keyboard: ${visited.length} stops, each with a focus ring: ${reached.join(" ")}`);

  // -- the resume banner dismissed: gone, and the focus moves to the input
  await view().locator(".banner button.dismiss").click();
  await poll("the banner gone", async () => (await view().locator(".banner").count()) === 0, 5000);
  await poll("the focus on the input", async () =>
    (await view().locator(":focus").getAttribute("id").catch(() => null)) === "input", 5000);
  step("banner dismissed: gone, the focus on the input");

  // -- Stop, with a chat waiting behind the running one
  await view().locator("#input").fill("tell me a long story");
  await view().locator("#input").press("Enter");
  await view().locator(".item.assistant", { hasText: "This reply will be stopped" }).waitFor({ timeout: 30_000 });
  if (!(await view().locator("#working").isVisible())) throw new Error("no working indicator while the reply runs");
  // Withdraw: a waiting message comes back into the input, unsent; the running reply goes on
  if (await view().locator("#withdraw").isVisible()) throw new Error("Withdraw shown with nothing waiting");
  await view().locator("#input").fill("a second thought");
  await view().locator("#input").press("Enter");
  await poll("the queue length", async () => ((await view().locator("#working-text").textContent()) ?? "").includes("1 waiting"));
  await view().locator("#withdraw").click();
  await poll("the withdrawn text in the input", async () => (await view().locator("#input").inputValue()) === "a second thought");
  await poll("no chat waiting", async () => (await view().locator("#working-text").textContent()) === "Working…");
  if (await view().locator("#withdraw").isVisible()) throw new Error("Withdraw still shown after withdrawing");
  if (!(await view().locator("#working").isVisible())) throw new Error("the running reply stopped with the withdrawal");
  step("Withdraw: the waiting message back in the input, the running reply going on");
  await view().locator("#input").fill("a queued question");
  await view().locator("#input").press("Enter");
  await poll("the queue length", async () => ((await view().locator("#working-text").textContent()) ?? "").includes("1 waiting"));
  await page.screenshot({ path: path.join(RESULTS, "5-running-with-queue.png") });
  await view().locator("#stop").click();
  const stopped = view().locator(".item.assistant[data-end-reason='aborted']");
  await stopped.waitFor({ timeout: 30_000 });
  const badge = await stopped.locator(".end-badge").textContent();
  if (badge !== "Stopped · incomplete") throw new Error(`the stopped reply is marked ${JSON.stringify(badge)}`);
  await poll("the queued chat's reply", async () => (await assistantTexts()).includes("Queued answer."));
  await poll("idle again", async () => !(await view().locator("#working").isVisible()));
  if (!(await userTexts()).includes("a queued question")) throw new Error("the queued question is not in the transcript");
  step("Stop: the reply marked stopped, the queued chat ran after it");

  // -- chatRetry: the failed attempt's text is dropped, the retry noted, the whole answer shown
  await view().locator("#log").evaluate((log) => {
    window.__sawHalf = false;
    new MutationObserver(() => {
      if (log.textContent.includes("Half an answer")) window.__sawHalf = true;
    }).observe(log, { subtree: true, childList: true, characterData: true });
  });
  await view().locator("#input").fill("explain it");
  await view().locator("#input").press("Enter");
  await poll("the retried answer", async () => (await assistantTexts()).includes("The whole answer."), 60_000);
  const retryNote = await view().locator(".item.notice.retry").last().textContent();
  if (!/Retried\s*Retrying \(attempt 2\)/.test(retryNote)) throw new Error(`retry note: ${retryNote}`);
  if ((await view().locator("#log").textContent()).includes("Half an answer")) throw new Error("the failed attempt's text is still shown");
  const sawHalf = await view().locator("#log").evaluate(() => window.__sawHalf);
  step(`chatRetry: partial ${sawHalf ? "shown, then" : "never painted, and"} dropped; ${retryNote}`);

  // -- restore checkpoint 1 from the timeline, behind a confirmation listing the files
  await view().locator('.checkpoint[data-checkpoint="1"] button.restore').click();
  const confirm = view().locator(".confirm");
  await confirm.locator(".restore-files li", { hasText: "agent_spec.md" }).waitFor({ timeout: 15_000 });
  if (!(await confirm.textContent()).includes("Restore checkpoint 1?")) throw new Error("the confirmation does not name the checkpoint");
  const focused = await view().locator(":focus").getAttribute("class");
  if (!focused?.includes("confirm-cancel")) throw new Error(`the confirmation does not hold the focus on Cancel: ${focused}`);
  await page.screenshot({ path: path.join(RESULTS, "6-restore-confirmation.png") });
  await confirm.locator("button.confirm-restore").click();
  await notice("restored checkpoint 1: 1 file(s)").waitFor({ timeout: 30_000 });
  await poll("the transcript rewound to turn 1", async () => JSON.stringify(await userTexts()) === JSON.stringify(["first question about bananas"]));
  step(`restored checkpoint 1 from the timeline: ${JSON.stringify(await rows())}`);

  // -- New session keeps the previous one
  const sessionsDir = () => {
    const projects = path.join(tmp, "home", "projects");
    return fs.readdirSync(projects).map((p) => path.join(projects, p, "sessions")).find((d) => fs.existsSync(d));
  };
  const logs = () => fs.readdirSync(sessionsDir()).filter((f) => f.endsWith(".events.jsonl"));
  if (logs().length !== 1) throw new Error(`expected one session log, found ${logs()}`);
  const oldId = logs()[0].replace(".events.jsonl", "");
  const oldLog = path.join(sessionsDir(), logs()[0]);
  let oldBytes = fs.readFileSync(oldLog);
  // Strictly identical while another session is current; once reopened, the session is live
  // again and may append (its running summary), so from then on its old bytes must stay a prefix.
  // Leaving it may append too: what it still had to record (a change the file watcher reported
  // late, on a loaded machine) goes in before it closes; its bytes before stay a prefix.
  const sameBytes = (when, { live = false } = {}) => {
    if (!fs.existsSync(oldLog)) throw new Error(`the old session's log was deleted ${when}`);
    const now = fs.readFileSync(oldLog);
    if (now.equals(oldBytes) || (live && now.subarray(0, oldBytes.length).equals(oldBytes))) return;
    const added = now.subarray(0, oldBytes.length).equals(oldBytes) ? `appended: ${now.subarray(oldBytes.length)}` : "rewritten";
    throw new Error(`the old session's log changed ${when} (${added})`);
  };
  await titleAction("New session").click();
  const created = await notice("(the previous one is kept)").textContent({ timeout: 30_000 });
  const newId8 = /new session ([0-9a-f]{8})/.exec(created)?.[1];
  if (!newId8 || oldId.startsWith(newId8)) throw new Error(`New session did not start a new one: ${created}`);
  await poll("the view cleared", async () => (await view().locator(".item").count()) === 0 && !(await view().locator(".banner").isVisible()));
  sameBytes("by New session", { live: true });
  oldBytes = fs.readFileSync(oldLog); // closed now: from here on, strictly the same
  step(`New session: ${newId8}, the previous ${oldId.slice(0, 8)} kept`);
  await page.screenshot({ path: path.join(RESULTS, "7-new-session.png") });

  // -- search in the view: a hit opens its session at the turn
  await view().locator("#show-search").click();
  await view().locator("#search-input").fill("bananas");
  await view().locator("#search-input").press("Enter");
  const hit = view().locator(`.search-hit[data-session="${oldId}"][data-turn="1"]`).first();
  await hit.waitFor({ timeout: 30_000 });
  if (!(await hit.locator("mark").allTextContents()).includes("bananas")) throw new Error("the hit does not mark the match");
  await page.screenshot({ path: path.join(RESULTS, "8-search.png") });
  sameBytes("by a search");
  await hit.click();
  await view().locator('.item.user.revealed[data-turn="1"]').waitFor({ timeout: 30_000 });
  await poll("the opened banner", async () => ((await view().locator(".banner .banner-text").textContent().catch(() => "")) ?? "").startsWith("Opened session"));
  sameBytes("by a search hit → open", { live: true });
  step("a search hit opened its session at turn 1");

  // -- the sessions list: fork, then open the old one again
  await view().locator("#show-sessions").click();
  const activeRow = view().locator(`.session-row.active[data-session="${oldId}"]`);
  await activeRow.waitFor({ timeout: 30_000 });
  const meta = await activeRow.locator(".session-meta").textContent();
  if (!/turns? · last active/.test(meta)) throw new Error(`session row: ${meta}`);
  await activeRow.locator("button.fork-session").click();
  await poll("the forked banner", async () => (await view().locator(".banner").getAttribute("data-origin").catch(() => "")) === "forked");
  await view().locator("#show-sessions").click();
  const forkRow = view().locator(".session-row.active");
  await poll("the fork listed with its parent", async () => ((await forkRow.locator(".session-meta").textContent()) ?? "").includes(`forked from “first question about bananas” (${oldId.slice(0, 8)})`));
  await page.screenshot({ path: path.join(RESULTS, "9-sessions.png") });
  await view().locator(`.session-row[data-session="${oldId}"] button.open-session`).click();
  await poll("the old session open again", async () => (await view().locator(".banner").getAttribute("data-origin").catch(() => "")) === "opened");
  if (!(await userTexts()).includes("first question about bananas")) throw new Error("the reopened transcript lacks the first question");
  sameBytes("by Sessions → fork → open", { live: true });
  step("sessions list: forked, then opened the old session again");
  // -- more sessions than a page: the newest 200 listed, the older ones on request
  const copies = 250;
  for (let n = 0; n < copies; n++) {
    const id = (0x100000000000 + n).toString(16).slice(-12);
    for (const suffix of [".events.jsonl", ".json"]) {
      const from = path.join(sessionsDir(), `${oldId}${suffix}`);
      fs.writeFileSync(path.join(sessionsDir(), `${id}${suffix}`), fs.readFileSync(from, "utf8").replaceAll(oldId, id));
    }
  }
  await view().locator("#show-sessions").click(); // opening it lists them again
  const more = view().locator(".session-more");
  await poll("the newest 200 listed", async () => (await view().locator(".session-row").count()) === 200);
  const said = await more.textContent();
  // the copies, the old session and its fork; and the turnless one New session started, where the server lists it
  const total = Number(/^The newest 200 of (\d+) sessions\./.exec(said)?.[1]);
  if (total !== copies + 2 && total !== copies + 3) throw new Error(`the list does not say there are older sessions: ${said}`);
  await more.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(RESULTS, "9b-older-sessions.png") });
  await more.locator("button.more-sessions").click();
  await poll("the older sessions listed", async () => (await view().locator(".session-row").count()) === total);
  if ((await more.count()) !== 0) throw new Error("every session is listed, yet the list still offers older ones");
  const focusedOlder = await view().locator(":focus").getAttribute("class").catch(() => "");
  if (!focusedOlder?.includes("open-session")) throw new Error(`the focus did not go to the first older session: ${focusedOlder}`);
  step(`sessions list: the newest 200 of ${total}, then the older ones on request`);
  // -- Reset Session (delete it)…: the extension's modal, then the server's question about the spec
  const dialog = page.locator(".monaco-dialog-box");
  async function resetConfirmed(button) {
    await runCommand("Agent Assist: Reset Session (delete it)…");
    await dialog.waitFor({ timeout: 10_000 });
    const text = await dialog.textContent();
    if (!text.includes("Reset Session (delete it)?") || !text.includes("conversation log and checkpoints")) {
      throw new Error(`the confirmation does not say what is deleted: ${text}`);
    }
    await page.screenshot({ path: path.join(RESULTS, "10-reset-confirmation.png") });
    await dialog.getByRole("button", { name: button, exact: true }).click();
    await dialog.waitFor({ state: "detached", timeout: 10_000 });
  }
  const question = () => notice("Also delete agent_spec.md and templates/?");

  await resetConfirmed("Cancel");
  await new Promise((r) => setTimeout(r, 1500)); // a request, had one been sent, would ask by now
  if (await question().isVisible()) throw new Error("declining the confirmation still reset");
  sameBytes("by a declined reset", { live: true });
  step("Reset declined: nothing sent, the session kept");

  await resetConfirmed("Delete session");
  await question().waitFor({ timeout: 30_000 });
  await page.screenshot({ path: path.join(RESULTS, "11-reset-server-question.png") });
  await question().getByRole("button", { name: "Cancel", exact: true }).click();
  const cancelled = notice("Reset cancelled; nothing was changed.");
  await cancelled.waitFor({ timeout: 30_000 });
  if ((await cancelled.locator(".codicon-info").count()) !== 1) throw new Error("a cancelled reset is not shown as an info");
  sameBytes("by a reset cancelled at the server's question", { live: true });
  step("Reset cancelled at the server's question: an info, the session kept");

  await resetConfirmed("Delete session");
  await question().waitFor({ timeout: 30_000 });
  await question().getByRole("button", { name: "Keep files", exact: true }).click();
  await notice("session deleted; new session").waitFor({ timeout: 30_000 });
  await poll("the old session's log deleted", () => !fs.existsSync(oldLog));
  if (!fs.existsSync(path.join(workspace, "agent_spec.md"))) throw new Error("Keep files deleted agent_spec.md");
  if (!fs.existsSync(path.join(workspace, "templates", "greeting.md"))) throw new Error("Keep files deleted templates/");
  await poll("the view cleared after reset", async () => (await view().locator(".item").count()) === 0);
  step("Reset: the session's log deleted, agent_spec.md and templates/ kept");

  // -- the model's write_file, applied in the editor unsaved, then saved there: not drift
  const greetingFile = path.join(workspace, "templates", "greeting.md");
  await view().locator("#input").fill("update the greeting template");
  await view().locator("#input").press("Enter");
  await poll("the reply after the write", async () =>
    (await assistantTexts()).includes("Greeting updated.") && !(await view().locator("#working").isVisible()), 60_000);
  const writeLine = await view().locator("details.item.tool", { hasText: "write_file" }).last().locator("summary").textContent();
  if (!/^write_file[\s\S]*templates\/greeting\.md[\s\S]*done$/.test(writeLine)) throw new Error(`write_file tool line: ${writeLine}`);
  if (fs.readFileSync(greetingFile, "utf-8") !== GREETING_BEFORE) {
    throw new Error("greeting.md changed on disk: the edit was not left unsaved in the editor");
  }
  await quickOpen("greeting.md");
  await page.locator('.tabs-container .tab.active.dirty[aria-label^="greeting.md"]').waitFor({ timeout: 15_000 });
  await page.locator(".monaco-editor .view-lines", { hasText: "the assistant wrote this line." }).first().waitFor({ timeout: 15_000 });
  step("write_file applied in the editor, unsaved");
  await page.keyboard.press("Control+S");
  await poll("greeting.md saved with the assistant's text", () => fs.readFileSync(greetingFile, "utf-8") === GREETING);
  await page.locator('.tabs-container .tab.active[aria-label^="greeting.md"]:not(.dirty)').waitFor({ timeout: 15_000 });
  await page.screenshot({ path: path.join(RESULTS, "12-assistant-edit-saved.png") });
  // the model writes it again (the history below has two changes of it); saved in the editor too
  await view().locator("#input").fill("sign the greeting");
  await view().locator("#input").press("Enter");
  await poll("the reply after the second write", async () =>
    (await assistantTexts()).includes("Greeting signed.") && !(await view().locator("#working").isVisible()), 60_000);
  const signedLines = page.locator(".monaco-editor .view-lines", { hasText: "Kind regards" }).first();
  await signedLines.waitFor({ timeout: 15_000 });
  await signedLines.click();
  await page.keyboard.press("Control+S");
  await poll("greeting.md saved signed", () => fs.readFileSync(greetingFile, "utf-8") === GREETING_SIGNED);
  // for contrast, and as the witness: a template changed outside VS Code is drift. Watcher events
  // come in order, so once its warning is shown, a drift of the save would have been shown first.
  fs.writeFileSync(path.join(workspace, "templates", "signature.md"), "Regards, changed outside\n");
  const driftToast = page.locator(".notifications-toasts .notification-toast", { hasText: "files changed outside the assistant" });
  await driftToast.filter({ hasText: "templates/signature.md" }).first().waitFor({ timeout: 60_000 });
  const driftTexts = await driftToast.locator(".notification-list-item-message").allTextContents();
  if (driftTexts.some((t) => t.includes("greeting.md"))) throw new Error(`saving the assistant's edit was reported as drift: ${driftTexts}`);
  await page.locator(".statusbar-item", { hasText: "idle" }).filter({ has: page.locator(".codicon-warning") }).first().waitFor({ timeout: 15_000 });
  await page.screenshot({ path: path.join(RESULTS, "13-drift-outside.png") });
  // the session's log records every drift the server found: the signature's, none of the greeting
  const currentLog = () => logs().map((f) => path.join(sessionsDir(), f))
    .find((f) => fs.readFileSync(f, "utf-8").includes("update the greeting template"));
  const drifts = await poll("the drift in the session log", () => {
    const file = currentLog();
    const found = file ? fs.readFileSync(file, "utf-8").split("\n").filter((l) => l.includes('"workspace/drift"')) : [];
    return found.some((l) => l.includes("templates/signature.md")) && found;
  });
  if (drifts.some((l) => l.includes("greeting.md"))) throw new Error(`the saved edit was recorded as drift: ${drifts}`);
  step(`saved the assistant's edit: no drift; a change outside: ${driftTexts.join(" | ")}`);

  // -- Set API Key: the running server takes the key live; no restart (the same server process)
  const realWorkspace = fs.realpathSync(workspace);
  const serverPids = () => fs.readdirSync("/proc").filter((pid) => {
    try {
      return /^\d+$/.test(pid) && fs.readlinkSync(`/proc/${pid}/cwd`) === realWorkspace &&
        fs.readFileSync(`/proc/${pid}/cmdline`, "utf-8").split("\0").includes("serve");
    } catch {
      return false; // gone, or not ours
    }
  });
  const pidsBefore = serverPids();
  if (pidsBefore.length !== 1) throw new Error(`expected one server in the workspace, found ${JSON.stringify(pidsBefore)}`);
  await runCommand("Agent Assist: Set API Key");
  await page.locator(".quick-input-widget", { hasText: "API key of the model" }).waitFor({ timeout: 10_000 });
  const keyInput = page.locator(".quick-input-widget .quick-input-box input");
  await keyInput.fill("sk-e2e-live");
  await keyInput.press("Enter");
  const extensionLog = () => {
    const found = [];
    const walk = (dir) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.name.includes("Agent Assist")) found.push(fs.readFileSync(full, "utf-8"));
      }
    };
    walk(path.join(userData, "logs"));
    return found.join("\n");
  };
  await poll("the key sent to the running server", () => extensionLog().includes("API key changed: sent to the running server"));
  await view().locator("#input").fill("which key now?");
  await view().locator("#input").press("Enter");
  // the fake model echoes what it was sent: the message, after the server's notice of the drift
  const echoed = await poll("the reply with the new key", async () =>
    (await assistantTexts()).find((t) => t.startsWith("Echo:") && t.trim().endsWith("which key now?")), 60_000);
  if (!echoed.includes("templates/signature.md") || echoed.includes("greeting.md")) {
    throw new Error(`the model's drift notice should name only signature.md: ${echoed}`);
  }
  const keyed = await poll("the model request with the new key", () =>
    model.requests().find((r) => JSON.stringify(r.messages).includes("which key now?")));
  if (keyed.authorization !== "Bearer sk-e2e-live") throw new Error(`the new key did not reach the model: ${keyed.authorization}`);
  const pidsAfter = serverPids();
  if (JSON.stringify(pidsAfter) !== JSON.stringify(pidsBefore)) throw new Error(`the server restarted: ${pidsBefore} → ${pidsAfter}`);
  step(`Set API Key: the next request carries the new key, the same server process (${pidsAfter})`);

  // -- History of This File: the template written twice; the newest change's diff, its turn, then restore the version before it
  /** An editor's text as shown (Monaco draws spaces as no-break spaces). */
  const lineText = async (locator) => ((await locator.textContent()) ?? "").replace(/\s+/g, " ");
  await quickOpen("greeting.md");
  await runCommand("Agent Assist: History of This File");
  const historyTitle = page.locator(".quick-input-widget .quick-input-title", { hasText: "History of templates/greeting.md" });
  const historyRows = page.locator(".quick-input-widget .monaco-list-row", { hasText: "· write" });
  await historyTitle.waitFor({ timeout: 30_000 });
  await poll("the file's two changes listed", async () => (await historyRows.count()) === 2, 30_000);
  const newestRow = historyRows.first();
  const newestText = await newestRow.textContent();
  const where = /turn (\d+) step (\d+)/.exec(newestText ?? "");
  if (!where || !newestText.includes("· write") || !newestText.includes("sign the greeting")) {
    throw new Error(`the newest change's row: ${newestText}`);
  }
  const [, changeTurn, changeStep] = where;
  const olderText = await historyRows.nth(1).textContent();
  if (!olderText.includes("update the greeting template")) throw new Error(`the older change's row: ${olderText}`);
  await newestRow.click();
  const diffTitle = `greeting.md (before ↔ after turn ${changeTurn} step ${changeStep})`;
  await page.locator(`.tabs-container .tab.active[aria-label^="${diffTitle}"]`).waitFor({ timeout: 15_000 });
  const diff = page.locator(".monaco-diff-editor").first();
  await diff.locator(".editor.modified .view-lines", { hasText: "Kind regards" }).waitFor({ timeout: 15_000 });
  const original = diff.locator(".editor.original .view-lines", { hasText: "the assistant wrote this line." });
  await original.waitFor({ timeout: 15_000 });
  if ((await lineText(original)).includes("Kind regards")) throw new Error("the diff's before side holds the after text");
  // the diff's title bar offers the same actions as the row's buttons (and the palette, by keyboard)
  for (const label of ["Restore this version", "Open session at this turn"]) {
    await page.locator(`.editor-actions a.action-label[aria-label^="${label}"]`).first().waitFor({ timeout: 10_000 });
  }
  await page.screenshot({ path: path.join(RESULTS, "14-file-history-diff.png") });
  step(`History of This File: ${diffTitle} opened`);
  async function historyButton(label) {
    await quickOpen("greeting.md"); // the file's own editor (the diff's sides are not the file)
    await runCommand("Agent Assist: History of This File");
    await historyTitle.waitFor({ timeout: 30_000 });
    await poll("the history listed again", async () => (await historyRows.count()) === 2, 30_000);
    // the row's buttons show while it is hovered: the mouse comes from elsewhere (where it rests may be that row)
    const button = historyRows.first().locator(`.action-label[aria-label^="${label}"], .action-label[title^="${label}"]`).first();
    await poll(`the ${label} button`, async () => {
      await page.mouse.move(1, 1);
      await historyRows.first().hover();
      return (await button.isVisible()) && (await button.click({ timeout: 2000 }).then(() => true, () => false));
    });
  }
  // Open session at this turn (read-only): the turn as Markdown, its step and tool call
  await historyButton("Open session at this turn");
  await page.locator(`.tabs-container .tab.active[aria-label*="turn ${changeTurn}.md"]`).waitFor({ timeout: 15_000 });
  const inspected = page.locator(".monaco-editor .view-lines", { hasText: `Turn ${changeTurn}` }).first();
  await inspected.waitFor({ timeout: 15_000 });
  const inspectedText = await lineText(inspected);
  if (!inspectedText.includes("sign the greeting") || !inspectedText.includes("write_file")) {
    throw new Error(`the inspected turn: ${inspectedText}`);
  }
  step(`Open session at this turn: turn ${changeTurn} read-only`);
  // unsaved changes in the editor are saved first (the server replaces the text it knows, the saved file's)
  await quickOpen("greeting.md");
  const signed = page.locator(".monaco-editor .view-lines", { hasText: "Kind regards" }).first();
  await signed.click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("P.S. typed by hand");
  await page.locator('.tabs-container .tab.active.dirty[aria-label^="greeting.md"]').waitFor({ timeout: 15_000 });
  await historyButton("Restore this version");
  await dialog.waitFor({ timeout: 10_000 });
  const asked = await dialog.textContent();
  if (!asked.includes(`Restore templates/greeting.md as it was before turn ${changeTurn} step ${changeStep}?`) || !asked.includes("unsaved changes are saved first")) {
    throw new Error(`the restore question does not name the file and step, or the unsaved changes: ${asked}`);
  }
  await dialog.getByRole("button", { name: "Restore", exact: true }).click();
  await notice("restored templates/greeting.md as it was before").waitFor({ timeout: 30_000 });
  // applied in the editor (undoable), unsaved; saved there, the file holds the version before that step
  await page.locator('.tabs-container .tab.active.dirty[aria-label^="greeting.md"]').waitFor({ timeout: 15_000 });
  const restoredLines = page.locator(".monaco-editor .view-lines", { hasText: "the assistant wrote this line." }).first();
  await poll("the version before in the editor", async () => {
    const text = await lineText(restoredLines);
    return !text.includes("Kind regards") && !text.includes("P.S.");
  });
  await restoredLines.click();
  await page.keyboard.press("Control+S");
  await poll("greeting.md restored on disk", () => fs.readFileSync(greetingFile, "utf-8") === GREETING);
  step("restored the version before that step through the editor (unsaved typing saved first), then saved");
  // -- the transcript's Steps toggle: the last turn's model calls (agentAssist/history with steps)
  const toggle = view().locator("button.steps-toggle").last();
  await toggle.click();
  const stepHead = view().locator("section.steps .step-head").first();
  await stepHead.waitFor({ timeout: 15_000 });
  const headText = await stepHead.textContent();
  if (!/^Step \d+ · .+ · .+ in \/ .+ out/.test(headText) || (await toggle.getAttribute("aria-expanded")) !== "true") {
    throw new Error(`the steps of the last turn: ${headText}`);
  }
  step(`Steps of the last turn: ${headText}`);
  await page.screenshot({ path: path.join(RESULTS, "vscode-e2e.png") });
  ok = true;
} finally {
  if (page && !ok) await page.screenshot({ path: path.join(RESULTS, "vscode-e2e-failure.png") }).catch(() => {});
  if (!ok) {
    spawnSync("cp", ["-r", path.join(userData, "logs"), path.join(RESULTS, "user-logs")]);
  }
  await context?.close().catch(() => {});
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {
    // already gone
  }
  model.proc.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 500));
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log("e2e ok: screenshots in test-results/");
