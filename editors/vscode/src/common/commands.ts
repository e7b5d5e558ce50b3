/** The palette and view-title commands: thin calls to the server with quick picks where needed. */
import * as vscode from "vscode";
import { CHECKPOINT, COMPACT, FORK, OPEN, RESET, RESUME, SAVE, SEARCH, SESSIONS } from "./constants";
import { errorText } from "./logging";
import type {
  CheckpointListResult,
  CheckpointRestoreResult,
  CompactResult,
  ForkResult,
  OpenResult,
  ResetResult,
  ResumeResult,
  SaveResult,
  SearchHit,
  SearchResult,
  SessionInfo,
  SessionsResult,
} from "./protocol";
import { describeTurns } from "./protocol";
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

/** One row of the search results: the snippet, then short id, the turn (when the hit has one) and the event type. */
export function searchPickItem(hit: SearchHit): vscode.QuickPickItem & { sessionId: string } {
  const turn = hit.turn === null ? "" : `turn ${hit.turn} · `;
  return {
    label: hit.snippet.replace(/\s+/g, " "),
    description: `${hit.sessionId.slice(0, 8)} · ${turn}${hit.type}`,
    sessionId: hit.sessionId,
  };
}

function info(text: string): void {
  void vscode.window.showInformationMessage(`Agent Assist: ${text}`);
}

export class SessionCommands {
  constructor(private readonly server: AgentServer) {}

  /** Every command of the view, keyed by the id declared in package.json. */
  handlers(): Record<string, Handler> {
    return {
      "agentAssist.newSession": () => this.reset(),
      "agentAssist.saveSession": () => this.save(),
      "agentAssist.showResumeContext": () => this.resumeContext(),
      "agentAssist.checkpoints": () => this.checkpoints(),
      "agentAssist.compactSession": () => this.compact(),
      "agentAssist.forkSession": () => this.fork(),
      "agentAssist.searchSessions": () => this.search(),
      "agentAssist.listSessions": () => this.sessions(),
    };
  }

  /** Wrap a handler so a failed request becomes an error notification. */
  static guarded(handler: Handler): () => Promise<void> {
    return async () => {
      try {
        await handler();
      } catch (error) {
        void vscode.window.showErrorMessage(`Agent Assist: ${errorText(error)}`);
      }
    };
  }

  private async reset(): Promise<void> {
    const result = await this.server.request<ResetResult>(RESET, {});
    const deleted = result.deletedFiles.length > 0 ? ` (deleted ${result.deletedFiles.join(", ")})` : "";
    info(`new session ${result.sessionId.slice(0, 8)}${deleted}`);
  }

  private async save(): Promise<void> {
    const result = await this.server.request<SaveResult>(SAVE, {});
    info(`saved session ${result.sessionId.slice(0, 8)} (checkpoint ${result.checkpoint})`);
  }

  private async resumeContext(): Promise<void> {
    const result = await this.server.request<ResumeResult>(RESUME, {});
    const doc = await vscode.workspace.openTextDocument({
      language: "markdown",
      content: result.context || "_No resume context: this session started fresh._",
    });
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async checkpoints(): Promise<void> {
    const list = await this.server.request<CheckpointListResult>(CHECKPOINT, {});
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
    const result = await this.server.request<CheckpointRestoreResult>(CHECKPOINT, { number: pick.number });
    const created = result.createdFiles.length > 0 ? `; created since and kept: ${result.createdFiles.join(", ")}` : "";
    info(`restored checkpoint #${result.number}: ${result.restoredFiles.length} file(s)${created}`);
  }

  private async compact(): Promise<void> {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Agent Assist: compacting…" },
      () => this.server.request<CompactResult>(COMPACT, {}),
    );
    info(
      result.compacted
        ? `compacted ${result.messagesBefore} → ${result.messagesAfter} messages (${result.tokensBefore} → ${result.tokensAfter} tokens)`
        : (result.reason ?? "nothing to compact"),
    );
  }

  private async fork(): Promise<void> {
    const result = await this.server.request<ForkResult>(FORK, {});
    info(`forked ${result.parentSessionId.slice(0, 8)} → ${result.sessionId.slice(0, 8)}`);
  }

  private async search(): Promise<void> {
    const query = await vscode.window.showInputBox({ title: "Agent Assist: search sessions", prompt: "Literal text" });
    if (!query) {
      return;
    }
    const result = await this.server.request<SearchResult>(SEARCH, { query });
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
    const result = await this.server.request<SessionsResult>(SESSIONS, {});
    const pick = await vscode.window.showQuickPick(
      result.sessions.map(sessionPickItem),
      { title: "Agent Assist sessions of this project" },
    );
    if (pick) {
      await this.open(pick.sessionId);
    }
  }

  private async open(sessionId: string): Promise<void> {
    const result = await this.server.request<OpenResult>(OPEN, { sessionId });
    info(`opened session ${result.sessionId.slice(0, 8)}`);
  }
}
