#include "store_follower.h"

namespace artune::dashboard {

StoreFollower::StoreFollower(std::string path, std::string missing)
    : path_(std::move(path)), missing_(std::move(missing)) {}

StoreFollower::~StoreFollower() = default;

db::Store* StoreFollower::Get(std::string& error) {
  if (store_ != nullptr) return store_.get();
  Result<std::unique_ptr<db::Store>> opened = db::Store::Open(path_, db::OpenMode::kExisting);
  if (!opened.ok()) {
    const bool missing = opened.status().code() == ErrorCode::kNotFound && !missing_.empty();
    error = missing ? missing_ : opened.status().message();
    return nullptr;
  }
  store_ = std::move(*opened);
  return store_.get();
}

bool StoreFollower::Failed(std::initializer_list<Status> statuses, std::string& error) {
  for (const Status& status : statuses) {
    if (!status.ok()) {
      error = status.message();
      store_.reset();
      return true;
    }
  }
  return false;
}

}  // namespace artune::dashboard
