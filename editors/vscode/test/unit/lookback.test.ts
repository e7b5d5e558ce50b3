// @vitest-environment happy-dom
/** Looking back: the file history's quick pick rows, the version documents' URIs, a turn's steps (model and DOM). */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  changePickItem,
  changeWhere,
  diffTitle,
  inspectUriParts,
  parseInspectUri,
  restoreQuestion,
  restoredText,
} from "../../src/host/fileHistory";
import { changeParams, parseVersionUri, type VersionRef, versionText, versionUriParts, VERSION_SCHEME } from "../../src/host/fileVersions";
import { type HostMessage, parseHostMessage, parseWebviewMessage } from "../../src/common/messages";
import * as protocol from "../../src/common/protocol";
import type { FileChange, StepView, TranscriptItem, TurnView } from "../../src/common/protocol";
import { inspectMarkdown, localTime, stepHeadline, usageText } from "../../src/common/steps";
import { initialView, turnSteps, type UiAction, update, type View } from "../../src/webview/model";
import { hasStepsToggle, itemElement, rowElement, rowSignature, stepsElement } from "../../src/webview/render";

const CHANGE: FileChange = {
  sessionId: "0123456789ab",
  sessionTitle: "config work",
  turn: 2,
  step: 1,
  ts: "2026-12-05T14:03:07+00:00",
  kind: "write",
  tool: "write_file",
  userMessage: "Please   change the port\nin config.yaml to 8080, and while you are at it also the host name of the database server",
  beforeSha256: "aa",
  afterSha256: "bb",
  diff: "--- a\n+++ b\n",
};

const DRIFT: FileChange = { ...CHANGE, turn: null, step: null, kind: "drift", tool: null, userMessage: null };

describe("the extension's commands", () => {
  it("never take the name of a server request (the language client registers `agentAssist.<verb>` for each)", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "../../package.json"), "utf-8"));
    const ours: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
    const values: unknown[] = Object.values(protocol);
    const methods = values.filter((v): v is string => typeof v === "string" && v.startsWith("agentAssist/"));
    const servers = methods.map((m) => `agentAssist.${m.split("/")[1] ?? ""}`);
    expect(ours).toContain("agentAssist.showFileHistory");
    expect(servers).toContain("agentAssist.fileHistory");
    expect(ours.filter((c) => servers.includes(c))).toEqual([]);
  });
});

describe("the file history quick pick", () => {
  it("labels a change by its local time and kind, the session and step, the user's message shortened", () => {
    const item = changePickItem(CHANGE);
    expect(item.label).toBe(`${localTime(CHANGE.ts)} · write`);
    expect(item.label).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d · write$/);
    expect(item.description).toBe("config work · turn 2 step 1");
    expect(item.detail.startsWith("Please change the port in config.yaml to 8080")).toBe(true);
    expect(item.detail.length).toBe(100);
    expect(item.detail.endsWith("…")).toBe(true);
    expect(item.change).toBe(CHANGE);
  });

  it("says a drift was outside the assistant, and why a change has no diff", () => {
    const item = changePickItem({ ...DRIFT, sessionTitle: null, diff: null, reason: "binary" });
    expect(item.label.endsWith(" · drift")).toBe(true);
    expect(item.description).toBe("(untitled) 01234567 · outside a turn");
    expect(item.detail).toBe("changed outside the assistant (no diff: binary)");
  });

  it("names the change in the diff's title and the restore question", () => {
    expect(diffTitle("config/config.yaml", CHANGE)).toBe("config.yaml (before ↔ after turn 2 step 1)");
    expect(changeWhere(DRIFT)).toBe(`the drift at ${localTime(DRIFT.ts)}`);
    const q = restoreQuestion("config/config.yaml", CHANGE);
    expect(q.message).toBe("Restore config/config.yaml as it was before turn 2 step 1?");
    expect(q.allowDelete).toBe(false);
    const created = restoreQuestion("new.md", { ...CHANGE, beforeSha256: null });
    expect(created).toMatchObject({ action: "Delete file", allowDelete: true });
    expect(created.message).toBe("Delete new.md? It did not exist before turn 2 step 1.");
    // unknown before (not kept): never offered as a deletion
    expect(restoreQuestion("a.md", { ...CHANGE, beforeSha256: null, diff: null, reason: "recorded before contents were kept" }).allowDelete).toBe(false);
  });

  it("reports what a restore did", () => {
    expect(restoredText("a.md", CHANGE, { path: "a.md", restored: true })).toBe("restored a.md as it was before turn 2 step 1");
    expect(restoredText("a.md", CHANGE, { path: "a.md", restored: false, reason: "the editor refused the edit" })).toBe(
      "a.md was not restored: the editor refused the edit",
    );
  });
});

