/** The sidebar's transcript as the host's messages change it; pure, so it is tested without a DOM. */
import type { HostMessage } from "../common/messages";
import type { TranscriptItem } from "../common/protocol";

export interface Transcript {
  sessionId: string;
  items: TranscriptItem[];
}

/** The `status` of the notice that says a model attempt is retried. */
export const RETRY_STATUS = "retry";

/** The turn of an item shown before the server has said which turn it is (the user's message just sent). */
export const PENDING_TURN = -1;

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

const END_LABELS: Record<string, string> = { aborted: "Stopped", error: "Failed", interrupted: "Interrupted" };

/** The badge of a reply that is not a whole, completed answer: `Stopped · incomplete`, `Failed`, … */
export function endLabel(item: TranscriptItem): string | undefined {
  const reason = item.endReason && item.endReason !== "completed" ? item.endReason : undefined;
  const label = reason === undefined ? undefined : (END_LABELS[reason] ?? reason);
  if (item.partial) {
    return label ? `${label} · incomplete` : "Incomplete";
  }
  return label;
}

/** Is this the reply still streaming (an assistant item with no end yet)? */
export function isStreaming(item: TranscriptItem | undefined): boolean {
  return item !== undefined && item.role === "assistant" && item.endReason === undefined;
}

/** Items not yet numbered (the message just sent) take the turn the server has now named. */
function numbered(items: TranscriptItem[], turn: number): TranscriptItem[] {
  if (turn < 0 || !items.some((i) => i.turn === PENDING_TURN)) {
    return items;
  }
  return items.map((i) => (i.turn === PENDING_TURN ? { ...i, turn } : i));
}

/** A turn that ended before the server named it (stopped, failed early): its items belong to no known turn. */
function closed(items: TranscriptItem[]): TranscriptItem[] {
  return items.some((i) => i.turn === PENDING_TURN) ? items.map((i) => (i.turn === PENDING_TURN ? { ...i, turn: null } : i)) : items;
}

/** Change the reply being streamed for `turn` (the last item), starting one if there is none. */
function withReply(
  items: TranscriptItem[],
  turn: number,
  change: (item: TranscriptItem) => TranscriptItem,
): TranscriptItem[] {
  const last = items.at(-1);
  const current = turn < 0 ? isStreaming(last) : last?.role === "assistant" && (last.turn === turn || last.turn === PENDING_TURN);
  if (last && current) {
    return [...items.slice(0, -1), change({ ...last, turn: turn < 0 ? last.turn : turn })];
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

/** A tool line: `started` and its `done`/`failed` are one line whose status changes. */
function withTool(items: TranscriptItem[], turn: number, text: string, status: string): TranscriptItem[] {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item?.role === "tool" && item.turn === turn && item.text === text && item.status === "started") {
      return [...items.slice(0, i), { ...item, status }, ...items.slice(i + 1)];
    }
  }
  return [...items, { turn, role: "tool", text, status }];
}

/** The reply that was streaming when the turn failed: kept, marked as failed and cut short. */
function failed(items: TranscriptItem[]): TranscriptItem[] {
  const last = items.at(-1);
  if (!last || !isStreaming(last)) {
    return items;
  }
  return [...items.slice(0, -1), { ...last, endReason: "error", ...(last.text ? { partial: true } : {}) }];
}

/** The transcript after one message from the extension host. */
export function applyHostMessage(transcript: Transcript, message: HostMessage): Transcript {
  const { items } = transcript;
  switch (message.type) {
    case "transcript":
      return { sessionId: message.sessionId, items: message.items };
    case "userMessage":
      return { ...transcript, items: [...items, { turn: PENDING_TURN, role: "user", text: message.text }] };
    case "delta":
      return {
        ...transcript,
        items: withReply(numbered(items, message.turn), message.turn, (item) => ({
          ...item,
          text: item.text + message.delta,
        })),
      };
    case "retry":
      return { ...transcript, items: retried(numbered(items, message.turn), message.turn, message.attempt, message.reason) };
    case "tool":
      return {
        ...transcript,
        items: withTool(numbered(items, message.turn), message.turn, `${message.tool} ${message.detail}`.trim(), message.status),
      };
    case "turnEnd": {
      const ended = withReply(numbered(items, message.turn), message.turn, (item) => {
        const text = message.text || item.text;
        // a reply that ended otherwise than completed holds only what was streamed
        const cut = message.endReason !== "completed" && text !== "";
        return { ...item, text, endReason: message.endReason, ...(cut ? { partial: true } : {}) };
      });
      return { ...transcript, items: message.turn < 0 ? closed(ended) : ended };
    }
    case "error": {
      const last = failed(items);
      const turn = [...last].reverse().find((i) => i.role === "user")?.turn ?? null;
      return { ...transcript, items: closed([...last, { turn, role: "notice", text: message.text }]) };
    }
    case "state":
      // only names a transcript that has no session yet: a new session's items come with its transcript
      return message.sessionId && !transcript.sessionId ? { ...transcript, sessionId: message.sessionId } : transcript;
    default:
      return transcript;
  }
}
