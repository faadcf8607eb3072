#include "control_codec.h"

namespace artune::transport {

control::Knobs ToKnobs(const Config& config) {
  control::Knobs knobs;
  knobs.set_eager_threshold(config.eager_threshold);
  knobs.set_chunk_size(config.chunk_size);
  knobs.set_pipeline_depth(config.pipeline_depth);
  knobs.set_coalesce_limit(config.coalesce_limit);
  knobs.set_max_outstanding(config.max_outstanding);
  knobs.set_eager_buffer_count(config.eager_buffer_count);
  knobs.set_fabric(static_cast<uint32_t>(config.fabric));
  knobs.set_polling(static_cast<uint32_t>(config.polling));
  knobs.set_timeout_ms(config.timeout_ms);
  knobs.set_handler_inline(static_cast<uint32_t>(config.handler_inline));
  knobs.set_poll_spin_us(config.poll_spin_us);
  return knobs;
}

Config FromKnobs(const control::Knobs& knobs) {
  Config config;
  config.eager_threshold = knobs.eager_threshold();
  config.chunk_size = knobs.chunk_size();
  config.pipeline_depth = knobs.pipeline_depth();
  config.coalesce_limit = knobs.coalesce_limit();
  config.max_outstanding = knobs.max_outstanding();
  config.eager_buffer_count = knobs.eager_buffer_count();
  // Out-of-range enum values map to a value ValidateConfig would never see as valid
  // input from a file; clamp to auto/event so a bad peer cannot produce UB here.
  config.fabric = knobs.fabric() <= static_cast<uint32_t>(FabricKind::kShm)
                      ? static_cast<FabricKind>(knobs.fabric())
                      : FabricKind::kAuto;
  config.polling =
      knobs.polling() <= 2 ? static_cast<PollingMode>(knobs.polling()) : PollingMode::kEvent;
  config.poll_spin_us = knobs.poll_spin_us();
  config.timeout_ms = knobs.timeout_ms();
  config.handler_inline = knobs.handler_inline() <= 1
                              ? static_cast<HandlerInline>(knobs.handler_inline())
                              : HandlerInline::kOff;
  return config;
}

Config WithLocalKnobs(Config negotiated, const Config& local) {
  negotiated.idle_timeout_ms = local.idle_timeout_ms;
  negotiated.verbs_device = local.verbs_device;
  negotiated.verbs_port = local.verbs_port;
  negotiated.verbs_gid_index = local.verbs_gid_index;
  negotiated.verbs_mtu = local.verbs_mtu;
  negotiated.verbs_inline_size = local.verbs_inline_size;
  negotiated.verbs_qp_timeout = local.verbs_qp_timeout;
  negotiated.verbs_retry_count = local.verbs_retry_count;
  return negotiated;
}

control::StatsResponse ToProto(const Stats& stats) {
  control::StatsResponse proto;
  for (const ProtocolStats& counters : stats.by_protocol) {
    control::ProtocolCounters* out = proto.add_by_protocol();
    out->set_slices(counters.slices);
    out->set_bytes(counters.bytes);
    for (uint64_t count : counters.slices_by_bucket) out->add_slices_by_bucket(count);
  }
  proto.set_calls_started(stats.calls_started);
  proto.set_calls_completed(stats.calls_completed);
  proto.set_calls_failed(stats.calls_failed);
  proto.set_connections_accepted(stats.connections_accepted);
  proto.set_connections_dropped(stats.connections_dropped);
  proto.set_shm_reads_one_copy(stats.shm_reads_one_copy);
  proto.set_shm_reads_owner_copy(stats.shm_reads_owner_copy);
  proto.set_shm_one_copy_refused(stats.shm_one_copy_refused);
  return proto;
}

Stats FromProto(const control::StatsResponse& proto) {
  Stats stats;
  for (int p = 0; p < kProtocolCount && p < proto.by_protocol_size(); ++p) {
    const control::ProtocolCounters& counters = proto.by_protocol(p);
    stats.by_protocol[p].slices = counters.slices();
    stats.by_protocol[p].bytes = counters.bytes();
    for (int b = 0; b < kLog2BucketCount && b < counters.slices_by_bucket_size(); ++b) {
      stats.by_protocol[p].slices_by_bucket[b] = counters.slices_by_bucket(b);
    }
  }
  stats.calls_started = proto.calls_started();
  stats.calls_completed = proto.calls_completed();
  stats.calls_failed = proto.calls_failed();
  stats.connections_accepted = proto.connections_accepted();
  stats.connections_dropped = proto.connections_dropped();
  stats.shm_reads_one_copy = proto.shm_reads_one_copy();
  stats.shm_reads_owner_copy = proto.shm_reads_owner_copy();
  stats.shm_one_copy_refused = proto.shm_one_copy_refused();
  return stats;
}

}  // namespace artune::transport
