// The shm offer table (fabric/shm/shm_offers.h): a reader reads a published offer
// without asking the owner, only inside it and only until it is withdrawn; a
// withdrawal waits for the reader's batch that may have seen the offer, and a
// reader that lies about its batches holds back only its own connection's
// releases, until that connection ends.
#include <gmock/gmock.h>

#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <vector>

#include "engine_test_util.h"
#include "fabric/shm/shm_fabric.h"
#include "fabric/shm/shm_offers.h"
#include "shm_test_util.h"

namespace artune::transport {
namespace {

using fabric::shm::kOfferSlots;
using fabric::shm::OfferPublisher;
using fabric::shm::OfferReader;
using fabric::shm::OfferTable;

class OfferTableTest : public ::testing::Test {
 protected:
  OfferTableTest()
      : table_(std::make_unique<OfferTable>()), owner_(table_.get()), reader_(table_.get()) {}

  std::unique_ptr<OfferTable> table_;
  OfferPublisher owner_;
  OfferReader reader_;
};

TEST_F(OfferTableTest, APublishedOfferIsReadableOnlyInsideItUnderItsKey) {
  const uint32_t slot = *owner_.TakeSlot();
  const uint32_t key = 0xabcd0000u | slot;
  owner_.Publish(slot, key, 0x10000, 4096);
  reader_.BeginBatch();
  EXPECT_TRUE(reader_.Offered(key, 0x10000, 4096));
  EXPECT_TRUE(reader_.Offered(key, 0x10000 + 4000, 96));
  EXPECT_FALSE(reader_.Offered(key, 0x10000, 4097)) << "past the end";
  EXPECT_FALSE(reader_.Offered(key, 0x10000 - 1, 16)) << "before the start";
  EXPECT_FALSE(reader_.Offered(key, 0x10000, 0)) << "empty";
  EXPECT_FALSE(reader_.Offered(key ^ 0x10000u, 0x10000, 16)) << "another key, same slot";
  EXPECT_FALSE(reader_.Offered(key + 1, 0x10000, 16)) << "another slot";
  reader_.EndBatch();
  EXPECT_FALSE(owner_.Withdraw(slot).has_value()) << "no batch under way: released at once";
  reader_.BeginBatch();
  EXPECT_FALSE(reader_.Offered(key, 0x10000, 16)) << "withdrawn";
  reader_.EndBatch();
}

TEST_F(OfferTableTest, SlotValuesThatWouldOverflowAreNotOffers) {
  // What a hostile owner may write: no sum of these may wrap into a yes.
  const uint32_t slot = *owner_.TakeSlot();
  const uint32_t key = 0x5000u | slot;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  owner_.Publish(slot, key, max - 10, 100);
  reader_.BeginBatch();
  EXPECT_FALSE(reader_.Offered(key, 5, 10));
  EXPECT_FALSE(reader_.Offered(key, max - 5, 100));
  EXPECT_TRUE(reader_.Offered(key, max - 10, 10));
  owner_.Publish(slot, key, 0, max);
  EXPECT_FALSE(reader_.Offered(key, 1, max));
  reader_.EndBatch();
}

TEST_F(OfferTableTest, AWithdrawalWaitsForTheBatchThatMaySeeTheOffer) {
  const uint32_t slot = *owner_.TakeSlot();
  const uint32_t key = 0x7000u | slot;
  owner_.Publish(slot, key, 4096, 4096);
  reader_.BeginBatch();
  ASSERT_TRUE(reader_.Offered(key, 4096, 4096));
  const std::optional<uint64_t> ticket = owner_.Withdraw(slot);
  ASSERT_TRUE(ticket.has_value()) << "a batch is under way";
  EXPECT_FALSE(owner_.Released(slot, *ticket));
  EXPECT_FALSE(owner_.AskForWakeup(*ticket));
  EXPECT_TRUE(reader_.EndBatch()) << "the owner asked to be woken";
  EXPECT_TRUE(owner_.Released(slot, *ticket));
  // A batch after the withdrawal does not see it, and the next one needs no wake-up.
  reader_.BeginBatch();
  EXPECT_FALSE(reader_.Offered(key, 4096, 4096));
  EXPECT_FALSE(reader_.EndBatch());
}

TEST_F(OfferTableTest, SlotsRunOutAndComeBack) {
  std::vector<uint32_t> taken;
  for (uint32_t i = 0; i < kOfferSlots; ++i) {
    std::optional<uint32_t> slot = owner_.TakeSlot();
    ASSERT_TRUE(slot.has_value()) << i;
    taken.push_back(*slot);
  }
  EXPECT_FALSE(owner_.TakeSlot().has_value());
  EXPECT_FALSE(owner_.Withdraw(taken[7]).has_value());
  EXPECT_EQ(owner_.TakeSlot(), taken[7]);
}

// Over a real pair of fabrics.
class ShmOfferTest : public ::testing::Test, public testing::ShmPair {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  // The client's mapping of the table of the server's offers, which the client
  // reads and a hostile client can write.
  OfferTable* ServerOffers() {
    auto* base = reinterpret_cast<std::byte*>(Segment()) + fabric::shm::kOfferTablesOffset;
    return reinterpret_cast<OfferTable*>(base) + 1;
  }
};

TEST_F(ShmOfferTest, ReadsOfPublishedOffersGoWithoutAskingTheOwner) {
  auto& counters = fabric::shm::ReadCounters();
  const uint64_t unasked_before = counters.unasked.load();
  ReadOffer(1024 * 1024 + 3);  // and a read past it is refused by the owner
  EXPECT_EQ(counters.unasked.load(), unasked_before + 1);
}

TEST_F(ShmOfferTest, OffersBeyondTheTableAreReadByAskingTheOwner) {
  auto payload = testing::MakePayload({4096}, 5);
  std::memcpy(server_memory_.data(), payload[0].data(), 4096);
  std::vector<uint32_t> keys;
  for (uint32_t i = 0; i <= kOfferSlots; ++i) {
    auto key = accepted_->Expose(server_memory_.data(), 4096, server_keys_.lkey);
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    keys.push_back(*key);
  }
  const uint64_t unasked_before = fabric::shm::ReadCounters().unasked.load();
  const uint64_t one_copy_before = fabric::shm::ReadCounters().one_copy.load();
  const fabric::RemoteRegion remote{reinterpret_cast<uint64_t>(server_memory_.data()), keys.back(),
                                    4096};
  ASSERT_TRUE(endpoint_->PostRead(remote, client_memory_.data(), client_keys_.lkey, 1).ok());
  fabric::Completion read = client_completions_.Next();
  ASSERT_EQ(read.kind, fabric::CompletionKind::kRead);
  ASSERT_TRUE(read.status.ok()) << read.status.ToString();
  EXPECT_EQ(std::memcmp(client_memory_.data(), payload[0].data(), 4096), 0);
  EXPECT_EQ(fabric::shm::ReadCounters().unasked.load(), unasked_before);
  EXPECT_EQ(fabric::shm::ReadCounters().one_copy.load(), one_copy_before + 1);
}

TEST_F(ShmOfferTest, AReaderThatClaimsAnEndlessBatchDelaysOnlyItsOwnReleases) {
  auto key = accepted_->Expose(server_memory_.data(), 4096, server_keys_.lkey);
  ASSERT_TRUE(key.ok());
  ServerOffers()->reading.store(1);  // "a batch is under way", forever
  auto released = std::make_shared<std::promise<void>>();
  accepted_->Revoke(*key, [released] { released->set_value(); });
  auto done = released->get_future();
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout)
      << "released while the reader said it was reading";
  // The connection ends: its releases run.
  endpoint_->Close(Status::Cancelled("the hostile reader goes"));
  EXPECT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready);
}

TEST_F(ShmOfferTest, AWithdrawalHeldBackIsReleasedWhenTheBatchEnds) {
  auto key = accepted_->Expose(server_memory_.data(), 4096, server_keys_.lkey);
  ASSERT_TRUE(key.ok());
  ServerOffers()->reading.store(41);
  auto released = std::make_shared<std::promise<void>>();
  accepted_->Revoke(*key, [released] { released->set_value(); });
  auto done = released->get_future();
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  ServerOffers()->reading.store(42);
  WakeServer();  // as the reader's EndBatch does when the owner asked
  EXPECT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready);
}

}  // namespace
}  // namespace artune::transport
