/** One side of a recorded change of a file as a read-only document (`agent-assist-version:`), for the diff editor. */
import * as vscode from "vscode";
import { errorText } from "./logging";
import { FILE_VERSION, type FileVersionResult } from "../common/protocol";
import type { AgentServer } from "./server";

export const VERSION_SCHEME = "agent-assist-version";

export type Side = "before" | "after";

/** Which change (its session and turn/step, or `ts` for a drift) and which side of it. */
export interface VersionRef {
  path: string;
  sessionId: string;
  turn: number | null;
  step: number | null;
  ts: string | null;
  side: Side;
}

/**
 * `agent-assist-version:/templates/a.md?session=…&turn=2&step=1&side=before`: the path keeps the
 * file's name (and so its language); `ts` names a drift's change.
 */
export function versionUriParts(ref: VersionRef): { scheme: string; path: string; query: string } {
  const query = new URLSearchParams({ session: ref.sessionId, side: ref.side });
  if (ref.turn !== null) {
    query.set("turn", String(ref.turn));
  }
  if (ref.step !== null) {
    query.set("step", String(ref.step));
  }
  if (ref.ts !== null) {
    query.set("ts", ref.ts);
  }
  return { scheme: VERSION_SCHEME, path: `/${ref.path}`, query: query.toString() };
}

export function versionUri(ref: VersionRef): vscode.Uri {
  return vscode.Uri.from(versionUriParts(ref));
}

function positive(text: string | null): number | null | undefined {
  if (text === null) {
    return null;
  }
  return /^[1-9]\d*$/.test(text) ? Number(text) : undefined;
}

/** The change and side such a URI names, if it is one. */
export function parseVersionUri(uri: { path: string; query: string }): VersionRef | undefined {
  const query = new URLSearchParams(uri.query);
  const path = uri.path.replace(/^\/+/, "");
  const sessionId = query.get("session");
  const side = query.get("side");
  const turn = positive(query.get("turn"));
  const step = positive(query.get("step"));
  if (!path || !sessionId || (side !== "before" && side !== "after") || turn === undefined || step === undefined) {
    return undefined;
  }
  return { path, sessionId, turn, step, ts: query.get("ts"), side };
}

/** The params of `fileVersion` / `restoreFile` for a change: turn/step, or `ts` when it has none (a drift). */
export function changeParams(ref: VersionRef): { path: string; sessionId: string; turn?: number; step?: number; ts?: string; side: Side } {
  return {
    path: ref.path,
    sessionId: ref.sessionId,
    side: ref.side,
    ...(ref.turn !== null ? { turn: ref.turn } : {}),
    ...(ref.step !== null ? { step: ref.step } : {}),
    ...(ref.ts !== null && (ref.turn === null || ref.step === null) ? { ts: ref.ts } : {}),
  };
}

/** The document's text: the content, or one line saying why there is none. */
export function versionText(ref: VersionRef, result: FileVersionResult): string {
  if (result.text !== null) {
    return result.text;
  }
  if (result.sha256 === null && !result.reason) {
    return `(${ref.path} did not exist ${ref.side} this change)\n`;
  }
  return `(${ref.path}: the content ${ref.side} this change was not kept${result.reason ? `: ${result.reason}` : ""})\n`;
}

export class VersionDocuments implements vscode.TextDocumentContentProvider {
  constructor(
    private readonly server: AgentServer,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseVersionUri(uri);
    if (!ref) {
      return `(not a recorded version: ${uri.toString()})\n`;
    }
    try {
      return versionText(ref, await this.server.request(FILE_VERSION, changeParams(ref)));
    } catch (error) {
      this.log.warn(`fileVersion ${ref.path}: ${errorText(error)}`);
      return `(${ref.path}: the version could not be read: ${errorText(error)})\n`;
    }
  }
}
