#!/usr/bin/env python3
"""A hand-written Kafka consumer that deduplicates in Redis and applies its effect in PostgreSQL, in
separate steps, as many teams write one: confluent-kafka reads the topic in a group; for each event
it claims the key dedup:billing:<event_id> with SET NX EX (the claim is the record: it does not tell
"in progress" from "done"), inserts the effect row into `charges` (psycopg, autocommit), then
completes the record (SET XX EX, "done"). A delivery whose claim fails is skipped. The offset is
committed after the event (at least once).

  --effects-topic T       the effect is a record produced to topic T (header event_id, flushed)
                          instead of a row; each id produced is also appended to --applied
  --inbox                 the record is a row of the inbox table processed_events (event_id,
                          processed_at) in --pg instead: INSERT … ON CONFLICT DO NOTHING is the
                          claim, committed on its own, before the effect; nothing to complete
  --ttl S                 the record's TTL
  --max N                 stop after N events
  --crash-after-claim ID  die (os._exit, as SIGKILL) after claiming this event, before its effect
  --crash-after-effect ID die after this event's effect, before its record is completed
Stops when the group's partitions are read to their end (or --max). Prints nothing on success.
"""
import json
import os
import sys

import psycopg
import redis
from confluent_kafka import Producer
from group_loop import consume_group, group_arguments


def parse_args():
    parser = group_arguments()
    parser.add_argument("--pg", default="", help="libpq conninfo")
    parser.add_argument("--effects-topic", default="")
    parser.add_argument("--inbox", action="store_true")
    parser.add_argument("--applied", default="")
    parser.add_argument("--ttl", type=int, default=3600)
    parser.add_argument("--max", type=int, default=0)
    parser.add_argument("--crash-after-claim", default="")
    parser.add_argument("--crash-after-effect", default="")
    return parser.parse_args()


def main():
    args = parse_args()
    store = redis.Redis(host="127.0.0.1", port=args.redis_port)
    effects = psycopg.connect(args.pg, autocommit=True) if args.pg else None
    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True}) if args.effects_topic else None
    applied = open(args.applied, "a", encoding="utf-8") if args.applied else None

    def apply(event_id):
        if producer:
            producer.produce(args.effects_topic, value=json.dumps({"charged": event_id}).encode(),
                             headers=[("event_id", event_id.encode())])
            if producer.flush(30) != 0:
                raise RuntimeError("the effect record was not delivered")
            applied.write(event_id + "\n")
            applied.flush()
        else:
            effects.execute("INSERT INTO charges (event_id) VALUES (%s)", (event_id,))

    def claim(event_id):
        if args.inbox:
            return effects.execute("INSERT INTO processed_events (event_id, processed_at) VALUES (%s, now()) "
                                   "ON CONFLICT DO NOTHING", (event_id,)).rowcount == 1
        return store.set("dedup:billing:" + event_id, "1", nx=True, ex=args.ttl)

    def complete(event_id):
        if not args.inbox:
            store.set("dedup:billing:" + event_id, "done", xx=True, ex=args.ttl)

    def handle(message):
        event_id = json.loads(message.value())["event_id"]
        if claim(event_id):
            if event_id == args.crash_after_claim:
                os._exit(9)  # claimed, never applied: every later delivery skips it
            apply(event_id)
            if event_id == args.crash_after_effect:
                os._exit(9)  # applied, its record still the claim
            complete(event_id)

    code = consume_group(args.bootstrap, args.topic, args.group, handle, args.max)
    if effects:
        effects.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
