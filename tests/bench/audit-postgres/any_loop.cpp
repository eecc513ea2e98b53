// The reference for tests/bench/audit-postgres: a plain libpqxx loop looking up the ids
// evt-000000000000 … in batches of 4096 with = ANY($1::text[]). Prints the rows found.
//   pg_any_loop CONNINFO N
#include <pqxx/pqxx>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: pg_any_loop CONNINFO N\n");
    return 2;
  }
  pqxx::connection connection(argv[1]);
  connection.prepare("lookup", "SELECT event_id, processed_at FROM processed_events WHERE event_id = ANY($1::text[])");
  long long n = std::atoll(argv[2]);
  long long found = 0;
  char id[32];
  for (long long start = 0; start < n; start += 4096) {
    std::string array = "{";
    for (long long i = start; i < std::min(n, start + 4096); ++i) {
      std::snprintf(id, sizeof id, "evt-%012lld", i);
      array += (i == start ? "\"" : ",\"") + std::string(id) + "\"";
    }
    array += "}";
    pqxx::read_transaction tx(connection);
    found += static_cast<long long>(tx.exec_prepared("lookup", array).size());
  }
  std::printf("%lld\n", found);
  return 0;
}
