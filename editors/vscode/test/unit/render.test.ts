// @vitest-environment happy-dom
/** The DOM the sidebar builds from its view model: the resume banner, the restore confirmation, the sessions list. */
import { describe, expect, it } from "vitest";
import type { ResumeView } from "../../src/common/messages";
import type { CheckpointInfo, CheckpointRestoreResult, SessionInfo } from "../../src/common/protocol";
import { initialView, sessionMeta, type View } from "../../src/webview/model";
import { bannerElement, checkpointElement, foldedSessions, olderSessions, sessionRows } from "../../src/webview/render";

const NOW = new Date("2026-04-01T12:00:00Z");

const RESUME: ResumeView = {
  sessionId: "s1",
  context: "# Resumed Session Context",
  origin: "resumed",
  lastActive: "2026-04-01T09:00:00+00:00",
  summary: "The user asked about **bananas**.",
  decisions: ["Keep the spec short", "Use <b>PostgreSQL</b>"],
  changedFiles: [
    { path: "agent_spec.md", change: "modified", checkpoint: 1 },
    { path: "templates/old.txt", change: "deleted", checkpoint: 2 },
    { path: "notes.md", change: "created", checkpoint: null },
  ],
};

const texts = (root: Element, selector: string) => [...root.querySelectorAll(selector)].map((el) => el.textContent);

describe("bannerElement", () => {
  it("says what was resumed, when, and how many files changed", () => {
    const el = bannerElement(RESUME, NOW, false);
    expect(el.tagName).toBe("SECTION");
    expect(el.getAttribute("aria-label")).toBe("Session resumed");
    expect(el.dataset.origin).toBe("resumed");
    const text = el.querySelector(".banner-text");
    expect(text?.textContent).toBe("Resumed session · last active 3 hours ago · 3 files changed since");
    expect(text?.getAttribute("title")).toBe(RESUME.lastActive);
  });

  it("links each changed file, with a diff or the checkpoint's copy where one exists", () => {
    const el = bannerElement(RESUME, NOW, false);
    const [modified, deleted, created] = [...el.querySelectorAll("ul.changed-files > li")];
    expect(modified?.className).toBe("changed-file change-modified");
    const open = modified?.querySelector<HTMLButtonElement>("button.open-file");
    expect(open?.dataset.path).toBe("agent_spec.md");
    expect(open?.getAttribute("aria-label")).toBe("Open agent_spec.md");
    const diff = modified?.querySelector<HTMLButtonElement>("button.diff-file");
    expect(diff?.textContent).toBe("diff with checkpoint 1");
    expect(diff?.getAttribute("aria-label")).toBe("Diff agent_spec.md against checkpoint 1");
    // a deleted file cannot be opened: its name, and the checkpoint's copy to show
    expect(deleted?.querySelector("button.open-file")).toBeNull();
    expect(deleted?.querySelector(".file-name")?.textContent).toBe("templates/old.txt");
    expect(deleted?.querySelector("button.diff-file")?.textContent).toBe("checkpoint 2 copy");
    expect(deleted?.querySelector("button.diff-file")?.getAttribute("aria-label")).toBe("Show templates/old.txt against checkpoint 2");
    // no checkpoint copy: nothing to diff against
    expect(created?.querySelector("button.open-file")?.textContent).toBe("notes.md");
    expect(created?.querySelector("button.diff-file")).toBeNull();
    expect(texts(el, "ul.changed-files .change")).toEqual(["modified", "deleted", "created"]);
  });

  it("shows What I remember: the summary as Markdown and the key decisions as text", () => {
    const el = bannerElement(RESUME, NOW, true);
    const memory = el.querySelector<HTMLDetailsElement>("details.memory");
    expect(memory?.hasAttribute("open")).toBe(true);
    expect(memory?.querySelector("summary")?.textContent).toBe("What I remember");
    expect(memory?.querySelector(".memory-summary strong")?.textContent).toBe("bananas");
    expect(memory?.querySelector(".decisions-title")?.textContent).toBe("Key decisions");
    expect(texts(el, ".decisions-title + ul.decisions > li")).toEqual(["Keep the spec short", "Use <b>PostgreSQL</b>"]);
    expect(el.querySelector(".decisions b")).toBeNull();
    expect(bannerElement(RESUME, NOW, false).querySelector("details.memory")?.hasAttribute("open")).toBe(false);
  });

  it("escapes the summary's HTML", () => {
    const el = bannerElement({ ...RESUME, summary: '<img src=x onerror="alert(1)"> and <script>x()</script>' }, NOW, true);
    expect(el.querySelector("img, script")).toBeNull();
    expect(el.querySelector(".memory-summary")?.textContent).toContain('<img src=x onerror="alert(1)">');
  });

  it("says when nothing was kept, no decision was recorded and no file changed", () => {
    const el = bannerElement({ ...RESUME, origin: "opened", summary: null, decisions: [], changedFiles: [] }, NOW, true);
    expect(el.dataset.origin).toBe("opened");
    expect(el.querySelector(".banner-text")?.textContent).toBe("Opened session · last active 3 hours ago · no files changed since");
    expect(el.querySelector("ul.changed-files")).toBeNull();
    expect(el.querySelector(".memory-summary")?.textContent.trim()).toBe("Nothing was kept to remember.");
    expect(el.querySelector("ul.decisions")).toBeNull();
    expect(el.querySelector(".decisions-title + p.muted")?.textContent).toBe("None recorded.");
  });

  it("has a dismiss button with an accessible name", () => {
    const dismiss = bannerElement(RESUME, NOW, false).querySelector<HTMLButtonElement>(".banner-head button.dismiss");
    expect(dismiss?.type).toBe("button");
    expect(dismiss?.getAttribute("aria-label")).toBe("Dismiss the resume banner");
  });
});

