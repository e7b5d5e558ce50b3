-- No server: the `store` option as initializationOptions.store (set, empty, invalid), and
-- how :checkhealth shows a connection string (never its password).
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
  local health = require("agent_assist.health")
  out.hidden = {
    health.without_password("postgresql://alice:s3cret@db.example.com:5432/agent_assist"),
    health.without_password("host=db.example.com password=s3cret dbname=agent_assist"),
    health.without_password("postgresql://alice@db.example.com/agent_assist"),
  }
end)
