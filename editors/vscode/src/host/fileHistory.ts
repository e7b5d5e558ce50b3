/**
 * "Agent Assist: History of This File": the recorded changes of a file (`agentAssist/fileHistory`),
 * each opening a diff of its two sides, restoring the earlier one or showing its turn read-only.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { type Side, changeParams, parseVersionUri, VERSION_SCHEME, type VersionRef, versionUri } from "./fileVersions";
import { errorText } from "./logging";
import { FILE_HISTORY, FILE_VERSION, type FileChange, INSPECT, RESTORE_FILE, type RestoreFileResult } from "../common/protocol";
import type { AgentServer } from "./server";
import { inspectMarkdown, localTime, shorten } from "../common/steps";

export const INSPECT_SCHEME = "agent-assist-inspect";

/** `turn 2 step 1`, or `a drift at 2026-12-05 14:03:07` for a change outside a step. */
export function changeWhere(change: Pick<FileChange, "turn" | "step" | "ts">): string {
  if (change.turn === null) {
    return `the drift at ${localTime(change.ts)}`;
  }
  return change.step === null ? `turn ${change.turn}` : `turn ${change.turn} step ${change.step}`;
}

export type ChangePickItem = vscode.QuickPickItem & { change: FileChange };

/** The buttons of an entry: restore its earlier side, and (a step of a turn) show that turn. */
export const RESTORE_BUTTON = { tooltip: "Restore this version…", icon: "discard" } as const;
export const INSPECT_BUTTON = { tooltip: "Open session at this turn (read-only)", icon: "eye" } as const;

/** One row of the file's history: `2026-12-05 14:03:07 · write`, the session and step, the user's message. */
export function changePickItem(change: FileChange): { label: string; description: string; detail: string; change: FileChange } {
  const title = change.sessionTitle || `(untitled) ${change.sessionId.slice(0, 8)}`;
  const where = change.turn === null ? "outside a turn" : changeWhere(change);
  const asked = change.userMessage ? shorten(change.userMessage, 100) : change.kind === "drift" ? "changed outside the assistant" : "";
  const noDiff = change.diff === null && change.reason ? ` (no diff: ${change.reason})` : "";
  return {
    label: `${localTime(change.ts)} · ${change.kind}`,
    description: `${title} · ${where}`,
    detail: `${asked}${noDiff}`.trim(),
    change,
  };
}

/** The two sides of a change, as `agent-assist-version:` documents name them. */
export function changeRef(filePath: string, change: FileChange, side: Side): VersionRef {
  return { path: filePath, sessionId: change.sessionId, turn: change.turn, step: change.step, ts: change.ts, side };
}

/** `config.yaml (before ↔ after turn 2 step 1)`. */
export function diffTitle(filePath: string, change: FileChange): string {
  return `${path.posix.basename(filePath)} (before ↔ after ${changeWhere(change)})`;
}

/** The modal asked before a restore: it names the file and the step, and says whether it deletes the file. */
export function restoreQuestion(filePath: string, change: FileChange): { message: string; detail: string; action: string; allowDelete: boolean } {
  const where = changeWhere(change);
  // null before, and no reason why: the file did not exist (else its content was not known)
  if (change.beforeSha256 === null && !change.reason) {
    return {
      message: `Delete ${filePath}? It did not exist before ${where}.`,
      detail: "Restoring that version deletes the file.",
      action: "Delete file",
      allowDelete: true,
    };
  }
  return {
    message: `Restore ${filePath} as it was before ${where}?`,
    detail: "Its content is replaced in the editor with that version (Undo takes it back; Save keeps it).",
    action: "Restore",
    allowDelete: false,
  };
}

/** Said in the restore question when the file has unsaved changes in the editor. */
export const UNSAVED_NOTE = "Its unsaved changes are saved first (the restore can be undone after).";

/** What a restore did, in one line. */
export function restoredText(filePath: string, change: FileChange, result: RestoreFileResult): string {
  return result.restored
    ? `restored ${result.path} as it was before ${changeWhere(change)}`
    : `${filePath} was not restored${result.reason ? `: ${result.reason}` : ""}`;
}

/** `agent-assist-inspect:/0123abcd turn 2.md?session=…&turn=2`: one turn of any session, read-only (Markdown). */
export function inspectUriParts(sessionId: string, turn: number): { scheme: string; path: string; query: string } {
  return { scheme: INSPECT_SCHEME, path: `/${sessionId.slice(0, 8)} turn ${turn}.md`, query: new URLSearchParams({ session: sessionId, turn: String(turn) }).toString() };
}

export function parseInspectUri(uri: { query: string }): { sessionId: string; turn: number } | undefined {
  const query = new URLSearchParams(uri.query);
  const sessionId = query.get("session");
  const turn = query.get("turn") ?? "";
  return sessionId && /^[1-9]\d*$/.test(turn) ? { sessionId, turn: Number(turn) } : undefined;
}

/** The inspected turn as a read-only Markdown document. */
export class InspectDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly server: AgentServer) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const target = parseInspectUri(uri);
    if (!target) {
      return `(not a session turn: ${uri.toString()})\n`;
    }
    try {
      const result = await this.server.request(INSPECT, { sessionId: target.sessionId, turn: target.turn });
      return inspectMarkdown(result, result.turns);
    } catch (error) {
      return `(session ${target.sessionId.slice(0, 8)} turn ${target.turn} could not be read: ${errorText(error)})\n`;
    }
  }
}

function info(text: string): void {
  void vscode.window.showInformationMessage(`Agent Assist: ${text}`);
}

export class FileHistoryCommands {
  constructor(private readonly server: AgentServer) {}

