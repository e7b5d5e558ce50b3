/** The unsent message, kept by the host too (workspaceState): a reload can lose the webview's own state. */
import type * as vscode from "vscode";

const KEY = "agentAssist.draft";
const MAX = 100_000;

export class DraftStore {
  constructor(private readonly state: vscode.Memento) {}

  get(): string {
    const value = this.state.get<unknown>(KEY);
    return typeof value === "string" ? value : "";
  }

  set(text: string): void {
    void this.state.update(KEY, text === "" ? undefined : text.slice(0, MAX));
  }
}
