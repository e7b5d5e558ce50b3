/** A small element builder for the sidebar: attributes by name, text always as text nodes (never HTML). */

type Attrs = Record<string, string | number | boolean | undefined>;
type Child = Node | string | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  el.append(...children.filter((c): c is Node | string => c !== undefined && c !== false));
  return el;
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === true) {
      el.setAttribute(name, "");
    } else if (value !== undefined && value !== false) {
      el.setAttribute(name, String(value));
    }
  }
}

const SVG = "http://www.w3.org/2000/svg";

/** A 16×16 icon from one path, drawn in the text colour; hidden from assistive technology (the label names it). */
export function icon(path: string, className: string): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  setAttrs(svg, { class: `icon ${className}`, viewBox: "0 0 16 16", width: 16, height: 16, "aria-hidden": "true", focusable: "false" });
  const shape = document.createElementNS(SVG, "path");
  setAttrs(shape, { d: path, fill: "currentColor" });
  svg.append(shape);
  return svg;
}

export const ICONS = {
  user: "M8 8a3 3 0 1 0 0-6 3 3 0 0 0 0 6Zm0 1c-2.8 0-5 1.6-5 3.5V14h10v-1.5C13 10.6 10.8 9 8 9Z",
  agent: "M8 1l1.6 4.4L14 7l-4.4 1.6L8 13l-1.6-4.4L2 7l4.4-1.6L8 1Zm4.5 8.5.7 1.8 1.8.7-1.8.7-.7 1.8-.7-1.8-1.8-.7 1.8-.7.7-1.8Z",
  tool: "M13.8 4.5 11.5 6.8 9.2 4.5l2.3-2.3a3.5 3.5 0 0 0-4.6 4.6L2 11.7 4.3 14l4.9-4.9a3.5 3.5 0 0 0 4.6-4.6Z",
  checkpoint: "M8 1a7 7 0 1 0 0 14A7 7 0 0 0 8 1Zm0 2a5 5 0 1 1 0 10A5 5 0 0 1 8 3Zm0 2a3 3 0 1 0 0 6 3 3 0 0 0 0-6Z",
  resumed: "M8 2a6 6 0 1 1-5.7 7.9l1.9-.6A4 4 0 1 0 5 5.2L6.5 6.7H2V2.2l1.6 1.6A6 6 0 0 1 8 2Z",
} as const;

/**
 * Bring `current` up to date with `fresh` (same tag) without replacing it, so it keeps its place
 * in the live region, its focus and an expanded `<details>`; otherwise `fresh` replaces it.
 */
export function morph(current: HTMLElement, fresh: HTMLElement): HTMLElement {
  if (current.tagName !== fresh.tagName) {
    current.replaceWith(fresh);
    return fresh;
  }
  for (const name of current.getAttributeNames()) {
    if (!fresh.hasAttribute(name) && name !== "open") {
      current.removeAttribute(name);
    }
  }
  for (const name of fresh.getAttributeNames()) {
    if (name !== "open") {
      current.setAttribute(name, fresh.getAttribute(name) ?? "");
    }
  }
  current.replaceChildren(...fresh.childNodes);
  return current;
}

/** The element with this id, of this kind (the sidebar's HTML is ours: a missing one is a bug). */
export function byId<T extends HTMLElement>(id: string, kind: new () => T): T {
  const el = document.getElementById(id);
  if (!(el instanceof kind)) {
    throw new Error(`missing #${id}`);
  }
  return el;
}

/** The nearest element matching `selector` at or above an event's target. */
export function closest(target: EventTarget | null, selector: string): HTMLElement | undefined {
  return target instanceof Element ? (target.closest<HTMLElement>(selector) ?? undefined) : undefined;
}

/** The sidebar's fixed elements (`chatHtml` in the host's webview.ts writes them). */
export function sidebarElements() {
  return {
    log: byId("log", HTMLElement),
    input: byId("input", HTMLTextAreaElement),
    sendButton: byId("send", HTMLButtonElement),
    stopButton: byId("stop", HTMLButtonElement),
    withdrawButton: byId("withdraw", HTMLButtonElement),
    working: byId("working", HTMLDivElement),
    workingLabel: byId("working-text", HTMLSpanElement),
    sessionLabel: byId("session", HTMLSpanElement),
    sessionsButton: byId("show-sessions", HTMLButtonElement),
    searchButton: byId("show-search", HTMLButtonElement),
    newButton: byId("new-session", HTMLButtonElement),
    sessionsPanel: byId("sessions-panel", HTMLElement),
    sessionsBody: byId("sessions-body", HTMLDivElement),
    searchPanel: byId("search-panel", HTMLElement),
    searchForm: byId("search-form", HTMLFormElement),
    searchInput: byId("search-input", HTMLInputElement),
    searchBody: byId("search-body", HTMLDivElement),
    bannerHost: byId("banner", HTMLDivElement),
    announcer: byId("announce", HTMLDivElement),
  };
}

export type SidebarElements = ReturnType<typeof sidebarElements>;
