// The Runner: the tuner's side of the worker protocol (worker_protocol.h).
// It starts `jobs` worker processes with posix_spawn, each with pipes for
// stdin, stdout and stderr, and drives them from one poll() loop: requests
// are written and replies read without blocking, every request has a
// deadline, and a worker's stderr is kept (its tail only) rather than shown.
// A worker that dies or misses a deadline is reaped (SIGKILL first for a
// deadline) and replaced by a fresh one, which gets the reference again;
// the candidates it had built are built again.
#include "mlcc/tune/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "mlcc/codegen/llvm.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"
#include "worker_protocol.h"

extern char** environ;

namespace mlcc::tune {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kStderrKept = 16384;  // bytes of a worker's stderr kept
constexpr size_t kStderrShown = 800;   // of those, shown in an error
// How long a worker that closed its stdout may take to exit before it is killed.
constexpr auto kExitGrace = std::chrono::seconds(2);

enum class Task { none, reference, build, measure, drop };

// One worker process and the state of its pipes.
struct Proc {
  pid_t pid = -1;
  int to = -1;           // its stdin
  int from = -1;         // its stdout
  int err = -1;          // its stderr
  std::string reply;     // bytes of the reply read so far
  std::string err_tail;  // the last kStderrKept bytes of its stderr
  std::string request;   // the request being written
  size_t written = 0;
  Task task = Task::none;  // the request in flight
  size_t candidate = 0;    // of a build or measure request
  Clock::time_point deadline;
  bool has_reference = false;

  bool alive() const { return pid > 0; }
  bool busy() const { return task != Task::none; }
};

// What became of a worker's request.
struct Outcome {
  size_t worker = 0;
  Task task = Task::none;
  size_t candidate = 0;
  RecordStatus status = RecordStatus::ok;
  json reply;  // the worker's answer, when it answered
  std::string error;
};

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A pipe whose ends are close-on-exec and not among fds 0..2 (which the
// child's ends are duplicated onto).
void makePipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  for (int k = 0; k < 2; ++k)
    if (fds[k] <= 2) {
      const int moved = fcntl(fds[k], F_DUPFD_CLOEXEC, 3);
      ::close(fds[k]);
      fds[k] = moved;
    }
  if (fds[0] < 0 || fds[1] < 0) {
    closeFd(fds[0]);
    closeFd(fds[1]);
    throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
}

void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string signalText(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (abbrev ? " (SIG" + std::string(abbrev) + ")" : "");
}

std::string secondsText(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

std::string moduleText(const ir::PrimFunc& f) {
  ir::Module m;
  m.functions.emplace_back(f);
  return ir::printModule(m);
}

}  // namespace

struct Runner::Impl {
  RunnerOptions options;
  std::vector<Proc> procs;
  std::string reference_text;  // the module of the reference, when set
  std::string reference_name;
  bool reference_set = false;

  explicit Impl(RunnerOptions o) : options(std::move(o)) {}

  ~Impl() {
    for (Proc& p : procs) kill(p);
  }

  // --- processes -------------------------------------------------------

  void spawn(Proc& p) {
    int in[2], out[2], err[2];
    makePipe(in);
    try {
      makePipe(out);
    } catch (...) {
      closeFd(in[0]), closeFd(in[1]);
      throw;
    }
    try {
      makePipe(err);
    } catch (...) {
      closeFd(in[0]), closeFd(in[1]), closeFd(out[0]), closeFd(out[1]);
      throw;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, pipe_default;
    sigemptyset(&none);
    sigemptyset(&pipe_default);
    sigaddset(&pipe_default, SIGPIPE);  // the parent ignores it; the worker need not
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &pipe_default);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> argv;
    for (std::string& a : options.worker) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    closeFd(in[0]), closeFd(out[1]), closeFd(err[1]);
    if (rc != 0) {
      closeFd(in[1]), closeFd(out[0]), closeFd(err[0]);
      throw Error("cannot start the tuning worker '" + options.worker[0] + "': " + std::strerror(rc));
    }
    p = Proc{};
    p.pid = pid;
    p.to = in[1];
    p.from = out[0];
    p.err = err[0];
    setNonBlocking(p.to);
    setNonBlocking(p.from);
    setNonBlocking(p.err);
  }

  // Reads what the worker's stderr holds now, keeping the tail.
  static void drainStderr(Proc& p) {
    char chunk[4096];
    while (p.err >= 0) {
      const ssize_t n = ::read(p.err, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        closeFd(p.err);
        return;
      }
      p.err_tail.append(chunk, static_cast<size_t>(n));
      if (p.err_tail.size() > kStderrKept) p.err_tail.erase(0, p.err_tail.size() - kStderrKept);
    }
  }

  // The last lines of the worker's stderr, for an error message ("" when none).
  static std::string stderrTail(const Proc& p) {
    std::string t = p.err_tail;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    if (t.empty()) return "";
    if (t.size() > kStderrShown) {
      t.erase(0, t.size() - kStderrShown);
      if (size_t nl = t.find('\n'); nl != std::string::npos) t.erase(0, nl + 1);
      t = "..." + t;
    }
    return "; stderr: " + t;
  }

  // Waits for a worker that closed its pipes to exit (killing it if it does
  // not, within kExitGrace) and says how it ended.
  static std::string reap(Proc& p) {
    int status = 0;
    const auto give_up = Clock::now() + kExitGrace;
    for (;;) {
      const pid_t r = waitpid(p.pid, &status, WNOHANG);
      if (r == p.pid) break;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return "worker exited";  // reaped elsewhere (SIGCHLD ignored)
      if (Clock::now() >= give_up) {
        ::kill(p.pid, SIGKILL);
        while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFSIGNALED(status)) return "worker killed by " + signalText(WTERMSIG(status));
    if (WIFEXITED(status)) return "worker exited with code " + std::to_string(WEXITSTATUS(status));
    return "worker ended";
  }

  // Closes the pipes and forgets the process (already reaped).
  static void release(Proc& p) {
    closeFd(p.to);
    closeFd(p.from);
    closeFd(p.err);
    p.pid = -1;
    p.task = Task::none;
    p.has_reference = false;
  }

  static void kill(Proc& p) {
    if (!p.alive()) return;
    ::kill(p.pid, SIGKILL);
    int status;
    while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
    }
    release(p);
  }

  // --- requests --------------------------------------------------------

  json referenceRequest() const {
    return {{"op", protocol::kReference},         {"module", reference_text}, {"seed", options.seed},
            {"num_threads", options.num_threads}, {"mcpu", options.mcpu},     {"mattr", options.mattr}};
  }

  void send(size_t w, Task task, size_t candidate, const json& request) {
    Proc& p = procs[w];
    p.request = request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    p.written = 0;
    p.reply.clear();
    p.task = task;
    p.candidate = candidate;
    p.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.timeout_s));
  }

