/** The sidebar's script: renders the view model and talks only to the extension host. */
import { type HostMessage, parseHostMessage, type WebviewMessage } from "../common/messages";
import type { TranscriptItem } from "../common/protocol";
import { morph } from "./dom";
import {
  banner,
  initialView,
  type Panel,
  recall,
  sentMessages,
  sessionTitle,
  timeline,
  type UiAction,
  update,
  type View,
  withdrawnDraft,
  workingText,
} from "./model";
import { bannerElement, foldedSessions, olderSessions, rowElement, rowKey, rowSignature, rowStreaming, searchRows, sessionRows } from "./render";

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: SavedState): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

/** What survives a reload of the view (webview state): the transcript, the draft, dismissed banners. */
interface SavedState {
  sessionId: string;
  items: TranscriptItem[];
  draft: string;
  dismissed: string[];
}

const vscode = acquireVsCodeApi();

function restoreState(value: unknown): SavedState {
  const empty: SavedState = { sessionId: "", items: [], draft: "", dismissed: [] };
  if (typeof value !== "object" || value === null) {
    return empty;
  }
  const restored = parseHostMessage({ type: "transcript", ...value });
  const draft = "draft" in value && typeof value.draft === "string" ? value.draft : "";
  const dismissed =
    "dismissed" in value && Array.isArray(value.dismissed)
      ? value.dismissed.filter((d: unknown): d is string => typeof d === "string")
      : [];
  return restored && restored.type === "transcript"
    ? { sessionId: restored.sessionId, items: restored.items, draft, dismissed }
    : { ...empty, draft };
}

function byId<T extends HTMLElement>(id: string, kind: new () => T): T {
  const el = document.getElementById(id);
  if (!(el instanceof kind)) {
    throw new Error(`missing #${id}`);
  }
  return el;
}

const log = byId("log", HTMLElement);
const input = byId("input", HTMLTextAreaElement);
const sendButton = byId("send", HTMLButtonElement);
const stopButton = byId("stop", HTMLButtonElement);
const withdrawButton = byId("withdraw", HTMLButtonElement);
const working = byId("working", HTMLDivElement);
const workingLabel = byId("working-text", HTMLSpanElement);
const sessionLabel = byId("session", HTMLSpanElement);
const sessionsButton = byId("show-sessions", HTMLButtonElement);
const searchButton = byId("show-search", HTMLButtonElement);
const newButton = byId("new-session", HTMLButtonElement);
const sessionsPanel = byId("sessions-panel", HTMLElement);
const sessionsBody = byId("sessions-body", HTMLDivElement);
const searchPanel = byId("search-panel", HTMLElement);
const searchForm = byId("search-form", HTMLFormElement);
const searchInput = byId("search-input", HTMLInputElement);
const searchBody = byId("search-body", HTMLDivElement);
const bannerHost = byId("banner", HTMLDivElement);
const announcer = byId("announce", HTMLDivElement);

const saved = restoreState(vscode.getState());
let view: View = initialView({ sessionId: saved.sessionId, items: saved.items }, saved.dismissed);
/** Up/Down through the sent messages: where the input is in them (undefined: not recalling). */
let recallIndex: number | undefined;
let memoryOpen = false;
let focusAfterRender: (() => void) | undefined;
const rows = new Map<string, { signature: string; el: HTMLElement }>();

function post(message: WebviewMessage): void {
  vscode.postMessage(message);
}

let draftTimer: ReturnType<typeof setTimeout> | undefined;
let draftSent = saved.draft;

/** Tell the host the unsent message (at most every 250 ms; at once when it is sent). */
function keepDraft(now = false): void {
  clearTimeout(draftTimer);
  const flush = () => {
    if (input.value !== draftSent) {
      draftSent = input.value;
      post({ type: "draft", text: draftSent });
    }
  };
  if (now) {
    flush();
  } else {
    draftTimer = setTimeout(flush, 250);
  }
}

function save(): void {
  keepDraft();
  vscode.setState({
    sessionId: view.transcript.sessionId,
    items: view.transcript.items,
    draft: input.value,
    dismissed: view.dismissed,
  });
}

/** Say something to screen readers once (copied, restored, a turn not found). */
function announce(text: string): void {
  announcer.textContent = "";
  setTimeout(() => (announcer.textContent = text), 50);
}

/**
 * Keep keyboard focus across a redraw: a row brought up to date gets new children, so a focused
 * control in it (the confirmation's Cancel when the dry run arrives) is found again by its class.
 */
