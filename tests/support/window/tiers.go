package main

// The tiered consumer of docs/windows.md "Tiers", as teams layer their dedup: the guide's in-process
// WindowDedup first, then a Redis key per id with a TTL (go-redis), then a PostgreSQL inbox row
// (pgx). An event found in any tier is skipped; a new one is applied and recorded in every tier.
//
//	window-consumer tiers --brokers B --topic T --from OFFSET --count N --capacity C
//	    --redis HOST:PORT --key-prefix P --ttl-ms MS --postgres DSN --consumer NAME
//	reads partition 0 of T from OFFSET (where a seek put the group), N records, and prints a line a
//	record: PARTITION OFFSET ID applied|skipped TIER (TIER: memory, redis, postgres, or - when applied)

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
)

type tiered struct {
	window   *WindowDedup
	redis    *redis.Client
	prefix   string
	ttl      time.Duration
	inbox    *pgx.Conn
	consumer string
}

// The first tier that holds the id, or "" when none does.
func (t *tiered) holder(ctx context.Context, id string) (string, error) {
	if t.window.IsDuplicate(id) { // the window remembers it from here on, as the guide's does
		return "memory", nil
	}
	n, err := t.redis.Exists(ctx, t.prefix+id).Result()
	if err != nil {
		return "", err
	}
	if n > 0 {
		return "redis", nil
	}
	var found int
	err = t.inbox.QueryRow(ctx, "SELECT count(*) FROM processed_events WHERE consumer_name = $1 AND event_id = $2",
		t.consumer, id).Scan(&found)
	if err != nil {
		return "", err
	}
	if found > 0 {
		return "postgres", nil
	}
	return "", nil
}

// What the consumer records once it applied the event: a key in Redis, a row in the inbox.
func (t *tiered) record(ctx context.Context, id string) error {
	if err := t.redis.Set(ctx, t.prefix+id, "1", t.ttl).Err(); err != nil {
		return err
	}
	_, err := t.inbox.Exec(ctx, "INSERT INTO processed_events (event_id, consumer_name, processed_at, status) "+
		"VALUES ($1, $2, now(), 'done') ON CONFLICT DO NOTHING", id, t.consumer)
	return err
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "window-consumer:", err)
	os.Exit(3)
}

func tiers(args []string) {
	fs := flag.NewFlagSet("tiers", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	from := fs.Int64("from", 0, "the offset of partition 0 to start at")
	count := fs.Int("count", 0, "records to read")
	capacity := fs.Int("capacity", 0, "the window's ids")
	redisAddr := fs.String("redis", "", "HOST:PORT")
	prefix := fs.String("key-prefix", "", "the Redis key is this and the id")
	ttl := fs.Int64("ttl-ms", 0, "the Redis key's TTL")
	dsn := fs.String("postgres", "", "the inbox's conninfo")
	consumer := fs.String("consumer", "", "the inbox's consumer_name")
	header := fs.String("id-header", "event_id", "the header holding the event id")
	_ = fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inbox, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		fail(err)
	}
	defer inbox.Close(ctx)
	t := &tiered{NewWindowDedup("lru", *capacity, 0, 0), redis.NewClient(&redis.Options{Addr: *redisAddr}), *prefix,
		time.Duration(*ttl) * time.Millisecond, inbox, *consumer}
	client, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: {0: kgo.NewOffset().At(*from)}}))
	if err != nil {
		fail(err)
	}
	defer client.Close()
	for seen := 0; seen < *count; {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			fail(fmt.Errorf("read %d of %d records in 60 s", seen, *count))
		}
		var failed error
		fetches.EachRecord(func(r *kgo.Record) {
			if failed != nil || seen >= *count {
				return
			}
			id := ""
			for _, h := range r.Headers {
				if h.Key == *header {
					id = string(h.Value)
				}
			}
			tier, err := t.holder(ctx, id)
			if err == nil && tier == "" {
				err = t.record(ctx, id)
			}
			if err != nil {
				failed = err
				return
			}
			decision := "skipped " + tier
			if tier == "" {
				decision = "applied -"
			}
			fmt.Printf("%d %d %s %s\n", r.Partition, r.Offset, id, decision)
			seen++
		})
		if failed != nil {
			fail(failed)
		}
	}
}
