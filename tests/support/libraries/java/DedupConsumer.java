// A Kafka consumer that deduplicates through a Java library, as a team's consumer would: the
// Kafka client reads the topic in a group, and every event goes through the library's own
// idempotency check, keyed by the event id (the payload's "event_id"):
//   spring-redis  Spring Integration's MetadataStoreSelector over RedisMetadataStore (HSETNX into
//                 the hash "MetaData", the message's timestamp in ms as the value)
//   spring-jdbc   the same selector over JdbcMetadataStore (INT_METADATA_STORE, REGION 'DEFAULT'),
//                 its table created from the schema-postgresql.sql the library ships
//   camel-jdbc    Camel's JdbcMessageIdRepository (CAMEL_MESSAGEPROCESSED, created by the library),
//                 processor name --consumer
//   camel-set     Camel's SpringRedisIdempotentRepository (SADD into the set --consumer, name and
//                 members Java-serialized by Spring's RedisTemplate)
//   camel-string  Camel's SpringRedisStringIdempotentRepository (SET NX "<--consumer>:<id>")
// --forget ID,ID… removes those ids' records through the library (IdempotentRepository.remove,
// MetadataStore.remove) and exits: records lost, as an eviction or a cleanup job loses them.
// The handler "charges" by appending the event id to --applied; so the ids the library let through
// are exactly the lines written. Commits each event's offset after it is handled; stops when the
// assigned partitions are read to their end (or after --max events). Prints nothing on success.
//
//   java -cp CLASSES:LIBS/* DedupConsumer --library L --bootstrap B --topic T --group G
//        --applied FILE (--redis-port P | --jdbc URL) [--consumer NAME] [--max N]
import java.io.FileWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;


import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class DedupConsumer {
  private static final Pattern EVENT_ID = Pattern.compile("\"event_id\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
    }
    String library = args.get("library");
    int max = Integer.parseInt(args.getOrDefault("max", "0"));
    Predicate<String> firstTime = idempotency(library, args);
    if (args.containsKey("forget")) {
      for (String id : args.get("forget").split(",")) {
        firstTime.test("\u0001" + id); // the stores' open() read this as a removal
      }
      return;
    }

    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
    props.put(ConsumerConfig.GROUP_ID_CONFIG, args.get("group"));
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
    try (KafkaConsumer<String, String> consumer =
             new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
         Writer applied = new FileWriter(args.get("applied"), StandardCharsets.UTF_8, true)) {
      consumer.subscribe(List.of(args.get("topic")));
      int handled = 0;
      long idleSince = System.currentTimeMillis();
      while (true) {
        var records = consumer.poll(Duration.ofMillis(500));
        for (ConsumerRecord<String, String> record : records) {
          Matcher m = EVENT_ID.matcher(record.value());
          if (!m.find()) {
            throw new IllegalStateException("no event_id in " + record.value());
          }
          String id = unescape(m.group(1));
          // The library's check, with the message as the idempotent receiver sees it.
          if (firstTime.test(id + "\u0000" + record.timestamp())) {
            applied.write(id + "\n");
            applied.flush();
          }
          consumer.commitSync(Map.of(new TopicPartition(record.topic(), record.partition()),
                                     new OffsetAndMetadata(record.offset() + 1)));
          if (max > 0 && ++handled >= max) {
            return;
          }
        }
        Set<TopicPartition> assigned = consumer.assignment();
        if (!assigned.isEmpty()) {
          Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
          boolean atEnd = true;
          for (TopicPartition tp : assigned) {
            atEnd &= consumer.position(tp) >= ends.get(tp);
          }
          if (atEnd) {
            return;
          }
        }
        if (records.isEmpty() && System.currentTimeMillis() - idleSince > 60_000) {
          System.err.println("no events for 60 s");
          System.exit(3);
        }
        if (!records.isEmpty()) {
          idleSince = System.currentTimeMillis();
        }
      }
    }
  }

  // The library's check (true the first time an id is seen: the event is applied), from the class of
  // its family, loaded by name: each family runs on a classpath of its own (Camel's Redis
  // repositories come with Spring 6, Spring Integration 7 with Spring 7).
  @SuppressWarnings("unchecked")
  private static Predicate<String> idempotency(String library, Map<String, String> args) throws Exception {
    String family = library.equals("camel-set") || library.equals("camel-string") ? "CamelRedisRepositories"
                                                                                 : "SpringAndCamelJdbc";
    return (Predicate<String>) Class.forName(family).getMethod("open", String.class, Map.class).invoke(null, library,
                                                                                                        args);
  }

  // The JSON string escapes an id may have (\" \\ \\uXXXX).
  private static String unescape(String s) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c != '\\') {
        out.append(c);
      } else if (s.charAt(i + 1) == 'u') {
        out.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
        i += 5;
      } else {
        out.append(s.charAt(++i));
      }
    }
    return out.toString();
  }

  private DedupConsumer() {}
}
