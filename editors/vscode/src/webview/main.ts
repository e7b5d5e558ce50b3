/** The sidebar's script: renders the transcript and talks only to the extension host. */
import { parseHostMessage, type HostMessage, type WebviewMessage } from "../common/messages";
import type { TranscriptItem } from "../common/protocol";
import { renderMarkdown } from "./markdown";
import { applyHostMessage, endMark, RETRY_STATUS } from "./transcript";

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: ViewState): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

interface ViewState {
  sessionId: string;
  items: TranscriptItem[];
  draft: string;
}

const vscode = acquireVsCodeApi();

function restoreState(value: unknown): ViewState {
  const empty: ViewState = { sessionId: "", items: [], draft: "" };
  if (typeof value !== "object" || value === null) {
    return empty;
  }
  const restored = parseHostMessage({ type: "transcript", ...value });
  const draft = "draft" in value && typeof value.draft === "string" ? value.draft : "";
  return restored && restored.type === "transcript"
    ? { sessionId: restored.sessionId, items: restored.items, draft }
    : empty;
}

let state = restoreState(vscode.getState());
let running = false;

function byId<T extends HTMLElement>(id: string, kind: new () => T): T {
  const el = document.getElementById(id);
  if (!(el instanceof kind)) {
    throw new Error(`missing #${id}`);
  }
  return el;
}

const log = byId("log", HTMLDivElement);
const input = byId("input", HTMLTextAreaElement);
const sendButton = byId("send", HTMLButtonElement);
const stopButton = byId("stop", HTMLButtonElement);
const sessionLabel = byId("session", HTMLSpanElement);

function save(): void {
  vscode.setState({ ...state, draft: input.value });
}

function itemElement(item: TranscriptItem): HTMLElement {
  const el = document.createElement("div");
  el.className = `item ${item.role}`;
  if (item.turn !== null) {
    el.dataset.turn = String(item.turn);
  }
  if (item.role === "assistant") {
    el.innerHTML = renderMarkdown(item.text); // escaped, then formatted: no raw HTML survives
    el.classList.toggle("partial", item.partial === true);
    const mark = endMark(item);
    if (mark !== undefined) {
      const note = document.createElement("div");
      note.className = "end-reason";
      note.textContent = mark;
      el.appendChild(note);
    }
  } else {
    el.classList.toggle("retry", item.role === "notice" && item.status === RETRY_STATUS);
    el.classList.toggle("outside-turn", item.turn === null); // e.g. "Older turns were compacted."
    el.textContent = item.role === "tool" ? `⚙ ${item.text}` : item.text;
  }
  return el;
}

function render(): void {
  log.replaceChildren(...state.items.map(itemElement));
  sessionLabel.textContent = state.sessionId ? `session ${state.sessionId.slice(0, 8)}` : "";
  log.scrollTop = log.scrollHeight;
  save();
}

function setRunning(value: boolean): void {
  running = value;
  sendButton.hidden = value;
  stopButton.hidden = !value;
  document.body.classList.toggle("running", value);
}

function handle(message: HostMessage): void {
  state = { ...state, ...applyHostMessage(state, message) };
  if (message.type === "state") {
    setRunning(message.running);
  }
  render();
}

function send(): void {
  const text = input.value;
  if (text.trim() === "" || running) {
    return;
  }
  input.value = "";
  vscode.postMessage({ type: "send", text });
  save();
}

window.addEventListener("message", (event: MessageEvent<unknown>) => {
  const message = parseHostMessage(event.data);
  if (message) {
    handle(message);
  }
});
sendButton.addEventListener("click", send);
stopButton.addEventListener("click", () => vscode.postMessage({ type: "stop" }));
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    send();
  }
});
input.addEventListener("input", save);
log.addEventListener("click", (event) => {
  const target = event.target;
  if (target instanceof HTMLButtonElement && target.classList.contains("copy")) {
    const code = target.parentElement?.querySelector("code")?.textContent ?? "";
    vscode.postMessage({ type: "copy", text: code });
    target.textContent = "Copied";
    setTimeout(() => (target.textContent = "Copy"), 1200);
  }
});

input.value = state.draft;
setRunning(false);
render();
vscode.postMessage({ type: "ready" });
