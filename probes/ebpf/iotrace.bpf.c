// SPDX-License-Identifier: GPL-2.0
/* Traces the socket I/O calls of one process: sendmsg, recvmsg, writev, readv,
 * sendto, recvfrom, write and read, on TCP sockets only. For each completed call it
 * writes one iotrace_call_record (every iov_len, the bytes transferred, the
 * connection, timestamps) into the `events` ring buffer and, with capture_data, the
 * transferred bytes as iotrace_data_records. All filtering happens here: calls of
 * other processes, non-socket fds and non-TCP sockets never reach user space.
 *
 * Entry and exit are separate tracepoints: the entry handler decides whether the
 * call is traced and remembers its arguments per thread in `inflight`; the exit
 * handler reads the iovec array (still valid: the syscall has not returned) and
 * emits the records. connect, accept and close of TCP sockets give socket records
 * (see emit_socket_record). Nothing blocks: when the ring buffer is full the record is
 * dropped and counted. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "iotrace.h"

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define IPPROTO_TCP 6
#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* Filters, set by user space before the program is loaded. */
const volatile __u32 target_tgid = 0;                        /* 0: no pid filter */
const volatile char target_comm[IOTRACE_TASK_COMM_LEN] = {}; /* "": no comm filter */
const volatile bool capture_data = false;
const volatile __u64 max_data_bytes_per_call = 0;

struct iotrace_counters counters = {};

struct inflight_call {
  __u64 start_ns;
  __u64 buffer; /* user pointer: iovec array, or the plain buffer */
  __u64 count;  /* iovcnt, or the plain buffer's length */
  __s32 fd;
  __u32 syscall;
  __u32 plain_buffer; /* 1: write/read/sendto/recvfrom (one buffer, no iovec array) */
  __u32 reserved;
  struct iotrace_connection connection;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32); /* tid */
  __type(value, struct inflight_call);
} inflight SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 << 20); /* resized by user space before load */
} events SEC(".maps");

/* Records are built here, then copied into the ring with bpf_ringbuf_output: their
 * size is only known at the end and ringbuf_reserve needs a constant size. */
struct call_scratch {
  struct iotrace_call_record record;
  struct iotrace_iovec iovecs[IOTRACE_MAX_IOVECS];
};

/* Progress of copying one call's bytes (--decode). It lives in a map, not on the
 * stack, on purpose: the verifier then sees its fields as unknown values and
 * checks the bpf_loop callback once, instead of walking every iteration with
 * exact constants until it gives up. */
struct copy_state {
  __u64 remaining;    /* transferred bytes still to copy */
  __u64 offset;       /* of the next byte within the call's transfer */
  __u64 iovec_offset; /* within the current iovec */
  __u64 dropped;      /* bytes not copied */
  __u32 iovec_index;
  __u32 iovec_count;
  __u32 fill;    /* bytes waiting in data[] */
  __u32 records; /* data records written */
};

struct data_scratch {
  struct copy_state state;
  struct iotrace_data_record record; /* record and data[] go out as one piece */
  /* Twice the chunk, so that `fill < CHUNK` plus a copy of at most CHUNK bytes
   * stays inside the buffer in a way the verifier can prove. */
  __u8 data[2 * IOTRACE_DATA_CHUNK];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct call_scratch);
} call_buffer SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct data_scratch);
} data_buffer SEC(".maps");

/* Wake the reader only when the ring is filling up: a wakeup per record would
 * cost the traced program more than the record itself. The reader also drains
 * on its own every poll interval (100 ms), so nothing waits longer than that. */
