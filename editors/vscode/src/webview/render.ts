/** DOM for each part of the sidebar, built from the view model; text goes in as text, Markdown as escaped HTML. */
import type { ResumeView } from "../common/messages";
import type { CheckpointInfo, SessionInfo, StepView, TranscriptItem, TurnView } from "../common/protocol";
import { localTime, stepHeadline, toolArgsText, toolLine, toolResultText } from "../common/steps";
import { h, icon, ICONS } from "./dom";
import { renderMarkdown } from "./markdown";
import {
  bannerHeadline,
  checkpointLabel,
  checkpointWhen,
  relativeTime,
  restoreLines,
  type Row,
  sessionMeta,
  type TurnSteps,
  turnSteps,
  sessionTitle,
  snippetParts,
  type View,
} from "./model";
import { endLabel, isStreaming, RETRY_STATUS } from "./transcript";

const AUTHORS = { user: "You", assistant: "Agent Assist" } as const;

/** Does this item carry its turn's steps toggle (the reply that ended a turn)? */
export function hasStepsToggle(item: TranscriptItem): item is TranscriptItem & { turn: number } {
  return item.role === "assistant" && item.endReason !== undefined && item.turn !== null && item.turn > 0;
}

function stepElement(step: StepView): HTMLElement {
  return h(
    "li",
    { class: "step", "data-step": step.step },
    h("div", { class: "step-head" }, stepHeadline(step)),
    ...(step.retries ?? []).map((r) => h("div", { class: "step-retry muted" }, `retried: attempt ${r.attempt} (${r.kind}): ${r.reason}`)),
    step.text !== "" && h("div", { class: "step-text" }, step.text),
    ...step.tools.map((tool) =>
      h(
        "details",
        { class: `step-tool${tool.isError ? " error" : ""}`, "data-tool": tool.name },
        h("summary", {}, toolLine(tool), tool.isError && h("span", { class: "tool-status" }, "failed")),
        h("p", { class: "step-label" }, "Arguments"),
        h("pre", { class: "step-args" }, toolArgsText(tool.args)),
        h("p", { class: "step-label" }, tool.isError ? "Error" : "Result"),
        h("pre", { class: `step-result${tool.folded ? " folded" : ""}` }, toolResultText(tool)),
      ),
    ),
  );
}

/** The steps of one turn under its reply: each model call with its times, model, usage and tool calls. */
export function stepsElement(turn: number, state: TurnSteps): HTMLElement {
  const body = (view: TurnView | undefined): (HTMLElement | string)[] => {
    if (state.error !== undefined && view === undefined) {
      return [h("p", { class: "muted", role: "status" }, `The steps could not be read: ${state.error}`)];
    }
    if (view === undefined) {
      return [h("p", { class: "muted", role: "status" }, state.loading ? "Loading the steps…" : `No steps recorded for turn ${turn}.`)];
    }
    const when = `${localTime(view.startedAt)} → ${view.endedAt === null ? "still open" : localTime(view.endedAt)}`;
    return [
      h("p", { class: "steps-when muted" }, `Turn ${turn} · ${when} · ${view.steps.length} step${view.steps.length === 1 ? "" : "s"}`),
      h("ol", { class: "step-list" }, ...view.steps.map(stepElement)),
    ];
  };
  return h("section", { class: "steps", id: `steps-${turn}`, "aria-label": `Steps of turn ${turn}` }, ...body(state.turn));
}

