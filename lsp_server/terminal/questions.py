"""The server's questions (`window/showMessageRequest`), answered in the terminal."""

from __future__ import annotations

from typing import Protocol

from .chat_types import Asker

RESUME_QUESTION = "Resume previous session?"
RESUME, NEW_SESSION = "Resume", "New session"
DELETE_FILES, KEEP_FILES, CANCEL = "Delete files", "Keep files", "Cancel"
ALLOW_WRITE, REFUSE_WRITE = "Allow write", "Refuse"  # a protected write (`lsp_server/edits.py`)


class Answerer(Asker, Protocol):
    """What answering uses of the chat: it asks, and is told to end when the user leaves."""

    quit: bool


async def confirm(chat: Answerer, prompt: str, default: bool) -> bool:
    """Ask a yes/no question; Enter takes the default."""
    while True:
        answer = (await chat.read(prompt)).strip().lower()
        if not answer:
            return default
        if answer in ("y", "yes"):
            return True
        if answer in ("n", "no"):
            return False
        chat.say("Please answer y or n.", "dim")


async def confirm_write(chat: Answerer, message: str) -> str:
    """Ask whether the model may write a protected path; only a typed yes allows it."""
    if not chat.reader.interactive:
        chat.warn(f"{message} Refused: input is not a terminal, so no one can say yes.")
        return REFUSE_WRITE
    chat.warn(message)
    allowed = await confirm(chat, "Allow this write? [y/N] ", default=False)
    return ALLOW_WRITE if allowed else REFUSE_WRITE


async def ask(chat: Answerer, message: str, actions: list[str]) -> str | None:
    """Answer `window/showMessageRequest` in the terminal."""
    chat.flush_reply()
    try:
        if RESUME_QUESTION in message and RESUME in actions:
            found, *about = message.split("\n")[:-1]  # the seed's first line, then what it is
            chat.say(found, "bold")
            for line in about:
                chat.say(f"  {line}")
            resume = await confirm(chat, f"{RESUME_QUESTION} [Y/n] ", default=True)
            return RESUME if resume else NEW_SESSION
        if ALLOW_WRITE in actions and REFUSE_WRITE in actions:
            return await confirm_write(chat, message)
        if DELETE_FILES in actions and KEEP_FILES in actions:
            delete = await confirm(chat, f"{message} [y/N] ", default=False)
            return DELETE_FILES if delete else KEEP_FILES
        chat.say(message, "bold")
        for number, title in enumerate(actions, 1):
            chat.say(f"  {number}. {title}")
        while True:
            choice = (await chat.read("Choose a number (Enter: dismiss) ")).strip()
            if not choice:
                return None
            if choice.isdigit() and 1 <= int(choice) <= len(actions):
                return actions[int(choice) - 1]
    except (EOFError, KeyboardInterrupt):
        if RESUME_QUESTION in message:
            chat.quit = True
            return None  # dismissed: the server resumes; we then exit
        return CANCEL if CANCEL in actions else None