  bool anyBusy() const {
    return std::any_of(procs.begin(), procs.end(), [](const Proc& p) { return p.busy(); });
  }

  Outcome finish(size_t w, RecordStatus status, std::string error, json reply = {}) {
    Proc& p = procs[w];
    Outcome o{w, p.task, p.candidate, status, std::move(reply), std::move(error)};
    p.task = Task::none;
    p.request.clear();
    p.reply.clear();
    return o;
  }

  // The worker died (closed a pipe): reap it and report the request in flight as a crash.
  Outcome died(size_t w, const std::string& why = "") {
    Proc& p = procs[w];
    std::string what = reap(p);
    drainStderr(p);
    what += why + stderrTail(p);
    Outcome o = finish(w, RecordStatus::crash, what);
    release(p);
    return o;
  }

  Outcome timedOut(size_t w) {
    Proc& p = procs[w];
    drainStderr(p);
    Outcome o =
        finish(w, RecordStatus::timeout,
               "timed out after " + secondsText(options.timeout_s) + " s (worker killed)" + stderrTail(p));
    kill(p);
    return o;
  }

  // Writes what the poll said the worker's stdin takes; false when it is closed.
  bool writeSome(Proc& p) {
    while (p.written < p.request.size()) {
      const ssize_t n = ::write(p.to, p.request.data() + p.written, p.request.size() - p.written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return true;
      if (n <= 0) return false;
      p.written += static_cast<size_t>(n);
    }
    return true;
  }

  // Waits until one busy worker's request ends (answered, died or timed out).
  Outcome next() {
    for (;;) {
      if (!anyBusy()) throw Error("internal error: the runner waits for an idle worker");
      const auto now = Clock::now();
      auto first_deadline = Clock::time_point::max();
      std::vector<pollfd> fds;
      std::vector<std::pair<size_t, int>> owner;  // worker, which pipe (0 stdin, 1 stdout, 2 stderr)
      for (size_t w = 0; w < procs.size(); ++w) {
        Proc& p = procs[w];
        if (!p.alive()) continue;
        if (p.busy()) {
          if (now >= p.deadline) {
            if (std::optional<Outcome> o = readReply(w)) return std::move(*o);  // just in time
            return timedOut(w);
          }
          first_deadline = std::min(first_deadline, p.deadline);
          if (p.written < p.request.size()) {
            if (!writeSome(p)) return died(w, " (while a request was written to it)");
            if (p.written < p.request.size()) {
              fds.push_back({p.to, POLLOUT, 0});
              owner.emplace_back(w, 0);
            }
          }
          fds.push_back({p.from, POLLIN, 0});
          owner.emplace_back(w, 1);
        }
        if (p.err >= 0) {
          fds.push_back({p.err, POLLIN, 0});
          owner.emplace_back(w, 2);
        }
      }
      const auto wait_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(first_deadline - now).count() + 1;
      const int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(wait_ms, 60000)));
      if (r < 0 && errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
      if (r <= 0) continue;
      for (size_t k = 0; k < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        const auto [w, which] = owner[k];
        Proc& p = procs[w];
        if (which == 2) {
          drainStderr(p);
        } else if (which == 0) {
          if (!writeSome(p)) return died(w, " (while a request was written to it)");
        } else if (std::optional<Outcome> o = readReply(w)) {
          return std::move(*o);
        }
      }
    }
  }

