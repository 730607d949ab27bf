/* A minimal macOS-shaped <sys/proc_info.h>, for a COMPILE-ONLY check of native/proc_darwin.cc on
 * Linux (test/native-build.test.ts). Only the flavors, constants and structs that file uses, with
 * the field names, types and order of Apple's header (xnu bsd/sys/proc_info.h, xnu-11417.101.15),
 * including every member of the unions whose size sets the layout. Darwin types that Linux spells
 * differently are spelled out here (sockaddr_un: sun_len + a one-byte sa_family_t). Never run. */
#pragma once
#include <netinet/in.h> /* struct in_addr, struct in6_addr: the same 4 and 16 bytes on Darwin */
#include <stdint.h>
#include <sys/types.h>

#define MAXCOMLEN 16
#define SOCK_MAXADDRLEN 255
#define IF_NAMESIZE 16
#define MAX_KCTL_NAME 96

#define PROC_ALL_PIDS 1

#define PROC_PIDTBSDINFO 3
#define PROC_PIDTASKINFO 4
#define PROC_PIDT_SHORTBSDINFO 13

#define PROC_PIDFDSOCKETINFO 3
#define PROC_PIDFDPIPEINFO 6

struct proc_bsdinfo {
  uint32_t pbi_flags;
  uint32_t pbi_status;
  uint32_t pbi_xstatus;
  uint32_t pbi_pid;
  uint32_t pbi_ppid;
  uid_t pbi_uid;
  gid_t pbi_gid;
  uid_t pbi_ruid;
  gid_t pbi_rgid;
  uid_t pbi_svuid;
  gid_t pbi_svgid;
  uint32_t rfu_1;
  char pbi_comm[MAXCOMLEN];
  char pbi_name[2 * MAXCOMLEN];
  uint32_t pbi_nfiles;
  uint32_t pbi_pgid;
  uint32_t pbi_pjobc;
  uint32_t e_tdev;
  uint32_t e_tpgid;
  int32_t pbi_nice;
  uint64_t pbi_start_tvsec;
  uint64_t pbi_start_tvusec;
};

struct proc_bsdshortinfo {
  uint32_t pbsi_pid;
  uint32_t pbsi_ppid;
  uint32_t pbsi_pgid;
  uint32_t pbsi_status;
  char pbsi_comm[MAXCOMLEN];
  uint32_t pbsi_flags;
  uid_t pbsi_uid;
  gid_t pbsi_gid;
  uid_t pbsi_ruid;
  gid_t pbsi_rgid;
  uid_t pbsi_svuid;
  gid_t pbsi_svgid;
  uint32_t pbsi_rfu;
};

struct proc_taskinfo {
  uint64_t pti_virtual_size;
  uint64_t pti_resident_size;
  uint64_t pti_total_user;
  uint64_t pti_total_system;
  uint64_t pti_threads_user;
  uint64_t pti_threads_system;
  int32_t pti_policy;
  int32_t pti_faults;
  int32_t pti_pageins;
  int32_t pti_cow_faults;
  int32_t pti_messages_sent;
  int32_t pti_messages_received;
  int32_t pti_syscalls_mach;
  int32_t pti_syscalls_unix;
  int32_t pti_csw;
  int32_t pti_threadnum;
  int32_t pti_numrunning;
  int32_t pti_priority;
};

struct proc_fileinfo {
  uint32_t fi_openflags;
  uint32_t fi_status;
  off_t fi_offset;
  int32_t fi_type;
  uint32_t fi_guardflags;
};

struct vinfo_stat {
  uint32_t vst_dev;
  uint16_t vst_mode;
  uint16_t vst_nlink;
  uint64_t vst_ino;
  uid_t vst_uid;
  gid_t vst_gid;
  int64_t vst_atime;
  int64_t vst_atimensec;
  int64_t vst_mtime;
  int64_t vst_mtimensec;
  int64_t vst_ctime;
  int64_t vst_ctimensec;
  int64_t vst_birthtime;
  int64_t vst_birthtimensec;
  off_t vst_size;
  int64_t vst_blocks;
  int32_t vst_blksize;
  uint32_t vst_flags;
  uint32_t vst_gen;
  uint32_t vst_rdev;
  int64_t vst_qspare[2];
};

/* Darwin's <sys/un.h> shape (sa_family_t is one byte there). */
struct proc_info_stub_sockaddr_un {
  unsigned char sun_len;
  uint8_t sun_family;
  char sun_path[104];
};

struct in4in6_addr {
  u_int32_t i46a_pad32[3];
  struct in_addr i46a_addr4;
};

