#!/usr/bin/env python3
"""A minimal schema registry for the tests: the Confluent REST endpoints the serializers and
dedupctl use, in memory, on loopback (Python's standard library only).

Why not a real one: Apicurio Registry is not runnable from what this machine reaches. On Maven
Central, io.apicurio:apicurio-registry-app 3.3.3 needs apicurio-registry-schema-util-provider 3.3.3,
which Central does not serve, and 2.6.13.Final needs the same module and eight
apicurio-common-app-components jars that Central does not have either (their parents name
repo.eclipse.org and packages.confluent.io, which are not reachable). Confluent's registry is not
on Central at all. So this speaks the documented API (docs.confluent.io, "Schema Registry API
Reference") and no more:

  POST /subjects/{subject}/versions   register (the same schema, type and references: the same id)
  POST /subjects/{subject}            look a schema up under a subject
  GET  /schemas/ids/{id}              {"schema", "schemaType" (absent for AVRO), "references"}
  GET  /subjects/{subject}/versions/{version|latest}
  GET  /subjects, /config, /config/{subject}

Options: --port N (0: any; the port is printed on stdout's first line), --first-id N (ids are not
1, 2, ... so that a reader that gets the byte order wrong fails), --user-info USER:PASSWORD (basic
auth), --token T (a bearer token; with both, either is accepted), --cert/--key (https).
"""
import argparse
import base64
import http.server
import json
import ssl
import sys
import threading
import urllib.parse

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Store:
    def __init__(self, first_id):
        self.lock = threading.Lock()
        self.next_id = first_id
        self.by_id = {}  # id -> {"schema", "schemaType", "references"}
        self.subjects = {}  # subject -> [id, ...] (version = index + 1)

    @staticmethod
    def key(schema):
        return json.dumps([schema["schema"], schema.get("schemaType", "AVRO"), schema.get("references", [])],
                          sort_keys=True)

    def find(self, schema):
        wanted = self.key(schema)
        for schema_id, known in self.by_id.items():
            if self.key(known) == wanted:
                return schema_id
        return None

    def register(self, subject, schema):
        with self.lock:
            schema_id = self.find(schema)
            if schema_id is None:
                schema_id = self.next_id
                self.next_id += 1
                self.by_id[schema_id] = {"schema": schema["schema"],
                                         "schemaType": schema.get("schemaType", "AVRO"),
                                         "references": schema.get("references", [])}
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def answer(self, schema_id, subject=None):
        known = self.by_id[schema_id]
        out = {"schema": known["schema"], "references": known["references"]}
        if known["schemaType"] != "AVRO":
            out["schemaType"] = known["schemaType"]
        if subject is not None:
            out.update({"subject": subject, "version": self.subjects[subject].index(schema_id) + 1, "id": schema_id})
        return out


def make_handler(store, user_info, token):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            sys.stderr.write("registry: %s\n" % (args[0] % args[1:]))

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def not_found(self, code, message):
            self.reply(404, {"error_code": code, "message": message})

        def authorized(self):
            # Either credential that is configured is accepted (the serializers use basic auth).
            header = self.headers.get("Authorization", "")
            accepted = []
            if token is not None:
                accepted.append("Bearer " + token)
            if user_info is not None:
                accepted.append("Basic " + base64.b64encode(user_info.encode()).decode())
            ok = not accepted or header in accepted
            if not ok:
                self.reply(401, {"error_code": 40101, "message": "Unauthorized"})
            return ok

        def path_parts(self):
            path = urllib.parse.urlparse(self.path).path
            return [urllib.parse.unquote(p) for p in path.strip("/").split("/") if p]

        def do_GET(self):
            if not self.authorized():
                return
            parts = self.path_parts()
            with store.lock:
                if parts[:2] == ["schemas", "ids"] and len(parts) == 3 and parts[2].isdigit():
                    schema_id = int(parts[2])
                    if schema_id not in store.by_id:
                        return self.not_found(40403, "Schema %d not found" % schema_id)
                    return self.reply(200, store.answer(schema_id))
                if parts == ["subjects"]:
                    return self.reply(200, sorted(store.subjects))
                if len(parts) == 4 and parts[0] == "subjects" and parts[2] == "versions":
                    versions = store.subjects.get(parts[1])
                    if not versions:
                        return self.not_found(40401, "Subject '%s' not found." % parts[1])
                    if parts[3] == "latest":
                        index = len(versions) - 1
                    elif parts[3].lstrip("-").isdigit():
                        index = int(parts[3]) - 1 if int(parts[3]) > 0 else len(versions) + int(parts[3])
                    else:
                        return self.not_found(40402, "Version not found.")
                    if not 0 <= index < len(versions):
                        return self.not_found(40402, "Version not found.")
                    return self.reply(200, store.answer(versions[index], parts[1]))
                if parts[:1] == ["config"]:
                    return self.reply(200, {"compatibilityLevel": "NONE"})
            self.not_found(404, "no such endpoint")

        def do_POST(self):
            if not self.authorized():
                return
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            parts = self.path_parts()
            if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                return self.reply(200, {"id": store.register(parts[1], body)})
            if len(parts) == 2 and parts[0] == "subjects":
                with store.lock:
                    schema_id = store.find(body)
                    if schema_id is None or schema_id not in store.subjects.get(parts[1], []):
                        return self.not_found(40403, "Schema not found")
                    return self.reply(200, store.answer(schema_id, parts[1]))
            self.not_found(404, "no such endpoint")

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--first-id", type=int, default=1)
    parser.add_argument("--user-info")
    parser.add_argument("--token")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    store = Store(args.first_id)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(store, args.user_info, args.token))
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