function keepFocus(): () => void {
  const active = document.activeElement;
  if (!(active instanceof HTMLElement) || active === log || !log.contains(active)) {
    return () => undefined;
  }
  const row = [...rows.values()].find((r) => r.el.contains(active))?.el;
  // the most specific class comes last (`secondary confirm-cancel`)
  const last = active.classList.item(active.classList.length - 1);
  const selector = last ? `.${last}` : active.tagName.toLowerCase();
  return () => {
    if (!active.isConnected && row?.isConnected) {
      row.querySelector<HTMLElement>(selector)?.focus({ preventScroll: true });
    }
  };
}

function renderLog(before: View, force: boolean): void {
  const restoreFocus = keepFocus();
  const items = view.transcript.items;
  const checkpoints = view.checkpoints.sessionId === view.transcript.sessionId ? view.checkpoints.list : [];
  const sessionChanged = before.transcript.sessionId !== view.transcript.sessionId;
  if (sessionChanged) {
    rows.clear();
    log.replaceChildren();
  }
  const stick = force || sessionChanged || log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  const now = new Date();
  const seen = new Set<string>();
  let cursor: ChildNode | null = log.firstChild;
  for (const row of timeline(items, checkpoints)) {
    const key = rowKey(row);
    const streaming = rowStreaming(view, row);
    const signature = rowSignature(view, row, streaming);
    seen.add(key);
    let entry = rows.get(key);
    if (!entry) {
      entry = { signature, el: rowElement(view, row, streaming, now) };
      rows.set(key, entry);
    } else if (entry.signature !== signature) {
      const wasCursor = entry.el === cursor;
      entry.el = morph(entry.el, rowElement(view, row, streaming, now));
      entry.signature = signature;
      if (wasCursor) {
        cursor = entry.el;
      }
    }
    if (entry.el === cursor) {
      cursor = cursor.nextSibling;
    } else {
      log.insertBefore(entry.el, cursor);
    }
  }
  while (cursor) {
    const next: ChildNode | null = cursor.nextSibling;
    cursor.remove();
    cursor = next;
  }
  for (const key of [...rows.keys()]) {
    if (!seen.has(key)) {
      rows.delete(key);
    }
  }
  log.classList.toggle("empty", items.length === 0);
  restoreFocus();
  if (view.reveal?.due) {
    reveal(view.reveal.turn);
  } else if (stick) {
    log.scrollTop = log.scrollHeight;
  }
}

function reveal(turn: number | null): void {
  view = update(view, { type: "ui/revealed" });
  const target = turn === null ? null : log.querySelector<HTMLElement>(`.item[data-turn="${turn}"]`);
  if (!target) {
    announce(turn === null ? "Opened the session." : `Turn ${turn} is no longer in this transcript (rewound or compacted).`);
    log.scrollTop = log.scrollHeight;
    return;
  }
  for (const el of log.querySelectorAll(".revealed")) {
    el.classList.remove("revealed");
  }
  for (const el of log.querySelectorAll(`.item[data-turn="${turn}"]`)) {
    el.classList.add("revealed");
  }
  target.scrollIntoView({ block: "start" });
  target.focus({ preventScroll: true });
}

function renderHeader(): void {
  const sessionId = view.transcript.sessionId;
  const current = view.sessions?.find((s) => s.sessionId === sessionId);
  sessionLabel.textContent = current ? sessionTitle(current) : sessionId ? "New session" : "";
  sessionLabel.title = sessionId ? `session ${sessionId}` : "";
}

function renderBanner(): void {
  const shown = banner(view);
  bannerHost.hidden = shown === undefined;
  bannerHost.replaceChildren(...(shown ? [bannerElement(shown, new Date(), memoryOpen)] : []));
}

function renderPanels(before: View): void {
  sessionsPanel.hidden = view.panel !== "sessions";
  searchPanel.hidden = view.panel !== "search";
  sessionsButton.setAttribute("aria-expanded", String(view.panel === "sessions"));
  searchButton.setAttribute("aria-expanded", String(view.panel === "search"));
  if (view.panel === "sessions" && (before.sessions !== view.sessions || before.panel !== view.panel)) {
    if (view.sessions) {
      // "Show older sessions" had the focus: it goes to the first of those just listed.
      const more = document.activeElement?.classList.contains("more-sessions") === true;
      const older = olderSessions(view.sessions.length, view.sessionsTotal);
      const folded = foldedSessions(view.sessionsEmpty);
      sessionsBody.replaceChildren(sessionRows(view.sessions, new Date()), ...(older ? [older] : []), ...(folded ? [folded] : []));
      if (more) {
        const first = sessionsBody.querySelectorAll("li.session-row")[before.sessions?.length ?? 0];
        (first?.querySelector<HTMLElement>("button") ?? sessionsBody.querySelector<HTMLElement>("button.more-sessions"))?.focus();
      }
    } else {
      sessionsBody.replaceChildren(document.createTextNode("Loading…"));
    }
  }
  if (view.panel === "search" && (before.search !== view.search || before.sessions !== view.sessions || before.panel !== view.panel)) {
    searchBody.replaceChildren(searchRows(view));
  }
}

