import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Unit tests run outside VS Code: `vscode` resolves to an inert stub (pure functions only are tested).
export default defineConfig({
  resolve: { alias: { vscode: fileURLToPath(new URL("./test/vscode-stub.ts", import.meta.url)) } },
  test: { testTimeout: 10_000 },
});
