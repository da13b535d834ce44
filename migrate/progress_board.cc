#include "migrate/progress_board.h"

#include <algorithm>
#include <cstdio>

namespace flexcsi::migrate {

namespace {

using Clock = std::chrono::steady_clock;

// The step a progress report names, or "" for a note: "binding", "binding (resumed)".
std::string StepOf(const std::string& what) {
  const std::string word = what.substr(0, what.find(' '));
  static const std::vector<std::string> kApply = ApplyStepsFor(true);
  static const std::vector<std::string> kRollback = RollbackStepsFor(true);
  for (const auto* steps : {&kApply, &kRollback}) {
    if (std::find(steps->begin(), steps->end(), word) != steps->end()) return word;
  }
  return "";
}

}  // namespace

std::string ShortDuration(std::chrono::seconds d) {
  const long long s = std::max<long long>(0, d.count());
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

ProgressBoard::ProgressBoard(std::ostream& err, bool live, size_t total, std::string done_word)
    : err_(err), live_(live), total_(total), done_word_(std::move(done_word)) {
  if (live_) ticker_ = std::thread([this] { Tick(); });
}

ProgressBoard::~ProgressBoard() {
  if (!live_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  ticker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  err_ << "\r\033[K" << LineLocked() << "\n" << std::flush;
}

void ProgressBoard::Tick() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::seconds(1));
    if (!stopping_) Draw();
  }
}

void ProgressBoard::Print(const std::string& line) {
  if (live_) err_ << "\r\033[K";
  err_ << line << "\n";
  if (live_) {
    err_ << LineLocked();
    last_draw_ = Clock::now();
  }
  err_ << std::flush;
}

void ProgressBoard::Draw() {
  err_ << "\r\033[K" << LineLocked() << std::flush;
  last_draw_ = Clock::now();
}

void ProgressBoard::Step(const std::string& pv, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(pv);
  if (it == running_.end()) it = running_.emplace(pv, Running{"", Clock::now()}).first;
  const std::string step = StepOf(what);
  if (!step.empty()) it->second.step = step;
  if (!live_) {
    Print(pv + ": " + what);
  } else if (Clock::now() - last_draw_ > std::chrono::milliseconds(200)) {
    Draw();
  }
}

void ProgressBoard::Note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  Print(line);
}

void ProgressBoard::Finished(const MoveResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(r.pv_name);
  switch (r.outcome) {
    case Outcome::kFailed:
      ++failed_;
      break;
    case Outcome::kRefused:
      ++refused_;
      break;
    default:
      ++done_;
  }
  const std::string line =
      r.pv_name + ": " + OutcomeName(r.outcome) + (r.message.empty() ? "" : " (" + r.message + ")");
  // On a terminal only what needs a person's eye gets a line of its own.
  if (!live_ || r.outcome == Outcome::kFailed) {
    Print(line);
  } else {
    Draw();
  }
}

std::string ProgressBoard::Line() {
  std::lock_guard<std::mutex> lock(mu_);
  return LineLocked();
}

std::string ProgressBoard::LineLocked() const {
  const auto now = Clock::now();
  std::string line = done_word_ + " " + std::to_string(done_) + "/" + std::to_string(total_) +
                     "  failed " + std::to_string(failed_) + "  refused " +
                     std::to_string(refused_) + "  in progress " + std::to_string(running_.size());
  const Running* slowest = nullptr;
  const std::string* slowest_pv = nullptr;
  for (const auto& [pv, r] : running_) {
    if (slowest == nullptr || r.since < slowest->since) {
      slowest = &r;
      slowest_pv = &pv;
    }
  }
  if (slowest != nullptr) {
    line += "  slowest " + *slowest_pv + ": " +
            (slowest->step.empty() ? "starting" : slowest->step) + " " +
            ShortDuration(std::chrono::duration_cast<std::chrono::seconds>(now - slowest->since));
  }
  const size_t finished = done_ + failed_ + refused_;
  if (finished > 0 && finished < total_) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - started_);
    const auto eta =
        elapsed * static_cast<long long>(total_ - finished) / static_cast<long long>(finished);
    line += "  ETA " + ShortDuration(eta);
  }
  return line;
}

}  // namespace flexcsi::migrate
