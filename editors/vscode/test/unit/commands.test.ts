import * as fs from "node:fs";
import * as path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { ResponseError } from "vscode-jsonrpc/node";
import {
  cancelledByUser,
  newSessionText,
  resetText,
  searchPickItem,
  SessionCommands,
  sessionPickItem,
  sessionPickItems,
} from "../../src/host/commands";
import { type FailureData, NEW, REQUEST_FAILED, RESET, type SearchHit, type SessionInfo } from "../../src/common/protocol";
import type { AgentServer } from "../../src/host/server";
import * as stub from "../vscode-stub";

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

  it("ends with how many sessions without a turn the server folded, if any", () => {
    const items = sessionPickItems({ sessions: [session], total: 1, empty: 3 });
    expect(items.map((i) => i.label)).toEqual(["support agent", "$(info) 3 sessions without a turn not shown"]);
    expect(items[1]).toMatchObject({ alwaysShow: true, sessionId: "" });
    expect(sessionPickItems({ sessions: [session], total: 1, empty: 1 })[1]?.label).toBe(
      "$(info) 1 session without a turn not shown",
    );
    expect(sessionPickItems({ sessions: [session], total: 1, empty: 0 })).toEqual([sessionPickItem(session)]);
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
    const hit: SearchHit = { sessionId: "0123456789abcdef", seq: 3, turn: 2, type: "user", snippet: "an\n apple", score: 1, step: null, ts: "2026-12-05T10:00:00Z" };
    expect(searchPickItem(hit)).toEqual({ label: "an apple", description: "01234567 · turn 2 · user", sessionId: hit.sessionId });
    expect(searchPickItem({ ...hit, turn: null, type: "compaction" }).description).toBe("01234567 · compaction");
  });
});

describe("New session and Reset Session (delete it)", () => {
  const shown: { kind: string; message: string; options?: unknown; items: string[] }[] = [];
  let confirm: string | undefined;
  const requests: { method: string; params: object }[] = [];
  let answer: (method: string) => Promise<unknown>;

  beforeEach(() => {
    shown.length = 0;
    requests.length = 0;
    confirm = undefined;
    const record = (kind: string) => (message: string, ...rest: unknown[]) => {
      const options = typeof rest[0] === "object" ? rest.shift() : undefined;
      shown.push({ kind, message, options, items: rest.map(String) });
      return Promise.resolve(kind === "warning" ? confirm : undefined);
    };
    Object.assign(stub.window, {
      showInformationMessage: record("info"),
      showWarningMessage: record("warning"),
      showErrorMessage: record("error"),
    });
  });

  function command(id: string): () => Promise<void> {
    const server = {
      request: (method: string, params: object) => {
        requests.push({ method, params });
        return answer(method);
      },
    };
    const handler = new SessionCommands(server as unknown as AgentServer).handlers()[id];
    expect(handler).toBeDefined();
    return SessionCommands.guarded(handler!);
  }

  it("New session calls agentAssist/new, never reset, and says the previous one is kept", async () => {
    answer = () => Promise.resolve({ sessionId: "aaaabbbbcccc", previousSessionId: "0123456789ab" });
    await command("agentAssist.newSession")();
    expect(requests).toEqual([{ method: NEW, params: {} }]);
    expect(shown).toEqual([
      { kind: "info", message: "Agent Assist: new session aaaabbbb (the previous one is kept)", options: undefined, items: [] },
    ]);
    expect(newSessionText({ sessionId: "aaaabbbbcccc", previousSessionId: null })).toBe("new session aaaabbbb");
  });

  it("Reset asks with a modal naming what is deleted; declining sends nothing", async () => {
    answer = () => Promise.reject(new Error("no request expected"));
    await command("agentAssist.resetSession")();
    expect(requests).toEqual([]);
    const [question] = shown;
    expect(shown).toHaveLength(1);
    expect(question).toMatchObject({ kind: "warning", message: "Reset Session (delete it)?", items: ["Delete session"] });
    expect(question?.options).toMatchObject({ modal: true });
    expect(JSON.stringify(question?.options)).toContain("conversation log and checkpoints");
  });

  it("Reset, confirmed, calls agentAssist/reset without deleteFiles (the server asks about the files)", async () => {
    confirm = "Delete session";
    answer = () => Promise.resolve({ sessionId: "ddddeeeeffff", deletedFiles: ["agent_spec.md"] });
    await command("agentAssist.resetSession")();
    expect(requests).toEqual([{ method: RESET, params: {} }]);
    expect(shown.at(-1)).toMatchObject({
      kind: "info",
      message: "Agent Assist: session deleted; new session ddddeeee; also deleted agent_spec.md",
    });
    expect(resetText({ sessionId: "ddddeeeeffff", deletedFiles: [] })).toBe("session deleted; new session ddddeeee");
  });

  it("a reset cancelled at the server's question (data.cancelled) is an info", async () => {
    confirm = "Delete session";
    const cancelled: FailureData = { cancelled: true };
    answer = () => Promise.reject(new ResponseError(REQUEST_FAILED, "Reset cancelled; nothing was changed.", cancelled));
    await command("agentAssist.resetSession")();
    expect(shown.at(-1)).toMatchObject({ kind: "info", message: "Agent Assist: Reset cancelled; nothing was changed." });
    expect(shown.filter((s) => s.kind === "error")).toEqual([]);
  });

  it.each([
    ["RequestFailed without data", new ResponseError(REQUEST_FAILED, "session in use by another window")],
    ["RequestFailed, not cancelled", new ResponseError(REQUEST_FAILED, "storage unwritable", { cancelled: false })],
    ["RequestFailed, odd data", new ResponseError(REQUEST_FAILED, "storage unwritable", { cancelled: "yes" })],
    ["InternalError", new ResponseError(-32603, "agentAssist/reset: internal error: boom")],
  ])("any other failure of a reset is an error: %s", async (_, error) => {
    confirm = "Delete session";
    answer = () => Promise.reject(error);
    await command("agentAssist.resetSession")();
    expect(shown.at(-1)).toMatchObject({ kind: "error", message: `Agent Assist: ${error.message}` });
    expect(shown.filter((s) => s.kind === "info")).toEqual([]);
  });

  it("cancelledByUser needs RequestFailed with data.cancelled true", () => {
    expect(cancelledByUser(new ResponseError(REQUEST_FAILED, "x", { cancelled: true }))).toBe(true);
    expect(cancelledByUser(new ResponseError(-32800, "x", { cancelled: true }))).toBe(false);
    expect(cancelledByUser(new ResponseError(REQUEST_FAILED, "x"))).toBe(false);
    expect(cancelledByUser(new Error("Reset cancelled; nothing was changed."))).toBe(false);
    expect(cancelledByUser(undefined)).toBe(false);
  });

  it("package.json declares both commands and offers them in the view's title bar", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "../../package.json"), "utf-8"));
    const declared = new Map<string, string>(manifest.contributes.commands.map((c: any) => [c.command, c.title]));
    const handlers = Object.keys(new SessionCommands({} as unknown as AgentServer).handlers());
    expect(handlers.filter((id) => !declared.has(id))).toEqual([]);
    expect(declared.get("agentAssist.newSession")).toBe("New session");
    expect(declared.get("agentAssist.resetSession")).toBe("Reset Session (delete it)…");
    const inTitle = manifest.contributes.menus["view/title"]
      .filter((m: any) => m.when === "view == agentAssist.chat")
      .map((m: any) => m.command);
    expect(inTitle).toEqual(expect.arrayContaining(["agentAssist.newSession", "agentAssist.resetSession"]));
  });
});
