-- agent_assist.chat.render: Chat lines from what the server sends: transcript items, tool
-- calls, retries, the mark under an answer that did not complete.

local buffer = require("agent_assist.chat.buffer")

local split_lines = buffer.split_lines
local USER_HEADER, ASSISTANT_HEADER = buffer.USER_HEADER, buffer.ASSISTANT_HEADER

local M = {}

local function short(value)
  local text = type(value) == "string" and value or vim.json.encode(value)
  text = text:gsub("%s+", " ")
  if #text > 40 then
    text = text:sub(1, 37) .. "..."
  end
  return text
end

--- One line describing a tool call, e.g. "> tool `read_file` path=agent_spec.md: done".
---@param params agent_assist.ToolCallParams
---@return string
function M.tool_line(params)
  local args = params.args
  local shown = ""
  if type(args) == "table" then
    local keys = vim.tbl_keys(args)
    table.sort(keys, function(a, b)
      if (a == "path") ~= (b == "path") then
        return a == "path" -- the path first: it says what the tool works on
      end
      return a < b
    end)
    local parts = {}
    for _, key in ipairs(keys) do
      local value = args[key]
      if key == "content" and type(value) == "string" then
        table.insert(parts, ("content=<%d chars>"):format(#value))
      else
        table.insert(parts, key .. "=" .. short(value))
      end
    end
    shown = table.concat(parts, " ")
  elseif args ~= nil and args ~= vim.NIL then
    shown = short(args)
  end
  local line = "> tool `" .. tostring(params.tool) .. "`"
  if shown ~= "" then
    line = line .. " " .. shown
  end
  return line .. ": " .. tostring(params.status)
end

--- The mark under an answer that did not complete, e.g. "(incomplete: aborted)"; nil if it did.
---@param item agent_assist.TranscriptItem
---@return string?
function M.end_mark(item)
  local reason = item.endReason ~= "completed" and item.endReason or nil
  if item.partial then
    return reason and ("(incomplete: %s)"):format(reason) or "(incomplete)"
  end
  return reason and ("(%s)"):format(reason) or nil
end

--- The note shown when a model attempt is retried.
---@param params agent_assist.ChatRetryParams
---@return string
function M.retry_line(params)
  local reason = split_lines(tostring(params.reason or ""))[1]
  return ("> Retrying (attempt %s): %s"):format(tostring(params.attempt), reason)
end

--- Transcript items (`agentAssist/history`) as chat buffer lines.
---@param items agent_assist.TranscriptItem[]
---@return string[]
function M.render(items)
  local lines = {}
  local function add(list)
    vim.list_extend(lines, list)
  end
  for _, item in ipairs(items or {}) do
    local text = split_lines(item.text)
    if item.role == "user" then
      local numbered = type(item.turn) == "number"
      add({ numbered and ("%s (turn %d)"):format(USER_HEADER, item.turn) or USER_HEADER })
      add(text)
      add({ "" })
    elseif item.role == "assistant" then
      add({ ASSISTANT_HEADER })
      add(text)
      local mark = M.end_mark(item)
      if mark then
        add({ "", ("_%s_"):format(mark) })
      end
      add({ "" })
    else
      local status = item.status and (" (" .. item.status .. ")") or ""
      for i, line in ipairs(text) do
        add({ "> " .. (item.role == "tool" and i == 1 and "tool " or "") .. line })
      end
      lines[#lines] = lines[#lines] .. status
      add({ "" })
    end
  end
  return lines
end

return M