static __always_inline __u64 wakeup_flag(void) {
  __u64 pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
  __u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
  return pending > size / 8 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline bool process_is_traced(__u32 tgid) {
  if (target_tgid != 0 && tgid != target_tgid) return false;
  if (target_comm[0] == '\0') return true;
  /* The process name, not the thread's: gRPC renames its threads. */
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  char comm[IOTRACE_TASK_COMM_LEN];
  BPF_CORE_READ_INTO(&comm, task, group_leader, comm);
  for (int i = 0; i < IOTRACE_TASK_COMM_LEN; i++) {
    if (comm[i] != target_comm[i]) return false;
    if (comm[i] == '\0') break;
  }
  return true;
}

/* Finds fd's file in the current task; fills `connection` and returns true when it
 * is a TCP socket over IPv4 or IPv6. */
static __always_inline bool lookup_tcp_socket(int fd, struct iotrace_connection* connection) {
  if (fd < 0) return false;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  struct fdtable* fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt) return false;
  unsigned int max_fds = BPF_CORE_READ(fdt, max_fds);
  if ((unsigned int)fd >= max_fds) return false;
  struct file** fd_array = BPF_CORE_READ(fdt, fd);
  struct file* file = NULL;
  if (bpf_core_read(&file, sizeof(file), &fd_array[fd]) || !file) return false;
  umode_t mode = BPF_CORE_READ(file, f_inode, i_mode);
  if ((mode & S_IFMT) != S_IFSOCK) return false;

  struct socket* socket = BPF_CORE_READ(file, private_data);
  struct sock* sk = BPF_CORE_READ(socket, sk);
  if (!sk) return false;
  __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
  __u16 type = BPF_CORE_READ(sk, sk_type);
  __u16 protocol = BPF_CORE_READ(sk, sk_protocol);
  if ((family != AF_INET && family != AF_INET6) || type != SOCK_STREAM || protocol != IPPROTO_TCP) {
    __sync_fetch_and_add(&counters.non_tcp_calls, 1);
    return false;
  }
  connection->family = family;
  connection->local_port = BPF_CORE_READ(sk, __sk_common.skc_num);
  connection->remote_port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
  /* Explicit sizes: BPF_CORE_READ_INTO on an array destination reads one element. */
  if (family == AF_INET) {
    bpf_core_read(connection->local_address, 4, &sk->__sk_common.skc_rcv_saddr);
    bpf_core_read(connection->remote_address, 4, &sk->__sk_common.skc_daddr);
  } else {
    bpf_core_read(connection->local_address, 16, &sk->__sk_common.skc_v6_rcv_saddr);
    bpf_core_read(connection->remote_address, 16, &sk->__sk_common.skc_v6_daddr);
  }
  return true;
}

static __always_inline int enter_call(__u32 syscall, long fd, __u64 buffer, __u64 count,
                                      bool plain_buffer) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (!process_is_traced(pid_tgid >> 32)) return 0;
  struct inflight_call call = {};
  if (!lookup_tcp_socket((int)fd, &call.connection)) return 0;
  call.start_ns = bpf_ktime_get_ns();
  call.buffer = buffer;
  call.count = count;
  call.fd = (__s32)fd;
  call.syscall = syscall;
  call.plain_buffer = plain_buffer;
  __u32 tid = (__u32)pid_tgid;
  if (bpf_map_update_elem(&inflight, &tid, &call, BPF_ANY))
    __sync_fetch_and_add(&counters.inflight_lost, 1);
  return 0;
}

/* sendmsg/recvmsg: the iovec array is behind the user's msghdr. */
static __always_inline int enter_msg_call(__u32 syscall, long fd, __u64 user_msghdr) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (!process_is_traced(pid_tgid >> 32)) return 0;
  struct user_msghdr msg = {};
  if (bpf_probe_read_user(&msg, sizeof(msg), (void*)user_msghdr)) return 0;
  return enter_call(syscall, fd, (__u64)msg.msg_iov, msg.msg_iovlen, false);
}

/* Sends the bytes waiting in the data scratch as one data record. */
static __always_inline void flush_data(struct data_scratch* scratch) {
  struct copy_state* state = &scratch->state;
  __u32 fill = state->fill;
  if (fill == 0) return;
  if (fill > IOTRACE_DATA_CHUNK) fill = IOTRACE_DATA_CHUNK;
  scratch->record.length = fill;
  scratch->record.offset = state->offset - fill;
  if (bpf_ringbuf_output(&events, &scratch->record, sizeof(scratch->record) + fill,
                         wakeup_flag())) {
    /* Stop copying: the bytes that reach user space stay one contiguous prefix
     * of the transfer, and the rest is reported as one gap. */
    __sync_fetch_and_add(&counters.data_lost, 1);
    state->dropped += fill + state->remaining;
    state->remaining = 0;
  } else {
    state->records++;
  }
  state->fill = 0;
}

/* One step of the copy: moves bytes of the current iovec into the data scratch
 * (at most up to the end of the iovec or of the chunk), flushing a full chunk to
 * the ring. Returns 1 to stop. */
