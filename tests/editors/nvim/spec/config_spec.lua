-- No server: the `store` option as initializationOptions.store (set, empty, invalid), the
-- reply and tool limits (`model.max_reply_bytes`, `tools`) as model.maxReplyBytes and tools.*,
-- and how :checkhealth shows a connection string (never its password).
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)
local config = require("agent_assist.config")

H.run(function(out)
  local root = vim.uv.cwd()
  local function init_with(opts)
    H.notifications = {}
    config.setup(opts)
    return { init = config.init_options(root), notes = vim.deepcopy(H.notifications) }
  end
  out.store_unset = init_with({})
  out.store_conninfo = init_with({ store = " postgresql://alice@db.example.com/agent_assist " })
  out.store_local = init_with({ store = "local" })
  out.store_empty = init_with({ store = "" })
  out.store_blank = init_with({ store = "   " })
  out.store_invalid = init_with({ store = { host = "db.example.com" } })
  out.limits_set = init_with({
    model = { max_reply_bytes = 1048576 },
    tools = {
      protected_paths = { "secrets/**", "deploy/*.sh" },
      max_calls_per_response = 8,
      max_calls_per_turn = 100,
      max_argument_bytes = 65536,
    },
  })
  out.limits_bounds = init_with({
    model = { max_reply_bytes = 268435456 },
    tools = { max_calls_per_response = 1, max_calls_per_turn = 10000, max_argument_bytes = 1024 },
  })
  out.limits_one = init_with({ tools = { max_calls_per_turn = 5 } })
  out.limits_empty_paths = init_with({ tools = { protected_paths = {} } })
  out.limits_below = init_with({
    model = { max_reply_bytes = 65535 },
    tools = {
      protected_paths = { "ok/**", "  " },
      max_calls_per_response = 0,
      max_calls_per_turn = 0,
      max_argument_bytes = 1023,
    },
  })
  out.limits_above = init_with({
    model = { max_reply_bytes = 268435457 },
    tools = {
      protected_paths = "secrets/**",
      max_calls_per_response = 1001,
      max_calls_per_turn = 10001,
      max_argument_bytes = 67108865,
    },
  })
  out.limits_not_whole = init_with({
    model = { max_reply_bytes = 100000.5 },
    tools = { max_calls_per_response = "8", max_calls_per_turn = 2.5, max_argument_bytes = true },
  })
  out.tools_not_a_table = init_with({ tools = 64 })
  out.output_tokens = init_with({ model = { max_output_tokens = 256 } })
  out.output_tokens_invalid = init_with({ model = { max_output_tokens = 0 } })
  local health = require("agent_assist.health")
  out.hidden = {
    health.without_password("postgresql://alice:s3cret@db.example.com:5432/agent_assist"),
    health.without_password("host=db.example.com password=s3cret dbname=agent_assist"),
    health.without_password("postgresql://alice@db.example.com/agent_assist"),
  }
end)
