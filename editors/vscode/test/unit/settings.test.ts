import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { describeDrift, describeTurns } from "../../src/common/protocol";
import {
  changedRestartSettings,
  configurationAnswers,
  DEFAULT_SETTINGS,
  isValidInstanceId,
  liveOptions,
  makeInstanceId,
  readSettings,
  resolveServerCommand,
  toInitializationOptions,
} from "../../src/host/settings";
import { statusText, statusTooltip } from "../../src/host/status";

function reader(values: Record<string, unknown>): { get(key: string): unknown } {
  return { get: (key: string) => values[key] };
}

describe("readSettings", () => {
  it("gives the package.json defaults for an empty configuration", () => {
    expect(readSettings(reader({}))).toEqual(DEFAULT_SETTINGS);
  });

  it("reads every setting", () => {
    const settings = readSettings(
      reader({
        "server.command": ["/opt/aa/bin/agent-assist", "serve"],
        "model.name": " gpt-test ",
        "model.baseUrl": "http://127.0.0.1:9/v1",
        "model.maxRetries": 0,
        "model.streamTimeout": 12.5,
        "model.firstTokenTimeout": 600,
        "model.maxReplyBytes": 1_048_576,
        "model.maxOutputTokens": 512,
        "tools.protectedPaths": ["secrets/**", " ", 7],
        "tools.maxCallsPerResponse": 8,
        "tools.maxCallsPerTurn": 100,
        "tools.maxArgumentBytes": 65_536,
        contextWindow: 32_768,
        compactAt: 0.8,
        autoResume: "always",
        persistence: "metadata",
        store: " postgresql://alice@db.example.com/agent_assist ",
        trackedFiles: ["spec/**", "", 3],
        mcpServers: { docs: { command: "docs-mcp", confirm: true }, bad: "x" },
      }),
    );
    expect(settings).toEqual({
      serverCommand: ["/opt/aa/bin/agent-assist", "serve"],
      modelName: "gpt-test",
      modelBaseUrl: "http://127.0.0.1:9/v1",
      modelMaxRetries: 0,
      modelStreamTimeout: 12.5,
      modelFirstTokenTimeout: 600,
      modelMaxReplyBytes: 1_048_576,
      modelMaxOutputTokens: 512,
      toolsProtectedPaths: ["secrets/**"],
      toolsMaxCallsPerResponse: 8,
      toolsMaxCallsPerTurn: 100,
      toolsMaxArgumentBytes: 65_536,
      contextWindow: 32_768,
      compactAt: 0.8,
      autoResume: "always",
      persistence: "metadata",
      store: "postgresql://alice@db.example.com/agent_assist",
      trackedFiles: ["spec/**"],
      mcpServers: { docs: { command: "docs-mcp", confirm: true } },
    });
    expect(toInitializationOptions(settings, "w", undefined).mcpServers).toEqual(settings.mcpServers);
  });

  it("falls back to defaults for invalid values", () => {
    const settings = readSettings(reader({ autoResume: "sometimes", persistence: 1, trackedFiles: "x" }));
    expect(settings.autoResume).toBe("ask");
    expect(settings.persistence).toBe("full");
    expect(settings.trackedFiles).toEqual(DEFAULT_SETTINGS.trackedFiles);
    expect(readSettings(reader({ store: 5432 })).store).toBe("");
  });

  it("leaves out-of-range or non-numeric model and window settings to the server", () => {
    const settings = readSettings(
      reader({
        "model.maxRetries": 11,
        "model.streamTimeout": 0,
        "model.firstTokenTimeout": 4000,
        contextWindow: 1000.5,
        compactAt: "0.5",
      }),
    );
    expect(settings.modelMaxRetries).toBeUndefined();
    expect(settings.modelStreamTimeout).toBeUndefined();
    expect(settings.modelFirstTokenTimeout).toBeUndefined();
    expect(settings.contextWindow).toBeUndefined();
    expect(settings.compactAt).toBeUndefined();
    expect(readSettings(reader({ "model.maxRetries": 2.5, "model.streamTimeout": null })).modelMaxRetries).toBeUndefined();
  });

  it("leaves out-of-range or non-numeric reply and tool limits to the server", () => {
    const below = readSettings(
      reader({
        "model.maxReplyBytes": 65_535,
        "model.maxOutputTokens": 0,
        "tools.maxCallsPerResponse": 0,
        "tools.maxCallsPerTurn": 0,
        "tools.maxArgumentBytes": 1023,
      }),
    );
    const above = readSettings(
      reader({
        "model.maxReplyBytes": 268_435_457,
        "model.maxOutputTokens": 1_000_001,
        "tools.maxCallsPerResponse": 1001,
        "tools.maxCallsPerTurn": 10_001,
        "tools.maxArgumentBytes": 67_108_865,
      }),
    );
    const notWhole = readSettings(
      reader({
        "model.maxReplyBytes": 100_000.5,
        "model.maxOutputTokens": 256.5,
        "tools.maxCallsPerResponse": "8",
        "tools.maxCallsPerTurn": 2.5,
        "tools.maxArgumentBytes": null,
      }),
    );
    for (const settings of [below, above, notWhole]) {
      expect(settings.modelMaxReplyBytes).toBeUndefined();
      expect(settings.modelMaxOutputTokens).toBeUndefined();
      expect(settings.toolsMaxCallsPerResponse).toBeUndefined();
      expect(settings.toolsMaxCallsPerTurn).toBeUndefined();
      expect(settings.toolsMaxArgumentBytes).toBeUndefined();
    }
    const bounds = readSettings(
      reader({
        "model.maxReplyBytes": 268_435_456,
        "tools.maxCallsPerResponse": 1,
        "tools.maxCallsPerTurn": 10_000,
        "tools.maxArgumentBytes": 1024,
      }),
    );
    expect(bounds).toMatchObject({
      modelMaxReplyBytes: 268_435_456,
      toolsMaxCallsPerResponse: 1,
      toolsMaxCallsPerTurn: 10_000,
      toolsMaxArgumentBytes: 1024,
    });
    expect(readSettings(reader({ "tools.protectedPaths": "secrets/**" })).toolsProtectedPaths).toEqual([]);
  });

  it("splits a command given as one string", () => {
    expect(readSettings(reader({ "server.command": "agent-assist  serve" })).serverCommand).toEqual([
      "agent-assist",
      "serve",
    ]);
  });
});

