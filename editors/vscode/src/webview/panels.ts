/** Around the log: the header (session title, sessions and search), the resume banner, the sessions and search panels. */
import { closest } from "./dom";
import { banner, type Panel, sessionTitle, type View } from "./model";
import { bannerElement, foldedSessions, olderSessions, searchRows, sessionRows } from "./render";
import type { Sidebar } from "./state";

export function renderHeader(app: Sidebar): void {
  const { sessionLabel } = app.el;
  const sessionId = app.view.transcript.sessionId;
  const current = app.view.sessions?.find((s) => s.sessionId === sessionId);
  sessionLabel.textContent = current ? sessionTitle(current) : sessionId ? "New session" : "";
  sessionLabel.title = sessionId ? `session ${sessionId}` : "";
}

export function renderBanner(app: Sidebar): void {
  const { bannerHost } = app.el;
  const shown = banner(app.view);
  bannerHost.hidden = shown === undefined;
  bannerHost.replaceChildren(...(shown ? [bannerElement(shown, new Date(), app.memoryOpen)] : []));
}

export function renderPanels(app: Sidebar, before: View): void {
  const { sessionsPanel, searchPanel, sessionsButton, searchButton, sessionsBody, searchBody } = app.el;
  const view = app.view;
  sessionsPanel.hidden = view.panel !== "sessions";
  searchPanel.hidden = view.panel !== "search";
  sessionsButton.setAttribute("aria-expanded", String(view.panel === "sessions"));
  searchButton.setAttribute("aria-expanded", String(view.panel === "search"));
  if (view.panel === "sessions" && (before.sessions !== view.sessions || before.panel !== view.panel)) {
    if (view.sessions) {
      // "Show older sessions" had the focus: it goes to the first of those just listed.
      const more = document.activeElement?.classList.contains("more-sessions") === true;
      const older = olderSessions(view.sessions.length, view.sessionsTotal);
      const folded = foldedSessions(view.sessionsEmpty);
      sessionsBody.replaceChildren(sessionRows(view.sessions, new Date()), ...(older ? [older] : []), ...(folded ? [folded] : []));
      if (more) {
        const first = sessionsBody.querySelectorAll("li.session-row")[before.sessions?.length ?? 0];
        (first?.querySelector<HTMLElement>("button") ?? sessionsBody.querySelector<HTMLElement>("button.more-sessions"))?.focus();
      }
    } else {
      sessionsBody.replaceChildren(document.createTextNode("Loading…"));
    }
  }
  if (view.panel === "search" && (before.search !== view.search || before.sessions !== view.sessions || before.panel !== view.panel)) {
    searchBody.replaceChildren(searchRows(view));
  }
}

function openPanel(app: Sidebar, panel: Panel): void {
  const { sessionsPanel, searchInput } = app.el;
  if (app.view.panel !== panel && panel === "sessions") {
    app.post({ type: "listSessions" });
    app.focusAfterRender = () => sessionsPanel.querySelector<HTMLElement>("button")?.focus();
  } else if (app.view.panel !== panel && panel === "search") {
    app.focusAfterRender = () => {
      searchInput.focus();
      searchInput.select();
    };
  }
  app.dispatch({ type: "ui/panel", panel });
}

function bindBanner(app: Sidebar): void {
  const { bannerHost, input } = app.el;
  bannerHost.addEventListener("click", (event) => {
    const { target } = event;
    const open = closest(target, "button.open-file");
    const diff = closest(target, "button.diff-file");
    if (open?.dataset.path) {
      app.post({ type: "openFile", path: open.dataset.path });
    } else if (diff?.dataset.path) {
      app.post({ type: "diffFile", path: diff.dataset.path });
    } else if (closest(target, "button.dismiss")) {
      app.focusAfterRender = () => input.focus();
      app.dispatch({ type: "ui/dismissBanner" });
    }
  });
  bannerHost.addEventListener(
    "toggle",
    (event) => {
      if (event.target instanceof HTMLDetailsElement && event.target.classList.contains("memory")) {
        app.memoryOpen = event.target.open;
      }
    },
    true,
  );
}

function bindSessions(app: Sidebar): void {
  const { sessionsPanel, sessionsButton, input } = app.el;
  sessionsPanel.addEventListener("click", (event) => {
    const { target } = event;
    const open = closest(target, "button.open-session");
    const fork = closest(target, "button.fork-session");
    if (open?.dataset.session) {
      app.post({ type: "openSession", sessionId: open.dataset.session });
      app.dispatch({ type: "ui/panel", panel: "none" });
      input.focus();
    } else if (fork?.dataset.session) {
      app.post({ type: "forkSession", sessionId: fork.dataset.session });
      app.dispatch({ type: "ui/panel", panel: "none" });
      input.focus();
    } else if (closest(target, "button.more-sessions")) {
      app.post({ type: "moreSessions" });
    } else if (closest(target, "button.close-panel")) {
      app.dispatch({ type: "ui/panel", panel: "none" });
      sessionsButton.focus();
    }
  });
}

function bindSearch(app: Sidebar): void {
  const { searchForm, searchInput, searchPanel, searchButton } = app.el;
  searchForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = searchInput.value.trim();
    if (query !== "") {
      app.dispatch({ type: "ui/search", query });
      app.post({ type: "search", query });
    }
  });
  searchPanel.addEventListener("click", (event) => {
    const { target } = event;
    const hit = closest(target, "button.search-hit");
    if (hit?.dataset.session) {
      const turn = hit.dataset.turn === undefined ? null : Number(hit.dataset.turn);
      const sessionId = hit.dataset.session;
      const here = sessionId === app.view.transcript.sessionId;
      app.dispatch({ type: "ui/reveal", sessionId, turn });
      if (!here) {
        app.post({ type: "openSession", sessionId });
      }
    } else if (closest(target, "button.close-panel")) {
      app.dispatch({ type: "ui/panel", panel: "none" });
      searchButton.focus();
    }
  });
}

/** The header's buttons, the banner's, the panels' (Escape closes a panel, back to its button). */
export function bindPanels(app: Sidebar): void {
  const { newButton, sessionsButton, searchButton, sessionsPanel, searchPanel } = app.el;
  newButton.addEventListener("click", () => app.post({ type: "command", command: "newSession" }));
  sessionsButton.addEventListener("click", () => openPanel(app, "sessions"));
  searchButton.addEventListener("click", () => openPanel(app, "search"));
  bindBanner(app);
  bindSessions(app);
  bindSearch(app);
  for (const panel of [sessionsPanel, searchPanel]) {
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        app.dispatch({ type: "ui/panel", panel: "none" });
        (panel === sessionsPanel ? sessionsButton : searchButton).focus();
      }
    });
  }
}
