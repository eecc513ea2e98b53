// A Kafka consumer that deduplicates through Powertools for AWS Lambda (TypeScript), as a team's
// consumer would: kafkajs reads the topic in a group, and every event goes through makeIdempotent
// with Powertools' own CachePersistenceLayer on Redis (@redis/client), keyed by the event id under
// the prefix "billing-charge". The handler "charges" by appending the event id to --applied.
// The same flags as powertools_consumer.py: --expires S, --lease-ms MS, --max N, --crash-on ID,
// --commit-first, --dynamodb URL --table T (the records in DynamoDB through Powertools'
// DynamoDBPersistenceLayer, region eu-west-1, credentials from the environment, rather than Redis),
// and --judge FILE: no Kafka; the idempotent function called once for each event id in FILE (one a
// line, over the records the test planted), printing a line each: the id, a tab and what the library
// did (applied, skipped, in-progress, or error:<name> when the delivery fails).
// Stops at the end of the partitions as they were when it started (or --max).
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import { IdempotencyAlreadyInProgressError } from '@aws-lambda-powertools/idempotency';
import { createClient } from '@redis/client';
import { Kafka, logLevel } from 'kafkajs';

const { values: args } = parseArgs({
  options: {
    bootstrap: { type: 'string' },
    topic: { type: 'string' },
    group: { type: 'string' },
    'redis-port': { type: 'string' },
    applied: { type: 'string' },
    expires: { type: 'string', default: '3600' },
    'lease-ms': { type: 'string', default: '60000' },
    max: { type: 'string', default: '0' },
    'crash-on': { type: 'string', default: '' },
    'commit-first': { type: 'boolean', default: false },
    dynamodb: { type: 'string', default: '' },
    table: { type: 'string', default: '' },
    judge: { type: 'string', default: '' },
  },
});

let persistenceStore;
let redis;
if (args.dynamodb) {
  const { DynamoDBPersistenceLayer } = await import('@aws-lambda-powertools/idempotency/dynamodb');
  persistenceStore = new DynamoDBPersistenceLayer({
    tableName: args.table,
    clientConfig: { endpoint: args.dynamodb, region: 'eu-west-1' },
  });
} else {
  redis = await createClient({ url: `redis://127.0.0.1:${args['redis-port']}` }).connect();
  persistenceStore = new CachePersistenceLayer({ client: redis });
}
const config = new IdempotencyConfig({ expiresAfterSeconds: Number(args.expires) });
const leaseMs = Number(args['lease-ms']);
config.registerLambdaContext({
  functionName: 'billing',
  getRemainingTimeInMillis: () => leaseMs,
});
const charge = makeIdempotent(
  async (eventId) => {
    if (eventId === args['crash-on']) {
      process.exit(9); // dies mid-event, as os._exit does in the Python consumer: the claim stays INPROGRESS
    }
    appendFileSync(args.applied, `${eventId}\n`);
    return { charged: eventId };
  },
  { persistenceStore, config, keyPrefix: 'billing-charge' }
);

if (args.judge) {
  const size = () => {
    try {
      return statSync(args.applied).size;
    } catch {
      return 0;
    }
  };
  for (const eventId of readFileSync(args.judge, 'utf8').split('\n').filter((line) => line !== '')) {
    const before = size();
    let outcome;
    try {
      await charge(eventId);
      outcome = size() !== before ? 'applied' : 'skipped';
    } catch (error) {
      outcome = error instanceof IdempotencyAlreadyInProgressError ? 'in-progress' : `error:${error.name}`;
    }
    process.stdout.write(`${eventId}\t${outcome}\n`);
  }
  await redis?.quit();
  process.exit(0);
}

const kafka = new Kafka({ clientId: 'powertools-ts', brokers: [args.bootstrap], logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const ends = new Map((await admin.fetchTopicOffsets(args.topic)).map((p) => [p.partition, Number(p.high)]));
await admin.disconnect();
const consumer = kafka.consumer({ groupId: args.group, sessionTimeout: 6000, heartbeatInterval: 1000 });
await consumer.connect();
await consumer.subscribe({ topic: args.topic, fromBeginning: true });

const max = Number(args.max);
let handled = 0;
let done;
const finished = new Promise((resolve) => {
  done = resolve;
});
const reached = new Map();
const atEnd = () => [...ends].every(([p, high]) => high === 0 || (reached.get(p) ?? -1) + 1 >= high);
if (atEnd()) {
  done();
}
await consumer.run({
  autoCommit: false,
  eachMessage: async ({ topic, partition, message }) => {
    if ((max && handled >= max) || atEnd()) {
      return;
    }
    const position = [{ topic, partition, offset: String(Number(message.offset) + 1) }];
    if (args['commit-first']) {
      await consumer.commitOffsets(position);
    }
    try {
      await charge(JSON.parse(message.value.toString()).event_id);
    } catch (error) {
      if (!(error instanceof IdempotencyAlreadyInProgressError)) {
        throw error;
      }
    }
    if (!args['commit-first']) {
      await consumer.commitOffsets(position);
    }
    reached.set(partition, Number(message.offset));
    handled += 1;
    if ((max && handled >= max) || atEnd()) {
      done();
    }
  },
});
const timeout = setTimeout(() => {
  console.error('no end within 60 s');
  process.exit(3);
}, 60000);
await finished;
clearTimeout(timeout);
await consumer.disconnect();
await redis?.quit();
process.exit(0);