static long copy_step(__u64 index, void* context) {
  __u32 zero = 0;
  struct call_scratch* call = bpf_map_lookup_elem(&call_buffer, &zero);
  struct data_scratch* scratch = bpf_map_lookup_elem(&data_buffer, &zero);
  if (!call || !scratch) return 1;
  struct copy_state* state = &scratch->state;
  if (state->remaining == 0) return 1;
  __u32 i = state->iovec_index;
  if (i >= state->iovec_count || i >= IOTRACE_MAX_IOVECS) return 1;
  __u64 length = call->iovecs[i].length;
  if (state->iovec_offset >= length) {
    state->iovec_index = i + 1;
    state->iovec_offset = 0;
    return 0;
  }
  __u32 fill = state->fill & (IOTRACE_DATA_CHUNK - 1);
  __u64 n = length - state->iovec_offset;
  if (n > state->remaining) n = state->remaining;
  if (n > IOTRACE_DATA_CHUNK - fill) n = IOTRACE_DATA_CHUNK - fill;
  if (n > IOTRACE_DATA_CHUNK) n = IOTRACE_DATA_CHUNK;
  if (n == 0) return 1;
  const void* source = (const void*)(call->iovecs[i].base + state->iovec_offset);
  if (bpf_probe_read_user(&scratch->data[fill], n, source)) {
    state->dropped += state->remaining;
    state->remaining = 0;
    return 1;
  }
  state->fill = fill + n;
  state->offset += n;
  state->iovec_offset += n;
  state->remaining -= n;
  if (state->fill >= IOTRACE_DATA_CHUNK || state->remaining == 0) flush_data(scratch);
  return 0;
}

/* The call's buffers into scratch->iovecs (a plain buffer as one iovec), as
 * many as fit; sets the record's iovec counts. Returns how many were read. */
static __always_inline __u32 read_call_iovecs(struct inflight_call* call,
                                              struct call_scratch* scratch) {
  struct iotrace_call_record* record = &scratch->record;
  __u64 count = call->count;
  __u32 recorded = 0;
  if (call->plain_buffer) {
    record->iovec_count = 1;
    scratch->iovecs[0].base = call->buffer;
    scratch->iovecs[0].length = count;
    recorded = 1;
  } else {
    record->iovec_count = count > 0xffffffffULL ? 0xffffffffU : (__u32)count;
    if (count > IOTRACE_MAX_IOVECS) count = IOTRACE_MAX_IOVECS;
    __u32 bytes = (__u32)count * sizeof(struct iotrace_iovec);
    bytes &= (2 * IOTRACE_MAX_IOVECS * sizeof(struct iotrace_iovec)) - 1;
    if (bytes > IOTRACE_MAX_IOVECS * sizeof(struct iotrace_iovec))
      bytes = IOTRACE_MAX_IOVECS * sizeof(struct iotrace_iovec);
    if (bytes > 0) {
      if (bpf_probe_read_user(scratch->iovecs, bytes, (void*)call->buffer) == 0) {
        recorded = (__u32)count;
      } else {
        __sync_fetch_and_add(&counters.iovecs_unread, 1);
      }
    }
  }
  record->iovec_recorded = recorded;
  return recorded;
}

/* The bytes the call moved (ret of them, over its `recorded` iovecs) to the ring
 * as data records, up to max_data_bytes_per_call; the call record says how many
 * records went out and how many bytes were dropped. */
static __always_inline void copy_call_data(struct inflight_call* call,
                                           struct iotrace_call_record* record, __u32 tid, long ret,
                                           __u32 recorded) {
  __u32 zero = 0;
  struct data_scratch* data = bpf_map_lookup_elem(&data_buffer, &zero);
  if (!data) return;
  data->record.kind = IOTRACE_RECORD_DATA;
  data->record.syscall = call->syscall;
  data->record.tid = tid;
  data->record.end_ns = record->end_ns;
  data->record.connection = call->connection;
  struct copy_state* state = &data->state;
  state->remaining = (__u64)ret;
  state->dropped = 0;
  if (state->remaining > max_data_bytes_per_call) {
    state->dropped = state->remaining - max_data_bytes_per_call;
    state->remaining = max_data_bytes_per_call;
  }
  state->offset = 0;
  state->iovec_offset = 0;
  state->iovec_index = 0;
  state->iovec_count = recorded;
  state->fill = 0;
  state->records = 0;
  /* Each step passes an empty or finished iovec, copies up to the end of an
   * iovec, or fills a chunk: this many steps always suffice. */
  __u64 steps = 2 * (__u64)recorded + max_data_bytes_per_call / IOTRACE_DATA_CHUNK + 2;
  if (steps > 8000000) steps = 8000000; /* bpf_loop's limit */
  bpf_loop((__u32)steps, copy_step, NULL, 0);
  flush_data(data);
  state->dropped += state->remaining;
  record->data_records = state->records;
  record->data_bytes_dropped = state->dropped;
}

