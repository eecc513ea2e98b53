// A Java consumer whose in-process window is an LRU (a LinkedHashMap in access order: a repeat moves
// to the front) with Guava's BloomFilter behind it, whose "maybe" means skip (lru-bloom), sized by
// BloomFilter.create(Funnels.stringFunnel(UTF_8), items, fpp). dedupctl's memory: lru-bloom with
// bloom-impl=guava must predict, id for id, what it applies and drops.
//   consume: reads the topic's --count first records (every partition, from the start) and prints a
//            line a record: PARTITION OFFSET ID applied|skipped
//   decide:  decides each line of stdin, an id, printing ID applied|skipped (the unit tier's goldens)
//   vectors: prints the test ids the filter says "maybe" for after the adds (the unit tier's vectors)
//   dump:    adds each line of stdin, an id, and writes the filter with writeTo to --out, as a
//            service that keeps its filter across restarts does
//
//   java -cp CLASSES:LIBS/* GuavaWindowConsumer consume --bootstrap B --topic T --count N --capacity N
//        --bloom-items N --bloom-fp P
//   java -cp CLASSES:LIBS/* GuavaWindowConsumer vectors --bloom-items N --bloom-fp P --add PREFIX:COUNT
//        --test PREFIX:COUNT
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class GuavaWindowConsumer {
  private final int capacity;
  private final LinkedHashMap<String, Boolean> lru;
  private final BloomFilter<CharSequence> filter;

  GuavaWindowConsumer(int capacity, long items, double fpp) {
    this.capacity = capacity;
    this.lru = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
        return size() > GuavaWindowConsumer.this.capacity;
      }
    };
    this.filter = BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), items, fpp);
  }

  boolean isDuplicate(String id) {
    if (lru.get(id) != null) {
      return true; // get() moves it to the front
    }
    if (filter.mightContain(id)) {
      return true; // probably seen
    }
    lru.put(id, Boolean.TRUE);
    filter.put(id);
    return false;
  }

  public static void main(String[] argv) throws Exception {
    String mode = argv[0];
    Map<String, String> args = new HashMap<>();
    for (int i = 1; i + 1 < argv.length; i += 2) {
      args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
    }
    long items = Long.parseLong(args.get("bloom-items"));
    double fpp = Double.parseDouble(args.get("bloom-fp"));
    if (mode.equals("vectors")) {
      BloomFilter<CharSequence> filter = BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), items, fpp);
      each(args.get("add"), filter::put);
      each(args.get("test"), id -> {
        if (filter.mightContain(id)) {
          System.out.println(id);
        }
      });
      return;
    }
    if (mode.equals("dump")) {
      BloomFilter<CharSequence> filter = BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), items, fpp);
      java.io.BufferedReader in =
          new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String id; (id = in.readLine()) != null; ) {
        filter.put(id);
      }
      try (java.io.OutputStream out = new java.io.FileOutputStream(args.get("out"))) {
        filter.writeTo(out);
      }
      return;
    }
    GuavaWindowConsumer window = new GuavaWindowConsumer(Integer.parseInt(args.get("capacity")), items, fpp);
    if (mode.equals("decide")) { // each line of stdin an id: prints ID applied|skipped
      java.io.BufferedReader in =
          new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String id; (id = in.readLine()) != null; ) {
        System.out.println(id + " " + (window.isDuplicate(id) ? "skipped" : "applied"));
      }
      return;
    }
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
    props.put(ConsumerConfig.GROUP_ID_CONFIG, "guava-window-" + System.nanoTime());
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    int count = Integer.parseInt(args.get("count"));
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
      consumer.subscribe(List.of(args.get("topic")));
      for (int seen = 0; seen < count; ) {
        if (System.nanoTime() > deadline) {
          System.err.println("GuavaWindowConsumer: read " + seen + " of " + count + " records in 60 s");
          System.exit(3);
        }
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          Header h = r.headers().lastHeader("event_id");
          String id = h == null ? "" : new String(h.value(), StandardCharsets.UTF_8);
          String decision = window.isDuplicate(id) ? "skipped" : "applied";
          System.out.println(r.partition() + " " + r.offset() + " " + id + " " + decision);
          seen++;
        }
      }
    }
  }

  private static void each(String spec, java.util.function.Consumer<String> f) {
    String[] parts = spec.split(":", 2);
    int n = Integer.parseInt(parts[1]);
    for (int i = 0; i < n; i++) {
      f.accept(parts[0] + i);
    }
  }
}
