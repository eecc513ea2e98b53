// Spring Integration's metadata stores (Redis, JDBC) and Camel's JDBC repository, for DedupConsumer:
// a predicate true the first time an id is seen; "\u0001ID" removes ID's record instead.
import java.sql.Connection;
import java.util.Map;
import java.util.function.Predicate;

import javax.sql.DataSource;

import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
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

public final class SpringAndCamelJdbc {
  // The library's check: true the first time an id is seen (the event is applied), false after.
  public static Predicate<String> open(String library, Map<String, String> args) throws Exception {
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
      return idAndTime -> idAndTime.startsWith("\u0001") ? repository.remove(idAndTime.substring(1))
                                                         : repository.add(idAndTime.substring(0, idAndTime.indexOf('\u0000')));
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
      if (idAndTime.startsWith("\u0001")) {
        return store.remove(idAndTime.substring(1)) != null;
      }
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

  private SpringAndCamelJdbc() {}
}
