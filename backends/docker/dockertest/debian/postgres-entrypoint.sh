#!/bin/sh
# The PostgreSQL service image's entrypoint (Debian's postgresql-15), behaving for a user as the
# official image's does: an empty data directory ($PGDATA) is initialised from POSTGRES_USER
# (default postgres), POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust) and
# POSTGRES_DB (default the user's name); one that holds a cluster just starts. The server
# always runs as the postgres user: started as root (the root variant), the script gives the
# data directory to postgres and runs itself again as postgres; the non-root variant starts as
# postgres. It listens on every address, the network asking for a password
# (POSTGRES_HOST_AUTH_METHOD, default scram-sha-256), the local socket trusted, as upstream.
set -eu

: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA

# Options alone are the server's, as upstream: `docker run image -c fsync=off`.
if [ "${1#-}" != "$1" ]; then
	set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
	exec "$@"
fi

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	# Only what is not postgres's already: a restored or reused directory keeps its files.
	find "$PGDATA" /var/run/postgresql \! -user postgres -exec chown postgres:postgres '{}' +
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
	if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
		echo "error: the database is not initialised and POSTGRES_PASSWORD is not set:" >&2
		echo "set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without one)" >&2
		exit 1
	fi
	user=${POSTGRES_USER:-postgres}
	db=${POSTGRES_DB:-$user}
	pwfile=$(mktemp)
	printf '%s\n' "${POSTGRES_PASSWORD:-}" > "$pwfile"
	initdb --username="$user" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host="$auth" -D "$PGDATA"
	rm -f "$pwfile"
	printf 'host all all all %s\n' "$auth" >> "$PGDATA/pg_hba.conf"
	printf "listen_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
	if [ "$db" != postgres ]; then
		# On the socket only, so nothing connects before the database is there.
		pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start
		echo 'CREATE DATABASE :"db";' | psql -v ON_ERROR_STOP=1 --no-psqlrc -q --set=db="$db" --username="$user" --dbname=postgres
		pg_ctl -D "$PGDATA" -m fast -w stop
	fi
	echo "PostgreSQL init process complete; ready for start up."
fi

exec "$@"
