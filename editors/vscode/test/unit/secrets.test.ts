import { describe, expect, it } from "vitest";
import { applyKeyChange, type KeyTarget } from "../../src/host/secrets";

/** A server as `applyKeyChange` sees it, recording what was asked of it. */
function server(running: boolean, takesSettingsLive: boolean, sendFails = false): KeyTarget & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    running,
    takesSettingsLive,
    sendSettings: () => {
      calls.push("sendSettings");
      return sendFails ? Promise.reject(new Error("connection closed")) : Promise.resolve();
    },
    restart: () => {
      calls.push("restart");
      return Promise.resolve();
    },
  };
}

describe("a changed API key", () => {
  it("is sent to a server that takes settings live, without a restart", async () => {
    const live = server(true, true);
    const warnings: string[] = [];
    expect(await applyKeyChange(live, (m) => warnings.push(m))).toBe("live");
    expect(live.calls).toEqual(["sendSettings"]);
    expect(warnings).toEqual([]);
  });

  it("restarts a server that does not take settings live", async () => {
    const old = server(true, false);
    expect(await applyKeyChange(old, () => undefined)).toBe("restarted");
    expect(old.calls).toEqual(["restart"]);
  });

  it("restarts when sending the settings failed, and says why", async () => {
    const failing = server(true, true, true);
    const warnings: string[] = [];
    expect(await applyKeyChange(failing, (m) => warnings.push(m))).toBe("restarted");
    expect(failing.calls).toEqual(["sendSettings", "restart"]);
    expect(warnings).toEqual(["sending the changed key failed (connection closed); restarting the server"]);
  });

  it("leaves a stopped server alone: it reads the key when it starts", async () => {
    const stopped = server(false, false);
    expect(await applyKeyChange(stopped, () => undefined)).toBe("at start");
    expect(stopped.calls).toEqual([]);
  });
});