function messageElement(item: TranscriptItem & { role: "user" | "assistant" }, streaming: boolean, steps?: TurnSteps): HTMLElement {
  const author = AUTHORS[item.role];
  const label = endLabel(item);
  const body = h("div", { class: "item-body" });
  if (item.role === "assistant") {
    body.innerHTML = renderMarkdown(item.text); // escaped, then formatted: no raw HTML survives
  } else {
    body.textContent = item.text;
  }
  return h(
    "article",
    {
      class: `item ${item.role}${item.partial ? " partial" : ""}${label ? " ended" : ""}`,
      "data-role": item.role,
      "data-turn": item.turn ?? undefined,
      "data-end-reason": item.endReason,
      "aria-label": label ? `${author} (${label})` : author,
      "aria-busy": streaming ? "true" : undefined,
      tabindex: -1,
    },
    h(
      "div",
      { class: "item-header" },
      h("span", { class: "avatar" }, icon(item.role === "user" ? ICONS.user : ICONS.agent, item.role)),
      h("span", { class: "author" }, author),
      streaming && h("span", { class: "streaming", "aria-hidden": "true" }, "…"),
      label && h("span", { class: `badge end-badge${item.partial ? " partial" : ""}` }, label),
      steps &&
        item.turn !== null &&
        h(
          "button",
          {
            type: "button",
            class: "link steps-toggle",
            "data-turn": item.turn,
            "aria-expanded": steps.open ? "true" : "false",
            "aria-controls": steps.open ? `steps-${item.turn}` : undefined,
            "aria-label": `${steps.open ? "Hide" : "Show"} the steps of turn ${item.turn}`,
          },
          steps.open ? "Hide steps" : "Steps",
        ),
    ),
    body,
    steps?.open === true && item.turn !== null && stepsElement(item.turn, steps),
  );
}

/** `read_file {"path":"a.md"}` or `read_file path=a.md`: the tool's name, then its arguments. */
function splitTool(text: string): { name: string; args: string } {
  const space = text.indexOf(" ");
  return space < 0 ? { name: text, args: "" } : { name: text.slice(0, space), args: text.slice(space + 1) };
}

const TOOL_STATUS = { started: "running", done: "done", failed: "failed" } as const;

function toolElement(item: TranscriptItem): HTMLElement {
  const { name, args } = splitTool(item.text);
  const status = item.status === "started" || item.status === "done" || item.status === "failed" ? TOOL_STATUS[item.status] : (item.status ?? "");
  return h(
    "details",
    { class: `item tool status-${item.status ?? "none"}`, "data-role": "tool", "data-turn": item.turn ?? undefined },
    h(
      "summary",
      { "aria-label": `Tool ${name}${status ? `, ${status}` : ""}: ${args}` },
      icon(ICONS.tool, "tool"),
      h("span", { class: "tool-name" }, name),
      h("span", { class: "tool-args" }, args),
      status && h("span", { class: "tool-status" }, status),
    ),
    h("pre", { class: "tool-detail" }, item.text),
  );
}

function noticeElement(item: TranscriptItem): HTMLElement {
  const retry = item.status === RETRY_STATUS;
  return h(
    "div",
    {
      class: `item notice${retry ? " retry" : ""}${item.turn === null ? " outside-turn" : ""}`,
      "data-role": "notice",
      "data-turn": item.turn ?? undefined,
      role: "note",
    },
    retry && h("span", { class: "badge retry-badge" }, "Retried"),
    h("span", { class: "notice-text" }, item.text),
  );
}

/** `steps`: the turn's steps toggle, on the reply that ended the turn. */
export function itemElement(item: TranscriptItem, streaming: boolean, steps?: TurnSteps): HTMLElement {
  switch (item.role) {
    case "user":
    case "assistant":
      return messageElement({ ...item, role: item.role }, streaming, steps);
    case "tool":
      return toolElement(item);
    case "notice":
      return noticeElement(item);
  }
}

function fileList(files: string[], className: string): HTMLElement {
  return h("ul", { class: className }, ...files.map((f) => h("li", {}, f)));
}

function confirmElement(view: View, checkpoint: CheckpointInfo): HTMLElement {
  const plan = view.confirm?.plan;
  const id = `confirm-${checkpoint.number}`;
  const parts: (HTMLElement | undefined)[] = [];
  if (plan === undefined) {
    parts.push(h("p", { class: "muted" }, "Checking which files it would change…"));
  } else {
    const lines = restoreLines(plan);
    parts.push(
      lines.change.length > 0
        ? h("div", {}, h("p", {}, "These files will change:"), fileList(lines.change, "restore-files"))
        : h("p", {}, "No file will change."),
    );
    if (lines.kept.length > 0) {
      parts.push(h("div", {}, h("p", {}, "Created since, kept as they are:"), fileList(lines.kept, "kept-files")));
    }
    if (lines.skipped.length > 0) {
      parts.push(h("div", {}, h("p", {}, "Not restored:"), fileList(lines.skipped, "skipped-files")));
    }
  }
  return h(
    "div",
    { class: "confirm", role: "alertdialog", "aria-labelledby": `${id}-title`, "aria-describedby": `${id}-body` },
    h("p", { class: "confirm-title", id: `${id}-title` }, `Restore checkpoint ${checkpoint.number}?`),
    h(
      "div",
      { id: `${id}-body` },
      ...parts,
      h("p", { class: "muted" }, `The conversation goes back to ${checkpoint.turn === 0 ? "its start" : `turn ${checkpoint.turn}`}; a checkpoint of now is kept first.`),
    ),
    h(
      "div",
      { class: "confirm-actions" },
      h("button", { type: "button", class: "confirm-restore", "data-number": checkpoint.number, disabled: plan === undefined }, "Restore"),
      h("button", { type: "button", class: "secondary confirm-cancel" }, "Cancel"),
    ),
  );
}

