-- Shared by the spec scripts: records what the plugin shows, answers pickers, writes JSON.
local H = {
  notifications = {}, ---@type {msg: string, level: integer}[]
  selects = {}, ---@type {prompt: string, items: string[], choice: string?}[]
  inputs = {},
  events = { session_changed = {}, deltas = {}, retries = {}, tools = {}, drifts = {} },
  --- Answer a vim.ui.select: a function(prompt, formatted_items, items) -> index, or nil.
  answer = nil,
  out = {},
}

vim.notify = function(msg, level)
  table.insert(H.notifications, { msg = msg, level = level or vim.log.levels.INFO })
end

vim.ui.select = function(items, opts, on_choice)
  opts = opts or {}
  local format = opts.format_item or tostring
  local shown = {}
  for _, item in ipairs(items) do
    table.insert(shown, format(item))
  end
  local index = H.answer and H.answer(opts.prompt or "", shown, items) or nil
  table.insert(
    H.selects,
    { prompt = opts.prompt or "", items = shown, choice = index and shown[index] }
  )
  on_choice(index and items[index] or nil, index)
end

vim.ui.input = function(opts, on_confirm)
  table.insert(H.inputs, opts.prompt or "")
  on_confirm(H.input_answer)
end

local chat = require("agent_assist.chat")
for name, list in pairs({
  on_session_changed = "session_changed",
  on_delta = "deltas",
  on_retry = "retries",
  on_tool_call = "tools",
}) do
  local original = chat[name]
  chat[name] = function(root, params)
    table.insert(H.events[list], params)
    return original(root, params)
  end
end

-- agentAssist/drift params, as the client received them
local client = require("agent_assist.client")
local describe_drift = client.describe_drift
client.describe_drift = function(params)
  table.insert(H.events.drifts, params)
  return describe_drift(params)
end

--- Answer selects by the title of the wanted item (first item containing one of `...`).
function H.choose(...)
  local texts = { ... }
  H.answer = function(_, shown)
    for i, item in ipairs(shown) do
      for _, text in ipairs(texts) do
        if item:find(text, 1, true) then
          return i
        end
      end
    end
  end
end

--- Start the plugin's server and wait for its first session; return that `sessionChanged`.
function H.start()
  assert(require("agent_assist").start(), "server did not start")
  H.wait(function()
    return #H.events.session_changed >= 1
  end, "sessionChanged")
  return H.events.session_changed[1]
end

function H.wait(predicate, what, ms)
  if not vim.wait(ms or 30000, predicate, 20) then
    error("timed out waiting for " .. what, 2)
  end
end

function H.root()
  return require("agent_assist.client").root()
end

function H.chat()
  return chat.chats[H.root()]
end

--- The whole chat buffer: the session header (if one is shown) and the transcript.
function H.buffer_lines()
  local c = H.chat()
  if not c or not vim.api.nvim_buf_is_valid(c.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(c.buf, 0, -1, false)
end

--- The transcript: the chat buffer below the session header.
function H.chat_lines()
  local c = H.chat()
  return vim.list_slice(H.buffer_lines(), (c and c.header_size or 0) + 1)
end

--- The session header's lines ({} when none is shown).
function H.header_lines()
  local c = H.chat()
  return vim.list_slice(H.buffer_lines(), 1, c and c.header_size or 0)
end

function H.chat_text()
  return table.concat(H.chat_lines(), "\n")
end

function H.idle()
  local c = H.chat()
  return c ~= nil and c.pending == nil
end

--- Wait for a notification containing `text`; return it.
function H.wait_notification(text, what)
  local found
  H.wait(function()
    for _, n in ipairs(H.notifications) do
      if n.msg:find(text, 1, true) then
        found = n
        return true
      end
    end
    return false
  end, what or ("notification " .. text))
  return found
end

--- A request answered synchronously (waits with vim.wait).
function H.request(method, params)
  local done, err, result = false, nil, nil
  require("agent_assist").request(method, params or {}, function(e, r)
    done, err, result = true, e, r
  end)
  H.wait(function()
    return done
  end, method)
  if err then
    error(method .. ": " .. vim.inspect(err))
  end
  return result
end

--- Copy a file byte for byte next to the observations (`<out>.<name>`), for the test to compare.
function H.keep_copy(path, name)
  local src = assert(io.open(path, "rb"))
  local data = src:read("*a")
  src:close()
  local dst = assert(io.open(vim.env.AGENT_ASSIST_TEST_OUT .. "." .. name, "wb"))
  dst:write(data)
  dst:close()
end

function H.lines_of(path)
  local buf = vim.fn.bufnr(path)
  if buf == -1 then
    return nil
  end
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- Run the spec, write what was observed (and any error) as JSON, quit.
function H.run(fn)
  local ok, err = xpcall(fn, debug.traceback, H.out)
  H.out.error = not ok and tostring(err) or nil
  H.out.notifications = H.notifications
  H.out.selects = H.selects
  H.out.inputs = H.inputs
  H.out.events = H.events
  H.out.chat = H.buffer_lines()
  local file = assert(io.open(vim.env.AGENT_ASSIST_TEST_OUT, "w"))
  file:write(vim.json.encode(H.out))
  file:close()
  vim.cmd("qa!")
end

return H
