import { describe, expect, it } from "vitest";
import { type HostMessage, parseHostMessage } from "../../src/common/messages";
import {
  applyHostMessage,
  endLabel,
  endMark,
  PENDING_TURN,
  RETRY_STATUS,
  type Transcript,
} from "../../src/webview/transcript";

const EMPTY: Transcript = { sessionId: "s", items: [] };

function replay(messages: HostMessage[], from: Transcript = EMPTY): Transcript {
  return messages.reduce(applyHostMessage, from);
}

function shown(transcript: Transcript): string[] {
  return transcript.items.map((i) => `${i.role}:${i.text}`);
}

describe("the streamed reply", () => {
  it("appends deltas to one reply and takes the result's text at the end", () => {
    const sent = replay([{ type: "userMessage", text: "hi" }]);
    expect(sent.items).toEqual([{ turn: PENDING_TURN, role: "user", text: "hi" }]);
    const t = replay(
      [
        { type: "delta", turn: 1, delta: "Hel" },
        { type: "delta", turn: 1, delta: "lo" },
        { type: "turnEnd", turn: 1, text: "Hello", endReason: "completed" },
      ],
      sent,
    );
    // the message just sent takes the turn the server names (a checkpoint after it can be placed)
    expect(t.items).toEqual([
      { turn: 1, role: "user", text: "hi" },
      { turn: 1, role: "assistant", text: "Hello", endReason: "completed" },
    ]);
  });

  it("drops the partial text of a retried attempt and keeps what follows", () => {
    const t = replay([
      { type: "userMessage", text: "question" },
      { type: "delta", turn: 3, delta: "Half an " },
      { type: "delta", turn: 3, delta: "answer " },
      { type: "retry", turn: 3, attempt: 2, reason: "the stream was cut short" },
      { type: "delta", turn: 3, delta: "The whole " },
      { type: "delta", turn: 3, delta: "answer." },
    ]);
    expect(shown(t)).toEqual([
      "user:question",
      "notice:Retrying (attempt 2): the stream was cut short",
      "assistant:The whole answer.",
    ]);
    expect(t.items[1]?.status).toBe(RETRY_STATUS);
    expect(JSON.stringify(t)).not.toContain("Half an");
  });

  it("keeps one retry note per turn and drops every failed attempt's text", () => {
    const t = replay([
      { type: "userMessage", text: "q" },
      { type: "delta", turn: 1, delta: "first try" },
      { type: "retry", turn: 1, attempt: 2, reason: "cut" },
      { type: "delta", turn: 1, delta: "second try" },
      { type: "retry", turn: 1, attempt: 3, reason: "stalled" },
      { type: "delta", turn: 1, delta: "third" },
      { type: "turnEnd", turn: 1, text: "third", endReason: "completed" },
    ]);
    expect(shown(t)).toEqual(["user:q", "notice:Retrying (attempt 3): stalled", "assistant:third"]);
  });

  it("keeps the text of a model request that ended in a tool call", () => {
    // The server keeps that request's answer: only what streamed after the tool line is retried.
    const t = replay([
      { type: "userMessage", text: "update the spec" },
      { type: "delta", turn: 2, delta: "Let me look." },
      { type: "tool", turn: 2, tool: "read_file", status: "done", detail: "path=a.md" },
      { type: "delta", turn: 2, delta: "It says x, so" },
      { type: "retry", turn: 2, attempt: 2, reason: "cut" },
      { type: "delta", turn: 2, delta: "It says x." },
    ]);
    expect(shown(t)).toEqual([
      "user:update the spec",
      "assistant:Let me look.",
      "tool:read_file path=a.md",
      "notice:Retrying (attempt 2): cut",
      "assistant:It says x.",
    ]);
  });

  it("leaves the replies of other turns alone", () => {
    const before: Transcript = {
      sessionId: "s",
      items: [{ turn: 1, role: "assistant", text: "earlier answer", endReason: "completed" }],
    };
    const t = replay([{ type: "retry", turn: 2, attempt: 2, reason: "cut" }], before);
    expect(shown(t)).toEqual(["assistant:earlier answer", "notice:Retrying (attempt 2): cut"]);
  });
});

describe("the redrawn transcript", () => {
  it("shows the server's compaction notice, which belongs to no turn", () => {
    const wire = {
      type: "transcript",
      sessionId: "s",
      items: [
        { turn: null, role: "notice", text: "Older turns were compacted." },
        { turn: 7, role: "user", text: "next question" },
      ],
    };
    const message = parseHostMessage(wire);
    expect(message).toBeDefined();
    const t = replay([message!, { type: "delta", turn: 7, delta: "Answer" }]);
    expect(shown(t)).toEqual(["notice:Older turns were compacted.", "user:next question", "assistant:Answer"]);
    expect(t.items[0]).toEqual({ turn: null, role: "notice", text: "Older turns were compacted." });
  });
});

