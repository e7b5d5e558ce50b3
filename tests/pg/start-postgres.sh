#!/usr/bin/env bash
# A PostgreSQL server for the PostgreSQL store's tests (tests/pg/), idempotent:
# installs Debian's `postgresql` when it is missing (as root, with apt-get), starts the
# cluster (`pg_ctlcluster` runs it as the `postgres` user: the server refuses root), creates
# two plain login roles (no superuser, no BYPASSRLS) with random passwords (made once, kept) and a test
# database, and prints the DSNs the tests read as shell `export` lines:
#   AGENT_ASSIST_TEST_PG        role agent_assist_test: owns the test database and the tables
#   AGENT_ASSIST_TEST_PG_OTHER  role agent_assist_test_other: a second user (row-level security)
# and two group roles for the team read policy of docs/scaling.md: agent_assist_test_team
# (both users are members) and agent_assist_test_solo (only the first).
# By hand:  eval "$(tests/pg/start-postgres.sh)" && ./run-tests tests/pg
# Messages go to stderr; it exits non-zero, saying why, when it cannot provide a server.
set -euo pipefail
# Only the export lines go to stdout (the caller evals it): everything else, including what
# the tools print on their own (pg_ctlcluster says "Removed stale pid file." on stdout), goes
# to stderr.
exec 3>&1 1>&2

say() { echo "start-postgres: $*" >&2; }
fail() { say "$*"; exit 1; }

if [ "$(id -u)" != 0 ]; then
  fail "needs root (to install and start PostgreSQL and run psql as the postgres user);" \
    "or set AGENT_ASSIST_TEST_PG (and AGENT_ASSIST_TEST_PG_OTHER) to a server of your own"
fi

if ! command -v pg_ctlcluster >/dev/null || ! command -v pg_lsclusters >/dev/null; then
  command -v apt-get >/dev/null || fail "PostgreSQL is not installed and there is no apt-get"
  say "installing PostgreSQL (apt-get install postgresql)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } \
    >/dev/null 2>&1 || fail "apt-get install postgresql failed"
fi

cluster=$(pg_lsclusters -h | head -n 1)
if [ -z "$cluster" ]; then
  version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  [ -n "$version" ] || fail "no PostgreSQL server binaries under /usr/lib/postgresql"
  say "creating the cluster $version/main"
  pg_createcluster "$version" main >/dev/null || fail "pg_createcluster $version main failed"
  cluster=$(pg_lsclusters -h | head -n 1)
fi
read -r version name port _ <<<"$cluster"

if ! pg_ctlcluster "$version" "$name" status >/dev/null 2>&1; then
  say "starting the cluster $version/$name"
  # 3>&- : the server must not inherit the caller's pipe (a `$(…)` would wait for it forever)
  if ! pg_ctlcluster "$version" "$name" start 3>&-; then
    tail -n 20 "/var/log/postgresql/postgresql-$version-$name.log" >&2 || true
    fail "pg_ctlcluster $version $name start failed (its log is above)"
  fi
fi
for _ in $(seq 1 60); do
  pg_isready -q -h 127.0.0.1 -p "$port" && break
  sleep 0.5
done
pg_isready -q -h 127.0.0.1 -p "$port" || fail "the cluster $version/$name does not answer on 127.0.0.1:$port"

password() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
# Random passwords, made once and kept (root only) so that a rerun, e.g. by a second shell
# or a CI step, prints the same DSNs instead of breaking the ones already handed out.
pw_file=/var/lib/postgresql/agent-assist-test.passwords
if [ -f "$pw_file" ] && read -r main_pw other_pw <"$pw_file" && [ -n "$other_pw" ]; then
  :
else
  main_pw=$(password)
  other_pw=$(password)
  (umask 077 && echo "$main_pw $other_pw" >"$pw_file")
fi
# Peer authentication over the socket as postgres; `cd /` so psql can read its cwd.
(cd / && PGOPTIONS="-c client_min_messages=warning" runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d postgres \
  -v main_pw="$main_pw" -v other_pw="$other_pw") >/dev/null <<'SQL' || fail "creating the test roles and database failed"
SELECT 'CREATE ROLE agent_assist_test' WHERE NOT EXISTS
  (SELECT FROM pg_roles WHERE rolname = 'agent_assist_test') \gexec
SELECT 'CREATE ROLE agent_assist_test_other' WHERE NOT EXISTS
  (SELECT FROM pg_roles WHERE rolname = 'agent_assist_test_other') \gexec
ALTER ROLE agent_assist_test LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD :'main_pw';
ALTER ROLE agent_assist_test_other LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD :'other_pw';
SELECT 'CREATE ROLE agent_assist_test_team NOLOGIN' WHERE NOT EXISTS
  (SELECT FROM pg_roles WHERE rolname = 'agent_assist_test_team') \gexec
SELECT 'CREATE ROLE agent_assist_test_solo NOLOGIN' WHERE NOT EXISTS
  (SELECT FROM pg_roles WHERE rolname = 'agent_assist_test_solo') \gexec
GRANT agent_assist_test_team TO agent_assist_test, agent_assist_test_other;
GRANT agent_assist_test_solo TO agent_assist_test;
SELECT 'CREATE DATABASE agent_assist_test OWNER agent_assist_test' WHERE NOT EXISTS
  (SELECT FROM pg_database WHERE datname = 'agent_assist_test') \gexec
SQL

say "PostgreSQL $version/$name is up on 127.0.0.1:$port (database agent_assist_test)"
echo >&3 "export AGENT_ASSIST_TEST_PG='postgresql://agent_assist_test:$main_pw@127.0.0.1:$port/agent_assist_test'"
echo >&3 "export AGENT_ASSIST_TEST_PG_OTHER='postgresql://agent_assist_test_other:$other_pw@127.0.0.1:$port/agent_assist_test'"
