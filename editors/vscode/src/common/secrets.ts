/** The model API key in VS Code's SecretStorage; never in settings.json. */
import * as vscode from "vscode";

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
      prompt: "Stored in VS Code's secret storage and passed to the server at start. Leave empty to remove it.",
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
