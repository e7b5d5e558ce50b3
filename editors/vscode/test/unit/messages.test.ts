import { describe, expect, it } from "vitest";
import { describeToolArgs, parseHostMessage, parseWebviewMessage } from "../../src/common/messages";

describe("webview → extension messages", () => {
  it("accepts the known messages", () => {
    expect(parseWebviewMessage({ type: "ready" })).toEqual({ type: "ready" });
    expect(parseWebviewMessage({ type: "stop", extra: 1 })).toEqual({ type: "stop" });
    expect(parseWebviewMessage({ type: "send", text: "hi" })).toEqual({ type: "send", text: "hi" });
    expect(parseWebviewMessage({ type: "copy", text: "x = 1" })).toEqual({ type: "copy", text: "x = 1" });
    expect(parseWebviewMessage({ type: "command", command: "saveSession" })).toEqual({
      type: "command",
      command: "saveSession",
    });
  });

  it("rejects malformed or unknown messages", () => {
    for (const bad of [
      null,
      "send",
      [],
      { type: "send" },
      { type: "send", text: "   " },
      { type: "send", text: 42 },
      { type: "command", command: "workbench.action.quit" },
      { type: "eval", code: "1" },
    ]) {
      expect(parseWebviewMessage(bad)).toBeUndefined();
    }
  });
});

describe("extension → webview messages", () => {
  it("round-trips every message kind", () => {
    const messages = [
      { type: "transcript", sessionId: "abc", items: [{ turn: 1, role: "user", text: "hi" }] },
      { type: "userMessage", text: "hi" },
      { type: "delta", turn: 1, delta: "Ec" },
      { type: "retry", turn: 1, attempt: 2, reason: "the stream was cut short" },
      { type: "tool", turn: 1, tool: "read_file", status: "started", detail: "path=a" },
      { type: "turnEnd", turn: 1, text: "Echo: hi", endReason: "completed" },
      { type: "error", text: "boom" },
      { type: "state", running: true, sessionId: "abc" },
    ];
    for (const m of messages) {
      expect(parseHostMessage(JSON.parse(JSON.stringify(m)))).toEqual(m);
    }
  });

  it("drops transcript items with an unknown role and keeps optional fields", () => {
    const parsed = parseHostMessage({
      type: "transcript",
      sessionId: "s",
      items: [
        { turn: 1, role: "assistant", text: "a", endReason: "aborted", status: "x" },
        { turn: 2, role: "assistant", text: "cut sho", endReason: "error", partial: true },
        { turn: 2, role: "system", text: "hidden" },
        { turn: "3", role: "user", text: "bad turn" },
      ],
    });
    expect(parsed).toEqual({
      type: "transcript",
      sessionId: "s",
      items: [
        { turn: 1, role: "assistant", text: "a", endReason: "aborted", status: "x" },
        { turn: 2, role: "assistant", text: "cut sho", endReason: "error", partial: true },
      ],
    });
  });

  it("keeps a notice outside any turn (`turn: null`)", () => {
    const compacted = { turn: null, role: "notice", text: "Older turns were compacted." };
    const parsed = parseHostMessage(
      JSON.parse(JSON.stringify({ type: "transcript", sessionId: "s", items: [compacted, { turn: 4, role: "user", text: "hi" }] })),
    );
    expect(parsed).toEqual({ type: "transcript", sessionId: "s", items: [compacted, { turn: 4, role: "user", text: "hi" }] });
  });

  it("rejects wrong field types", () => {
    expect(parseHostMessage({ type: "delta", turn: "1", delta: "x" })).toBeUndefined();
    expect(parseHostMessage({ type: "retry", turn: 1, attempt: "2", reason: "x" })).toBeUndefined();
    expect(parseHostMessage({ type: "state", running: "yes", sessionId: "" })).toBeUndefined();
    expect(parseHostMessage({ type: "nope" })).toBeUndefined();
  });

  it("describes tool arguments on one line", () => {
    expect(describeToolArgs({ path: "src/a.py", limit: 3 })).toBe("path=src/a.py limit=3");
    expect(describeToolArgs(undefined)).toBe("");
  });
});
