#!/usr/bin/env python3
"""Serializes test records with confluent-kafka's own serializers (PyPI: confluent-kafka
[avro,json,protobuf,schemaregistry]), registering their schemas in the registry at --registry, as a
producer of those shops does. Reads a JSON plan on stdin, writes one JSON line a record on stdout
with the bytes in hex ({"key": hex|null, "value": hex|null}); the C++ tests produce them to Kafka.

Plan: {"topic": T, "registry_user_info": optional, "registry_ca": optional, "references": [{"subject", "format", "schema"}],
       "records": [{"value": SERIALIZED, "key": SERIALIZED|string|null}]}
SERIALIZED: {"format": "avro"|"json"|"protobuf", "schema": text, "data": object,
             "references": [{"name", "subject", "version"}] (avro, json),
             "message": full name (protobuf; "schema" and each of "files" are FileDescriptorProto in
             protobuf's text format, "files" the imports, added first)}
            or {"hex": "..."} for bytes as they are (a bad frame, an unknown id).
"""
import argparse
import json
import sys

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--registry", required=True)
    args = parser.parse_args()
    plan = json.load(sys.stdin)
    conf = {"url": args.registry}
    if plan.get("registry_user_info"):
        conf["basic.auth.user.info"] = plan["registry_user_info"]
    if plan.get("registry_ca"):
        conf["ssl.ca.location"] = plan["registry_ca"]
    client = SchemaRegistryClient(conf)
    for ref in plan.get("references", []):
        schema_type = {"avro": "AVRO", "json": "JSON"}[ref["format"]]
        client.register_schema(ref["subject"], Schema(ref["schema"], schema_type,
                                                      [SchemaReference(**r) for r in ref.get("references", [])]))
    serializers = {}

    def serializer(spec):
        key = json.dumps({k: v for k, v in spec.items() if k != "data"}, sort_keys=True)
        if key in serializers:
            return serializers[key]
        refs = [SchemaReference(**r) for r in spec.get("references", [])]
        conf = {"auto.register.schemas": True}
        if spec["format"] == "avro":
            made = AvroSerializer(client, Schema(spec["schema"], "AVRO", refs), conf=conf)
        elif spec["format"] == "json":
            made = JSONSerializer(Schema(spec["schema"], "JSON", refs), client, conf=conf)
        else:
            # A pool per schema: an upgraded orders.proto is another file of the same name.
            pool = descriptor_pool.DescriptorPool()
            for text in spec.get("files", []) + [spec["schema"]]:
                file = text_format.Parse(text, descriptor_pb2.FileDescriptorProto())
                try:
                    pool.FindFileByName(file.name)
                except KeyError:
                    pool.Add(file)
            message_class = message_factory.GetMessageClass(pool.FindMessageTypeByName(spec["message"]))
            made = (ProtobufSerializer(message_class, client, conf={"auto.register.schemas": True,
                                                                     "use.deprecated.format": False}),
                    message_class)
        serializers[key] = made
        return made

    def serialize(spec, field):
        if spec is None:
            return None
        if isinstance(spec, str):
            return spec.encode().hex()
        if "hex" in spec:
            return spec["hex"]
        ctx = SerializationContext(plan["topic"], field)
        made = serializer(spec)
        if spec["format"] == "protobuf":
            protobuf_serializer, message_class = made
            message = message_class()
            text_format.Parse(spec["data"], message) if isinstance(spec["data"], str) else \
                message.ParseFromString(b"")
            return protobuf_serializer(message, ctx).hex()
        return made(spec["data"], ctx).hex()

    for record in plan["records"]:
        out = {"key": serialize(record.get("key"), MessageField.KEY),
               "value": serialize(record.get("value"), MessageField.VALUE)}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
