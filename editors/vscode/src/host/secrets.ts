/** The model API key in VS Code's SecretStorage; never in settings.json. */
import * as vscode from "vscode";
import { errorText } from "./logging";

const KEY = "agentAssist.model.apiKey";

export class ApiKeyStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  get(): Thenable<string | undefined> {
    return this.secrets.get(KEY);
  }

  /** Ask for the key; an empty answer deletes it. Returns true when something changed. */
  async prompt(): Promise<boolean> {
    const value = await vscode.window.showInputBox({
      title: "Agent Assist: API key of the model",
      prompt: "Stored in VS Code's secret storage and passed to the server. Leave empty to remove it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (value === undefined) {
      return false;
    }
    if (value.trim() === "") {
      await this.secrets.delete(KEY);
    } else {
      await this.secrets.store(KEY, value.trim());
    }
    return true;
  }
}

/** The part of the server a changed key needs (`AgentServer`). */
export interface KeyTarget {
  readonly running: boolean;
  /** The running server applies settings live (it registered for workspace/didChangeConfiguration). */
  readonly takesSettingsLive: boolean;
  /** Send the settings, key included, as workspace/didChangeConfiguration. */
  sendSettings(): Promise<void>;
  restart(): Promise<void>;
}

export type KeyApplied = "live" | "restarted" | "at start";

/**
 * Hand a changed key to the server: live when it takes settings live (from its next model
 * request), else by a restart; a server that is not running reads it when it starts.
 */
export async function applyKeyChange(server: KeyTarget, warn: (message: string) => void): Promise<KeyApplied> {
  if (!server.running) {
    return "at start";
  }
  if (server.takesSettingsLive) {
    try {
      await server.sendSettings();
      return "live";
    } catch (error) {
      warn(`sending the changed key failed (${errorText(error)}); restarting the server`);
    }
  }
  await server.restart();
  return "restarted";
}