describe("the restore confirmation (checkpointElement)", () => {
  const cp: CheckpointInfo = { number: 2, turn: 3, auto: false, createdAt: "2026-04-01T11:00:00+00:00", title: "before the refactor" };
  const plan: CheckpointRestoreResult = {
    sessionId: "s1",
    number: 2,
    restoredFiles: ["agent_spec.md", "templates/a.txt"],
    createdFiles: ["new.md"],
    skippedFiles: ["big.bin", ".env"],
    withheldFiles: { ".env": "a secret" },
  };
  const base = initialView({ sessionId: "s1", items: [] });
  const confirming = (p: CheckpointRestoreResult | undefined, extra: Partial<View> = {}): View => ({
    ...base,
    ...extra,
    confirm: { number: 2, plan: p },
  });

  it("is absent unless this checkpoint is being confirmed", () => {
    const el = checkpointElement(base, cp, NOW);
    expect(el.querySelector(".confirm")).toBeNull();
    expect(el.querySelector("button.restore")?.getAttribute("aria-expanded")).toBe("false");
    expect(checkpointElement({ ...base, confirm: { number: 1, plan: undefined } }, cp, NOW).querySelector(".confirm")).toBeNull();
  });

  it("waits for the dry run with Restore disabled", () => {
    const el = checkpointElement(confirming(undefined), cp, NOW);
    expect(el.querySelector("button.restore")?.getAttribute("aria-expanded")).toBe("true");
    const confirm = el.querySelector(".confirm");
    expect(confirm?.textContent).toContain("Checking which files it would change…");
    expect(confirm?.querySelector<HTMLButtonElement>("button.confirm-restore")?.disabled).toBe(true);
    expect(confirm?.querySelector<HTMLButtonElement>("button.confirm-cancel")?.disabled).toBe(false);
  });

  it("lists the files that change, are kept and are not restored (with why)", () => {
    const confirm = checkpointElement(confirming(plan), cp, NOW).querySelector<HTMLElement>(".confirm");
    expect(confirm?.getAttribute("role")).toBe("alertdialog");
    const title = confirm?.querySelector(`#${confirm.getAttribute("aria-labelledby")}`);
    expect(title?.textContent).toBe("Restore checkpoint 2?");
    const body = confirm?.querySelector(`#${confirm.getAttribute("aria-describedby")}`);
    expect(body?.textContent).toContain("These files will change:");
    expect(body?.textContent).toContain("The conversation goes back to turn 3; a checkpoint of now is kept first.");
    expect(texts(confirm!, "ul.restore-files li")).toEqual(["agent_spec.md", "templates/a.txt"]);
    expect(texts(confirm!, "ul.kept-files li")).toEqual(["new.md"]);
    expect(texts(confirm!, "ul.skipped-files li")).toEqual(["big.bin", ".env (a secret)"]);
    const restore = confirm?.querySelector<HTMLButtonElement>("button.confirm-restore");
    expect(restore?.disabled).toBe(false);
    expect(restore?.dataset.number).toBe("2");
  });

  it("says when no file will change, and a checkpoint at turn 0 goes back to the start", () => {
    const empty = { ...plan, restoredFiles: [], createdFiles: [], skippedFiles: [], withheldFiles: {} };
    const confirm = checkpointElement(confirming(empty), { ...cp, turn: 0 }, NOW).querySelector(".confirm");
    expect(confirm?.textContent).toContain("No file will change.");
    expect(confirm?.textContent).toContain("The conversation goes back to its start;");
    expect(confirm?.querySelector("ul")).toBeNull();
  });

  it("disables Restore… while a reply runs", () => {
    const el = checkpointElement({ ...base, running: true }, cp, NOW);
    expect(el.querySelector<HTMLButtonElement>("button.restore")?.disabled).toBe(true);
    expect(el.querySelector("button.restore")?.getAttribute("aria-label")).toBe("Restore checkpoint 2…");
  });
});

