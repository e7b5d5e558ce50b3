// The chat controller's queue: Stop stops the running reply, Withdraw takes back the waiting ones.
import { describe, expect, it } from "vitest";
import { CancellationTokenSource, EventEmitter } from "vscode";
import { ChatController } from "../../src/host/chat";
import type { HostMessage } from "../../src/common/messages";
import { CHAT, REQUEST_CANCELLED } from "../../src/common/protocol";
import type { AgentServer } from "../../src/host/server";
import type { StatusBar } from "../../src/host/status";
import { withdrawnDraft } from "../../src/webview/model";

interface Sent {
  text: string;
  answer: (text: string) => void;
  cancelled: boolean;
}

/** A server whose chats answer when the test says, and fail as cancelled when their token is. */
function fakeServer(sent: Sent[]) {
  const server = {
    running: true,
    onChatDelta: new EventEmitter(),
    onChatRetry: new EventEmitter(),
    onToolCall: new EventEmitter(),
    onSessionChanged: new EventEmitter(),
    onRunning: new EventEmitter(),
    request(method: string, params: { text?: string }, token?: CancellationTokenSource["token"]) {
      if (method !== CHAT) {
        return Promise.resolve({ sessionId: "s1", waiting: 0, state: "idle", drift: 0, turns: 0, phase: null, contextWindow: 1, items: [] });
      }
      return new Promise((resolve, reject) => {
        const chat: Sent = {
          text: params.text ?? "",
          cancelled: false,
          answer: (text) => resolve({ sessionId: "s1", turn: sent.indexOf(chat) + 1, text, endReason: "completed" }),
        };
        sent.push(chat);
        token?.onCancellationRequested(() => {
          chat.cancelled = true;
          reject(Object.assign(new Error("cancelled"), { code: REQUEST_CANCELLED }));
        });
      });
    },
  };
  return server as unknown as AgentServer;
}

function controller() {
  const sent: Sent[] = [];
  const posted: HostMessage[] = [];
  const status = { update: () => undefined } as unknown as StatusBar;
  const log = { warn: () => undefined, error: () => undefined } as never;
  const chat = new ChatController(fakeServer(sent), status, (m) => posted.push(m), log);
  return { chat, sent, posted };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("waiting chats", () => {
  it("are withdrawn without touching the running reply, and their texts come back", async () => {
    const { chat, sent, posted } = controller();
    const first = chat.send("first");
    const second = chat.send("second");
    const third = chat.send("third");
    expect(chat.waiting).toBe(2);
    chat.withdrawWaiting();
    expect(posted).toContainEqual({ type: "withdrawn", texts: ["second", "third"] });
    expect(chat.waiting).toBe(0);
    expect(chat.busy).toBe(true);
    await Promise.all([second, third]);
    expect(sent.map((s) => [s.text, s.cancelled])).toEqual([["first", false], ["second", true], ["third", true]]);
    sent[0]!.answer("the first answer");
    await first;
    await tick();
    expect(chat.busy).toBe(false);
    const shown = posted.filter((m) => m.type === "userMessage" || m.type === "turnEnd" || m.type === "error");
    expect(shown).toEqual([
      { type: "userMessage", text: "first" },
      { type: "turnEnd", turn: 1, text: "the first answer", endReason: "completed" },
    ]);
  });

  it("with nothing waiting, Withdraw does nothing; Stop still stops the running reply", async () => {
    const { chat, sent, posted } = controller();
    const only = chat.send("only");
    chat.withdrawWaiting();
    expect(posted.some((m) => m.type === "withdrawn")).toBe(false);
    expect(sent[0]!.cancelled).toBe(false);
    chat.stop();
    await only;
    expect(posted).toContainEqual({ type: "turnEnd", turn: -1, text: "", endReason: "aborted" });
  });

  it("go back into the input before what was typed since", () => {
    expect(withdrawnDraft(["second", "third"], "typed")).toBe("second\n\nthird\n\ntyped");
    expect(withdrawnDraft(["second"], "  ")).toBe("second");
  });
});