function renderWorking(): void {
  working.hidden = !view.running;
  workingLabel.textContent = workingText(view);
  withdrawButton.hidden = !(view.running && view.waiting > 0);
  document.body.classList.toggle("running", view.running);
  sendButton.title = view.running ? "Send: it waits for the running reply" : "Send (Enter)";
}

function render(before: View, force = false): void {
  if (
    force ||
    before.transcript !== view.transcript ||
    before.checkpoints !== view.checkpoints ||
    before.confirm !== view.confirm ||
    before.running !== view.running ||
    before.reveal !== view.reveal ||
    before.openSteps !== view.openSteps ||
    before.steps !== view.steps
  ) {
    renderLog(before, force);
  }
  if (force || before.sessions !== view.sessions || before.transcript.sessionId !== view.transcript.sessionId) {
    renderHeader();
  }
  if (force || banner(before) !== banner(view)) {
    renderBanner();
  }
  if (force || before.panel !== view.panel || before.sessions !== view.sessions || before.search !== view.search) {
    renderPanels(before);
  }
  if (force || before.running !== view.running || before.waiting !== view.waiting) {
    renderWorking();
  }
  const focus = focusAfterRender;
  focusAfterRender = undefined;
  focus?.();
}

function dispatch(action: HostMessage | UiAction): void {
  const before = view;
  view = update(view, action);
  if (action.type === "resume" && action.resume.sessionId !== before.resume?.sessionId) {
    memoryOpen = false;
  }
  render(before);
  save();
}

function send(): void {
  const text = input.value;
  if (text.trim() === "") {
    return;
  }
  input.value = "";
  recallIndex = undefined;
  post({ type: "send", text });
  save();
  keepDraft(true);
}

function openPanel(panel: Panel): void {
  if (view.panel !== panel && panel === "sessions") {
    post({ type: "listSessions" });
    focusAfterRender = () => sessionsPanel.querySelector<HTMLElement>("button")?.focus();
  } else if (view.panel !== panel && panel === "search") {
    focusAfterRender = () => {
      searchInput.focus();
      searchInput.select();
    };
  }
  dispatch({ type: "ui/panel", panel });
}

window.addEventListener("message", (event: MessageEvent<unknown>) => {
  const message = parseHostMessage(event.data);
  if (message?.type === "draft") {
    // the host's copy, for a view whose own state did not survive the reload
    if (input.value === "" && message.text !== "") {
      input.value = message.text;
      draftSent = message.text;
      save();
    }
  } else if (message?.type === "withdrawn") {
    // the waiting messages, taken back: into the input, before anything typed since
    input.value = withdrawnDraft(message.texts, input.value);
    save();
    keepDraft(true);
    input.focus();
  } else if (message) {
    dispatch(message);
  }
});

sendButton.addEventListener("click", send);
stopButton.addEventListener("click", () => post({ type: "stop" }));
withdrawButton.addEventListener("click", () => post({ type: "withdraw" }));
newButton.addEventListener("click", () => post({ type: "command", command: "newSession" }));
sessionsButton.addEventListener("click", () => openPanel("sessions"));
searchButton.addEventListener("click", () => openPanel("search"));

input.addEventListener("keydown", (event) => {
  if (event.isComposing) {
    return;
  }
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    send();
    return;
  }
  const atStart = input.selectionStart === 0 && input.selectionEnd === 0;
  const recalling = recallIndex !== undefined;
  if (event.key === "ArrowUp" && (input.value === "" || (recalling && atStart))) {
    const step = recall(sentMessages(view.transcript.items), recallIndex, -1);
    if (step.text !== "") {
      event.preventDefault();
      recallIndex = step.index;
      input.value = step.text;
      input.setSelectionRange(0, 0);
      save();
    }
  } else if (event.key === "ArrowDown" && recalling && input.selectionStart === input.value.length) {
    event.preventDefault();
    const step = recall(sentMessages(view.transcript.items), recallIndex, 1);
    recallIndex = step.index;
    input.value = step.text;
    save();
  }
});
input.addEventListener("input", () => {
  recallIndex = undefined;
  save();
});

function closest(target: EventTarget | null, selector: string): HTMLElement | undefined {
  return target instanceof Element ? (target.closest<HTMLElement>(selector) ?? undefined) : undefined;
}

function flash(button: HTMLElement, text: string): void {
  const label = button.textContent;
  button.textContent = text;
  announce(text);
  setTimeout(() => (button.textContent = label), 1200);
}

