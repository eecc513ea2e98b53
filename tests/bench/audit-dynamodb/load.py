#!/usr/bin/env python3
"""Loads the bench's table: N items dedup:evt-000000000000 … of which every tenth is left out (90%
of the events recorded, as bench_dedup_keys does for Redis), COMPLETED with a day to live, by
BatchWriteItem from several threads.   load.py ENDPOINT TABLE N"""
import concurrent.futures
import sys
import time

import boto3

endpoint, table, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="eu-west-1")
ddb.create_table(TableName=table, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                 AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
expiration = str(int(time.time()) + 86400)


def write(start):
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="eu-west-1")
    for chunk in range(start, min(n, start + 10000), 25):
        items = [{"PutRequest": {"Item": {"id": {"S": "dedup:evt-%012d" % i}, "status": {"S": "COMPLETED"},
                                          "expiration": {"N": expiration}}}}
                 for i in range(chunk, min(n, start + 10000, chunk + 25)) if i % 10 != 0]
        while items:
            answer = client.batch_write_item(RequestItems={table: items})
            items = answer.get("UnprocessedItems", {}).get(table, [])


with concurrent.futures.ThreadPoolExecutor(4) as pool:
    list(pool.map(write, range(0, n, 10000)))
