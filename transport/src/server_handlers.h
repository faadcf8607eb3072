// What runs the server's handlers: the worker threads (off the progress thread,
// so a slow handler never stalls I/O) and the ResponseWriter a handler fills.
#pragma once

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "allocator.h"
#include "artune/transport/transport.h"
#include "thread_name.h"

namespace artune::transport {

// Handlers run here, off the progress thread, so a slow handler never stalls I/O.
// Threading: Submit and Stop from any thread; tasks run on the pool's threads.
class WorkerPool {
 public:
  explicit WorkerPool(unsigned count) {
    for (unsigned i = 0; i < count; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~WorkerPool() { Stop(); }

  void Submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

  // Finishes the queued tasks and joins the threads.
  void Stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

 private:
  void Run() {
    NameThisThread("artune-handler");
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// A handler's response: slices inside the request go zero-copy (the request lives
// until the peer's FIN); anything else is copied into registered memory. Used on
// the thread that runs the handler only.
class ResponseWriterImpl final : public ResponseWriter {
 public:
  ResponseWriterImpl(RegisteredAllocator& allocator, const Message& request)
      : allocator_(allocator), request_(request) {}

  void Append(ConstSlice slice) override {
    if (slice.empty()) {
      slices_.push_back(slice);
      return;
    }
    // Inside the request: sent zero-copy (the request lives until the peer's FIN).
    for (const ConstSlice& held : request_.slices()) {
      if (!held.empty() && slice.data() >= held.data() &&
          slice.data() + slice.size() <= held.data() + held.size()) {
        uses_request_ = true;
        slices_.push_back(slice);
        return;
      }
    }
    // Anything else may die when the handler returns: copy it into registered memory.
    Result<Buffer> copy = allocator_.Allocate(slice.size());
    if (!copy.ok()) {
      if (error_.ok()) error_ = copy.status();
      return;
    }
    std::memcpy(copy->data(), slice.data(), slice.size());
    slices_.push_back(ConstSlice(copy->data(), slice.size()));
    owned_.push_back(std::move(copy).value());
  }

  void Append(Buffer buffer) override {
    slices_.push_back(ConstSlice(buffer.data(), buffer.size()));
    owned_.push_back(std::move(buffer));
  }

  Allocator& allocator() override { return allocator_; }

  std::vector<ConstSlice>& slices() { return slices_; }
  std::vector<Buffer>& owned() { return owned_; }
  bool uses_request() const { return uses_request_; }
  const Status& error() const { return error_; }

 private:
  RegisteredAllocator& allocator_;
  const Message& request_;
  std::vector<ConstSlice> slices_;
  std::vector<Buffer> owned_;
  bool uses_request_ = false;
  Status error_;
};

}  // namespace artune::transport
