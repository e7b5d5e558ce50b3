/** Sessions, checkpoints and search inside the view: thin calls to the server, results posted to the webview. */
import * as vscode from "vscode";
import { SESSION_PAGE } from "./constants";
import { errorText } from "./logging";
import type { HostMessage } from "../common/messages";
import {
  CHECKPOINT,
  type CheckpointListResult,
  type CheckpointRestoreResult,
  FORK,
  HISTORY,
  OPEN,
  SEARCH,
  SESSIONS,
} from "../common/protocol";
import type { AgentServer } from "./server";

/** `agentAssist/checkpoint` answers a list or a restore, by its params: which one came back. */
function isList(result: CheckpointListResult | CheckpointRestoreResult): result is CheckpointListResult {
  return "checkpoints" in result;
}

/** `restored checkpoint 2: 1 file(s); created since and kept: b.md`. */
export function restoredText(result: CheckpointRestoreResult): string {
  const created = result.createdFiles.length > 0 ? `; created since and kept: ${result.createdFiles.join(", ")}` : "";
  return `restored checkpoint ${result.number}: ${result.restoredFiles.length} file(s)${created}`;
}

export class ViewNavigation {
  constructor(
    private readonly server: AgentServer,
    private readonly post: (message: HostMessage) => void,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** Run a request for the view; a failure is an error notification (the view stays as it was). */
  private async guarded(what: string, run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (error) {
      this.log.warn(`${what}: ${errorText(error)}`);
      void vscode.window.showErrorMessage(`Agent Assist: ${what}: ${errorText(error)}`);
    }
  }

  /** The session list and the timeline's checkpoints, after anything that may change them. */
  async refresh(): Promise<void> {
    if (!this.server.running) {
      return;
    }
    await Promise.all([this.sessions(), this.checkpoints()]);
  }

  /** How many of the newest sessions the view lists: a page, and a page more each time it asks. */
  private sessionLimit = SESSION_PAGE;

  async sessions(): Promise<void> {
    try {
      // The newest only: a project may have thousands of sessions; search finds any of them.
      const result = await this.server.request(SESSIONS, { limit: this.sessionLimit });
      this.post({ type: "sessions", sessions: result.sessions, total: result.total, empty: result.empty });
    } catch (error) {
      this.log.warn(`sessions: ${errorText(error)}`);
    }
  }

  /** List a page more of the older sessions (kept across refreshes). */
  moreSessions(): Promise<void> {
    this.sessionLimit += SESSION_PAGE;
    return this.sessions();
  }

  async checkpoints(): Promise<void> {
    try {
      const result = await this.server.request(CHECKPOINT, {});
      if (isList(result)) {
        this.post({ type: "checkpoints", sessionId: result.sessionId, checkpoints: result.checkpoints });
      }
    } catch (error) {
      this.log.warn(`checkpoints: ${errorText(error)}`);
    }
  }

  /** Open a session of this project (`sessionChanged` then redraws the view). */
  open(sessionId: string): Promise<void> {
    return this.guarded("open session", async () => {
      await this.server.request(OPEN, { sessionId });
    });
  }

  fork(sessionId: string): Promise<void> {
    return this.guarded("fork", async () => {
      const result = await this.server.request(FORK, { sessionId });
      void vscode.window.showInformationMessage(
        `Agent Assist: forked ${result.parentSessionId.slice(0, 8)} → ${result.sessionId.slice(0, 8)}`,
      );
    });
  }

  /** What restoring `number` would do, for the view's confirmation; nothing is changed. */
  previewRestore(number: number): Promise<void> {
    return this.guarded(`checkpoint ${number}`, async () => {
      const plan = await this.server.request(CHECKPOINT, { number, dryRun: true });
      if (!isList(plan)) {
        this.post({ type: "restorePlan", plan });
      }
    });
  }

  restore(number: number): Promise<void> {
    return this.guarded(`restore checkpoint ${number}`, async () => {
      const result = await this.server.request(CHECKPOINT, { number });
      if (!isList(result)) {
        void vscode.window.showInformationMessage(`Agent Assist: ${restoredText(result)}`);
      }
      await this.checkpoints();
    });
  }

  /** Every turn of this session with its steps, for the transcript's steps toggle. */
  async steps(): Promise<void> {
    try {
      const result = await this.server.request(HISTORY, { steps: true });
      this.post({ type: "steps", sessionId: result.sessionId, turns: result.turns ?? [] });
    } catch (error) {
      this.log.warn(`steps: ${errorText(error)}`);
      this.post({ type: "steps", sessionId: "", turns: [], error: errorText(error) });
    }
  }

  async search(query: string): Promise<void> {
    try {
      const [result] = await Promise.all([this.server.request(SEARCH, { query }), this.sessions()]);
      this.post({ type: "searchResults", query, results: result.results });
    } catch (error) {
      this.post({ type: "searchResults", query, results: [] });
      void vscode.window.showErrorMessage(`Agent Assist: search: ${errorText(error)}`);
    }
  }
}