struct in_sockinfo {
  int insi_fport;
  int insi_lport;
  uint64_t insi_gencnt;
  uint32_t insi_flags;
  uint32_t insi_flow;
  uint8_t insi_vflag;
  uint8_t insi_ip_ttl;
  uint32_t rfu_1;
  union {
    struct in4in6_addr ina_46;
    struct in6_addr ina_6;
  } insi_faddr;
  union {
    struct in4in6_addr ina_46;
    struct in6_addr ina_6;
  } insi_laddr;
  struct {
    u_char in4_tos;
  } insi_v4;
  struct {
    uint8_t in6_hlim;
    int in6_cksum;
    u_short in6_ifindex;
    short in6_hops;
  } insi_v6;
};

#define TSI_T_NTIMERS 4

struct tcp_sockinfo {
  struct in_sockinfo tcpsi_ini;
  int tcpsi_state;
  int tcpsi_timer[TSI_T_NTIMERS];
  int tcpsi_mss;
  uint32_t tcpsi_flags;
  uint32_t rfu_1;
  uint64_t tcpsi_tp;
};

struct un_sockinfo {
  uint64_t unsi_conn_so;
  uint64_t unsi_conn_pcb;
  union {
    struct proc_info_stub_sockaddr_un ua_sun;
    char ua_dummy[SOCK_MAXADDRLEN];
  } unsi_addr;
  union {
    struct proc_info_stub_sockaddr_un ua_sun;
    char ua_dummy[SOCK_MAXADDRLEN];
  } unsi_caddr;
};

struct ndrv_info {
  uint32_t ndrvsi_if_family;
  uint32_t ndrvsi_if_unit;
  char ndrvsi_if_name[IF_NAMESIZE];
};

struct kern_event_info {
  uint32_t kesi_vendor_code_filter;
  uint32_t kesi_class_filter;
  uint32_t kesi_subclass_filter;
};

struct kern_ctl_info {
  uint32_t kcsi_id;
  uint32_t kcsi_reg_unit;
  uint32_t kcsi_flags;
  uint32_t kcsi_recvbufsize;
  uint32_t kcsi_sendbufsize;
  uint32_t kcsi_unit;
  char kcsi_name[MAX_KCTL_NAME];
};

struct vsock_sockinfo {
  uint32_t local_cid;
  uint32_t local_port;
  uint32_t remote_cid;
  uint32_t remote_port;
};

#define SOI_S_ISDISCONNECTED 0x2000

struct sockbuf_info {
  uint32_t sbi_cc;
  uint32_t sbi_hiwat;
  uint32_t sbi_mbcnt;
  uint32_t sbi_mbmax;
  uint32_t sbi_lowat;
  short sbi_flags;
  short sbi_timeo;
};

enum {
  SOCKINFO_GENERIC = 0,
  SOCKINFO_IN = 1,
  SOCKINFO_TCP = 2,
  SOCKINFO_UN = 3,
  SOCKINFO_NDRV = 4,
  SOCKINFO_KERN_EVENT = 5,
  SOCKINFO_KERN_CTL = 6,
  SOCKINFO_VSOCK = 7,
};

struct socket_info {
  struct vinfo_stat soi_stat;
  uint64_t soi_so;
  uint64_t soi_pcb;
  int soi_type;
  int soi_protocol;
  int soi_family;
  short soi_options;
  short soi_linger;
  short soi_state;
  short soi_qlen;
  short soi_incqlen;
  short soi_qlimit;
  short soi_timeo;
  u_short soi_error;
  uint32_t soi_oobmark;
  struct sockbuf_info soi_rcv;
  struct sockbuf_info soi_snd;
  int soi_kind;
  uint32_t rfu_1;
  union {
    struct in_sockinfo pri_in;
    struct tcp_sockinfo pri_tcp;
    struct un_sockinfo pri_un;
    struct ndrv_info pri_ndrv;
    struct kern_event_info pri_kern_event;
    struct kern_ctl_info pri_kern_ctl;
    struct vsock_sockinfo pri_vsock;
  } soi_proto;
};

struct socket_fdinfo {
  struct proc_fileinfo pfi;
  struct socket_info psi;
};

struct pipe_info {
  struct vinfo_stat pipe_stat;
  uint64_t pipe_handle;
  uint64_t pipe_peerhandle;
  int pipe_status;
  int rfu_1;
};

struct pipe_fdinfo {
  struct proc_fileinfo pfi;
  struct pipe_info pipeinfo;
};
