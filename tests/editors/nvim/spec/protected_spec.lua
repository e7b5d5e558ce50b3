-- A protected write asks through vim.ui.select, naming the path and why: Refuse writes
-- nothing (the model is told), Allow write writes the file.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

H.run(function(out)
  H.choose("Refuse")
  H.start()
  vim.cmd("AgentAssist chat add a pre-commit hook")
  H.wait(function()
    return H.idle() and H.chat_text():find("Not written.", 1, true) ~= nil
  end, "the refused write")
  out.exists_after_refuse = vim.uv.fs_stat(".git/hooks/pre-commit") ~= nil

  H.choose("Allow write")
  vim.cmd("AgentAssist chat add it, I allow it")
  H.wait(function()
    return H.idle() and H.chat_text():find("Written.", 1, true) ~= nil
  end, "the allowed write")
end)
