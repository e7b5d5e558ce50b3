import { describe, expect, it } from "vitest";
import { searchPickItem, sessionPickItem } from "../../src/common/commands";
import type { SearchHit, SessionInfo } from "../../src/common/protocol";

const session: SessionInfo = {
  sessionId: "0123456789abcdef",
  title: "support agent",
  createdAt: "2025-01-01T10:00:00Z",
  updatedAt: "2025-01-02T11:00:00Z",
  turns: 12,
  active: false,
};

describe("sessions quick pick", () => {
  it("shows the phase of a session after its turns", () => {
    expect(sessionPickItem({ ...session, phase: "deploy" }).description).toBe("01234567 · 12 turns · deploy");
  });

  it("shows only the turns of a session without a phase", () => {
    const item = sessionPickItem(session);
    expect(item).toEqual({
      label: "support agent",
      description: "01234567 · 12 turns",
      detail: "updated 2025-01-02T11:00:00Z",
      sessionId: session.sessionId,
    });
  });

  it("marks the active session and names the parent of a fork", () => {
    const item = sessionPickItem({ ...session, title: "", active: true, parentSessionId: "fedcba9876543210" });
    expect(item.label).toBe("$(check) (untitled)");
    expect(item.detail).toBe("updated 2025-01-02T11:00:00Z · forked from fedcba98");
  });
});

describe("nulls from the server", () => {
  it("shows a session without a title as untitled", () => {
    expect(sessionPickItem({ ...session, title: null }).label).toBe("(untitled)");
  });

  it("shows a search hit with and without a turn", () => {
    const hit: SearchHit = { sessionId: "0123456789abcdef", seq: 3, turn: 2, type: "user", snippet: "an\n apple", score: 1 };
    expect(searchPickItem(hit)).toEqual({ label: "an apple", description: "01234567 · turn 2 · user", sessionId: hit.sessionId });
    expect(searchPickItem({ ...hit, turn: null, type: "compaction" }).description).toBe("01234567 · compaction");
  });
});