describe("package.json contributes.configuration", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "../../package.json"), "utf-8"));
  const properties = manifest.contributes.configuration.properties;

  it("declares the retry and window settings with the server's ranges, unset by default", () => {
    expect(properties["agentAssist.model.maxRetries"]).toMatchObject({ default: null, minimum: 0, maximum: 10 });
    expect(properties["agentAssist.model.streamTimeout"]).toMatchObject({ default: null, minimum: 1, maximum: 3600 });
    expect(properties["agentAssist.model.firstTokenTimeout"]).toMatchObject({ default: null, minimum: 1, maximum: 3600 });
    expect(properties["agentAssist.contextWindow"]).toMatchObject({ default: null, minimum: 1000, maximum: 10_000_000 });
    expect(properties["agentAssist.compactAt"]).toMatchObject({ default: null, minimum: 0.1, maximum: 0.95 });
  });

  it("declares the reply and tool limits with the server's ranges, unset by default", () => {
    expect(properties["agentAssist.model.maxOutputTokens"]).toMatchObject({
      type: ["integer", "null"],
      default: null,
      minimum: 1,
      maximum: 1_000_000,
    });
    expect(properties["agentAssist.model.maxReplyBytes"]).toMatchObject({
      type: ["integer", "null"],
      default: null,
      minimum: 65_536,
      maximum: 268_435_456,
    });
    expect(properties["agentAssist.tools.maxCallsPerResponse"]).toMatchObject({
      type: ["integer", "null"],
      default: null,
      minimum: 1,
      maximum: 1000,
    });
    expect(properties["agentAssist.tools.maxCallsPerTurn"]).toMatchObject({
      type: ["integer", "null"],
      default: null,
      minimum: 1,
      maximum: 10_000,
    });
    expect(properties["agentAssist.tools.maxArgumentBytes"]).toMatchObject({
      type: ["integer", "null"],
      default: null,
      minimum: 1024,
      maximum: 67_108_864,
    });
    expect(properties["agentAssist.tools.protectedPaths"]).toMatchObject({
      type: "array",
      items: { type: "string" },
      default: [],
    });
  });

  it("declares the store as a string, empty (the server decides) by default", () => {
    expect(properties["agentAssist.store"]).toMatchObject({ type: "string", default: "" });
  });

  it("gives null (unset) for the declared defaults", () => {
    const defaults = Object.fromEntries(
      Object.entries(properties).map(([key, value]: [string, any]) => [key.slice("agentAssist.".length), value.default]),
    );
    expect(readSettings(reader(defaults))).toEqual(DEFAULT_SETTINGS);
  });
});

