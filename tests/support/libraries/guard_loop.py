"""What the guard consumers share (guard_consumer.py, state_consumer.py): the projection they apply to,
PostgreSQL (--pg) or a Redis script (--redis-port), and the outcome line each event appends to
--applied ("applied <event_id>" or "dropped <event_id>")."""
import decimal
import json

import psycopg
import redis
from group_loop import consume_group


def run_guarded(args, script, apply, exact_numbers=False):
    """Consumes args.topic in args.group; apply(event, projection, guard) says whether the guard applied
    the event: projection a PostgreSQL connection (None on Redis), guard the registered Redis script.
    exact_numbers: a JSON number with a fraction is read as a Decimal, as a consumer whose versions are
    a numeric column's reads them (json.loads' float keeps 17 significant digits); a whole number is
    Python's exact int either way."""
    projection = psycopg.connect(args.pg, autocommit=True) if args.pg else None
    store = None if projection else redis.Redis(host="127.0.0.1", port=args.redis_port)
    guard = store.register_script(script) if store else None
    out = open(args.applied, "a", encoding="utf-8")

    def handle(message):
        event = json.loads(message.value(), parse_float=decimal.Decimal if exact_numbers else float)
        applied = apply(event, projection, guard)
        out.write(("applied " if applied else "dropped ") + event["event_id"] + "\n")
        out.flush()

    code = consume_group(args.bootstrap, args.topic, args.group, handle)
    out.close()
    if projection:
        projection.close()
    return code
