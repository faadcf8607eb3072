/* The records iotrace.bpf.c writes into its BPF ring buffer, shared with the user
 * space reader (iotrace_backend.cc). Plain C, included by both sides: the BPF side
 * gets the __u32 family from vmlinux.h, user space from <linux/types.h>.
 *
 * Every record starts with a __u32 `kind`. Sizes are variable: a call record is
 * followed by `iovec_recorded` raw struct iovec entries, a data record by `length`
 * bytes (no flexible array members: the header is also compiled as ISO C++); the
 * ring buffer gives the reader each record's total size.
 *
 * Version this layout with IOTRACE_LAYOUT_VERSION when fields change: the BPF
 * object and the reader are always built together, so the version only guards
 * against a stale generated skeleton. */
#ifndef ARTUNE_PROBES_EBPF_IOTRACE_H_
#define ARTUNE_PROBES_EBPF_IOTRACE_H_

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define IOTRACE_LAYOUT_VERSION 2

/* UIO_MAXIOV: the kernel rejects calls with more iovecs than this. */
#define IOTRACE_MAX_IOVECS 1024
/* Payload bytes carried by one data record (--decode); the BPF side keeps twice
 * this in a per-CPU map, whose values are limited to 32 KiB. */
#define IOTRACE_DATA_CHUNK 8192
#define IOTRACE_TASK_COMM_LEN 16

enum iotrace_record_kind {
  IOTRACE_RECORD_CALL = 1,   /* one completed I/O call on a TCP socket */
  IOTRACE_RECORD_DATA = 2,   /* a piece of the bytes one call transferred */
  IOTRACE_RECORD_SOCKET = 3, /* a TCP connection began (connect, accept) or its fd closed */
};

enum iotrace_socket_event {
  IOTRACE_SOCKET_CONNECT = 1, /* connect() returned 0 or EINPROGRESS */
  IOTRACE_SOCKET_ACCEPT = 2,  /* accept()/accept4() returned this fd */
  IOTRACE_SOCKET_CLOSE = 3,   /* close() of a TCP socket fd (read before it goes) */
};

/* Numbering matches artune::probes::IoSyscall. */
enum iotrace_syscall {
  IOTRACE_SENDMSG = 0,
  IOTRACE_RECVMSG = 1,
  IOTRACE_WRITEV = 2,
  IOTRACE_READV = 3,
  IOTRACE_SENDTO = 4,
  IOTRACE_RECVFROM = 5,
  IOTRACE_WRITE = 6,
  IOTRACE_READ = 7,
  /* Not I/O calls: only tracked between entry and exit in the BPF program. */
  IOTRACE_CONNECT = 8,
};

/* The connection of a socket as the kernel sees it, ports in host byte order.
 * IPv4 addresses use the first 4 bytes. */
struct iotrace_connection {
  __u8 local_address[16];
  __u8 remote_address[16];
  __u16 local_port;
  __u16 remote_port;
  __u16 family; /* AF_INET or AF_INET6 */
  __u16 reserved;
};

/* Layout of the user's struct iovec on x86-64. */
struct iotrace_iovec {
  __u64 base;
  __u64 length;
};

struct iotrace_call_record {
  __u32 kind; /* IOTRACE_RECORD_CALL */
  __u32 syscall;
  __u32 pid;
  __u32 tid;
  __s32 fd;
  /* iovcnt the caller passed (1 for write/read/sendto/recvfrom) ... */
  __u32 iovec_count;
  /* ... and how many follow this header: less only when the user memory could
   * not be read (iovec_count above IOTRACE_MAX_IOVECS is rejected by the kernel). */
  __u32 iovec_recorded;
  __u32 data_records;       /* IOTRACE_RECORD_DATA records that follow (--decode) */
  __s64 result;             /* the syscall's return value: bytes, or -errno */
  __u64 start_ns;           /* bpf_ktime_get_ns (CLOCK_MONOTONIC) at entry */
  __u64 end_ns;             /* at exit */
  __u64 data_bytes_dropped; /* transferred bytes not copied (--decode limit, ring full) */
  struct iotrace_connection connection;
  /* followed by iovec_recorded struct iotrace_iovec */
};

struct iotrace_data_record {
  __u32 kind; /* IOTRACE_RECORD_DATA */
  __u32 syscall;
  __u32 tid;
  __u32 length; /* bytes in data[] */
  __u64 offset; /* of data[0] within the call's transferred bytes */
  __u64 end_ns; /* end_ns of the call it belongs to */
  struct iotrace_connection connection;
  /* followed by `length` bytes */
};

struct iotrace_socket_record {
  __u32 kind;  /* IOTRACE_RECORD_SOCKET */
  __u32 event; /* enum iotrace_socket_event */
  __u32 pid;
  __u32 tid;
  __s32 fd;
  __u32 reserved;
  __u64 timestamp_ns; /* bpf_ktime_get_ns at the syscall's exit (close: entry) */
  struct iotrace_connection connection;
};

/* Counters the program keeps in its .bss; the reader reports them. */
struct iotrace_counters {
  __u64 records_lost;        /* call records the ring buffer had no room for */
  __u64 data_lost;           /* data records the ring buffer had no room for */
  __u64 inflight_lost;       /* calls not traced: the in-flight map was full */
  __u64 iovecs_unread;       /* calls whose iovec array could not be read */
  __u64 non_tcp_calls;       /* calls on sockets that are not TCP over IPv4/IPv6 */
  __u64 socket_records_lost; /* connect/accept/close records the ring had no room for */
};

#endif /* ARTUNE_PROBES_EBPF_IOTRACE_H_ */