log.addEventListener("click", (event) => {
  const { target } = event;
  const code = () => closest(target, ".code-block")?.querySelector("code")?.textContent ?? "";
  const copy = closest(target, "button.copy");
  if (copy) {
    post({ type: "copy", text: code() });
    flash(copy, "Copied");
    return;
  }
  const insert = closest(target, "button.insert");
  if (insert) {
    post({ type: "insert", text: code() });
    flash(insert, "Inserted");
    return;
  }
  const steps = closest(target, "button.steps-toggle");
  if (steps) {
    const turn = Number(steps.dataset.turn);
    const opening = !view.openSteps.includes(turn);
    dispatch({ type: "ui/toggleSteps", turn });
    if (opening) {
      post({ type: "loadSteps" });
    }
    return;
  }
  const restore = closest(target, "button.restore");
  if (restore) {
    const number = Number(restore.dataset.number);
    if (view.confirm?.number === number) {
      dispatch({ type: "ui/cancelRestore" });
      return;
    }
    focusAfterRender = () => log.querySelector<HTMLElement>(".confirm .confirm-cancel")?.focus();
    dispatch({ type: "ui/confirmRestore", number });
    post({ type: "previewRestore", number });
    return;
  }
  const confirm = closest(target, "button.confirm-restore");
  if (confirm) {
    const number = Number(confirm.dataset.number);
    dispatch({ type: "ui/cancelRestore" });
    post({ type: "restore", number });
    announce(`Restoring checkpoint ${number}…`);
    input.focus();
    return;
  }
  if (closest(target, "button.confirm-cancel")) {
    const number = view.confirm?.number;
    focusAfterRender = () => log.querySelector<HTMLElement>(`.checkpoint[data-checkpoint="${number}"] button.restore`)?.focus();
    dispatch({ type: "ui/cancelRestore" });
  }
});
log.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && view.confirm && closest(event.target, ".checkpoint")) {
    const number = view.confirm.number;
    focusAfterRender = () => log.querySelector<HTMLElement>(`.checkpoint[data-checkpoint="${number}"] button.restore`)?.focus();
    dispatch({ type: "ui/cancelRestore" });
  }
});

bannerHost.addEventListener("click", (event) => {
  const { target } = event;
  const open = closest(target, "button.open-file");
  const diff = closest(target, "button.diff-file");
  if (open?.dataset.path) {
    post({ type: "openFile", path: open.dataset.path });
  } else if (diff?.dataset.path) {
    post({ type: "diffFile", path: diff.dataset.path });
  } else if (closest(target, "button.dismiss")) {
    focusAfterRender = () => input.focus();
    dispatch({ type: "ui/dismissBanner" });
  }
});
bannerHost.addEventListener(
  "toggle",
  (event) => {
    if (event.target instanceof HTMLDetailsElement && event.target.classList.contains("memory")) {
      memoryOpen = event.target.open;
    }
  },
  true,
);

sessionsPanel.addEventListener("click", (event) => {
  const { target } = event;
  const open = closest(target, "button.open-session");
  const fork = closest(target, "button.fork-session");
  if (open?.dataset.session) {
    post({ type: "openSession", sessionId: open.dataset.session });
    dispatch({ type: "ui/panel", panel: "none" });
    input.focus();
  } else if (fork?.dataset.session) {
    post({ type: "forkSession", sessionId: fork.dataset.session });
    dispatch({ type: "ui/panel", panel: "none" });
    input.focus();
  } else if (closest(target, "button.more-sessions")) {
    post({ type: "moreSessions" });
  } else if (closest(target, "button.close-panel")) {
    dispatch({ type: "ui/panel", panel: "none" });
    sessionsButton.focus();
  }
});

searchForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const query = searchInput.value.trim();
  if (query !== "") {
    dispatch({ type: "ui/search", query });
    post({ type: "search", query });
  }
});
searchPanel.addEventListener("click", (event) => {
  const { target } = event;
  const hit = closest(target, "button.search-hit");
  if (hit?.dataset.session) {
    const turn = hit.dataset.turn === undefined ? null : Number(hit.dataset.turn);
    const sessionId = hit.dataset.session;
    const here = sessionId === view.transcript.sessionId;
    dispatch({ type: "ui/reveal", sessionId, turn });
    if (!here) {
      post({ type: "openSession", sessionId });
    }
  } else if (closest(target, "button.close-panel")) {
    dispatch({ type: "ui/panel", panel: "none" });
    searchButton.focus();
  }
});

for (const panel of [sessionsPanel, searchPanel]) {
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      dispatch({ type: "ui/panel", panel: "none" });
      (panel === sessionsPanel ? sessionsButton : searchButton).focus();
    }
  });
}

input.value = saved.draft;
render(view, true);
post({ type: "ready" });