describe("the version documents' URIs", () => {
  const ref: VersionRef = { path: "templates/a b#?.md", sessionId: "0123456789ab", turn: 2, step: 1, ts: CHANGE.ts, side: "before" };

  it("round-trip a change and side, keeping the file's name for its language", () => {
    const parts = versionUriParts(ref);
    expect(parts.scheme).toBe(VERSION_SCHEME);
    expect(parts.path).toBe("/templates/a b#?.md");
    expect(parseVersionUri(parts)).toEqual(ref);
    const drift: VersionRef = { ...ref, turn: null, step: null, side: "after" };
    expect(parseVersionUri(versionUriParts(drift))).toEqual(drift);
  });

  it("rejects what is not one", () => {
    expect(parseVersionUri({ path: "/a.md", query: "session=s&side=sideways" })).toBeUndefined();
    expect(parseVersionUri({ path: "/a.md", query: "side=before" })).toBeUndefined();
    expect(parseVersionUri({ path: "/a.md", query: "session=s&side=before&turn=0" })).toBeUndefined();
    expect(parseVersionUri({ path: "/", query: "session=s&side=before" })).toBeUndefined();
  });

  it("asks by turn and step, or by time for a drift", () => {
    expect(changeParams(ref)).toEqual({ path: ref.path, sessionId: ref.sessionId, turn: 2, step: 1, side: "before" });
    expect(changeParams({ ...ref, turn: null, step: null })).toEqual({ path: ref.path, sessionId: ref.sessionId, ts: CHANGE.ts, side: "before" });
  });

  it("says why a side has no text", () => {
    expect(versionText(ref, { path: "a", sha256: "x", text: "hello\n" })).toBe("hello\n");
    expect(versionText(ref, { path: "a", sha256: null, text: null })).toBe("(templates/a b#?.md did not exist before this change)\n");
    expect(versionText({ ...ref, side: "after" }, { path: "a", sha256: "x", text: null, reason: "a secret" })).toBe(
      "(templates/a b#?.md: the content after this change was not kept: a secret)\n",
    );
  });

  it("name a turn to inspect", () => {
    const parts = inspectUriParts("0123456789ab", 3);
    expect(parts.path).toBe("/01234567 turn 3.md");
    expect(parseInspectUri(parts)).toEqual({ sessionId: "0123456789ab", turn: 3 });
    expect(parseInspectUri({ query: "session=s&turn=x" })).toBeUndefined();
  });
});

const STEP: StepView = {
  turn: 2,
  step: 1,
  startedAt: "2026-12-05T14:03:07+00:00",
  endedAt: "2026-12-05T14:03:09+00:00",
  model: "fake-model",
  usage: { inputTokens: 1200, outputTokens: 80, requests: 1 },
  text: "I will write it.",
  tools: [
    { toolCallId: "c1", name: "write_file", args: { path: "a.md", content: "x" }, result: "wrote a.md", resultBytes: 10 },
    { toolCallId: "c2", name: "read_file", args: { path: "big.md" }, result: "abc", folded: true, resultBytes: 5000, isError: false },
  ],
  retries: [{ attempt: 1, kind: "cut", reason: "the stream broke" }],
  endReason: "tool-calls",
};