describe("end marks", () => {
  it("marks a partial answer as incomplete, never as a completed one", () => {
    expect(endMark({ turn: 1, role: "assistant", text: "Once", endReason: "aborted", partial: true })).toBe(
      "(incomplete: aborted)",
    );
    expect(endMark({ turn: 1, role: "assistant", text: "Once", partial: true })).toBe("(incomplete)");
    expect(endMark({ turn: 1, role: "assistant", text: "Once", endReason: "completed", partial: true })).toBe(
      "(incomplete)",
    );
  });

  it("shows other end reasons and nothing for a completed answer", () => {
    expect(endMark({ turn: 1, role: "assistant", text: "", endReason: "error" })).toBe("(error)");
    expect(endMark({ turn: 1, role: "assistant", text: "done", endReason: "completed" })).toBeUndefined();
    expect(endMark({ turn: 1, role: "assistant", text: "done" })).toBeUndefined();
  });
});

describe("tool activity, stops and failures", () => {
  it("shows a tool call as one line whose status changes", () => {
    const t = replay([
      { type: "userMessage", text: "read it" },
      { type: "tool", turn: 1, tool: "read_file", status: "started", detail: "path=a.md" },
      { type: "tool", turn: 1, tool: "read_file", status: "done", detail: "path=a.md" },
      { type: "tool", turn: 1, tool: "write_file", status: "started", detail: "path=b.md" },
      { type: "tool", turn: 1, tool: "write_file", status: "failed", detail: "path=b.md" },
    ]);
    expect(t.items).toEqual([
      { turn: 1, role: "user", text: "read it" },
      { turn: 1, role: "tool", text: "read_file path=a.md", status: "done" },
      { turn: 1, role: "tool", text: "write_file path=b.md", status: "failed" },
    ]);
  });

  it("marks a stopped reply as stopped and incomplete, keeping what streamed", () => {
    const t = replay([
      { type: "userMessage", text: "long answer please" },
      { type: "delta", turn: 5, delta: "Once upon" },
      { type: "turnEnd", turn: -1, text: "", endReason: "aborted" },
    ]);
    const reply = t.items.at(-1)!;
    expect(reply).toEqual({ turn: 5, role: "assistant", text: "Once upon", endReason: "aborted", partial: true });
    expect(endLabel(reply)).toBe("Stopped · incomplete");
  });

  it("marks a reply stopped before any text as stopped, and its message as of no known turn", () => {
    const t = replay([
      { type: "userMessage", text: "q" },
      { type: "turnEnd", turn: -1, text: "", endReason: "aborted" },
      { type: "userMessage", text: "next" },
      { type: "delta", turn: 7, delta: "A" },
    ]);
    expect(t.items).toEqual([
      { turn: null, role: "user", text: "q" },
      { turn: null, role: "assistant", text: "", endReason: "aborted" },
      { turn: 7, role: "user", text: "next" },
      { turn: 7, role: "assistant", text: "A" },
    ]);
    expect(endLabel(t.items[1]!)).toBe("Stopped");
  });

  it("marks the reply streaming when the turn failed, then shows the error", () => {
    const t = replay([
      { type: "userMessage", text: "q" },
      { type: "delta", turn: 2, delta: "Part" },
      { type: "error", text: "The model request failed after 3 attempts" },
    ]);
    expect(t.items).toEqual([
      { turn: 2, role: "user", text: "q" },
      { turn: 2, role: "assistant", text: "Part", endReason: "error", partial: true },
      { turn: 2, role: "notice", text: "The model request failed after 3 attempts" },
    ]);
    expect(endLabel(t.items[1]!)).toBe("Failed · incomplete");
  });

  it("labels the other ways a reply ends", () => {
    expect(endLabel({ turn: 1, role: "assistant", text: "x", endReason: "interrupted", partial: true })).toBe("Interrupted · incomplete");
    expect(endLabel({ turn: 1, role: "assistant", text: "x", partial: true })).toBe("Incomplete");
    expect(endLabel({ turn: 1, role: "assistant", text: "x", endReason: "completed" })).toBeUndefined();
    expect(endLabel({ turn: 1, role: "assistant", text: "x", endReason: "cancelled" })).toBe("cancelled");
  });

  it("starts the next queued message's reply after the previous one ended", () => {
    const t = replay([
      { type: "userMessage", text: "one" },
      { type: "delta", turn: 1, delta: "first" },
      { type: "turnEnd", turn: 1, text: "first", endReason: "completed" },
      { type: "userMessage", text: "two" },
      { type: "delta", turn: 2, delta: "second" },
    ]);
    expect(shown(t)).toEqual(["user:one", "assistant:first", "user:two", "assistant:second"]);
    expect(t.items.map((i) => i.turn)).toEqual([1, 1, 2, 2]);
  });
});
