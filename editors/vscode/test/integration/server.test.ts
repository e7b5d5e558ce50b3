// The extension's client code (settings → initializationOptions, protocol constants) against the real server.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CancellationTokenSource, ResponseError } from "vscode-jsonrpc/node";
import { cancelledByUser } from "../../src/host/commands";
import type { HostMessage } from "../../src/common/messages";
import {
  CHAT,
  completedTurn,
  CHAT_DELTA,
  CHAT_RETRY,
  DRIFT,
  HISTORY,
  NEW,
  OPEN,
  REQUEST_CANCELLED,
  REQUEST_FAILED,
  RESET,
  SESSION_CHANGED,
  SESSIONS,
  STATUS,
} from "../../src/common/protocol";
import { DEFAULT_SETTINGS, toInitializationOptions } from "../../src/host/settings";
import { applyHostMessage, endMark, type Transcript } from "../../src/webview/transcript";
import { type FakeModel, SERVER, ServerSession, startFakeModel } from "./harness";

const FIRST_REPLY = "Hello from the **fake** model; this reply streams in small chunks.";

describe.skipIf(!fs.existsSync(SERVER))("the extension's client against `agent-assist serve`", () => {
  let tmp: string;
  let workspace: string;
  let home: string;
  let model: FakeModel;
  const sessions: ServerSession[] = [];

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "aa-vscode-it-"));
    workspace = path.join(tmp, "project");
    home = path.join(tmp, "home");
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(workspace, "agent_spec.md"), "# Spec\nversion one\n");
    model = await startFakeModel(tmp, [
      { text: FIRST_REPLY, chunk: 8, delay: 0.02 },
      { hang: "This reply will be stopped" },
    ]);
  });

  afterAll(() => {
    for (const s of sessions) {
      s.kill();
    }
    model.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  function options() {
    const settings = { ...DEFAULT_SETTINGS, modelName: "fake-model", modelBaseUrl: model.baseUrl };
    return toInitializationOptions(settings, "vscode-it", "sk-test-key");
  }

  it("chats with streaming, stops a reply, then resumes after a restart with drift", async () => {
    // -- first window
    const first = ServerSession.start(workspace, home, () => ({ title: "Resume" }));
    sessions.push(first);
    await first.initialize(workspace, options());
    const started = await first.waitFor(SESSION_CHANGED);
    expect(started.params.reason).toBe("new");

    const result = completedTurn(await first.request(CHAT, { text: "first question about apples" }));
    const deltas = first.notifications.filter((n) => n.method === CHAT_DELTA).map((n) => n.params);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((d) => d.delta).join("")).toBe(FIRST_REPLY);
    expect(result.text).toBe(FIRST_REPLY);
    expect(result.endReason).toBe("completed");
    expect(deltas.every((d) => d.turn === result.turn && d.sessionId === result.sessionId)).toBe(true);
    // the settings' model and the key from SecretStorage reach the model
    await expect.poll(() => model.requests().length, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
    expect(model.requests()[0]?.model).toBe("fake-model");
    expect(model.requests()[0]?.authorization).toBe("Bearer sk-test-key");

    // -- Stop: cancel the chat through its token
    const source = new CancellationTokenSource();
    const stopped = first.request(CHAT, { text: "second question, to be stopped" }, source.token);
    await first.waitFor(CHAT_DELTA, (p) => p.turn === result.turn + 1);
    source.cancel();
    const error: unknown = await stopped.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ResponseError);
    expect((error as ResponseError<unknown>).code).toBe(REQUEST_CANCELLED);
    const status = await first.request(STATUS, {});
    expect(status.state).toBe("idle");
    await first.shutdown();

    // -- the tracked spec changes while no window is open
    fs.writeFileSync(path.join(workspace, "agent_spec.md"), "# Spec\nversion two\n");

    // -- the window reloads: same instanceId → the resume question → Resume
    const second = ServerSession.start(workspace, home, () => ({ title: "Resume" }));
    sessions.push(second);
    await second.initialize(workspace, options());
    const resumed = await second.waitFor(SESSION_CHANGED);
    expect(second.messageRequests).toHaveLength(1);
    expect(second.messageRequests[0].message).toContain("Resume previous session?");
    expect(second.messageRequests[0].actions.map((a: { title: string }) => a.title)).toEqual(["Resume", "New session"]);
    expect(resumed.params).toEqual({ sessionId: result.sessionId, reason: "resumed" });
    const drift = await second.waitFor(DRIFT);
    expect(drift.params.source).toBe("resume");
    expect(drift.params.modified).toContain("agent_spec.md");
    // shown once: by the drift notification, not repeated as a window/showMessage warning
    expect(drift.params.messageShown).toBe(false);
    const messages = second.notifications.filter((n) => n.method === "window/showMessage").map((n) => n.params.message);
    expect(messages.filter((m: string) => /files changed/i.test(m))).toEqual([]);

    // -- the transcript the view redraws
    const history = await second.request(HISTORY, {});
    expect(history.sessionId).toBe(result.sessionId);
    const texts = history.items.map((i) => `${i.role}:${i.text}`);
    expect(texts).toContain("user:first question about apples");
    expect(texts).toContain(`assistant:${FIRST_REPLY}`);
    // the stopped reply comes back marked as cut short, never as a completed answer
    const stoppedReply = history.items.find((i) => i.role === "assistant" && i.text.startsWith("This reply will be stopped"));
    expect(stoppedReply).toMatchObject({ partial: true, endReason: "aborted" });
    expect(endMark(stoppedReply!)).toBe("(incomplete: aborted)");

    // -- the next reply is aware of the earlier turn: the model receives it
    const before = model.requests().length;
    const next = completedTurn(await second.request(CHAT, { text: "what did I ask first?" }));
    expect(next.text).toBe("Echo: what did I ask first?");
    expect(next.turn).toBeGreaterThan(result.turn);
    await expect.poll(() => model.requests().length, { timeout: 5000 }).toBeGreaterThan(before);
    const sent = JSON.stringify(model.requests().at(-1));
    expect(sent).toContain("first question about apples");
    await second.shutdown();
  }, 90_000);

  it("drops a retried attempt's streamed text and shows only the whole answer", async () => {
    const dir = fs.mkdtempSync(path.join(tmp, "retry-"));
    const project = path.join(dir, "project");
    fs.mkdirSync(project);
    const faulty = await startFakeModel(dir, [
      { cut: "Half an answer " },
      { text: "The whole answer.", chunk: 5 },
      { text: "No usage sent.", usage: false },
    ]);
    try {
      const settings = {
        ...DEFAULT_SETTINGS,
        modelName: "fake-model",
        modelBaseUrl: faulty.baseUrl,
        modelMaxRetries: 1,
        modelStreamTimeout: 20,
        contextWindow: 64_000,
        compactAt: 0.7,
        modelMaxReplyBytes: 1_048_576,
        toolsProtectedPaths: ["secrets/**"],
        toolsMaxCallsPerResponse: 8,
        toolsMaxCallsPerTurn: 100,
        toolsMaxArgumentBytes: 65_536,
      };
      const session = ServerSession.start(project, path.join(dir, "home"), () => ({ title: "New session" }));
      sessions.push(session);
      await session.initialize(project, toInitializationOptions(settings, "vscode-retry", "sk-test-key"));
      await session.waitFor(SESSION_CHANGED);

      const result = completedTurn(await session.request(CHAT, { text: "explain it" }));
      expect(result.text).toBe("The whole answer.");
      expect(result.attempts).toBe(2);
      // what ChatController posts to the view, in the order the server sent it
      const posted: HostMessage[] = [{ type: "userMessage", text: "explain it" }];
      for (const n of session.notifications) {
        if (n.method === CHAT_DELTA && n.params.turn === result.turn) {
          posted.push({ type: "delta", turn: n.params.turn, delta: n.params.delta });
        } else if (n.method === CHAT_RETRY) {
          expect(n.params).toMatchObject({ sessionId: result.sessionId, turn: result.turn, attempt: 2 });
          posted.push({ type: "retry", turn: n.params.turn, attempt: n.params.attempt, reason: n.params.reason });
        }
      }
      expect(posted.filter((m) => m.type === "retry")).toHaveLength(1);
      const live = posted.reduce(applyHostMessage, { sessionId: result.sessionId, items: [] } satisfies Transcript);
      expect(live.items.map((i) => `${i.role}:${i.text}`)).toEqual([
        "user:explain it",
        expect.stringMatching(/^notice:Retrying \(attempt 2\): .*incomplete/),
        "assistant:The whole answer.",
      ]);
      const done = applyHostMessage(live, { type: "turnEnd", turn: result.turn, text: result.text, endReason: "completed" });
      expect(done.items.at(-1)).toEqual({ turn: result.turn, role: "assistant", text: "The whole answer.", endReason: "completed" });

      // the redrawn transcript never has the abandoned attempt
      const history = await session.request(HISTORY, {});
      expect(JSON.stringify(history.items)).not.toContain("Half an answer");

      const estimated = completedTurn(await session.request(CHAT, { text: "and usage?" }));
      expect(estimated.text).toBe("No usage sent.");
      expect(estimated.usage.estimated).toBe(true);
      expect(result.usage.estimated).toBeFalsy();

      const status = await session.request(STATUS, {});
      expect(status.contextWindow).toBe(64_000);
      const warnings = session.notifications.filter((n) => n.method === "window/showMessage").map((n) => n.params.message);
      expect(warnings.filter((m: string) => /maxRetries|streamTimeout|contextWindow|compactAt|maxReplyBytes|tools/.test(m))).toEqual([]);
      await session.shutdown();
    } finally {
      faulty.stop();
    }
  }, 60_000);

  it("New session keeps the previous one whole; Reset deletes it, and Cancel at the server's question changes nothing", async () => {
    const dir = fs.mkdtempSync(path.join(tmp, "new-"));
    const project = path.join(dir, "project");
    const store = path.join(dir, "home");
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, "agent_spec.md"), "# Spec\n");
    const kiwi = await startFakeModel(dir, [{ text: "Kiwi answer." }]);
    const answers = ["Cancel", "Keep files"];
    try {
      const settings = { ...DEFAULT_SETTINGS, modelName: "fake-model", modelBaseUrl: kiwi.baseUrl };
      const session = ServerSession.start(project, store, () => ({ title: answers.shift() }));
      sessions.push(session);
      await session.initialize(project, toInitializationOptions(settings, "vscode-new", "sk-test-key"));
      await session.waitFor(SESSION_CHANGED);
      const turn = completedTurn(await session.request(CHAT, { text: "kiwi question" }));
      const old = turn.sessionId;
      const projects = path.join(store, "projects");
      const [log] = fs
        .readdirSync(projects)
        .map((p) => path.join(projects, p, "sessions", `${old}.events.jsonl`))
        .filter((f) => fs.existsSync(f));
      expect(log).toBeDefined();
      const before = fs.readFileSync(log!);

      const fresh = await session.request(NEW, {});
      expect(fresh.previousSessionId).toBe(old);
      expect(fresh.sessionId).not.toBe(old);
      await session.waitFor(SESSION_CHANGED, (p) => p.sessionId === fresh.sessionId && p.reason === "new");
      const listed = await session.request(SESSIONS, {});
      expect(listed.sessions.map((s) => s.sessionId)).toContain(old);
      expect(fs.readFileSync(log!).equals(before)).toBe(true);
      expect((await session.request(HISTORY, {})).items).toEqual([]);

      await session.request(OPEN, { sessionId: old });
      const reopened = await session.request(HISTORY, {});
      expect(reopened.items.map((i) => `${i.role}:${i.text}`)).toEqual(["user:kiwi question", "assistant:Kiwi answer."]);
      // live again, it may append (its running summary); what was there stays byte for byte
      const intact = () => fs.readFileSync(log!).subarray(0, before.length).equals(before);
      expect(intact()).toBe(true);

      // deleteFiles unset: the server asks about agent_spec.md; Cancel fails the request, nothing changes
      const cancelled = await session.request(RESET, {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(cancelled).toBeInstanceOf(ResponseError);
      expect((cancelled as ResponseError<unknown>).code).toBe(REQUEST_FAILED);
      expect((cancelled as ResponseError<unknown>).message).toBe("Reset cancelled; nothing was changed.");
      expect((cancelled as ResponseError<unknown>).data).toEqual({ cancelled: true });
      expect(cancelledByUser(cancelled)).toBe(true);
      expect(session.messageRequests.at(-1).message).toContain("agent_spec.md");
      expect(intact()).toBe(true);

      const reset = await session.request(RESET, {});
      expect(reset.sessionId).not.toBe(old);
      expect(reset.deletedFiles).toEqual([]);
      expect(fs.existsSync(log!)).toBe(false);
      expect(fs.existsSync(path.join(project, "agent_spec.md"))).toBe(true);
      await session.shutdown();
    } finally {
      kiwi.stop();
    }
  }, 60_000);

  it("answers New session with a fresh session", async () => {
    const third = ServerSession.start(workspace, home, () => ({ title: "New session" }));
    sessions.push(third);
    await third.initialize(workspace, options());
    const changed = await third.waitFor(SESSION_CHANGED);
    expect(changed.params.reason).toBe("new");
    const history = await third.request(HISTORY, {});
    expect(history.items).toEqual([]);
    await third.shutdown();
  }, 60_000);
});