const TURN: TurnView = {
  turn: 2,
  input: "write a.md",
  startedAt: STEP.startedAt,
  endedAt: "2026-12-05T14:03:10+00:00",
  endReason: "completed",
  steps: [STEP, { ...STEP, step: 2, text: "Done.", tools: [], retries: [], usage: null, model: null, endReason: "answered" }],
};

describe("a turn's steps as words", () => {
  it("heads a step with its number, times, model, usage and end", () => {
    const clock = (iso: string) => localTime(iso).slice(11);
    expect(stepHeadline(STEP)).toBe(`Step 1 · ${clock(STEP.startedAt ?? "")}–${clock(STEP.endedAt ?? "")} · fake-model · 1,200 in / 80 out · tool-calls`);
    expect(usageText(null)).toBe("no usage");
    expect(usageText({ inputTokens: 5, outputTokens: 6, requests: 1, estimated: true })).toBe("~5 in / 6 out");
  });

  it("writes the inspected turn as Markdown: the message, each step, each tool call with args and result", () => {
    const md = inspectMarkdown({ sessionId: "0123456789ab", title: "config work", held: true }, [TURN]);
    expect(md).toContain("# config work (01234567)");
    expect(md).toContain("Another window holds this session");
    expect(md).toContain("## Turn 2");
    expect(md).toContain("### Step 1 · ");
    expect(md).toContain("- retried: attempt 1 (cut): the stream broke");
    expect(md).toContain('"path": "a.md"');
    expect(md).toContain("abc\n… (folded: 5,000 bytes in all)");
    expect(md).toContain("### Step 2 · ");
  });
});

const USER: TranscriptItem = { turn: 2, role: "user", text: "write a.md" };
const REPLY: TranscriptItem = { turn: 2, role: "assistant", text: "Done.", endReason: "completed" };
const ITEMS: TranscriptItem[] = [USER, { turn: 2, role: "tool", text: "write_file path=a.md", status: "done" }, REPLY];

function run(actions: (HostMessage | UiAction)[], from: View = initialView({ sessionId: "s1", items: ITEMS })): View {
  return actions.reduce(update, from);
}

describe("the steps toggle in the view model", () => {
  it("opens a turn's steps, loading until the host sends them, and closes them", () => {
    let view = run([{ type: "ui/toggleSteps", turn: 2 }]);
    expect(turnSteps(view, 2)).toEqual({ open: true, loading: true, turn: undefined, error: undefined });
    view = update(view, { type: "steps", sessionId: "s1", turns: [TURN] });
    expect(turnSteps(view, 2)).toEqual({ open: true, loading: false, turn: TURN, error: undefined });
    expect(turnSteps(view, 1).open).toBe(false);
    view = update(view, { type: "ui/toggleSteps", turn: 2 });
    expect(turnSteps(view, 2)).toEqual({ open: false, loading: false, turn: undefined, error: undefined });
  });

  it("keeps steps of another session out, says a failure, and closes everything on another session's transcript", () => {
    let view = run([{ type: "ui/toggleSteps", turn: 2 }, { type: "steps", sessionId: "other", turns: [TURN] }]);
    expect(turnSteps(view, 2).turn).toBeUndefined();
    view = run([{ type: "ui/toggleSteps", turn: 2 }, { type: "steps", sessionId: "", turns: [], error: "store away" }]);
    expect(turnSteps(view, 2)).toMatchObject({ open: true, loading: false, error: "store away" });
    view = update(view, { type: "transcript", sessionId: "s2", items: [] });
    expect(view.openSteps).toEqual([]);
  });

  it("the steps messages cross the webview boundary checked", () => {
    expect(parseWebviewMessage({ type: "loadSteps" })).toEqual({ type: "loadSteps" });
    const message = { type: "steps", sessionId: "s1", turns: [TURN] };
    expect(parseHostMessage(message)).toEqual(message);
    expect(parseHostMessage({ ...message, turns: [{ ...TURN, steps: [{ ...STEP, tools: [{ name: 3 }] }] }] })).toBeUndefined();
    expect(parseHostMessage({ type: "steps", sessionId: "", turns: [], error: "x" })).toEqual({ type: "steps", sessionId: "", turns: [], error: "x" });
  });
});

