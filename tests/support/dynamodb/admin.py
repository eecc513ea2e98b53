#!/usr/bin/env python3
"""What the DynamoDB tests do to the server besides dedupctl's own calls, through boto3 against
ENDPOINT (moto's server in tests/support/dynamodb):

  create-table ENDPOINT REGION TABLE [SORT_KEY]   a Powertools table: partition key id (S), and a
                                                  sort key (S) when given (not "-"); TTL on
                                                  `expiration`, or on TTL_ATTRIBUTE given next ("" for none)
  create-user ENDPOINT                            an IAM user allowed dynamodb:*, sts:* and iam:*, its access
                                                  key printed as "KEY_ID SECRET" (moto then checks
                                                  every signature against it)
  create-role ENDPOINT                            a role for web identity, its ARN printed
  delete-item ENDPOINT REGION TABLE ID            removes one record, as a cleanup job would
  put-item ENDPOINT REGION TABLE ITEM_JSON         one item, in DynamoDB's JSON
  scan-json ENDPOINT REGION TABLE                 prints what `aws dynamodb scan --output json` prints,
                                                  by the AWS CLI itself
  put-items ENDPOINT REGION TABLE PREFIX N EXPIRATION
                                                  N COMPLETED records PREFIX#0…, BatchWriteItem
  powertools ENDPOINT REGION TABLE SORT_KEY STATIC_PK ID…
                                                  each ID through Powertools for Python's own
                                                  DynamoDBPersistenceLayer with a static partition
                                                  key and the hash as the sort key (key prefix charge)
Credentials come from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
"""
import json
import sys

import boto3


def client(service, endpoint, region="us-east-1"):
    return boto3.client(service, endpoint_url=endpoint, region_name=region)


def main(argv):
    command, endpoint = argv[1], argv[2]
    if command == "create-table":
        region, table = argv[3], argv[4]
        schema = [{"AttributeName": "id", "KeyType": "HASH"}]
        attributes = [{"AttributeName": "id", "AttributeType": "S"}]
        if len(argv) > 5 and argv[5] != "-":
            schema.append({"AttributeName": argv[5], "KeyType": "RANGE"})
            attributes.append({"AttributeName": argv[5], "AttributeType": "S"})
        ddb = client("dynamodb", endpoint, region)
        ddb.create_table(TableName=table, KeySchema=schema, AttributeDefinitions=attributes,
                         BillingMode="PAY_PER_REQUEST")
        ttl = argv[6] if len(argv) > 6 else "expiration"
        if ttl:
            ddb.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl})
    elif command == "create-user":
        iam = client("iam", endpoint)
        iam.create_user(UserName="dedupctl-test")
        policy = {"Version": "2012-10-17",
                  "Statement": [{"Effect": "Allow", "Action": ["dynamodb:*", "sts:*", "iam:*"], "Resource": "*"}]}
        iam.put_user_policy(UserName="dedupctl-test", PolicyName="all", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="dedupctl-test")["AccessKey"]
        print(key["AccessKeyId"], key["SecretAccessKey"])
    elif command == "create-role":
        iam = client("iam", endpoint)
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Federated": "*"},
                                                          "Action": "sts:AssumeRoleWithWebIdentity"}]}
        role = iam.create_role(RoleName="dedupctl-reader", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"}]}
        iam.put_role_policy(RoleName="dedupctl-reader", PolicyName="all", PolicyDocument=json.dumps(policy))
        print(role["Arn"])
    elif command == "delete-item":
        region, table, key = argv[3], argv[4], argv[5]
        client("dynamodb", endpoint, region).delete_item(TableName=table, Key={"id": {"S": key}})
    elif command == "put-item":
        region, table, item = argv[3], argv[4], argv[5]
        client("dynamodb", endpoint, region).put_item(TableName=table, Item=json.loads(item))
    elif command == "scan-json":
        region, table = argv[3], argv[4]
        from awscli.clidriver import main as aws
        sys.argv = ["aws", "--endpoint-url", endpoint, "--region", region, "dynamodb", "scan", "--table-name", table,
                    "--output", "json"]
        sys.exit(aws())
    elif command == "powertools":
        region, table, sort_key, static_pk, ids = argv[3], argv[4], argv[5], argv[6], argv[7:]
        from aws_lambda_powertools.utilities.idempotency import (DynamoDBPersistenceLayer, IdempotencyConfig,
                                                                 idempotent_function)
        layer = DynamoDBPersistenceLayer(table_name=table, sort_key_attr=sort_key, static_pk_value=static_pk,
                                         boto3_client=client("dynamodb", endpoint, region))

        @idempotent_function(data_keyword_argument="event_id", persistence_store=layer,
                             config=IdempotencyConfig(expires_after_seconds=86400 * 30), key_prefix="charge")
        def charge(event_id):
            return {"charged": event_id}

        for event_id in ids:
            charge(event_id=event_id)
    elif command == "put-items":
        region, table, prefix, count, expiration = argv[3], argv[4], argv[5], int(argv[6]), argv[7]
        ddb = client("dynamodb", endpoint, region)
        for start in range(0, count, 25):
            items = [{"PutRequest": {"Item": {"id": {"S": f"{prefix}#{i}"}, "status": {"S": "COMPLETED"},
                                              "expiration": {"N": expiration}}}}
                     for i in range(start, min(count, start + 25))]
            ddb.batch_write_item(RequestItems={table: items})
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
