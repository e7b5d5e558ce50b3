/** The "Agent Assist" output channel: extension logs and the server's stderr. */
import * as vscode from "vscode";

export function createLog(): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel("Agent Assist", { log: true });
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
