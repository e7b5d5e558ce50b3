/** "Insert at cursor" of a code block: into the editor last used, replacing each selection. */
import * as vscode from "vscode";

export async function insertAtCursor(text: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) {
    void vscode.window.showInformationMessage("Agent Assist: open a file to insert the code into.");
    return;
  }
  const done = await editor.edit((edit) => {
    for (const selection of editor.selections) {
      edit.replace(selection, text);
    }
  });
  if (!done) {
    void vscode.window.showWarningMessage(`Agent Assist: could not insert into ${editor.document.fileName}.`);
    return;
  }
  await vscode.window.showTextDocument(editor.document, editor.viewColumn);
}
