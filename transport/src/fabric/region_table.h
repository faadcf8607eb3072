// The registration table the copying fabrics (shm, tcp) keep: registered regions
// by a local key, handed out from a counter (a key is never 0 and, after the
// counter wraps, never one still in use). Verbs keys are the device's own.
//
// Threading: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace artune::transport::fabric {

template <class Region>
class RegionTable {
 public:
  // Files `region` under a new key and returns the key.
  uint32_t Add(std::shared_ptr<Region> region) {
    std::lock_guard lock(mutex_);
    uint32_t key = 0;
    do {
      key = next_key_++;
    } while (key == 0 || regions_.contains(key));
    regions_[key] = std::move(region);
    return key;
  }
  // The region under `key`, or nullptr.
  std::shared_ptr<Region> Find(uint32_t key) {
    std::lock_guard lock(mutex_);
    auto it = regions_.find(key);
    return it == regions_.end() ? nullptr : it->second;
  }
  // Removes the region under `key` and returns it (nullptr: none).
  std::shared_ptr<Region> Take(uint32_t key) {
    std::lock_guard lock(mutex_);
    auto it = regions_.find(key);
    if (it == regions_.end()) return nullptr;
    std::shared_ptr<Region> region = std::move(it->second);
    regions_.erase(it);
    return region;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<uint32_t, std::shared_ptr<Region>> regions_;
  uint32_t next_key_ = 1;
};

}  // namespace artune::transport::fabric
