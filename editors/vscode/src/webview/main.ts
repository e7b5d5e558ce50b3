/** The sidebar's script: wires the parts around one state object; talks only to the extension host. */
import { type HostMessage, parseHostMessage, type WebviewMessage } from "../common/messages";
import { sidebarElements } from "./dom";
import { bindInput, keepDraft, renderWorking, restoreDraft, takeBack } from "./input";
import { bindLog, logChanged, renderLog } from "./log";
import { banner, initialView, type UiAction, update, type View } from "./model";
import { bindPanels, renderBanner, renderHeader, renderPanels } from "./panels";
import { restoreState, type SavedState, type Sidebar } from "./state";

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: SavedState): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const saved = restoreState(vscode.getState());

const app: Sidebar = {
  el: sidebarElements(),
  view: initialView({ sessionId: saved.sessionId, items: saved.items }, saved.dismissed),
  memoryOpen: false,
  focusAfterRender: undefined,
  recallIndex: undefined,
  draftTimer: undefined,
  draftSent: saved.draft,
  rows: new Map(),
  post(message: WebviewMessage): void {
    vscode.postMessage(message);
  },
  dispatch(action: HostMessage | UiAction): void {
    const before = app.view;
    app.view = update(app.view, action);
    if (action.type === "resume" && action.resume.sessionId !== before.resume?.sessionId) {
      app.memoryOpen = false;
    }
    render(before);
    app.save();
  },
  save(): void {
    keepDraft(app);
    vscode.setState({
      sessionId: app.view.transcript.sessionId,
      items: app.view.transcript.items,
      draft: app.el.input.value,
      dismissed: app.view.dismissed,
    });
  },
  /** Say something to screen readers once (copied, restored, a turn not found). */
  announce(text: string): void {
    const { announcer } = app.el;
    announcer.textContent = "";
    setTimeout(() => (announcer.textContent = text), 50);
  },
};

/** Redraw what changed between `before` and the view (everything when forced). */
function render(before: View, force = false): void {
  if (force || logChanged(before, app.view)) {
    renderLog(app, before, force);
  }
  const view = app.view;
  if (force || before.sessions !== view.sessions || before.transcript.sessionId !== view.transcript.sessionId) {
    renderHeader(app);
  }
  if (force || banner(before) !== banner(view)) {
    renderBanner(app);
  }
  if (force || before.panel !== view.panel || before.sessions !== view.sessions || before.search !== view.search) {
    renderPanels(app, before);
  }
  if (force || before.running !== view.running || before.waiting !== view.waiting) {
    renderWorking(app);
  }
  const focus = app.focusAfterRender;
  app.focusAfterRender = undefined;
  focus?.();
}

window.addEventListener("message", (event: MessageEvent<unknown>) => {
  const message = parseHostMessage(event.data);
  if (message?.type === "draft") {
    restoreDraft(app, message.text);
  } else if (message?.type === "withdrawn") {
    takeBack(app, message.texts);
  } else if (message) {
    app.dispatch(message);
  }
});
bindInput(app);
bindPanels(app);
bindLog(app);

app.el.input.value = saved.draft;
render(app.view, true);
app.post({ type: "ready" });
