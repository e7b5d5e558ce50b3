// Looking back against `agent-assist serve`: the file history's rows, both sides of a change as the
// version documents ask for them, a restore applied through workspace/applyEdit, the turn inspected,
// and the transcript's steps as the webview gets them.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResponseError } from "vscode-jsonrpc/node";
import { changePickItem, changeRef, diffTitle, restoreQuestion, restoredText } from "../../src/host/fileHistory";
import { changeParams, parseVersionUri, versionText, versionUriParts } from "../../src/host/fileVersions";
import { errorText } from "../../src/host/logging";
import { parseHostMessage } from "../../src/common/messages";
import {
  CHAT,
  completedTurn,
  FILE_HISTORY,
  FILE_VERSION,
  HISTORY,
  INSPECT,
  INVALID_PARAMS,
  RESTORE_FILE,
  SESSION_CHANGED,
} from "../../src/common/protocol";
import { DEFAULT_SETTINGS, toInitializationOptions } from "../../src/host/settings";
import { inspectMarkdown } from "../../src/common/steps";
import { initialView, turnSteps, update } from "../../src/webview/model";
import { type FakeModel, SERVER, ServerSession, startFakeModel } from "./harness";

const V0 = "port: 80\n";
const V1 = "port: 8080\n";
const V2 = "port: 8080\nhost: db\n";

describe.skipIf(!fs.existsSync(SERVER))("looking back from VS Code against `agent-assist serve`", () => {
  let tmp: string;
  let workspace: string;
  let model: FakeModel;
  let server: ServerSession;
  const edits: any[] = [];

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "aa-vscode-lookback-"));
    workspace = path.join(tmp, "project");
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(workspace, "config.yaml"), V0);
    model = await startFakeModel(tmp, [
      { tool_calls: [{ name: "write_file", arguments: { path: "config.yaml", content: V1 }, id: "call_1" }] },
      { tool_calls: [{ name: "write_file", arguments: { path: "config.yaml", content: V2 }, id: "call_2" }] },
      { text: "Both written." },
    ]);
    server = ServerSession.start(workspace, path.join(tmp, "home"), () => null);
    // VS Code applies the edit in the editor; here the whole-file edit goes to disk
    server.applyEdit = (params) => {
      edits.push(params);
      for (const change of params.edit.documentChanges ?? []) {
        const file = new URL(change.textDocument.uri).pathname;
        fs.writeFileSync(decodeURIComponent(file), change.edits[0].newText);
      }
      return { applied: true };
    };
    const settings = { ...DEFAULT_SETTINGS, modelName: "fake-model", modelBaseUrl: model.baseUrl };
    await server.initialize(workspace, toInitializationOptions(settings, "vscode-lookback", "sk-test"));
    await server.waitFor(SESSION_CHANGED);
  });

  afterAll(() => {
    server.kill();
    model.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("lists a file's changes, diffs their sides, restores one through the editor, shows the turn and its steps", async () => {
    const turn = completedTurn(await server.request(CHAT, { text: "set the port, then the host" }));
    expect(turn.text).toBe("Both written.");
    const file = path.join(workspace, "config.yaml");
    expect(fs.readFileSync(file, "utf-8")).toBe(V2);

    // -- History of This File: the active editor's path (absolute), newest first
    const history = await server.request(FILE_HISTORY, { path: file });
    expect(history.path).toBe("config.yaml");
    const newest = history.changes[0];
    if (!newest) throw new Error("no change recorded");
    const title = newest.sessionTitle || `(untitled) ${turn.sessionId.slice(0, 8)}`;
    const rows = history.changes.map(changePickItem);
    expect(rows.map((r) => r.description)).toEqual([`${title} · turn ${turn.turn} step 2`, `${title} · turn ${turn.turn} step 1`]);
    expect(rows.every((r) => r.label.endsWith(" · write") && r.detail === "set the port, then the host")).toBe(true);
    expect(diffTitle(history.path, newest)).toBe(`config.yaml (before ↔ after turn ${turn.turn} step 2)`);

    // -- the diff's two documents: each URI names its side; the provider asks fileVersion
    const side = async (which: "before" | "after") => {
      const ref = parseVersionUri(versionUriParts(changeRef(history.path, newest, which)));
      if (!ref) throw new Error("the version URI did not round-trip");
      return versionText(ref, await server.request(FILE_VERSION, changeParams(ref)));
    };
    expect(await side("before")).toBe(V1);
    expect(await side("after")).toBe(V2);

    // -- Restore this version…: the earlier side, as an edit of the editor (undoable)
    const question = restoreQuestion(history.path, newest);
    expect(question.message).toBe(`Restore config.yaml as it was before turn ${turn.turn} step 2?`);
    const restored = await server.request(RESTORE_FILE, changeParams(changeRef(history.path, newest, "before")));
    expect(restoredText(history.path, newest, restored)).toBe(`restored config.yaml as it was before turn ${turn.turn} step 2`);
    expect(edits.at(-1)?.edit.documentChanges[0].edits[0].newText).toBe(V1);
    expect(fs.readFileSync(file, "utf-8")).toBe(V1);

    // -- Open session at this turn (read-only)
    const inspected = await server.request(INSPECT, { sessionId: newest.sessionId, turn: turn.turn });
    const markdown = inspectMarkdown(inspected, inspected.turns);
    expect(markdown).toContain(`## Turn ${turn.turn}`);
    expect(markdown).toContain("set the port, then the host");
    expect(markdown.match(/#### `write_file`/g)?.length).toBe(2);
    expect(markdown).toContain('"path": "config.yaml"');

    // -- the transcript's steps toggle: history {steps: true}, as the host posts it to the webview
    const steps = await server.request(HISTORY, { steps: true });
    const message = parseHostMessage({ type: "steps", sessionId: steps.sessionId, turns: steps.turns ?? [] });
    if (!message) throw new Error("the webview would drop the steps message");
    let view = initialView({ sessionId: steps.sessionId, items: steps.items });
    view = update(update(view, { type: "ui/toggleSteps", turn: turn.turn }), message);
    const shown = turnSteps(view, turn.turn);
    expect(shown.turn?.steps.map((s) => s.tools.map((t) => t.name))).toEqual([["write_file"], ["write_file"], []]);
    expect(shown.turn?.steps.at(-1)?.text).toBe("Both written.");
  });

  it("answers a path outside the workspace with an error whose text the user sees", async () => {
    const failure = await server.request(FILE_HISTORY, { path: path.join(tmp, "elsewhere.txt") }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ResponseError);
    expect((failure as ResponseError<unknown>).code).toBe(INVALID_PARAMS);
    expect(errorText(failure)).toMatch(/outside the workspace/);
  });
});
