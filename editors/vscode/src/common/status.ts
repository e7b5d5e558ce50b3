/** Status bar item: short session id, idle/running, drift count. */
import * as vscode from "vscode";

export interface StatusView {
  sessionId: string;
  running: boolean;
  drift: number;
  connected: boolean;
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

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private view: StatusView = { sessionId: "", running: false, drift: 0, connected: false };

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
    this.item.tooltip = this.view.sessionId
      ? `Agent Assist session ${this.view.sessionId} (${this.view.running ? "running" : "idle"}), drifted files: ${this.view.drift}`
      : "Agent Assist";
  }

  dispose(): void {
    this.item.dispose();
  }
}
