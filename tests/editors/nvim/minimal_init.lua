-- Loads only the plugin under test (XDG_* point at empty temp dirs, so no user config).
local here = vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2)))
local repo = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(here)))
vim.opt.runtimepath:prepend(repo .. "/editors/nvim")
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"
vim.opt.more = false

local opts = { stop_timeout = 10000 }
if vim.env.AGENT_ASSIST_TEST_CMD and vim.env.AGENT_ASSIST_TEST_CMD ~= "" then
  opts.cmd = vim.json.decode(vim.env.AGENT_ASSIST_TEST_CMD)
end
require("agent_assist").setup(opts)
