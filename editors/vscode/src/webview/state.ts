/** The sidebar's one state object, and what of it survives a reload of the view. */
import { type HostMessage, parseHostMessage, type WebviewMessage } from "../common/messages";
import type { TranscriptItem } from "../common/protocol";
import type { SidebarElements } from "./dom";
import type { UiAction, View } from "./model";

/** What survives a reload of the view (webview state): the transcript, the draft, dismissed banners. */
export interface SavedState {
  sessionId: string;
  items: TranscriptItem[];
  draft: string;
  dismissed: string[];
}

export function restoreState(value: unknown): SavedState {
  const empty: SavedState = { sessionId: "", items: [], draft: "", dismissed: [] };
  if (typeof value !== "object" || value === null) {
    return empty;
  }
  const restored = parseHostMessage({ type: "transcript", ...value });
  const draft = "draft" in value && typeof value.draft === "string" ? value.draft : "";
  const dismissed =
    "dismissed" in value && Array.isArray(value.dismissed)
      ? value.dismissed.filter((d: unknown): d is string => typeof d === "string")
      : [];
  return restored && restored.type === "transcript"
    ? { sessionId: restored.sessionId, items: restored.items, draft, dismissed }
    : { ...empty, draft };
}

/** A row of the log as drawn: its element and the signature it was drawn from. */
export interface LogRow {
  signature: string;
  el: HTMLElement;
}

/**
 * The sidebar: its elements, the view model (changed only through `update()`, by `dispatch`),
 * what the DOM holds beyond it, and the few things every part does (post, dispatch, save, announce).
 */
export interface Sidebar {
  readonly el: SidebarElements;
  view: View;
  /** The resume banner's memory `<details>` is open (kept across redraws of the banner). */
  memoryOpen: boolean;
  /** Where the focus goes once the next render is done. */
  focusAfterRender: (() => void) | undefined;
  /** Up/Down through the sent messages: where the input is in them (undefined: not recalling). */
  recallIndex: number | undefined;
  draftTimer: ReturnType<typeof setTimeout> | undefined;
  /** The draft as the host last heard it. */
  draftSent: string;
  /** The log's rows by `rowKey`. */
  readonly rows: Map<string, LogRow>;
  post(message: WebviewMessage): void;
  dispatch(action: HostMessage | UiAction): void;
  save(): void;
  announce(text: string): void;
}
