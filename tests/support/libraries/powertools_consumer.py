#!/usr/bin/env python3
"""A Kafka consumer that deduplicates through Powertools for AWS Lambda (Python), as a team's
consumer would: confluent-kafka reads the topic in a group, and every event goes through
@idempotent_function with Powertools' own CachePersistenceLayer on Redis, keyed by the event id.
The handler "charges" by appending the event id to --applied; so the ids the library let through
are exactly the lines written.

  --expires S        the idempotency window (expires_after_seconds)
  --lease-ms MS      the time left that the Lambda context reports: Powertools writes
                     in_progress_expiration = now + MS into the claim
  --max N            stop after N events
  --crash-on ID      die (SIGKILL-like os._exit) inside the handler of this event, leaving its claim
  --commit-first     commit an event's offset before handling it (at-most-once), after it otherwise
  --effects-key P    the handler's effect besides --applied: INCR of the Redis key P + id, written in a
                     step of its own (so a count of 2 is an event charged twice)
  --lose-effect ID   the handler returns as if done without writing this event's effect (an effect
                     write that failed silently): Powertools completes the record all the same
  --dynamodb URL     keep the records in DynamoDB at URL (table --table, region eu-west-1, credentials
                     from the environment) through Powertools' DynamoDBPersistenceLayer, the default
                     store of every runtime, rather than in Redis (--redis-port)
  --table T          the DynamoDB table
  --crash-after-effect ID
                     die inside the handler of this event after its effect, before Powertools
                     completes the record: the claim stays INPROGRESS over an applied effect
  --judge FILE       no Kafka: call the idempotent function once for each event id in FILE (one a
                     line, over the records the test planted) and print, a line each, the id, a tab
                     and what the library did: applied, skipped (it returned the saved response),
                     in-progress (IdempotencyAlreadyInProgressError) or error:<exception> (the delivery
                     fails: neither applied nor skipped)
Stops when the group's partitions are read to their end (or --max). Prints nothing on success.
"""
import json
import os
import sys

import redis
from group_loop import consume_group, group_arguments

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError
from aws_lambda_powertools.utilities.idempotency.persistence.cache import CachePersistenceLayer


class LambdaContext:
    function_name = "test-func"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:eu-west-1:000000000000:function:test-func"
    aws_request_id = "dedupctl-test"

    def __init__(self, remaining_ms):
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self):
        return self.remaining_ms


def parse_args():
    parser = group_arguments()
    parser.add_argument("--applied", required=True)
    parser.add_argument("--expires", type=int, default=3600)
    parser.add_argument("--lease-ms", type=int, default=60000)
    parser.add_argument("--max", type=int, default=0)
    parser.add_argument("--crash-on", default="")
    parser.add_argument("--commit-first", action="store_true")
    parser.add_argument("--effects-key", default="")
    parser.add_argument("--lose-effect", default="")
    parser.add_argument("--crash-after-effect", default="")
    parser.add_argument("--dynamodb", default="")
    parser.add_argument("--table", default="")
    parser.add_argument("--judge", default="")
    return parser.parse_args()


# At module level, as a team writes it: Powertools names the key after the function,
# "test-func.__main__.charge#<md5 of the id as JSON>".
args = parse_args()
client = redis.Redis(host="127.0.0.1", port=args.redis_port) if args.redis_port else None
if args.dynamodb:
    import boto3
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    layer = DynamoDBPersistenceLayer(table_name=args.table, boto3_client=boto3.client(
        "dynamodb", endpoint_url=args.dynamodb, region_name="eu-west-1"))
else:
    layer = CachePersistenceLayer(client=client)
config = IdempotencyConfig(expires_after_seconds=args.expires)
config.register_lambda_context(LambdaContext(args.lease_ms))
applied = open(args.applied, "a", encoding="utf-8")


@idempotent_function(data_keyword_argument="event_id", persistence_store=layer, config=config)
def charge(event_id):
    if event_id == args.crash_on:
        applied.flush()
        os._exit(9)  # killed mid-event: the claim stays INPROGRESS
    applied.write(event_id + "\n")
    applied.flush()
    if args.effects_key and event_id != args.lose_effect:
        client.incr(args.effects_key + event_id)
    if event_id == args.crash_after_effect:
        os._exit(9)  # the effect is written, the record stays INPROGRESS
    return {"charged": event_id}


def judge(path):
    """What the library does with each id's planted record, one delivery each."""
    with open(path, encoding="utf-8") as ids:
        for event_id in ids.read().splitlines():
            before = applied.tell()
            try:
                charge(event_id=event_id)
                outcome = "applied" if applied.tell() != before else "skipped"
            except IdempotencyAlreadyInProgressError:
                outcome = "in-progress"
            except Exception as error:  # noqa: BLE001 - any other failure is the library's verdict too
                outcome = "error:" + type(error).__name__
            print(event_id + "\t" + outcome, flush=True)
    return 0


def main():
    if args.judge:
        return judge(args.judge)
    def handle(message):
        try:
            charge(event_id=json.loads(message.value())["event_id"])
        except IdempotencyAlreadyInProgressError:
            pass  # another claim holds it: the library skips this delivery

    return consume_group(args.bootstrap, args.topic, args.group, handle, args.max, args.commit_first)


if __name__ == "__main__":
    sys.exit(main())
