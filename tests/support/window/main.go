// window-consumer: the guide's WindowDedup (window_dedup.go) as a Kafka consumer of the tests, and
// the filter's own answers for the unit tier's vectors.
//
//	window-consumer consume --brokers B --topic T --count N --layout L --capacity N [--bloom-items N --bloom-fp P]
//	    reads the topic's N first records (every partition, from the start), decides each through one
//	    WindowDedup in the order they arrive, and prints a line a record: PARTITION OFFSET ID applied|skipped
//	window-consumer decide --layout L --capacity N [--bloom-items N --bloom-fp P] < IDS
//	    decides each line of stdin, an id, through one WindowDedup: prints ID applied|skipped
//	window-consumer vectors --bloom-items N --bloom-fp P --add PREFIX:COUNT --test PREFIX:COUNT
//	    prints m and k of NewWithEstimates, then the test ids the filter says "maybe" for
//	window-consumer dump --bloom-items N --bloom-fp P --out FILE < IDS
//	    adds each line of stdin, an id, to NewWithEstimates's filter and writes it to FILE with WriteTo,
//	    as a service that keeps its filter across restarts does
//	window-consumer tiers …
//	    the window, then Redis, then a PostgreSQL inbox (tiers.go)
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: window-consumer consume|decide|vectors|dump|tiers [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "consume":
		consume(os.Args[2:])
	case "vectors":
		vectors(os.Args[2:])
	case "decide":
		decide(os.Args[2:])
	case "dump":
		dump(os.Args[2:])
	case "tiers":
		tiers(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "window-consumer: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func consume(args []string) {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	count := fs.Int("count", 0, "records to read")
	layout := fs.String("layout", "lru", "lru, lru-bloom or bloom-exact")
	capacity := fs.Int("capacity", 0, "the window's ids")
	items := fs.Uint("bloom-items", 0, "the Bloom's expected ids")
	fp := fs.Float64("bloom-fp", 0, "the Bloom's false-positive rate")
	header := fs.String("id-header", "event_id", "the header holding the event id")
	_ = fs.Parse(args)
	client, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "window-consumer:", err)
		os.Exit(3)
	}
	defer client.Close()
	window := NewWindowDedup(*layout, *capacity, *items, *fp)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for seen := 0; seen < *count; {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "window-consumer: read %d of %d records in 60 s\n", seen, *count)
			os.Exit(3)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			id := ""
			for _, h := range r.Headers {
				if h.Key == *header {
					id = string(h.Value)
				}
			}
			decision := "applied"
			if window.IsDuplicate(id) {
				decision = "skipped"
			}
			fmt.Printf("%d %d %s %s\n", r.Partition, r.Offset, id, decision)
			seen++
		})
	}
}

func vectors(args []string) {
	fs := flag.NewFlagSet("vectors", flag.ExitOnError)
	items := fs.Uint("bloom-items", 0, "expected ids")
	fp := fs.Float64("bloom-fp", 0, "false-positive rate")
	add := fs.String("add", "", "PREFIX:COUNT ids added")
	test := fs.String("test", "", "PREFIX:COUNT ids tested")
	_ = fs.Parse(args)
	filter := bloom.NewWithEstimates(*items, *fp)
	fmt.Printf("m=%d k=%d\n", filter.Cap(), filter.K())
	each(*add, func(id string) { filter.AddString(id) })
	each(*test, func(id string) {
		if filter.TestString(id) {
			fmt.Println(id)
		}
	})
}

func each(spec string, f func(string)) {
	parts := strings.SplitN(spec, ":", 2)
	n, _ := strconv.Atoi(parts[1])
	for i := 0; i < n; i++ {
		f(parts[0] + strconv.Itoa(i))
	}
}

func decide(args []string) {
	fs := flag.NewFlagSet("decide", flag.ExitOnError)
	layout := fs.String("layout", "lru", "lru, lru-bloom or bloom-exact")
	capacity := fs.Int("capacity", 0, "the window's ids")
	items := fs.Uint("bloom-items", 0, "the Bloom's expected ids")
	fp := fs.Float64("bloom-fp", 0, "the Bloom's false-positive rate")
	_ = fs.Parse(args)
	window := NewWindowDedup(*layout, *capacity, *items, *fp)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		decision := "applied"
		if window.IsDuplicate(in.Text()) {
			decision = "skipped"
		}
		fmt.Println(in.Text(), decision)
	}
}

func dump(args []string) {
	fs := flag.NewFlagSet("dump", flag.ExitOnError)
	items := fs.Uint("bloom-items", 0, "expected ids")
	fp := fs.Float64("bloom-fp", 0, "false-positive rate")
	out := fs.String("out", "", "the file WriteTo writes")
	_ = fs.Parse(args)
	filter := bloom.NewWithEstimates(*items, *fp)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		filter.AddString(in.Text())
	}
	file, err := os.Create(*out)
	if err == nil {
		_, err = filter.WriteTo(file)
	}
	if err == nil {
		err = file.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "window-consumer:", err)
		os.Exit(1)
	}
}