static __always_inline int exit_call(long ret) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (target_tgid != 0 && (pid_tgid >> 32) != target_tgid) return 0;
  __u32 tid = (__u32)pid_tgid;
  struct inflight_call* call = bpf_map_lookup_elem(&inflight, &tid);
  if (!call) return 0;
  __u32 zero = 0;
  struct call_scratch* scratch = bpf_map_lookup_elem(&call_buffer, &zero);
  if (!scratch) goto done;

  struct iotrace_call_record* record = &scratch->record;
  record->kind = IOTRACE_RECORD_CALL;
  record->syscall = call->syscall;
  record->pid = pid_tgid >> 32;
  record->tid = tid;
  record->fd = call->fd;
  record->result = ret;
  record->start_ns = call->start_ns;
  record->end_ns = bpf_ktime_get_ns();
  record->connection = call->connection;
  record->data_records = 0;
  record->data_bytes_dropped = 0;

  __u32 recorded = read_call_iovecs(call, scratch);
  if (capture_data && ret > 0) copy_call_data(call, record, tid, ret, recorded);

  __u32 size = recorded * sizeof(struct iotrace_iovec);
  if (size > IOTRACE_MAX_IOVECS * sizeof(struct iotrace_iovec))
    size = IOTRACE_MAX_IOVECS * sizeof(struct iotrace_iovec);
  if (bpf_ringbuf_output(&events, scratch, sizeof(*record) + size, wakeup_flag()))
    __sync_fetch_and_add(&counters.records_lost, 1);
done:
  bpf_map_delete_elem(&inflight, &tid);
  return 0;
}

/* Connection lifecycle: a record when a TCP connection begins (connect returned 0
 * or EINPROGRESS: the kernel has bound the local port and set the peer; accept
 * returned a new fd) and when the application closes a TCP socket fd, so user
 * space can open flows from their first byte and end them, and a later
 * connection on a reused fd or 4-tuple is a new one. */
static __always_inline void emit_socket_record(__u32 event, int fd,
                                               const struct iotrace_connection* connection) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  struct iotrace_socket_record record = {};
  record.kind = IOTRACE_RECORD_SOCKET;
  record.event = event;
  record.pid = pid_tgid >> 32;
  record.tid = (__u32)pid_tgid;
  record.fd = fd;
  record.timestamp_ns = bpf_ktime_get_ns();
  record.connection = *connection;
  if (bpf_ringbuf_output(&events, &record, sizeof(record), wakeup_flag()))
    __sync_fetch_and_add(&counters.socket_records_lost, 1);
}

/* connect(): the socket is only worth a record once the call has returned. */
static __always_inline int enter_connect(long fd) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (!process_is_traced(pid_tgid >> 32)) return 0;
  struct inflight_call call = {};
  call.fd = (__s32)fd;
  call.syscall = IOTRACE_CONNECT;
  __u32 tid = (__u32)pid_tgid;
  if (bpf_map_update_elem(&inflight, &tid, &call, BPF_ANY))
    __sync_fetch_and_add(&counters.inflight_lost, 1);
  return 0;
}

#define EINPROGRESS 115

static __always_inline int exit_connect(long ret) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (target_tgid != 0 && (pid_tgid >> 32) != target_tgid) return 0;
  __u32 tid = (__u32)pid_tgid;
  struct inflight_call* call = bpf_map_lookup_elem(&inflight, &tid);
  if (!call) return 0;
  if (call->syscall == IOTRACE_CONNECT && (ret == 0 || ret == -EINPROGRESS)) {
    struct iotrace_connection connection = {};
    int fd = call->fd;
    if (lookup_tcp_socket(fd, &connection))
      emit_socket_record(IOTRACE_SOCKET_CONNECT, fd, &connection);
  }
  bpf_map_delete_elem(&inflight, &tid);
  return 0;
}

