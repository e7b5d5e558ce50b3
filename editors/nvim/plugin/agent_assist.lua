-- Load guard and the one user command; everything else is lazy-required.
if vim.g.loaded_agent_assist then
  return
end
vim.g.loaded_agent_assist = true

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.api.nvim_echo({ { "agent_assist needs Neovim 0.10 or newer", "ErrorMsg" } }, true, {})
  return
end

vim.api.nvim_create_user_command("AgentAssist", function(args)
  require("agent_assist.commands").run(args.fargs)
end, {
  nargs = "*",
  desc = "Agent Assist: chat, save, reset, new, resume, checkpoint, compact, fork, search, ...",
  complete = function(arglead, cmdline, cursorpos)
    return require("agent_assist.commands").complete(arglead, cmdline, cursorpos)
  end,
})
