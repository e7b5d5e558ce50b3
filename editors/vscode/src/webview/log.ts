/** The transcript log: drawn row by row from the view (only changed rows redrawn), and its buttons. */
import { closest, morph } from "./dom";
import { timeline, update, type View } from "./model";
import { rowElement, rowKey, rowSignature, rowStreaming } from "./render";
import type { Sidebar } from "./state";

/**
 * Keep keyboard focus across a redraw: a row brought up to date gets new children, so a focused
 * control in it (the confirmation's Cancel when the dry run arrives) is found again by its class.
 */
function keepFocus(app: Sidebar): () => void {
  const { log } = app.el;
  const active = document.activeElement;
  if (!(active instanceof HTMLElement) || active === log || !log.contains(active)) {
    return () => undefined;
  }
  const row = [...app.rows.values()].find((r) => r.el.contains(active))?.el;
  // the most specific class comes last (`secondary confirm-cancel`)
  const last = active.classList.item(active.classList.length - 1);
  const selector = last ? `.${last}` : active.tagName.toLowerCase();
  return () => {
    if (!active.isConnected && row?.isConnected) {
      row.querySelector<HTMLElement>(selector)?.focus({ preventScroll: true });
    }
  };
}

/** Whether the log is drawn from these fields of the view. */
export function logChanged(before: View, view: View): boolean {
  return (
    before.transcript !== view.transcript ||
    before.checkpoints !== view.checkpoints ||
    before.confirm !== view.confirm ||
    before.running !== view.running ||
    before.reveal !== view.reveal ||
    before.openSteps !== view.openSteps ||
    before.steps !== view.steps
  );
}

export function renderLog(app: Sidebar, before: View, force: boolean): void {
  const { log } = app.el;
  const { rows } = app;
  const view = app.view;
  const restoreFocus = keepFocus(app);
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
    reveal(app, view.reveal.turn);
  } else if (stick) {
    log.scrollTop = log.scrollHeight;
  }
}

function reveal(app: Sidebar, turn: number | null): void {
  const { log } = app.el;
  app.view = update(app.view, { type: "ui/revealed" });
  const target = turn === null ? null : log.querySelector<HTMLElement>(`.item[data-turn="${turn}"]`);
  if (!target) {
    app.announce(turn === null ? "Opened the session." : `Turn ${turn} is no longer in this transcript (rewound or compacted).`);
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

function flash(app: Sidebar, button: HTMLElement, text: string): void {
  const label = button.textContent;
  button.textContent = text;
  app.announce(text);
  setTimeout(() => (button.textContent = label), 1200);
}

/** The log's buttons: copy and insert a code block, a turn's steps, restoring a checkpoint. */
export function bindLog(app: Sidebar): void {
  const { log, input } = app.el;
  log.addEventListener("click", (event) => {
    const { target } = event;
    const code = () => closest(target, ".code-block")?.querySelector("code")?.textContent ?? "";
    const copy = closest(target, "button.copy");
    if (copy) {
      app.post({ type: "copy", text: code() });
      flash(app, copy, "Copied");
      return;
    }
    const insert = closest(target, "button.insert");
    if (insert) {
      app.post({ type: "insert", text: code() });
      flash(app, insert, "Inserted");
      return;
    }
    const steps = closest(target, "button.steps-toggle");
    if (steps) {
      const turn = Number(steps.dataset.turn);
      const opening = !app.view.openSteps.includes(turn);
      app.dispatch({ type: "ui/toggleSteps", turn });
      if (opening) {
        app.post({ type: "loadSteps" });
      }
      return;
    }
    const restore = closest(target, "button.restore");
    if (restore) {
      const number = Number(restore.dataset.number);
      if (app.view.confirm?.number === number) {
        app.dispatch({ type: "ui/cancelRestore" });
        return;
      }
      app.focusAfterRender = () => log.querySelector<HTMLElement>(".confirm .confirm-cancel")?.focus();
      app.dispatch({ type: "ui/confirmRestore", number });
      app.post({ type: "previewRestore", number });
      return;
    }
    const confirm = closest(target, "button.confirm-restore");
    if (confirm) {
      const number = Number(confirm.dataset.number);
      app.dispatch({ type: "ui/cancelRestore" });
      app.post({ type: "restore", number });
      app.announce(`Restoring checkpoint ${number}…`);
      input.focus();
      return;
    }
    if (closest(target, "button.confirm-cancel")) {
      const number = app.view.confirm?.number;
      app.focusAfterRender = () => log.querySelector<HTMLElement>(`.checkpoint[data-checkpoint="${number}"] button.restore`)?.focus();
      app.dispatch({ type: "ui/cancelRestore" });
    }
  });
  log.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && app.view.confirm && closest(event.target, ".checkpoint")) {
      const number = app.view.confirm.number;
      app.focusAfterRender = () => log.querySelector<HTMLElement>(`.checkpoint[data-checkpoint="${number}"] button.restore`)?.focus();
      app.dispatch({ type: "ui/cancelRestore" });
    }
  });
}
