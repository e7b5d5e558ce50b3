/** The sidebar `WebviewViewProvider`: strict CSP with a nonce, typed messages, no server access of its own. */
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { type HostMessage, parseWebviewMessage, type WebviewMessage } from "./messages";

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

  post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  private html(webview: vscode.Webview): string {
    const nonce = makeNonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "chat.css"));
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(webview.cspSource, nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Agent Assist</title>
</head>
<body>
<header><span id="session"></span></header>
<div id="log" role="log" aria-live="polite"></div>
<footer>
<textarea id="input" rows="3" placeholder="Ask Agent Assist… (Enter to send, Shift+Enter for a new line)" aria-label="Message"></textarea>
<div class="buttons">
<button id="send" type="button">Send</button>
<button id="stop" type="button" hidden>Stop</button>
</div>
</footer>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
