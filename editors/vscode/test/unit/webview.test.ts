import { describe, expect, it } from "vitest";
import { contentSecurityPolicy, makeNonce } from "../../src/common/webview";

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
