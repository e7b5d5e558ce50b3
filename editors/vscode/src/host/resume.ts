/** The resume banner's data (`agentAssist/resume` after each session change) and its links: open a changed file, diff it. */
import * as path from "node:path";
import * as vscode from "vscode";
import { checkpointUri } from "./checkpointDocuments";
import { errorText } from "./logging";
import type { HostMessage, ResumeView } from "../common/messages";
import { type ChangedFile, RESUME, STATUS } from "../common/protocol";
import type { AgentServer } from "./server";

/** The changed file the banner names, if it is one (the view may only open what the server listed). */
export function listedFile(resume: ResumeView | undefined, file: string): ChangedFile | undefined {
  return resume?.changedFiles.find((f) => f.path === file);
}

/** `agent_spec.md (checkpoint 2 ↔ now)`: the diff editor's title. */
export function diffTitle(file: ChangedFile & { checkpoint: number }): string {
  return `${path.posix.basename(file.path)} (checkpoint ${file.checkpoint} ↔ now)`;
}

export class ResumeBanner {
  private current: ResumeView | undefined;

  constructor(
    private readonly server: AgentServer,
    private readonly post: (message: HostMessage) => void,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** Ask the server what this session's resume gave the model and show it (the view decides whether to). */
  async refresh(): Promise<void> {
    if (!this.server.running) {
      return;
    }
    try {
      const [status, resume] = await Promise.all([this.server.request(STATUS, {}), this.server.request(RESUME, {})]);
      this.current = { ...resume, sessionId: status.sessionId };
      this.post({ type: "resume", resume: this.current });
    } catch (error) {
      this.log.warn(`resume: ${errorText(error)}`);
    }
  }

  private uri(file: string): vscode.Uri | undefined {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const normal = path.posix.normalize(file);
    if (!folder || path.posix.isAbsolute(normal) || normal.startsWith("..")) {
      return undefined;
    }
    return vscode.Uri.joinPath(folder.uri, normal);
  }

  async openFile(file: string): Promise<void> {
    const uri = listedFile(this.current, file) ? this.uri(file) : undefined;
    if (uri) {
      await vscode.window.showTextDocument(uri, { preview: false });
    }
  }

  /** The file against the newest checkpoint's copy; a deleted file shows that copy alone. */
  async diffFile(file: string): Promise<void> {
    const listed = listedFile(this.current, file);
    const uri = this.uri(file);
    if (!listed || listed.checkpoint === null || !uri) {
      return;
    }
    const copy = checkpointUri(listed.path, listed.checkpoint);
    if (listed.change === "deleted") {
      await vscode.window.showTextDocument(copy, { preview: true });
      return;
    }
    await vscode.commands.executeCommand("vscode.diff", copy, uri, diffTitle({ ...listed, checkpoint: listed.checkpoint }));
  }
}
