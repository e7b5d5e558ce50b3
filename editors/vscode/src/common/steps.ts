/** A turn's steps as words, for the transcript's steps toggle and the read-only inspect document; pure. */
import type { StepTool, StepView, TurnView, Usage } from "./protocol";

/** `2026-12-05 14:03:07` in local time; the ISO text itself if it does not parse. */
export function localTime(iso: string | null): string {
  if (iso === null) {
    return "?";
  }
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) {
    return iso;
  }
  const two = (n: number) => String(n).padStart(2, "0");
  return `${t.getFullYear()}-${two(t.getMonth() + 1)}-${two(t.getDate())} ${two(t.getHours())}:${two(t.getMinutes())}:${two(t.getSeconds())}`;
}

/** `14:03:07–14:03:09` (the day left out: the turn says it), `14:03:07–…` while it runs. */
export function stepTimes(step: Pick<StepView, "startedAt" | "endedAt">): string {
  const clock = (iso: string | null) => (iso === null ? "…" : localTime(iso).slice(11) || iso);
  return `${clock(step.startedAt)}–${clock(step.endedAt)}`;
}

/** `1,200 in / 80 out` (`~` when estimated); `no usage` when the model server sent none. */
export function usageText(usage: Usage | null): string {
  if (usage === null) {
    return "no usage";
  }
  const n = (v: number) => v.toLocaleString("en-US");
  return `${usage.estimated ? "~" : ""}${n(usage.inputTokens)} in / ${n(usage.outputTokens)} out`;
}

/** `Step 2 · 14:03:07–14:03:09 · gpt-x · 1,200 in / 80 out · tool-calls`. */
export function stepHeadline(step: StepView): string {
  const parts = [`Step ${step.step}`, stepTimes(step), step.model ?? "model not recorded", usageText(step.usage)];
  if (step.endReason) {
    parts.push(step.endReason);
  }
  return parts.join(" · ");
}

/** The arguments as the model sent them, pretty-printed. */
export function toolArgsText(args: unknown): string {
  if (typeof args === "string") {
    return args;
  }
  return args === undefined ? "" : JSON.stringify(args, null, 2);
}

/** The result, and a note when it was folded: `… (folded: 5,000 bytes in all)`. */
export function toolResultText(tool: StepTool): string {
  if (tool.result === null) {
    return "(no result)";
  }
  return tool.folded ? `${tool.result}\n… (folded: ${tool.resultBytes.toLocaleString("en-US")} bytes in all)` : tool.result;
}

/** `write_file path=a.md` on one line: the tool and its arguments, shortened. */
export function toolLine(tool: StepTool): string {
  const args =
    typeof tool.args === "object" && tool.args !== null && !Array.isArray(tool.args)
      ? Object.entries(tool.args)
          .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
          .join(" ")
      : toolArgsText(tool.args);
  return shorten(`${tool.name} ${args}`.trim(), 120);
}

/** One line, at most `max` characters (an ellipsis when cut). */
export function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A fence long enough for any backticks in `text`. */
function fence(text: string, lang = ""): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const mark = "`".repeat(longest + 1);
  return `${mark}${lang}\n${text}${text.endsWith("\n") ? "" : "\n"}${mark}`;
}

/** A turn and its steps as Markdown: the read-only document "Open session at this turn". */
export function turnMarkdown(turn: TurnView): string {
  const lines: string[] = [
    `## Turn ${turn.turn}`,
    "",
    `${localTime(turn.startedAt)} → ${turn.endedAt === null ? "still open" : localTime(turn.endedAt)} · ${turn.endReason ?? "open"}`,
    "",
    "**You:**",
    "",
    fence(turn.input),
    "",
  ];
  for (const step of turn.steps) {
    lines.push(`### ${stepHeadline(step)}`, "");
    for (const retry of step.retries ?? []) {
      lines.push(`- retried: attempt ${retry.attempt} (${retry.kind}): ${retry.reason}`);
    }
    if (step.retries?.length) {
      lines.push("");
    }
    if (step.text) {
      lines.push(step.text, "");
    }
    for (const tool of step.tools) {
      lines.push(`#### ${tool.isError ? "✗ " : ""}\`${tool.name}\``, "", "Arguments:", "", fence(toolArgsText(tool.args), "json"), "");
      lines.push(tool.isError ? "Error:" : "Result:", "", fence(toolResultText(tool)), "");
    }
  }
  return lines.join("\n");
}

/** The whole inspect answer: the session's title, then each turn. */
export function inspectMarkdown(session: { sessionId: string; title: string | null; held: boolean }, turns: TurnView[]): string {
  const head = [`# ${session.title || "(untitled)"} (${session.sessionId.slice(0, 8)})`, "", "_Read-only: as the session's log has it now._"];
  if (session.held) {
    head.push("", "_Another window holds this session; it may still be writing._");
  }
  return [...head, "", ...turns.map(turnMarkdown)].join("\n");
}