  /** The file of the editor title or explorer menu it was run from, else the active editor's. */
  async fileHistory(resource?: vscode.Uri): Promise<void> {
    const uri = resource instanceof vscode.Uri ? resource : vscode.window.activeTextEditor?.document.uri;
    if (!uri || uri.scheme !== "file") {
      info("open a file of the workspace first, then ask for its history");
      return;
    }
    const result = await this.server.request(FILE_HISTORY, { path: uri.fsPath });
    if (result.changes.length === 0) {
      info(`no change of ${result.path} was recorded`);
      return;
    }
    await this.pick(result.path, result.changes, result.truncated === true);
  }

  private pick(filePath: string, changes: FileChange[], truncated: boolean): Promise<void> {
    const quickPick = vscode.window.createQuickPick<ChangePickItem>();
    quickPick.title = `History of ${filePath}${truncated ? ` (the newest ${changes.length})` : ""}`;
    quickPick.placeholder = "Pick a change to see its diff; the buttons restore the version before it or show its turn";
    quickPick.matchOnDescription = true;
    quickPick.matchOnDetail = true;
    const restore = { iconPath: new vscode.ThemeIcon(RESTORE_BUTTON.icon), tooltip: RESTORE_BUTTON.tooltip };
    const inspect = { iconPath: new vscode.ThemeIcon(INSPECT_BUTTON.icon), tooltip: INSPECT_BUTTON.tooltip };
    quickPick.items = changes.map((change) => ({
      ...changePickItem(change),
      buttons: change.turn === null ? [restore] : [restore, inspect],
    }));
    return new Promise<void>((resolve) => {
      const run = (work: () => Promise<void>) => {
        quickPick.hide();
        work().catch((error: unknown) => void vscode.window.showErrorMessage(`Agent Assist: ${errorText(error)}`));
      };
      quickPick.onDidAccept(() => {
        const item = quickPick.selectedItems[0];
        if (item) {
          run(() => this.diff(filePath, item.change));
        }
      });
      quickPick.onDidTriggerItemButton(({ item, button }) => {
        run(() => (button.tooltip === RESTORE_BUTTON.tooltip ? this.restore(filePath, item.change) : this.inspect(item.change)));
      });
      quickPick.onDidHide(() => {
        quickPick.dispose();
        resolve();
      });
      quickPick.show();
    });
  }

  async diff(filePath: string, change: FileChange): Promise<void> {
    await vscode.commands.executeCommand(
      "vscode.diff",
      versionUri(changeRef(filePath, change, "before")),
      versionUri(changeRef(filePath, change, "after")),
      diffTitle(filePath, change),
      { preview: true },
    );
  }

  async restore(filePath: string, change: FileChange): Promise<void> {
    const question = restoreQuestion(filePath, change);
    // The server replaces the whole text by the range it knows, the saved file's (the editor's
    // buffers are not synced to it): unsaved changes are saved first, so the edit covers them.
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const open = root ? vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path.join(root, filePath)) : undefined;
    const dirty = open?.isDirty === true;
    const detail = dirty ? `${question.detail} ${UNSAVED_NOTE}` : question.detail;
    const choice = await vscode.window.showWarningMessage(question.message, { modal: true, detail }, question.action);
    if (choice !== question.action) {
      return;
    }
    if (dirty && !(await open.save())) {
      throw new Error(`${filePath} has unsaved changes that could not be saved: not restored`);
    }
    const params = { ...changeParams(changeRef(filePath, change, "before")), ...(question.allowDelete ? { allowDelete: true } : {}) };
    const result = await this.server.request(RESTORE_FILE, params);
    if (result.restored) {
      info(restoredText(filePath, change, result));
    } else {
      void vscode.window.showWarningMessage(`Agent Assist: ${restoredText(filePath, change, result)}`);
    }
  }

  /**
   * The change a diff of this command shows (the editor title's actions, or the palette while it
   * is the active editor): both sides name it. The same as the quick pick's buttons, by keyboard.
   */
  private shownChange(resource?: vscode.Uri): { ref: VersionRef; change: FileChange } | undefined {
    const uri = resource instanceof vscode.Uri ? resource : vscode.window.activeTextEditor?.document.uri;
    const ref = uri?.scheme === VERSION_SCHEME ? parseVersionUri(uri) : undefined;
    if (!ref) {
      info("open a change from History of This File first");
      return undefined;
    }
    const change: FileChange = {
      sessionId: ref.sessionId,
      sessionTitle: null,
      turn: ref.turn,
      step: ref.step,
      ts: ref.ts ?? "",
      kind: ref.turn === null ? "drift" : "write",
      tool: null,
      userMessage: null,
      beforeSha256: null,
      afterSha256: null,
      diff: null,
    };
    return { ref, change };
  }

  async restoreShown(resource?: vscode.Uri): Promise<void> {
    const shown = this.shownChange(resource);
    if (!shown) {
      return;
    }
    // whether the file existed before it (else restoring deletes it), and whether that was kept
    const before = await this.server.request(FILE_VERSION, changeParams({ ...shown.ref, side: "before" }));
    const change = { ...shown.change, beforeSha256: before.sha256, ...(before.reason ? { reason: before.reason } : {}) };
    await this.restore(shown.ref.path, change);
  }

  async inspectShown(resource?: vscode.Uri): Promise<void> {
    const shown = this.shownChange(resource);
    if (shown?.change.turn === null) {
      info("that change was outside a turn (a drift): there is no turn to show");
    } else if (shown) {
      await this.inspect(shown.change);
    }
  }

  async inspect(change: FileChange): Promise<void> {
    if (change.turn === null) {
      return;
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.from(inspectUriParts(change.sessionId, change.turn)));
    await vscode.window.showTextDocument(doc, { preview: true });
  }
}
