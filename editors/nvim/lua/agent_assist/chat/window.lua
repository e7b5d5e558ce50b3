-- agent_assist.chat.window: The chat window: its layout (split, vsplit, float), its options
-- (the header's fold) and the buffer's keymaps.

local buffer = require("agent_assist.chat.buffer")
local chat_header = require("agent_assist.chat.header")
local config = require("agent_assist.config")
local header_mod = require("agent_assist.header")

local windows_of = buffer.windows_of

local M = {}

function M.set_window_options(win)
  local wo = vim.wo[win][0]
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'agent_assist.chat'.foldexpr()"
  wo.foldlevel = 99 -- "What I remember" starts open
end

function M.set_keymaps(chat)
  local keys = config.get().keymaps
  local buf = chat.buf
  local function map(modes, lhs, fn, desc)
    if lhs then
      vim.keymap.set(modes, lhs, fn, { buffer = buf, silent = true, desc = desc })
    end
  end
  map("n", keys.open_file, function()
    local file = chat_header.file_at_cursor(chat)
    local row = vim.api.nvim_win_get_cursor(0)[1] - 1
    if file then
      header_mod.open_file(chat.root, file, buf)
    elseif chat.header and chat.header.memory and row == chat.header.memory.first then
      vim.cmd("normal! za")
    else
      chat_header.feed_default(keys.open_file)
    end
  end, "Agent Assist: open the changed file (session header)")
  map("n", keys.diff, function()
    local file = chat_header.file_at_cursor(chat)
    if file then
      header_mod.diff(chat.root, file)
    else
      chat_header.feed_default(keys.diff)
    end
  end, "Agent Assist: diff the changed file against its checkpoint copy")
  map("n", keys.dismiss, function()
    chat_header.dismiss(chat.root)
  end, "Agent Assist: dismiss the session header")
  map("n", keys.prompt, function()
    require("agent_assist.chat").prompt(chat.root)
  end, "Agent Assist: type a message")
  map({ "n", "i" }, keys.cancel, function()
    require("agent_assist.chat").cancel(chat.root)
  end, "Agent Assist: cancel the running turn")
  map("n", keys.close, function()
    for _, win in ipairs(windows_of(buf)) do
      if #vim.api.nvim_list_wins() > 1 then
        vim.api.nvim_win_close(win, false)
      end
    end
  end, "Agent Assist: close the chat window")
end

--- Give a new chat buffer its keymaps, and each window that shows it the chat's options.
---@param chat agent_assist.Chat
function M.attach(chat)
  M.set_keymaps(chat)
  local buf = chat.buf
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = buf,
    callback = function()
      local win = vim.api.nvim_get_current_win()
      if vim.api.nvim_win_get_buf(win) == buf then
        M.set_window_options(win)
      end
    end,
  })
end

local function open_window(buf)
  local layout = config.get().layout
  if layout == "float" then
    local float = config.get().float
    local function size(value, total)
      return math.max(10, math.floor(value <= 1 and value * total or value))
    end
    local width, height = size(float.width, vim.o.columns), size(float.height, vim.o.lines - 2)
    return vim.api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2) - 1,
      col = math.floor((vim.o.columns - width) / 2),
      border = float.border,
      title = " Agent Assist ",
      title_pos = "center",
    })
  end
  vim.cmd(layout == "split" and "botright split" or "botright vsplit")
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  return win
end

--- Show a chat's buffer in a window (focusing the one it has, else opening one) with the
--- cursor on its last line.
---@param chat agent_assist.Chat
function M.show(chat)
  local win = windows_of(chat.buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    win = open_window(chat.buf)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
    vim.wo[win].number = false
    vim.wo[win].conceallevel = 2
    M.set_window_options(win)
  end
  pcall(vim.api.nvim_win_set_cursor, win, { vim.api.nvim_buf_line_count(chat.buf), 0 })
end

return M