  // Reads the worker's stdout: the outcome once the reply is complete.
  std::optional<Outcome> readReply(size_t w) {
    Proc& p = procs[w];
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::read(p.from, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n <= 0) return died(w);
      p.reply.append(chunk, static_cast<size_t>(n));
    }
    const size_t eol = p.reply.find('\n');
    if (eol == std::string::npos) return std::nullopt;
    json reply = json::parse(p.reply.begin(), p.reply.begin() + static_cast<std::ptrdiff_t>(eol), nullptr,
                             /*allow_exceptions=*/false);
    std::optional<RecordStatus> status;
    if (reply.is_object() && reply.contains("status") && reply["status"].is_string())
      status = protocol::parseStatus(reply["status"].get<std::string>());
    if (!status || eol + 1 != p.reply.size()) {
      Outcome o = finish(w, RecordStatus::crash,
                         "malformed reply from the worker: " + p.reply.substr(0, std::min<size_t>(eol, 200)));
      kill(p);
      return o;
    }
    std::string error;
    if (*status != RecordStatus::ok)
      error = reply.contains("error") && reply["error"].is_string() ? reply["error"].get<std::string>()
                                                                    : "(no message)";
    return finish(w, *status, std::move(error), std::move(reply));
  }

  // Replaces a dead worker; it gets the reference (asynchronously: its reply
  // is an Outcome of task reference).
  void restart(size_t w) {
    spawn(procs[w]);
    if (reference_set) send(w, Task::reference, 0, referenceRequest());
  }

  // Every worker alive and idle, with the reference when one is set; throws
  // when the reference fails on one.
  void prepare() {
    for (size_t w = 0; w < procs.size(); ++w) {
      Proc& p = procs[w];
      if (p.busy()) kill(p);  // left over from an interrupted call
      if (!p.alive()) spawn(p);
      if (reference_set && !p.has_reference) send(w, Task::reference, 0, referenceRequest());
    }
    std::string failure;
    while (anyBusy()) {
      Outcome o = next();
      if (o.status == RecordStatus::ok)
        procs[o.worker].has_reference = true;
      else if (failure.empty())
        failure = o.error;
    }
    if (!failure.empty()) throw Error("reference @" + reference_name + ": " + failure);
  }

  void killAll() {
    for (Proc& p : procs) kill(p);
  }

  std::vector<Measurement> measure(const std::vector<ir::PrimFunc>& candidates, double give_up_us);
};

