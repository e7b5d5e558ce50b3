// Stand-in for the `vscode` module in unit tests; the tested functions never touch it.
export const window = {};
export const workspace = {};
export const StatusBarAlignment = { Left: 1, Right: 2 };
export const Uri = {};
