"""The notes API of the three-tier example: Python's standard library HTTP server over one
PostgreSQL table, reached through DATABASE_URL (the api->db connection's export).

GET /api/notes lists the notes, oldest first; POST /api/notes with {"text": "..."} adds one
(201, the note). GET /api/health answers 200 once the database does. The table is made on the
first start; the server listens only after that, so a start that sees its port has a database.
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2

DSN = os.environ.get("DATABASE_URL", "")


def connect():
    return psycopg2.connect(DSN, connect_timeout=5)


def prepare():
    """Wait for the database (it may still be starting), then make the table."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with connect() as conn, conn.cursor() as cur:
                cur.execute(
                    "CREATE TABLE IF NOT EXISTS notes ("
                    " id serial PRIMARY KEY,"
                    " text text NOT NULL,"
                    " created timestamptz NOT NULL DEFAULT now())"
                )
            return
        except psycopg2.OperationalError as err:
            if time.monotonic() > deadline:
                raise
            print("waiting for the database:", str(err).strip(), file=sys.stderr)
            time.sleep(1)


class Handler(BaseHTTPRequestHandler):
    server_version = "notes-api/1"

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        try:
            if self.path == "/api/health":
                with connect() as conn, conn.cursor() as cur:
                    cur.execute("SELECT 1")
                return self.reply(200, {"ok": True})
            if self.path == "/api/notes":
                with connect() as conn, conn.cursor() as cur:
                    cur.execute("SELECT id, text, created FROM notes ORDER BY id")
                    rows = cur.fetchall()
                return self.reply(200, [
                    {"id": i, "text": t, "created": c.isoformat()} for i, t, c in rows
                ])
        except psycopg2.Error as err:
            return self.reply(503, {"error": str(err).strip()})
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/api/notes":
            return self.reply(404, {"error": "not found"})
        try:
            n = int(self.headers.get("Content-Length") or 0)
            text = json.loads(self.rfile.read(n) or b"{}").get("text", "")
        except (ValueError, AttributeError):
            return self.reply(400, {"error": "send {\"text\": \"...\"}"})
        if not isinstance(text, str) or not text.strip():
            return self.reply(400, {"error": "a note needs text"})
        try:
            with connect() as conn, conn.cursor() as cur:
                cur.execute(
                    "INSERT INTO notes (text) VALUES (%s) RETURNING id, created", (text,)
                )
                i, c = cur.fetchone()
        except psycopg2.Error as err:
            return self.reply(503, {"error": str(err).strip()})
        self.reply(201, {"id": i, "text": text, "created": c.isoformat()})


def main():
    if not DSN:
        sys.exit("DATABASE_URL is not set: connect this app to the database (api -> db)")
    prepare()
    port = int(os.environ.get("PORT", "8000"))
    print(f"notes api on :{port}", flush=True)
    ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
