/** Starts `agent-assist serve` over stdio with vscode-languageclient and relays its notifications. */
import * as fs from "node:fs";
import * as vscode from "vscode";
import {
  type CancellationToken,
  DidChangeConfigurationNotification,
  LanguageClient,
  type LanguageClientOptions,
  MessageType,
  type ServerOptions,
  ShowMessageNotification,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { EXTENSION_ID } from "./constants";
import { errorText } from "./logging";
import {
  CHAT_DELTA,
  CHAT_RETRY,
  type ChatDeltaParams,
  type ChatRetryParams,
  DRIFT,
  type DriftParams,
  type Notifications,
  type Requests,
  SESSION_CHANGED,
  type SessionChangedParams,
  TOOL_CALL,
  type ToolCallParams,
} from "../common/protocol";
import type { ApiKeyStore } from "./secrets";
import type { InitializationOptions } from "../common/protocol";
import {
  configurationAnswers,
  liveOptions,
  readSettings,
  resolveServerCommand,
  SECTION,
  toInitializationOptions,
} from "./settings";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Fire `emitter` with each notification of `method`; the map ties the two types together. */
function relay<M extends keyof Notifications>(
  client: LanguageClient,
  method: M,
  emitter: vscode.EventEmitter<Notifications[M]>,
): void {
  client.onNotification(method, (params: Notifications[M]) => emitter.fire(params));
}

export class AgentServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** The options the running server started with: those it reads only at start stay so in what it is sent. */
  private started: InitializationOptions | undefined;
  /** The running server registered for workspace/didChangeConfiguration: it applies settings live. */
  private registeredSettings = false;
  readonly onChatDelta = new vscode.EventEmitter<ChatDeltaParams>();
  readonly onChatRetry = new vscode.EventEmitter<ChatRetryParams>();
  readonly onToolCall = new vscode.EventEmitter<ToolCallParams>();
  readonly onDrift = new vscode.EventEmitter<DriftParams>();
  readonly onSessionChanged = new vscode.EventEmitter<SessionChangedParams>();
  readonly onRunning = new vscode.EventEmitter<boolean>();

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly instanceId: string,
    private readonly apiKeys: ApiKeyStore,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The running server applies changed settings (the key included) without a restart. */
  get takesSettingsLive(): boolean {
    return this.running && this.registeredSettings;
  }

  /** Send the settings now, for a change VS Code's configuration does not see (the key). */
  async sendSettings(): Promise<void> {
    const client = this.client;
    if (!client) {
      throw new Error("the server is not running");
    }
    const settings = { [SECTION]: await this.currentOptions() };
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings });
  }

  async start(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const settings = readSettings(vscode.workspace.getConfiguration(SECTION));
    const resolved = resolveServerCommand(settings, folder?.uri.fsPath, process.env.PATH ?? "", isExecutable);
    if (!resolved) {
      const what = settings.serverCommand.length > 0 ? settings.serverCommand.join(" ") : "agent-assist";
      this.log.error(`server not found: ${what}`);
      void vscode.window
        .showErrorMessage(
          `Agent Assist: the server "${what}" was not found. Install it from the agent-assist repository (Install docs) or set "agentAssist.server.command".`,
          "Install docs",
          "Open settings",
        )
        .then((choice) => {
          const extension = vscode.extensions.getExtension(EXTENSION_ID);
          if (choice === "Install docs" && extension) {
            const readme = vscode.Uri.joinPath(extension.extensionUri, "README.md");
            void vscode.commands.executeCommand("markdown.showPreview", readme);
          } else if (choice === "Open settings") {
            void vscode.commands.executeCommand("workbench.action.openSettings", SECTION);
          }
        });
      return;
    }
    const apiKey = await this.apiKeys.get();
    const started = toInitializationOptions(settings, this.instanceId, apiKey);
    this.started = started;
    this.registeredSettings = false;
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: resolved.args,
      transport: TransportKind.stdio,
      options: {
        cwd: folder?.uri.fsPath,
        env: { ...process.env, PYDANTIC_AI_NO_BANNER: "1" },
      },
    };
    // No `synchronize.configurationSection`: the server registers for
    // workspace/didChangeConfiguration (section agentAssist) itself, then pulls
    // workspace/configuration; both carry what initializationOptions carries, key included.
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.log,
      initializationOptions: started,
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const others = await next(params, token);
            return configurationAnswers(
              params.items.map((item) => item.section),
              await this.currentOptions(),
              Array.isArray(others) ? others : [],
            );
          },
          // called first when the server registers for the notification, then on each change
          didChangeConfiguration: async () => {
            this.registeredSettings = true;
            const settings = { [SECTION]: await this.currentOptions() };
            await client.sendNotification(DidChangeConfigurationNotification.type, { settings });
          },
        },
      },
    };
    this.log.info(`starting ${resolved.command} ${resolved.args.join(" ")} (instance ${this.instanceId})`);
    const client = new LanguageClient("agentAssist", "Agent Assist", serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => this.onRunning.fire(e.newState === State.Running));
    relay(client, CHAT_DELTA, this.onChatDelta);
    relay(client, CHAT_RETRY, this.onChatRetry);
    relay(client, TOOL_CALL, this.onToolCall);
    relay(client, DRIFT, this.onDrift);
    relay(client, SESSION_CHANGED, this.onSessionChanged);
    client.onNotification(ShowMessageNotification.type, (p) => this.showMessage(p.type, p.message));
    try {
      await client.start();
    } catch (error) {
      this.log.error(`the server did not start: ${errorText(error)}`);
      void vscode.window.showErrorMessage(`Agent Assist: the server did not start: ${errorText(error)}`);
    }
  }

  /** The settings as the running server takes them, read now (liveOptions). */
  private async currentOptions(): Promise<InitializationOptions> {
    const settings = readSettings(vscode.workspace.getConfiguration(SECTION));
    const current = toInitializationOptions(settings, this.instanceId, await this.apiKeys.get());
    return liveOptions(current, this.started ?? current);
  }

  private showMessage(type: MessageType, message: string): void {
    const text = `Agent Assist: ${message}`;
    if (type === MessageType.Error) {
      void vscode.window.showErrorMessage(text);
    } else if (type === MessageType.Warning) {
      void vscode.window.showWarningMessage(text);
    } else {
      void vscode.window.showInformationMessage(text);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.warn(`stopping the server: ${errorText(error)}`);
      }
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Send a request typed by its method; rejects with a readable error when the server is not running. */
  async request<M extends keyof Requests>(
    method: M,
    params: Requests[M]["params"],
    token?: CancellationToken,
  ): Promise<Requests[M]["result"]> {
    const client = this.client;
    if (!client) {
      throw new Error("the Agent Assist server is not running (Agent Assist: Restart Server)");
    }
    if (client.state !== State.Running) {
      await client.start();
    }
    type Result = Requests[M]["result"];
    return token ? client.sendRequest<Result>(method, params, token) : client.sendRequest<Result>(method, params);
  }

  dispose(): void {
    void this.stop();
    for (const emitter of [this.onChatDelta, this.onChatRetry, this.onToolCall, this.onDrift, this.onSessionChanged, this.onRunning]) {
      emitter.dispose();
    }
  }
}