describe("the steps in the DOM", () => {
  it("puts the toggle on the reply that ended a turn only", () => {
    expect(ITEMS.map(hasStepsToggle)).toEqual([false, false, true]);
    expect(hasStepsToggle({ turn: 2, role: "assistant", text: "streaming" })).toBe(false);
    const closed = itemElement(REPLY, false, turnSteps(run([]), 2));
    const toggle = closed.querySelector<HTMLButtonElement>("button.steps-toggle");
    expect(toggle?.textContent).toBe("Steps");
    expect(toggle?.getAttribute("aria-expanded")).toBe("false");
    expect(toggle?.dataset.turn).toBe("2");
    expect(closed.querySelector(".steps")).toBeNull();
    expect(itemElement(USER, false).querySelector("button.steps-toggle")).toBeNull();
  });

  it("shows each step: number, times, model, usage, tool calls with their args and folded results", () => {
    const view = run([{ type: "ui/toggleSteps", turn: 2 }, { type: "steps", sessionId: "s1", turns: [TURN] }]);
    const row = { kind: "item" as const, item: REPLY, index: 2 };
    const el = rowElement(view, row, false, new Date());
    const toggle = el.querySelector("button.steps-toggle");
    expect(toggle?.getAttribute("aria-expanded")).toBe("true");
    expect(toggle?.getAttribute("aria-controls")).toBe("steps-2");
    const steps = el.querySelector("section.steps");
    expect(steps?.getAttribute("aria-label")).toBe("Steps of turn 2");
    expect(steps?.querySelector(".steps-when")?.textContent).toMatch(/^Turn 2 · .* · 2 steps$/);
    const heads = [...(steps?.querySelectorAll(".step-head") ?? [])].map((e) => e.textContent);
    expect(heads).toEqual([stepHeadline(STEP), stepHeadline(TURN.steps[1] ?? STEP)]);
    expect(heads[1]).toContain("model not recorded · no usage · answered");
    const tools = [...(steps?.querySelectorAll("details.step-tool") ?? [])];
    expect(tools.map((t) => t.querySelector("summary")?.textContent)).toEqual(["write_file path=a.md content=x", "read_file path=big.md"]);
    expect(tools[0]?.querySelector(".step-args")?.textContent).toBe(JSON.stringify(STEP.tools[0]?.args, null, 2));
    expect(tools[1]?.querySelector(".step-result")?.textContent).toBe("abc\n… (folded: 5,000 bytes in all)");
    expect(steps?.querySelector(".step-retry")?.textContent).toBe("retried: attempt 1 (cut): the stream broke");
    // the row is redrawn when its steps arrive or close
    const before = rowSignature(run([{ type: "ui/toggleSteps", turn: 2 }]), row, false);
    expect(rowSignature(view, row, false)).not.toBe(before);
  });

  it("says it is loading, that there are none, or why they could not be read", () => {
    const text = (el: HTMLElement) => el.querySelector("[role=status]")?.textContent;
    expect(text(stepsElement(3, { open: true, loading: true, turn: undefined, error: undefined }))).toBe("Loading the steps…");
    expect(text(stepsElement(3, { open: true, loading: false, turn: undefined, error: undefined }))).toBe("No steps recorded for turn 3.");
    expect(text(stepsElement(3, { open: true, loading: false, turn: undefined, error: "gone" }))).toBe("The steps could not be read: gone");
  });

  it("keeps the model's text as text", () => {
    const el = stepsElement(2, { open: true, loading: false, turn: { ...TURN, steps: [{ ...STEP, text: "<img src=x onerror=alert(1)>" }] }, error: undefined });
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelector(".step-text")?.textContent).toBe("<img src=x onerror=alert(1)>");
  });
});
