/** A checkpoint's copy of a file as a read-only document (`agent-assist-checkpoint:`), to diff the file against. */
import * as vscode from "vscode";
import { errorText } from "./logging";
import { CHECKPOINT_FILE } from "../common/protocol";
import type { AgentServer } from "./server";

export const CHECKPOINT_SCHEME = "agent-assist-checkpoint";

/** `agent-assist-checkpoint:/templates/a.md?checkpoint=2`: the path keeps the file's name (and language). */
export function checkpointUri(path: string, checkpoint: number): vscode.Uri {
  return vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `/${path}`, query: `checkpoint=${checkpoint}` });
}

/** The workspace-relative path and checkpoint number of such a URI, if it is one. */
export function parseCheckpointUri(uri: { path: string; query: string }): { path: string; checkpoint: number } | undefined {
  const match = /^checkpoint=(\d+)$/.exec(uri.query);
  const path = uri.path.replace(/^\/+/, "");
  return match && path ? { path, checkpoint: Number(match[1]) } : undefined;
}

/** The text shown when the checkpoint kept no copy (never tracked there, withheld as a secret, binary). */
export function noCopyText(path: string, checkpoint: number, reason: string | undefined): string {
  return `(${path}: checkpoint ${checkpoint} has no text copy${reason ? `: ${reason}` : ""})\n`;
}

export class CheckpointDocuments implements vscode.TextDocumentContentProvider {
  constructor(
    private readonly server: AgentServer,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const parsed = parseCheckpointUri(uri);
    if (!parsed) {
      return `(not a checkpoint copy: ${uri.toString()})\n`;
    }
    try {
      const result = await this.server.request(CHECKPOINT_FILE, { path: parsed.path, number: parsed.checkpoint });
      return result.text ?? noCopyText(parsed.path, parsed.checkpoint, result.reason);
    } catch (error) {
      this.log.warn(`checkpointFile ${parsed.path}: ${errorText(error)}`);
      return noCopyText(parsed.path, parsed.checkpoint, errorText(error));
    }
  }
}
