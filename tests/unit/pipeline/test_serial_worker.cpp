// The worker a replay's placement runs on: one job at a time, in order, failures carried to the
// caller, and nothing left running when it goes.
#include "commands/pipeline/serial_worker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace dedupctl::commands {
namespace {

TEST(SerialWorker, JobsRunOneAtATimeInTheOrderGiven) {
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<int> overlapped{0};
  std::vector<std::future<void>> done;
  {
    SerialWorker worker(true);
    for (int i = 0; i < 200; ++i) {
      done.push_back(worker.submit([&, i] {
        overlapped += running++ > 0 ? 1 : 0;
        order.push_back(i); // only the worker thread touches it
        std::this_thread::yield();
        --running;
      }));
    }
    for (auto& d : done) {
      d.get();
    }
  }
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  }
  EXPECT_EQ(overlapped, 0);
}

TEST(SerialWorker, WhatAJobThrowsComesOutOfItsFutureAndLaterJobsStillRun) {
  SerialWorker worker(true);
  auto failed = worker.submit([] { throw std::runtime_error("store gone"); });
  bool ran = false;
  auto later = worker.submit([&] { ran = true; });
  EXPECT_THROW(failed.get(), std::runtime_error);
  later.get();
  EXPECT_TRUE(ran);
}

TEST(SerialWorker, InlineRunsTheJobAtOnceOnTheCallersThread) {
  SerialWorker worker(false);
  std::thread::id where;
  auto done = worker.submit([&] { where = std::this_thread::get_id(); });
  EXPECT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(where, std::this_thread::get_id());
  auto failed = worker.submit([] { throw std::runtime_error("refused"); });
  EXPECT_THROW(failed.get(), std::runtime_error);
}

TEST(SerialWorker, GoingAwayWaitsForTheRunningJobAndDropsTheQueuedOnes) {
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::atomic<bool> queued_ran{false};
  std::future<void> queued;
  std::thread releaser;
  {
    SerialWorker worker(true);
    worker.submit([&] {
      started = true;
      while (!release) {
        std::this_thread::yield();
      }
      finished = true;
    });
    queued = worker.submit([&] { queued_ran = true; });
    while (!started) {
      std::this_thread::yield();
    }
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      release = true;
    });
  }
  releaser.join();
  EXPECT_TRUE(finished) << "the running job ends before the worker goes";
  EXPECT_FALSE(queued_ran);
  try {
    queued.get();
    ADD_FAILURE() << "a dropped job's future must say so";
  } catch (const std::future_error& e) {
    EXPECT_EQ(e.code(), std::future_errc::broken_promise);
  }
}

} // namespace
} // namespace dedupctl::commands
