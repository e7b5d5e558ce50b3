// The view's data from the real server: the resume banner, the checkpoint copy to diff against,
// the timeline and a restore behind its dry run, search, sessions and fork, as the view model shows them.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostMessage } from "../../src/common/messages";
import {
  CHAT,
  completedTurn,
  CHECKPOINT,
  CHECKPOINT_FILE,
  describeTurns,
  FORK,
  HISTORY,
  OPEN,
  RESUME,
  SAVE,
  SEARCH,
  SESSION_CHANGED,
  SESSIONS,
  STATUS,
} from "../../src/common/protocol";
import { DEFAULT_SETTINGS, toInitializationOptions } from "../../src/host/settings";
import {
  banner,
  bannerHeadline,
  initialView,
  restoreLines,
  sessionMeta,
  timeline,
  type UiAction,
  update,
  type View,
} from "../../src/webview/model";
import { type FakeModel, SERVER, ServerSession, startFakeModel } from "./harness";

describe.skipIf(!fs.existsSync(SERVER))("the view's data from `agent-assist serve`", () => {
  let tmp: string;
  let workspace: string;
  let model: FakeModel;
  const sessions: ServerSession[] = [];

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "aa-vscode-view-"));
    workspace = path.join(tmp, "project");
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(workspace, "agent_spec.md"), "# Spec\nversion one\n");
    model = await startFakeModel(tmp, [
      { text: "First answer about pears." },
      { text: "Second answer." },
      { text: "After the restore." },
    ]);
  });

  afterAll(() => {
    for (const s of sessions) {
      s.kill();
    }
    model.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  function start(): ServerSession {
    const session = ServerSession.start(workspace, path.join(tmp, "home"), () => ({ title: "Resume" }));
    sessions.push(session);
    return session;
  }

  const options = () =>
    toInitializationOptions({ ...DEFAULT_SETTINGS, modelName: "fake-model", modelBaseUrl: model.baseUrl }, "vscode-view", "sk-test");

  it("resume banner, diff copy, timeline, restore after a dry run, search, sessions and fork", async () => {
    const first = start();
    await first.initialize(workspace, options());
    await first.waitFor(SESSION_CHANGED);
    const fresh = await first.request(RESUME, {});
    expect(fresh.origin).toBeNull();
    const turn1 = completedTurn(await first.request(CHAT, { text: "first question about pears" }));
    const saved = await first.request(SAVE, {});
    await first.request(CHAT, { text: "second question" });
    await first.shutdown();

    // changed while no window was open
    fs.writeFileSync(path.join(workspace, "agent_spec.md"), "# Spec\nversion two\n");
    const second = start();
    await second.initialize(workspace, options());
    await second.waitFor(SESSION_CHANGED, (p) => p.reason === "resumed");

    // what ResumeBanner posts, and what the view shows of it
    const [status, resume] = await Promise.all([second.request(STATUS, {}), second.request(RESUME, {})]);
    const history = await second.request(HISTORY, {});
    let view: View = initialView({ sessionId: "", items: [] });
    const post = (m: HostMessage | UiAction) => (view = update(view, m));
    post({ type: "transcript", sessionId: history.sessionId, items: history.items });
    post({ type: "resume", resume: { ...resume, sessionId: status.sessionId } });
    const shown = banner(view);
    expect(shown?.origin).toBe("resumed");
    expect(bannerHeadline(shown!, new Date())).toMatch(/^Resumed session · last active (just now|\d+ minutes? ago) · 1 file changed since$/);
    expect(shown?.changedFiles).toEqual([{ path: "agent_spec.md", change: "modified", checkpoint: saved.checkpoint }]);
    expect(shown?.summary).toContain("first question about pears");

    // the diff's left side: the checkpoint's copy
    const copy = await second.request(CHECKPOINT_FILE, { path: "agent_spec.md", number: saved.checkpoint });
    expect(copy).toMatchObject({ number: saved.checkpoint, text: "# Spec\nversion one\n" });

    // the timeline: the save sits between turn 1 and turn 2
    const list = await second.request(CHECKPOINT, {});
    expect("checkpoints" in list).toBe(true);
    if (!("checkpoints" in list)) {
      return;
    }
    post({ type: "checkpoints", sessionId: list.sessionId, checkpoints: list.checkpoints });
    const rows = timeline(view.transcript.items, view.checkpoints.list).map((r) =>
      r.kind === "item" ? `${r.item.role}:${r.item.turn}` : `checkpoint:${r.checkpoint.number}`,
    );
    expect(rows).toEqual([
      `user:${turn1.turn}`,
      `assistant:${turn1.turn}`,
      `checkpoint:${saved.checkpoint}`,
      `user:${turn1.turn + 1}`,
      `assistant:${turn1.turn + 1}`,
    ]);

    // Restore… asks first: the dry run lists the file and changes nothing
    post({ type: "ui/confirmRestore", number: saved.checkpoint });
    const plan = await second.request(CHECKPOINT, { number: saved.checkpoint, dryRun: true });
    expect("checkpoints" in plan).toBe(false);
    if ("checkpoints" in plan) {
      return;
    }
    post({ type: "restorePlan", plan });
    expect(restoreLines(view.confirm!.plan!).change).toEqual(["agent_spec.md"]);
    expect(fs.readFileSync(path.join(workspace, "agent_spec.md"), "utf-8")).toBe("# Spec\nversion two\n");
    expect((await second.request(HISTORY, {})).items).toHaveLength(4);

    const restored = await second.request(CHECKPOINT, { number: saved.checkpoint });
    expect("restoredFiles" in restored && restored.restoredFiles).toEqual(["agent_spec.md"]);
    await second.waitFor(SESSION_CHANGED, (p) => p.reason === "restored");
    const rewound = await second.request(HISTORY, {});
    expect(rewound.items.map((i) => `${i.role}:${i.text}`)).toEqual(["user:first question about pears", "assistant:First answer about pears."]);

    // search finds the rewound turn too; its hit names the session and the turn to scroll to
    const found = await second.request(SEARCH, { query: "second question" });
    expect(found.results[0]).toMatchObject({ sessionId: status.sessionId, turn: turn1.turn + 1 });

    // sessions list and fork
    const forked = await second.request(FORK, { sessionId: status.sessionId });
    await second.waitFor(SESSION_CHANGED, (p) => p.reason === "forked");
    expect((await second.request(RESUME, {})).origin).toBe("forked");
    const listed = await second.request(SESSIONS, {});
    const child = listed.sessions.find((s) => s.sessionId === forked.sessionId);
    expect(child?.active).toBe(true);
    expect(sessionMeta(child!, listed.sessions, new Date())).toBe(
      `${forked.sessionId.slice(0, 8)} · ${describeTurns(child!.turns)} · last active just now · forked from “first question about pears” (${status.sessionId.slice(0, 8)})`,
    );

    await second.request(OPEN, { sessionId: status.sessionId });
    const opened = await second.request(RESUME, {});
    expect(opened.origin).toBe("opened");
    expect(opened.lastActive).not.toBeNull();
    await second.shutdown();
  }, 90_000);
});
