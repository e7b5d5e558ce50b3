"""`agent-assist chat` in a real terminal (tmux) against the real server and loopback model."""
