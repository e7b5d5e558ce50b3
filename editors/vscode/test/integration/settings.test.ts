// Settings and the API key changed while the server runs, sent as the extension sends them
// (workspace/didChangeConfiguration, then its answer to workspace/configuration), against the real server.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHAT, completedTurn, SESSION_CHANGED } from "../../src/common/protocol";
import type { InitializationOptions } from "../../src/common/protocol";
import {
  configurationAnswers,
  DEFAULT_SETTINGS,
  liveOptions,
  type Settings,
  toInitializationOptions,
} from "../../src/host/settings";
import { type FakeModel, SERVER, ServerSession, startFakeModel } from "./harness";

describe.skipIf(!fs.existsSync(SERVER))("settings and the key changed while the server runs", () => {
  let tmp: string;
  let model: FakeModel;
  let session: ServerSession | undefined;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "aa-vscode-settings-"));
    model = await startFakeModel(tmp, []); // every reply: "Echo: <the message>"
  });

  afterAll(() => {
    session?.kill();
    model.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const settingsChanged = (s: ServerSession) => s.stderr.join("").split("settings changed:").length - 1;

  /** What AgentServer does on a change: notify, then answer the server's pull with liveOptions. */
  async function change(s: ServerSession, options: InitializationOptions, applies = true): Promise<void> {
    const pulls = s.configurationRequests.length;
    const applied = settingsChanged(s);
    s.configuration = (sections) => configurationAnswers(sections, options, []);
    await s.connection.sendNotification("workspace/didChangeConfiguration", { settings: { agentAssist: options } });
    await expect.poll(() => s.configurationRequests.length, { timeout: 10_000 }).toBeGreaterThan(pulls);
    if (applies) {
      await expect.poll(() => settingsChanged(s), { timeout: 10_000 }).toBeGreaterThan(applied);
    }
  }

  /** Chat, and return the model request it made (the requests file is rewritten as they come). */
  async function lastRequest(s: ServerSession, text: string) {
    const before = model.requests().length;
    const turn = completedTurn(await s.request(CHAT, { text }));
    expect(turn.text).toBe(`Echo: ${text}`);
    await expect.poll(() => model.requests().length, { timeout: 5000 }).toBeGreaterThan(before);
    return model.requests().at(-1)!;
  }

  it("takes a new or removed key live, and is not told twice about a setting that needs a restart", async () => {
    const project = path.join(tmp, "project");
    fs.mkdirSync(project);
    const settings: Settings = { ...DEFAULT_SETTINGS, modelName: "fake-model", modelBaseUrl: model.baseUrl };
    const started = toInitializationOptions(settings, "vscode-live", "sk-old");
    const s = ServerSession.start(project, path.join(tmp, "home"), () => ({ title: "New session" }));
    session = s;
    await s.initialize(project, started);
    await s.waitFor(SESSION_CHANGED);
    // the server registers for the section: what tells the extension it takes settings live
    await expect
      .poll(() => s.registrations.find((r) => r.method === "workspace/didChangeConfiguration")?.registerOptions, {
        timeout: 10_000,
      })
      .toEqual({ section: "agentAssist" });
    expect((await lastRequest(s, "with the first key")).authorization).toBe("Bearer sk-old");

    // Set API Key: the settings sent again, the new key in them; no restart
    await change(s, liveOptions(toInitializationOptions(settings, "vscode-live", "sk-new"), started));
    expect((await lastRequest(s, "with the new key")).authorization).toBe("Bearer sk-new");

    // the key removed (an empty answer): sent as null, the server drops it
    await change(s, liveOptions(toInitializationOptions(settings, "vscode-live", undefined), started));
    expect((await lastRequest(s, "without a key")).authorization).not.toBe("Bearer sk-new");

    // store, persistence and trackedFiles changed with the model: the model applies, and the
    // server says nothing about the others (the extension's restart question is the one message)
    const restartOnly: Settings = {
      ...settings,
      modelName: "fake-model-2",
      store: "local",
      persistence: "metadata",
      trackedFiles: ["docs/**"],
    };
    await change(s, liveOptions(toInitializationOptions(restartOnly, "vscode-live", "sk-new"), started));
    const request = await lastRequest(s, "after the restart-only change");
    expect(request.model).toBe("fake-model-2");
    expect(request.authorization).toBe("Bearer sk-new");
    const messages = () =>
      s.notifications.filter((n) => n.method === "window/showMessage").map((n) => String(n.params.message));
    expect(messages()).toEqual([]);

    // what liveOptions keeps away: sent as they are, the server warns on its own
    await change(s, toInitializationOptions(restartOnly, "vscode-live", "sk-new"), false);
    await s.waitFor("window/showMessage", (p) => /persistence, trackedFiles changed/.test(p.message));
    expect(messages()).toHaveLength(1);
    await s.shutdown();
    session = undefined;
  }, 60_000);
});
