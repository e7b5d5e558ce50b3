/** Typed messages between the sidebar webview and the extension host (only the host talks to the server). */
import type { TranscriptItem, TranscriptRole } from "./protocol";

/** Webview → extension. */
export type WebviewMessage =
  | { type: "ready" }
  | { type: "send"; text: string }
  | { type: "stop" }
  | { type: "copy"; text: string }
  | { type: "command"; command: ViewCommand };

/** Commands the webview's toolbar may trigger. */
export type ViewCommand = "newSession" | "saveSession" | "listSessions" | "searchSessions" | "checkpoints";

export const VIEW_COMMANDS: readonly ViewCommand[] = [
  "newSession",
  "saveSession",
  "listSessions",
  "searchSessions",
  "checkpoints",
];

/** Extension → webview. */
export type HostMessage =
  | { type: "transcript"; sessionId: string; items: TranscriptItem[] }
  | { type: "userMessage"; text: string }
  | { type: "delta"; turn: number; delta: string }
  | { type: "retry"; turn: number; attempt: number; reason: string }
  | { type: "tool"; turn: number; tool: string; status: string; detail: string }
  | { type: "turnEnd"; turn: number; text: string; endReason: string }
  | { type: "error"; text: string }
  | { type: "state"; running: boolean; sessionId: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Validate a message posted by the webview; anything malformed gives undefined. */
export function parseWebviewMessage(value: unknown): WebviewMessage | undefined {
  if (!isRecord(value)) {
    return undefined;
  }
  switch (value.type) {
    case "ready":
      return { type: "ready" };
    case "stop":
      return { type: "stop" };
    case "send":
      return typeof value.text === "string" && value.text.trim() !== ""
        ? { type: "send", text: value.text }
        : undefined;
    case "copy":
      return typeof value.text === "string" ? { type: "copy", text: value.text } : undefined;
    case "command": {
      const command = VIEW_COMMANDS.find((c) => c === value.command);
      return command === undefined ? undefined : { type: "command", command };
    }
    default:
      return undefined;
  }
}

const ROLES: readonly TranscriptRole[] = ["user", "assistant", "tool", "notice"];

function parseItem(value: unknown): TranscriptItem | undefined {
  if (!isRecord(value) || typeof value.text !== "string") {
    return undefined;
  }
  // `turn: null` is a notice outside any turn (the compaction notice): kept, not dropped
  const turn = typeof value.turn === "number" || value.turn === null ? value.turn : undefined;
  if (turn === undefined) {
    return undefined;
  }
  const role = ROLES.find((r) => r === value.role);
  if (role === undefined) {
    return undefined;
  }
  return {
    turn,
    role,
    text: value.text,
    ...(typeof value.endReason === "string" ? { endReason: value.endReason } : {}),
    ...(typeof value.status === "string" ? { status: value.status } : {}),
    ...(value.partial === true ? { partial: true } : {}),
  };
}

/** Validate a message posted by the extension (the webview side of the contract). */
export function parseHostMessage(value: unknown): HostMessage | undefined {
  if (!isRecord(value)) {
    return undefined;
  }
  const { type } = value;
  if (type === "transcript" && typeof value.sessionId === "string" && Array.isArray(value.items)) {
    const items = value.items.map(parseItem).filter((i): i is TranscriptItem => i !== undefined);
    return { type, sessionId: value.sessionId, items };
  }
  if (type === "userMessage" && typeof value.text === "string") {
    return { type, text: value.text };
  }
  if (type === "delta" && typeof value.turn === "number" && typeof value.delta === "string") {
    return { type, turn: value.turn, delta: value.delta };
  }
  if (
    type === "retry" &&
    typeof value.turn === "number" &&
    typeof value.attempt === "number" &&
    typeof value.reason === "string"
  ) {
    return { type, turn: value.turn, attempt: value.attempt, reason: value.reason };
  }
  if (
    type === "tool" &&
    typeof value.turn === "number" &&
    typeof value.tool === "string" &&
    typeof value.status === "string" &&
    typeof value.detail === "string"
  ) {
    return { type, turn: value.turn, tool: value.tool, status: value.status, detail: value.detail };
  }
  if (
    type === "turnEnd" &&
    typeof value.turn === "number" &&
    typeof value.text === "string" &&
    typeof value.endReason === "string"
  ) {
    return { type, turn: value.turn, text: value.text, endReason: value.endReason };
  }
  if (type === "error" && typeof value.text === "string") {
    return { type, text: value.text };
  }
  if (type === "state" && typeof value.running === "boolean" && typeof value.sessionId === "string") {
    return { type, running: value.running, sessionId: value.sessionId };
  }
  return undefined;
}

/** One short line describing a tool call's arguments, e.g. `path=src/a.py`. */
export function describeToolArgs(args: unknown): string {
  if (!isRecord(args)) {
    return args === undefined || args === null ? "" : JSON.stringify(args);
  }
  return Object.entries(args)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ")
    .slice(0, 200);
}
