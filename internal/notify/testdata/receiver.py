"""A webhook receiver that checks etl-craft's signature on its own.

It listens on 127.0.0.1 (a free port, printed first as "port N"), and for each
POST recomputes the signature from the X-Etl-Craft-Timestamp header, a ".", and
the body, with HMAC-SHA256 keyed by $RECEIVER_SECRET, as docs/alerts.md tells a
receiver to. It answers 204 when the signature matches, the timestamp is
within five minutes and the body is an etl-craft/notification/1 document, and
401 otherwise; each request is printed as one JSON line.
"""

import hashlib
import hmac
import http.server
import json
import os
import sys
import time

SECRET = os.environ["RECEIVER_SECRET"].encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        stamp = self.headers.get("X-Etl-Craft-Timestamp", "")
        given = self.headers.get("X-Etl-Craft-Signature", "")
        expected = "v1=" + hmac.new(SECRET, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        fresh = stamp.isdigit() and abs(time.time() - int(stamp)) < 300
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {}
        ok = hmac.compare_digest(given, expected) and fresh and doc.get("schema") == "etl-craft/notification/1"
        print(json.dumps({"verified": ok, "delivery": self.headers.get("X-Etl-Craft-Delivery"),
                          "event": doc.get("event"), "subject": doc.get("subject")}), flush=True)
        self.send_response(204 if ok else 401)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
