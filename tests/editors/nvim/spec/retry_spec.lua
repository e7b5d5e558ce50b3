-- Model faults: a retried attempt's streamed text is dropped (agentAssist/chatRetry), a reply
-- cut short comes back marked incomplete, and the retry/window/limit options reach the server.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

H.run(function(out)
  local config = require("agent_assist.config")
  -- invalid values fall back (with a warning) and are not sent: the server's defaults apply
  config.setup({
    model = { max_retries = 11, stream_timeout = 0, first_token_timeout = "soon" },
    context_window = 10,
    compact_at = 2,
  })
  out.invalid_init = config.init_options(vim.uv.cwd())
  out.invalid_notes = vim.deepcopy(H.notifications)

  local opts = {
    stop_timeout = 10000,
    model = {
      max_retries = 1,
      stream_timeout = 20,
      first_token_timeout = 600,
      max_reply_bytes = 1048576,
    },
    tools = {
      protected_paths = { "secrets/**" },
      max_calls_per_response = 8,
      max_calls_per_turn = 100,
      max_argument_bytes = 65536,
    },
    context_window = 64000,
    compact_at = 0.7,
  }
  if vim.env.AGENT_ASSIST_TEST_CMD and vim.env.AGENT_ASSIST_TEST_CMD ~= "" then
    opts.cmd = vim.json.decode(vim.env.AGENT_ASSIST_TEST_CMD)
  end
  require("agent_assist").setup(opts)
  out.init = config.init_options(vim.uv.cwd())

  H.start()

  -- the first attempt streams half an answer and is cut; the retry answers in full
  vim.cmd("AgentAssist chat explain it")
  H.wait(function()
    return H.idle() and H.chat_text():find("The whole answer.", 1, true) ~= nil
  end, "the retried reply")
  out.chat_after_retry = H.chat_lines()
  out.retries_turn1 = vim.deepcopy(H.events.retries)

  -- every attempt is cut: the turn fails; the transcript shows the last attempt as incomplete
  vim.cmd("AgentAssist chat again please")
  H.wait(function()
    return H.idle() and H.chat_text():find("**Error:**", 1, true) ~= nil
  end, "the failed turn")
  out.chat_after_failure = H.chat_lines()

  -- text before a tool call is a finished model request: a retry after it keeps it
  vim.cmd("AgentAssist chat read the spec")
  H.wait(function()
    return H.idle() and H.chat_text():find("It says three tools.", 1, true) ~= nil
  end, "the tool turn")
  out.chat_after_tool_retry = H.chat_lines()

  local redrawn = false
  require("agent_assist.chat").redraw(nil, nil, function()
    redrawn = true
  end)
  H.wait(function()
    return redrawn
  end, "the transcript")
  out.history = H.chat_lines()

  vim.cmd("AgentAssist status")
  out.status_note = H.wait_notification("state idle").msg
end)
