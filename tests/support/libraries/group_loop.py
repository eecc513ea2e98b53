"""The consumer loop the test consumers share (powertools_consumer.py, effects_consumer.py), as a
team's consumer runs: confluent-kafka reads the topic in a group, offsets committed by hand after each
event (before it with commit_first), until every assigned partition is read to its end (or max
events). A consumer killed mid-event holds its partition until its session times out: the broker's
shortest, so that the next run starts within seconds."""
import argparse
import sys

from confluent_kafka import Consumer, KafkaError, TopicPartition


def group_arguments():
    """The flags every test consumer takes: the cluster, the topic, the group, the Redis port."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--redis-port", type=int, default=0)
    return parser


def consume_group(bootstrap, topic, group, handle, max_events=0, commit_first=False):
    """Calls handle(message) for each record; returns the exit code (3: no events for 60 s)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
    })
    consumer.subscribe([topic])
    handled = 0
    at_end = set()
    assigned = None
    idle = 0
    while True:
        message = consumer.poll(1.0)
        if message is None:
            idle += 1
            if idle > 60:
                print("no events for 60 s", file=sys.stderr)
                return 3
            continue
        idle = 0
        if assigned is None:
            assigned = {tp.partition for tp in consumer.assignment()}
        if message.error():
            if message.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition())
                if assigned and at_end >= assigned:
                    break
                continue
            raise RuntimeError(message.error())
        at_end.discard(message.partition())
        position = [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        if commit_first:
            consumer.commit(offsets=position, asynchronous=False)
        handle(message)
        if not commit_first:
            consumer.commit(offsets=position, asynchronous=False)
        handled += 1
        if max_events and handled >= max_events:
            break
    consumer.close()
    return 0
