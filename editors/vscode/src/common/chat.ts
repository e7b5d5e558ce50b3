/** The conversation: sends chats, streams deltas to the view, cancels on Stop, redraws from history. */
import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import { errorText } from "./logging";
import { describeToolArgs, type HostMessage } from "./messages";
import { CHAT, HISTORY, REQUEST_CANCELLED, STATUS } from "./protocol";
import type { AgentServer } from "./server";
import type { StatusBar } from "./status";

export class ChatController implements vscode.Disposable {
  private pending: vscode.CancellationTokenSource | undefined;
  private sessionId = "";
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly server: AgentServer,
    private readonly status: StatusBar,
    private readonly post: (message: HostMessage) => void,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      server.onChatDelta.event((p) => this.post({ type: "delta", turn: p.turn, delta: p.delta })),
      server.onChatRetry.event((p) => {
        this.log.warn(`turn ${p.turn}: retrying (attempt ${p.attempt}): ${p.reason}`);
        this.post({ type: "retry", turn: p.turn, attempt: p.attempt, reason: p.reason });
      }),
      server.onToolCall.event((p) =>
        this.post({ type: "tool", turn: p.turn, tool: p.tool, status: p.status, detail: describeToolArgs(p.args) }),
      ),
      server.onSessionChanged.event((p) => {
        this.sessionId = p.sessionId;
        this.status.update({ sessionId: p.sessionId, drift: 0, turns: 0, phase: null });
        void this.redraw();
        void this.refreshStatus();
      }),
      server.onRunning.event((running) => {
        this.status.update({ connected: running });
        if (running) {
          void this.refreshStatus();
        }
      }),
    );
  }

  get busy(): boolean {
    return this.pending !== undefined;
  }

  async send(text: string): Promise<void> {
    if (this.pending) {
      return;
    }
    const source = new vscode.CancellationTokenSource();
    this.pending = source;
    this.post({ type: "userMessage", text });
    this.setRunning(true);
    try {
      const result = await this.server.request(CHAT, { text }, source.token);
      this.sessionId = result.sessionId;
      this.post({ type: "turnEnd", turn: result.turn, text: result.text, endReason: result.endReason });
    } catch (error) {
      if (error instanceof ResponseError && error.code === REQUEST_CANCELLED) {
        this.post({ type: "turnEnd", turn: -1, text: "", endReason: "aborted" });
      } else {
        this.log.error(`chat failed: ${errorText(error)}`);
        this.post({ type: "error", text: errorText(error) });
      }
    } finally {
      source.dispose();
      this.pending = undefined;
      this.setRunning(false);
      void this.refreshStatus();
    }
  }

  stop(): void {
    this.pending?.cancel();
  }

  /** Redraw the view's transcript from `agentAssist/history` (view opened, window reloaded, session changed). */
  async redraw(): Promise<void> {
    if (!this.server.running) {
      return;
    }
    try {
      const history = await this.server.request(HISTORY, {});
      this.sessionId = history.sessionId;
      this.post({ type: "transcript", sessionId: history.sessionId, items: history.items });
      this.setRunning(this.busy);
    } catch (error) {
      this.log.warn(`history: ${errorText(error)}`);
    }
  }

  async refreshStatus(): Promise<void> {
    try {
      const status = await this.server.request(STATUS, {});
      this.sessionId = status.sessionId;
      this.status.update({
        sessionId: status.sessionId,
        drift: status.drift,
        running: this.busy || status.state === "running",
        contextWindow: status.contextWindow,
        turns: status.turns,
        phase: status.phase,
      });
    } catch (error) {
      this.log.warn(`status: ${errorText(error)}`);
    }
  }

  private setRunning(running: boolean): void {
    this.status.update({ running });
    this.post({ type: "state", running, sessionId: this.sessionId });
  }

  dispose(): void {
    this.pending?.cancel();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
