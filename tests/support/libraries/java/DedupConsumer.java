// A Kafka consumer that deduplicates through a Java library, as a team's consumer would: the
// Kafka client reads the topic in a group, and every event goes through the library's own
// idempotency check, keyed by the event id (the payload's "event_id"):
//   spring-redis  Spring Integration's MetadataStoreSelector over RedisMetadataStore (HSETNX into
//                 the hash "MetaData", the message's timestamp in ms as the value)
//   spring-jdbc   the same selector over JdbcMetadataStore (INT_METADATA_STORE, REGION 'DEFAULT'),
//                 its table created from the schema-postgresql.sql the library ships
//   camel-jdbc    Camel's JdbcMessageIdRepository (CAMEL_MESSAGEPROCESSED, created by the library),
//                 processor name --consumer
// The handler "charges" by appending the event id to --applied; so the ids the library let through
// are exactly the lines written. Commits each event's offset after it is handled; stops when the
// assigned partitions are read to their end (or after --max events). Prints nothing on success.
//
//   java -cp CLASSES:LIBS/* DedupConsumer --library L --bootstrap B --topic T --group G
//        --applied FILE (--redis-port P | --jdbc URL) [--consumer NAME] [--max N]
import java.io.FileWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.jdbc.metadata.JdbcMetadataStore;
import org.springframework.integration.metadata.ConcurrentMetadataStore;
import org.springframework.integration.redis.metadata.RedisMetadataStore;
import org.springframework.integration.selector.MetadataStoreSelector;
import org.springframework.jdbc.datasource.init.ScriptUtils;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

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

  // The library's check: true the first time an id is seen (the event is applied), false after.
  private static Predicate<String> idempotency(String library, Map<String, String> args) throws Exception {
    switch (library) {
    case "spring-redis": {
      var factory = new LettuceConnectionFactory(
          new RedisStandaloneConfiguration("127.0.0.1", Integer.parseInt(args.get("redis-port"))));
      factory.afterPropertiesSet();
      factory.start();
      return selector(new RedisMetadataStore(factory));
    }
    case "spring-jdbc": {
      DataSource ds = dataSource(args.get("jdbc"));
      try (Connection c = ds.getConnection()) {
        if (!c.getMetaData().getTables(null, null, "int_metadata_store", null).next()) {
          ScriptUtils.executeSqlScript(
              c, new ClassPathResource("org/springframework/integration/jdbc/schema-postgresql.sql"));
        }
      }
      JdbcMetadataStore store = new JdbcMetadataStore(ds);
      store.afterPropertiesSet();
      return selector(store);
    }
    case "camel-jdbc": {
      JdbcMessageIdRepository repository =
          new JdbcMessageIdRepository(dataSource(args.get("jdbc")), args.getOrDefault("consumer", "billing"));
      repository.start();
      return idAndTime -> repository.add(idAndTime.substring(0, idAndTime.indexOf('\u0000')));
    }
    default:
      throw new IllegalArgumentException("--library spring-redis, spring-jdbc or camel-jdbc, not " + library);
    }
  }

  // Spring Integration's idempotent receiver: the selector keyed by the event id, its value the
  // message's timestamp (MetadataStoreSelector's default).
  private static Predicate<String> selector(ConcurrentMetadataStore store) {
    MetadataStoreSelector selector = new MetadataStoreSelector(m -> (String) m.getPayload(), store);
    return idAndTime -> {
      int at = idAndTime.indexOf('\u0000');
      Message<String> message = MessageBuilder.withPayload(idAndTime.substring(0, at))
                                    .setHeader("kafka_timestamp", Long.parseLong(idAndTime.substring(at + 1)))
                                    .build();
      return selector.accept(message);
    };
  }

  private static DataSource dataSource(String url) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(url);
    return ds;
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
