import { describe, expect, it } from "vitest";
import { escapeHtml, renderMarkdown } from "../../src/webview/markdown";

/** Every tag of the rendered HTML: its name and attribute names (text between tags holds no `<` or `>`). */
function tags(html: string): { name: string; attrs: Record<string, string> }[] {
  return [...html.matchAll(/<\/?([a-zA-Z0-9]+)([^>]*)>/g)].map((m) => ({
    name: (m[1] ?? "").toLowerCase(),
    attrs: Object.fromEntries([...(m[2] ?? "").matchAll(/\s([a-z-]+)="([^"]*)"/g)].map((a) => [a[1] ?? "", a[2] ?? ""])),
  }));
}

const ALLOWED_ATTRS = new Set(["class", "type", "title", "href", "aria-label"]);

const ALLOWED = new Set(["p", "br", "strong", "em", "code", "pre", "div", "button", "ul", "ol", "li", "h3", "h4", "h5", "h6", "blockquote", "a", "span"]);

describe("renderMarkdown sanitising", () => {
  const attacks = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "hello <img src=x onerror=alert(1)> world",
    "```\n<script>alert(1)</script>\n```",
    "```js\" onmouseover=\"alert(1)\n1\n```",
    "`<b>inline</b>`",
    "**<svg onload=alert(1)>**",
    "[click](javascript:alert(1))",
    '[x](https://e.com/" onclick="alert(1))',
    "- <iframe src=//evil>",
    "# <style>body{}</style>",
    "> <a href=javascript:alert(1)>q</a>",
  ];

  it.each(attacks)("never turns %j into markup", (attack) => {
    const html = renderMarkdown(attack);
    for (const tag of tags(html)) {
      expect(ALLOWED.has(tag.name)).toBe(true);
      for (const [name, value] of Object.entries(tag.attrs)) {
        expect(ALLOWED_ATTRS.has(name)).toBe(true);
        if (name === "href") {
          expect(value).toMatch(/^https?:\/\//);
        }
      }
    }
    expect(html).not.toMatch(/<(script|img|svg|iframe|style)/i);
    // every `<` of the source comes out escaped: only the renderer's own tags remain
    expect(html.replace(/<\/?[a-z0-9]+(\s[a-z-]+="[^"<>]*")*>/g, "")).not.toMatch(/[<>]/);
  });

  it("escapes the five HTML characters", () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  });

  it("keeps the text of an escaped tag visible", () => {
    expect(renderMarkdown("<script>alert(1)</script>")).toBe("<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>");
  });
});

describe("renderMarkdown formatting", () => {
  it("renders code blocks with Copy and Insert buttons that have accessible names, and a safe language class", () => {
    const html = renderMarkdown("Here:\n```python\nprint('<hi>')\n```\nDone");
    expect(html).toContain('<button class="copy" type="button" title="Copy" aria-label="Copy code">Copy</button>');
    expect(html).toContain(
      '<button class="insert" type="button" title="Insert at cursor" aria-label="Insert code at cursor">Insert</button>',
    );
    expect(html).toContain('<span class="code-lang">python</span>');
    expect(html).toContain('<code class="language-python">print(&#39;&lt;hi&gt;&#39;)</code>');
    expect(html).toContain("<p>Done</p>");
  });

  it("renders an unclosed fence (a reply still streaming) as code", () => {
    expect(renderMarkdown("```\nx = 1")).toContain("<pre><code>x = 1</code></pre>");
  });

  it("renders inline marks, lists, headings and http links", () => {
    const html = renderMarkdown("# Title\n**bold** and *it* and `a<b`\n\n- one\n- two\n\n1. first\n\n[docs](https://example.com/a?b=1&c=2)");
    expect(html).toContain("<h3>Title</h3>");
    expect(html).toContain("<strong>bold</strong> and <em>it</em> and <code>a&lt;b</code>");
    expect(html).toContain("<ul><li>one</li><li>two</li></ul>");
    expect(html).toContain("<ol><li>first</li></ol>");
    expect(html).toContain('<a href="https://example.com/a?b=1&amp;c=2"');
  });

  it("does not format inside inline code", () => {
    expect(renderMarkdown("`**not bold**`")).toBe("<p><code>**not bold**</code></p>");
  });
});
