"""`agent-assist chat`: the terminal client of `agent-assist serve`.

`command.py` parses the arguments, `app.py` runs the chat, `commands.py` holds the slash
commands, `render.py` draws replies and tables, `input.py` reads the user's lines.
"""
