/** Wiring only: every concern lives in src/host/ (the extension host's) or src/common/ (shared with the webview). */
import * as vscode from "vscode";
import { ChatController } from "./host/chat";
import { CHECKPOINT_SCHEME, CheckpointDocuments } from "./host/checkpointDocuments";
import { SessionCommands } from "./host/commands";
import { FileHistoryCommands, INSPECT_SCHEME, InspectDocuments } from "./host/fileHistory";
import { VERSION_SCHEME, VersionDocuments } from "./host/fileVersions";
import { showDrift } from "./host/drift";
import { DraftStore } from "./host/draft";
import { insertAtCursor } from "./host/insert";
import { instanceId } from "./host/instance";
import { createLog } from "./host/logging";
import type { HostMessage, WebviewMessage } from "./common/messages";
import { ViewNavigation } from "./host/navigation";
import { ResumeBanner } from "./host/resume";
import { ApiKeyStore, applyKeyChange } from "./host/secrets";
import { AgentServer } from "./host/server";
import { changedRestartSettings } from "./host/settings";
import { StatusBar } from "./host/status";
import { ChatViewProvider, VIEW_ID } from "./host/webview";

let server: AgentServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = createLog();
  const apiKeys = new ApiKeyStore(context.secrets);
  const status = new StatusBar();
  server = new AgentServer(log, instanceId(context.workspaceState), apiKeys);
  const agent = server;
  const post = (message: HostMessage): void => {
    view.post(message);
  };
  const chat = new ChatController(agent, status, post, log);
  const resume = new ResumeBanner(agent, post, log);
  const navigation = new ViewNavigation(agent, post, log);
  const commands = new SessionCommands(agent, () => void navigation.refresh());
  const draft = new DraftStore(context.workspaceState);
  const fileHistory = new FileHistoryCommands(agent);

  const onMessage = (message: WebviewMessage): void => {
    switch (message.type) {
      case "ready":
        post({ type: "draft", text: draft.get() });
        void chat.redraw();
        void resume.refresh();
        void navigation.refresh();
        break;
      case "send":
        void chat.send(message.text);
        break;
      case "stop":
        chat.stop();
        break;
      case "withdraw":
        chat.withdrawWaiting();
        break;
      case "copy":
        void vscode.env.clipboard.writeText(message.text);
        break;
      case "insert":
        void insertAtCursor(message.text);
        break;
      case "command":
        void vscode.commands.executeCommand(`agentAssist.${message.command}`);
        break;
      case "openFile":
        void resume.openFile(message.path);
        break;
      case "diffFile":
        void resume.diffFile(message.path);
        break;
      case "listSessions":
        void navigation.sessions();
        break;
      case "moreSessions":
        void navigation.moreSessions();
        break;
      case "openSession":
        void navigation.open(message.sessionId);
        break;
      case "forkSession":
        void navigation.fork(message.sessionId);
        break;
      case "previewRestore":
        void navigation.previewRestore(message.number);
        break;
      case "restore":
        void navigation.restore(message.number);
        break;
      case "search":
        void navigation.search(message.query);
        break;
      case "draft":
        draft.set(message.text);
        break;
      case "loadSteps":
        void navigation.steps();
        break;
    }
  };
  const view = new ChatViewProvider(context.extensionUri, onMessage);

  context.subscriptions.push(
    log,
    status,
    agent,
    view,
    chat,
    vscode.window.registerWebviewViewProvider(VIEW_ID, view, { webviewOptions: { retainContextWhenHidden: false } }),
    vscode.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, new CheckpointDocuments(agent, log)),
    vscode.workspace.registerTextDocumentContentProvider(VERSION_SCHEME, new VersionDocuments(agent, log)),
    vscode.workspace.registerTextDocumentContentProvider(INSPECT_SCHEME, new InspectDocuments(agent)),
    agent.onSessionChanged.event(() => {
      void resume.refresh();
      void navigation.refresh();
    }),
    chat.onTurnEnd.event(() => void navigation.refresh()),
    agent.onDrift.event((params) => {
      status.update({ drift: params.modified.length + params.deleted.length + params.created.length });
      // resume drift is in the view's banner when the view is open; a notification otherwise
      if (params.source !== "resume" || !view.visible) {
        void showDrift(params);
      }
    }),
    ...Object.entries(commands.handlers()).map(([id, handler]) =>
      vscode.commands.registerCommand(id, SessionCommands.guarded(handler)),
    ),
    vscode.commands.registerCommand("agentAssist.setApiKey", async () => {
      if (await apiKeys.prompt()) {
        // live when the server takes settings live (its next model request uses the key)
        const applied = await applyKeyChange(agent, (message) => log.warn(message));
        log.info(`API key changed: ${applied === "live" ? "sent to the running server" : applied}`);
      }
    }),
    vscode.commands.registerCommand("agentAssist.restartServer", () => agent.restart()),
    // not `agentAssist.fileHistory`: the language client registers each request of the server
    // under that name (`workspace/executeCommand` `agentAssist.<verb>`)
    vscode.commands.registerCommand(
      "agentAssist.showFileHistory",
      (resource?: vscode.Uri) => SessionCommands.guarded(() => fileHistory.fileHistory(resource))(),
    ),
    vscode.commands.registerCommand(
      "agentAssist.restoreThisVersion",
      (resource?: vscode.Uri) => SessionCommands.guarded(() => fileHistory.restoreShown(resource))(),
    ),
    vscode.commands.registerCommand(
      "agentAssist.openChangeTurn",
      (resource?: vscode.Uri) => SessionCommands.guarded(() => fileHistory.inspectShown(resource))(),
    ),
    // The other settings reach the running server through workspace/didChangeConfiguration.
    // Those it reads at start are sent as it started (liveOptions), so this is the one message.
    vscode.workspace.onDidChangeConfiguration((e) => {
      const changed = changedRestartSettings((section) => e.affectsConfiguration(section));
      if (changed.length > 0) {
        void vscode.window
          .showInformationMessage(
            `Agent Assist: ${changed.map((key) => `agentAssist.${key}`).join(", ")} changed. Restart the server to apply the change?`,
            "Restart",
          )
          .then((choice) => (choice === "Restart" ? agent.restart() : undefined));
      }
    }),
  );
  await agent.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
