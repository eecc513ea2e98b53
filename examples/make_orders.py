#!/usr/bin/env python3
"""Writes examples/orders.ndjson: kcat -J envelopes of an `orders` topic (4 partitions, keyed by
order) over two days, with the log-level problems dedupctl scan must find planted in it:

- 3 producer retries: the same event (id and payload) again a few seconds later;
- 1 id reused for 3 different payloads (a producer that used the order id as the event id): 2 id-reuse;
- 2 retries with a new id: the same payload under a fresh event id 20 s later (semantic duplicates);
- 5 events without an event id (a legacy producer: no header, no event_id field);
- and, clean, a burst of 30 orders in the last hour (the records a 1h TTL still holds).

Deterministic; run it again only to change the data, and update the expected numbers in
tests/cli/test_cli_scan.cpp and docs/commands.md (the scan example) when you do.
"""
import json
import random
import uuid

random.seed(20261120)
BASE = 1_795_305_600_000  # 2026-11-22T00:00:00Z; the seeder rebases to now with --rebase-now
PARTITIONS = 4
rows = []  # (partition, ts, key, payload dict or raw str, headers list)


def event(ts, order, etype, fields, event_id=None, header=True, in_payload=True):
    partition = int(order.split("-")[1]) % PARTITIONS
    payload = {"type": etype, "order_id": order, **fields}
    if event_id and in_payload:
        payload = {"event_id": event_id, **payload}
    headers = ["event_id", event_id, "type", etype] if event_id and header else ["type", etype]
    rows.append([partition, ts, order, payload, headers])
    return rows[-1]


def new_id():
    return str(uuid.UUID(int=random.getrandbits(128), version=4))


t = BASE - 2 * 86_400_000
for n in range(1000, 1100):
    order = f"order-{n}"
    t += random.randint(60_000, 1_600_000)
    amount = random.randint(500, 50_000)
    event(t, order, "OrderPlaced", {"amount_cents": amount, "customer": f"c-{random.randint(1, 400)}"}, new_id())
    event(t + 4_000, order, "PaymentCharged", {"amount_cents": amount, "psp_ref": f"ch_{random.getrandbits(48):012x}"},
          new_id())
    if n % 3 == 0:
        event(t + 3_600_000, order, "OrderShipped", {"carrier": random.choice(["dhl", "ups", "gls"])}, new_id())

# The last hour: a clean burst of 30 orders (the dedup records a 1h TTL still holds).
t = BASE - 55 * 60_000
for n in range(2000, 2030):
    order = f"order-{n}"
    t += random.randint(60_000, 110_000)
    amount = random.randint(500, 50_000)
    event(t, order, "OrderPlaced", {"amount_cents": amount, "customer": f"c-{random.randint(1, 400)}"}, new_id())
    event(t + 3_000, order, "PaymentCharged", {"amount_cents": amount, "psp_ref": f"ch_{random.getrandbits(48):012x}"},
          new_id())

# Producer retries: the same record again, 2 s later (acks timed out, the producer sent it again).
for index in (10, 57, 140):
    p, ts, key, payload, headers = rows[index]
    rows.append([p, ts + 2_000, key, dict(payload), list(headers)])

# One id reused for different payloads: a producer that set event_id = order id.
for amount in (1200, 3400, 5600):
    event(BASE - 5 * 3_600_000 + amount, "order-1042", "RefundIssued", {"amount_cents": amount}, "order-1042")

# Retries with a new id: same payload, a fresh event id, 20 s later.
for index in (33, 201):
    p, ts, key, payload, headers = rows[index]
    fresh = new_id()
    retried = {k: v for k, v in payload.items()}
    retried["event_id"] = fresh
    rows.append([p, ts + 20_000, key, retried, ["event_id", fresh, "type", headers[headers.index("type") + 1]]])

# A legacy producer without ids.
for i in range(5):
    order = f"order-{1200 + i}"
    event(BASE - 3 * 3_600_000 + i * 90_000, order, "InvoiceSent", {"invoice": f"INV-{9000 + i}"}, None)

rows.sort(key=lambda r: (r[0], r[1]))
offsets = [0] * PARTITIONS
with open("examples/orders.ndjson", "w") as out:
    for p, ts, key, payload, headers in rows:
        envelope = {"topic": "orders", "partition": p, "offset": offsets[p], "tstype": "create", "ts": ts,
                    "broker": 1, "headers": headers, "key": key,
                    "payload": json.dumps(payload, separators=(",", ":"))}
        offsets[p] += 1
        out.write(json.dumps(envelope, separators=(",", ":")) + "\n")
print(f"{len(rows)} events, per partition {offsets}")
