// A Kafka Streams application deduplicating as the guides' processor does (kafka-streams-examples'
// EventDeduplicationLambdaIntegrationTest, the Confluent tutorial's deduplication-windowed): a
// persistent window store of event ids; an event whose id the store holds within [t - W/2, t + W - W/2]
// is dropped and its id put again at t; any other is put at t and forwarded. t is the record's
// timestamp (--time record) or the task's stream time (--time stream, the tutorial's current code).
// The store's changelog, <app-id>-eventId-store-changelog, is what dedupctl reads.
//
//   java -cp LIBS:CLASSES StreamsDedup --brokers B --input T --app-id A --state-dir DIR
//       --window-ms W --retention-ms R --count N [--time record|stream] [--eos]
// processes N records of partition 0 of T from the group's committed offset (earliest when none),
// prints a line a record, OFFSET ID forwarded|dropped, then closes (committing) and exits 0.
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

public class StreamsDedup {
  static final String STORE = "eventId-store";

  static final class Dedup implements Processor<byte[], byte[], byte[], byte[]> {
    private final long before;
    private final long after;
    private final boolean streamTime;
    private final AtomicInteger left;
    private final CountDownLatch done;
    private ProcessorContext<byte[], byte[]> context;
    private WindowStore<String, Long> ids;

    Dedup(long windowMs, boolean streamTime, AtomicInteger left, CountDownLatch done) {
      this.before = windowMs / 2;
      this.after = windowMs - before;
      this.streamTime = streamTime;
      this.left = left;
      this.done = done;
    }

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
      this.context = context;
      this.ids = context.getStateStore(STORE);
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
      if (left.get() <= 0) {
        return; // past the count: not processed (a later run reads it again)
      }
      Header header = record.headers().lastHeader("event_id");
      String id = header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
      long offset = context.recordMetadata().map(m -> m.offset()).orElse(-1L);
      if (id == null) {
        context.forward(record);
        System.out.println(offset + " - forwarded");
      } else {
        long t = streamTime ? context.currentStreamTimeMs() : record.timestamp();
        boolean seen;
        try (WindowStoreIterator<Long> found = ids.fetch(id, t - before, t + after)) {
          seen = found.hasNext();
        }
        ids.put(id, t, t); // a duplicate's put keeps its id from expiring; a new one's remembers it
        if (!seen) {
          context.forward(record);
        }
        System.out.println(offset + " " + id + (seen ? " dropped" : " forwarded"));
      }
      System.out.flush();
      if (left.decrementAndGet() == 0) {
        done.countDown();
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> flags = new HashMap<>();
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--eos")) {
        flags.put("eos", "true");
      } else {
        flags.put(args[i].substring(2), args[++i]);
      }
    }
    long windowMs = Long.parseLong(flags.get("window-ms"));
    long retentionMs = Long.parseLong(flags.get("retention-ms"));
    boolean streamTime = "stream".equals(flags.getOrDefault("time", "record"));
    AtomicInteger left = new AtomicInteger(Integer.parseInt(flags.get("count")));
    CountDownLatch done = new CountDownLatch(1);

    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, flags.get("app-id"));
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, flags.get("brokers"));
    props.put(StreamsConfig.STATE_DIR_CONFIG, flags.get("state-dir"));
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0); // every put reaches the changelog
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), 1);
    if (flags.containsKey("eos")) {
      props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    }

    StreamsBuilder builder = new StreamsBuilder();
    builder.addStateStore(Stores.windowStoreBuilder(
        Stores.persistentWindowStore(STORE, Duration.ofMillis(retentionMs), Duration.ofMillis(windowMs), false),
        Serdes.String(), Serdes.Long()));
    builder.stream(flags.get("input"), Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .process(() -> new Dedup(windowMs, streamTime, left, done), STORE);

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    streams.setUncaughtExceptionHandler(e -> {
      System.err.println("StreamsDedup: " + e);
      System.exit(3);
      return null;
    });
    streams.start();
    if (!done.await(120, TimeUnit.SECONDS)) {
      System.err.println("StreamsDedup: " + left.get() + " records not processed in 120 s");
      System.exit(3);
    }
    // Leave the group on the way out, so that its offsets can be sought at once (a group with a member
    // refuses a commit from outside it), as an operator stops every instance before a seek.
    streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
        .withTimeout(Duration.ofSeconds(30)));
    System.exit(0);
  }
}
