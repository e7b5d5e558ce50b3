/** The composer: the input with its draft (kept by the host) and recall, send, stop and withdraw, the working line. */
import { recall, sentMessages, withdrawnDraft, workingText } from "./model";
import type { Sidebar } from "./state";

/** Tell the host the unsent message (at most every 250 ms; at once when it is sent). */
export function keepDraft(app: Sidebar, now = false): void {
  const { input } = app.el;
  clearTimeout(app.draftTimer);
  const flush = () => {
    if (input.value !== app.draftSent) {
      app.draftSent = input.value;
      app.post({ type: "draft", text: app.draftSent });
    }
  };
  if (now) {
    flush();
  } else {
    app.draftTimer = setTimeout(flush, 250);
  }
}

/** The host's copy of the draft, for a view whose own state did not survive the reload. */
export function restoreDraft(app: Sidebar, text: string): void {
  const { input } = app.el;
  if (input.value === "" && text !== "") {
    input.value = text;
    app.draftSent = text;
    app.save();
  }
}

/** The waiting messages, taken back: into the input, before anything typed since. */
export function takeBack(app: Sidebar, texts: readonly string[]): void {
  const { input } = app.el;
  input.value = withdrawnDraft(texts, input.value);
  app.save();
  keepDraft(app, true);
  input.focus();
}

function send(app: Sidebar): void {
  const { input } = app.el;
  const text = input.value;
  if (text.trim() === "") {
    return;
  }
  input.value = "";
  app.recallIndex = undefined;
  app.post({ type: "send", text });
  app.save();
  keepDraft(app, true);
}

export function renderWorking(app: Sidebar): void {
  const { working, workingLabel, withdrawButton, sendButton } = app.el;
  const view = app.view;
  working.hidden = !view.running;
  workingLabel.textContent = workingText(view);
  withdrawButton.hidden = !(view.running && view.waiting > 0);
  document.body.classList.toggle("running", view.running);
  sendButton.title = view.running ? "Send: it waits for the running reply" : "Send (Enter)";
}

/** Enter sends (Shift+Enter: a new line); Up/Down recall the sent messages; every change is saved. */
export function bindInput(app: Sidebar): void {
  const { input, sendButton, stopButton, withdrawButton } = app.el;
  sendButton.addEventListener("click", () => send(app));
  stopButton.addEventListener("click", () => app.post({ type: "stop" }));
  withdrawButton.addEventListener("click", () => app.post({ type: "withdraw" }));
  input.addEventListener("keydown", (event) => {
    if (event.isComposing) {
      return;
    }
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      send(app);
      return;
    }
    const atStart = input.selectionStart === 0 && input.selectionEnd === 0;
    const recalling = app.recallIndex !== undefined;
    if (event.key === "ArrowUp" && (input.value === "" || (recalling && atStart))) {
      const step = recall(sentMessages(app.view.transcript.items), app.recallIndex, -1);
      if (step.text !== "") {
        event.preventDefault();
        app.recallIndex = step.index;
        input.value = step.text;
        input.setSelectionRange(0, 0);
        app.save();
      }
    } else if (event.key === "ArrowDown" && recalling && input.selectionStart === input.value.length) {
      event.preventDefault();
      const step = recall(sentMessages(app.view.transcript.items), app.recallIndex, 1);
      app.recallIndex = step.index;
      input.value = step.text;
      app.save();
    }
  });
  input.addEventListener("input", () => {
    app.recallIndex = undefined;
    app.save();
  });
}