static __always_inline int exit_accept(long ret) {
  if (ret < 0) return 0;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (!process_is_traced(pid_tgid >> 32)) return 0;
  struct iotrace_connection connection = {};
  if (lookup_tcp_socket((int)ret, &connection))
    emit_socket_record(IOTRACE_SOCKET_ACCEPT, (int)ret, &connection);
  return 0;
}

static __always_inline int enter_close(long fd) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (!process_is_traced(pid_tgid >> 32)) return 0;
  struct iotrace_connection connection = {};
  if (lookup_tcp_socket((int)fd, &connection))
    emit_socket_record(IOTRACE_SOCKET_CLOSE, (int)fd, &connection);
  return 0;
}

#define ARG(n) ((__u64)ctx->args[n])

SEC("tracepoint/syscalls/sys_enter_connect")
int enter_connect_tp(struct trace_event_raw_sys_enter* ctx) { return enter_connect((long)ARG(0)); }
SEC("tracepoint/syscalls/sys_exit_connect")
int exit_connect_tp(struct trace_event_raw_sys_exit* ctx) { return exit_connect(ctx->ret); }
SEC("tracepoint/syscalls/sys_exit_accept")
int exit_accept_tp(struct trace_event_raw_sys_exit* ctx) { return exit_accept(ctx->ret); }
SEC("tracepoint/syscalls/sys_exit_accept4")
int exit_accept4_tp(struct trace_event_raw_sys_exit* ctx) { return exit_accept(ctx->ret); }
SEC("tracepoint/syscalls/sys_enter_close")
int enter_close_tp(struct trace_event_raw_sys_enter* ctx) { return enter_close((long)ARG(0)); }

SEC("tracepoint/syscalls/sys_enter_sendmsg")
int enter_sendmsg(struct trace_event_raw_sys_enter* ctx) {
  return enter_msg_call(IOTRACE_SENDMSG, (long)ARG(0), ARG(1));
}
SEC("tracepoint/syscalls/sys_enter_recvmsg")
int enter_recvmsg(struct trace_event_raw_sys_enter* ctx) {
  return enter_msg_call(IOTRACE_RECVMSG, (long)ARG(0), ARG(1));
}
SEC("tracepoint/syscalls/sys_enter_writev")
int enter_writev(struct trace_event_raw_sys_enter* ctx) {
  return enter_call(IOTRACE_WRITEV, (long)ARG(0), ARG(1), ARG(2), false);
}
SEC("tracepoint/syscalls/sys_enter_readv")
int enter_readv(struct trace_event_raw_sys_enter* ctx) {
  return enter_call(IOTRACE_READV, (long)ARG(0), ARG(1), ARG(2), false);
}
SEC("tracepoint/syscalls/sys_enter_sendto")
int enter_sendto(struct trace_event_raw_sys_enter* ctx) {
  return enter_call(IOTRACE_SENDTO, (long)ARG(0), ARG(1), ARG(2), true);
}
SEC("tracepoint/syscalls/sys_enter_recvfrom")
int enter_recvfrom(struct trace_event_raw_sys_enter* ctx) {
  return enter_call(IOTRACE_RECVFROM, (long)ARG(0), ARG(1), ARG(2), true);
}
SEC("tracepoint/syscalls/sys_enter_write")
int enter_write(struct trace_event_raw_sys_enter* ctx) {
  return enter_call(IOTRACE_WRITE, (long)ARG(0), ARG(1), ARG(2), true);
}
SEC("tracepoint/syscalls/sys_enter_read")
int enter_read(struct trace_event_raw_sys_enter* ctx) {
  return enter_call(IOTRACE_READ, (long)ARG(0), ARG(1), ARG(2), true);
}

#define EXIT_HANDLER(name)                   \
  SEC("tracepoint/syscalls/sys_exit_" #name) \
  int exit_##name(struct trace_event_raw_sys_exit* ctx) { return exit_call(ctx->ret); }

EXIT_HANDLER(sendmsg)
EXIT_HANDLER(recvmsg)
EXIT_HANDLER(writev)
EXIT_HANDLER(readv)
EXIT_HANDLER(sendto)
EXIT_HANDLER(recvfrom)
EXIT_HANDLER(write)
EXIT_HANDLER(read)

char LICENSE[] SEC("license") = "GPL";
