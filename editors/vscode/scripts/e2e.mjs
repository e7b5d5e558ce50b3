// End to end in real VS Code: code-server with the .vsix installed, Chromium via playwright-core.
// Open the sidebar, send a message, see the streamed reply, reload the window, answer Resume,
// see the transcript back and the next reply aware of the earlier turn (the model's recorded request).
// Then New session (view title): a new id, the old session's events log byte-identical and the
// session in the Sessions pick, reopened with its transcript; Reset Session (delete it)…: the modal
// asks, Cancel keeps the session, Cancel at the server's question is an info, Delete session + Keep
// files deletes its log.
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
const FIRST = "Streaming reply about **bananas**, sent to the sidebar in small chunks so it can be watched.";

fs.mkdirSync(RESULTS, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "aa-vscode-e2e-"));
const workspace = path.join(tmp, "project");
const userData = path.join(tmp, "user-data");
const extensions = path.join(tmp, "extensions");
fs.mkdirSync(workspace);
fs.writeFileSync(path.join(workspace, "agent_spec.md"), "# Spec\n");
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
  fs.writeFileSync(script, JSON.stringify([{ text: FIRST, chunk: 6, delay: 0.08 }]));
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
    return view().locator(".item.assistant").allTextContents();
  }

  await openSidebar();
  step("sidebar open");
  // the server starts, finds no previous session: the status bar shows an idle session
  await page.locator(".statusbar-item", { hasText: "idle" }).first().waitFor({ timeout: 30_000 });
  await view().locator("#input").fill("first question about bananas");
  await view().locator("#input").press("Enter");
  const partials = new Set();
  const expected = FIRST.replace(/\*\*/g, "");
  await poll("the streamed reply", async () => {
    const [text = ""] = await assistantTexts();
    if (text && text !== expected) partials.add(text);
    return text === expected;
  });
  step(`reply complete after ${partials.size} partial renders`);
  if (partials.size < 2) throw new Error(`the reply did not stream (partials: ${[...partials]})`);
  if ((await view().locator(".item.assistant strong").allTextContents())[0] !== "bananas") {
    throw new Error("Markdown was not rendered");
  }
  await page.screenshot({ path: path.join(RESULTS, "1-first-reply.png") });

  step("reload the window");
  await page.reload();
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "Resume previous session?" });
  await toast.waitFor({ timeout: 60_000 });
  await page.screenshot({ path: path.join(RESULTS, "2-resume-question.png") });
  await toast.getByRole("button", { name: "Resume", exact: true }).click();
  step("answered Resume");
  await openSidebar();
  await poll("the transcript redrawn", async () => {
    const users = await view().locator(".item.user").allTextContents();
    const replies = await assistantTexts();
    return users.includes("first question about bananas") && replies.includes(expected);
  });
  step("transcript back");

  const before = model.requests().length;
  await view().locator("#input").fill("what did I ask before?");
  await view().locator("#input").press("Enter");
  await poll("the second reply", async () => (await assistantTexts()).includes("Echo: what did I ask before?"));
  const request = await poll("the model's second request", () => model.requests()[before]);
  const sent = JSON.stringify(request.messages);
  if (!sent.includes("first question about bananas") || !sent.includes("bananas")) {
    throw new Error(`the second request lacks the earlier turn: ${sent.slice(0, 500)}`);
  }
  step("the model saw the earlier turn");

  // -- New session keeps the previous one
  const sessionsDir = () => {
    const projects = path.join(tmp, "home", "projects");
    return fs.readdirSync(projects).map((p) => path.join(projects, p, "sessions")).find((d) => fs.existsSync(d));
  };
  const logs = () => fs.readdirSync(sessionsDir()).filter((f) => f.endsWith(".events.jsonl"));
  if (logs().length !== 1) throw new Error(`expected one session log, found ${logs()}`);
  const oldId = logs()[0].replace(".events.jsonl", "");
  const oldLog = path.join(sessionsDir(), logs()[0]);
  const oldBytes = fs.readFileSync(oldLog);
  // Strictly identical while another session is current; once reopened, the session is live
  // again and may append (its running summary), so from then on its old bytes must stay a prefix.
  const sameBytes = (when, { live = false } = {}) => {
    if (!fs.existsSync(oldLog)) throw new Error(`the old session's log was deleted ${when}`);
    const now = fs.readFileSync(oldLog);
    if (now.equals(oldBytes) || (live && now.subarray(0, oldBytes.length).equals(oldBytes))) return;
    const added = now.subarray(0, oldBytes.length).equals(oldBytes) ? `appended: ${now.subarray(oldBytes.length)}` : "rewritten";
    throw new Error(`the old session's log changed ${when} (${added})`);
  };
  const notice = (text) => page.locator(".notifications-toasts .notification-toast", { hasText: text }).last();
  const titleAction = (label) => page.locator(`.part.sidebar .title-actions a.action-label[aria-label^="${label}"]`);
  await titleAction("New session").click();
  const created = await notice("(the previous one is kept)").textContent({ timeout: 30_000 });
  const newId8 = /new session ([0-9a-f]{8})/.exec(created)?.[1];
  if (!newId8 || oldId.startsWith(newId8)) throw new Error(`New session did not start a new one: ${created}`);
  await poll("the view cleared", async () => (await view().locator(".item").count()) === 0);
  sameBytes("by New session");
  step(`New session: ${newId8}, the previous ${oldId.slice(0, 8)} kept`);
  await page.screenshot({ path: path.join(RESULTS, "3-new-session.png") });

  await titleAction("Sessions").click();
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: oldId.slice(0, 8) });
  await row.waitFor({ timeout: 30_000 });
  sameBytes("by New session and the Sessions list");
  await row.click();
  await notice(`opened session ${oldId.slice(0, 8)}`).waitFor({ timeout: 30_000 });
  await poll("the old transcript after open", async () => {
    const users = await view().locator(".item.user").allTextContents();
    return users.includes("first question about bananas") && users.includes("what did I ask before?");
  });
  if (!(await assistantTexts()).includes(expected)) throw new Error("the reopened transcript lacks the first reply");
  sameBytes("by Sessions → open", { live: true });
  step("the old session reopened intact");

  // -- Reset Session (delete it)…: the extension's modal, then the server's question about the spec
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
  const dialog = page.locator(".monaco-dialog-box");
  async function resetConfirmed(button) {
    await runCommand("Agent Assist: Reset Session (delete it)…");
    await dialog.waitFor({ timeout: 10_000 });
    const text = await dialog.textContent();
    if (!text.includes("Reset Session (delete it)?") || !text.includes("conversation log and checkpoints")) {
      throw new Error(`the confirmation does not say what is deleted: ${text}`);
    }
    await page.screenshot({ path: path.join(RESULTS, "4-reset-confirmation.png") });
    await dialog.getByRole("button", { name: button, exact: true }).click();
    await dialog.waitFor({ state: "detached", timeout: 10_000 });
  }
  const question = () => notice("Also delete agent_spec.md?");

  await resetConfirmed("Cancel");
  await new Promise((r) => setTimeout(r, 1500)); // a request, had one been sent, would ask by now
  if (await question().isVisible()) throw new Error("declining the confirmation still reset");
  sameBytes("by a declined reset", { live: true });
  step("Reset declined: nothing sent, the session kept");

  await resetConfirmed("Delete session");
  await question().waitFor({ timeout: 30_000 });
  await page.screenshot({ path: path.join(RESULTS, "5-reset-server-question.png") });
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
  await poll("the view cleared after reset", async () => (await view().locator(".item").count()) === 0);
  step("Reset: the session's log deleted, agent_spec.md kept");
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