describe("toInitializationOptions", () => {
  it("maps settings and the secret key to the protocol's options", () => {
    const settings = { ...DEFAULT_SETTINGS, modelName: "m", modelBaseUrl: "http://h/v1", autoResume: "never" as const };
    expect(toInitializationOptions(settings, "vscode-1", "sk-secret")).toEqual({
      instanceId: "vscode-1",
      autoResume: "never",
      persistence: "full",
      trackedFiles: ["agent_spec.md", "templates/**"],
      // the drift notification shows resume drift: the server must not repeat it as a message
      driftMessages: false,
      model: { name: "m", baseUrl: "http://h/v1", apiKey: "sk-secret" },
    });
  });

  it("leaves the model to the server's environment when nothing is set", () => {
    const options = toInitializationOptions(DEFAULT_SETTINGS, "vscode-1", undefined);
    expect(options).not.toHaveProperty("model");
  });

  it("sends only the key when only the key is set", () => {
    expect(toInitializationOptions(DEFAULT_SETTINGS, "i", "k").model).toEqual({ apiKey: "k" });
  });

  it("passes retries and the stream timeout in model, the window options at the top level", () => {
    const settings = {
      ...DEFAULT_SETTINGS,
      modelMaxRetries: 0,
      modelStreamTimeout: 30,
      modelFirstTokenTimeout: 900,
      contextWindow: 8192,
      compactAt: 0.5,
    };
    const options = toInitializationOptions(settings, "i", undefined);
    expect(options.model).toEqual({ maxRetries: 0, streamTimeout: 30, firstTokenTimeout: 900 });
    expect(options.contextWindow).toBe(8192);
    expect(options.compactAt).toBe(0.5);
    const unset = toInitializationOptions(DEFAULT_SETTINGS, "i", undefined);
    expect(unset).not.toHaveProperty("contextWindow");
    expect(unset).not.toHaveProperty("compactAt");
  });

  it("passes the reply limit in model and the tool limits in tools, each only when set", () => {
    const settings = {
      ...DEFAULT_SETTINGS,
      modelMaxReplyBytes: 1_048_576,
      modelMaxOutputTokens: 300,
      toolsProtectedPaths: ["secrets/**", "deploy/*.sh"],
      toolsMaxCallsPerResponse: 8,
      toolsMaxCallsPerTurn: 100,
      toolsMaxArgumentBytes: 65_536,
    };
    const options = toInitializationOptions(settings, "i", undefined);
    expect(options.model).toEqual({ maxReplyBytes: 1_048_576, maxOutputTokens: 300 });
    expect(options.tools).toEqual({
      protectedPaths: ["secrets/**", "deploy/*.sh"],
      maxCallsPerResponse: 8,
      maxCallsPerTurn: 100,
      maxArgumentBytes: 65_536,
    });
    expect(toInitializationOptions({ ...DEFAULT_SETTINGS, toolsMaxCallsPerTurn: 5 }, "i", undefined).tools).toEqual({
      maxCallsPerTurn: 5,
    });
    // nothing set (protectedPaths empty): the server's built-in list and defaults apply
    const unset = toInitializationOptions(DEFAULT_SETTINGS, "i", undefined);
    expect(unset).not.toHaveProperty("tools");
    expect(unset).not.toHaveProperty("model");
  });

  it("sends the store only when it is set", () => {
    const conninfo = "postgresql://alice@db.example.com/agent_assist";
    expect(toInitializationOptions({ ...DEFAULT_SETTINGS, store: conninfo }, "i", undefined).store).toBe(conninfo);
    expect(toInitializationOptions({ ...DEFAULT_SETTINGS, store: "local" }, "i", undefined).store).toBe("local");
    expect(toInitializationOptions(DEFAULT_SETTINGS, "i", undefined)).not.toHaveProperty("store");
    const blank = readSettings(reader({ store: "   " }));
    expect(toInitializationOptions(blank, "i", undefined)).not.toHaveProperty("store");
  });
});