export function checkpointElement(view: View, checkpoint: CheckpointInfo, now: Date): HTMLElement {
  const confirming = view.confirm?.number === checkpoint.number;
  const label = checkpointLabel(checkpoint);
  return h(
    "div",
    { class: `checkpoint${checkpoint.auto ? " auto" : ""}`, "data-checkpoint": checkpoint.number, role: "group", "aria-label": label },
    h(
      "div",
      { class: "checkpoint-line" },
      icon(ICONS.checkpoint, "checkpoint"),
      h("span", { class: "checkpoint-label", title: `${label}: ${checkpoint.title}` }, `Checkpoint ${checkpoint.number}`),
      h(
        "span",
        { class: "checkpoint-time", title: checkpoint.createdAt },
        `${checkpointWhen(checkpoint)} · ${relativeTime(checkpoint.createdAt, now)}`,
      ),
      h(
        "button",
        {
          type: "button",
          class: "secondary restore",
          "data-number": checkpoint.number,
          "aria-label": `Restore checkpoint ${checkpoint.number}…`,
          "aria-expanded": confirming ? "true" : "false",
          disabled: view.running,
        },
        "Restore…",
      ),
    ),
    confirming && confirmElement(view, checkpoint),
  );
}

/** A stable key and a signature of what a row shows: an unchanged row keeps its element. */
export function rowKey(row: Row): string {
  return row.kind === "item" ? `i${row.index}` : `c${row.checkpoint.number}`;
}

export function rowSignature(view: View, row: Row, streaming: boolean): string {
  if (row.kind === "item") {
    return JSON.stringify([row.item, streaming, hasStepsToggle(row.item) ? turnSteps(view, row.item.turn) : null]);
  }
  const confirm = view.confirm?.number === row.checkpoint.number ? view.confirm : undefined;
  return JSON.stringify([row.checkpoint, confirm, view.running]);
}

/** Is this row the reply streaming right now (the last item of a running turn, not ended)? */
export function rowStreaming(view: View, row: Row): boolean {
  return row.kind === "item" && view.running && row.index === view.transcript.items.length - 1 && isStreaming(row.item);
}

export function rowElement(view: View, row: Row, streaming: boolean, now: Date): HTMLElement {
  if (row.kind === "item") {
    return itemElement(row.item, streaming, hasStepsToggle(row.item) ? turnSteps(view, row.item.turn) : undefined);
  }
  return checkpointElement(view, row.checkpoint, now);
}

export function bannerElement(resume: ResumeView, now: Date, memoryOpen: boolean): HTMLElement {
  const files = resume.changedFiles.map((file) =>
    h(
      "li",
      { class: `changed-file change-${file.change}` },
      file.change === "deleted"
        ? h("span", { class: "file-name" }, file.path)
        : h("button", { type: "button", class: "link open-file", "data-path": file.path, "aria-label": `Open ${file.path}` }, file.path),
      h("span", { class: "change" }, file.change),
      file.checkpoint !== null &&
        h(
          "button",
          {
            type: "button",
            class: "link diff-file",
            "data-path": file.path,
            "aria-label": `${file.change === "deleted" ? "Show" : "Diff"} ${file.path} against checkpoint ${file.checkpoint}`,
          },
          file.change === "deleted" ? `checkpoint ${file.checkpoint} copy` : `diff with checkpoint ${file.checkpoint}`,
        ),
    ),
  );
  const summary = h("div", { class: "memory-summary" });
  summary.innerHTML = renderMarkdown(resume.summary ?? "Nothing was kept to remember.");
  return h(
    "section",
    { class: "banner", "aria-label": "Session resumed", "data-origin": resume.origin ?? "" },
    h(
      "div",
      { class: "banner-head" },
      icon(ICONS.resumed, "resumed"),
      h("span", { class: "banner-text", title: resume.lastActive ?? "" }, bannerHeadline(resume, now)),
      h("button", { type: "button", class: "icon-button dismiss", "aria-label": "Dismiss the resume banner", title: "Dismiss" }, "×"),
    ),
    files.length > 0 && h("ul", { class: "changed-files", "aria-label": "Files changed since" }, ...files),
    h(
      "details",
      { class: "memory", open: memoryOpen },
      h("summary", {}, "What I remember"),
      summary,
      h("p", { class: "decisions-title" }, "Key decisions"),
      resume.decisions.length > 0
        ? h("ul", { class: "decisions" }, ...resume.decisions.map((d) => h("li", {}, d)))
        : h("p", { class: "muted" }, "None recorded."),
    ),
  );
}

