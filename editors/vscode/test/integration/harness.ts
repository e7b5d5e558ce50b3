// Spawns the real Python server over stdio and the scripted model, and speaks LSP as the extension would.
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import {
  type CancellationToken,
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import type { InitializationOptions, Requests } from "../../src/common/protocol";

export const REPO = path.resolve(__dirname, "../../../..");
export const PYTHON = process.env.AGENT_ASSIST_PYTHON ?? path.join(REPO, ".venv/bin/python");
export const SERVER = process.env.AGENT_ASSIST_SERVER ?? path.join(REPO, ".venv/bin/agent-assist");

export interface FakeModel {
  baseUrl: string;
  requests(): { messages: { role: string; content: unknown }[]; model: string; authorization?: string }[];
  stop(): void;
}

export async function startFakeModel(dir: string, replies: unknown[]): Promise<FakeModel> {
  const script = path.join(dir, "script.json");
  const record = path.join(dir, "requests.json");
  fs.writeFileSync(script, JSON.stringify(replies));
  const proc = spawn(PYTHON, [path.join(__dirname, "../fake_model.py"), script, record], {
    env: { ...process.env, PYTHONPATH: REPO },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const lines = readline.createInterface({ input: proc.stdout });
    lines.once("line", resolve);
    proc.once("exit", (code) => {
      reject(new Error(`fake model exited with ${String(code)}`));
    });
  });
  return {
    baseUrl,
    requests: () => (fs.existsSync(record) ? JSON.parse(fs.readFileSync(record, "utf-8")) : []),
    stop: () => proc.kill("SIGTERM"),
  };
}

export interface Notification {
  method: string;
  params: any;
}

export class ServerSession {
  readonly notifications: Notification[] = [];
  readonly messageRequests: any[] = [];
  /** client/registerCapability registrations the server asked for. */
  readonly registrations: { method: string; registerOptions?: any }[] = [];
  /** workspace/configuration requests, each the sections it asked for. */
  readonly configurationRequests: (string | undefined)[][] = [];
  /** The answer to workspace/configuration, as the extension's middleware gives it; null for each item by default. */
  configuration: (sections: (string | undefined)[]) => unknown[] = (sections) => sections.map(() => null);
  /** The answer to workspace/applyEdit (VS Code applies it in the editor); refused by default. */
  applyEdit: (params: any) => unknown = () => ({ applied: false });
  private waiters: { match: (n: Notification) => boolean; resolve: (n: Notification) => void }[] = [];
  private constructor(
    readonly proc: ChildProcess,
    readonly connection: MessageConnection,
    readonly stderr: string[],
  ) {}

  /** Start the server in `workspace`; `answer` replies to window/showMessageRequest. */
  static start(workspace: string, home: string, answer: (params: any) => any): ServerSession {
    const proc = spawn(SERVER, ["serve", "--stdio"], {
      cwd: workspace,
      env: { ...process.env, AGENT_ASSIST_HOME: home, PYDANTIC_AI_NO_BANNER: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const stderr: string[] = [];
    proc.stderr.on("data", (b: Buffer) => stderr.push(b.toString()));
    const connection = createMessageConnection(
      new StreamMessageReader(proc.stdout),
      new StreamMessageWriter(proc.stdin),
    );
    const session = new ServerSession(proc, connection, stderr);
    connection.onNotification((method: string, params: any) => session.record({ method, params }));
    connection.onRequest("window/showMessageRequest", (params: any) => {
      session.messageRequests.push(params);
      return answer(params);
    });
    connection.onRequest("client/registerCapability", (p: any) => {
      session.registrations.push(...p.registrations);
      return null;
    });
    connection.onRequest("client/unregisterCapability", () => null);
    connection.onRequest("window/workDoneProgress/create", () => null);
    connection.onRequest("workspace/configuration", (p: any) => {
      const sections = p.items.map((item: { section?: string }) => item.section);
      session.configurationRequests.push(sections);
      return session.configuration(sections);
    });
    connection.onRequest("workspace/applyEdit", (p: any) => session.applyEdit(p));
    connection.listen();
    return session;
  }

  private record(n: Notification): void {
    this.notifications.push(n);
    this.waiters = this.waiters.filter((w) => {
      if (w.match(n)) {
        w.resolve(n);
        return false;
      }
      return true;
    });
  }

  waitFor(method: string, match: (params: any) => boolean = () => true, timeoutMs = 20_000): Promise<Notification> {
    const seen = this.notifications.find((n) => n.method === method && match(n.params));
    if (seen) {
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no ${method} within ${timeoutMs} ms; stderr:\n${this.stderr.join("")}`));
      }, timeoutMs);
      this.waiters.push({
        match: (n) => n.method === method && match(n.params),
        resolve: (n) => {
          clearTimeout(timer);
          resolve(n);
        },
      });
    });
  }

  /** `initialize` with VS Code-like capabilities and the extension's options, then `initialized`. */
  async initialize(workspace: string, options: InitializationOptions): Promise<any> {
    const uri = `file://${workspace}`;
    const result = await this.connection.sendRequest("initialize", {
      processId: process.pid,
      clientInfo: { name: "Visual Studio Code", version: "1.139.1" },
      rootUri: uri,
      workspaceFolders: [{ uri, name: path.basename(workspace) }],
      capabilities: {
        workspace: {
          applyEdit: true,
          workspaceEdit: { documentChanges: true },
          didChangeWatchedFiles: { dynamicRegistration: false },
          configuration: true,
          didChangeConfiguration: { dynamicRegistration: true },
        },
        window: { workDoneProgress: true, showMessage: { messageActionItem: { additionalPropertiesSupport: true } } },
      },
      initializationOptions: options,
    });
    await this.connection.sendNotification("initialized", {});
    return result;
  }

  /** A custom request typed by its method, as `AgentServer.request` sends it. */
  request<M extends keyof Requests>(
    method: M,
    params: Requests[M]["params"],
    token?: CancellationToken,
  ): Promise<Requests[M]["result"]> {
    return token ? this.connection.sendRequest(method, params, token) : this.connection.sendRequest(method, params);
  }

  async shutdown(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.proc.once("exit", () => resolve()));
    await this.connection.sendRequest("shutdown");
    await this.connection.sendNotification("exit");
    await exited;
    this.connection.dispose();
  }

  kill(): void {
    this.connection.dispose();
    this.proc.kill("SIGKILL");
  }
}