describe("instance ids", () => {
  it("makes ids the server accepts", () => {
    const id = makeInstanceId("0123456789abcdef0123");
    expect(id).toBe("vscode-0123456789abcdef");
    expect(isValidInstanceId(id)).toBe(true);
    expect(isValidInstanceId("a b")).toBe(false);
    expect(isValidInstanceId("x".repeat(65))).toBe(false);
    expect(isValidInstanceId(undefined)).toBe(false);
  });
});

describe("resolveServerCommand", () => {
  const exists = (files: string[]) => (file: string) => files.includes(file);

  it("prefers the setting", () => {
    const settings = { ...DEFAULT_SETTINGS, serverCommand: ["/x/agent-assist", "serve", "--verbose"] };
    expect(resolveServerCommand(settings, "/ws", "/usr/bin", exists(["/x/agent-assist"]))).toEqual({
      command: "/x/agent-assist",
      args: ["serve", "--verbose"],
    });
  });

  it("finds a bare command of the setting on PATH", () => {
    const settings = { ...DEFAULT_SETTINGS, serverCommand: ["aa", "serve"] };
    expect(resolveServerCommand(settings, "/ws", "/a:/b", exists(["/b/aa"]))).toEqual({ command: "/b/aa", args: ["serve"] });
  });

  it("uses the workspace venv, then PATH", () => {
    expect(resolveServerCommand(DEFAULT_SETTINGS, "/ws", "/usr/bin", exists(["/ws/.venv/bin/agent-assist", "/usr/bin/agent-assist"]))).toEqual({
      command: "/ws/.venv/bin/agent-assist",
      args: ["serve"],
    });
    expect(resolveServerCommand(DEFAULT_SETTINGS, "/ws", "/usr/bin", exists(["/usr/bin/agent-assist"]))).toEqual({
      command: "/usr/bin/agent-assist",
      args: ["serve"],
    });
  });

  it("reports a missing server", () => {
    expect(resolveServerCommand(DEFAULT_SETTINGS, "/ws", "/usr/bin", exists([]))).toBeUndefined();
    const settings = { ...DEFAULT_SETTINGS, serverCommand: ["/nope/agent-assist"] };
    expect(resolveServerCommand(settings, "/ws", "/usr/bin", exists([]))).toBeUndefined();
  });
});

describe("status and drift text", () => {
  it("shows the short session id, state and drift", () => {
    const view = { sessionId: "0123456789ab", connected: true, contextWindow: 0, turns: 0, phase: null };
    expect(statusText({ ...view, running: true, drift: 2 })).toBe("$(sync~spin) 01234567 running $(warning) 2");
    expect(statusText({ ...view, running: false, drift: 0 })).toBe("$(comment-discussion) 01234567 idle");
  });

  it("shows the context window in use in the tooltip once it is known", () => {
    const view = {
      sessionId: "0123456789ab",
      running: false,
      drift: 1,
      connected: true,
      contextWindow: 4096,
      turns: 12,
      phase: null,
    };
    expect(statusTooltip(view)).toBe(
      "Agent Assist session 0123456789ab (idle), 12 turns, drifted files: 1, context window: 4096 tokens",
    );
    expect(statusTooltip({ ...view, contextWindow: 0 })).not.toContain("context window");
    expect(statusTooltip({ ...view, contextWindow: 2048, contextWindowSource: "/props" })).toContain(
      "context window: 2048 tokens (stated by the model server: /props)",
    );
    expect(statusTooltip({ ...view, contextWindowSource: "setting" })).toMatch(/4096 tokens$/);
    expect(statusTooltip({ ...view, sessionId: "" })).toBe("Agent Assist");
  });

  it("shows the phase next to the turns in the tooltip", () => {
    const view = { sessionId: "0123456789ab", running: true, drift: 0, connected: true, contextWindow: 0, turns: 12 };
    expect(statusTooltip({ ...view, phase: "code" })).toBe(
      "Agent Assist session 0123456789ab (running), 12 turns · code, drifted files: 0",
    );
    expect(statusTooltip({ ...view, phase: null })).not.toContain("·");
  });

  it("puts the phase after the turn count, nothing when it is unset", () => {
    expect(describeTurns(12, "code")).toBe("12 turns · code");
    expect(describeTurns(1, "design")).toBe("1 turn · design");
    expect(describeTurns(3)).toBe("3 turns");
    expect(describeTurns(0, null)).toBe("0 turns");
  });

  it("lists drifted files", () => {
    expect(
      describeDrift({ sessionId: "s", source: "resume", messageShown: false, modified: ["a.md"], deleted: ["b"], created: [], unchanged: 1, afterAssistantEdit: [] }),
    ).toEqual(["a.md (modified)", "b (deleted)"]);
    expect(
      describeDrift({ sessionId: "s", source: "watcher", messageShown: false, modified: ["a.md"], deleted: [], created: [], unchanged: 1, afterAssistantEdit: ["a.md"] }),
    ).toEqual(["a.md (changed after the assistant's edit)"]);
  });
});

