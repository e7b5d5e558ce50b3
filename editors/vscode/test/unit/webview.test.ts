import { describe, expect, it } from "vitest";
import { chatHtml, contentSecurityPolicy, makeNonce } from "../../src/host/webview";

describe("webview Content-Security-Policy", () => {
  it("allows only the nonce'd script and the webview's own styles", () => {
    const csp = contentSecurityPolicy("https://webview.test", "abc123");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'nonce-abc123'");
    expect(csp).toContain("style-src https://webview.test");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
  });

  it("makes a fresh random nonce each time", () => {
    const nonces = new Set(Array.from({ length: 50 }, makeNonce));
    expect(nonces.size).toBe(50);
    for (const nonce of nonces) {
      expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    }
  });
});

describe("the view's page", () => {
  const html = chatHtml("https://webview.test", "abc123", "https://webview.test/dist/webview.js", "https://webview.test/media/chat.css");

  it("has one script, carrying the nonce, and no inline style or handler", () => {
    expect([...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([
      '<script nonce="abc123" src="https://webview.test/dist/webview.js">',
    ]);
    expect(html).not.toMatch(/\sstyle=/);
    expect(html).not.toMatch(/<style\b/);
    expect(html).not.toMatch(/\son[a-z]+=/);
  });

  it("names every control for assistive technology", () => {
    const buttons = [...html.matchAll(/<button\b([^>]*)>([^<]*)<\/button>/g)];
    expect(buttons.length).toBeGreaterThanOrEqual(6);
    for (const [, attrs, text] of buttons) {
      const label = /aria-label="([^"]+)"/.exec(attrs ?? "")?.[1] ?? "";
      // a glyph such as × is no name: it needs an aria-label
      expect(label !== "" || /[A-Za-z]{2,}/.test(text ?? "")).toBe(true);
    }
    for (const [field] of html.matchAll(/<(textarea|input)\b[^>]*>/g)) {
      expect(field).toMatch(/aria-label="[^"]+"/);
    }
  });

  it("streams the conversation into a polite live region", () => {
    expect(html).toMatch(/<main id="log" role="log" aria-live="polite"/);
  });
});
