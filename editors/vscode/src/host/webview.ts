/** The sidebar `WebviewViewProvider`: strict CSP with a nonce, typed messages, no server access of its own. */
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { type HostMessage, parseWebviewMessage, type WebviewMessage } from "../common/messages";

export const VIEW_ID = "agentAssist.chat";

export function makeNonce(): string {
  return randomBytes(16).toString("base64");
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `img-src ${cspSource}`,
  ].join("; ");
}

/** The view's page: no inline style or handler, one script carrying the nonce; the script fills it in. */
export function chatHtml(cspSource: string, nonce: string, script: string, style: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(cspSource, nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Agent Assist</title>
</head>
<body>
<header class="topbar">
<span id="session" class="session-name"></span>
<div class="toolbar">
<button id="show-sessions" type="button" class="secondary" aria-expanded="false" aria-controls="sessions-panel" title="Sessions of this project">Sessions</button>
<button id="show-search" type="button" class="secondary" aria-expanded="false" aria-controls="search-panel" title="Search all sessions">Search</button>
<button id="new-session" type="button" class="secondary" title="Start a new session (this one is kept)">New</button>
</div>
</header>
<section id="sessions-panel" class="panel" aria-labelledby="sessions-heading" hidden>
<div class="panel-head"><h2 id="sessions-heading">Sessions</h2><button type="button" class="icon-button close-panel" aria-label="Close sessions" title="Close">×</button></div>
<div id="sessions-body"></div>
</section>
<section id="search-panel" class="panel" aria-labelledby="search-heading" hidden>
<div class="panel-head"><h2 id="search-heading">Search sessions</h2><button type="button" class="icon-button close-panel" aria-label="Close search" title="Close">×</button></div>
<form id="search-form" role="search"><input id="search-input" type="search" placeholder="Search every session…" aria-label="Search every session of this project"><button type="submit">Search</button></form>
<div id="search-body"></div>
</section>
<div id="banner" hidden></div>
<main id="log" role="log" aria-live="polite" aria-label="Conversation" tabindex="0"></main>
<div id="working" class="working" hidden><span class="spinner" aria-hidden="true"></span><span id="working-text" role="status">Working…</span><button id="withdraw" type="button" class="secondary" aria-label="Withdraw the waiting messages (back to the input)" hidden>Withdraw</button><button id="stop" type="button" class="secondary" aria-label="Stop the reply">Stop</button></div>
<footer>
<textarea id="input" rows="3" placeholder="Ask Agent Assist… (Enter to send, Shift+Enter for a new line, Up for your last message)" aria-label="Message"></textarea>
<div class="buttons">
<button id="send" type="button">Send</button>
</div>
</footer>
<div id="announce" class="visually-hidden" role="status" aria-live="polite"></div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: WebviewMessage) => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const webview = view.webview;
    webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "dist"), vscode.Uri.joinPath(this.extensionUri, "media")],
    };
    webview.html = this.html(webview);
    this.disposables.push(
      webview.onDidReceiveMessage((raw: unknown) => {
        const message = parseWebviewMessage(raw);
        if (message) {
          this.onMessage(message);
        }
      }),
      view.onDidDispose(() => {
        this.view = undefined;
      }),
    );
  }

  /** The view is on screen (its banner shows what a notification would otherwise say). */
  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  private html(webview: vscode.Webview): string {
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "chat.css"));
    return chatHtml(webview.cspSource, makeNonce(), script.toString(), style.toString());
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
