import { describe, expect, it } from "vitest";
import type { HostMessage, ResumeView } from "../../src/common/messages";
import type { CheckpointInfo, SessionInfo, TranscriptItem } from "../../src/common/protocol";
import {
  banner,
  bannerHeadline,
  bannerKey,
  checkpointLabel,
  initialView,
  recall,
  relativeTime,
  restoreLines,
  sentMessages,
  sessionMeta,
  snippetParts,
  timeline,
  type UiAction,
  update,
  type View,
  workingText,
} from "../../src/webview/model";

const NOW = new Date("2026-04-01T12:00:00Z");

const RESUME: ResumeView = {
  sessionId: "s1",
  context: "# Resumed Session Context",
  origin: "resumed",
  lastActive: "2026-04-01T09:00:00+00:00",
  summary: "The user asked about bananas.",
  decisions: ["keep the spec short"],
  changedFiles: [{ path: "agent_spec.md", change: "modified", checkpoint: 1 }],
};

function run(actions: (HostMessage | UiAction)[], from: View = initialView({ sessionId: "s1", items: [] })): View {
  return actions.reduce(update, from);
}

function checkpoint(number: number, turn: number, auto = false): CheckpointInfo {
  return { number, turn, auto, createdAt: "2026-04-01T11:00:00+00:00", title: `cp ${number}` };
}

function rows(items: TranscriptItem[], checkpoints: CheckpointInfo[]): string[] {
  return timeline(items, checkpoints).map((r) => (r.kind === "item" ? `${r.item.role}${r.item.turn ?? "-"}` : `#${r.checkpoint.number}`));
}

describe("the resume banner", () => {
  it("says how the session came back, when it was last active and how many files changed", () => {
    expect(bannerHeadline(RESUME, NOW)).toBe("Resumed session · last active 3 hours ago · 1 file changed since");
    const opened = { ...RESUME, origin: "opened" as const, lastActive: "2026-04-01T11:59:30Z", changedFiles: [] };
    expect(bannerHeadline(opened, NOW)).toBe("Opened session · last active just now · no files changed since");
    const forked = {
      ...RESUME,
      origin: "forked" as const,
      lastActive: null,
      changedFiles: [...RESUME.changedFiles, { path: "b.md", change: "deleted" as const, checkpoint: null }],
    };
    expect(bannerHeadline(forked, NOW)).toBe("Forked session · 2 files changed since");
  });

  it("shows for the session on screen with a past, until dismissed", () => {
    const shown = run([{ type: "resume", resume: RESUME }]);
    expect(banner(shown)).toBe(RESUME);
    const dismissed = update(shown, { type: "ui/dismissBanner" });
    expect(banner(dismissed)).toBeUndefined();
    expect(dismissed.dismissed).toEqual([bannerKey(RESUME)]);
    // the next resume of the same session is news again
    const again = update(dismissed, { type: "resume", resume: { ...RESUME, lastActive: "2026-04-01T11:30:00+00:00" } });
    expect(banner(again)?.lastActive).toBe("2026-04-01T11:30:00+00:00");
    // another session's banner is its own
    const other = run([{ type: "transcript", sessionId: "s2", items: [] }, { type: "resume", resume: { ...RESUME, sessionId: "s2" } }], dismissed);
    expect(banner(other)?.sessionId).toBe("s2");
  });

  it("is not shown for a fresh session or another session's resume", () => {
    expect(banner(run([{ type: "resume", resume: { ...RESUME, origin: null } }]))).toBeUndefined();
    expect(banner(run([{ type: "resume", resume: { ...RESUME, sessionId: "other" } }]))).toBeUndefined();
  });

  it("says times in words, and the date past a month", () => {
    expect(relativeTime("2026-04-01T11:55:00Z", NOW)).toBe("5 minutes ago");
    expect(relativeTime("2026-04-01T11:59:00Z", NOW)).toBe("1 minute ago");
    expect(relativeTime("2026-03-31T10:00:00Z", NOW)).toBe("yesterday");
    expect(relativeTime("2026-03-28T12:00:00Z", NOW)).toBe("4 days ago");
    expect(relativeTime("2026-01-02T12:00:00Z", NOW)).toBe("on 2026-01-02");
    expect(relativeTime("not a date", NOW)).toBe("not a date");
  });
});

