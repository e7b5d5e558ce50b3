"""`agent-assist chat`: the terminal client of `agent-assist serve`.

`command.py` parses the arguments, `app.py` runs the chat and renders the server's events,
`outbox.py` keeps the prompt up while replies stream (queued lines, /withdraw, /clear),
`questions.py` answers the server's questions, `edit_review.py` shows the model's edits as
a diff and asks, `start.py` resumes where you left off (--continue, --resume, the recap),
`commands.py` holds the slash commands, `render.py` and `blocks.py` draw replies and tables,
`input.py` reads the user's lines; `chat_types.py` says what these parts use of the app.
"""