std::vector<Measurement> Runner::Impl::measure(const std::vector<ir::PrimFunc>& candidates,
                                               double give_up_us) {
  const size_t n = candidates.size();
  std::vector<Measurement> results(n);
  std::vector<std::string> texts(n);
  for (size_t i = 0; i < n; ++i) texts[i] = moduleText(candidates[i]);
  enum class State { queued, built, done };
  std::vector<State> state(n, State::queued);
  std::vector<size_t> owner(n, 0);  // the worker that built it
  std::deque<size_t> queue;
  for (size_t i = 0; i < n; ++i) queue.push_back(i);
  size_t remaining = n;

  const auto handle = [&](Outcome o) {
    Proc& p = procs[o.worker];
    const size_t i = o.candidate;
    switch (o.task) {
      case Task::reference:
        if (o.status != RecordStatus::ok)
          throw Error("reference @" + reference_name + " failed on a restarted worker: " + o.error);
        p.has_reference = true;
        break;
      case Task::build:
        if (o.status == RecordStatus::ok) {
          state[i] = State::built;
          owner[i] = o.worker;
          results[i].build_ms = o.reply.value("build_ms", 0.0);
        } else {
          results[i].status = o.status;
          results[i].error = o.error;
          state[i] = State::done;
          --remaining;
        }
        break;
      case Task::measure:
        results[i].status = o.status;
        results[i].error = o.error;
        if (o.status == RecordStatus::ok) {
          const json times = o.reply.value("run_us", json::array());
          for (const json& t : times)
            if (t.is_number()) results[i].run_us.push_back(t.get<double>());
          if (results[i].run_us.empty() || results[i].run_us.size() != times.size()) {
            results[i].status = RecordStatus::run_error;
            results[i].error = "the worker's reply has no valid run_us";
            results[i].run_us.clear();
          }
        }
        state[i] = State::done;
        --remaining;
        break;
      case Task::drop:
      case Task::none: break;
    }
    if (o.status == RecordStatus::crash || o.status == RecordStatus::timeout) {
      // The candidates the worker had built died with it.
      for (size_t j = 0; j < n; ++j)
        if (state[j] == State::built && owner[j] == o.worker) {
          state[j] = State::queued;
          queue.push_back(j);
        }
      restart(o.worker);
    }
  };

  while (remaining > 0) {
    // Build every queued candidate, all workers at once.
    for (;;) {
      for (size_t w = 0; w < procs.size() && !queue.empty(); ++w)
        if (procs[w].alive() && !procs[w].busy() && procs[w].has_reference) {
          const size_t i = queue.front();
          queue.pop_front();
          send(w, Task::build, i,
               {{"op", protocol::kBuild}, {"id", static_cast<int64_t>(i)}, {"module", texts[i]}});
        }
      if (!anyBusy()) break;
      handle(next());
    }
    // Time the built ones one at a time, nothing else running.
    for (size_t i = 0; i < n; ++i) {
      if (state[i] != State::built) continue;
      const size_t w = owner[i];
      send(w, Task::measure, i,
           {{"op", protocol::kMeasure},
            {"id", static_cast<int64_t>(i)},
            {"repeats", options.repeats},
            {"min_sample_ms", options.min_sample_ms},
            {"give_up_us", give_up_us}});
      while (anyBusy()) handle(next());
      if (results[i].status != RecordStatus::crash && results[i].status != RecordStatus::timeout) {
        send(w, Task::drop, i, {{"op", protocol::kDrop}, {"id", static_cast<int64_t>(i)}});
        while (anyBusy()) handle(next());
      }
    }
  }
  return results;
}

Runner::Runner(RunnerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  const RunnerOptions& o = impl_->options;
  if (o.worker.empty()) throw Error("Runner: no worker command");
  if (o.jobs < 1) throw Error("Runner: jobs must be at least 1, not " + std::to_string(o.jobs));
  if (o.repeats < 1) throw Error("Runner: repeats must be at least 1, not " + std::to_string(o.repeats));
  if (!(o.timeout_s > 0)) throw Error("Runner: timeout_s must be positive");
  if (!(o.min_sample_ms >= 0)) throw Error("Runner: min_sample_ms must not be negative");
  // A write to a worker that just died must fail with EPIPE, not kill the tuner.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  impl_->procs.resize(static_cast<size_t>(o.jobs));
  for (Proc& p : impl_->procs) impl_->spawn(p);
}

Runner::~Runner() = default;

void Runner::setReference(const ir::PrimFunc& reference) {
  Impl& m = *impl_;
  if (!codegen::kernelDims(reference).empty())
    throw Error("reference @" + reference.name + " has symbolic shapes: it cannot be measured");
  m.reference_set = false;
  m.reference_text = moduleText(reference);
  m.reference_name = reference.name;
  for (Proc& p : m.procs) p.has_reference = false;
  m.reference_set = true;
  try {
    m.prepare();
  } catch (...) {
    m.reference_set = false;
    for (Proc& p : m.procs) p.has_reference = false;
    throw;
  }
}

std::vector<Measurement> Runner::measure(const std::vector<ir::PrimFunc>& candidates, double give_up_us) {
  Impl& m = *impl_;
  if (!m.reference_set) throw Error("Runner::measure: no reference (setReference was not called or failed)");
  try {
    m.prepare();
    return m.measure(candidates, give_up_us);
  } catch (...) {
    m.killAll();  // in an unknown state: the next call starts fresh workers
    throw;
  }
}

}  // namespace mlcc::tune
