/** The sidebar's transcript as the host's messages change it; pure, so it is tested without a DOM. */
import type { HostMessage } from "../common/messages";
import type { TranscriptItem } from "../common/protocol";

export interface Transcript {
  sessionId: string;
  items: TranscriptItem[];
}

/** The `status` of the notice that says a model attempt is retried. */
export const RETRY_STATUS = "retry";

export function retryNote(attempt: number, reason: string): string {
  return `Retrying (attempt ${attempt}): ${reason}`;
}

/** The mark under an assistant item that is not a normal completed answer, e.g. `(incomplete: aborted)`. */
export function endMark(item: TranscriptItem): string | undefined {
  const reason = item.endReason && item.endReason !== "completed" ? item.endReason : undefined;
  if (item.partial) {
    return reason ? `(incomplete: ${reason})` : "(incomplete)";
  }
  return reason ? `(${reason})` : undefined;
}

/** Change the reply being streamed for `turn` (the last item), starting one if there is none. */
function withReply(
  items: TranscriptItem[],
  turn: number,
  change: (item: TranscriptItem) => TranscriptItem,
): TranscriptItem[] {
  const last = items.at(-1);
  if (last && last.role === "assistant" && (last.turn === turn || (last.turn !== null && last.turn < 0))) {
    return [...items.slice(0, -1), change({ ...last, turn })];
  }
  return [...items, change({ turn, role: "assistant", text: "" })];
}

/**
 * Drop what the failed attempt streamed and note the retry. The attempt's text is the reply
 * item after the last tool line (a tool call ends a model request the server keeps); an
 * earlier retry note of the turn is replaced, so retries stay one line.
 */
function retried(items: TranscriptItem[], turn: number, attempt: number, reason: string): TranscriptItem[] {
  let kept = items;
  const last = kept.at(-1);
  if (last && last.role === "assistant" && last.turn === turn && last.endReason === undefined) {
    kept = kept.slice(0, -1);
  }
  const previous = kept.at(-1);
  if (previous && previous.role === "notice" && previous.status === RETRY_STATUS && previous.turn === turn) {
    kept = kept.slice(0, -1);
  }
  return [...kept, { turn, role: "notice", status: RETRY_STATUS, text: retryNote(attempt, reason) }];
}

/** The transcript after one message from the extension host. */
export function applyHostMessage(transcript: Transcript, message: HostMessage): Transcript {
  const { items } = transcript;
  switch (message.type) {
    case "transcript":
      return { sessionId: message.sessionId, items: message.items };
    case "userMessage":
      return { ...transcript, items: [...items, { turn: -1, role: "user", text: message.text }] };
    case "delta":
      return {
        ...transcript,
        items: withReply(items, message.turn, (item) => ({ ...item, text: item.text + message.delta })),
      };
    case "retry":
      return { ...transcript, items: retried(items, message.turn, message.attempt, message.reason) };
    case "tool":
      return {
        ...transcript,
        items: [
          ...items,
          { turn: message.turn, role: "tool", text: `${message.tool} ${message.detail} — ${message.status}` },
        ],
      };
    case "turnEnd":
      return {
        ...transcript,
        items: withReply(items, message.turn, (item) => ({
          ...item,
          text: message.text || item.text,
          endReason: message.endReason,
        })),
      };
    case "error":
      return { ...transcript, items: [...items, { turn: -1, role: "notice", text: message.text }] };
    case "state":
      return message.sessionId ? { ...transcript, sessionId: message.sessionId } : transcript;
  }
}
