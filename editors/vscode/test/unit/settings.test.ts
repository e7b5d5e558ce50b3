import { describe, expect, it } from "vitest";
import { describeDrift } from "../../src/common/protocol";
import {
  DEFAULT_SETTINGS,
  isValidInstanceId,
  makeInstanceId,
  readSettings,
  resolveServerCommand,
  toInitializationOptions,
} from "../../src/common/settings";
import { statusText } from "../../src/common/status";

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
        autoResume: "always",
        persistence: "metadata",
        trackedFiles: ["spec/**", "", 3],
      }),
    );
    expect(settings).toEqual({
      serverCommand: ["/opt/aa/bin/agent-assist", "serve"],
      modelName: "gpt-test",
      modelBaseUrl: "http://127.0.0.1:9/v1",
      autoResume: "always",
      persistence: "metadata",
      trackedFiles: ["spec/**"],
    });
  });

  it("falls back to defaults for invalid values", () => {
    const settings = readSettings(reader({ autoResume: "sometimes", persistence: 1, trackedFiles: "x" }));
    expect(settings.autoResume).toBe("ask");
    expect(settings.persistence).toBe("full");
    expect(settings.trackedFiles).toEqual(DEFAULT_SETTINGS.trackedFiles);
  });

  it("splits a command given as one string", () => {
    expect(readSettings(reader({ "server.command": "agent-assist  serve" })).serverCommand).toEqual([
      "agent-assist",
      "serve",
    ]);
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
    expect(statusText({ sessionId: "0123456789ab", running: true, drift: 2, connected: true })).toBe(
      "$(sync~spin) 01234567 running $(warning) 2",
    );
    expect(statusText({ sessionId: "0123456789ab", running: false, drift: 0, connected: true })).toBe(
      "$(comment-discussion) 01234567 idle",
    );
  });

  it("lists drifted files", () => {
    expect(
      describeDrift({ sessionId: "s", source: "resume", modified: ["a.md"], deleted: ["b"], created: [], unchanged: 1 }),
    ).toEqual(["a.md (modified)", "b (deleted)"]);
  });
});
