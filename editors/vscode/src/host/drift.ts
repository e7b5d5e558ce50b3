/** `agentAssist/drift` as a warning notification listing the files, with "Open file" buttons. */
import * as path from "node:path";
import * as vscode from "vscode";
import { describeDrift, type DriftParams } from "../common/protocol";

const MAX_BUTTONS = 3;

export async function showDrift(params: DriftParams): Promise<void> {
  const lines = describeDrift(params);
  if (lines.length === 0) {
    return;
  }
  const head =
    params.source === "resume" ? "files changed since the last session" : "files changed outside the assistant";
  const openable = [...params.modified, ...params.created].slice(0, MAX_BUTTONS);
  const buttons = openable.map((file) => `Open ${file}`);
  const choice = await vscode.window.showWarningMessage(`Agent Assist: ${head}: ${lines.join(", ")}`, ...buttons);
  const index = choice === undefined ? -1 : buttons.indexOf(choice);
  const file = openable[index];
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (file !== undefined && folder) {
    const uri = path.isAbsolute(file) ? vscode.Uri.file(file) : vscode.Uri.joinPath(folder.uri, file);
    await vscode.window.showTextDocument(uri);
  }
}
