#!/usr/bin/env python3
"""A consumer that keeps no dedup record: its handler is idempotent by design, a version guard, as the
guides write it. confluent-kafka reads the topic in a group; each event {"event_id", "order_id",
"version", "amount"} is applied to the projection only if its version is above the row's:

  postgres (--pg): INSERT INTO orders (id, version, amount) VALUES (…) ON CONFLICT (id) DO UPDATE SET
                   version = EXCLUDED.version, amount = EXCLUDED.amount WHERE orders.version < EXCLUDED.version
                   (no row: the first version inserts it)
  redis (--redis-port): the key order:<order_id> holds the version; a script sets it (and the amount
                   in order:<order_id>:amount) only when the event's version is above it

With --exact-numbers a version with a fraction is read as a Decimal (a numeric column's guard), not a
float.

Each event's outcome is appended to --applied as "applied <event_id>" or "dropped <event_id>". The
offset is committed after each event. Stops when the group's partitions are read to their end.
"""
import sys

from group_loop import group_arguments
from guard_loop import run_guarded

GUARD = """
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
"""


def main():
    parser = group_arguments()
    parser.add_argument("--pg", default="")
    parser.add_argument("--applied", required=True)
    parser.add_argument("--exact-numbers", action="store_true")
    args = parser.parse_args()

    def apply(event, projection, guard):
        if projection:
            return projection.execute(
                "INSERT INTO orders (id, version, amount) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "version = EXCLUDED.version, amount = EXCLUDED.amount WHERE orders.version < EXCLUDED.version",
                (event["order_id"], event["version"], event["amount"])).rowcount == 1
        key = "order:" + event["order_id"]
        return guard(keys=[key, key + ":amount"], args=[event["version"], event["amount"]]) == 1

    return run_guarded(args, GUARD, apply, args.exact_numbers)


if __name__ == "__main__":
    sys.exit(main())