describe("the checkpoint timeline", () => {
  const items: TranscriptItem[] = [
    { turn: 1, role: "user", text: "a" },
    { turn: 1, role: "assistant", text: "b", endReason: "completed" },
    { turn: 2, role: "user", text: "c" },
    { turn: 2, role: "tool", text: "write_file {}", status: "done" },
    { turn: 2, role: "assistant", text: "d", endReason: "completed" },
    { turn: null, role: "notice", text: "Older turns were compacted." },
    { turn: 4, role: "user", text: "e" },
  ];

  it("puts each checkpoint after the turn it was made at, before the next turn", () => {
    expect(rows(items, [checkpoint(2, 2, true), checkpoint(1, 1)])).toEqual([
      "user1",
      "assistant1",
      "#1",
      "user2",
      "tool2",
      "assistant2",
      "notice-",
      "#2",
      "user4",
    ]);
  });

  it("puts a checkpoint before any turn first, and one of rewound turns after what is left", () => {
    expect(rows(items.slice(0, 2), [checkpoint(1, 0), checkpoint(2, 3), checkpoint(3, 3)])).toEqual([
      "#1",
      "user1",
      "assistant1",
      "#2",
      "#3",
    ]);
  });

  it("puts checkpoints before the message being sent (its turn not yet known)", () => {
    const sending: TranscriptItem[] = [...items.slice(0, 2), { turn: -1, role: "user", text: "new" }];
    expect(rows(sending, [checkpoint(1, 1)])).toEqual(["user1", "assistant1", "#1", "user-1"]);
  });

  it("labels a checkpoint with how it was made", () => {
    expect(checkpointLabel(checkpoint(2, 1))).toBe("Checkpoint 2 · saved after turn 1");
    expect(checkpointLabel(checkpoint(3, 2, true))).toBe("Checkpoint 3 · auto after turn 2");
    expect(checkpointLabel(checkpoint(1, 0))).toBe("Checkpoint 1 · saved before the first turn");
  });
});

describe("restoring a checkpoint", () => {
  const plan = {
    sessionId: "s1",
    number: 1,
    restoredFiles: ["agent_spec.md"],
    createdFiles: ["templates/new.md"],
    skippedFiles: ["link.md", ".env"],
    withheldFiles: { ".env": "not kept: contains a secret" },
    dryRun: true,
  };

  it("asks first and lists the dry run's files when they come", () => {
    const asking = run([{ type: "ui/confirmRestore", number: 1 }]);
    expect(asking.confirm).toEqual({ number: 1, plan: undefined });
    const other = update(asking, { type: "restorePlan", plan: { ...plan, number: 2 } });
    expect(other.confirm?.plan).toBeUndefined();
    const planned = update(asking, { type: "restorePlan", plan });
    expect(planned.confirm?.plan).toBe(plan);
    expect(restoreLines(plan)).toEqual({
      change: ["agent_spec.md"],
      kept: ["templates/new.md"],
      skipped: ["link.md", ".env (not kept: contains a secret)"],
    });
    expect(update(planned, { type: "ui/cancelRestore" }).confirm).toBeUndefined();
  });

  it("forgets the confirmation when another session is shown", () => {
    const asking = run([{ type: "ui/confirmRestore", number: 1 }]);
    expect(update(asking, { type: "transcript", sessionId: "s2", items: [] }).confirm).toBeUndefined();
    expect(update(asking, { type: "transcript", sessionId: "s1", items: [] }).confirm).toBeDefined();
  });
});

describe("while it runs", () => {
  it("shows the working state and the chats waiting behind it", () => {
    const running = run([{ type: "state", running: true, sessionId: "s1", waiting: 2 }]);
    expect(running.running).toBe(true);
    expect(workingText(running)).toBe("Working… · 2 waiting");
    const idle = update(running, { type: "state", running: false, sessionId: "s1", waiting: 2 });
    expect(idle.waiting).toBe(0);
    expect(workingText(run([{ type: "state", running: true, sessionId: "s1", waiting: 0 }]))).toBe("Working…");
  });

  it("never moves the transcript to another session by a state message", () => {
    const view = run([
      { type: "transcript", sessionId: "s1", items: [{ turn: 1, role: "user", text: "old" }] },
      { type: "state", running: false, sessionId: "s2", waiting: 0 },
    ]);
    expect(view.transcript.sessionId).toBe("s1");
    expect(run([{ type: "state", running: false, sessionId: "s2", waiting: 0 }], initialView({ sessionId: "", items: [] })).transcript.sessionId).toBe("s2");
  });
});