describe("settings changed while the server runs", () => {
  it("asks for a restart only for what the server reads at start", () => {
    const changed = (...keys: string[]) => (section: string) => keys.some((k) => section === `agentAssist.${k}`);
    expect(changedRestartSettings(changed("model.name", "model.baseUrl", "tools.protectedPaths", "contextWindow"))).toEqual([]);
    expect(changedRestartSettings(changed("compactAt", "autoResume", "model.maxRetries"))).toEqual([]);
    expect(changedRestartSettings(changed("store", "contextWindow"))).toEqual(["store"]);
    expect(changedRestartSettings(changed("persistence", "trackedFiles", "server.command"))).toEqual([
      "server.command",
      "persistence",
      "trackedFiles",
    ]);
  });

  it("answers workspace/configuration for agentAssist with the initialization options, key included", () => {
    const options = toInitializationOptions(
      readSettings(reader({ "model.name": "gpt-live", contextWindow: 32_768 })),
      "vscode-abc",
      "sk-secret",
    );
    const answers = configurationAnswers(["agentAssist", "editor", undefined], options, [{ raw: true }, { tabSize: 2 }, {}]);
    expect(answers[0]).toEqual({
      instanceId: "vscode-abc",
      autoResume: "ask",
      persistence: "full",
      trackedFiles: ["agent_spec.md", "templates/**"],
      driftMessages: false,
      contextWindow: 32_768,
      model: { name: "gpt-live", apiKey: "sk-secret" },
    });
    expect(answers.slice(1)).toEqual([{ tabSize: 2 }, {}]);
    expect(configurationAnswers(["agentAssist", "other"], options, [])).toEqual([options, null]);
  });

  it("sends what the server reads at start as it started: the restart question is the one message", () => {
    const started = toInitializationOptions(
      readSettings(reader({ "model.name": "gpt-old", persistence: "metadata", trackedFiles: ["spec.md"] })),
      "vscode-abc",
      "sk-old",
    );
    const changed = toInitializationOptions(
      readSettings(
        reader({
          "model.name": "gpt-new",
          store: "postgresql://alice@db.example.com/aa",
          persistence: "full",
          trackedFiles: ["other/**"],
          contextWindow: 32_768,
        }),
      ),
      "vscode-abc",
      "sk-new",
    );
    const live = liveOptions(changed, started);
    expect(live).toEqual({
      instanceId: "vscode-abc",
      autoResume: "ask",
      persistence: "metadata",
      trackedFiles: ["spec.md"],
      driftMessages: false,
      contextWindow: 32_768,
      model: { name: "gpt-new", baseUrl: null, apiKey: "sk-new" },
    });
    // the store set since the start is left out, as it was at start (JSON drops undefined)
    expect(JSON.parse(JSON.stringify(live))).not.toHaveProperty("store");
    const withStore = { ...started, store: "local" };
    expect(liveOptions({ ...changed, store: "postgresql://x@y/z" }, withStore).store).toBe("local");
    expect(liveOptions(changed, withStore).store).toBe("local");
  });

  it("sends a removed key, name or base URL as null: the server falls back to its environment", () => {
    const started = toInitializationOptions(
      readSettings(reader({ "model.name": "gpt", "model.baseUrl": "http://127.0.0.1:9/v1" })),
      "vscode-abc",
      "sk-old",
    );
    const cleared = toInitializationOptions(readSettings(reader({})), "vscode-abc", undefined);
    expect(cleared.model).toBeUndefined();
    expect(liveOptions(cleared, started).model).toEqual({ name: null, baseUrl: null, apiKey: null });
  });
});
