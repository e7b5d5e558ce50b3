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

  it("accepts the view's navigation messages", () => {
    expect(parseWebviewMessage({ type: "insert", text: "x = 1" })).toEqual({ type: "insert", text: "x = 1" });
    expect(parseWebviewMessage({ type: "openFile", path: "agent_spec.md" })).toEqual({ type: "openFile", path: "agent_spec.md" });
    expect(parseWebviewMessage({ type: "diffFile", path: "a.md" })).toEqual({ type: "diffFile", path: "a.md" });
    expect(parseWebviewMessage({ type: "listSessions" })).toEqual({ type: "listSessions" });
    expect(parseWebviewMessage({ type: "moreSessions", offset: 3 })).toEqual({ type: "moreSessions" });
    expect(parseWebviewMessage({ type: "openSession", sessionId: "abc" })).toEqual({ type: "openSession", sessionId: "abc" });
    expect(parseWebviewMessage({ type: "forkSession", sessionId: "abc" })).toEqual({ type: "forkSession", sessionId: "abc" });
    expect(parseWebviewMessage({ type: "previewRestore", number: 2 })).toEqual({ type: "previewRestore", number: 2 });
    expect(parseWebviewMessage({ type: "restore", number: 2 })).toEqual({ type: "restore", number: 2 });
    expect(parseWebviewMessage({ type: "search", query: "apple" })).toEqual({ type: "search", query: "apple" });
    expect(parseWebviewMessage({ type: "draft", text: "" })).toEqual({ type: "draft", text: "" });
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
      { type: "openFile", path: "" },
      { type: "openSession" },
      { type: "restore", number: 0 },
      { type: "restore", number: 1.5 },
      { type: "previewRestore", number: "2" },
      { type: "search", query: "  " },
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
      { type: "draft", text: "half a thought" },
      { type: "state", running: true, sessionId: "abc", waiting: 2 },
      {
        type: "resume",
        resume: {
          sessionId: "abc",
          context: "# Resumed",
          origin: "resumed",
          lastActive: "2026-03-31T14:22:00+00:00",
          summary: "We built the spec.",
          decisions: ["use sqlite"],
          changedFiles: [
            { path: "agent_spec.md", change: "modified", checkpoint: 2 },
            { path: "templates/new.md", change: "created", checkpoint: null },
          ],
        },
      },
      {
        type: "checkpoints",
        sessionId: "abc",
        checkpoints: [{ number: 1, createdAt: "2026-03-31T14:00:00+00:00", turn: 1, title: "Turn 1", auto: false }],
      },
      {
        type: "restorePlan",
        plan: {
          sessionId: "abc",
          number: 1,
          restoredFiles: ["agent_spec.md"],
          createdFiles: [],
          skippedFiles: [".env"],
          withheldFiles: { ".env": "not kept: contains a secret" },
          dryRun: true,
        },
      },
      {
        type: "sessions",
        sessions: [
          { sessionId: "abc", title: null, createdAt: "t", updatedAt: "t", turns: 0, active: true },
          { sessionId: "def", title: "x", createdAt: "t", updatedAt: "t", turns: 3, phase: "code", parentSessionId: "abc", active: false },
        ],
        total: 340,
      },
      { type: "sessions", sessions: [], total: 0, empty: 2 },
      {
        type: "searchResults",
        query: "apple",
        results: [{ sessionId: "abc", seq: 3, turn: null, type: "compaction", snippet: "an [apple]", score: 1.5, step: 2, ts: "2026-12-05T10:00:00Z" }],
      },
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
    expect(parseHostMessage({ type: "state", running: "yes", sessionId: "", waiting: 0 })).toBeUndefined();
    expect(parseHostMessage({ type: "state", running: true, sessionId: "" })).toBeUndefined();
    expect(parseHostMessage({ type: "resume", resume: { sessionId: "s", origin: "teleported" } })).toBeUndefined();
    expect(
      parseHostMessage({
        type: "checkpoints",
        sessionId: "s",
        checkpoints: [{ number: "1", createdAt: "t", turn: 1, title: "x", auto: false }],
      }),
    ).toBeUndefined();
    expect(
      parseHostMessage({ type: "sessions", sessions: [{ sessionId: "s", title: 3, createdAt: "t", updatedAt: "t", turns: 0, active: true }], total: 1 }),
    ).toBeUndefined();
    expect(parseHostMessage({ type: "sessions", sessions: [] })).toBeUndefined(); // no total
    expect(parseHostMessage({ type: "sessions", sessions: [], total: 0, empty: "2" })).toBeUndefined();
    expect(parseHostMessage({ type: "nope" })).toBeUndefined();
  });

  it("describes tool arguments on one line", () => {
    expect(describeToolArgs({ path: "src/a.py", limit: 3 })).toBe("path=src/a.py limit=3");
    expect(describeToolArgs(undefined)).toBe("");
  });
});
