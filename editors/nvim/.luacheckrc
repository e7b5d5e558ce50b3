-- luacheck (Debian: apt-get install lua-check)
std = "luajit"
globals = { "vim" }
max_line_length = 100
-- stylua decides line breaks; long strings may exceed the limit
ignore = { "631" }
