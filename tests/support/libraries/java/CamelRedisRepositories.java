// Camel's Redis idempotent repositories (camel-spring-redis), for DedupConsumer: a predicate true
// the first time an id is seen; "\u0001ID" removes ID's record instead. Spring Data Redis over Jedis,
// as camel-spring-redis brings them; the RedisTemplate's serializers are Spring's defaults (Java
// serialization), as a Camel route that passes a plain RedisTemplate gets.
import java.util.Map;
import java.util.function.Predicate;

import org.apache.camel.component.redis.processor.idempotent.SpringRedisIdempotentRepository;
import org.apache.camel.component.redis.processor.idempotent.SpringRedisStringIdempotentRepository;
import org.apache.camel.spi.IdempotentRepository;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;

public final class CamelRedisRepositories {
  public static Predicate<String> open(String library, Map<String, String> args) throws Exception {
    var factory = new JedisConnectionFactory(
        new RedisStandaloneConfiguration("127.0.0.1", Integer.parseInt(args.get("redis-port"))));
    factory.afterPropertiesSet();
    factory.start();
    RedisTemplate<String, String> template = new RedisTemplate<>();
    template.setConnectionFactory(factory);
    template.afterPropertiesSet();
    String repositoryName = args.getOrDefault("consumer", "billing");
    IdempotentRepository repository = library.equals("camel-set")
                                          ? new SpringRedisIdempotentRepository(template, repositoryName)
                                          : new SpringRedisStringIdempotentRepository(template, repositoryName);
    repository.start();
    return idAndTime -> idAndTime.startsWith("\u0001") ? repository.remove(idAndTime.substring(1))
                                                       : repository.add(idAndTime.substring(0, idAndTime.indexOf('\u0000')));
  }

  private CamelRedisRepositories() {}
}
