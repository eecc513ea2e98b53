#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace dedupctl::commands {

// Runs jobs one at a time, in the order they were given, on a thread of its own, each with a
// future for its end (which carries what the job threw). A replay's placement goes through one:
// its round trips overlap reading and publishing while the placement is still used by one thread
// at a time, in order. Made inline, a job runs at once on the caller's thread: the same code path
// for a placement that must not be overlapped (a transaction per batch on one connection).
class SerialWorker {
public:
  explicit SerialWorker(bool threaded) {
    if (threaded) {
      m_thread = std::thread([this] { loop(); });
    }
  }
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  // Waits for the job that is running; the ones still queued are dropped, and their futures say
  // so (std::future_errc::broken_promise).
  ~SerialWorker() {
    if (!m_thread.joinable()) {
      return;
    }
    {
      std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    m_wake.notify_one();
    m_thread.join();
  }

  std::future<void> submit(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    std::future<void> done = task.get_future();
    if (!m_thread.joinable()) {
      task();
      return done;
    }
    {
      std::lock_guard lock(m_mutex);
      m_jobs.push_back(std::move(task));
    }
    m_wake.notify_one();
    return done;
  }

private:
  void loop() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock lock(m_mutex);
        m_wake.wait(lock, [this] { return m_stopping || !m_jobs.empty(); });
        if (m_stopping) {
          m_jobs.clear();
          return;
        }
        task = std::move(m_jobs.front());
        m_jobs.pop_front();
      }
      task();
    }
  }

  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<std::packaged_task<void()>> m_jobs;
  bool m_stopping = false;
  std::thread m_thread; // last: started once the rest exists
};

} // namespace dedupctl::commands
