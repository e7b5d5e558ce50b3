import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const CSS = fs.readFileSync(path.join(__dirname, "../../media/chat.css"), "utf-8").replace(/\/\*[\s\S]*?\*\//g, "");
const NAMED = ["white", "black", "red", "green", "blue", "gray", "grey", "yellow", "orange", "purple", "silver", "navy"];

describe("the view's stylesheet", () => {
  it("takes every colour from VS Code's theme variables", () => {
    expect(CSS).not.toMatch(/#[0-9a-f]{3,8}\b/i);
    expect(CSS).not.toMatch(/\b(rgba?|hsla?|hwb|lab|lch|oklab|oklch|color-mix)\(/i);
    expect(CSS).not.toMatch(new RegExp(`:[^;{}]*\\b(${NAMED.join("|")})\\b`, "i"));
    // custom properties are the theme's own, never ours
    expect(CSS).not.toMatch(/var\(--(?!vscode-)/);
    expect(CSS).not.toMatch(/^\s*--/m);
  });

  it("draws a focus ring on whatever has keyboard focus", () => {
    expect(CSS).toMatch(/:focus-visible\s*{\s*outline: 1px solid var\(--vscode-focusBorder\)/);
    expect(CSS).toMatch(/\.vscode-high-contrast :focus-visible/);
  });

  it("tells the roles apart with their own rules in every theme kind", () => {
    for (const selector of [".item.user {", ".item.assistant {", ".vscode-high-contrast .item.user", ".vscode-light .item.user"]) {
      expect(CSS).toContain(selector);
    }
  });
});
