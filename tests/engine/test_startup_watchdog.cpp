// engine/run/startup_watchdog.h without MPI (Note [Start-up watchdog]): a bounded stage that overruns
// --timeout + kGrace ends the process with exit 1 and one line naming the rank and the stage; a stage
// left in time, this rank's own work and a stood-down watch never do.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "engine/run/startup_watchdog.h"

namespace tt {
namespace {

using std::chrono::milliseconds;

void print_line(const std::string& line) {
  std::fprintf(stderr, "teetrain: error: %s\n", line.c_str());
}

// Past every deadline below (--timeout 0.1 s + kGrace).
constexpr milliseconds kPast = milliseconds(600) + StartupWatchdog::kGrace;

TEST(StartupWatchdogDeathTest, AnOverrunStageEndsTheRunWithExit1AndNamesIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StartupWatchdog w(milliseconds(100), 3, print_line);
        w.enter(StartupStage::Links);
        std::this_thread::sleep_for(kPast * 4);  // the watchdog ends this process before
      },
      ::testing::ExitedWithCode(1),
      "teetrain: error: rank 3: start-up stuck in setting up the links between ranks .* for longer than "
      "--timeout 0.1 s \\+ 2 s: a peer was stopped \\(SIGSTOP\\)");
  EXPECT_EXIT(
      {
        StartupWatchdog w(milliseconds(100), -1, print_line);
        w.enter(StartupStage::MpiInit);
        std::this_thread::sleep_for(kPast * 4);
      },
      ::testing::ExitedWithCode(1),
      "this rank: start-up stuck in MPI start-up \\(MPI_Init\\).*never started");
}

TEST(StartupWatchdog, StagesLeftInTimeOwnWorkAndAStoodDownWatchNeverFire) {
  StartupWatchdog w(milliseconds(100), 0, print_line);
  for (const StartupStage s : {StartupStage::Links, StartupStage::Attestation, StartupStage::ConfigAgreement})
    w.enter(s);                    // each left well before its deadline
  w.enter(StartupStage::OwnWork);  // not bounded: opening data may take long
  std::this_thread::sleep_for(kPast);
  w.stand_down();
  w.enter(StartupStage::Links);  // ignored: standing down is for good
  std::this_thread::sleep_for(kPast);
  SUCCEED();  // still here
}

// Note [Continued, not stuck]: a process continued (SIGCONT) starts its stage's deadline again, however
// short the stop: here continues keep coming for longer than the deadline (--timeout 0.1 s + kGrace),
// each well within a look's gap, and the watch never fires; once they stop, it does.
TEST(StartupWatchdogDeathTest, AContinuedProcessStartsItsDeadlineAgain) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StartupWatchdog w(milliseconds(100), 1, print_line);
        w.enter(StartupStage::Links);
        const auto until = std::chrono::steady_clock::now() + kPast * 2;
        while (std::chrono::steady_clock::now() < until) {
          ::kill(::getpid(), SIGCONT);
          std::this_thread::sleep_for(milliseconds(200));
        }
        std::fprintf(stderr, "still running after the continues\n");
        std::this_thread::sleep_for(kPast * 4);  // no continue now: the watchdog ends this process
      },
      ::testing::ExitedWithCode(1),
      "still running after the continues\n.*rank 1: start-up stuck in setting up");
}

TEST(StartupWatchdog, OnlyStagesThatWaitForPeersAreBounded) {
  EXPECT_TRUE(stage_bounded(StartupStage::MpiInit));
  EXPECT_TRUE(stage_bounded(StartupStage::Links));
  EXPECT_TRUE(stage_bounded(StartupStage::InputAgreement));
  EXPECT_FALSE(stage_bounded(StartupStage::OwnWork));
  EXPECT_FALSE(stage_bounded(StartupStage::Running));
  EXPECT_EQ(StartupWatchdog::stuck_line(2, StartupStage::KeyRelease, milliseconds(30000))
                .rfind("rank 2: start-up stuck in the release of the keys at rest for longer than --timeout "
                       "30 s + 2 s: ",
                       0),
            0U);
}

}  // namespace
}  // namespace tt
