/** The conversation: sends chats (a chat sent while one runs waits), streams deltas to the view, Stop, Withdraw, redraws from history. */
import * as vscode from "vscode";
import { isRecord } from "../common/guards";
import { errorText } from "./logging";
import { describeToolArgs, type HostMessage } from "../common/messages";
import { CHAT, completedTurn, HISTORY, REQUEST_CANCELLED, STATUS } from "../common/protocol";
import type { AgentServer } from "./server";
import type { StatusBar } from "./status";

interface PendingChat {
  text: string;
  source: vscode.CancellationTokenSource;
  /** Taken back while it waited: its text went back to the input, nothing of it is shown. */
  withdrawn?: boolean;
}

/** True for the JSON-RPC error a cancelled request is answered with. */
export function isCancelled(error: unknown): boolean {
  return isRecord(error) && error.code === REQUEST_CANCELLED;
}

export class ChatController implements vscode.Disposable {
  /** Chats sent and not answered, in order: the first runs, the rest wait in the server's queue. */
  private readonly pending: PendingChat[] = [];
  /** `status.waiting` as the server last said it (it may count chats this view did not send). */
  private serverWaiting = 0;
  private sessionId = "";
  private readonly disposables: vscode.Disposable[] = [];
  /** A turn ended (answered, stopped or failed): checkpoints and the session list may have changed. */
  readonly onTurnEnd = new vscode.EventEmitter<void>();

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

  /** The chats sent and not answered that still count (withdrawn ones only wait for their cancellation). */
  private get live(): PendingChat[] {
    return this.pending.filter((chat) => !chat.withdrawn);
  }

  get busy(): boolean {
    return this.live.length > 0;
  }

  /** Chats waiting behind the running one. */
  get waiting(): number {
    return Math.max(this.live.length - 1, this.busy ? this.serverWaiting : 0);
  }

  /** Send a chat; while another runs it waits (the server keeps the order) and shows in the view once it starts. */
  async send(text: string): Promise<void> {
    const chat: PendingChat = { text, source: new vscode.CancellationTokenSource() };
    this.pending.push(chat);
    if (this.pending.length === 1) {
      this.post({ type: "userMessage", text });
    }
    this.setRunning();
    try {
      const result = completedTurn(await this.server.request(CHAT, { text }, chat.source.token));
      this.sessionId = result.sessionId;
      this.post({ type: "turnEnd", turn: result.turn, text: result.text, endReason: result.endReason });
    } catch (error) {
      if (chat.withdrawn) {
        // never shown: its text is back in the input
      } else if (isCancelled(error)) {
        this.post({ type: "turnEnd", turn: -1, text: "", endReason: "aborted" });
      } else {
        this.log.error(`chat failed: ${errorText(error)}`);
        this.post({ type: "error", text: errorText(error) });
      }
    } finally {
      chat.source.dispose();
      const wasRunning = !chat.withdrawn && this.live[0] === chat;
      this.pending.splice(this.pending.indexOf(chat), 1);
      const next = this.live[0];
      if (wasRunning && next) {
        this.post({ type: "userMessage", text: next.text });
      }
      this.serverWaiting = 0;
      this.setRunning();
      void this.refreshStatus();
      this.onTurnEnd.fire();
    }
  }

  /** Stop the running reply; chats waiting behind it then run. */
  stop(): void {
    this.live[0]?.source.cancel();
  }

  /** Take back the chats waiting behind the running reply: cancelled, their texts put back in the input. */
  withdrawWaiting(): void {
    const waiting = this.live.slice(1);
    if (waiting.length === 0) {
      return;
    }
    for (const chat of waiting) {
      chat.withdrawn = true;
      chat.source.cancel();
    }
    this.post({ type: "withdrawn", texts: waiting.map((chat) => chat.text) });
    this.serverWaiting = 0;
    this.setRunning();
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
      this.setRunning();
    } catch (error) {
      this.log.warn(`history: ${errorText(error)}`);
    }
  }

  async refreshStatus(): Promise<void> {
    try {
      const status = await this.server.request(STATUS, {});
      this.sessionId = status.sessionId;
      this.serverWaiting = status.waiting;
      this.status.update({
        sessionId: status.sessionId,
        drift: status.drift,
        running: this.busy || status.state === "running",
        contextWindow: status.contextWindow,
        contextWindowSource: status.contextWindowSource,
        turns: status.turns,
        phase: status.phase,
      });
      if (this.busy) {
        this.setRunning();
      }
    } catch (error) {
      this.log.warn(`status: ${errorText(error)}`);
    }
  }

  private setRunning(): void {
    this.status.update({ running: this.busy });
    this.post({ type: "state", running: this.busy, sessionId: this.sessionId, waiting: this.waiting });
  }

  dispose(): void {
    for (const chat of this.pending) {
      chat.source.cancel();
    }
    for (const d of this.disposables) {
      d.dispose();
    }
    this.onTurnEnd.dispose();
  }
}
