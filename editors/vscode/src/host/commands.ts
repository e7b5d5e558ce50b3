/** The palette and view-title commands: thin calls to the server with quick picks where needed. */
import * as vscode from "vscode";
import { SESSION_PAGE } from "./constants";
import { errorText } from "./logging";
import {
  CHECKPOINT,
  COMPACT,
  describeTurns,
  type FailureData,
  FORK,
  NEW,
  type NewResult,
  type ResetResult,
  OPEN,
  REQUEST_FAILED,
  RESET,
  RESUME,
  SAVE,
  SEARCH,
  type SearchHit,
  type SessionInfo,
  SESSIONS,
  type SessionsResult,
} from "../common/protocol";
import type { AgentServer } from "./server";

type Handler = () => Promise<void>;

/** One row of the Sessions quick pick: title, short id, turns and phase, when it was updated. */
export function sessionPickItem(s: SessionInfo): vscode.QuickPickItem & { sessionId: string } {
  return {
    label: `${s.active ? "$(check) " : ""}${s.title || "(untitled)"}`,
    description: `${s.sessionId.slice(0, 8)} · ${describeTurns(s.turns, s.phase)}`,
    detail: `updated ${s.updatedAt}${s.parentSessionId ? ` · forked from ${s.parentSessionId.slice(0, 8)}` : ""}`,
    sessionId: s.sessionId,
  };
}

/**
 * The rows of the Sessions quick pick; last, if the server folded sessions without a turn, a
 * line saying how many (no session: choosing it does nothing).
 */
export function sessionPickItems(result: SessionsResult): (vscode.QuickPickItem & { sessionId: string })[] {
  const items = result.sessions.map(sessionPickItem);
  const folded = result.empty;
  if (folded > 0) {
    const label = `$(info) ${folded} session${folded === 1 ? "" : "s"} without a turn not shown`;
    items.push({ label, alwaysShow: true, sessionId: "" });
  }
  return items;
}

/** One row of the search results: the snippet, then short id, the turn (when the hit has one) and the event type. */
export function searchPickItem(hit: SearchHit): vscode.QuickPickItem & { sessionId: string } {
  const turn = hit.turn === null ? "" : `turn ${hit.turn} · `;
  return {
    label: hit.snippet.replace(/\s+/g, " "),
    description: `${hit.sessionId.slice(0, 8)} · ${turn}${hit.type}`,
    sessionId: hit.sessionId,
  };
}

/** New session keeps the previous one: `new session 0123abcd (the previous one is kept)`. */
export function newSessionText(result: NewResult): string {
  const kept = result.previousSessionId === null ? "" : " (the previous one is kept)";
  return `new session ${result.sessionId.slice(0, 8)}${kept}`;
}

/** Reset deleted the session: the new id and any spec/template files deleted with it. */
export function resetText(result: ResetResult): string {
  const deleted = result.deletedFiles.length > 0 ? `; also deleted ${result.deletedFiles.join(", ")}` : "";
  return `session deleted; new session ${result.sessionId.slice(0, 8)}${deleted}`;
}

/** The modal asked before `agentAssist/reset`: it names what is deleted. */
export const RESET_CONFIRMATION = {
  message: "Reset Session (delete it)?",
  detail:
    "This deletes this session's conversation log and checkpoints; it cannot be undone. " +
    "Other sessions are kept. New session starts fresh without deleting anything.",
  action: "Delete session",
};

/** The `data` of a RequestFailed answer; anything else reads as no data. */
function failureData(data: unknown): FailureData {
  return typeof data === "object" && data !== null && "cancelled" in data && typeof data.cancelled === "boolean"
    ? { cancelled: data.cancelled }
    : {};
}

/** A RequestFailed (-32803) answer saying the user cancelled (`data: {cancelled: true}`): nothing was changed. */
export function cancelledByUser(error: unknown): error is Error {
  return (
    error instanceof Error &&
    "code" in error &&
    error.code === REQUEST_FAILED &&
    "data" in error &&
    failureData(error.data).cancelled === true
  );
}

function info(text: string): void {
  void vscode.window.showInformationMessage(`Agent Assist: ${text}`);
}

export class SessionCommands {
  /** `changed`: after a command that adds a checkpoint without changing the session (Save). */
  constructor(
    private readonly server: AgentServer,
    private readonly changed: () => void = () => undefined,
  ) {}

  /** Every command of the view, keyed by the id declared in package.json. */
  handlers(): Record<string, Handler> {
    return {
      "agentAssist.newSession": () => this.newSession(),
      "agentAssist.resetSession": () => this.resetSession(),
      "agentAssist.saveSession": () => this.save(),
      "agentAssist.showResumeContext": () => this.resumeContext(),
      "agentAssist.checkpoints": () => this.checkpoints(),
      "agentAssist.compactSession": () => this.compact(),
      "agentAssist.forkSession": () => this.fork(),
      "agentAssist.searchSessions": () => this.search(),
      "agentAssist.listSessions": () => this.sessions(),
    };
  }

