"""What the guard consumers share (guard_consumer.py, state_consumer.py): the projection they apply to,
PostgreSQL (--pg) or a Redis script (--redis-port), and the outcome line each event appends to
--applied ("applied <event_id>" or "dropped <event_id>")."""
import json

import psycopg
import redis
from group_loop import consume_group


def run_guarded(args, script, apply):
    """Consumes args.topic in args.group; apply(event, projection, guard) says whether the guard applied
    the event: projection a PostgreSQL connection (None on Redis), guard the registered Redis script."""
    projection = psycopg.connect(args.pg, autocommit=True) if args.pg else None
    store = None if projection else redis.Redis(host="127.0.0.1", port=args.redis_port)
    guard = store.register_script(script) if store else None
    out = open(args.applied, "a", encoding="utf-8")

    def handle(message):
        event = json.loads(message.value())
        applied = apply(event, projection, guard)
        out.write(("applied " if applied else "dropped ") + event["event_id"] + "\n")
        out.flush()

    code = consume_group(args.bootstrap, args.topic, args.group, handle)
    out.close()
    if projection:
        projection.close()
    return code
