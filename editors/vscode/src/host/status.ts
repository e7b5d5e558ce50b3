/** Status bar item: short session id, idle/running, drift count; turns, phase and the context window in its tooltip. */
import * as vscode from "vscode";
import { describeTurns, type Phase } from "../common/protocol";

export interface StatusView {
  sessionId: string;
  running: boolean;
  drift: number;
  connected: boolean;
  /** Tokens of the context window in use (`agentAssist/status`); 0 until known. */
  contextWindow: number;
  /** Where the window comes from (`agentAssist/status`): `default`, `setting`, `/props`, `/v1/models`, `overflow`. */
  contextWindowSource?: string;
  /** Turns of the session (`agentAssist/status`). */
  turns: number;
  phase: Phase | null;
}

export function statusText(view: StatusView): string {
  if (!view.connected) {
    return "$(debug-disconnect) Agent Assist";
  }
  const icon = view.running ? "$(sync~spin)" : "$(comment-discussion)";
  const id = view.sessionId ? view.sessionId.slice(0, 8) : "…";
  const drift = view.drift > 0 ? ` $(warning) ${view.drift}` : "";
  return `${icon} ${id} ${view.running ? "running" : "idle"}${drift}`;
}

/** Where a window the server learned comes from; nothing for the default or the user's setting. */
export function windowSource(source: string | undefined): string {
  if (source === "/props" || source === "/v1/models") {
    return ` (stated by the model server: ${source})`;
  }
  return source === "overflow" ? " (the model server refused a longer prompt)" : "";
}

export function statusTooltip(view: StatusView): string {
  if (!view.sessionId) {
    return "Agent Assist";
  }
  const context =
    view.contextWindow > 0 ? `, context window: ${view.contextWindow} tokens${windowSource(view.contextWindowSource)}` : "";
  const turns = describeTurns(view.turns, view.phase);
  return `Agent Assist session ${view.sessionId} (${view.running ? "running" : "idle"}), ${turns}, drifted files: ${view.drift}${context}`;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private view: StatusView = {
    sessionId: "",
    running: false,
    drift: 0,
    connected: false,
    contextWindow: 0,
    turns: 0,
    phase: null,
  };

  constructor() {
    this.item.name = "Agent Assist";
    this.item.command = "agentAssist.chat.focus";
    this.render();
    this.item.show();
  }

  update(change: Partial<StatusView>): void {
    this.view = { ...this.view, ...change };
    this.render();
  }

  private render(): void {
    this.item.text = statusText(this.view);
    this.item.tooltip = statusTooltip(this.view);
  }

  dispose(): void {
    this.item.dispose();
  }
}
