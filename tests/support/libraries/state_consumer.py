#!/usr/bin/env python3
"""A consumer that keeps no dedup record: its handler is idempotent by design, a state-transition
guard, as the guides write it. confluent-kafka reads the topic in a group; each event {"event_id",
"order_id", "type"} moves its order as --transitions (the TOML dedupctl reads: [Type] from = [...],
to = "...") says, only from the states its type moves from:

  postgres (--pg): a type without `from` creates the row: INSERT INTO orders (id, status) VALUES (...)
                   ON CONFLICT (id) DO NOTHING; any other: UPDATE orders SET status = <to> WHERE id = ...
                   AND status = ANY(<from>)
  redis (--redis-port): the key order:<order_id> holds the state; a script sets it (SET NX for a type
                   that creates) only when it holds one of the type's from states

Each event's outcome is appended to --applied as "applied <event_id>" or "dropped <event_id>" (a type
the table lacks is dropped, as a handler without a case for it does). The offset is committed after
each event. Stops when the group's partitions are read to their end.
"""
import sys
import tomllib

from group_loop import group_arguments
from guard_loop import run_guarded

GUARD = """
if #ARGV == 1 then
  return redis.call('SET', KEYS[1], ARGV[1], 'NX') and 1 or 0
end
local current = redis.call('GET', KEYS[1])
for i = 2, #ARGV do
  if current == ARGV[i] then
    redis.call('SET', KEYS[1], ARGV[1])
    return 1
  end
end
return 0
"""


def main():
    parser = group_arguments()
    parser.add_argument("--pg", default="")
    parser.add_argument("--transitions", required=True)
    parser.add_argument("--applied", required=True)
    args = parser.parse_args()
    with open(args.transitions, "rb") as f:
        table = tomllib.load(f)

    def apply(event, projection, guard):
        transition = table.get(event["type"])
        if transition is None:
            return False
        if projection and "from" not in transition:
            return projection.execute(
                "INSERT INTO orders (id, status) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
                (event["order_id"], transition["to"])).rowcount == 1
        if projection:
            return projection.execute(
                "UPDATE orders SET status = %s WHERE id = %s AND status = ANY(%s)",
                (transition["to"], event["order_id"], transition["from"])).rowcount == 1
        return guard(keys=["order:" + event["order_id"]], args=[transition["to"]] + transition.get("from", [])) == 1

    return run_guarded(args, GUARD, apply)


if __name__ == "__main__":
    sys.exit(main())
