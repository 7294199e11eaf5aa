// Package bwrap is the sandbox backend "bwrap": every command runs under
// bubblewrap (Debian's bubblewrap package, /usr/bin/bwrap) in namespaces
// of its own, with rlimits and, where the kernel has it, Landlock. It is
// Talon's default backend on Linux.
//
// # What a command sees
//
// Each command gets new user, mount, PID, IPC, UTS, cgroup and network
// namespaces (the network namespace is shared with the host only when
// Spec.Network is set; without it there is no network at all, only a
// loopback of the command's own). Inside, it runs as uid and gid 1000
// ("sandbox") with no capabilities, no_new_privs, in a session of its own,
// and cannot create further user namespaces. Its filesystem is built from
// nothing:
//
//	/usr                  the host's /usr, read-only
//	/bin /sbin /lib*      the host's, read-only (symlinks into /usr on merged-/usr systems)
//	/etc                  only passwd, group, hosts and nsswitch.conf written by Talon
//	                      (users root, sandbox, nobody; localhost), and the host's
//	                      ld.so.cache, alternatives, ssl/certs, localtime, protocols,
//	                      services and os-release, read-only; resolv.conf, host.conf
//	                      and gai.conf too when Spec.Network is set
//	/workspace            Spec.Root, read-write: the only host directory a command can
//	                      write, besides read-write Spec.Mounts
//	Spec.Mounts           at their targets, read-only or read-write as given
//	/tmp                  a private tmpfs, fresh for each command, at most Limits.Memory bytes
//	/proc                 the command's own PID namespace; /proc/sys read-only
//	/dev                  bubblewrap's: null, zero, full, random, urandom, tty, pts, shm
//	/run/talon/exec       Talon's own binary, read-only (the helper below)
//
// The root itself is a read-only tmpfs. Nothing else of the host is there:
// no /home, /root, /var, /sys, no /etc/shadow, no host /proc. The
// environment is PATH, HOME=/workspace, LANG=C.UTF-8 and Command.Env;
// nothing of Talon's own environment. All processes of a command end with
// it: when its first process exits, is killed or times out, the PID
// namespace goes, and everything started inside with it.
//
// # Limits and the helper
//
// bubblewrap cannot set rlimits or Landlock rules, so bwrap does not exec
// the command directly but Talon's own binary (bind-mounted read-only at
// /run/talon/exec) with a hidden first argument. That helper, already
// inside every namespace, applies Landlock, sets the rlimits and then
// execs the command: the limits and rules are in place before the
// command's first instruction, and nothing can run between them (no race,
// unlike prlimit on a started process). The helper runs from this
// package's init, so any binary that links the package (talon, and the
// test binaries of packages that use the backend) can serve as it.
//
// The limits (Spec.Limits over sandbox.DefaultLimits): RLIMIT_NPROC
// (Processes; counted per command, since each command has its own user
// namespace, bubblewrap's init included), RLIMIT_NOFILE (OpenFiles),
// RLIMIT_FSIZE (FileSize; a write past it fails and raises SIGXFSZ),
// RLIMIT_CPU per process (CPUTime rounded up to seconds; SIGXCPU, then
// SIGKILL a second later), RLIMIT_AS (Memory, address space per process),
// RLIMIT_CORE 0, and the wall clock (Timeout, or Command.Timeout), after
// which the command's PID namespace is killed and Exit.TimedOut is set.
//
// When Talon runs as root, the namespace's user is root outside it (uid
// 0, with no capabilities), and the kernel does not apply RLIMIT_NPROC to
// root; the process limit is then a pids cgroup per command (cgroup v1's
// pids hierarchy, or cgroup v2 with the pids controller), into which
// Talon moves the namespace's first process while bwrap holds it
// (--block-fd), before anything else runs. Where Talon, as root,
// cannot create such a cgroup, Check fails and says so. Run as any other
// user, the sandbox's user is that user outside, and RLIMIT_NPROC holds.
//
// Memory: RLIMIT_AS bounds each process, and /tmp's tmpfs is mounted with
// a size of Limits.Memory, so that /tmp alone cannot hold more than a
// command may use (its pages belong to no process, and no rlimit counts
// them). As root, where the kernel has a memory controller (cgroup v1's
// memory hierarchy, or cgroup v2 with memory enabled down to Talon's
// directory), the command's cgroup also holds Limits.Memory as a whole:
// memory.max (v1: memory.limit_in_bytes) over the anonymous memory of all
// its processes, its /tmp pages and its page cache together, and no swap
// (memory.swap.max 0, v1 memory.memsw.limit_in_bytes; where the kernel
// accounts swap). Past it the kernel's OOM killer ends a process of the
// command. Without the controller that sum is not bounded, only its
// parts; this is not an error, and Layers says which it is.
//
// Landlock is the second layer, from ABI 2 on (its raw system calls;
// every filesystem right the kernel's ABI knows is handled): the
// command may read and execute only under /usr, /etc, /proc, the
// /bin-like directories and read-only mounts, may write only under
// /workspace, /tmp, /dev and read-write mounts, cannot connect to unix
// sockets made outside the sandbox (ABI 9), and cannot signal or reach
// abstract unix sockets of processes outside its domain (ABI 6). A kernel
// without Landlock, or with ABI 1, leaves the namespaces as the only
// layer; Landlock and Layers say which it is.
//
// A command that a signal ends exits with 128+N, as bubblewrap's init
// reports it (and as a shell would): Exit.Signal is set only when Talon
// killed the command (timeout, Kill, context).
//
// A Backend and its Sandboxes are safe for concurrent use.
package bwrap
