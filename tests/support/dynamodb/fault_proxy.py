#!/usr/bin/env python3
"""A fault-injecting proxy in front of a DynamoDB server, for the tests: it forwards every request
unchanged (so the server still checks the signature, made for the proxy's host) and answers some
itself, as DynamoDB does under load:

  --throttle N      the first N requests get HTTP 400 ProvisionedThroughputExceededException
  --unprocessed N   the first N BatchGetItem answers keep only their first half of the items read
                    and hand the rest back as UnprocessedKeys
  --expire-token N  the first N requests get HTTP 400 ExpiredTokenException
  --die-after N     after N requests the proxy exits at once (a server dying mid-run), connections dropped

Prints its port on the first line of stdout, then serves until killed; the counts of requests it
saw and faults it made go to --stats FILE after every request (JSON).
"""
import argparse
import http.client
import http.server
import json
import os
import threading

args = None
lock = threading.Lock()
counts = {"requests": 0, "throttled": 0, "unprocessed": 0, "expired": 0, "batch_gets": 0}


def take(name, limit):
    with lock:
        if counts[name] < limit:
            counts[name] += 1
            return True
        return False


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def answer(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        target = self.headers.get("X-Amz-Target", "")
        with lock:
            counts["requests"] += 1
            if args.die_after and counts["requests"] > args.die_after:
                os._exit(0)
        try:
            if take("throttled", args.throttle):
                return self.answer(400, json.dumps({
                    "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                    "message": "The level of configured provisioned throughput for the table was exceeded."}))
            if take("expired", args.expire_token):
                return self.answer(400, json.dumps({
                    "__type": "com.amazon.coral.service#ExpiredTokenException",
                    "message": "The security token included in the request is expired"}))
            upstream = http.client.HTTPConnection("127.0.0.1", args.upstream, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
            upstream.request("POST", self.path, body=body, headers=headers)
            reply = upstream.getresponse()
            data = reply.read()
            status = reply.status
            upstream.close()
            if status == 200 and target.endswith("BatchGetItem"):
                with lock:
                    counts["batch_gets"] += 1
                if take("unprocessed", args.unprocessed):
                    data = self.split(json.loads(body), json.loads(data))
            self.answer(status, data if isinstance(data, str) else data.decode())
        finally:
            if args.stats:
                with lock, open(args.stats, "w") as out:
                    json.dump(counts, out)

    @staticmethod
    def split(request, answer):
        # Keep half the items read; the keys of the other half come back as unprocessed.
        for table, items in answer.get("Responses", {}).items():
            keep = items[: len(items) // 2]
            dropped = items[len(items) // 2:]
            answer["Responses"][table] = keep
            key_names = [k for k in request["RequestItems"][table]["Keys"][0].keys()]
            keys = [{name: item[name] for name in key_names} for item in dropped]
            if keys:
                unprocessed = dict(request["RequestItems"][table])
                unprocessed["Keys"] = keys
                answer.setdefault("UnprocessedKeys", {})[table] = unprocessed
        return json.dumps(answer)


def main():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", type=int, required=True)
    parser.add_argument("--throttle", type=int, default=0)
    parser.add_argument("--unprocessed", type=int, default=0)
    parser.add_argument("--expire-token", type=int, default=0)
    parser.add_argument("--die-after", type=int, default=0)
    parser.add_argument("--stats", default="")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
