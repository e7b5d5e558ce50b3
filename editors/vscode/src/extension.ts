/** Wiring only: every concern lives in src/common/. */
import * as vscode from "vscode";
import { ChatController } from "./common/chat";
import { SessionCommands } from "./common/commands";
import { showDrift } from "./common/drift";
import { instanceId } from "./common/instance";
import { createLog } from "./common/logging";
import { ApiKeyStore } from "./common/secrets";
import { AgentServer } from "./common/server";
import { SECTION } from "./common/settings";
import { StatusBar } from "./common/status";
import { ChatViewProvider, VIEW_ID } from "./common/webview";

let server: AgentServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = createLog();
  const apiKeys = new ApiKeyStore(context.secrets);
  const status = new StatusBar();
  server = new AgentServer(log, instanceId(context.workspaceState), apiKeys);
  const agent = server;
  const commands = new SessionCommands(agent);

  const chat = new ChatController(agent, status, (m) => { view.post(m); }, log);
  const view = new ChatViewProvider(context.extensionUri, (message) => {
    switch (message.type) {
      case "ready":
        void chat.redraw();
        break;
      case "send":
        void chat.send(message.text);
        break;
      case "stop":
        chat.stop();
        break;
      case "copy":
        void vscode.env.clipboard.writeText(message.text);
        break;
      case "command":
        void vscode.commands.executeCommand(`agentAssist.${message.command}`);
        break;
    }
  });

  context.subscriptions.push(
    log,
    status,
    agent,
    view,
    chat,
    vscode.window.registerWebviewViewProvider(VIEW_ID, view, { webviewOptions: { retainContextWhenHidden: false } }),
    agent.onDrift.event((params) => {
      status.update({ drift: params.modified.length + params.deleted.length + params.created.length });
      void showDrift(params);
    }),
    ...Object.entries(commands.handlers()).map(([id, handler]) =>
      vscode.commands.registerCommand(id, SessionCommands.guarded(handler)),
    ),
    vscode.commands.registerCommand("agentAssist.setApiKey", async () => {
      if ((await apiKeys.prompt()) && agent.running) {
        await agent.restart();
      }
    }),
    vscode.commands.registerCommand("agentAssist.restartServer", () => agent.restart()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(SECTION)) {
        void vscode.window
          .showInformationMessage("Agent Assist: settings changed. Restart the server to apply them?", "Restart")
          .then((choice) => (choice === "Restart" ? agent.restart() : undefined));
      }
    }),
  );
  await agent.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