describe("sessionRows", () => {
  const session = (id: string, extra: Partial<SessionInfo> = {}): SessionInfo => ({
    sessionId: id,
    title: `title ${id}`,
    createdAt: "2026-03-30T10:00:00+00:00",
    updatedAt: "2026-03-30T12:00:00+00:00",
    turns: 1,
    active: false,
    ...extra,
  });

  it("explains an empty list", () => {
    const el = sessionRows([], NOW);
    expect(el.tagName).toBe("P");
    expect(el.textContent).toBe("No saved sessions yet: a session is kept from its first reply.");
  });

  it("shows each session's title and meta; the current one can be forked, the others opened or forked", () => {
    const sessions = [
      session("aaaaaaaa-1", { active: true, turns: 3, phase: "code", parentSessionId: "bbbbbbbb-2" }),
      session("bbbbbbbb-2", { title: null }),
      session("cccccccc-3", { title: "<i>html</i>" }),
    ];
    const el = sessionRows(sessions, NOW);
    const rows = [...el.querySelectorAll<HTMLElement>("li.session-row")];
    expect(rows.map((r) => r.dataset.session)).toEqual(["aaaaaaaa-1", "bbbbbbbb-2", "cccccccc-3"]);
    const [current, untitled, html] = rows;

    expect(current?.classList.contains("active")).toBe(true);
    expect(current?.getAttribute("aria-current")).toBe("true");
    expect(current?.querySelector(".session-title")?.textContent).toBe("title aaaaaaaa-1current");
    expect(current?.querySelector(".session-title .badge")?.textContent).toBe("current");
    expect(current?.querySelector(".session-meta")?.textContent).toBe(sessionMeta(sessions[0]!, sessions, NOW));
    expect(current?.querySelector(".session-meta")?.textContent).toContain("forked from “(untitled)” (bbbbbbbb)");
    expect(current?.querySelector("button.open-session")).toBeNull();
    expect(current?.querySelector("button.fork-session")?.getAttribute("aria-label")).toBe("Fork session title aaaaaaaa-1");

    expect(untitled?.classList.contains("active")).toBe(false);
    expect(untitled?.hasAttribute("aria-current")).toBe(false);
    expect(untitled?.querySelector(".session-title")?.textContent).toBe("(untitled)");
    const open = untitled?.querySelector<HTMLButtonElement>("button.open-session");
    expect(open?.dataset.session).toBe("bbbbbbbb-2");
    expect(open?.getAttribute("aria-label")).toBe("Open session (untitled)");
    expect(untitled?.querySelector<HTMLButtonElement>("button.fork-session")?.dataset.session).toBe("bbbbbbbb-2");

    expect(html?.querySelector(".session-title")?.textContent).toBe("<i>html</i>");
    expect(html?.querySelector("i")).toBeNull();
  });

  it("offers the older sessions only when the project has more than it lists", () => {
    expect(olderSessions(2, 2)).toBeNull();
    expect(olderSessions(0, 0)).toBeNull();
    const more = olderSessions(200, 10_000);
    expect(more?.textContent).toBe("The newest 200 of 10000 sessions. Search finds any of them. Show older sessions");
    const button = more?.querySelector<HTMLButtonElement>("button.more-sessions");
    expect(button?.type).toBe("button");
    expect(button?.textContent).toBe("Show older sessions");
  });

  it("says how many sessions without a turn the server folded, if any", () => {
    expect(foldedSessions(0)).toBeNull();
    expect(foldedSessions(1)?.textContent).toBe("1 session without a turn not shown.");
    expect(foldedSessions(3)?.textContent).toBe("3 sessions without a turn not shown.");
    expect(foldedSessions(3)?.querySelector("button")).toBeNull(); // nothing to choose
  });
});
