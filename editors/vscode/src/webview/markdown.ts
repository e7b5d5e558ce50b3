/**
 * Markdown to HTML for the chat: the text is HTML-escaped first, then formatted, so a reply
 * can never produce an element or attribute of its own (no raw HTML).
 */

export function escapeHtml(text: string): string {
  return text
    .replace(/\uE000/g, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** Inline formatting of already-escaped text: code, bold, italic, http(s) links. */
function inline(escaped: string): string {
  const codes: string[] = [];
  let out = escaped.replace(/`([^`\n]+)`/g, (_m, code: string) => {
    codes.push(`<code>${code}</code>`);
    return `\uE000${codes.length - 1}\uE000`;
  });
  out = out
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\n]+)\*(?!\w)/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_([^_\n]+)_(?!\w)/g, "$1<em>$2</em>")
    .replace(
      /\[([^\]\n]+)\]\((https?:\/\/[^\s()<>"]+)\)/g,
      (_m, label: string, url: string) => `<a href="${url}" title="${url}">${label}</a>`,
    );
  return out.replace(/\uE000(\d+)\uE000/g, (_m, i: string) => codes[Number(i)] ?? "");
}

function codeBlock(lang: string, lines: string[]): string {
  const safeLang = lang.replace(/[^A-Za-z0-9_+-]/g, "").slice(0, 20);
  const cls = safeLang ? ` class="language-${safeLang}"` : "";
  const label = safeLang ? `<span class="code-lang">${safeLang}</span>` : "";
  return (
    `<div class="code-block"><div class="code-actions">${label}` +
    `<button class="copy" type="button" title="Copy" aria-label="Copy code">Copy</button>` +
    `<button class="insert" type="button" title="Insert at cursor" aria-label="Insert code at cursor">Insert</button></div>` +
    `<pre><code${cls}>${escapeHtml(lines.join("\n"))}</code></pre></div>`
  );
}

/** Render Markdown (fenced code, headings, lists, quotes, paragraphs, inline marks) to safe HTML. */
export function renderMarkdown(source: string): string {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const out: string[] = [];
  let paragraph: string[] = [];
  let list: { tag: "ul" | "ol"; items: string[] } | undefined;

  const flushParagraph = (): void => {
    if (paragraph.length > 0) {
      out.push(`<p>${paragraph.map((l) => inline(escapeHtml(l))).join("<br>")}</p>`);
      paragraph = [];
    }
  };
  const flushList = (): void => {
    if (list) {
      out.push(`<${list.tag}>${list.items.map((i) => `<li>${inline(escapeHtml(i))}</li>`).join("")}</${list.tag}>`);
      list = undefined;
    }
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fence = /^\s*(```|~~~)\s*([^\s`]*)/.exec(line);
    if (fence) {
      flushParagraph();
      flushList();
      const marker = fence[1] ?? "```";
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? "").trimStart().startsWith(marker)) {
        body.push(lines[i] ?? "");
        i++;
      }
      out.push(codeBlock(fence[2] ?? "", body)); // an unclosed fence (still streaming) runs to the end
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flushParagraph();
      flushList();
      const level = Math.min((heading[1] ?? "#").length + 2, 6); // small headings in a narrow sidebar
      out.push(`<h${level}>${inline(escapeHtml(heading[2] ?? ""))}</h${level}>`);
      continue;
    }
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    const item = bullet ?? numbered;
    if (item) {
      flushParagraph();
      const tag = bullet ? "ul" : "ol";
      if (list && list.tag !== tag) {
        flushList();
      }
      list ??= { tag, items: [] };
      list.items.push(item[1] ?? "");
      continue;
    }
    const quote = /^>\s?(.*)$/.exec(line);
    if (quote) {
      flushParagraph();
      flushList();
      out.push(`<blockquote>${inline(escapeHtml(quote[1] ?? ""))}</blockquote>`);
      continue;
    }
    if (line.trim() === "") {
      flushParagraph();
      flushList();
      continue;
    }
    flushList();
    paragraph.push(line);
  }
  flushParagraph();
  flushList();
  return out.join("\n");
}
