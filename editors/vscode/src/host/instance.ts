/** This window's `instanceId`: generated once, kept in workspaceState so a reload resumes its session. */
import { randomBytes } from "node:crypto";
import type * as vscode from "vscode";
import { isValidInstanceId, makeInstanceId } from "./settings";

const KEY = "agentAssist.instanceId";

export function instanceId(state: vscode.Memento): string {
  const stored = state.get<unknown>(KEY);
  if (isValidInstanceId(stored)) {
    return stored;
  }
  const created = makeInstanceId(randomBytes(8).toString("hex"));
  void state.update(KEY, created);
  return created;
}