export function sessionRows(sessions: SessionInfo[], now: Date): HTMLElement {
  if (sessions.length === 0) {
    return h("p", { class: "muted" }, "No saved sessions yet: a session is kept from its first reply.");
  }
  return h(
    "ul",
    { class: "session-list" },
    ...sessions.map((s) => {
      const title = sessionTitle(s);
      return h(
        "li",
        { class: `session-row${s.active ? " active" : ""}`, "data-session": s.sessionId, "aria-current": s.active ? "true" : undefined },
        h("div", { class: "session-title" }, title, s.active && h("span", { class: "badge" }, "current")),
        h("div", { class: "session-meta" }, sessionMeta(s, sessions, now)),
        h(
          "div",
          { class: "row-actions" },
          !s.active &&
            h("button", { type: "button", class: "secondary open-session", "data-session": s.sessionId, "aria-label": `Open session ${title}` }, "Open"),
          h("button", { type: "button", class: "secondary fork-session", "data-session": s.sessionId, "aria-label": `Fork session ${title}` }, "Fork"),
        ),
      );
    }),
  );
}

/** Under the list when the project has older sessions than it shows: a page more, on request. */
export function olderSessions(shown: number, total: number): HTMLElement | null {
  if (total <= shown) {
    return null;
  }
  return h(
    "p",
    { class: "muted session-more" },
    `The newest ${shown} of ${total} sessions. Search finds any of them. `,
    h("button", { type: "button", class: "secondary more-sessions" }, "Show older sessions"),
  );
}

/** Last under the list when the server folded sessions without a turn: how many. */
export function foldedSessions(count: number): HTMLElement | null {
  if (count <= 0) {
    return null;
  }
  return h("p", { class: "muted session-folded" }, `${count} session${count === 1 ? "" : "s"} without a turn not shown.`);
}

export function searchRows(view: View): HTMLElement {
  const { query, results } = view.search;
  if (results === undefined) {
    return h("p", { class: "muted", role: "status" }, "Searching…");
  }
  if (query === "") {
    return h("p", { class: "muted" }, "Search every session of this project: your messages, replies, tools, decisions.");
  }
  if (results.length === 0) {
    return h("p", { class: "muted", role: "status" }, `Nothing found for “${query}”.`);
  }
  const sessions = view.sessions ?? [];
  return h(
    "div",
    {},
    h("p", { class: "muted", role: "status" }, `${results.length} ${results.length === 1 ? "result" : "results"} for “${query}”`),
    h(
      "ul",
      { class: "search-results" },
      ...results.map((hit) => {
        const title = sessionTitle(sessions.find((s) => s.sessionId === hit.sessionId));
        const where = `${title} · ${hit.turn === null ? hit.type : `turn ${hit.turn}`}`;
        const snippet = snippetParts(hit.snippet).map((p) => (p.match ? h("mark", {}, p.text) : p.text));
        return h(
          "li",
          {},
          h(
            "button",
            {
              type: "button",
              class: "search-hit",
              "data-session": hit.sessionId,
              "data-turn": hit.turn ?? undefined,
              "aria-label": `Open ${where}: ${hit.snippet.replace(/[[\]]/g, "")}`,
            },
            h("span", { class: "hit-where" }, where),
            h("span", { class: "hit-snippet" }, ...snippet),
          ),
        );
      }),
    ),
  );
}