  /** Wrap a handler so a failed request becomes an error notification; a cancel (reset's Cancel) an information. */
  static guarded(handler: Handler): () => Promise<void> {
    return async () => {
      try {
        await handler();
      } catch (error) {
        if (cancelledByUser(error)) {
          info(error.message);
        } else {
          void vscode.window.showErrorMessage(`Agent Assist: ${errorText(error)}`);
        }
      }
    };
  }

  private async newSession(): Promise<void> {
    info(newSessionText(await this.server.request(NEW, {})));
  }

  /** Ask first; deleteFiles stays unset, so the server asks about agent_spec.md and templates/ itself. */
  private async resetSession(): Promise<void> {
    const { message, detail, action } = RESET_CONFIRMATION;
    if ((await vscode.window.showWarningMessage(message, { modal: true, detail }, action)) !== action) {
      return;
    }
    // Cancel at the server's question fails it with data.cancelled: `guarded` shows that as information
    info(resetText(await this.server.request(RESET, {})));
  }

  private async save(): Promise<void> {
    const result = await this.server.request(SAVE, {});
    this.changed();
    info(`saved session ${result.sessionId.slice(0, 8)} (checkpoint ${result.checkpoint})`);
  }

  private async resumeContext(): Promise<void> {
    const result = await this.server.request(RESUME, {});
    const doc = await vscode.workspace.openTextDocument({
      language: "markdown",
      content: result.context || "_No resume context: this session started fresh._",
    });
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async checkpoints(): Promise<void> {
    const list = await this.server.request(CHECKPOINT, {});
    if (!("checkpoints" in list)) {
      throw new Error("agentAssist/checkpoint: expected the list of checkpoints");
    }
    if (list.checkpoints.length === 0) {
      info("no checkpoints yet (Save makes one)");
      return;
    }
    const pick = await vscode.window.showQuickPick(
      [...list.checkpoints].reverse().map((c) => ({
        label: `#${c.number} ${c.title}`,
        description: `turn ${c.turn}${c.auto ? " · auto" : ""}`,
        detail: c.createdAt,
        number: c.number,
      })),
      { title: "Restore a checkpoint", placeHolder: "Files and conversation go back to this point" },
    );
    if (!pick) {
      return;
    }
    const result = await this.server.request(CHECKPOINT, { number: pick.number });
    if ("checkpoints" in result) {
      throw new Error("agentAssist/checkpoint: expected what the restore did");
    }
    const created = result.createdFiles.length > 0 ? `; created since and kept: ${result.createdFiles.join(", ")}` : "";
    info(`restored checkpoint #${result.number}: ${result.restoredFiles.length} file(s)${created}`);
  }

  private async compact(): Promise<void> {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Agent Assist: compacting…" },
      () => this.server.request(COMPACT, {}),
    );
    info(
      result.compacted
        ? `compacted ${result.messagesBefore} → ${result.messagesAfter} messages (${result.tokensBefore} → ${result.tokensAfter} tokens)`
        : (result.reason ?? "nothing to compact"),
    );
  }

  private async fork(): Promise<void> {
    const result = await this.server.request(FORK, {});
    info(`forked ${result.parentSessionId.slice(0, 8)} → ${result.sessionId.slice(0, 8)}`);
  }

  private async search(): Promise<void> {
    const query = await vscode.window.showInputBox({ title: "Agent Assist: search sessions", prompt: "Literal text" });
    if (!query) {
      return;
    }
    const result = await this.server.request(SEARCH, { query });
    if (result.results.length === 0) {
      info(`nothing found for "${query}"`);
      return;
    }
    const pick = await vscode.window.showQuickPick(
      result.results.map(searchPickItem),
      { title: `Results for "${query}"`, matchOnDescription: true },
    );
    if (pick) {
      await this.open(pick.sessionId);
    }
  }

  private async sessions(): Promise<void> {
    const result = await this.server.request(SESSIONS, { limit: SESSION_PAGE });
    const shown = result.sessions.length;
    const title =
      result.total > shown
        ? `Agent Assist sessions of this project (the newest ${shown} of ${result.total})`
        : "Agent Assist sessions of this project";
    const pick = await vscode.window.showQuickPick(sessionPickItems(result), { title });
    if (pick?.sessionId) {
      await this.open(pick.sessionId);
    }
  }

  private async open(sessionId: string): Promise<void> {
    const result = await this.server.request(OPEN, { sessionId });
    info(`opened session ${result.sessionId.slice(0, 8)}`);
  }
}