describe("Up recalls the last message", () => {
  const items: TranscriptItem[] = [
    { turn: 1, role: "user", text: "first" },
    { turn: 1, role: "assistant", text: "reply" },
    { turn: 2, role: "user", text: "second" },
    { turn: 3, role: "user", text: "second" },
  ];

  it("walks back through the sent messages and forward to an empty input", () => {
    const sent = sentMessages(items);
    expect(sent).toEqual(["first", "second"]);
    const last = recall(sent, undefined, -1);
    expect(last).toEqual({ index: 1, text: "second" });
    const before = recall(sent, last.index, -1);
    expect(before).toEqual({ index: 0, text: "first" });
    expect(recall(sent, before.index, -1)).toEqual({ index: 0, text: "first" });
    expect(recall(sent, before.index, 1)).toEqual({ index: 1, text: "second" });
    expect(recall(sent, 1, 1)).toEqual({ index: undefined, text: "" });
    expect(recall([], undefined, -1)).toEqual({ index: undefined, text: "" });
  });
});

describe("sessions and search in the view", () => {
  const sessions: SessionInfo[] = [
    { sessionId: "bbbbbbbbbbbb", title: "fork", createdAt: "t", updatedAt: "2026-04-01T11:00:00Z", turns: 3, phase: "code", parentSessionId: "aaaaaaaaaaaa", active: true },
    { sessionId: "aaaaaaaaaaaa", title: "design", createdAt: "t", updatedAt: "2026-03-30T12:00:00Z", turns: 1, active: false },
  ];

  it("describes a session by its turns, phase, last activity and parent", () => {
    expect(sessionMeta(sessions[0]!, sessions, NOW)).toBe(
      "bbbbbbbb · 3 turns · code · last active 1 hour ago · forked from “design” (aaaaaaaa)",
    );
    expect(sessionMeta(sessions[1]!, sessions, NOW)).toBe("aaaaaaaa · 1 turn · last active 2 days ago");
    expect(sessionMeta({ ...sessions[0]!, parentSessionId: "cccccccccccc" }, sessions, NOW)).toContain("forked from cccccccc");
  });

  it("keeps only the results of the latest query", () => {
    const searching = run([{ type: "ui/search", query: "apple" }]);
    expect(searching.search.results).toBeUndefined();
    const stale = update(searching, { type: "searchResults", query: "appl", results: [] });
    expect(stale.search.results).toBeUndefined();
    const hit = { sessionId: "s1", seq: 1, turn: 2, type: "turn/start", snippet: "an [apple] a day", score: 1, step: null, ts: "2026-12-05T10:00:00Z" };
    expect(update(searching, { type: "searchResults", query: "apple", results: [hit] }).search.results).toEqual([hit]);
  });

  it("marks the matches of a snippet", () => {
    expect(snippetParts("an [apple] a\n day [apple]")).toEqual([
      { text: "an ", match: false },
      { text: "apple", match: true },
      { text: " a day ", match: false },
      { text: "apple", match: true },
    ]);
  });

  it("reveals a hit's turn once its session's transcript is shown", () => {
    const here = run([{ type: "ui/reveal", sessionId: "s1", turn: 2 }]);
    expect(here.reveal).toEqual({ sessionId: "s1", turn: 2, due: true });
    const away = run([{ type: "ui/panel", panel: "search" }, { type: "ui/reveal", sessionId: "s2", turn: 4 }]);
    expect(away.panel).toBe("none");
    expect(away.reveal?.due).toBe(false);
    expect(update(away, { type: "state", running: false, sessionId: "s2", waiting: 0 }).reveal?.due).toBe(false);
    const shown = update(away, { type: "transcript", sessionId: "s2", items: [] });
    expect(shown.reveal?.due).toBe(true);
    expect(update(shown, { type: "ui/revealed" }).reveal).toBeUndefined();
  });

  it("keeps how many sessions the project has, beyond those listed", () => {
    expect(run([]).sessionsTotal).toBe(0);
    const listed = update(run([]), { type: "sessions", sessions, total: 340 });
    expect(listed.sessions).toEqual(sessions);
    expect(listed.sessionsTotal).toBe(340);
    expect(listed.sessionsEmpty).toBe(0);
    const folded = update(listed, { type: "sessions", sessions, total: 340, empty: 4 });
    expect(folded.sessionsEmpty).toBe(4);
    expect(update(folded, { type: "sessions", sessions, total: 340 }).sessionsEmpty).toBe(0);
  });

  it("toggles one panel at a time", () => {
    const sessionsOpen = run([{ type: "ui/panel", panel: "sessions" }]);
    expect(sessionsOpen.panel).toBe("sessions");
    expect(update(sessionsOpen, { type: "ui/panel", panel: "search" }).panel).toBe("search");
    expect(update(sessionsOpen, { type: "ui/panel", panel: "sessions" }).panel).toBe("none");
  });
});
